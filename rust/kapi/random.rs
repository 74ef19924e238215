// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The kernel's random number generator (`get_random_u32`,
//! `get_random_bytes`): STag keys and each device's STag index permutation
//! (RFC 5042 §5.1.2: STags a peer cannot predict).

use super::bindings;

/// A random `u32` from the kernel's CRNG; any context.
pub(crate) fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` takes no argument and may be called from any
    // context (it never sleeps).
    unsafe { bindings::rsiw_shim_random_u32() }
}

/// `N` random octets from the kernel's CRNG; any context.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: `out` is a live, writable buffer of `N` octets; the shim
    // writes exactly `N` octets to it and keeps no reference.
    unsafe { bindings::rsiw_shim_random_bytes(out.as_mut_ptr().cast(), N) };
    out
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The kernel's CRC32c (`crc32c()` of lib/libcrc32c) as the protocol core's
//! [`Crc32c`], for the MPA FPDU CRC (RFC 5044 §4.4).

use crate::proto::crc::Crc32c;
use kernel::ffi::{c_uint, c_void};

extern "C" {
    /// `u32 crc32c(u32 crc, const void *address, unsigned int length)`: raw
    /// register in, raw register out (no inversion), any context.
    fn crc32c(crc: u32, address: *const c_void, length: c_uint) -> u32;
}

/// The kernel's (possibly accelerated) CRC32c.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelCrc32c;

impl Crc32c for KernelCrc32c {
    fn update(&self, mut crc: u32, data: &[u8]) -> u32 {
        // `length` is an unsigned int: feed longer slices in pieces.
        for chunk in data.chunks(c_uint::MAX as usize) {
            // SAFETY: `chunk` is a live slice of `chunk.len()` readable bytes
            // (which fits the `unsigned int`); crc32c only reads them and
            // keeps no reference.
            crc = unsafe { crc32c(crc, chunk.as_ptr().cast(), chunk.len() as c_uint) };
        }
        crc
    }
}

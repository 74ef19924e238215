// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Counted references to the `net_device` an rsiw device runs over.

use super::bindings;
use core::ptr::NonNull;

/// Length of an Ethernet hardware address.
pub(crate) const ETH_ALEN: usize = 6;

/// A counted reference to a `struct net_device`.
///
/// # Invariants
///
/// `ptr` points to a `net_device` on which this value holds one `dev_hold()`
/// reference, so the structure stays allocated until [`Drop`].
pub(crate) struct NetDevice {
    ptr: NonNull<bindings::net_device>,
}

// SAFETY: `dev_hold`/`dev_put` and the accessors used here are callable from
// any thread; the reference is not tied to the thread that took it.
unsafe impl Send for NetDevice {}
// SAFETY: all `&self` methods only read fields through the shim, which uses
// the kernel's own lockless accessors (`READ_ONCE`, `netif_running`, ...).
unsafe impl Sync for NetDevice {}

impl NetDevice {
    /// Takes a new reference on `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a live `net_device` for the duration of the call
    /// (e.g. the caller holds a reference or RTNL).
    pub(crate) unsafe fn from_raw(ptr: NonNull<bindings::net_device>) -> Self {
        // SAFETY: `ptr` is live per the function's safety requirements.
        unsafe { bindings::rsiw_shim_netdev_hold(ptr.as_ptr()) };
        // INVARIANT: the `dev_hold()` above is owned by the new value.
        Self { ptr }
    }

    /// The raw pointer, for handing to the RDMA core.
    pub(crate) fn as_ptr(&self) -> *mut bindings::net_device {
        self.ptr.as_ptr()
    }

    /// Whether `raw` is this net_device (identity, no dereference).
    pub(crate) fn is(&self, raw: *const bindings::net_device) -> bool {
        core::ptr::eq(self.ptr.as_ptr(), raw)
    }

    /// Up, running and with carrier.
    pub(crate) fn is_active(&self) -> bool {
        // SAFETY: the type invariant keeps the net_device allocated.
        unsafe { bindings::rsiw_shim_netdev_active(self.ptr.as_ptr()) }
    }

    /// The MTU in bytes.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: the type invariant keeps the net_device allocated.
        unsafe { bindings::rsiw_shim_netdev_mtu(self.ptr.as_ptr()) }
    }

    /// The device's IP addresses (IPv4 mapped into IPv6, then IPv6) into
    /// `out`; returns how many were written.
    pub(crate) fn ips(&self, out: &mut [[u8; 16]]) -> usize {
        let max = u32::try_from(out.len()).unwrap_or(u32::MAX);
        // SAFETY: the type invariant keeps the net_device allocated; `out` is
        // writable for `max` addresses.
        let n = unsafe { bindings::rsiw_shim_netdev_ips(self.ptr.as_ptr(), out.as_mut_ptr(), max) };
        (n as usize).min(out.len())
    }

    /// The Ethernet address, if the device has a full one.
    pub(crate) fn hw_addr(&self) -> Option<[u8; ETH_ALEN]> {
        let mut mac = [0u8; ETH_ALEN];
        // SAFETY: the type invariant keeps the net_device allocated; `mac`
        // is writable for `ETH_ALEN` bytes.
        let n = unsafe {
            bindings::rsiw_shim_netdev_addr(self.ptr.as_ptr(), mac.as_mut_ptr(), ETH_ALEN as u32)
        };
        (n as usize == ETH_ALEN).then_some(mac)
    }
}

impl Drop for NetDevice {
    fn drop(&mut self) {
        // SAFETY: the type invariant says we own one reference.
        unsafe { bindings::rsiw_shim_netdev_put(self.ptr.as_ptr()) };
    }
}

/// A random locally administered unicast Ethernet address.
pub(crate) fn random_mac() -> [u8; ETH_ALEN] {
    let mut mac = [0u8; ETH_ALEN];
    // SAFETY: `mac` is writable for `ETH_ALEN` bytes.
    unsafe { bindings::rsiw_shim_random_mac(mac.as_mut_ptr()) };
    mac
}

/// The netdevice notifier events rsiw acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetdevEvent {
    /// `NETDEV_UP`.
    Up,
    /// `NETDEV_DOWN`.
    Down,
    /// `NETDEV_CHANGE` (carrier or flags).
    Change,
    /// `NETDEV_UNREGISTER`.
    Unregister,
    /// Anything else.
    Other,
}

impl NetdevEvent {
    /// Decodes the notifier's event code.
    pub(crate) fn from_raw(event: kernel::ffi::c_ulong) -> Self {
        match u32::try_from(event) {
            Ok(bindings::netdev_cmd_NETDEV_UP) => Self::Up,
            Ok(bindings::netdev_cmd_NETDEV_DOWN) => Self::Down,
            Ok(bindings::netdev_cmd_NETDEV_CHANGE) => Self::Change,
            Ok(bindings::netdev_cmd_NETDEV_UNREGISTER) => Self::Unregister,
            _ => Self::Other,
        }
    }
}

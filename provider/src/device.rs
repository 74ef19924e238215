// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Registration with libibverbs: the device ops, the table that matches rsiw devices,
//! and the per-device object.

use crate::{cmem, context, sys};
use core::ffi::CStr;
use core::mem::offset_of;
use core::ptr::{addr_of_mut, null_mut};
use rsiw_abi::ABI_VERSION;

/// The provider's name (`verbs_device_ops::name`).
const NAME: &CStr = c"rsiw";

/// `VERBS_NAME_MATCH("rsiw", NULL)`: libibverbs matches `rdma_device:N<ibdev name>`
/// against it. Out-of-tree drivers have no `RDMA_DRIVER_*` id in Linux 6.12's closed
/// `enum rdma_driver_id`, so devices are claimed by their `rsiw<N>` name.
pub const NAME_MATCH: &CStr = c"rdma_device:*Nrsiw*";

/// The match table: the name match, then the all-zero sentinel.
fn match_table() -> [sys::verbs_match_ent; 2] {
    let by_name = sys::verbs_match_ent {
        u: sys::verbs_match_ent__bindgen_ty_1 {
            modalias: NAME_MATCH.as_ptr(),
        },
        kind: sys::VERBS_MATCH_MODALIAS as u8,
        ..Default::default()
    };
    [by_name, sys::verbs_match_ent::default()]
}

/// The device ops; `table` must outlive them.
fn device_ops(table: &'static [sys::verbs_match_ent; 2]) -> sys::verbs_device_ops {
    sys::verbs_device_ops {
        name: NAME.as_ptr(),
        // libibverbs compares these with the device's sysfs abi_version.
        match_min_abi_version: ABI_VERSION,
        match_max_abi_version: ABI_VERSION,
        match_table: table.as_ptr(),
        alloc_device: Some(alloc_device),
        uninit_device: Some(uninit_device),
        alloc_context: Some(context::alloc_context),
        ..Default::default()
    }
}

/// Runs when libibverbs dlopens the provider.
extern "C" fn register() {
    // libibverbs keeps the pointer for the life of the process: leak both.
    let table = Box::leak(Box::new(match_table()));
    let ops = Box::leak(Box::new(device_ops(table)));
    // SAFETY: `ops`, its table and its strings are 'static, as libibverbs requires.
    unsafe { sys::verbs_register_driver_34(ops) }
}

/// What `PROVIDER_DRIVER()` does in C: a constructor that registers the driver.
#[used]
#[link_section = ".init_array"]
static REGISTER: extern "C" fn() = register;

/// rsiw's per-device object.
#[repr(C)]
pub struct Device {
    /// libibverbs' part, first: libibverbs and [`from_ibv`] rely on it.
    pub vdev: sys::verbs_device,
    /// The kernel device's `driver_id`. The kernel refuses every ioctl whose header
    /// carries another id, so the context must be created with this one: rsiw has
    /// none (`RDMA_DRIVER_UNKNOWN`), but it is what the kernel says that counts.
    pub driver_id: u32,
}

/// `verbs_device_ops::alloc_device`: libibverbs initialises `vdev` itself.
///
/// # Safety
///
/// libibverbs passes the sysfs device it matched, valid for the call.
unsafe extern "C" fn alloc_device(sysfs_dev: *mut sys::verbs_sysfs_dev) -> *mut sys::verbs_device {
    let Some(dev) = cmem::calloc::<Device>() else {
        return null_mut();
    };
    let dev = dev.as_ptr();
    // SAFETY: sysfs_dev is valid for the call (or NULL); dev is a live zeroed Device.
    unsafe {
        if let Some(sysfs) = sysfs_dev.as_ref() {
            (*dev).driver_id = sysfs.driver_id;
        }
        addr_of_mut!((*dev).vdev)
    }
}

/// The [`Device`] behind an `ibv_device` of ours.
///
/// # Safety
///
/// `ibdev` must be the `vdev.device` member of a live [`Device`].
pub unsafe fn from_ibv(ibdev: *mut sys::ibv_device) -> *mut Device {
    const _: () =
        assert!(offset_of!(Device, vdev) == 0 && offset_of!(sys::verbs_device, device) == 0);
    ibdev.cast()
}

/// `verbs_device_ops::uninit_device`: the last reference to the device is gone.
///
/// # Safety
///
/// `vdev` comes from [`alloc_device`]; libibverbs does not use it afterwards.
unsafe extern "C" fn uninit_device(vdev: *mut sys::verbs_device) {
    // SAFETY: vdev is the first member of the Device alloc_device calloc'ed, and
    // libibverbs gives it up here.
    unsafe { cmem::free(vdev.cast::<Device>()) }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn ops_match_rsiw_devices_by_name() {
        let table = Box::leak(Box::new(match_table()));
        let ops = device_ops(table);
        // SAFETY: `name` points at the 'static NAME.
        assert_eq!(unsafe { CStr::from_ptr(ops.name) }, c"rsiw");
        assert_eq!(
            (ops.match_min_abi_version, ops.match_max_abi_version),
            (4, 4)
        );
        assert_eq!(table[0].kind, 2, "VERBS_MATCH_MODALIAS");
        // SAFETY: the entry was built with its `modalias` member set.
        let modalias = unsafe { CStr::from_ptr(table[0].u.modalias) };
        assert_eq!(modalias.to_bytes(), b"rdma_device:*Nrsiw*");
        assert_eq!(table[1].kind, 0, "VERBS_MATCH_SENTINEL ends the table");
        assert!(
            ops.alloc_device.is_some()
                && ops.uninit_device.is_some()
                && ops.alloc_context.is_some()
        );
        assert!(ops.match_device.is_none(), "the table alone decides");
    }
}

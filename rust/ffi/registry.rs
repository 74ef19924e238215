// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The list of rsiw devices: the module's own record of what it created, so
//! that netdev events and module unload touch only rsiw's devices (6.12 gives
//! out-of-tree drivers no `rdma_driver_id` to filter the core's list by).

use super::{
    bindings,
    ib::{NewDevice, RegisteredDevice},
};
use crate::device::Device;
use core::ptr::NonNull;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// One rsiw device.
///
/// # Invariants
///
/// `ibdev` is an rsiw `ib_device` that stays allocated while the entry is in
/// [`Inner::devices`]: the entry is removed by its `dealloc_driver`, which
/// runs before the core frees the device.
struct Entry {
    ibdev: NonNull<bindings::ib_device>,
    data: Arc<Device>,
}

// SAFETY: the pointer is only used for RDMA core calls, which may be made
// from any thread.
unsafe impl Send for Entry {}

/// The fields [`Registry::inner`] protects.
struct Inner {
    /// Slots, `None` when free: 6.12's `KVec` cannot remove an element, and
    /// removal (in `dealloc_driver`) must not allocate.
    devices: KVec<Option<Entry>>,
}

impl Inner {
    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.devices.iter().flatten()
    }
}

/// All rsiw devices, from allocation to `dealloc_driver`.
#[pin_data]
pub(crate) struct Registry {
    /// Protects the device list. Never held across an RDMA core call that can
    /// reach `dealloc_driver` (which takes it), nor while dropping an entry.
    #[pin]
    inner: Mutex<Inner>,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_mutex!(Inner { devices: KVec::new() }, "rsiw_registry"),
        })
    }

    /// Records a new device; `EEXIST` if its netdev already has one.
    pub(crate) fn insert(&self, dev: &NewDevice, data: Arc<Device>) -> Result {
        let Some(ibdev) = NonNull::new(dev.as_ptr()) else {
            return Err(EINVAL);
        };
        let mut inner = self.inner.lock();
        if inner
            .entries()
            .any(|e| e.data.netdev().is(data.netdev().as_ptr()))
        {
            return Err(EEXIST);
        }
        // INVARIANT: `dev` is allocated; its `dealloc_driver` removes it.
        let entry = Some(Entry { ibdev, data });
        match inner.devices.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = entry,
            None => inner.devices.push(entry, GFP_KERNEL)?,
        }
        Ok(())
    }

    /// Forgets `ibdev`; called from its `dealloc_driver`. The per-device
    /// state is returned so that the caller drops it after the lock.
    pub(crate) fn remove(&self, ibdev: *mut bindings::ib_device) -> Option<Arc<Device>> {
        let mut inner = self.inner.lock();
        let slot = inner.devices.iter_mut().find(|slot| {
            slot.as_ref()
                .is_some_and(|e| core::ptr::eq(e.ibdev.as_ptr(), ibdev))
        })?;
        slot.take().map(|e| e.data)
    }

    /// The registered rsiw device on `netdev`, if any, with a registration
    /// reference held.
    pub(crate) fn registered_by_netdev(
        &self,
        netdev: *const bindings::net_device,
    ) -> Option<RegisteredDevice> {
        let inner = self.inner.lock();
        let e = inner.entries().find(|e| e.data.netdev().is(netdev))?;
        // SAFETY: the entry is in the list and we hold the lock, so the
        // device is allocated (type invariant of `Entry`).
        unsafe { RegisteredDevice::try_get(e.ibdev, e.data.clone()) }
    }

    /// Unregisters every device synchronously; on return the list is empty
    /// and no `dealloc_driver` of ours is running.
    ///
    /// Call after new devices can no longer appear (link ops unregistered).
    pub(crate) fn unregister_all(&self) {
        loop {
            let ibdev = {
                let inner = self.inner.lock();
                let Some(e) = inner.entries().next() else {
                    return;
                };
                // SAFETY: allocated while listed (type invariant of `Entry`);
                // the kobject reference keeps it allocated after the unlock.
                unsafe { bindings::rsiw_shim_device_hold(e.ibdev.as_ptr()) };
                e.ibdev
            };
            // SAFETY: we hold a kobject reference. `ib_unregister_device`
            // takes the device's unregistration lock: it unregisters a live
            // device, or waits for an unregistration already under way (from
            // `rdma link delete` or a netdev event) to finish, so in both
            // cases our `dealloc_driver` has returned when it does.
            unsafe { bindings::ib_unregister_device(ibdev.as_ptr()) };
            // SAFETY: releases the reference taken above.
            unsafe { bindings::rsiw_shim_device_release(ibdev.as_ptr()) };
            let inner = self.inner.lock();
            if inner.entries().any(|e| e.ibdev == ibdev) {
                // Cannot happen once link ops are gone (no registration in
                // flight); do not spin in module exit if it does.
                pr_err!("device {:p} survived unregistration\n", ibdev.as_ptr());
                return;
            }
        }
    }
}

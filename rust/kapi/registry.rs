// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The list of rsiw devices: the module's own record of what it created, so
//! that netdev events and module unload touch only rsiw's devices (6.12 gives
//! out-of-tree drivers no `rdma_driver_id` to filter the core's list by).

use super::{
    bindings,
    ib::{NewDevice, RegisteredDevice},
    netdev::NetDevice,
};
use core::ptr::NonNull;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// What the registry needs of a device's per-device state.
pub(crate) trait DeviceData: Send + Sync + 'static {
    /// The netdev the device's port runs over.
    fn netdev(&self) -> &NetDevice;
}

/// One rsiw device, from allocation until it has been fenced after its
/// `dealloc_driver`.
///
/// # Invariants
///
/// The entry owns one kobject reference (`get_device`) on `ibdev`, so the
/// `ib_device` stays allocated as long as the entry exists. `data` is `None`
/// once `dealloc_driver` has started ("retired").
struct Entry<T> {
    ibdev: NonNull<bindings::ib_device>,
    data: Option<Arc<T>>,
}

// SAFETY: the pointer is only used for RDMA core calls, which may be made
// from any thread.
unsafe impl<T: Send + Sync> Send for Entry<T> {}

impl<T: DeviceData> Entry<T> {
    /// Waits until no unregistration of the device is running — in
    /// particular until a `dealloc_driver` of ours has returned into the core
    /// — then drops the entry's reference.
    ///
    /// `ib_unregister_device` takes the device's unregistration lock, under
    /// which the core runs `dealloc_driver`: on a live device it unregisters
    /// it; on one already unregistered it returns at once after the lock.
    /// Must not be called with [`Registry::inner`] held (`dealloc_driver`
    /// takes it).
    fn fence_and_release(self) {
        // SAFETY: allocated per the type invariant; we keep our kobject
        // reference across the call, as the core requires.
        unsafe { bindings::ib_unregister_device(self.ibdev.as_ptr()) };
        // SAFETY: releases the reference owned per the type invariant.
        unsafe { bindings::rsiw_shim_device_release(self.ibdev.as_ptr()) };
    }

    fn live(&self) -> Option<&Arc<T>> {
        self.data.as_ref()
    }
}

/// The fields [`Registry::inner`] protects.
struct Inner<T> {
    /// Slots, `None` when free: 6.12's `KVec` cannot remove an element, and
    /// retiring (in `dealloc_driver`) must not allocate.
    devices: KVec<Option<Entry<T>>>,
}

impl<T: DeviceData> Inner<T> {
    fn live(&self) -> impl Iterator<Item = (&Entry<T>, &Arc<T>)> {
        self.devices
            .iter()
            .flatten()
            .filter_map(|e| Some((e, e.live()?)))
    }

    /// Takes out the first entry `pick` accepts.
    fn take(&mut self, pick: impl Fn(&Entry<T>) -> bool) -> Option<Entry<T>> {
        self.devices
            .iter_mut()
            .find(|slot| slot.as_ref().is_some_and(&pick))?
            .take()
    }
}

/// All rsiw devices.
#[pin_data]
pub(crate) struct Registry<T> {
    /// Protects the device list. Never held across an RDMA core call that can
    /// reach `dealloc_driver` (which takes it), nor while dropping an entry.
    #[pin]
    inner: Mutex<Inner<T>>,
}

impl<T: DeviceData> Registry<T> {
    /// An empty registry.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_mutex!(Inner { devices: KVec::new() }, "rsiw_registry"),
        })
    }

    /// Records a new device; `EEXIST` if its netdev already has one.
    /// Retired entries are released first.
    pub(crate) fn insert(&self, dev: &NewDevice<T>, data: Arc<T>) -> Result {
        self.reap();
        let Some(ibdev) = NonNull::new(dev.as_ptr()) else {
            return Err(EINVAL);
        };
        let mut inner = self.inner.lock();
        if inner
            .live()
            .any(|(_, d)| d.netdev().is(data.netdev().as_ptr()))
        {
            return Err(EEXIST);
        }
        let slot = match inner.devices.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                inner.devices.push(None, GFP_KERNEL)?;
                inner.devices.len() - 1
            }
        };
        // SAFETY: `dev` is an allocated device.
        unsafe { bindings::rsiw_shim_device_hold(ibdev.as_ptr()) };
        // INVARIANT: the reference just taken belongs to the entry.
        if let Some(s) = inner.devices.get_mut(slot) {
            *s = Some(Entry {
                ibdev,
                data: Some(data),
            });
        }
        Ok(())
    }

    /// Marks `ibdev` retired; called from its `dealloc_driver`. The
    /// per-device state is returned so that the caller drops it after the
    /// lock. The entry itself stays until [`Self::reap`] or
    /// [`Self::unregister_all`] has fenced it.
    pub(crate) fn retire(&self, ibdev: *mut bindings::ib_device) -> Option<Arc<T>> {
        let mut inner = self.inner.lock();
        inner
            .devices
            .iter_mut()
            .flatten()
            .find(|e| core::ptr::eq(e.ibdev.as_ptr(), ibdev))?
            .data
            .take()
    }

    /// Releases retired entries (process context, no rsiw lock held).
    fn reap(&self) {
        loop {
            let Some(e) = self.inner.lock().take(|e| e.data.is_none()) else {
                return;
            };
            e.fence_and_release();
        }
    }

    /// The registered rsiw device on `netdev`, if any, with a registration
    /// reference held.
    pub(crate) fn registered_by_netdev(
        &self,
        netdev: *const bindings::net_device,
    ) -> Option<RegisteredDevice<T>> {
        let inner = self.inner.lock();
        let (e, data) = inner.live().find(|(_, d)| d.netdev().is(netdev))?;
        // SAFETY: allocated per the type invariant of `Entry`.
        unsafe { RegisteredDevice::try_get(e.ibdev, data.clone()) }
    }

    /// Unregisters every device synchronously. On return the list is empty,
    /// and no `dealloc_driver` of ours is running or can run any more.
    ///
    /// Call after new devices can no longer appear (link ops unregistered).
    pub(crate) fn unregister_all(&self) {
        loop {
            let Some(e) = self.inner.lock().take(|_| true) else {
                return;
            };
            e.fence_and_release();
        }
    }
}

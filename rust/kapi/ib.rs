// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Safe handles on rsiw's `ib_device`: being built, registered, or borrowed
//! for the duration of a verb callback.

use super::{bindings, netdev::NetDevice};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    error::to_result,
    prelude::*,
    str::CStr,
    sync::{Arc, ArcBorrow},
};

/// Static device properties applied before registration.
pub(crate) struct DevInit {
    /// Node GUID, in network byte order as the core stores it.
    pub(crate) node_guid: u64,
    /// Completion vectors.
    pub(crate) num_comp_vectors: u32,
    /// Node description (NUL padded).
    pub(crate) node_desc: &'static [u8],
}

/// Port events the driver reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortEvent {
    /// `IB_EVENT_PORT_ACTIVE`.
    Active,
    /// `IB_EVENT_PORT_ERR`.
    Err,
}

/// An allocated, not yet registered rsiw `ib_device`.
///
/// # Invariants
///
/// `ptr` comes from `rsiw_shim_alloc_device` and is owned by this value:
/// nobody else will free it; [`Drop`] hands it to `ib_dealloc_device`, which
/// calls the `dealloc_driver` callback.
pub(crate) struct NewDevice<T: Send + Sync + 'static> {
    ptr: NonNull<bindings::ib_device>,
    _data: PhantomData<Arc<T>>,
}

impl<T: Send + Sync + 'static> NewDevice<T> {
    /// Allocates the device; `data` becomes its per-device state, released by
    /// the `dealloc_driver` callback.
    pub(crate) fn alloc(init: &DevInit, data: Arc<T>) -> Result<Self> {
        let mut raw = bindings::rsiw_dev_init {
            node_guid: init.node_guid,
            num_comp_vectors: init.num_comp_vectors,
            ..Default::default()
        };
        for (dst, src) in raw.node_desc.iter_mut().zip(init.node_desc) {
            *dst = *src as _;
        }
        let priv_ = crate::kapi::compat::into_foreign(data);
        // SAFETY: `raw` is a valid init block for the duration of the call.
        let ptr = unsafe { bindings::rsiw_shim_alloc_device(&raw, priv_) };
        match NonNull::new(ptr) {
            // INVARIANT: freshly allocated, owned by nobody else.
            Some(ptr) => Ok(Self {
                ptr,
                _data: PhantomData,
            }),
            None => {
                // SAFETY: the shim did not keep `priv_`; it came from
                // `into_foreign` above and was not converted back.
                drop(unsafe { crate::kapi::compat::from_foreign::<T>(priv_) });
                Err(ENOMEM)
            }
        }
    }

    /// The raw pointer, for identity comparisons in the registry.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr()
    }

    /// Binds port 1 to `netdev` (the core holds its own reference).
    pub(crate) fn set_netdev(&self, netdev: &NetDevice) -> Result {
        // SAFETY: `ptr` is a live unregistered device per the type
        // invariant; `netdev` is a live net_device.
        to_result(unsafe {
            bindings::ib_device_set_netdev(self.ptr.as_ptr(), netdev.as_ptr(), 1)
        })?;
        // SAFETY: as above; the parent (the netdev's device) is referenced by
        // the device core at registration.
        unsafe { bindings::rsiw_shim_device_set_parent(self.ptr.as_ptr(), netdev.as_ptr()) };
        Ok(())
    }

    /// Registers the device under `name`. On failure it is deallocated.
    pub(crate) fn register(self, name: &CStr) -> Result {
        // SAFETY: `ptr` is a live unregistered device; `name` is a valid C
        // string for the duration of the call.
        let ret = unsafe {
            bindings::ib_register_device(
                self.ptr.as_ptr(),
                name.as_char_ptr(),
                core::ptr::null_mut(),
            )
        };
        to_result(ret)?;
        // INVARIANT: ownership passed to the core, which frees the device
        // through `dealloc_driver` when it is unregistered.
        core::mem::forget(self);
        Ok(())
    }
}

impl<T: Send + Sync + 'static> Drop for NewDevice<T> {
    fn drop(&mut self) {
        // SAFETY: owned and unregistered per the type invariant; the core
        // requires exactly this call after a failed or skipped registration.
        unsafe { bindings::ib_dealloc_device(self.ptr.as_ptr()) };
    }
}

/// An rsiw `ib_device` borrowed for the duration of a verb callback.
///
/// # Invariants
///
/// `ptr` points to an `ib_device` allocated by `rsiw_shim_alloc_device`
/// whose per-device state has not been released, for all of `'a`.
#[derive(Clone, Copy)]
pub(crate) struct IbDev<'a, T: 'static> {
    ptr: NonNull<bindings::ib_device>,
    _life: PhantomData<(&'a bindings::ib_device, &'a T)>,
}

impl<'a, T: 'static> IbDev<'a, T> {
    /// Wraps the device pointer a verb callback received.
    ///
    /// # Safety
    ///
    /// `ptr` must be an rsiw device whose per-device state is an `Arc<T>`,
    /// valid and not yet past `dealloc_driver` for `'a` (the core
    /// guarantees this inside device ops).
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_device) -> Option<Self> {
        // INVARIANT: per the safety requirements.
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            _life: PhantomData,
        })
    }

    /// The driver's per-device state.
    pub(crate) fn data(&self) -> Option<ArcBorrow<'a, T>> {
        // SAFETY: valid per the type invariant.
        let p = unsafe { bindings::rsiw_shim_device_priv(self.ptr.as_ptr()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `priv` was set from `Arc::into_foreign` in `NewDevice::alloc`
        // and is only converted back in `dealloc_driver`, which the type
        // invariant excludes for `'a`.
        Some(unsafe { crate::kapi::compat::borrow::<T>(p) })
    }
}

/// A registration reference (`ib_device_try_get`) on a registered rsiw device.
///
/// # Invariants
///
/// `ptr` is a registered rsiw device on which this value holds one
/// registration reference, released by [`Drop`] or [`Self::unregister_queued`].
pub(crate) struct RegisteredDevice<T> {
    ptr: NonNull<bindings::ib_device>,
    data: Arc<T>,
}

impl<T> RegisteredDevice<T> {
    /// Takes a registration reference if the device is still registered.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a live rsiw `ib_device` for the duration of the call.
    pub(crate) unsafe fn try_get(ptr: NonNull<bindings::ib_device>, data: Arc<T>) -> Option<Self> {
        // SAFETY: live per the safety requirements.
        let ok = unsafe { bindings::rsiw_shim_device_try_get(ptr.as_ptr()) };
        // INVARIANT: `ok` means we now hold a registration reference.
        ok.then_some(Self { ptr, data })
    }

    /// The driver's per-device state.
    pub(crate) fn data(&self) -> &T {
        &self.data
    }

    /// Reports a port event to the core's event handlers.
    pub(crate) fn port_event(&self, event: PortEvent) {
        let ev = match event {
            PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            PortEvent::Err => bindings::ib_event_type_IB_EVENT_PORT_ERR,
        };
        // SAFETY: registered per the type invariant.
        unsafe { bindings::rsiw_shim_port_event(self.ptr.as_ptr(), 1, ev) };
    }

    /// Queues unregistration on the core's workqueue (safe under RTNL).
    pub(crate) fn unregister_queued(self) {
        // SAFETY: we hold a registration reference, as the core requires;
        // the device has a `dealloc_driver`.
        unsafe { bindings::ib_unregister_device_queued(self.ptr.as_ptr()) };
        // The queued work holds its own device reference; ours drops here.
    }
}

impl<T> Drop for RegisteredDevice<T> {
    fn drop(&mut self) {
        // SAFETY: per the type invariant we own one registration reference.
        unsafe { bindings::ib_device_put(self.ptr.as_ptr()) };
    }
}

impl<T> IbDev<'_, T> {
    /// Speed and width of the underlying Ethernet link, as IB enums.
    pub(crate) fn eth_speed(&self) -> Option<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: valid per the type invariant; port 1 exists; takes RTNL,
        // and verb callbacks never run under RTNL.
        let ret =
            unsafe { bindings::ib_get_eth_speed(self.ptr.as_ptr(), 1, &mut speed, &mut width) };
        (ret == 0).then_some((speed, width))
    }
}

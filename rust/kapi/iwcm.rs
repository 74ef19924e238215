// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Safe handles on the iw_cm's `struct iw_cm_id`: references, the provider
//! data slot, and connection events (the iWARP CM side of RFC 5044 §7 setup).

use super::{bindings, sock::Socket};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::to_result, ffi::c_void, prelude::*, sync::Arc};

/// The connection events rsiw reports to the iw_cm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A peer's MPA Request arrived on a listener (`IW_CM_EVENT_CONNECT_REQUEST`).
    ConnectRequest,
    /// Our MPA Request was answered, or the attempt failed (`..._CONNECT_REPLY`).
    ConnectReply,
    /// An accepted connection is up (`..._ESTABLISHED`).
    Established,
    /// The peer closed the connection (`..._DISCONNECT`).
    Disconnect,
    /// The connection is gone (`..._CLOSE`); the last event of a cm_id.
    Close,
}

impl Event {
    fn raw(self) -> bindings::iw_cm_event_type {
        match self {
            Self::ConnectRequest => bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST,
            Self::ConnectReply => bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY,
            Self::Established => bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED,
            Self::Disconnect => bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT,
            Self::Close => bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE,
        }
    }
}

/// What an event carries besides its type.
#[derive(Default)]
pub(crate) struct EventData<'a> {
    /// 0 or a negative errno (`CONNECT_REPLY` only).
    pub(crate) status: i32,
    /// ULP private data (at most 255 bytes: `iw_cm_event` counts it in a `u8`).
    pub(crate) private_data: &'a [u8],
    /// IRD as the event defines it (the peer's ORD for a request).
    pub(crate) ird: u8,
    /// ORD as the event defines it (the peer's IRD for a request).
    pub(crate) ord: u8,
}

/// A cm_id borrowed for the duration of an iw_cm op.
///
/// # Invariants
///
/// `ptr` is a live `iw_cm_id` for `'a`.
pub(crate) struct CmIdRef<'a> {
    ptr: NonNull<bindings::iw_cm_id>,
    _p: PhantomData<&'a ()>,
}

impl<'a> CmIdRef<'a> {
    /// Borrows the cm_id an iw_cm op was called with.
    ///
    /// # Safety
    ///
    /// `ptr` is null or a live `iw_cm_id` for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::iw_cm_id) -> Option<Self> {
        // INVARIANT: per the safety requirements.
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            _p: PhantomData,
        })
    }

    /// The raw pointer, for the socket shim.
    pub(crate) fn as_ptr(&self) -> *mut bindings::iw_cm_id {
        self.ptr.as_ptr()
    }

    /// The device the cm_id belongs to.
    pub(crate) fn device(&self) -> *mut bindings::ib_device {
        // SAFETY: live (type invariant); `device` is set at creation.
        unsafe { (*self.ptr.as_ptr()).device }
    }

    /// A counted reference (the cm_id's `add_ref`).
    pub(crate) fn get(&self) -> CmId {
        // SAFETY: live (type invariant).
        unsafe { bindings::rsiw_shim_iw_id_get(self.ptr.as_ptr()) };
        // INVARIANT: the reference just taken.
        CmId { ptr: self.ptr }
    }

    fn provider_data(&self) -> *mut c_void {
        // SAFETY: live (type invariant); the iw_cm does not write the slot
        // during a provider op.
        unsafe { (*self.ptr.as_ptr()).provider_data }
    }

    fn set_provider_data(&self, v: *mut c_void) {
        // SAFETY: as in `provider_data`.
        unsafe { (*self.ptr.as_ptr()).provider_data = v };
    }

    /// Stores the listener state of a listening cm_id.
    pub(crate) fn set_listener<T: 'static>(&self, l: Arc<T>) {
        self.set_provider_data(crate::kapi::compat::into_foreign(l).cast_mut());
    }

    /// Takes back what [`CmIdRef::set_listener`] stored.
    ///
    /// # Safety
    ///
    /// The slot is null or was filled by `set_listener` (the iw_cm calls
    /// `destroy_listen` only on cm_ids that `create_listen` accepted).
    pub(crate) unsafe fn take_listener<T: 'static>(&self) -> Option<Arc<T>> {
        let p = self.provider_data();
        if p.is_null() {
            return None;
        }
        self.set_provider_data(core::ptr::null_mut());
        // SAFETY: per the function's safety requirements.
        Some(unsafe { crate::kapi::compat::from_foreign::<T>(p) })
    }

    /// Takes back the endpoint a `CONNECT_REQUEST` event handed over (the
    /// iw_cm copies it into the new cm_id's provider data).
    ///
    /// # Safety
    ///
    /// The slot is null or holds an endpoint given with
    /// [`CmId::connect_request`] (the iw_cm calls `accept`/`reject` only on
    /// cm_ids it created for our requests).
    pub(crate) unsafe fn take_endpoint<T: 'static>(&self) -> Option<Arc<T>> {
        let p = self.provider_data();
        if p.is_null() {
            return None;
        }
        self.set_provider_data(core::ptr::null_mut());
        // SAFETY: per the function's safety requirements.
        Some(unsafe { crate::kapi::compat::from_foreign::<T>(p) })
    }
}

/// A counted reference on an `iw_cm_id` (its `add_ref`/`rem_ref`).
///
/// # Invariants
///
/// `ptr` is a live `iw_cm_id` on which this value holds one reference.
pub(crate) struct CmId {
    ptr: NonNull<bindings::iw_cm_id>,
}

// SAFETY: the iw_cm's reference counting and event handler are callable from
// any thread (the handler queues work with GFP_ATOMIC).
unsafe impl Send for CmId {}
// SAFETY: as for `Send`.
unsafe impl Sync for CmId {}

impl CmId {
    /// The cm_id, borrowed for as long as this reference lives.
    pub(crate) fn as_ref(&self) -> CmIdRef<'_> {
        // INVARIANT: our reference keeps the cm_id alive for the borrow.
        CmIdRef {
            ptr: self.ptr,
            _p: PhantomData,
        }
    }

    /// Reports `ev` with the local/peer addresses of `sock`, if given.
    pub(crate) fn event(&self, ev: Event, sock: Option<&Socket>, data: &EventData<'_>) -> Result {
        self.raw_event(ev, sock, data, core::ptr::null_mut())
    }

    /// Reports a connection request on this listening cm_id, handing `ep`
    /// over as the new cm_id's provider data; on failure `ep` is dropped.
    pub(crate) fn connect_request<T: 'static>(
        &self,
        ep: Arc<T>,
        sock: &Socket,
        data: &EventData<'_>,
    ) -> Result {
        let p = crate::kapi::compat::into_foreign(ep).cast_mut();
        let r = self.raw_event(Event::ConnectRequest, Some(sock), data, p);
        if r.is_err() {
            // SAFETY: the iw_cm did not take `p` (the event failed before a
            // cm_id was created), so it is still ours.
            drop(unsafe { crate::kapi::compat::from_foreign::<T>(p) });
        }
        r
    }

    fn raw_event(
        &self,
        ev: Event,
        sock: Option<&Socket>,
        data: &EventData<'_>,
        p: *mut c_void,
    ) -> Result {
        let len = u8::try_from(data.private_data.len()).map_err(|_| EINVAL)?;
        let pd = if data.private_data.is_empty() {
            core::ptr::null()
        } else {
            data.private_data.as_ptr().cast()
        };
        let sock = sock.map_or(core::ptr::null_mut(), Socket::as_ptr);
        // SAFETY: live cm_id (type invariant); `sock` is null or live; the
        // private data is readable for `len` bytes and copied by the iw_cm.
        to_result(unsafe {
            bindings::rsiw_shim_iw_event(
                self.ptr.as_ptr(),
                ev.raw(),
                data.status,
                sock,
                pd,
                len,
                data.ird,
                data.ord,
                p,
            )
        })
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: we hold one reference (type invariant) and give it back.
        unsafe { bindings::rsiw_shim_iw_id_put(self.ptr.as_ptr()) }
    }
}

/// The connection parameters of `iw_connect`/`iw_accept`.
pub(crate) struct ConnParam<'a> {
    /// ULP private data for the MPA frame.
    pub(crate) private_data: &'a [u8],
    /// Requested outbound Read depth.
    pub(crate) ord: u32,
    /// Requested inbound Read depth.
    pub(crate) ird: u32,
    /// The QP the connection runs on.
    pub(crate) qpn: u32,
}

impl<'a> ConnParam<'a> {
    /// Reads the iw_cm's parameter block.
    ///
    /// # Safety
    ///
    /// `p` is null or a live `iw_cm_conn_param` whose private data (if any)
    /// stays readable for `'a`.
    pub(crate) unsafe fn from_raw(p: *const bindings::iw_cm_conn_param) -> Option<Self> {
        // SAFETY: per the function's safety requirements.
        let p = unsafe { p.as_ref()? };
        let private_data = if p.private_data.is_null() || p.private_data_len == 0 {
            &[][..]
        } else {
            // SAFETY: the iw_cm passes `private_data_len` readable bytes.
            unsafe {
                core::slice::from_raw_parts(
                    p.private_data.cast::<u8>(),
                    usize::from(p.private_data_len),
                )
            }
        };
        Some(Self {
            private_data,
            ord: p.ord,
            ird: p.ird,
            qpn: p.qpn,
        })
    }
}

/// The private data `iw_reject` passes.
///
/// # Safety
///
/// `p` is null or readable for `len` bytes for `'a`.
pub(crate) unsafe fn reject_data<'a>(p: *const c_void, len: u8) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: per the function's safety requirements.
        unsafe { core::slice::from_raw_parts(p.cast::<u8>(), usize::from(len)) }
    }
}

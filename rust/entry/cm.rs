// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Entries from C into the connection manager: the iw_cm verbs of the
//! `ib_device_ops` table and the socket callbacks of `kapi/sock.c` (RFC 5044 §7
//! connection setup and the stream under it).

use crate::kapi::{
    bindings,
    ib::IbDev,
    iwcm::{self, CmIdRef, ConnParam},
    qp::qp_obj,
};
use crate::{cm, objects::device::Device, resources::stream::Attached};
use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
    sync::{Arc, ArcBorrow},
};

fn ret(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The cm_id of an iw_cm op and its device's state.
///
/// # Safety
///
/// `id` is null or a live cm_id of an rsiw device, for `'a`.
unsafe fn cm_id<'a>(id: *mut bindings::iw_cm_id) -> Result<(CmIdRef<'a>, ArcBorrow<'a, Device>)> {
    // SAFETY: per the function's safety requirements.
    let id = unsafe { CmIdRef::from_raw(id) }.ok_or(EINVAL)?;
    // SAFETY: the iw_cm calls device ops only on registered devices, whose
    // state lives until `dealloc_driver`, after every op.
    let dev = unsafe { IbDev::from_raw(id.device()) }.ok_or(EINVAL)?;
    let data = dev.data().ok_or(ENODEV)?;
    Ok((id, data))
}

/// The cm_id, device state and parameters of `iw_connect`/`iw_accept`.
///
/// # Safety
///
/// As for [`cm_id`]; `param` is null or valid for `'a`.
unsafe fn conn_op<'a>(
    id: *mut bindings::iw_cm_id,
    param: *mut bindings::iw_cm_conn_param,
) -> Result<(CmIdRef<'a>, ArcBorrow<'a, Device>, ConnParam<'a>)> {
    // SAFETY: per the function's safety requirements.
    let (id, dev) = unsafe { cm_id(id) }?;
    // SAFETY: per the function's safety requirements.
    let param = unsafe { ConnParam::from_raw(param) }.ok_or(EINVAL)?;
    Ok((id, dev, param))
}

/// `ib_device_ops.iw_connect`.
///
/// # Safety
///
/// Called by the iw_cm with a live cm_id and parameter block.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_connect(
    id: *mut bindings::iw_cm_id,
    param: *mut bindings::iw_cm_conn_param,
) -> c_int {
    // SAFETY: iw_cm op; the private data is copied before return.
    ret(unsafe { conn_op(id, param) }.and_then(|(id, dev, param)| cm::connect(&dev, &id, &param)))
}

/// `ib_device_ops.iw_accept`.
///
/// # Safety
///
/// Called by the iw_cm on a cm_id it created for our connection request.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_accept(
    id: *mut bindings::iw_cm_id,
    param: *mut bindings::iw_cm_conn_param,
) -> c_int {
    // SAFETY: iw_cm op.
    ret(unsafe { conn_op(id, param) }.and_then(|(id, dev, param)| {
        // SAFETY: the provider data is the endpoint of our request.
        let ep = unsafe { id.take_endpoint() };
        cm::accept(&dev, &id, ep, &param)
    }))
}

/// `ib_device_ops.iw_reject`.
///
/// # Safety
///
/// Called by the iw_cm on a cm_id it created for our connection request,
/// with `pdata` readable for `len` bytes.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_reject(
    id: *mut bindings::iw_cm_id,
    pdata: *const c_void,
    len: u8,
) -> c_int {
    ret((|| {
        // SAFETY: iw_cm op.
        let id = unsafe { CmIdRef::from_raw(id) }.ok_or(EINVAL)?;
        // SAFETY: the provider data is the endpoint of our request.
        let ep = unsafe { id.take_endpoint() };
        // SAFETY: per the function's safety requirements.
        let pd = unsafe { iwcm::reject_data(pdata, len) };
        cm::reject(ep, pd)
    })())
}

/// `ib_device_ops.iw_create_listen`.
///
/// # Safety
///
/// Called by the iw_cm with a live cm_id.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_create_listen(
    id: *mut bindings::iw_cm_id,
    backlog: c_int,
) -> c_int {
    ret((|| {
        // SAFETY: iw_cm op.
        let (id, dev) = unsafe { cm_id(id) }?;
        cm::create_listen(&dev, &id, backlog)
    })())
}

/// `ib_device_ops.iw_destroy_listen`.
///
/// # Safety
///
/// Called by the iw_cm on a cm_id `iw_create_listen` accepted.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_destroy_listen(id: *mut bindings::iw_cm_id) -> c_int {
    ret((|| {
        // SAFETY: iw_cm op.
        let id = unsafe { CmIdRef::from_raw(id) }.ok_or(EINVAL)?;
        // SAFETY: the provider data is what `create_listen` stored.
        cm::destroy_listen(unsafe { id.take_listener() })
    })())
}

/// `ib_device_ops.iw_add_ref`: the iw_cm keeps the `ib_qp`; `destroy_qp`
/// waits until it lets go.
///
/// # Safety
///
/// Called by the iw_cm with a live rsiw QP it got from `iw_get_qp`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_add_ref(qp: *mut bindings::ib_qp) {
    // SAFETY: a live rsiw QP (see above).
    if let Some(q) = unsafe { qp_obj::<crate::objects::qp::Qp>(qp) } {
        q.cm_hold();
    }
}

/// `ib_device_ops.iw_rem_ref`.
///
/// # Safety
///
/// Called by the iw_cm with a QP it holds through `iw_add_ref`; `destroy_qp`
/// keeps the QP reachable from the `ib_qp` until the last such call.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_rem_ref(qp: *mut bindings::ib_qp) {
    // SAFETY: as above.
    if let Some(q) = unsafe { qp_obj::<crate::objects::qp::Qp>(qp) } {
        q.cm_release();
    }
}

/// `ib_device_ops.iw_get_qp`: the `ib_qp` of QP `qpn`, or null.
///
/// # Safety
///
/// Called by the iw_cm with a registered rsiw device.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_iw_get_qp(
    dev: *mut bindings::ib_device,
    qpn: c_int,
) -> *mut bindings::ib_qp {
    // SAFETY: iw_cm op on a registered device (see `cm_id`).
    let Some(dev) = (unsafe { IbDev::<Device>::from_raw(dev) }) else {
        return core::ptr::null_mut();
    };
    let (Some(data), Ok(qpn)) = (dev.data(), u32::try_from(qpn)) else {
        return core::ptr::null_mut();
    };
    data.qp_lookup(qpn)
        .map_or(core::ptr::null_mut(), |qp| qp.ib().as_ptr())
}

/// A listening socket has a connection to accept. Softirq.
///
/// # Safety
///
/// `ctx` is the `Arc<Listener>` a watch installed, valid until unwatched.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_listen_ready(ctx: *const c_void) {
    // SAFETY: the socket holds the Arc while watched; the shim calls under
    // the callback lock, so the unwatch cannot free it meanwhile.
    let l = unsafe { crate::kapi::compat::borrow::<cm::Listener>(ctx) };
    Arc::from(l).ready();
}

/// Bytes arrived on a stream: `n` consecutive pieces of it, at most
/// `RSIW_RX_MAX_PIECES`. Softirq (or process context, bottom halves off).
/// Returns the octets consumed.
///
/// # Safety
///
/// `ctx` is the `Arc<Attached>` a watch installed; `pieces` points to `n`
/// entries, each readable for its `len` bytes during the call.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_stream_rx(
    ctx: *const c_void,
    pieces: *const bindings::rsiw_buf,
    n: usize,
) -> usize {
    if pieces.is_null() || n == 0 || n > RX_MAX_PIECES {
        return 0;
    }
    // SAFETY: as in `rsiw_rust_listen_ready`.
    let a = unsafe { crate::kapi::compat::borrow::<Attached>(ctx) };
    // SAFETY: per the function's safety requirements, `pieces` has `n` entries.
    let raw = unsafe { core::slice::from_raw_parts(pieces, n) };
    let mut bufs: [&[u8]; RX_MAX_PIECES] = [&[]; RX_MAX_PIECES];
    let mut total = 0usize;
    for (b, r) in bufs.iter_mut().zip(raw) {
        if r.ptr.is_null() {
            return 0;
        }
        // SAFETY: per the function's safety requirements.
        *b = unsafe { core::slice::from_raw_parts(r.ptr.cast::<u8>(), r.len) };
        total = total.saturating_add(r.len);
    }
    a.rx(bufs.get(..n).unwrap_or(&[])).min(total)
}

/// The most pieces `rsiw_rust_stream_rx` takes in one call (the shim's
/// batch).
const RX_MAX_PIECES: usize = bindings::RSIW_RX_MAX_PIECES as usize;

/// Send space is available on a stream. Softirq.
///
/// # Safety
///
/// `ctx` is the `Arc<Attached>` a watch installed.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_stream_write_space(ctx: *const c_void) {
    // SAFETY: as in `rsiw_rust_listen_ready`.
    let a = unsafe { crate::kapi::compat::borrow::<Attached>(ctx) };
    a.write_space();
}

/// A bulk of bytes arrived on a stream (softirq): true if the consumer's
/// work item will read them (through `Stream::rx_now`), false to read them
/// in this softirq.
///
/// # Safety
///
/// `ctx` is the `Arc<Attached>` a watch installed.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_stream_rx_defer(ctx: *const c_void) -> bool {
    // SAFETY: as in `rsiw_rust_listen_ready`.
    let a = unsafe { crate::kapi::compat::borrow::<Attached>(ctx) };
    a.rx_defer()
}

/// A stream closed (peer FIN, or RST/error if `abortive`). Softirq or process.
///
/// # Safety
///
/// `ctx` is the `Arc<Attached>` a watch installed.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_stream_closed(ctx: *const c_void, abortive: bool) {
    // SAFETY: as in `rsiw_rust_listen_ready`.
    let a = unsafe { crate::kapi::compat::borrow::<Attached>(ctx) };
    a.closed(abortive);
}

/// A connection in MPA setup received bytes or changed state (connected,
/// refused, reset, FIN). Softirq (or process context, bottom halves off).
///
/// # Safety
///
/// `ctx` is the `Arc<Endpoint>` a handshake watch installed, valid until
/// unwatched.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_handshake_event(ctx: *const c_void) {
    // SAFETY: as in `rsiw_rust_listen_ready`.
    let ep = unsafe { crate::kapi::compat::borrow::<cm::Endpoint>(ctx) };
    Arc::from(ep).handshake_event();
}

/// A handshake deadline passed (timer, softirq).
///
/// # Safety
///
/// `ctx` is the context the deadline was armed with; its reference is
/// handed over.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_deadline_fired(kind: u32, ctx: *const c_void) {
    use crate::kapi::deadline::{fired, Expire};
    // SAFETY: per the function's safety requirements; `kind` is the
    // `Expire::KIND` of the type the deadline was made for.
    unsafe {
        if kind == <crate::objects::qp::Qp as Expire>::KIND {
            fired::<crate::objects::qp::Qp>(ctx)
        } else {
            fired::<cm::Endpoint>(ctx)
        }
    }
}

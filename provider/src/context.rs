// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The device context (one per `ibv_open_device`) and the device and port queries.

use crate::abi::{self, GetContextResp};
use crate::{cmem, cq, device, mr, mw, pd, qp, srq, sys};
use core::ffi::{c_int, c_void};
use core::mem::{offset_of, size_of, size_of_val};
use core::ptr::{addr_of_mut, null_mut};

/// rsiw's context; libibverbs allocates it for us (`verbs_init_and_alloc_context`).
#[repr(C)]
pub struct Context {
    /// libibverbs' part; its `context` member is the `ibv_context` users see.
    pub vctx: sys::verbs_context,
    /// The kernel device's driver id, which every ioctl header must carry.
    pub driver_id: u32,
}

/// The driver id of a context of ours (for driver-specific ioctls).
///
/// # Safety
///
/// `ibctx` must be the `ibv_context` of a live [`Context`].
pub unsafe fn driver_id(ibctx: *mut sys::ibv_context) -> u32 {
    // SAFETY: per the requirements.
    unsafe { (*from_ibv(ibctx)).driver_id }
}

/// The context ops rsiw implements; libibverbs answers EOPNOTSUPP for the rest.
/// `verbs_set_ops` copies them, so a temporary is enough.
fn context_ops() -> sys::verbs_context_ops {
    sys::verbs_context_ops {
        query_device_ex: Some(query_device_ex),
        query_port: Some(query_port),
        alloc_pd: Some(pd::alloc_pd),
        dealloc_pd: Some(pd::dealloc_pd),
        reg_mr: Some(mr::reg_mr),
        dereg_mr: Some(mr::dereg_mr),
        alloc_mw: Some(mw::alloc_mw),
        dealloc_mw: Some(mw::dealloc_mw),
        create_cq: Some(cq::create_cq),
        destroy_cq: Some(cq::destroy_cq),
        poll_cq: Some(cq::poll_cq),
        req_notify_cq: Some(cq::req_notify_cq),
        create_qp: Some(qp::create_qp),
        create_qp_ex: Some(qp::create_qp_ex),
        modify_qp: Some(qp::modify_qp),
        query_qp: Some(qp::query_qp),
        destroy_qp: Some(qp::destroy_qp),
        post_send: Some(qp::post_send),
        post_recv: Some(qp::post_recv),
        create_srq: Some(srq::create_srq),
        modify_srq: Some(srq::modify_srq),
        query_srq: Some(srq::query_srq),
        destroy_srq: Some(srq::destroy_srq),
        post_srq_recv: Some(srq::post_srq_recv),
        free_context: Some(free_context),
        ..Default::default()
    }
}

/// `verbs_device_ops::alloc_context`: allocate the context and create the kernel's
/// ucontext through `cmd_fd`. NULL with errno set on failure.
///
/// # Safety
///
/// Called by libibverbs with its device and an open uverbs fd that we now own.
pub unsafe extern "C" fn alloc_context(
    device: *mut sys::ibv_device,
    cmd_fd: c_int,
    _private_data: *mut c_void,
) -> *mut sys::verbs_context {
    // The C macro passes the member's offset disguised as a pointer.
    let offset = offset_of!(Context, vctx) as *mut sys::verbs_context;
    // SAFETY: libibverbs only opens devices our alloc_device made.
    let driver_id = unsafe { (*device::from_ibv(device)).driver_id };
    // SAFETY: device and cmd_fd come from libibverbs; it calloc's a Context-sized
    // block, initialises the verbs_context at `offset`, and closes cmd_fd on failure.
    let ctx = unsafe {
        sys::_verbs_init_and_alloc_context(device, cmd_fd, size_of::<Context>(), offset, driver_id)
    }
    .cast::<Context>();
    if ctx.is_null() {
        return null_mut();
    }
    // SAFETY: ctx is a live allocation that verbs_init_context initialised.
    let vctx = unsafe { addr_of_mut!((*ctx).vctx) };
    let mut cmd = sys::ibv_get_context::default();
    let mut resp = GetContextResp::default();
    // SAFETY: vctx is initialised; cmd and resp are live for the call and the sizes
    // are theirs, driver udata included.
    let rc = unsafe {
        sys::ibv_cmd_get_context(
            vctx,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp.core,
            size_of_val(&resp),
        )
    };
    let rc = match rc {
        0 => abi::check_ucontext(&resp.drv).err().unwrap_or(0),
        e => e,
    };
    if rc != 0 {
        // SAFETY: vctx is initialised; the format takes an int and two u32s.
        unsafe {
            sys::__verbs_log(
                vctx,
                sys::VERBS_LOG_ERR,
                c"rsiw: no user context: error %d (kernel user ABI %u, provider %u)\n".as_ptr(),
                rc,
                resp.drv.abi_version,
                rsiw_abi::ABI_VERSION,
            )
        };
        // SAFETY: undo the init (this closes cmd_fd, destroying any ucontext) and
        // free the block libibverbs calloc'ed; neither is used again.
        unsafe {
            sys::verbs_uninit_context(vctx);
            cmem::free(ctx);
        }
        cmem::set_errno(rc);
        return null_mut();
    }
    // SAFETY: ctx is live and ours; vctx is initialised; verbs_set_ops copies
    // the table.
    unsafe {
        (*ctx).driver_id = driver_id;
        sys::verbs_set_ops(vctx, &context_ops())
    };
    vctx
}

/// The [`Context`] around the `ibv_context` libibverbs hands to an op.
///
/// # Safety
///
/// `ibctx` must be the `vctx.context` member of a live [`Context`].
unsafe fn from_ibv(ibctx: *mut sys::ibv_context) -> *mut Context {
    let back = offset_of!(sys::verbs_context, context) + offset_of!(Context, vctx);
    // SAFETY: the caller guarantees ibctx sits `back` bytes into a Context.
    unsafe { ibctx.byte_sub(back).cast() }
}

/// `verbs_context_ops::free_context` (`ibv_close_device`).
///
/// # Safety
///
/// `ibctx` comes from [`alloc_context`]; libibverbs does not use it afterwards.
unsafe extern "C" fn free_context(ibctx: *mut sys::ibv_context) {
    // SAFETY: the context is ours and is being closed.
    unsafe {
        let ctx = from_ibv(ibctx);
        sys::verbs_uninit_context(addr_of_mut!((*ctx).vctx));
        cmem::free(ctx);
    }
}

/// `verbs_context_ops::query_device_ex`, also behind the legacy `ibv_query_device`.
///
/// # Safety
///
/// libibverbs passes a live context and `attr` valid for `attr_size` bytes.
unsafe extern "C" fn query_device_ex(
    ibctx: *mut sys::ibv_context,
    input: *const sys::ibv_query_device_ex_input,
    attr: *mut sys::ibv_device_attr_ex,
    attr_size: usize,
) -> c_int {
    // The legacy entry passes only the `orig_attr` part, which we write below.
    if attr_size < size_of::<sys::ibv_device_attr>() {
        return sys::EINVAL as c_int;
    }
    let mut resp = sys::ib_uverbs_ex_query_device_resp::default();
    let mut resp_size = size_of_val(&resp);
    // SAFETY: arguments as libibverbs gave them; resp is live and resp_size its size.
    let rc = unsafe {
        sys::ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &mut resp, &mut resp_size)
    };
    if rc != 0 {
        return rc;
    }
    // SAFETY: attr is valid for at least orig_attr (checked above); the kernel
    // reports firmware as a number, users expect text.
    unsafe { (*attr).orig_attr.fw_ver = abi::fw_ver_text(resp.base.fw_ver) };
    0
}

/// `verbs_context_ops::query_port`.
///
/// `port_attr` is rdma-core 44's `ibv_port_attr`, shorter than v55's (no
/// `active_speed_ex`): only libibverbs' own command code writes it.
///
/// # Safety
///
/// libibverbs passes a live context and a port_attr of at least its own size.
unsafe extern "C" fn query_port(
    ibctx: *mut sys::ibv_context,
    port: u8,
    port_attr: *mut sys::ibv_port_attr,
) -> c_int {
    let mut cmd = sys::ibv_query_port::default();
    // SAFETY: arguments as libibverbs gave them; cmd is live and sized.
    unsafe { sys::ibv_cmd_query_port(ibctx, port, port_attr, &mut cmd, size_of_val(&cmd)) }
}

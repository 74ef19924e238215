// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! QP glue: the `rsiw_qp` container, QP async events, and the translation
//! of kernel work requests (`ib_send_wr` and its containers, `ib_recv_wr`)
//! and QP attributes into the driver's plain types.

use super::{
    bindings as b, mr,
    obj::{self, eopnotsupp},
};
use crate::{
    device::Device,
    mem::Access,
    qp::{QpCaps, QpModify, QpState},
    wr::{RecvWqe, SendOp, SendWqe, Sge, MAX_INLINE, MAX_SGE},
};
use core::ptr::NonNull;
use kernel::{prelude::*, sync::ArcBorrow};

/// QP asynchronous events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpEvent {
    /// `IB_EVENT_QP_FATAL`: the QP went to ERROR on a local or remote error.
    Fatal,
    /// `IB_EVENT_QP_REQ_ERR`: an invalid request from the peer (Terminate).
    ReqErr,
    /// `IB_EVENT_QP_ACCESS_ERR`: a protection error (Terminate).
    AccessErr,
    /// `IB_EVENT_QP_LAST_WQE_REACHED` (SRQ QP went to ERROR).
    LastWqeReached,
}

/// The `ib_qp` of an rsiw QP.
///
/// # Invariants
///
/// Points to an `ib_qp` valid until its `destroy_qp` returns; `destroy_qp`
/// stops the engine first, so no completion or event refers to it later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IbQpRef(NonNull<b::ib_qp>);

// SAFETY: used to call the consumer's event handler (any context) and as an
// opaque value in completions.
unsafe impl Send for IbQpRef {}
// SAFETY: as above.
unsafe impl Sync for IbQpRef {}

impl IbQpRef {
    /// Wraps the `ib_qp` of a `create_qp` call.
    ///
    /// # Safety
    ///
    /// `qp` must stay valid until the QP's `destroy_qp` (type invariant).
    pub(crate) unsafe fn new(qp: NonNull<b::ib_qp>) -> Self {
        // INVARIANT: per the requirements.
        Self(qp)
    }

    /// The raw pointer (iw_cm's `get_qp`, `ib_wc.qp`).
    pub(crate) fn as_ptr(&self) -> *mut b::ib_qp {
        self.0.as_ptr()
    }

    /// Reports `ev` to the consumer's QP event handler.
    pub(crate) fn event(&self, ev: QpEvent) {
        let t = match ev {
            QpEvent::Fatal => b::ib_event_type_IB_EVENT_QP_FATAL,
            QpEvent::ReqErr => b::ib_event_type_IB_EVENT_QP_REQ_ERR,
            QpEvent::AccessErr => b::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
            QpEvent::LastWqeReached => b::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
        };
        // SAFETY: valid per the type invariant.
        unsafe { b::rsiw_shim_qp_event(self.0.as_ptr(), t) }
    }
}

/// The Rust QP of an rsiw `ib_qp`.
///
/// # Safety
///
/// `qp` must be a live `rsiw_qp` whose `priv` is unchanged for `'a`.
pub(crate) unsafe fn qp_obj<'a>(qp: *mut b::ib_qp) -> Option<ArcBorrow<'a, crate::qp::Qp>> {
    // SAFETY: the core allocated `sizeof(struct rsiw_qp)` with `base` first.
    unsafe { obj::borrow((*qp.cast::<b::rsiw_qp>()).priv_) }
}

/// The `priv` slot of an rsiw `ib_qp`.
///
/// # Safety
///
/// `qp` must be an `rsiw_qp` the caller may modify (create/destroy_qp).
pub(crate) unsafe fn qp_slot<'a>(qp: *mut b::ib_qp) -> &'a mut *const core::ffi::c_void {
    // SAFETY: per the requirements.
    unsafe { &mut (*qp.cast::<b::rsiw_qp>()).priv_ }
}

/// Requested sizes from an `ib_qp_cap`.
pub(crate) fn caps_from(c: &b::ib_qp_cap) -> QpCaps {
    QpCaps {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline: c.max_inline_data,
    }
}

/// Writes granted sizes back.
pub(crate) fn caps_to(c: &QpCaps, out: &mut b::ib_qp_cap) {
    out.max_send_wr = c.max_send_wr;
    out.max_recv_wr = c.max_recv_wr;
    out.max_send_sge = c.max_send_sge;
    out.max_recv_sge = c.max_recv_sge;
    out.max_inline_data = c.max_inline;
}

/// The changes an attribute mask selects.
pub(crate) fn modify_from(a: &b::ib_qp_attr, mask: i32) -> Result<QpModify> {
    let mask = mask as u32;
    let has = |bit: u32| mask & bit != 0;
    let state = |v| QpState::from_raw(v).ok_or(EINVAL);
    Ok(QpModify {
        state: has(b::ib_qp_attr_mask_IB_QP_STATE)
            .then(|| state(a.qp_state))
            .transpose()?,
        cur_state: has(b::ib_qp_attr_mask_IB_QP_CUR_STATE)
            .then(|| state(a.cur_qp_state))
            .transpose()?,
        access: has(b::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS).then_some(a.qp_access_flags as u32),
        ord: has(b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC).then_some(u32::from(a.max_rd_atomic)),
        ird: has(b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
            .then_some(u32::from(a.max_dest_rd_atomic)),
    })
}

/// Copies the SGE list of a work request.
///
/// # Safety
///
/// `list` must point to `n` readable `ib_sge`s (when `n > 0`).
unsafe fn sges(list: *const b::ib_sge, n: i32) -> Result<([Sge; MAX_SGE], u8)> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n > MAX_SGE {
        return Err(EINVAL);
    }
    let mut out = [Sge::default(); MAX_SGE];
    if n > 0 {
        if list.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: per the requirements.
        let src = unsafe { core::slice::from_raw_parts(list, n) };
        for (o, s) in out.iter_mut().zip(src) {
            *o = Sge {
                addr: s.addr,
                len: s.length,
                lkey: s.lkey,
            };
        }
    }
    Ok((out, n as u8))
}

/// Translates one kernel receive work request.
///
/// # Safety
///
/// `wr` must be a valid `ib_recv_wr` from a `post_recv`/`post_srq_recv` call.
pub(crate) unsafe fn recv_wqe(wr: &b::ib_recv_wr) -> Result<RecvWqe> {
    // SAFETY: per the requirements, `sg_list` holds `num_sge` entries.
    let (sge, num_sge) = unsafe { sges(wr.sg_list, wr.num_sge) }?;
    // SAFETY: reading the union as `wr_id` (a `wr_cqe` pointer is returned
    // to the consumer unchanged in the same bits).
    let wr_id = unsafe { *wr.__bindgen_anon_1.wr_id.as_ref() };
    Ok(RecvWqe {
        wr_id,
        sge,
        num_sge,
    })
}

/// Translates one kernel send work request; `EOPNOTSUPP` for types rsiw
/// does not implement (Send with Immediate has no iWARP encoding, RFC 7306 §4).
///
/// # Safety
///
/// `wr` must be a valid `ib_send_wr` from a `post_send` call, embedded in the
/// container its opcode names (`ib_rdma_wr`, `ib_atomic_wr`, `ib_reg_wr`).
pub(crate) unsafe fn send_wqe(dev: &Device, wr: &b::ib_send_wr) -> Result<SendWqe> {
    let flags = wr.send_flags as u32;
    // SAFETY: per the requirements.
    let (sge, num_sge) = unsafe { sges(wr.sg_list, wr.num_sge) }?;
    let mut w = SendWqe {
        // SAFETY: reading the union as `wr_id` (see `recv_wqe`).
        wr_id: unsafe { *wr.__bindgen_anon_1.wr_id.as_ref() },
        signaled: flags & b::ib_send_flags_IB_SEND_SIGNALED as u32 != 0,
        solicited: flags & b::ib_send_flags_IB_SEND_SOLICITED as u32 != 0,
        fence: flags & b::ib_send_flags_IB_SEND_FENCE as u32 != 0,
        inline: flags & b::ib_send_flags_IB_SEND_INLINE as u32 != 0,
        sge,
        num_sge,
        ..SendWqe::default()
    };
    let base: *const b::ib_send_wr = wr;
    let rdma = || {
        // SAFETY: the opcode says `wr` is the first member of an `ib_rdma_wr`.
        let r = unsafe { &*base.cast::<b::ib_rdma_wr>() };
        (r.remote_addr, r.rkey)
    };
    // SAFETY (for the `ex` union reads below): plain 32-bit data.
    match wr.opcode {
        b::ib_wr_opcode_IB_WR_SEND => w.op = SendOp::Send,
        b::ib_wr_opcode_IB_WR_SEND_WITH_INV => {
            w.op = SendOp::SendInv;
            // SAFETY: plain data union member.
            w.inv_rkey = unsafe { *wr.ex.invalidate_rkey.as_ref() };
        }
        b::ib_wr_opcode_IB_WR_RDMA_WRITE => {
            w.op = SendOp::Write;
            (w.remote_addr, w.rkey) = rdma();
        }
        b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
            w.op = SendOp::WriteImm;
            (w.remote_addr, w.rkey) = rdma();
            // SAFETY: plain data union member; network order on the wire.
            w.imm = u64::from(u32::from_be(unsafe { *wr.ex.imm_data.as_ref() }));
        }
        b::ib_wr_opcode_IB_WR_RDMA_READ | b::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
            if w.num_sge > 1 || w.inline {
                // max_sge_rd is 1: a Read Request names one sink (RFC 5040 §4.4).
                return Err(EINVAL);
            }
            w.op = if wr.opcode == b::ib_wr_opcode_IB_WR_RDMA_READ {
                SendOp::Read
            } else {
                // SAFETY: plain data union member.
                w.inv_rkey = unsafe { *wr.ex.invalidate_rkey.as_ref() };
                SendOp::ReadInv
            };
            (w.remote_addr, w.rkey) = rdma();
        }
        b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
        | b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
        | b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
        | b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD => {
            // SAFETY: the opcode says `wr` heads an `ib_atomic_wr`.
            let a = unsafe { &*base.cast::<b::ib_atomic_wr>() };
            // The result lands in one 8-byte local buffer (RFC 7306 §5.2.2).
            if w.num_sge != 1 || sge[0].len != 8 || w.inline {
                return Err(EINVAL);
            }
            w.remote_addr = a.remote_addr;
            w.rkey = a.rkey;
            (w.op, w.atomic) = match wr.opcode {
                b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => {
                    (SendOp::CmpSwap, [a.swap, a.compare_add, u64::MAX, u64::MAX])
                }
                b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                    (SendOp::FetchAdd, [a.compare_add, 0, 0, 0])
                }
                b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP => (
                    SendOp::MaskedCmpSwap,
                    [a.swap, a.compare_add, a.swap_mask, a.compare_add_mask],
                ),
                _ => (
                    SendOp::MaskedFetchAdd,
                    [a.compare_add, 0, 0, a.compare_add_mask],
                ),
            };
        }
        b::ib_wr_opcode_IB_WR_LOCAL_INV => {
            w.op = SendOp::LocalInv;
            // SAFETY: plain data union member.
            w.inv_rkey = unsafe { *wr.ex.invalidate_rkey.as_ref() };
        }
        b::ib_wr_opcode_IB_WR_REG_MR => {
            // SAFETY: the opcode says `wr` heads an `ib_reg_wr`.
            let r = unsafe { &*base.cast::<b::ib_reg_wr>() };
            if r.mr.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: the consumer passes one of this device's live MRs.
            let mem = unsafe { mr::mr_mem(r.mr) }.ok_or(EINVAL)?;
            let access = Access(r.access as u32);
            if !mem.is_frwr() || access.0 & !Access::KNOWN != 0 {
                return Err(EINVAL);
            }
            // Remote write or atomic rights imply local write (as for any MR).
            let remote_w = Access(Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);
            if access.0 & remote_w.0 != 0 && !access.contains(Access::LOCAL_WRITE) {
                return Err(EINVAL);
            }
            // SAFETY: live MR (above).
            w.reg_range = unsafe { mr::mr_range(r.mr) };
            w.op = SendOp::RegMr;
            w.reg = Some((mem.into(), r.key, access));
        }
        b::ib_wr_opcode_IB_WR_SEND_WITH_IMM => return Err(eopnotsupp()),
        _ => return Err(eopnotsupp()),
    }
    if w.inline {
        inline_copy(dev, &mut w)?;
    }
    Ok(w)
}

/// Copies the payload of an inline WQE out of the consumer's buffers
/// (kernel virtual addresses; the lkey is not consulted, as for any
/// inline send).
fn inline_copy(_dev: &Device, w: &mut SendWqe) -> Result {
    if !matches!(
        w.op,
        SendOp::Send | SendOp::SendInv | SendOp::Write | SendOp::WriteImm
    ) {
        return Err(EINVAL);
    }
    let mut at = 0usize;
    for s in w.sge.iter().take(usize::from(w.num_sge)) {
        let n = s.len as usize;
        let end = at
            .checked_add(n)
            .filter(|&e| e <= MAX_INLINE)
            .ok_or(EINVAL)?;
        mr::kva_read(s.addr, w.inline_data.get_mut(at..end).ok_or(EINVAL)?)?;
        at = end;
    }
    w.inline_len = at as u32;
    Ok(())
}

/// Fills `query_qp`'s attribute and init-attribute structures.
pub(crate) fn query_to(
    qp: &crate::qp::Qp,
    ib: *mut b::ib_qp,
    attr: &mut b::ib_qp_attr,
    init: &mut b::ib_qp_init_attr,
) {
    let (state, ord, ird, access) = qp.query();
    let caps = qp.caps();
    attr.qp_state = state as u32;
    attr.cur_qp_state = state as u32;
    attr.qp_access_flags = access as i32;
    attr.max_rd_atomic = ord.min(255) as u8;
    attr.max_dest_rd_atomic = ird.min(255) as u8;
    attr.path_mtu = b::ib_mtu_IB_MTU_4096;
    attr.port_num = 1;
    caps_to(&caps, &mut attr.cap);
    // SAFETY: `ib` is the live `ib_qp` of the running `query_qp`; the core
    // set these fields at creation.
    unsafe {
        init.send_cq = (*ib).send_cq;
        init.recv_cq = (*ib).recv_cq;
        init.srq = (*ib).srq;
        init.qp_context = (*ib).qp_context;
        init.event_handler = (*ib).event_handler;
    }
    init.qp_type = b::ib_qp_type_IB_QPT_RC;
    init.sq_sig_type = if qp.sig_all() {
        b::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        b::ib_sig_type_IB_SIGNAL_REQ_WR
    };
    caps_to(&caps, &mut init.cap);
}

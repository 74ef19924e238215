// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The QP verbs: create (RC only; the provider's rings for user QPs),
//! modify, query, destroy, and the translation of kernel work requests into
//! the driver's WQEs (RFC 5040 §5 operations, RFC 7306 atomics).

use crate::{
    cm,
    kapi::{
        av, bindings as b, mr,
        obj::eopnotsupp,
        owner::Owner,
        qp::{AtomicKind, IbQpRef, RecvWr, SendWr, SendWrOp},
        udata::Udata,
    },
    objects::device::Device,
    objects::qp::{PathMod, Qp, QpCaps, QpInit, QpModify, QpState, MAX_QP_WR},
    objects::srq::Srq,
    queue::cq::Cq,
    queue::uqueue::{self, UserRq, UserSq},
    queue::wr::{RecvWqe, SendOp, SendWqe, Sge, MAX_INLINE, MAX_SGE},
    resources::mem::{Access, Mem},
};
use kernel::{prelude::*, sync::Arc};

/// Requested sizes from an `ib_qp_cap`.
fn caps_from(c: &b::ib_qp_cap) -> QpCaps {
    QpCaps {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline: c.max_inline_data,
    }
}

/// Writes granted sizes back.
fn caps_to(c: &QpCaps, out: &mut b::ib_qp_cap) {
    out.max_send_wr = c.max_send_wr;
    out.max_recv_wr = c.max_recv_wr;
    out.max_send_sge = c.max_send_sge;
    out.max_recv_sge = c.max_recv_sge;
    out.max_inline_data = c.max_inline;
}

/// The objects `create_qp` works with besides the attributes.
pub(crate) struct CreateArgs<'a> {
    /// The device and the QP's PD number.
    pub(crate) dev: Arc<Device>,
    /// PD number.
    pub(crate) pdn: u32,
    /// The `ib_qp` being created.
    pub(crate) ib: IbQpRef,
    /// Send and receive CQs.
    pub(crate) cqs: (Arc<Cq>, Arc<Cq>),
    /// The SRQ, if any.
    pub(crate) srq: Option<Arc<Srq>>,
    /// The user's udata (user QPs).
    pub(crate) udata: Option<Udata<'a>>,
}

/// `create_qp`: RC only; writes the granted sizes back into `init`.
pub(crate) fn create(a: CreateArgs<'_>, init: &mut b::ib_qp_init_attr) -> Result<Arc<Qp>> {
    if init.qp_type != b::ib_qp_type_IB_QPT_RC || init.create_flags != 0 {
        return Err(eopnotsupp());
    }
    let CreateArgs {
        dev,
        pdn,
        ib,
        cqs: (scq, rcq),
        srq,
        mut udata,
    } = a;
    let has_srq = srq.is_some();
    let qinit = QpInit {
        ib,
        pd: pdn,
        scq,
        rcq,
        srq,
        sig_all: init.sq_sig_type == b::ib_sig_type_IB_SIGNAL_ALL_WR,
        caps: caps_from(&init.cap),
        owner: if udata.is_some() {
            Owner::current()
        } else {
            Owner::kernel()
        },
    };
    // User QPs keep their rings in memory mapped to the provider.
    let make = |u: &Udata<'_>, c: &QpCaps| -> Result<(UserSq, Option<UserRq>)> {
        let rq = (!has_srq).then_some((c.max_recv_wr, c.max_recv_sge));
        uqueue::qp_rings(u, MAX_QP_WR, (c.max_send_wr, c.max_send_sge), rq)
    };
    let user = udata.as_ref().map(|u| move |c: &QpCaps| make(u, c));
    let (q, caps) = Qp::new(&dev, qinit, user.as_ref().map(|f| f as _))?;
    if let Some(u) = udata.as_mut() {
        let resp = q
            .with_user(|sq, rq| uqueue::qp_resp(q.num(), sq, rq))
            .ok_or(EINVAL)?;
        if let Err(e) = u.respond(&resp) {
            q.destroy();
            return Err(e);
        }
    }
    caps_to(&caps, &mut init.cap);
    Ok(q)
}

/// The changes an attribute mask selects.
fn modify_from(a: &b::ib_qp_attr, mask: i32) -> Result<QpModify> {
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
        path: PathMod {
            av: has(b::ib_qp_attr_mask_IB_QP_AV).then(|| av::get(a)),
            dest_qpn: has(b::ib_qp_attr_mask_IB_QP_DEST_QPN).then_some(a.dest_qp_num),
            rq_psn: has(b::ib_qp_attr_mask_IB_QP_RQ_PSN).then_some(a.rq_psn),
            sq_psn: has(b::ib_qp_attr_mask_IB_QP_SQ_PSN).then_some(a.sq_psn),
            path_mtu: has(b::ib_qp_attr_mask_IB_QP_PATH_MTU).then_some(a.path_mtu),
            timeout: has(b::ib_qp_attr_mask_IB_QP_TIMEOUT).then_some(a.timeout),
            retry_cnt: has(b::ib_qp_attr_mask_IB_QP_RETRY_CNT).then_some(a.retry_cnt),
            rnr_retry: has(b::ib_qp_attr_mask_IB_QP_RNR_RETRY).then_some(a.rnr_retry),
            min_rnr_timer: has(b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER).then_some(a.min_rnr_timer),
            pkey_index: has(b::ib_qp_attr_mask_IB_QP_PKEY_INDEX).then_some(a.pkey_index),
            port: has(b::ib_qp_attr_mask_IB_QP_PORT).then_some(a.port_num as u8),
            qkey: has(b::ib_qp_attr_mask_IB_QP_QKEY).then_some(a.qkey),
        },
    })
}

/// `modify_qp` (process context; may sleep when leaving a connection). An
/// INIT→RTR with an address vector arms the QP for the peer it names; the
/// CM then waits for that peer (passive side) or connects to it (active
/// side), both from RTR. Never waits for the peer.
pub(crate) fn modify(qp: &Arc<Qp>, attr: &b::ib_qp_attr, mask: i32) -> Result {
    let m = modify_from(attr, mask)?;
    if m.state == Some(QpState::Rtr) && m.path.av.is_some() {
        // Refuse before arming if the device cannot take QP connections.
        cm::qpconn::listener(qp.dev())?;
    }
    qp.modify(&m)?;
    if let Some(job) = qp.oob_job() {
        cm::qpconn::begin(qp, job);
    } else if m.state == Some(QpState::Rts) {
        // A request parked until this QP had its SQ PSN looks again.
        if let Some(l) = qp.dev().qp_listener_if_any() {
            l.rearm();
        }
    }
    Ok(())
}

/// `query_qp`: fills the attributes and init attributes; the IB path
/// attributes are those `modify_qp` set.
pub(crate) fn query(qp: &Qp, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
    let (state, ord, ird, access) = qp.query();
    let caps = qp.caps();
    let path = qp.path();
    attr.qp_state = state as u32;
    attr.cur_qp_state = state as u32;
    attr.qp_access_flags = access as i32;
    attr.max_rd_atomic = ord.min(255) as u8;
    attr.max_dest_rd_atomic = ird.min(255) as u8;
    attr.path_mtu = path.path_mtu;
    attr.port_num = u32::from(path.port);
    attr.dest_qp_num = path.dest_qpn;
    attr.rq_psn = path.rq_psn;
    attr.sq_psn = path.sq_psn;
    attr.timeout = path.timeout;
    attr.retry_cnt = path.retry_cnt;
    attr.rnr_retry = path.rnr_retry;
    attr.min_rnr_timer = path.min_rnr_timer;
    attr.pkey_index = path.pkey_index;
    attr.qkey = path.qkey;
    av::set(&qp.ib(), attr, &path.av);
    caps_to(&caps, &mut attr.cap);
    crate::kapi::qp::query_init(&qp.ib(), init);
    init.qp_type = b::ib_qp_type_IB_QPT_RC;
    init.sq_sig_type = if qp.sig_all() {
        b::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        b::ib_sig_type_IB_SIGNAL_REQ_WR
    };
    caps_to(&caps, &mut init.cap);
}

/// The driver's SGEs of a kernel SGE list.
fn sges(list: &[b::ib_sge]) -> ([Sge; MAX_SGE], u8) {
    let mut out = [Sge::default(); MAX_SGE];
    for (o, s) in out.iter_mut().zip(list) {
        *o = Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        };
    }
    // At most MAX_SGE (the views check).
    (out, list.len().min(MAX_SGE) as u8)
}

/// Translates one kernel receive work request.
pub(crate) fn recv_wqe(wr: &RecvWr<'_>) -> Result<RecvWqe> {
    let (sge, num_sge) = sges(wr.sges(MAX_SGE)?);
    Ok(RecvWqe {
        wr_id: wr.wr_id(),
        sge,
        num_sge,
    })
}

/// The rights of a fast registration, checked as for any MR.
fn reg_access(mem: &Mem, access: u32) -> Result<Access> {
    let access = Access(access);
    if !mem.is_frwr() || access.0 & !Access::KNOWN != 0 {
        return Err(EINVAL);
    }
    // Remote write or atomic rights imply local write (as for any MR).
    let remote_w = Access(Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);
    if access.0 & remote_w.0 != 0 && !access.contains(Access::LOCAL_WRITE) {
        return Err(EINVAL);
    }
    Ok(access)
}

/// Translates one kernel send work request; `EOPNOTSUPP` for types rsiw
/// does not implement (Send with Immediate has no iWARP encoding, RFC 7306 §4).
pub(crate) fn send_wqe(wr: &SendWr<'_, Mem>) -> Result<SendWqe> {
    let (sge, num_sge) = sges(wr.sges(MAX_SGE)?);
    let mut w = SendWqe {
        wr_id: wr.wr_id(),
        signaled: wr.signaled(),
        solicited: wr.solicited(),
        fence: wr.fence(),
        inline: wr.inline(),
        sge,
        num_sge,
        ..SendWqe::default()
    };
    match wr.op()? {
        SendWrOp::Send => w.op = SendOp::Send,
        SendWrOp::SendInv(inv) => (w.op, w.inv_rkey) = (SendOp::SendInv, inv),
        SendWrOp::Write(addr, rkey) => (w.op, w.remote_addr, w.rkey) = (SendOp::Write, addr, rkey),
        SendWrOp::WriteImm(addr, rkey, imm) => {
            (w.op, w.remote_addr, w.rkey) = (SendOp::WriteImm, addr, rkey);
            w.imm = u64::from(imm);
        }
        op @ (SendWrOp::Read(..) | SendWrOp::ReadInv(..)) => {
            if w.num_sge > 1 || w.inline {
                // max_sge_rd is 1: a Read Request names one sink (RFC 5040 §4.4).
                return Err(EINVAL);
            }
            (w.op, w.remote_addr, w.rkey, w.inv_rkey) = match op {
                SendWrOp::ReadInv(addr, rkey, inv) => (SendOp::ReadInv, addr, rkey, inv),
                SendWrOp::Read(addr, rkey) => (SendOp::Read, addr, rkey, 0),
                _ => return Err(EINVAL),
            };
        }
        SendWrOp::Atomic {
            kind,
            remote,
            operands: [compare_add, swap, compare_add_mask, swap_mask],
        } => {
            // The result lands in one 8-byte local buffer (RFC 7306 §5.2.2).
            if w.num_sge != 1 || sge[0].len != 8 || w.inline {
                return Err(EINVAL);
            }
            (w.remote_addr, w.rkey) = remote;
            (w.op, w.atomic) = match kind {
                AtomicKind::CmpSwap => (SendOp::CmpSwap, [swap, compare_add, u64::MAX, u64::MAX]),
                AtomicKind::FetchAdd => (SendOp::FetchAdd, [compare_add, 0, 0, 0]),
                AtomicKind::MaskedCmpSwap => (
                    SendOp::MaskedCmpSwap,
                    [swap, compare_add, swap_mask, compare_add_mask],
                ),
                AtomicKind::MaskedFetchAdd => (
                    SendOp::MaskedFetchAdd,
                    [compare_add, 0, 0, compare_add_mask],
                ),
            };
        }
        SendWrOp::LocalInv(inv) => (w.op, w.inv_rkey) = (SendOp::LocalInv, inv),
        SendWrOp::RegMr {
            mr,
            range,
            key,
            access,
        } => {
            let access = reg_access(&mr, access)?;
            w.reg_range = range;
            w.op = SendOp::RegMr;
            w.reg = Some((mr.into(), key, access));
        }
        SendWrOp::SendImm | SendWrOp::Other => return Err(eopnotsupp()),
    }
    if w.inline {
        inline_copy(&mut w)?;
    }
    Ok(w)
}

/// Copies the payload of an inline WQE out of the consumer's buffers
/// (kernel virtual addresses; the lkey is not consulted, as for any
/// inline send).
fn inline_copy(w: &mut SendWqe) -> Result {
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

/// `post_send` of one work request (any context, never sleeps).
pub(crate) fn post_send(qp: &Qp, wr: &SendWr<'_, Mem>) -> Result {
    qp.post_send(send_wqe(wr)?)
}

/// `post_recv` of one work request (any context, never sleeps).
pub(crate) fn post_recv(qp: &Qp, wr: &RecvWr<'_>) -> Result {
    qp.post_recv(recv_wqe(wr)?)
}

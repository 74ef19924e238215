// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! QP glue: the `rsiw_qp` container, QP async events, and safe views of
//! kernel work requests (`ib_send_wr` and its containers, `ib_recv_wr`) for
//! the verbs to translate.

use super::{bindings as b, obj};
use core::{marker::PhantomData, ptr::NonNull};
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
/// `qp` must be a live `rsiw_qp` whose `priv` holds a `T` (or is null) and
/// is unchanged for `'a`.
pub(crate) unsafe fn qp_obj<'a, T: 'static>(qp: *mut b::ib_qp) -> Option<ArcBorrow<'a, T>> {
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

/// A kernel send work request, borrowed for one `post_send` call; `M` is
/// the Rust object in the `priv` slot of every rsiw MR.
pub(crate) struct SendWr<'a, M: 'static> {
    wr: &'a b::ib_send_wr,
    _mr: PhantomData<&'a M>,
}

/// What an atomic work request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicKind {
    /// `IB_WR_ATOMIC_CMP_AND_SWP`.
    CmpSwap,
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`.
    FetchAdd,
    /// `IB_WR_MASKED_ATOMIC_CMP_AND_SWP`.
    MaskedCmpSwap,
    /// `IB_WR_MASKED_ATOMIC_FETCH_AND_ADD`.
    MaskedFetchAdd,
}

/// The operation of a [`SendWr`] and its container's fields.
pub(crate) enum SendWrOp<'a, M: 'static> {
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_INV` of an STag.
    SendInv(u32),
    /// `IB_WR_RDMA_WRITE` to `(remote address, rkey)`.
    Write(u64, u32),
    /// `IB_WR_RDMA_WRITE_WITH_IMM` with 32 bits of immediate data (host order).
    WriteImm(u64, u32, u32),
    /// `IB_WR_RDMA_READ` from `(remote address, rkey)`.
    Read(u64, u32),
    /// `IB_WR_RDMA_READ_WITH_INV`, and the STag named for invalidation.
    ReadInv(u64, u32, u32),
    /// An atomic (`ib_atomic_wr`).
    Atomic {
        /// Which one.
        kind: AtomicKind,
        /// Remote address and rkey.
        remote: (u64, u32),
        /// `compare_add`, `swap`, `compare_add_mask`, `swap_mask`.
        operands: [u64; 4],
    },
    /// `IB_WR_LOCAL_INV` of an STag.
    LocalInv(u32),
    /// `IB_WR_REG_MR` (`ib_reg_wr`).
    RegMr {
        /// The MR's Rust object.
        mr: ArcBorrow<'a, M>,
        /// The MR's `iova` and `length` at post time.
        range: (u64, u64),
        /// The new key (the whole rkey; its low byte is the key).
        key: u32,
        /// `IB_ACCESS_*` rights.
        access: u32,
    },
    /// `IB_WR_SEND_WITH_IMM` (no iWARP encoding).
    SendImm,
    /// Any other opcode.
    Other,
}

impl<'a, M: 'static> SendWr<'a, M> {
    /// Wraps a work request of a `post_send` chain.
    ///
    /// # Safety
    ///
    /// `wr` must be a valid `ib_send_wr` embedded in the container its opcode
    /// names (`ib_rdma_wr`, `ib_atomic_wr`, `ib_reg_wr`), and every rsiw MR's
    /// `priv` must hold an `M`.
    pub(crate) unsafe fn new(wr: &'a b::ib_send_wr) -> Self {
        Self {
            wr,
            _mr: PhantomData,
        }
    }

    /// The consumer's work request id.
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: reading the union as `wr_id` (a `wr_cqe` pointer is
        // returned to the consumer unchanged in the same bits).
        unsafe { *self.wr.__bindgen_anon_1.wr_id.as_ref() }
    }

    fn flag(&self, f: b::ib_send_flags) -> bool {
        self.wr.send_flags as u32 & f as u32 != 0
    }

    /// `IB_SEND_SIGNALED`.
    pub(crate) fn signaled(&self) -> bool {
        self.flag(b::ib_send_flags_IB_SEND_SIGNALED)
    }

    /// `IB_SEND_SOLICITED`.
    pub(crate) fn solicited(&self) -> bool {
        self.flag(b::ib_send_flags_IB_SEND_SOLICITED)
    }

    /// `IB_SEND_FENCE`.
    pub(crate) fn fence(&self) -> bool {
        self.flag(b::ib_send_flags_IB_SEND_FENCE)
    }

    /// `IB_SEND_INLINE`.
    pub(crate) fn inline(&self) -> bool {
        self.flag(b::ib_send_flags_IB_SEND_INLINE)
    }

    /// The SGE list, `EINVAL` if it is longer than `max`.
    pub(crate) fn sges(&self, max: usize) -> Result<&'a [b::ib_sge]> {
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract).
        unsafe { sge_list(self.wr.sg_list, self.wr.num_sge, max) }
    }

    /// The operation and the fields of its container.
    pub(crate) fn op(&self) -> Result<SendWrOp<'a, M>> {
        let wr = self.wr;
        let base: *const b::ib_send_wr = wr;
        let rdma = || {
            // SAFETY: the opcode says `wr` is the first member of an `ib_rdma_wr`.
            let r = unsafe { &*base.cast::<b::ib_rdma_wr>() };
            (r.remote_addr, r.rkey)
        };
        // SAFETY: plain 32-bit data union member.
        let inv = || unsafe { *wr.ex.invalidate_rkey.as_ref() };
        Ok(match wr.opcode {
            b::ib_wr_opcode_IB_WR_SEND => SendWrOp::Send,
            b::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendWrOp::SendInv(inv()),
            b::ib_wr_opcode_IB_WR_RDMA_WRITE => {
                let (a, k) = rdma();
                SendWrOp::Write(a, k)
            }
            b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
                let (a, k) = rdma();
                // SAFETY: plain data union member; network order in the WR.
                SendWrOp::WriteImm(a, k, u32::from_be(unsafe { *wr.ex.imm_data.as_ref() }))
            }
            b::ib_wr_opcode_IB_WR_RDMA_READ => {
                let (a, k) = rdma();
                SendWrOp::Read(a, k)
            }
            b::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
                let (a, k) = rdma();
                SendWrOp::ReadInv(a, k, inv())
            }
            b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
            | b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
            | b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD => {
                // SAFETY: the opcode says `wr` heads an `ib_atomic_wr`.
                let a = unsafe { &*base.cast::<b::ib_atomic_wr>() };
                let kind = match wr.opcode {
                    b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => AtomicKind::CmpSwap,
                    b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => AtomicKind::FetchAdd,
                    b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP => AtomicKind::MaskedCmpSwap,
                    _ => AtomicKind::MaskedFetchAdd,
                };
                SendWrOp::Atomic {
                    kind,
                    remote: (a.remote_addr, a.rkey),
                    operands: [a.compare_add, a.swap, a.compare_add_mask, a.swap_mask],
                }
            }
            b::ib_wr_opcode_IB_WR_LOCAL_INV => SendWrOp::LocalInv(inv()),
            b::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: the opcode says `wr` heads an `ib_reg_wr`.
                let r = unsafe { &*base.cast::<b::ib_reg_wr>() };
                if r.mr.is_null() {
                    return Err(EINVAL);
                }
                // SAFETY: the consumer passes one of this device's live MRs,
                // whose `priv` holds an `M` (`new`'s requirements).
                let mr = unsafe { super::mr::mr_obj::<M>(r.mr) }.ok_or(EINVAL)?;
                SendWrOp::RegMr {
                    mr,
                    // SAFETY: live MR (above).
                    range: unsafe { super::mr::mr_range(r.mr) },
                    key: r.key,
                    access: r.access as u32,
                }
            }
            b::ib_wr_opcode_IB_WR_SEND_WITH_IMM => SendWrOp::SendImm,
            _ => SendWrOp::Other,
        })
    }
}

/// A kernel receive work request, borrowed for one `post_recv` call.
pub(crate) struct RecvWr<'a> {
    wr: &'a b::ib_recv_wr,
}

impl<'a> RecvWr<'a> {
    /// Wraps a work request of a `post_recv`/`post_srq_recv` chain.
    ///
    /// # Safety
    ///
    /// `wr` must be a valid `ib_recv_wr`.
    pub(crate) unsafe fn new(wr: &'a b::ib_recv_wr) -> Self {
        Self { wr }
    }

    /// The consumer's work request id.
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: reading the union as `wr_id` (see `SendWr::wr_id`).
        unsafe { *self.wr.__bindgen_anon_1.wr_id.as_ref() }
    }

    /// The SGE list, `EINVAL` if it is longer than `max`.
    pub(crate) fn sges(&self, max: usize) -> Result<&'a [b::ib_sge]> {
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract).
        unsafe { sge_list(self.wr.sg_list, self.wr.num_sge, max) }
    }
}

/// The SGE list of a work request.
///
/// # Safety
///
/// `list` must point to `n` readable `ib_sge`s (when `n > 0`) for `'a`.
unsafe fn sge_list<'a>(list: *const b::ib_sge, n: i32, max: usize) -> Result<&'a [b::ib_sge]> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n > max {
        return Err(EINVAL);
    }
    if n == 0 {
        return Ok(&[]);
    }
    if list.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: per the requirements.
    Ok(unsafe { core::slice::from_raw_parts(list, n) })
}

/// Walks a chain of work requests, stopping at the first that fails; the
/// consumer's `bad` then names it. Returns 0 or the errno.
///
/// # Safety
///
/// `first` must be null or a valid chain linked through `next(wr)`; `bad`
/// null or writable.
pub(crate) unsafe fn post_chain<W>(
    first: *const W,
    next: impl Fn(&W) -> *const W,
    bad: *mut *const W,
    mut post: impl FnMut(&W) -> Result,
) -> core::ffi::c_int {
    let mut wr = first;
    while !wr.is_null() {
        // SAFETY: per the requirements.
        let w = unsafe { &*wr };
        if let Err(e) = post(w) {
            if !bad.is_null() {
                // SAFETY: the consumer's out-parameter.
                unsafe { *bad = wr };
            }
            return e.to_errno();
        }
        wr = next(w);
    }
    0
}

/// The `send_cq`, `recv_cq`, `srq`, context and handler `create_qp` recorded,
/// for `query_qp`'s init attributes.
pub(crate) fn query_init(ib: &IbQpRef, init: &mut b::ib_qp_init_attr) {
    // SAFETY: `ib` is a live `ib_qp` (type invariant); the core set these
    // fields at creation.
    unsafe {
        let q = ib.as_ptr();
        init.send_cq = (*q).send_cq;
        init.recv_cq = (*q).recv_cq;
        init.srq = (*q).srq;
        init.qp_context = (*q).qp_context;
        init.event_handler = (*q).event_handler;
    }
}

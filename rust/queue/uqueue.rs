// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! User queues: the kernel side of the SQ, RQ/SRQ and CQ rings shared with the
//! provider (layout and protocol in the user ABI, `rust/abi`), turning ring
//! elements into the verbs objects' work requests and completions into CQEs.
//!
//! Userspace may rewrite its rings at any time. The kernel therefore copies an
//! element out once and validates the copy, keeps the index it owns in its own
//! memory (never reading it back from the ring), masks every index, and treats a
//! producer index that claims more than a ring's worth of elements as a broken
//! queue. Nothing a user writes can make these functions panic.
//!
//! Locking: the types here have no lock of their own. The owning CQ/QP/SRQ
//! calls them under its queue lock (the `&mut self` methods need it); the
//! header words are atomics shared with userspace.

use crate::{
    abi::{cmd, cqe as acqe, ring, wqe as awqe},
    kapi::{
        mmap::{RingMem, RingView},
        udata::Udata,
    },
    queue::cq::{Cqe, WcFlags, WcOpcode, WcStatus},
    queue::wr::{RecvWqe, SendOp, SendWqe, Sge, MAX_INLINE, MAX_SGE},
};
use core::sync::atomic::{fence, Ordering};
use kernel::{prelude::*, sync::Arc};

/// One ring: where it lies in its mapping and its element count (a power
/// of two).
struct Ring {
    mem: RingView,
    entries: u32,
}

impl Ring {
    /// A zeroed ring of at least `requested` elements (at most `max`), in a
    /// mapping of its own.
    fn new(udata: &Udata<'_>, requested: u32, max: u32, elem: usize) -> Result<Self> {
        let entries = ring::ring_entries(requested, max).ok_or(EINVAL)?;
        let bytes = ring::ring_bytes(entries, elem).ok_or(EINVAL)?;
        let mem = Arc::new(RingMem::new(udata, bytes)?, GFP_KERNEL)?;
        Ok(Self {
            mem: mem.view(0).ok_or(EINVAL)?,
            entries,
        })
    }

    /// Byte offset in the mapping of the element at free-running `index`
    /// (the mapping's accessors check it against its length).
    fn offset(&self, index: u32, elem: usize) -> usize {
        self.mem
            .at()
            .saturating_add(ring::slot_offset(index, self.entries, elem))
    }

    /// The user's producer index, if it is at most a ring ahead of `consumer`
    /// (the kernel's own consumer index); `EINVAL` for a corrupt one.
    fn produced(&self, consumer: u32) -> Result<u32> {
        // Acquire: the elements before the index are visible once we see it.
        let p = self.mem.producer().load(Ordering::Acquire);
        ring::ring_used(p, consumer, self.entries).ok_or(EINVAL)?;
        Ok(p)
    }

    /// Hands slots up to `consumer` back to the producer.
    fn release(&self, consumer: u32) {
        self.mem.consumer().store(consumer, Ordering::Release);
    }
}

/// A ring element the kernel refused; the owner completes `wr_id` with
/// `status` (the QP then goes to ERROR, as for any failed WQE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadWqe {
    /// The element's work request id, as userspace wrote it.
    pub(crate) wr_id: u64,
    /// The completion status to report.
    pub(crate) status: WcStatus,
}

/// SGEs of a ring element, `None` if it claims more than `max`.
fn sges(num: u8, max: u32, get: impl Fn(usize) -> Option<awqe::Sge>) -> Option<[Sge; MAX_SGE]> {
    if u32::from(num) > max || usize::from(num) > MAX_SGE {
        return None;
    }
    let mut out = [Sge::default(); MAX_SGE];
    for (i, o) in out.iter_mut().enumerate().take(usize::from(num)) {
        let s = get(i)?;
        *o = Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        };
    }
    Some(out)
}

/// The verbs operation of a validated SQE opcode.
fn send_op(op: awqe::SqOpcode) -> SendOp {
    use awqe::SqOpcode as O;
    match op {
        O::Send => SendOp::Send,
        O::SendInv => SendOp::SendInv,
        O::Write => SendOp::Write,
        O::WriteImm => SendOp::WriteImm,
        O::Read => SendOp::Read,
        O::ReadInv => SendOp::ReadInv,
        O::LocalInv => SendOp::LocalInv,
        O::BindMw => SendOp::BindMw,
        O::CmpSwap => SendOp::CmpSwap,
        O::FetchAdd => SendOp::FetchAdd,
        O::MaskedCmpSwap => SendOp::MaskedCmpSwap,
        O::MaskedFetchAdd => SendOp::MaskedFetchAdd,
        // `Sqe::validate` refuses it (no RFC encoding); never a valid WQE.
        O::SendImm => SendOp::Send,
    }
}

/// Validates a copied SQE (`Sqe::validate`, shared with the provider) and
/// turns it into a work request.
fn send_wqe(sqe: &awqe::Sqe, max_sge: u32, max_inline: u32) -> Result<SendWqe, BadWqe> {
    let bad = |status| BadWqe {
        wr_id: sqe.wr_id,
        status,
    };
    let op = sqe.validate(max_sge, max_inline).map_err(|e| match e {
        awqe::SqeError::Inline => bad(WcStatus::LocLenErr),
        _ => bad(WcStatus::LocQpOpErr),
    })?;
    let inline = sqe.flags & awqe::SQE_INLINE != 0;
    let mut w = SendWqe {
        wr_id: sqe.wr_id,
        op: send_op(op),
        signaled: sqe.flags & awqe::SQE_SIGNALED != 0,
        solicited: sqe.flags & awqe::SQE_SOLICITED != 0,
        fence: sqe.flags & awqe::SQE_FENCE != 0,
        inline,
        remote_addr: sqe.remote_addr,
        rkey: sqe.rkey,
        inv_rkey: sqe.inv_rkey(),
        // A bind's access rights: the high half of the shared word.
        imm: if op == awqe::SqOpcode::BindMw {
            u64::from(sqe.mw_access())
        } else {
            sqe.imm()
        },
        atomic: sqe.atomic(),
        ..SendWqe::default()
    };
    if inline {
        let data = sqe.inline_data().ok_or(bad(WcStatus::LocLenErr))?;
        w.inline_data
            .get_mut(..data.len())
            .ok_or(bad(WcStatus::LocLenErr))?
            .copy_from_slice(data);
        w.inline_len = u32::from(sqe.inline_len);
        return Ok(w);
    }
    w.sge = sges(sqe.num_sge, max_sge, |i| sqe.sge(i)).ok_or(bad(WcStatus::LocQpOpErr))?;
    w.num_sge = sqe.num_sge;
    Ok(w)
}

/// Validates a copied RQE and turns it into a receive work request.
fn recv_wqe(rqe: &awqe::Rqe, max_sge: u32) -> Result<RecvWqe, BadWqe> {
    let sge = sges(rqe.num_sge, max_sge, |i| rqe.sge(i)).ok_or(BadWqe {
        wr_id: rqe.wr_id,
        status: WcStatus::LocQpOpErr,
    })?;
    Ok(RecvWqe {
        wr_id: rqe.wr_id,
        sge,
        num_sge: rqe.num_sge,
    })
}

/// A user send queue (ring of [`awqe::Sqe`]).
///
/// The QP keeps the indices it owns: `head` (oldest slot still in use; what
/// [`UserSq::release`] publishes) and `next` (next SQE to fetch).
pub(crate) struct UserSq {
    ring: Ring,
    max_sge: u32,
    max_inline: u32,
}

impl UserSq {
    /// Starts idle, so the provider rings the doorbell for the first post.
    fn with_ring(ring: Ring, max_sge: u32) -> Self {
        ring.mem.flags().store(ring::SQ_IDLE, Ordering::Release);
        Self {
            ring,
            max_sge,
            max_inline: MAX_INLINE as u32,
        }
    }

    /// Ring size in SQEs (the QP's `max_send_wr`).
    pub(crate) fn entries(&self) -> u32 {
        self.ring.entries
    }

    /// The user's producer index: SQEs up to it (exclusive) are posted.
    /// `EINVAL` if it claims more than a ring beyond `head`: the QP is broken.
    pub(crate) fn produced(&self, head: u32) -> Result<u32> {
        self.ring.produced(head)
    }

    /// The SQE at free-running index `index`, copied and validated.
    pub(crate) fn fetch(&self, index: u32) -> Result<SendWqe, BadWqe> {
        let off = self.ring.offset(index, awqe::SQE_SIZE);
        let sqe: awqe::Sqe = self.ring.mem.mem().read(off).ok_or(BadWqe {
            wr_id: 0,
            status: WcStatus::GeneralErr,
        })?;
        send_wqe(&sqe, self.max_sge, self.max_inline)
    }

    /// Slots before `head` are free for the provider again.
    pub(crate) fn release(&self, head: u32) {
        self.ring.release(head)
    }

    /// The TX side found no SQE at `next`: mark the SQ idle so the provider
    /// rings the doorbell for the next post. Returns `false` (and stays busy)
    /// if an SQE was posted meanwhile: the caller must fetch it.
    pub(crate) fn park(&self, next: u32) -> bool {
        let flags = self.ring.mem.flags();
        flags.fetch_or(ring::SQ_IDLE, Ordering::SeqCst);
        // Pairs with the provider's fence between its producer store and its
        // flags load: either it sees SQ_IDLE or we see its producer.
        fence(Ordering::SeqCst);
        if self.ring.mem.producer().load(Ordering::Acquire) == next {
            return true;
        }
        flags.fetch_and(!ring::SQ_IDLE, Ordering::Relaxed);
        false
    }

    /// The QP is in ERROR: every post must ring the doorbell, whose flush
    /// completes it. Set before the flush reads the producer index (and
    /// never cleared again), so a post the flush does not see rings.
    pub(crate) fn idle_for_flush(&self) {
        self.ring
            .mem
            .flags()
            .fetch_or(ring::SQ_IDLE, Ordering::SeqCst);
        // Pairs with the provider's fence between its producer store and its
        // flags load (as in `park`).
        fence(Ordering::SeqCst);
    }

    /// What the ring's header says now, for the operator's view: the
    /// provider's producer index, the consumer index the kernel published
    /// and whether the SQ is marked idle (the next post rings the doorbell).
    pub(crate) fn header(&self) -> (u32, u32, bool) {
        let m = &self.ring.mem;
        (
            m.producer().load(Ordering::Relaxed),
            m.consumer().load(Ordering::Relaxed),
            m.flags().load(Ordering::Relaxed) & ring::SQ_IDLE != 0,
        )
    }

    /// The TX side is working on the SQ: posts need no doorbell.
    pub(crate) fn unpark(&self) {
        let flags = self.ring.mem.flags();
        if flags.load(Ordering::Relaxed) & ring::SQ_IDLE != 0 {
            flags.fetch_and(!ring::SQ_IDLE, Ordering::Relaxed);
        }
    }
}

/// A user receive queue (ring of [`awqe::Rqe`]), a QP's RQ or an SRQ.
///
/// The owner keeps `head`, the next RQE to take; taking one releases its slot
/// (the RQE is copied out whole).
pub(crate) struct UserRq {
    ring: Ring,
    max_sge: u32,
}

impl UserRq {
    /// An SRQ's ring of at least `requested` RQEs (at most `max`), in a
    /// mapping of its own. Process context.
    pub(crate) fn new(udata: &Udata<'_>, requested: u32, max: u32, max_sge: u32) -> Result<Self> {
        Ok(Self {
            ring: Ring::new(udata, requested, max, awqe::RQE_SIZE)?,
            max_sge,
        })
    }

    /// Ring size in RQEs.
    pub(crate) fn entries(&self) -> u32 {
        self.ring.entries
    }

    /// Posted RQEs not yet taken (for the SRQ limit), `EINVAL` if corrupt.
    pub(crate) fn pending(&self, head: u32) -> Result<u32> {
        let p = self.ring.produced(head)?;
        Ok(p.wrapping_sub(head))
    }

    /// Takes the RQE at `*head` if one is posted: copies it, releases its
    /// slot and advances `*head`. `Ok(None)` when the ring is empty; an
    /// invalid RQE is consumed too and returned as the error.
    pub(crate) fn take(&self, head: &mut u32) -> Result<Option<RecvWqe>, BadWqe> {
        let broken = BadWqe {
            wr_id: 0,
            status: WcStatus::GeneralErr,
        };
        let p = self.ring.produced(*head).map_err(|_| broken)?;
        if p == *head {
            return Ok(None);
        }
        let off = self.ring.offset(*head, awqe::RQE_SIZE);
        let rqe: Option<awqe::Rqe> = self.ring.mem.mem().read(off);
        *head = head.wrapping_add(1);
        self.ring.release(*head);
        recv_wqe(&rqe.ok_or(broken)?, self.max_sge).map(Some)
    }
}

/// A user QP's rings (process context): an SQ of at least `sq.0` SQEs with
/// up to `sq.1` SGEs each and, unless the QP uses an SRQ (`rq` is `None`), an
/// RQ of at least `rq.0` RQEs with up to `rq.1` SGEs, at most `max` elements
/// each. Both lie in one mapping, the RQ ring behind the SQ ring
/// ([`ring::qp_rq_offset`]): a QP's rings waste the tail of one page, not
/// of two.
pub(crate) fn qp_rings(
    udata: &Udata<'_>,
    max: u32,
    sq: (u32, u32),
    rq: Option<(u32, u32)>,
) -> Result<(UserSq, Option<UserRq>)> {
    let num_sqe = ring::ring_entries(sq.0, max).ok_or(EINVAL)?;
    let num_rqe = match rq {
        Some((n, _)) => ring::ring_entries(n, max).ok_or(EINVAL)?,
        None => 0,
    };
    let bytes =
        ring::qp_ring_bytes(num_sqe, awqe::SQE_SIZE, num_rqe, awqe::RQE_SIZE).ok_or(EINVAL)?;
    let mem = Arc::new(RingMem::new(udata, bytes)?, GFP_KERNEL)?;
    let sq_ring = Ring {
        mem: mem.view(0).ok_or(EINVAL)?,
        entries: num_sqe,
    };
    let rq = match rq {
        Some((_, max_sge)) => {
            let at = ring::qp_rq_offset(num_sqe, awqe::SQE_SIZE).ok_or(EINVAL)?;
            let ring = Ring {
                mem: mem.view(at).ok_or(EINVAL)?,
                entries: num_rqe,
            };
            Some(UserRq { ring, max_sge })
        }
        None => None,
    };
    Ok((UserSq::with_ring(sq_ring, sq.1), rq))
}

/// The ABI opcode of a completion.
fn cq_opcode(op: WcOpcode) -> acqe::CqOpcode {
    use acqe::CqOpcode as O;
    match op {
        WcOpcode::Send => O::Send,
        WcOpcode::RdmaWrite => O::Write,
        WcOpcode::RdmaRead => O::Read,
        WcOpcode::CompSwap => O::CmpSwap,
        WcOpcode::FetchAdd => O::FetchAdd,
        WcOpcode::MaskedCompSwap => O::MaskedCmpSwap,
        WcOpcode::MaskedFetchAdd => O::MaskedFetchAdd,
        // Users cannot post fast registrations; report it as the local op it is.
        WcOpcode::LocalInv | WcOpcode::RegMr => O::LocalInv,
        WcOpcode::BindMw => O::BindMw,
        WcOpcode::Recv => O::Recv,
        WcOpcode::RecvRdmaWithImm => O::RecvWriteImm,
    }
}

/// The ABI status of a completion.
fn cq_status(s: WcStatus) -> acqe::CqStatus {
    use acqe::CqStatus as S;
    match s {
        WcStatus::Success => S::Success,
        WcStatus::LocLenErr => S::LocLenErr,
        WcStatus::LocQpOpErr => S::LocQpOpErr,
        WcStatus::LocProtErr => S::LocProtErr,
        WcStatus::WrFlushErr => S::WrFlushErr,
        WcStatus::MwBindErr => S::MwBindErr,
        WcStatus::BadRespErr => S::BadRespErr,
        WcStatus::LocAccessErr => S::LocAccessErr,
        WcStatus::RemInvReqErr => S::RemInvReqErr,
        WcStatus::RemAccessErr => S::RemAccessErr,
        WcStatus::RemOpErr => S::RemOpErr,
        WcStatus::FatalErr => S::FatalErr,
        WcStatus::GeneralErr => S::GeneralErr,
    }
}

/// The ABI form of a completion.
fn abi_cqe(c: &Cqe) -> acqe::Cqe {
    let mut flags = 0;
    if c.flags.0 & WcFlags::WITH_IMM.0 != 0 {
        flags |= acqe::CQE_WITH_IMM;
    }
    if c.flags.0 & WcFlags::WITH_INV.0 != 0 {
        flags |= acqe::CQE_WITH_INV;
    }
    if c.solicited {
        flags |= acqe::CQE_SOLICITED;
    }
    acqe::Cqe {
        wr_id: c.wr_id,
        opcode: cq_opcode(c.opcode) as u8,
        status: cq_status(c.status) as u8,
        flags,
        reserved0: 0,
        byte_len: c.byte_len,
        ex: c.ex,
        qp_num: c.qp_num,
        reserved1: 0,
    }
}

/// Retries of the arm-bit update before firing anyway: userspace flipping the
/// flags word must not keep the kernel (maybe in softirq) looping.
const ARM_RETRIES: u32 = 8;

/// A user completion queue (ring of [`acqe::Cqe`]); the kernel is the producer.
pub(crate) struct UserCq {
    ring: Ring,
    /// The kernel's producer index (never read back from the ring).
    tail: u32,
}

impl UserCq {
    /// A ring of at least `requested` CQEs (at most `max`). Process context.
    pub(crate) fn new(udata: &Udata<'_>, requested: u32, max: u32) -> Result<Self> {
        Ok(Self {
            ring: Ring::new(udata, requested, max, acqe::CQE_SIZE)?,
            tail: 0,
        })
    }

    /// Ring size in CQEs (the CQ's `cqe`).
    pub(crate) fn entries(&self) -> u32 {
        self.ring.entries
    }

    /// Adds a completion. `Ok(true)` if the CQ was armed for it: the caller
    /// raises the completion event (after dropping its lock). `ENOSPC` if the
    /// ring is full: the CQE is lost, [`ring::CQ_OVERFLOW`] is set and the
    /// caller reports `IB_EVENT_CQ_ERR`.
    pub(crate) fn push(&mut self, cqe: &Cqe) -> Result<bool> {
        let mem = &self.ring.mem;
        let head = mem.consumer().load(Ordering::Acquire);
        // A consumer index the kernel never produced counts as full too.
        let full = ring::ring_used(self.tail, head, self.ring.entries)
            .map_or(true, |n| n >= self.ring.entries);
        if full {
            mem.flags().fetch_or(ring::CQ_OVERFLOW, Ordering::Relaxed);
            return Err(ENOSPC);
        }
        let off = self.ring.offset(self.tail, acqe::CQE_SIZE);
        if !mem.mem().write(off, &abi_cqe(cqe)) {
            return Err(EINVAL);
        }
        self.tail = self.tail.wrapping_add(1);
        mem.producer().store(self.tail, Ordering::Release);
        // Pairs with the provider arming (a full barrier) then polling again:
        // either it sees this CQE or we see its arm bits.
        fence(Ordering::SeqCst);
        Ok(self.take_arm(cqe.solicited || cqe.status != WcStatus::Success))
    }

    /// Clears the arm bits if they ask for an event on this completion.
    fn take_arm(&self, solicited: bool) -> bool {
        let flags = self.ring.mem.flags();
        let arm = ring::CQ_ARM_NEXT | ring::CQ_ARM_SOLICITED;
        let mut cur = flags.load(Ordering::Relaxed);
        for _ in 0..ARM_RETRIES {
            // RFC 5040 §5.3: a solicited arm fires on solicited (or failed) completions only.
            let fire =
                cur & ring::CQ_ARM_NEXT != 0 || (cur & ring::CQ_ARM_SOLICITED != 0 && solicited);
            if !fire {
                return false;
            }
            match flags.compare_exchange(cur, cur & !arm, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        flags.fetch_and(!arm, Ordering::AcqRel);
        true
    }
}

/// The create-CQ response for `cq`.
pub(crate) fn cq_resp(cq: &UserCq, cq_id: u32) -> cmd::CreateCqResp {
    cmd::CreateCqResp {
        cq_id,
        num_cqe: cq.ring.entries,
        cq_key: cq.ring.mem.mem().key(),
        cq_len: cq.ring.mem.mem().len() as u64,
    }
}

/// The create-QP response for a QP with `sq` and, unless it uses an SRQ, `rq`
/// (the rings of [`qp_rings`]).
pub(crate) fn qp_resp(qp_num: u32, sq: &UserSq, rq: Option<&UserRq>) -> cmd::CreateQpResp {
    cmd::CreateQpResp {
        qp_num,
        num_sqe: sq.ring.entries,
        num_rqe: rq.map_or(0, |r| r.ring.entries),
        max_inline: sq.max_inline,
        key: sq.ring.mem.mem().key(),
        len: sq.ring.mem.mem().len() as u64,
        rq_offset: rq.map_or(0, |r| r.ring.mem.at() as u64),
        reserved: 0,
    }
}

/// The create-SRQ response for `srq`.
pub(crate) fn srq_resp(srq: &UserRq) -> cmd::CreateSrqResp {
    cmd::CreateSrqResp {
        num_rqe: srq.ring.entries,
        reserved: 0,
        srq_key: srq.ring.mem.mem().key(),
        srq_len: srq.ring.mem.mem().len() as u64,
    }
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Completion queues: created in the kernel, polled from the shared CQ ring
//! (`rsiw_abi::cqe`), armed through the ring's flags word.

use crate::abi::CreateCqRespFull;
use crate::ring::Ring;
use crate::{cmem, sys};
use core::ffi::c_int;
use core::mem::size_of_val;
use core::ptr::null_mut;
use core::sync::atomic::{fence, Ordering};
use rsiw_abi::cqe::{CqOpcode, CqStatus, Cqe, CQE_SIZE, CQE_WITH_IMM, CQE_WITH_INV};
use rsiw_abi::ring::{CQ_ARM_NEXT, CQ_ARM_SOLICITED};
use std::sync::Mutex;

/// rsiw's CQ.
#[repr(C)]
pub struct Cq {
    /// libibverbs' part, first: users hold a pointer to it.
    pub ibv_cq: sys::ibv_cq,
    /// The CQE ring; set before the CQ is handed out.
    ring: Option<Ring>,
    /// Our consumer index (the ring's copy is only published).
    head: Mutex<u32>,
}

/// The `ibv_wc` opcode of a CQE opcode.
fn wc_opcode(op: CqOpcode) -> sys::ibv_wc_opcode {
    match op {
        CqOpcode::Send => sys::ibv_wc_opcode_IBV_WC_SEND,
        CqOpcode::Write => sys::ibv_wc_opcode_IBV_WC_RDMA_WRITE,
        CqOpcode::Read => sys::ibv_wc_opcode_IBV_WC_RDMA_READ,
        // Verbs has no masked-atomic completion opcodes.
        CqOpcode::CmpSwap | CqOpcode::MaskedCmpSwap => sys::ibv_wc_opcode_IBV_WC_COMP_SWAP,
        CqOpcode::FetchAdd | CqOpcode::MaskedFetchAdd => sys::ibv_wc_opcode_IBV_WC_FETCH_ADD,
        CqOpcode::LocalInv => sys::ibv_wc_opcode_IBV_WC_LOCAL_INV,
        CqOpcode::BindMw => sys::ibv_wc_opcode_IBV_WC_BIND_MW,
        CqOpcode::Recv => sys::ibv_wc_opcode_IBV_WC_RECV,
        CqOpcode::RecvWriteImm => sys::ibv_wc_opcode_IBV_WC_RECV_RDMA_WITH_IMM,
    }
}

/// The `ibv_wc` status of a CQE status.
fn wc_status(s: CqStatus) -> sys::ibv_wc_status {
    match s {
        CqStatus::Success => sys::ibv_wc_status_IBV_WC_SUCCESS,
        CqStatus::LocLenErr => sys::ibv_wc_status_IBV_WC_LOC_LEN_ERR,
        CqStatus::LocQpOpErr => sys::ibv_wc_status_IBV_WC_LOC_QP_OP_ERR,
        CqStatus::LocProtErr => sys::ibv_wc_status_IBV_WC_LOC_PROT_ERR,
        CqStatus::WrFlushErr => sys::ibv_wc_status_IBV_WC_WR_FLUSH_ERR,
        CqStatus::BadRespErr => sys::ibv_wc_status_IBV_WC_BAD_RESP_ERR,
        CqStatus::LocAccessErr => sys::ibv_wc_status_IBV_WC_LOC_ACCESS_ERR,
        CqStatus::RemInvReqErr => sys::ibv_wc_status_IBV_WC_REM_INV_REQ_ERR,
        CqStatus::RemAccessErr => sys::ibv_wc_status_IBV_WC_REM_ACCESS_ERR,
        CqStatus::RemOpErr => sys::ibv_wc_status_IBV_WC_REM_OP_ERR,
        CqStatus::FatalErr => sys::ibv_wc_status_IBV_WC_FATAL_ERR,
        CqStatus::GeneralErr => sys::ibv_wc_status_IBV_WC_GENERAL_ERR,
        CqStatus::MwBindErr => sys::ibv_wc_status_IBV_WC_MW_BIND_ERR,
    }
}

/// The work completion users see for a kernel CQE. Codes this provider does
/// not know (a newer kernel) become `IBV_WC_GENERAL_ERR`, never a crash.
pub fn to_wc(c: &Cqe) -> sys::ibv_wc {
    let mut wc = sys::ibv_wc {
        wr_id: c.wr_id,
        byte_len: c.byte_len,
        qp_num: c.qp_num,
        ..Default::default()
    };
    match (CqOpcode::from_u8(c.opcode), CqStatus::from_u8(c.status)) {
        (Some(op), Some(st)) => {
            wc.opcode = wc_opcode(op);
            wc.status = wc_status(st);
        }
        _ => wc.status = sys::ibv_wc_status_IBV_WC_GENERAL_ERR,
    }
    if c.flags & CQE_WITH_IMM != 0 {
        wc.wc_flags |= sys::ibv_wc_flags_IBV_WC_WITH_IMM;
        // Verbs' 32-bit immediate, network order: the low half of RFC 7306's 64 bits.
        wc.__bindgen_anon_1.imm_data = (c.ex as u32).to_be();
    } else if c.flags & CQE_WITH_INV != 0 {
        wc.wc_flags |= sys::ibv_wc_flags_IBV_WC_WITH_INV;
        wc.__bindgen_anon_1.invalidated_rkey = c.ex as u32;
    }
    wc
}

/// `verbs_context_ops::create_cq`: NULL with errno set on failure.
///
/// # Safety
///
/// libibverbs passes a live context of ours and a channel of it (or NULL).
pub unsafe extern "C" fn create_cq(
    ibctx: *mut sys::ibv_context,
    cqe: c_int,
    channel: *mut sys::ibv_comp_channel,
    comp_vector: c_int,
) -> *mut sys::ibv_cq {
    let mut cq = Box::new(Cq {
        ibv_cq: Default::default(),
        ring: None,
        head: Mutex::new(0),
    });
    let mut cmd = sys::ibv_create_cq::default();
    let mut resp = CreateCqRespFull::default();
    // SAFETY: cq stays at this address (boxed) for its life, as the kernel's
    // user_handle; cmd/resp are live and sized with the driver part.
    let rc = unsafe {
        sys::ibv_cmd_create_cq(
            ibctx,
            cqe,
            channel,
            comp_vector,
            &mut cq.ibv_cq,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp.core,
            size_of_val(&resp),
        )
    };
    if rc != 0 {
        cmem::set_errno(rc);
        return null_mut();
    }
    // SAFETY: the context is live.
    let fd = unsafe { (*ibctx).cmd_fd };
    match Ring::map(
        fd,
        resp.drv.cq_key,
        resp.drv.cq_len,
        resp.drv.num_cqe,
        CQE_SIZE,
    ) {
        Ok(r) => cq.ring = Some(r),
        Err(e) => {
            // SAFETY: the kernel CQ was created above and is not handed out.
            unsafe { sys::ibv_cmd_destroy_cq(&mut cq.ibv_cq) };
            cmem::set_errno(e);
            return null_mut();
        }
    }
    // The ring may be larger than asked (a power of two): report all of it.
    cq.ibv_cq.cqe = resp.drv.num_cqe as c_int;
    &mut Box::leak(cq).ibv_cq
}

/// The [`Cq`] around an `ibv_cq` of ours.
///
/// # Safety
///
/// `cq` must come from [`create_cq`] and not be destroyed.
unsafe fn from_ibv<'a>(cq: *mut sys::ibv_cq) -> &'a Cq {
    // SAFETY: ibv_cq is the first field of the #[repr(C)] Cq.
    unsafe { &*cq.cast::<Cq>() }
}

/// `verbs_context_ops::destroy_cq`: on failure the CQ stays usable.
///
/// # Safety
///
/// `cq` comes from [`create_cq`]; no QP uses it (the kernel refuses otherwise).
pub unsafe extern "C" fn destroy_cq(cq: *mut sys::ibv_cq) -> c_int {
    // SAFETY: a live CQ of ours, leaked from a Box in create_cq; after a
    // successful destroy nothing uses it.
    unsafe { cmem::free_boxed_if_destroyed(sys::ibv_cmd_destroy_cq(cq), cq.cast::<Cq>()) }
}

/// `verbs_context_ops::poll_cq`: up to `n` completions into `wc`, oldest first.
///
/// # Safety
///
/// `cq` is ours; `wc` is valid for `n` entries.
pub unsafe extern "C" fn poll_cq(cq: *mut sys::ibv_cq, n: c_int, wc: *mut sys::ibv_wc) -> c_int {
    // SAFETY: per the requirements.
    let cq = unsafe { from_ibv(cq) };
    cq.poll(n, |i, c| {
        // SAFETY: i < n (the caller's array size).
        unsafe { wc.add(i).write(to_wc(c)) }
    })
}

impl Cq {
    /// Hands up to `n` CQEs, oldest first, to `put(i, cqe)` for i = 0..; the
    /// count taken, or `-EINVAL`.
    pub fn poll(&self, n: c_int, mut put: impl FnMut(usize, &Cqe)) -> c_int {
        let Some(ring) = &self.ring else {
            return -(sys::EINVAL as c_int);
        };
        let Ok(max) = u32::try_from(n) else {
            return -(sys::EINVAL as c_int);
        };
        let mut head = self.head.lock().unwrap_or_else(|e| e.into_inner());
        // Acquire: CQEs before the index are written.
        let tail = ring.producer().load(Ordering::Acquire);
        let avail = tail.wrapping_sub(*head).min(ring.entries()).min(max);
        for i in 0..avail {
            let c: Cqe = ring.get(head.wrapping_add(i));
            put(i as usize, &c);
        }
        *head = head.wrapping_add(avail);
        // Release: the kernel may reuse the slots once it sees the index.
        ring.consumer().store(*head, Ordering::Release);
        avail as c_int
    }

    /// The CQ behind an `ibv_cq`, if it is one of ours (its context polls
    /// with [`poll_cq`]); `None` for another provider's CQ.
    ///
    /// # Safety
    ///
    /// `cq` is NULL or a live `ibv_cq` of any provider.
    pub unsafe fn ours<'a>(cq: *mut sys::ibv_cq) -> Option<&'a Cq> {
        if cq.is_null() {
            return None;
        }
        // SAFETY: a live CQ has a live context.
        let poll = unsafe { (*(*cq).context).ops.poll_cq };
        if poll.map(|f| f as *const () as usize) != Some(poll_cq as *const () as usize) {
            return None;
        }
        // SAFETY: ours: created by create_cq.
        Some(unsafe { from_ibv(cq) })
    }
}

/// `verbs_context_ops::req_notify_cq`: arm the CQ for the next (solicited)
/// completion; the kernel raises the event through the completion channel.
///
/// # Safety
///
/// `cq` is ours.
pub unsafe extern "C" fn req_notify_cq(cq: *mut sys::ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: per the requirements.
    let cq = unsafe { from_ibv(cq) };
    let Some(ring) = &cq.ring else {
        return sys::EINVAL as c_int;
    };
    let bit = if solicited_only != 0 {
        CQ_ARM_SOLICITED
    } else {
        CQ_ARM_NEXT
    };
    // SeqCst, then the caller polls again: pairs with the kernel's fence between
    // its producer store and its flags load, so no CQE is missed by both.
    ring.flags().fetch_or(bit, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    0
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ring::shared_pair;

    #[test]
    fn poll_drains_in_order_across_wrap_and_arms() {
        let (ring, kernel) = shared_pair(4, CQE_SIZE);
        let mut cq = Cq {
            ibv_cq: Default::default(),
            ring: Some(ring),
            head: Mutex::new(0),
        };
        let push = |i: u32| {
            let c = Cqe {
                wr_id: u64::from(i),
                ..cqe(CqOpcode::Send as u8, 0, 0, 0)
            };
            kernel.put(i, &c);
            kernel.producer().store(i + 1, Ordering::Release);
        };
        let mut wc = [sys::ibv_wc::default(); 8];
        // SAFETY: a CQ of the test's own making; wc holds 8 entries.
        let poll = |cq: &mut Cq, wc: &mut [sys::ibv_wc], n| unsafe {
            poll_cq(&mut cq.ibv_cq, n, wc.as_mut_ptr())
        };
        assert_eq!(poll(&mut cq, &mut wc, 8), 0);
        for i in 0..3 {
            push(i);
        }
        assert_eq!(poll(&mut cq, &mut wc, 2), 2);
        assert_eq!((wc[0].wr_id, wc[1].wr_id), (0, 1));
        assert_eq!(kernel.consumer().load(Ordering::Acquire), 2);
        for i in 3..6 {
            push(i);
        }
        assert_eq!(poll(&mut cq, &mut wc, 8), 4);
        let ids: Vec<u64> = wc[..4].iter().map(|w| w.wr_id).collect();
        assert_eq!(ids, [2, 3, 4, 5]);
        assert_eq!(kernel.consumer().load(Ordering::Acquire), 6);
        // SAFETY: as above.
        assert_eq!(unsafe { req_notify_cq(&mut cq.ibv_cq, 1) }, 0);
        assert_eq!(kernel.flags().load(Ordering::Acquire), CQ_ARM_SOLICITED);
        // SAFETY: as above.
        assert_eq!(unsafe { req_notify_cq(&mut cq.ibv_cq, 0) }, 0);
        assert_eq!(
            kernel.flags().load(Ordering::Acquire),
            CQ_ARM_SOLICITED | CQ_ARM_NEXT
        );
    }

    fn cqe(opcode: u8, status: u8, flags: u8, ex: u64) -> Cqe {
        Cqe {
            wr_id: 0x1234,
            opcode,
            status,
            flags,
            byte_len: 77,
            ex,
            qp_num: 9,
            ..Default::default()
        }
    }

    #[test]
    fn plain_completion() {
        let wc = to_wc(&cqe(CqOpcode::Read as u8, CqStatus::Success as u8, 0, 0));
        assert_eq!(wc.wr_id, 0x1234);
        assert_eq!(wc.opcode, sys::ibv_wc_opcode_IBV_WC_RDMA_READ);
        assert_eq!(wc.status, sys::ibv_wc_status_IBV_WC_SUCCESS);
        assert_eq!(wc.byte_len, 77);
        assert_eq!(wc.qp_num, 9);
        assert_eq!(wc.wc_flags, 0);
    }

    #[test]
    fn immediate_is_network_order_low_half() {
        let wc = to_wc(&cqe(
            CqOpcode::RecvWriteImm as u8,
            0,
            CQE_WITH_IMM,
            0xdead_beef_0102_0304,
        ));
        assert_eq!(wc.opcode, sys::ibv_wc_opcode_IBV_WC_RECV_RDMA_WITH_IMM);
        assert_eq!(wc.wc_flags, sys::ibv_wc_flags_IBV_WC_WITH_IMM);
        // SAFETY: reading a plain u32 union member.
        let imm = unsafe { wc.__bindgen_anon_1.imm_data };
        assert_eq!(imm.to_ne_bytes(), [1, 2, 3, 4]);
    }

    #[test]
    fn invalidate_flag_is_bit_3() {
        let wc = to_wc(&cqe(CqOpcode::Recv as u8, 0, CQE_WITH_INV, 0x00ab_cd01));
        assert_eq!(wc.wc_flags, 1 << 3);
        // SAFETY: reading a plain u32 union member.
        assert_eq!(unsafe { wc.__bindgen_anon_1.invalidated_rkey }, 0x00ab_cd01);
    }

    #[test]
    fn statuses_keep_verbs_numbering() {
        let s = |st: CqStatus| to_wc(&cqe(0, st as u8, 0, 0)).status;
        assert_eq!(s(CqStatus::WrFlushErr), 5);
        assert_eq!(s(CqStatus::RemAccessErr), 10);
        assert_eq!(s(CqStatus::LocProtErr), 4);
        assert_eq!(s(CqStatus::GeneralErr), 21);
    }

    #[test]
    fn unknown_codes_become_general_error() {
        assert_eq!(
            to_wc(&cqe(200, 0, 0, 0)).status,
            sys::ibv_wc_status_IBV_WC_GENERAL_ERR
        );
        assert_eq!(
            to_wc(&cqe(0, 99, 0, 0)).status,
            sys::ibv_wc_status_IBV_WC_GENERAL_ERR
        );
    }
}

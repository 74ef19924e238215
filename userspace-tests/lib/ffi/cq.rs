// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Completion queues, work completions and their status codes, shared receive queues.

use super::*;
use std::io::{Error, Result};
use std::rc::Rc;

struct ChanInner {
    ch: *mut ibv_comp_channel,
    _id: CmId,
}

impl Drop for ChanInner {
    fn drop(&mut self) {
        // SAFETY: CQs using the channel hold an Rc on it and are gone.
        unsafe { ibv_destroy_comp_channel(self.ch) };
    }
}

/// A completion queue, optionally with a completion channel for events.
pub struct Cq {
    pub(super) cq: *mut ibv_cq,
    chan: Option<Rc<ChanInner>>,
    _id: CmId,
}

/// One work completion.
#[derive(Debug, Clone, Copy)]
pub struct Wc {
    /// The WR's id.
    pub wr_id: u64,
    /// `IBV_WC_*` status.
    pub status: u32,
    /// `IBV_WC_*` opcode.
    pub opcode: u32,
    /// Bytes received.
    pub byte_len: u32,
    /// `IBV_WC_WITH_*` flags.
    pub flags: u32,
    /// Immediate data (network order) or invalidated rkey, per `flags`.
    pub imm_or_inv: u32,
}

/// `IBV_WC_SUCCESS`.
pub const WC_SUCCESS: u32 = ibv_wc_status_IBV_WC_SUCCESS;
/// `IBV_WC_WR_FLUSH_ERR`.
pub const WC_FLUSH: u32 = ibv_wc_status_IBV_WC_WR_FLUSH_ERR;
/// `IBV_WC_REM_ACCESS_ERR`.
pub const WC_REM_ACCESS: u32 = ibv_wc_status_IBV_WC_REM_ACCESS_ERR;
/// `IBV_WC_LOC_QP_OP_ERR`: a work request the QP cannot execute.
pub const WC_LOC_QP_OP: u32 = ibv_wc_status_IBV_WC_LOC_QP_OP_ERR;
/// `IBV_WC_LOC_LEN_ERR`.
pub const WC_LOC_LEN: u32 = ibv_wc_status_IBV_WC_LOC_LEN_ERR;
/// `IBV_WC_LOC_PROT_ERR`: a local buffer its SGE may not name.
pub const WC_LOC_PROT: u32 = ibv_wc_status_IBV_WC_LOC_PROT_ERR;
/// `IBV_EVENT_QP_ACCESS_ERR`: the peer refused a remote access (its Terminate).
pub const EVENT_QP_ACCESS_ERR: u32 = ibv_event_type_IBV_EVENT_QP_ACCESS_ERR;
/// `IBV_WC_REM_OP_ERR`.
pub const WC_REM_OP: u32 = ibv_wc_status_IBV_WC_REM_OP_ERR;
/// `IBV_WC_REM_INV_REQ_ERR`.
pub const WC_REM_INV_REQ: u32 = ibv_wc_status_IBV_WC_REM_INV_REQ_ERR;
/// `IBV_WC_SEND`.
pub const OP_SEND: u32 = ibv_wc_opcode_IBV_WC_SEND;
/// `IBV_WC_RDMA_WRITE`.
pub const OP_WRITE: u32 = ibv_wc_opcode_IBV_WC_RDMA_WRITE;
/// `IBV_WC_RDMA_READ`.
pub const OP_READ: u32 = ibv_wc_opcode_IBV_WC_RDMA_READ;
/// `IBV_WC_BIND_MW`.
pub const OP_BIND_MW: u32 = ibv_wc_opcode_IBV_WC_BIND_MW;
/// `IBV_WC_RECV`.
pub const OP_RECV: u32 = ibv_wc_opcode_IBV_WC_RECV;
/// `IBV_WC_WITH_INV`.
pub const WC_WITH_INV: u32 = ibv_wc_flags_IBV_WC_WITH_INV;
/// `IBV_WC_WITH_IMM`.
pub const WC_WITH_IMM: u32 = ibv_wc_flags_IBV_WC_WITH_IMM;
/// `IBV_WC_COMP_SWAP`.
pub const OP_COMP_SWAP: u32 = ibv_wc_opcode_IBV_WC_COMP_SWAP;
/// `IBV_WC_FETCH_ADD`.
pub const OP_FETCH_ADD: u32 = ibv_wc_opcode_IBV_WC_FETCH_ADD;
/// `IBV_WC_RECV_RDMA_WITH_IMM`.
pub const OP_RECV_IMM: u32 = ibv_wc_opcode_IBV_WC_RECV_RDMA_WITH_IMM;

/// The name of a completion status.
pub fn status_str(s: u32) -> String {
    // SAFETY: ibv_wc_status_str returns a static string for any value.
    unsafe { CStr::from_ptr(ibv_wc_status_str(s)) }
        .to_string_lossy()
        .into_owned()
}

impl Cq {
    /// The `struct ibv_cq` (for provider extensions), valid while `self` lives.
    pub fn as_raw(&self) -> *mut ibv_cq {
        self.cq
    }

    /// Creates a CQ of `depth` entries; with `events`, also a completion channel.
    pub fn new(id: &CmId, depth: i32, events: bool) -> Result<Self> {
        let ctx = id.ctx()?;
        let chan = if events {
            // SAFETY: live context.
            let ch = nonnull(
                unsafe { ibv_create_comp_channel(ctx) },
                "ibv_create_comp_channel",
            )?;
            Some(Rc::new(ChanInner {
                ch,
                _id: id.clone(),
            }))
        } else {
            None
        };
        let chp = chan.as_ref().map_or(std::ptr::null_mut(), |c| c.ch);
        // SAFETY: live context; the channel (if any) outlives the CQ through `chan`.
        let cq = nonnull(
            unsafe { ibv_create_cq(ctx, depth, std::ptr::null_mut(), chp, 0) },
            "ibv_create_cq",
        )?;
        Ok(Cq {
            cq,
            chan,
            _id: id.clone(),
        })
    }

    /// Polls up to 16 completions without blocking.
    pub fn poll(&self) -> Result<Vec<Wc>> {
        let mut wc = [ibv_wc::default(); 16];
        // SAFETY: live CQ; `wc` has room for 16 entries.
        let n = unsafe { rsiw_shim_poll_cq(self.cq, 16, wc.as_mut_ptr()) };
        let n =
            usize::try_from(n).map_err(|_| Error::other(format!("ibv_poll_cq returned {n}")))?;
        Ok(wc
            .iter()
            .take(n)
            .map(|w| Wc {
                wr_id: w.wr_id,
                status: w.status,
                opcode: w.opcode,
                byte_len: w.byte_len,
                flags: w.wc_flags,
                // SAFETY: both union members are plain u32.
                imm_or_inv: unsafe { w.__bindgen_anon_1.invalidated_rkey },
            })
            .collect())
    }

    /// Arms the CQ: the next (solicited, if `solicited_only`) completion raises an event.
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        // SAFETY: live CQ.
        check(
            unsafe { rsiw_shim_req_notify_cq(self.cq, i32::from(solicited_only)) },
            "ibv_req_notify_cq",
        )
    }

    /// Waits up to `timeout_ms` for a CQ event and acknowledges it; `false` on timeout.
    pub fn wait_event(&self, timeout_ms: i32) -> Result<bool> {
        let ch = self
            .chan
            .as_ref()
            .ok_or_else(|| Error::other("CQ has no completion channel"))?;
        // SAFETY: live channel.
        if !poll_in(unsafe { (*ch.ch).fd }, timeout_ms)? {
            return Ok(false);
        }
        let mut cq = std::ptr::null_mut();
        let mut ctx = std::ptr::null_mut();
        // SAFETY: the channel fd is readable, so this does not block; out-params are valid.
        check(
            unsafe { ibv_get_cq_event(ch.ch, &mut cq, &mut ctx) },
            "ibv_get_cq_event",
        )?;
        // SAFETY: `cq` is the CQ the event was for (ours: the channel serves only it).
        unsafe { ibv_ack_cq_events(cq, 1) };
        Ok(true)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: QPs using this CQ hold an Rc on it and are gone; events were acked.
        unsafe { ibv_destroy_cq(self.cq) };
    }
}

/// A shared receive queue.
pub struct Srq {
    pub(super) srq: *mut ibv_srq,
    _pd: Pd,
}

impl Srq {
    /// Creates an SRQ of `depth` WRs with up to 6 SGEs each.
    pub fn new(pd: &Pd, depth: u32) -> Result<Self> {
        let mut a = ibv_srq_init_attr::default();
        a.attr.max_wr = depth;
        a.attr.max_sge = 6;
        // SAFETY: live PD, valid attributes.
        let srq = nonnull(unsafe { ibv_create_srq(pd.0.pd, &mut a) }, "ibv_create_srq")?;
        Ok(Srq {
            srq,
            _pd: pd.clone(),
        })
    }

    /// Posts one receive WR.
    pub fn post_recv(&self, wr_id: u64, sges: &[Sge]) -> Result<()> {
        let mut list = sge_list(sges)?;
        let mut wr = recv_wr(wr_id, &mut list)?;
        let mut bad = std::ptr::null_mut();
        // SAFETY: `wr` and `list` live across the call; the MRs outlive the WR because
        // tests keep them until the WR completes or the SRQ is destroyed.
        check(
            unsafe { rsiw_shim_post_srq_recv(self.srq, &mut wr, &mut bad) },
            "ibv_post_srq_recv",
        )
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: QPs bound to the SRQ hold an Rc on it and are gone.
        unsafe { ibv_destroy_srq(self.srq) };
    }
}

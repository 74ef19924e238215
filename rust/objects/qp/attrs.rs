// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What a QP is created and modified with: its states and the transitions
//! between them, queue sizes, the `create_qp` request and the `modify_qp`
//! attribute set.

use super::PathMod;
use crate::{kapi::owner::Owner, kapi::qp::IbQpRef, objects::srq::Srq, queue::cq::Cq};
use kernel::{prelude::*, sync::Arc};

/// QP states; values are `enum ib_qp_state`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum QpState {
    /// Just created or reset.
    Reset = 0,
    /// Receives may be posted.
    Init = 1,
    /// Ready to receive (connection being set up).
    Rtr = 2,
    /// Connected: the engine runs.
    Rts = 3,
    /// Graceful close requested (iw_cm disconnect).
    Sqd = 4,
    /// Closing (send queue error).
    Sqe = 5,
    /// Error: every WQE is flushed.
    Error = 6,
}

impl QpState {
    /// From an `ib_qp_state` value.
    pub(crate) fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Error,
            _ => return None,
        })
    }
}

/// Requested/granted queue sizes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpCaps {
    /// Send WQEs.
    pub(crate) max_send_wr: u32,
    /// Receive WQEs (0 with an SRQ).
    pub(crate) max_recv_wr: u32,
    /// SGEs per send WQE.
    pub(crate) max_send_sge: u32,
    /// SGEs per receive WQE.
    pub(crate) max_recv_sge: u32,
    /// Inline bytes per send WQE.
    pub(crate) max_inline: u32,
}

/// What `create_qp` asks for (RC only).
pub(crate) struct QpInit {
    /// Its `ib_qp`.
    pub(crate) ib: IbQpRef,
    /// Protection domain number.
    pub(crate) pd: u32,
    /// Send and receive CQs.
    pub(crate) scq: Arc<Cq>,
    /// Receive CQ.
    pub(crate) rcq: Arc<Cq>,
    /// Shared receive queue.
    pub(crate) srq: Option<Arc<Srq>>,
    /// `IB_SIGNAL_ALL_WR`.
    pub(crate) sig_all: bool,
    /// Sizes.
    pub(crate) caps: QpCaps,
    /// The process that created it (user QPs), or the kernel.
    pub(crate) owner: Owner,
}

/// What `modify_qp` changes (absent fields are not in the attribute mask).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpModify {
    /// `IB_QP_STATE`.
    pub(crate) state: Option<QpState>,
    /// `IB_QP_CUR_STATE`: the state the consumer believes the QP is in.
    pub(crate) cur_state: Option<QpState>,
    /// `IB_QP_ACCESS_FLAGS`.
    pub(crate) access: Option<u32>,
    /// `IB_QP_MAX_QP_RD_ATOMIC` (ORD).
    pub(crate) ord: Option<u32>,
    /// `IB_QP_MAX_DEST_RD_ATOMIC` (IRD).
    pub(crate) ird: Option<u32>,
    /// The IB path attributes (AV, destination QP, PSNs, …).
    pub(crate) path: PathMod,
}

/// The verbs state machine (IB spec 11.2.4 as iWARP verbs use it).
pub(super) fn check_transition(from: QpState, to: QpState, connected: bool) -> Result {
    use QpState::*;
    let ok = match (from, to) {
        (_, Error) | (_, Reset) => true,
        (Reset, Init) | (Init, Init) | (Init, Rtr) | (Rtr, Rtr) => true,
        // RTS needs a connection: iWARP has no connectionless start.
        (Init, Rts) | (Rtr, Rts) => connected,
        (Rts, Rts) | (Rts, Sqd) | (Sqd, Sqd) | (Sqd, Rts) => true,
        (Sqe, Rts) => connected,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

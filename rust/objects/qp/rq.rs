// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A QP's receive side: posting receives, the buffer RX takes for an
//! arriving Send or Immediate Data (RFC 5040 §5.3: untagged buffers are used
//! in posting order; the QP's RQ or its SRQ) and its completion.

use super::{Qp, QpEvent, QpState};
use crate::{
    objects::srq::RecvQueue,
    queue::cq::{Cqe, WcFlags, WcOpcode, WcStatus},
    queue::uqueue::BadWqe,
    queue::wr::RecvWqe,
};
use kernel::prelude::*;

impl Qp {
    /// Discards the QP's posted receives (to RESET: no completions).
    pub(super) fn rq_reset(&self) {
        let mut rq = self.rq.lock();
        if let RecvQueue::Kernel(_) = &*rq {
            while let Ok(Some(_)) = rq.pop() {}
        }
    }

    /// `post_recv` of one parsed WQE (any context, never sleeps).
    pub(crate) fn post_recv(&self, wqe: RecvWqe) -> Result {
        if self.srq.is_some() {
            return Err(EINVAL);
        }
        if u32::from(wqe.num_sge) > self.caps.max_recv_sge {
            return Err(EINVAL);
        }
        match self.state() {
            QpState::Reset => Err(EINVAL),
            QpState::Error => {
                self.rq_complete(wqe.wr_id, WcStatus::WrFlushErr, 0, WcFlags::NONE, 0, false);
                Ok(())
            }
            _ => self.rq.lock().push(wqe),
        }
    }

    /// The next receive buffer: the QP's RQ, or its SRQ. An invalid user
    /// RQE comes back as `Err`: a WQE standing for it and the status to
    /// complete it with, which the caller does once it holds no lock (RX
    /// calls this under its own).
    pub(crate) fn rq_take(&self) -> Result<Option<RecvWqe>, (RecvWqe, WcStatus)> {
        let taken = match &self.srq {
            Some(srq) => srq.take(),
            None => self.rq.lock().pop(),
        };
        taken.map_err(|bad| (bad_recv(&bad), bad.status))
    }

    /// Completes a receive WQE taken with [`Self::rq_take`].
    pub(crate) fn rq_complete(
        &self,
        wr_id: u64,
        status: WcStatus,
        byte_len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    ) {
        // RFC 7306 §4: Immediate Data only follows an RDMA Write (verbs have
        // no Send with Immediate on iWARP).
        let opcode = if flags.0 & WcFlags::WITH_IMM.0 != 0 {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        };
        let cqe = Cqe {
            wr_id,
            opcode,
            status,
            byte_len,
            qp_num: self.num(),
            qp: Some(self.ib),
            flags,
            ex,
            solicited,
        };
        if self.rcq.push(cqe).is_err() {
            self.ib.event(QpEvent::Fatal);
        }
    }
}

/// A receive WQE standing for a refused user RQE, to complete it.
pub(super) fn bad_recv(bad: &BadWqe) -> RecvWqe {
    RecvWqe {
        wr_id: bad.wr_id,
        ..RecvWqe::default()
    }
}

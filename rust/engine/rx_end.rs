// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! How RX ends a stream: after an error the parser found (our Terminate,
//! RFC 5040 §7, RFC 5041 §7, RFC 7306 §8) and after the peer's Terminate
//! (RFC 5040 §5.3, §4.8).

use super::{causes, rx::Recv, Engine, Phase};
use crate::{
    kapi::qp::QpEvent,
    proto::{rx::RxError, terminate::TermCause},
    queue::cq::{WcFlags, WcStatus},
};
use kernel::{prelude::*, sync::Arc};

impl Engine {
    /// A stream error found by RX: complete the receive in progress, send
    /// the Terminate (none when the peer's own Terminate was in error: RFC
    /// 5040 §7.2, it only ends the stream), QP to ERROR.
    pub(super) fn rx_failed(self: &Arc<Self>, e: RxError, recv: Option<Recv>) {
        let t = e.terminate;
        self.ctr.rx_error(t.cause);
        // The Terminate is queued before the ULP hears of the error: one that
        // destroys its QP on the receive's error completion closes abortively,
        // and that close keeps a Terminate already due but takes no new one.
        self.request_close(false, e.reply.then_some(t));
        if let Some(r) = recv {
            let status = if t.cause == TermCause::DDP_MESSAGE_TOO_LONG {
                WcStatus::LocLenErr
            } else {
                WcStatus::LocProtErr
            };
            self.qp
                .rq_complete(r.wr_id, status, 0, WcFlags::NONE, 0, false);
        }
        if e.reply {
            pr_info!("qp {}: sending Terminate {:?}\n", self.qp.num(), t.cause);
            self.fail(Some(t));
        } else {
            pr_info!(
                "qp {}: peer sent a Terminate in error ({:?}): closing without a Terminate\n",
                self.qp.num(),
                t.cause
            );
            self.fail(None);
        }
    }

    /// The peer sent a Terminate (RFC 5040 §5.3): the oldest unfinished
    /// send WQE gets its error, everything else is flushed.
    pub(super) fn peer_terminate(self: &Arc<Self>, cause: TermCause) {
        pr_info!("qp {}: peer sent Terminate {:?}\n", self.qp.num(), cause);
        self.ctr.terminate(cause, false);
        self.qp.sq_fail_oldest(causes::peer_status(cause));
        {
            let mut s = self.shared.lock();
            if matches!(s.phase, Phase::Running) {
                s.phase = Phase::Closing {
                    abortive: false,
                    terminate: None,
                };
            }
        }
        let ev = match causes::peer_status(cause) {
            WcStatus::RemAccessErr => QpEvent::AccessErr,
            WcStatus::RemInvReqErr => QpEvent::ReqErr,
            _ => QpEvent::Fatal,
        };
        self.qp.event(ev);
        self.qp.set_error();
        self.kick();
    }
}

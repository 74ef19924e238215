// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The QP as the engine sees it (`engine::QpPort`).

use super::{Qp, QpEvent};
use crate::{
    engine::Untaken,
    queue::cq::{WcFlags, WcStatus},
    queue::wr::{RecvWqe, SendWqe},
    resources::mem::Access,
};
use kernel::sync::Arc;

impl crate::engine::QpPort for Qp {
    fn num(&self) -> u32 {
        Qp::num(self)
    }

    fn pd(&self) -> u32 {
        Qp::pd(self)
    }

    fn sig_all(&self) -> bool {
        self.sig_all
    }

    fn sq_peek(&self) -> Option<SendWqe> {
        Qp::sq_peek(self)
    }

    fn sq_posted(&self) -> bool {
        Qp::sq_posted(self)
    }

    fn sq_unpark(&self) {
        Qp::sq_unpark(self)
    }

    fn sq_take(&self, w: &SendWqe) -> Result<(u64, bool), Untaken> {
        Qp::sq_take(self, w)
    }

    fn sq_grow(&self) -> kernel::error::Result {
        Qp::sq_grow(self)
    }

    fn sq_finish(&self, seq: u64, status: WcStatus, byte_len: Option<u32>) {
        Qp::sq_finish(self, seq, status, byte_len)
    }

    fn sq_hold(&self, seq: u64, held: bool) {
        Qp::sq_hold(self, seq, held)
    }

    fn sq_fail_oldest(&self, status: WcStatus) {
        Qp::sq_fail_oldest(self, status)
    }

    fn sq_reap(&self) -> bool {
        Qp::sq_reap(self)
    }

    fn rq_take(&self) -> Result<Option<RecvWqe>, (RecvWqe, WcStatus)> {
        Qp::rq_take(self)
    }

    fn rq_complete(
        &self,
        wr_id: u64,
        status: WcStatus,
        byte_len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    ) {
        Qp::rq_complete(self, wr_id, status, byte_len, flags, ex, solicited)
    }

    fn set_error(&self) {
        Qp::stream_failed(self)
    }

    fn peer_closed(self: Arc<Self>, abortive: bool) {
        Qp::peer_closed(&self, abortive)
    }

    fn event(&self, ev: QpEvent) {
        Qp::event(self, ev)
    }

    fn remote_allowed(&self, need: Access, via_iwcm: bool) -> bool {
        Qp::remote_allowed(self, need, via_iwcm)
    }
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The CQ verbs: create (a kernel ring, or the provider's mapped one), poll
//! into kernel work completions, arm, destroy.

use crate::{
    kapi::{
        bindings as b,
        cq::{fill_wc, IbCqRef, WcFields},
        obj::eopnotsupp,
        udata::Udata,
    },
    objects::device::Device,
    queue::cq::{Cq, Cqe},
    queue::uqueue::{self, UserCq},
};
use kernel::{prelude::*, sync::Arc};

/// `create_cq`: a CQ of at least `attr.cqe` entries; returns it and its size.
pub(crate) fn create(
    dev: &Device,
    ib: IbCqRef,
    attr: &b::ib_cq_init_attr,
    mut udata: Option<Udata<'_>>,
) -> Result<(Arc<Cq>, u32)> {
    if attr.flags != 0 {
        return Err(eopnotsupp());
    }
    if !dev.get_cq() {
        return Err(ENOMEM);
    }
    // User CQs keep their ring in memory mapped to the provider.
    let user = udata.as_ref().map(|u| |max| UserCq::new(u, attr.cqe, max));
    let made = Cq::new(ib, attr.cqe, user).and_then(|(c, size)| {
        if let Some(u) = udata.as_mut() {
            let resp = c.with_user(|r| uqueue::cq_resp(r, 0)).ok_or(EINVAL)?;
            u.respond(&resp)?;
        }
        Ok((c, size))
    });
    made.inspect_err(|_| dev.put_cq())
}

/// `destroy_cq`: no QP uses `cq` any more.
pub(crate) fn destroy(dev: &Device, cq: Arc<Cq>) {
    drop(cq);
    dev.put_cq();
}

/// `poll_cq`: up to `wcs.len()` completions; returns how many.
pub(crate) fn poll(cq: &Cq, wcs: &mut [b::ib_wc]) -> usize {
    cq.poll(wcs.len(), |i, cqe| {
        if let Some(w) = wcs.get_mut(i) {
            fill_wc(w, &fields(cqe));
        }
    })
}

/// The kernel work completion of `c`.
fn fields(c: &Cqe) -> WcFields {
    WcFields {
        wr_id: c.wr_id,
        status: c.status as u32,
        opcode: c.opcode as u32,
        byte_len: c.byte_len,
        qp: c.qp,
        qp_num: c.qp_num,
        flags: c.flags.0,
        ex: c.ex,
    }
}

/// `req_notify_cq`: returns 1 if `IB_CQ_REPORT_MISSED_EVENTS` asked and
/// completions are queued already.
pub(crate) fn req_notify(cq: &Cq, flags: b::ib_cq_notify_flags) -> i32 {
    let solicited =
        flags & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK == b::ib_cq_notify_flags_IB_CQ_SOLICITED;
    let report = flags & b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
    i32::from(cq.req_notify(solicited, report).0)
}

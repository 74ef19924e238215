// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The SRQ verbs: create (a kernel ring, or the provider's), modify (the
//! limit), query, post receives, destroy.

use super::qp::recv_wqe;
use crate::{
    kapi::{bindings as b, obj::eopnotsupp, qp::RecvWr, srq::IbSrqRef, udata::Udata},
    objects::device::Device,
    objects::srq::{Srq, SrqAttr},
    queue::uqueue::{self, UserRq},
};
use kernel::{prelude::*, sync::Arc};

/// `create_srq` in PD `pdn`; writes the granted sizes back into `init`.
pub(crate) fn create(
    dev: &Device,
    ib: IbSrqRef,
    pdn: u32,
    init: &mut b::ib_srq_init_attr,
    mut udata: Option<Udata<'_>>,
) -> Result<Arc<Srq>> {
    if init.srq_type != b::ib_srq_type_IB_SRQT_BASIC {
        return Err(eopnotsupp());
    }
    let a = SrqAttr {
        max_wr: init.attr.max_wr,
        max_sge: init.attr.max_sge,
        limit: init.attr.srq_limit,
    };
    let user = udata
        .as_ref()
        .map(|u| |max| UserRq::new(u, a.max_wr, max, a.max_sge.max(1)));
    if !dev.get_srq() {
        return Err(ENOMEM);
    }
    let made = Srq::new(ib, pdn, a, user).and_then(|(s, g)| {
        if let Some(u) = udata.as_mut() {
            let resp = s.with_user(uqueue::srq_resp).ok_or(EINVAL)?;
            u.respond(&resp)?;
        }
        Ok((s, g))
    });
    let (s, granted) = made.inspect_err(|_| dev.put_srq())?;
    init.attr.max_wr = granted.max_wr;
    init.attr.max_sge = granted.max_sge;
    Ok(s)
}

/// `modify_srq`: the limit (`IB_SRQ_LIMIT`); resizing is refused.
pub(crate) fn modify(srq: &Srq, attr: &b::ib_srq_attr, mask: b::ib_srq_attr_mask) -> Result {
    let max_wr = (mask & b::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0).then_some(attr.max_wr);
    let limit = (mask & b::ib_srq_attr_mask_IB_SRQ_LIMIT != 0).then_some(attr.srq_limit);
    srq.modify(max_wr, limit)
}

/// `query_srq`.
pub(crate) fn query(srq: &Srq, attr: &mut b::ib_srq_attr) {
    let q = srq.query();
    attr.max_wr = q.max_wr;
    attr.max_sge = q.max_sge;
    attr.srq_limit = q.limit;
}

/// `post_srq_recv` of one work request (any context, never sleeps).
pub(crate) fn post_recv(srq: &Srq, wr: &RecvWr<'_>) -> Result {
    srq.post(recv_wqe(wr)?)
}

/// `destroy_srq`: no QP uses `srq` any more.
pub(crate) fn destroy(dev: &Device, srq: Arc<Srq>) {
    drop(srq);
    dev.put_srq();
}

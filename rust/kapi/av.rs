// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The address vector of `modify_qp`/`query_qp` (`IB_QP_AV`): the GRH a consumer
//! sets on an RC QP (IBA 11.2.4.2), read and written through the shim, which
//! alone knows the `rdma_ah_attr` unions and the GID cache entry behind
//! `sgid_index`.

use super::{bindings as b, qp::IbQpRef};

/// An address vector as plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Av {
    /// A GRH is present (`IB_AH_GRH`).
    pub(crate) global: bool,
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// The source GID the core found at `sgid_index` (`modify_qp` only).
    pub(crate) sgid: Option<[u8; 16]>,
    /// The netdev of that GID entry (0 if unknown).
    pub(crate) sgid_ifindex: u32,
    /// GRH fields, kept for `query_qp`.
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) sl: u8,
    pub(crate) static_rate: u8,
    pub(crate) port_num: u8,
}

/// The AV of `attr` (valid when the mask has `IB_QP_AV`).
pub(crate) fn get(attr: &b::ib_qp_attr) -> Av {
    let mut r = b::rsiw_av::default();
    // SAFETY: `attr` is a valid `ib_qp_attr`; `r` is writable; the shim reads
    // the GID cache entry the core holds for the duration of `modify_qp`.
    unsafe { b::rsiw_shim_qp_av_get(attr, &mut r) };
    Av {
        global: r.global,
        dgid: r.dgid,
        sgid: r.has_sgid.then_some(r.sgid),
        sgid_ifindex: r.sgid_ifindex,
        flow_label: r.flow_label,
        sgid_index: r.sgid_index,
        hop_limit: r.hop_limit,
        traffic_class: r.traffic_class,
        sl: r.sl,
        static_rate: r.static_rate,
        port_num: r.port_num,
    }
}

/// Writes `av` into `attr.ah_attr` for `query_qp` (no GID cache reference).
pub(crate) fn set(qp: &IbQpRef, attr: &mut b::ib_qp_attr, av: &Av) {
    let r = b::rsiw_av {
        global: av.global,
        dgid: av.dgid,
        sgid: av.sgid.unwrap_or_default(),
        has_sgid: av.sgid.is_some(),
        flow_label: av.flow_label,
        sgid_index: av.sgid_index,
        hop_limit: av.hop_limit,
        traffic_class: av.traffic_class,
        sl: av.sl,
        static_rate: av.static_rate,
        port_num: av.port_num,
        sgid_ifindex: av.sgid_ifindex,
    };
    // SAFETY: `qp` is live (its type invariant); `attr` is writable.
    unsafe { b::rsiw_shim_qp_av_set(qp.as_ptr(), attr, &r) };
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The operator's view: the port's counters for ib_core's hw_stats
//! (`rdma statistic show link DEV/1`) and a QP's connection in its restrack
//! entry (`rdma resource show qp -dd`).

use crate::{
    kapi::{hwstats::HwStats, nlres::DriverTable},
    objects::device::Device,
    proto::mpa::Rtr,
    resources::counters::{self, NAMES},
};
use kernel::{c_str, prelude::*, str::CStr};

/// `get_hw_stats`: the port's counters into `hw`; returns how many.
pub(crate) fn port_stats(dev: &Device, port: u32, hw: &mut HwStats<'_>) -> Result<usize> {
    super::check_port(port)?;
    let v = dev.counters().values();
    for (i, x) in v.iter().enumerate() {
        hw.set(i, *x);
    }
    Ok(v.len().min(hw.len()))
}

fn yes_no(b: bool) -> &'static CStr {
    if b {
        c_str!("yes")
    } else {
        c_str!("no")
    }
}

/// `fill_res_qp_entry`: QP `qpn`'s depths and, while it has a connection,
/// what the MPA exchange negotiated (RFC 5044 §7.1, RFC 6581), what is in
/// flight and the connection's own counters. A QP already gone from the
/// table (being destroyed) shows nothing.
pub(crate) fn qp_details(dev: &Device, qpn: u32, t: &mut DriverTable<'_>) -> Result {
    let Some(qp) = dev.qp_lookup(qpn) else {
        return Ok(());
    };
    let (_, ord, ird, _) = qp.query();
    t.put_u32(c_str!("ord"), ord)?;
    t.put_u32(c_str!("ird"), ird)?;
    // The SQ: what a stalled sender looks at first (posted, taken by TX,
    // completed and handed back, whether a post would ring the doorbell).
    let sq = qp.sq_snapshot();
    t.put_u32(c_str!("sq_inflight"), sq.taken)?;
    if let Some(u) = sq.user {
        t.put_u32(c_str!("sq_produced"), u.produced)?;
        t.put_u32(c_str!("sq_fetched"), u.fetched)?;
        t.put_u32(c_str!("sq_released"), u.released)?;
        t.put_str(c_str!("sq_idle"), yes_no(u.idle))?;
    }
    let Some(conn) = qp.conn() else {
        return t.put_str(c_str!("conn"), c_str!("none"));
    };
    let d = conn.details();
    let p = &d.params;
    t.put_str(
        c_str!("conn"),
        if d.closing {
            c_str!("closing")
        } else {
            c_str!("up")
        },
    )?;
    t.put_str(
        c_str!("role"),
        if p.initiator {
            c_str!("initiator")
        } else {
            c_str!("responder")
        },
    )?;
    t.put_str(c_str!("mpa_crc"), yes_no(p.crc))?;
    t.put_str(c_str!("markers_tx"), yes_no(p.markers_tx))?;
    t.put_str(c_str!("markers_rx"), yes_no(p.markers_rx))?;
    t.put_str(
        c_str!("rtr"),
        match p.rtr {
            None => c_str!("none"),
            Some(Rtr::Send) => c_str!("send"),
            Some(Rtr::Write) => c_str!("write"),
            Some(Rtr::Read) => c_str!("read"),
        },
    )?;
    t.put_u32(c_str!("mss"), p.mss)?;
    t.put_u64(c_str!("orq_outstanding"), d.orq as u64)?;
    t.put_u32(c_str!("irq_outstanding"), d.inbound)?;
    for (i, (name, v)) in NAMES.iter().zip(d.counters.iter()).enumerate() {
        if !counters::port_only(i) {
            t.put_u64(name, *v)?;
        }
    }
    Ok(())
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Host tests of posting into the SQ/RQ rings, with a second mapping of each
//! ring standing in for the kernel.

use super::*;
use crate::ring::shared_pair;
use core::ptr::null_mut;
use rsiw_abi::wqe::{SqOpcode, RQE_SIZE, SQE_SIGNALED, SQE_SIZE};

const EINVAL: c_int = sys::EINVAL as c_int;
const ENOMEM: c_int = sys::ENOMEM as c_int;

/// A QP with a 4-entry SQ and RQ; returns it and the kernel's views.
fn qp_with_rings() -> (Box<Qp>, Ring, Ring) {
    let mut qp = Qp::new_boxed(0);
    let (sq, ksq) = shared_pair(4, SQE_SIZE);
    let (rq, krq) = shared_pair(4, RQE_SIZE);
    qp.sq = Some(sq);
    qp.rq = Some(rq);
    qp.send_lim = Limits {
        max_sge: 2,
        max_inline: 32,
    };
    qp.max_recv_sge = 1;
    (qp, ksq, krq)
}

fn ibv(qp: &mut Qp) -> *mut sys::ibv_qp {
    // SAFETY: the union's qp view.
    unsafe { &mut qp.vqp.__bindgen_anon_1.qp }
}

fn sends(sg: &mut sys::ibv_sge, n: usize) -> Vec<sys::ibv_send_wr> {
    let mut v: Vec<sys::ibv_send_wr> = (0..n)
        .map(|i| sys::ibv_send_wr {
            wr_id: 100 + i as u64,
            sg_list: sg,
            num_sge: 1,
            opcode: sys::ibv_wr_opcode_IBV_WR_SEND,
            send_flags: sys::ibv_send_flags_IBV_SEND_SIGNALED,
            ..Default::default()
        })
        .collect();
    for i in 1..n {
        let next: *mut sys::ibv_send_wr = &mut v[i];
        v[i - 1].next = next;
    }
    v
}

#[test]
fn post_send_fills_sq_and_publishes_producer() {
    let (mut qp, ksq, _) = qp_with_rings();
    let mut sg = sys::ibv_sge {
        addr: 0x1000,
        length: 64,
        lkey: 5,
    };
    let mut wrs = sends(&mut sg, 3);
    let mut bad = null_mut();
    // SAFETY: a QP of the test's own making; valid WR list.
    let rc = unsafe { post_send(ibv(&mut qp), &mut wrs[0], &mut bad) };
    assert_eq!(rc, 0);
    assert!(bad.is_null());
    // The kernel sees three SQEs behind the producer index.
    assert_eq!(ksq.producer().load(Ordering::Acquire), 3);
    for i in 0..3 {
        let s: rsiw_abi::wqe::Sqe = ksq.get(i);
        assert_eq!(s.wr_id, 100 + u64::from(i));
        assert_eq!(s.opcode, SqOpcode::Send as u8);
        assert_eq!(s.flags, SQE_SIGNALED);
        assert_eq!(s.num_sge, 1);
        assert_eq!(
            s.sge(0).map(|g| (g.addr, g.length, g.lkey)),
            Some((0x1000, 64, 5))
        );
    }
}

#[test]
fn full_sq_reports_enomem_and_bad_wr() {
    let (mut qp, ksq, _) = qp_with_rings();
    let mut sg = sys::ibv_sge {
        addr: 0,
        length: 1,
        lkey: 1,
    };
    let mut wrs = sends(&mut sg, 6);
    let mut bad = null_mut();
    // SAFETY: as above.
    let rc = unsafe { post_send(ibv(&mut qp), &mut wrs[0], &mut bad) };
    assert_eq!(rc, ENOMEM);
    assert_eq!(bad, &mut wrs[4] as *mut _);
    // The four that fit are published; nothing after the bad WR is.
    assert_eq!(ksq.producer().load(Ordering::Acquire), 4);
    // The kernel frees two slots: two more fit.
    ksq.consumer().store(2, Ordering::Release);
    // SAFETY: as above.
    let rc = unsafe { post_send(ibv(&mut qp), &mut wrs[4], &mut bad) };
    assert_eq!(rc, 0);
    assert_eq!(ksq.producer().load(Ordering::Acquire), 6);
    let s: rsiw_abi::wqe::Sqe = ksq.get(5);
    assert_eq!(s.wr_id, 105);
}

#[test]
fn invalid_wr_stops_the_list() {
    let (mut qp, ksq, _) = qp_with_rings();
    let mut sg = sys::ibv_sge {
        addr: 0,
        length: 1,
        lkey: 1,
    };
    let mut wrs = sends(&mut sg, 3);
    wrs[1].num_sge = 3; // above max_send_sge 2
    let mut bad = null_mut();
    // SAFETY: as above (num_sge 3 is rejected before the list is read).
    let rc = unsafe { post_send(ibv(&mut qp), &mut wrs[0], &mut bad) };
    assert_eq!(rc, EINVAL);
    assert_eq!(bad, &mut wrs[1] as *mut _);
    assert_eq!(ksq.producer().load(Ordering::Acquire), 1);
}

#[test]
fn post_recv_fills_rq() {
    let (mut qp, _, krq) = qp_with_rings();
    let mut sg = sys::ibv_sge {
        addr: 0x2000,
        length: 128,
        lkey: 9,
    };
    let mut wr = sys::ibv_recv_wr {
        wr_id: 7,
        next: null_mut(),
        sg_list: &mut sg,
        num_sge: 1,
    };
    let mut bad = null_mut();
    // SAFETY: as above.
    assert_eq!(unsafe { post_recv(ibv(&mut qp), &mut wr, &mut bad) }, 0);
    assert_eq!(krq.producer().load(Ordering::Acquire), 1);
    let r: Rqe = krq.get(0);
    assert_eq!((r.wr_id, r.num_sge), (7, 1));
    assert_eq!(
        r.sge(0).map(|g| (g.addr, g.length, g.lkey)),
        Some((0x2000, 128, 9))
    );
    // Two SGEs exceed max_recv_sge 1.
    wr.num_sge = 2;
    // SAFETY: rejected before the list is read.
    assert_eq!(
        unsafe { post_recv(ibv(&mut qp), &mut wr, &mut bad) },
        EINVAL
    );
    assert_eq!(krq.producer().load(Ordering::Acquire), 1);
}

#[test]
fn busy_kernel_needs_no_doorbell() {
    // SQ_IDLE clear: publishing must not touch the (absent) context.
    let (qp, ksq, _) = qp_with_rings();
    let ring = qp.sq.as_ref().unwrap();
    assert_eq!(qp.publish_sq(ring, 1), 0);
    assert_eq!(ksq.producer().load(Ordering::Acquire), 1);
}

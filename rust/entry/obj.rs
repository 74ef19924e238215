// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Entry points from C into Rust for the verbs objects: the CQ, MR, MW, QP
//! and SRQ `ib_device_ops` callbacks. Each turns raw pointers into the safe
//! types and calls the verb in `crate::verbs`.

use super::dev::{device, ret};
use crate::{
    kapi::{
        bindings as b,
        cq::{cq_obj, cq_slot, IbCqRef},
        mr, obj,
        qp::{post_chain, qp_obj, qp_slot, IbQpRef, RecvWr, SendWr},
        srq::{srq_obj, srq_slot, IbSrqRef},
        udata::Udata,
        umem::UserPages,
    },
    objects::device::Device,
    objects::qp::Qp,
    objects::srq::Srq,
    queue::cq::Cq,
    resources::mem::Mem,
    verbs,
};
use core::ptr::NonNull;
use kernel::{ffi::c_int, prelude::*, sync::ArcBorrow};

/// The device and PD number of a verb on `pd`.
///
/// # Safety
///
/// `pd` must be a live rsiw PD inside a device op.
unsafe fn pd_dev<'a>(pd: *mut b::ib_pd) -> Result<(ArcBorrow<'a, Device>, u32)> {
    // SAFETY: a live PD's device is an rsiw device inside an op.
    let (_, dev) = unsafe { device((*pd).device) }?;
    // SAFETY: the core allocated an `rsiw_pd` (INIT_RDMA_OBJ_SIZE).
    let pdn = unsafe { (*pd.cast::<b::rsiw_pd>()).pdn };
    Ok((dev, pdn))
}

/// `ERR_PTR(e)` for the MR verbs.
fn mr_ret(r: Result<*mut b::ib_mr>) -> *mut b::ib_mr {
    r.unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.create_cq` (through the shim, which extracts `udata`).
///
/// # Safety
///
/// Core device op: `cq` is a zeroed `rsiw_cq` with `device` set; `attr` valid.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_create_cq(
    cq: *mut b::ib_cq,
    attr: *const b::ib_cq_init_attr,
    udata: *mut b::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: live CQ of an rsiw device; `attr` and `udata` valid for the
        // call; the ib_cq lives until destroy_cq, after its last QP.
        let (dev, attr, udata, ib) = unsafe {
            let ib = IbCqRef::new(NonNull::new(cq).ok_or(EINVAL)?);
            (device((*cq).device)?.1, &*attr, Udata::from_raw(udata), ib)
        };
        let (c, size) = verbs::cq::create(&dev, ib, attr, udata)?;
        // SAFETY: in create_cq; the slot is empty.
        unsafe {
            (*cq).cqe = size as c_int;
            obj::store(cq_slot(cq), c);
        }
        Ok(())
    })())
}

/// `ib_device_ops.destroy_cq`.
///
/// # Safety
///
/// Core device op on a CQ `create_cq` accepted; no QP uses it.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_destroy_cq(cq: *mut b::ib_cq, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: live CQ of an rsiw device; destroy_cq: no other op on
        // this CQ runs or follows.
        let (dev, c) = unsafe { (device((*cq).device)?.1, obj::take::<Cq>(cq_slot(cq))) };
        if let Some(c) = c {
            verbs::cq::destroy(&dev, c);
        }
        Ok(())
    })())
}

/// `ib_device_ops.poll_cq` (any context).
///
/// # Safety
///
/// Core device op: `wc` has room for `num` entries.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_poll_cq(cq: *mut b::ib_cq, num: c_int, wc: *mut b::ib_wc) -> c_int {
    // SAFETY: live rsiw CQ during the op.
    let (Some(c), Ok(n)) = (unsafe { cq_obj::<Cq>(cq) }, usize::try_from(num)) else {
        return EINVAL.to_errno();
    };
    if n == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the consumer passed `num` writable entries.
    let wcs = unsafe { core::slice::from_raw_parts_mut(wc, n) };
    verbs::cq::poll(&c, wcs) as c_int
}

/// `ib_device_ops.req_notify_cq` (any context).
///
/// # Safety
///
/// Core device op on a live CQ.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_req_notify_cq(
    cq: *mut b::ib_cq,
    flags: b::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: live rsiw CQ during the op.
    match unsafe { cq_obj::<Cq>(cq) } {
        Some(c) => verbs::cq::req_notify(&c, flags),
        None => EINVAL.to_errno(),
    }
}

/// `ib_device_ops.get_dma_mr`.
///
/// # Safety
///
/// Core device op on a live PD.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_get_dma_mr(pd: *mut b::ib_pd, access: c_int) -> *mut b::ib_mr {
    // SAFETY: live rsiw PD in an op.
    mr_ret(unsafe { pd_dev(pd) }.and_then(|(dev, pdn)| verbs::mr::get_dma(&dev, pdn, access)))
}

/// `ib_device_ops.reg_user_mr`: pins the pages (process context).
///
/// # Safety
///
/// Core device op on a live PD, from a user context.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_reg_user_mr(
    pd: *mut b::ib_pd,
    start: u64,
    len: u64,
    iova: u64,
    access: c_int,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    mr_ret((|| {
        // SAFETY: live rsiw PD in an op.
        let (dev, pdn) = unsafe { pd_dev(pd) }?;
        let access = verbs::mr::user_access(iova, len, access)?;
        // SAFETY: live PD; its device is the verb's device.
        let pages = UserPages::get(unsafe { (*pd).device }, start, len, access.0)?;
        verbs::mr::reg_user(&dev, pdn, pages, (iova, len), access)
    })())
}

/// `ib_device_ops.alloc_mr`: a fast-registration region (FRWR).
///
/// # Safety
///
/// Core device op on a live PD.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_mr(
    pd: *mut b::ib_pd,
    kind: b::ib_mr_type,
    max_num_sg: u32,
) -> *mut b::ib_mr {
    // SAFETY: live rsiw PD in an op.
    let r = unsafe { pd_dev(pd) };
    mr_ret(r.and_then(|(dev, pdn)| verbs::mr::alloc(&dev, pdn, kind, max_num_sg)))
}

/// `ib_device_ops.dereg_mr`.
///
/// # Safety
///
/// Core device op on an MR this driver allocated.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dereg_mr(m: *mut b::ib_mr, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: live MR of an rsiw device, from `mr_new` (a `Mem`).
        let (dev, mem) = unsafe { (device((*m).device)?.1, mr::mr_obj::<Mem>(m)) };
        if let Some(mem) = mem {
            verbs::mr::may_dereg(&mem)?;
        }
        // SAFETY: as above; the core never uses it after this op.
        verbs::mr::dereg(&dev, unsafe { mr::mr_free::<Mem>(m) });
        Ok(())
    })())
}

/// `ib_device_ops.alloc_mw`: a type-2 memory window.
///
/// # Safety
///
/// Core device op: `mw` is a zeroed `rsiw_mw` with `device`, `pd` and
/// `type` set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_mw(mw: *mut b::ib_mw, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: `mw` is live and its PD set by the core.
        let ((dev, pdn), kind) = unsafe { (pd_dev((*mw).pd)?, (*mw).type_) };
        let (mem, rkey) = verbs::mr::alloc_mw(&dev, pdn, kind)?;
        let c = mw.cast::<b::rsiw_mw>();
        // SAFETY: the core allocated an `rsiw_mw` (INIT_RDMA_OBJ_SIZE) that
        // nobody else uses during the op; `priv` is empty.
        unsafe {
            (*c).base.rkey = rkey;
            obj::store(&mut (*c).priv_, mem);
        }
        Ok(())
    })())
}

/// `ib_device_ops.dealloc_mw`: removes the STag; a bound window lets go
/// of its region.
///
/// # Safety
///
/// Core device op on a window `rsiw_rust_alloc_mw` set up.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dealloc_mw(mw: *mut b::ib_mw) -> c_int {
    ret((|| {
        // SAFETY: live MW of an rsiw device; its slot holds a `Mem` that
        // nothing borrows (the core frees it after this op).
        let (dev, mem) = unsafe {
            let slot = &mut (*mw.cast::<b::rsiw_mw>()).priv_;
            (device((*mw).device)?.1, obj::take::<Mem>(slot))
        };
        verbs::mr::dereg(&dev, mem);
        Ok(())
    })())
}

/// Start of `map_mr_sg` (the shim then runs `ib_sg_to_pages`).
///
/// # Safety
///
/// Core device op on an MR this driver allocated.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_map_mr_begin(m: *mut b::ib_mr) -> c_int {
    // SAFETY: live rsiw MR (a `Mem`); `ib_map_mr_sg` set `page_size` first.
    let (mem, page_size) = unsafe { (mr::mr_obj::<Mem>(m), (*m).page_size) };
    ret(mem.map_or(Err(EINVAL), |m| verbs::mr::map_begin(&m, page_size)))
}

/// `ib_sg_to_pages`' per-page callback: `addr` is a kernel virtual address.
///
/// # Safety
///
/// Called by `ib_sg_to_pages` inside `map_mr_sg` on an rsiw MR.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_mr_set_page(m: *mut b::ib_mr, addr: u64) -> c_int {
    // SAFETY: live rsiw MR (a `Mem`) in the op.
    let mem = unsafe { mr::mr_obj::<Mem>(m) };
    ret(mem.map_or(Err(EINVAL), |m| m.map_page(addr)))
}

/// End of a successful `map_mr_sg`: `ib_sg_to_pages` set `iova`/`length`.
///
/// # Safety
///
/// Core device op on an MR this driver allocated.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_map_mr_end(m: *mut b::ib_mr) {
    // SAFETY: live rsiw MR (a `Mem`) in the op.
    if let Some(mem) = unsafe { mr::mr_obj::<Mem>(m) } {
        // SAFETY: as above.
        mem.map_end(unsafe { mr::mr_range(m) }.0);
    }
}

/// The arguments of `create_qp` as the verb takes them.
///
/// # Safety
///
/// As for [`rsiw_rust_create_qp`]; the result borrows `init` and `udata`.
unsafe fn create_qp_args<'a>(
    qp: *mut b::ib_qp,
    init: &b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> Result<verbs::qp::CreateArgs<'a>> {
    // Live QP with its PD set; the CQs/SRQ the consumer passed are live rsiw
    // objects (the core holds references on them for the QP's life); the
    // ib_qp lives until destroy_qp, which stops the engine.
    // SAFETY: as said just above; `udata` is valid for the call.
    unsafe {
        let (dev, pdn) = pd_dev((*qp).pd)?;
        let cq = |c| cq_obj::<Cq>(c).map(Into::into).ok_or(EINVAL);
        let srq = (!init.srq.is_null()).then(|| srq_obj::<Srq>(init.srq));
        Ok(verbs::qp::CreateArgs {
            dev: dev.into(),
            pdn,
            ib: IbQpRef::new(NonNull::new(qp).ok_or(EINVAL)?),
            cqs: (cq(init.send_cq)?, cq(init.recv_cq)?),
            srq: srq.map(|s| s.map(Into::into).ok_or(EINVAL)).transpose()?,
            udata: Udata::from_raw(udata),
        })
    }
}

/// `ib_device_ops.create_qp`.
///
/// # Safety
///
/// Core device op: `qp` is a zeroed `rsiw_qp` with `device`/`pd` set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_create_qp(
    qp: *mut b::ib_qp,
    init: *mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: `init` is valid and writable for the call; see
        // `create_qp_args` for the rest.
        let (args, init) = unsafe { (create_qp_args(qp, &*init, udata)?, &mut *init) };
        let q = verbs::qp::create(args, init)?;
        let found = q.clone();
        // SAFETY: in create_qp; the slot is empty.
        unsafe {
            (*qp).qp_num = q.num();
            obj::store(qp_slot(qp), q);
        }
        // Only now may a lookup by number find it (`Qp::publish`).
        found.publish();
        Ok(())
    })())
}

/// `ib_device_ops.modify_qp` (process context).
///
/// # Safety
///
/// Core device op on a live QP with a valid `attr`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_modify_qp(
    qp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    mask: c_int,
    _udata: *mut b::ib_udata,
) -> c_int {
    // SAFETY: live rsiw QP in the op; `attr` valid for the call.
    let (q, attr) = unsafe { (qp_obj::<Qp>(qp), &*attr) };
    ret(q.map_or(Err(EINVAL), |q| verbs::qp::modify(&q.into(), attr, mask)))
}

/// `ib_device_ops.query_qp`.
///
/// # Safety
///
/// Core device op on a live QP with writable `attr`/`init`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_qp(
    qp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    _mask: c_int,
    init: *mut b::ib_qp_init_attr,
) -> c_int {
    // SAFETY: live rsiw QP in the op; `attr`/`init` writable for the call.
    let (q, attr, init) = unsafe { (qp_obj::<Qp>(qp), &mut *attr, &mut *init) };
    ret(q.map_or(Err(EINVAL), |q| {
        verbs::qp::query(&q, attr, init);
        Ok(())
    }))
}

/// `ib_device_ops.fill_res_qp_entry`: rsiw's part of the QP's line in
/// `rdma resource show qp -dd` (process context).
///
/// # Safety
///
/// Core op on a QP whose restrack entry the caller holds (the `ib_qp` is
/// allocated; its Rust object may be going away, so it is looked up by
/// number); `msg` is the message being filled.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_fill_res_qp_entry(msg: *mut b::sk_buff, qp: *mut b::ib_qp) -> c_int {
    ret((|| {
        // SAFETY: the held restrack entry keeps the `ib_qp` and its device.
        let (qpn, (_, dev)) = unsafe { ((*qp).qp_num, device((*qp).device)?) };
        // SAFETY: the op's message.
        let mut t = unsafe { crate::kapi::nlres::DriverTable::begin(msg) }?;
        verbs::stats::qp_details(&dev, qpn, &mut t)?;
        t.finish();
        Ok(())
    })())
}

/// `ib_device_ops.destroy_qp` (process context; waits for the engine).
///
/// # Safety
///
/// Core device op on a QP `create_qp` accepted; no other op on it follows.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_destroy_qp(qp: *mut b::ib_qp, _udata: *mut b::ib_udata) -> c_int {
    // The QP stays reachable from the `ib_qp` while this waits: the iw_cm's
    // `iw_rem_ref` finds it there.
    // SAFETY: live rsiw QP during the op.
    if let Some(q) = unsafe { qp_obj::<Qp>(qp) } {
        q.destroy();
    }
    // SAFETY: destroy_qp: the iw_cm has dropped its references, no other
    // op on this QP runs or follows.
    drop(unsafe { obj::take::<Qp>(qp_slot(qp)) });
    0
}

/// `ib_device_ops.post_send` (any context, never sleeps).
///
/// # Safety
///
/// Core device op on a live QP with a valid WR chain.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_post_send(
    qp: *mut b::ib_qp,
    wr: *const b::ib_send_wr,
    bad: *mut *const b::ib_send_wr,
) -> c_int {
    // SAFETY: live rsiw QP in the op.
    let Some(q) = (unsafe { qp_obj::<Qp>(qp) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the consumer's chain; each WR heads the container its opcode
    // names; every rsiw MR holds a `Mem`.
    unsafe {
        post_chain(
            wr,
            |w| w.next,
            bad,
            |w| verbs::qp::post_send(&q, &SendWr::new(w)),
        )
    }
}

/// `ib_device_ops.post_recv` (any context, never sleeps).
///
/// # Safety
///
/// Core device op on a live QP with a valid WR chain.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_post_recv(
    qp: *mut b::ib_qp,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> c_int {
    // SAFETY: live rsiw QP in the op.
    let Some(q) = (unsafe { qp_obj::<Qp>(qp) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the consumer's chain of valid receive WRs.
    unsafe {
        post_chain(
            wr,
            |w| w.next,
            bad,
            |w| verbs::qp::post_recv(&q, &RecvWr::new(w)),
        )
    }
}

/// `ib_device_ops.create_srq`.
///
/// # Safety
///
/// Core device op: `srq` is a zeroed `rsiw_srq` with `device`/`pd` set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_create_srq(
    srq: *mut b::ib_srq,
    init: *mut b::ib_srq_init_attr,
    udata: *mut b::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: live SRQ with its PD set; `init`/`udata` valid for the
        // call; the ib_srq lives until destroy_srq, after its last QP.
        let ((dev, pdn), init, udata, ib) = unsafe {
            let ib = IbSrqRef::new(NonNull::new(srq).ok_or(EINVAL)?);
            (pd_dev((*srq).pd)?, &mut *init, Udata::from_raw(udata), ib)
        };
        let s = verbs::srq::create(&dev, ib, pdn, init, udata)?;
        // SAFETY: in create_srq; the slot is empty.
        unsafe { obj::store(srq_slot(srq), s) };
        Ok(())
    })())
}

/// `ib_device_ops.modify_srq`.
///
/// # Safety
///
/// Core device op on a live SRQ with a valid `attr`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_modify_srq(
    srq: *mut b::ib_srq,
    attr: *mut b::ib_srq_attr,
    mask: b::ib_srq_attr_mask,
    _udata: *mut b::ib_udata,
) -> c_int {
    // SAFETY: live rsiw SRQ in the op; `attr` valid for the call.
    let (s, attr) = unsafe { (srq_obj::<Srq>(srq), &*attr) };
    ret(s.map_or(Err(EINVAL), |s| verbs::srq::modify(&s, attr, mask)))
}

/// `ib_device_ops.query_srq`.
///
/// # Safety
///
/// Core device op on a live SRQ with a writable `attr`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_srq(srq: *mut b::ib_srq, attr: *mut b::ib_srq_attr) -> c_int {
    // SAFETY: live rsiw SRQ in the op; `attr` writable for the call.
    let (s, attr) = unsafe { (srq_obj::<Srq>(srq), &mut *attr) };
    ret(s.map_or(Err(EINVAL), |s| {
        verbs::srq::query(&s, attr);
        Ok(())
    }))
}

/// `ib_device_ops.destroy_srq`.
///
/// # Safety
///
/// Core device op on an SRQ `create_srq` accepted; no QP uses it.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_destroy_srq(srq: *mut b::ib_srq, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: live SRQ of an rsiw device; destroy_srq: no other op on
        // this SRQ runs or follows.
        let (dev, s) = unsafe { (device((*srq).device)?.1, obj::take::<Srq>(srq_slot(srq))) };
        if let Some(s) = s {
            verbs::srq::destroy(&dev, s);
        }
        Ok(())
    })())
}

/// `ib_device_ops.post_srq_recv` (any context, never sleeps).
///
/// # Safety
///
/// Core device op on a live SRQ with a valid WR chain.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_post_srq_recv(
    srq: *mut b::ib_srq,
    wr: *const b::ib_recv_wr,
    bad: *mut *const b::ib_recv_wr,
) -> c_int {
    // SAFETY: live rsiw SRQ in the op.
    let Some(s) = (unsafe { srq_obj::<Srq>(srq) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the consumer's chain of valid receive WRs.
    unsafe {
        post_chain(
            wr,
            |w| w.next,
            bad,
            |w| verbs::srq::post_recv(&s, &RecvWr::new(w)),
        )
    }
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Entry points from C into Rust for the verbs objects: CQ, MR, QP and SRQ
//! `ib_device_ops` callbacks. Each turns raw pointers into the safe types and
//! calls the driver.

use super::{
    bindings as b,
    callbacks::{device, ret},
    cq::{cq_obj, cq_slot, fill_wc, IbCqRef},
    mr,
    obj::{self, eopnotsupp},
    owner::Owner,
    qp::{self as fqp, qp_obj, qp_slot, IbQpRef},
    srq::{srq_obj, srq_slot, IbSrqRef},
    udata::Udata,
    umem::UserPages,
};
use crate::{
    cq::Cq,
    device::Device,
    mem::{Access, Mem, MemInit, MemKind, MAX_PBL},
    qp::{Qp, QpCaps, QpInit, MAX_QP_WR},
    srq::{Srq, SrqAttr},
    uqueue::{self, UserCq, UserRq, UserSq},
};
use core::ptr::NonNull;
use kernel::{
    ffi::c_int,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

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
        // SAFETY: live CQ of an rsiw device.
        let (_, dev) = unsafe { device((*cq).device) }?;
        // SAFETY: valid for the call.
        let attr = unsafe { &*attr };
        if attr.flags != 0 {
            return Err(eopnotsupp());
        }
        // SAFETY: valid for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let ib = NonNull::new(cq).ok_or(EINVAL)?;
        // User CQs keep their ring in memory mapped to the provider.
        let user = udata.as_ref().map(|u| |max| UserCq::new(u, attr.cqe, max));
        if !dev.get_cq() {
            return Err(ENOMEM);
        }
        // SAFETY: the ib_cq lives until destroy_cq, after the last QP using it.
        let made = Cq::new(unsafe { IbCqRef::new(ib) }, attr.cqe, user).and_then(|(c, size)| {
            if let Some(u) = udata.as_mut() {
                let resp = c.with_user(|r| uqueue::cq_resp(r, 0)).ok_or(EINVAL)?;
                u.respond(&resp)?;
            }
            Ok((c, size))
        });
        let (obj_, size) = made.inspect_err(|_| dev.put_cq())?;
        // SAFETY: in create_cq; the slot is empty.
        unsafe {
            (*cq).cqe = size as c_int;
            obj::store(cq_slot(cq), obj_);
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
        // SAFETY: live CQ of an rsiw device.
        let (_, dev) = unsafe { device((*cq).device) }?;
        // SAFETY: destroy_cq: no other op on this CQ runs or follows.
        if unsafe { obj::take::<Cq>(cq_slot(cq)) }.is_some() {
            dev.put_cq();
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
    let Some(c) = (unsafe { cq_obj(cq) }) else {
        return EINVAL.to_errno();
    };
    let Ok(n) = usize::try_from(num) else {
        return EINVAL.to_errno();
    };
    if n == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the consumer passed `num` writable entries.
    let wcs = unsafe { core::slice::from_raw_parts_mut(wc, n) };
    let got = c.poll(n, |i, cqe| {
        if let Some(w) = wcs.get_mut(i) {
            fill_wc(w, cqe);
        }
    });
    got as c_int
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
    let Some(c) = (unsafe { cq_obj(cq) }) else {
        return EINVAL.to_errno();
    };
    let solicited =
        flags & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK == b::ib_cq_notify_flags_IB_CQ_SOLICITED;
    let report = flags & b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
    c_int::from(c.req_notify(solicited, report).0)
}

/// Registers `init` and wraps it in a new `ib_mr`.
fn new_mr(dev: &Device, init: MemInit) -> Result<*mut b::ib_mr> {
    let (iova, len) = (init.iova, init.len);
    let mem = dev.mems().register(init)?;
    match mr::mr_new(mem.clone(), iova, len) {
        Ok(p) => Ok(p),
        Err(e) => {
            dev.mems().deregister(&mem);
            Err(e)
        }
    }
}

/// Refuses rights rsiw does not know (e.g. on-demand paging).
fn access_of(access: c_int) -> Result<Access> {
    let a = access as u32;
    if a & !Access::KNOWN != 0 {
        return Err(eopnotsupp());
    }
    Ok(Access(a))
}

/// `ib_device_ops.get_dma_mr`: all kernel memory (virtual DMA); the core
/// uses it for `pd->local_dma_lkey`.
///
/// # Safety
///
/// Core device op on a live PD.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_get_dma_mr(pd: *mut b::ib_pd, access: c_int) -> *mut b::ib_mr {
    mr_ret((|| {
        // SAFETY: live rsiw PD in an op.
        let (dev, pdn) = unsafe { pd_dev(pd) }?;
        let access = access_of(access)?;
        new_mr(
            &dev,
            MemInit {
                kind: MemKind::Dma,
                pd: pdn,
                access,
                iova: 0,
                len: u64::MAX,
            },
        )
    })())
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
        let access = access_of(access)?;
        if len == 0 || iova.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        // SAFETY: live PD; its device is the verb's device.
        let pages = UserPages::get(unsafe { (*pd).device }, start, len, access.0)?;
        new_mr(
            &dev,
            MemInit {
                kind: MemKind::User(pages),
                pd: pdn,
                access,
                iova,
                len,
            },
        )
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
    mr_ret((|| {
        // SAFETY: live rsiw PD in an op.
        let (dev, pdn) = unsafe { pd_dev(pd) }?;
        if kind != b::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return Err(eopnotsupp());
        }
        if max_num_sg == 0 || max_num_sg > MAX_PBL {
            return Err(EINVAL);
        }
        let init = MemInit {
            kind: MemKind::Pbl(max_num_sg as usize),
            pd: pdn,
            access: Access::NONE,
            iova: 0,
            len: 0,
        };
        new_mr(&dev, init)
    })())
}

/// `ib_device_ops.dereg_mr`: the STag disappears at once; memory a
/// placement still references is released with the last `Arc<Mem>`.
///
/// # Safety
///
/// Core device op on an MR this driver allocated.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dereg_mr(m: *mut b::ib_mr, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: live MR of an rsiw device.
        let (_, dev) = unsafe { device((*m).device) }?;
        // SAFETY: from `mr_new`, not freed yet.
        if unsafe { mr::mr_mem(m) }.is_some_and(|mem| mem.has_windows()) {
            // IBA o10-36.2.1: a region with bound windows stays.
            return Err(EBUSY);
        }
        // SAFETY: from `mr_new`; the core never uses it after this op.
        if let Some(mem) = unsafe { mr::mr_free(m) } {
            dev.mems().deregister(&mem);
        }
        Ok(())
    })())
}

/// `ib_device_ops.alloc_mw`: a type-2 memory window, invalid until a
/// Bind MW work request binds it; its rkey comes from the STag table.
///
/// # Safety
///
/// Core device op: `mw` is a zeroed `rsiw_mw` with `device`, `pd` and
/// `type` set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_mw(mw: *mut b::ib_mw, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: `mw` is live and its PD set by the core.
        let (pd, kind) = unsafe { ((*mw).pd, (*mw).type_) };
        if kind != b::ib_mw_type_IB_MW_TYPE_2 {
            // Type 1 (bound by a verb, not a work request) is not offered.
            return Err(eopnotsupp());
        }
        // SAFETY: live rsiw PD in an op.
        let (dev, pdn) = unsafe { pd_dev(pd) }?;
        let init = MemInit {
            kind: MemKind::Window,
            pd: pdn,
            access: Access::NONE,
            iova: 0,
            len: 0,
        };
        let mem = dev.mems().register(init)?;
        let c = mw.cast::<b::rsiw_mw>();
        // SAFETY: the core allocated an `rsiw_mw` (INIT_RDMA_OBJ_SIZE) that
        // nobody else uses during the op; `priv` is empty.
        unsafe {
            (*c).base.rkey = mem.stag();
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
        // SAFETY: live MW of an rsiw device.
        let (_, dev) = unsafe { device((*mw).device) }?;
        // SAFETY: an `rsiw_mw` whose slot `alloc_mw` filled; the core
        // frees it after this op and nothing borrows the slot.
        if let Some(mem) = unsafe { obj::take::<Mem>(&mut (*mw.cast::<b::rsiw_mw>()).priv_) } {
            dev.mems().deregister(&mem);
        }
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
    // SAFETY: live rsiw MR in the op.
    let Some(mem) = (unsafe { mr::mr_mem(m) }) else {
        return EINVAL.to_errno();
    };
    if !mem.is_frwr() {
        return EINVAL.to_errno();
    }
    // SAFETY: live MR; `ib_map_mr_sg` set `page_size` before calling us.
    ret(mem.map_begin(u64::from(unsafe { (*m).page_size })))
}

/// `ib_sg_to_pages`' per-page callback: `addr` is a kernel virtual address.
///
/// # Safety
///
/// Called by `ib_sg_to_pages` inside `map_mr_sg` on an rsiw MR.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_mr_set_page(m: *mut b::ib_mr, addr: u64) -> c_int {
    // SAFETY: live rsiw MR in the op.
    match unsafe { mr::mr_mem(m) } {
        Some(mem) => ret(mem.map_page(addr)),
        None => EINVAL.to_errno(),
    }
}

/// End of a successful `map_mr_sg`: `ib_sg_to_pages` set `iova`/`length`.
///
/// # Safety
///
/// Core device op on an MR this driver allocated.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_map_mr_end(m: *mut b::ib_mr) {
    // SAFETY: live rsiw MR in the op.
    if let Some(mem) = unsafe { mr::mr_mem(m) } {
        // SAFETY: as above.
        let (iova, _len) = unsafe { mr::mr_range(m) };
        mem.map_end(iova);
    }
}

/// `ib_device_ops.create_qp`: RC only.
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
        // SAFETY: live QP with its PD set by the core.
        let (dev, pdn) = unsafe { pd_dev((*qp).pd) }?;
        // SAFETY: valid and writable for the call.
        let init = unsafe { &mut *init };
        if init.qp_type != b::ib_qp_type_IB_QPT_RC || init.create_flags != 0 {
            return Err(eopnotsupp());
        }
        // SAFETY: valid for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        // SAFETY: the CQs/SRQ the consumer passed are live rsiw objects
        // (the core holds references on them for the QP's life).
        let (scq, rcq, srq) = unsafe {
            (
                cq_obj(init.send_cq).ok_or(EINVAL)?,
                cq_obj(init.recv_cq).ok_or(EINVAL)?,
                if init.srq.is_null() {
                    None
                } else {
                    Some(srq_obj(init.srq).ok_or(EINVAL)?)
                },
            )
        };
        let ib = NonNull::new(qp).ok_or(EINVAL)?;
        let qinit = QpInit {
            // SAFETY: the ib_qp lives until destroy_qp, which stops the engine.
            ib: unsafe { IbQpRef::new(ib) },
            pd: pdn,
            scq: scq.into(),
            rcq: rcq.into(),
            srq: srq.map(Into::into),
            sig_all: init.sq_sig_type == b::ib_sig_type_IB_SIGNAL_ALL_WR,
            caps: fqp::caps_from(&init.cap),
            owner: if udata.is_some() {
                Owner::current()
            } else {
                Owner::kernel()
            },
        };
        let dev: Arc<Device> = dev.into();
        let has_srq = !init.srq.is_null();
        // User QPs keep their rings in memory mapped to the provider.
        let make = |u: &Udata<'_>, c: &QpCaps| -> Result<(UserSq, Option<UserRq>)> {
            let sq = UserSq::new(u, c.max_send_wr, MAX_QP_WR, c.max_send_sge)?;
            let rq = if has_srq {
                None
            } else {
                Some(UserRq::new(u, c.max_recv_wr, MAX_QP_WR, c.max_recv_sge)?)
            };
            Ok((sq, rq))
        };
        let user = udata.as_ref().map(|u| move |c: &QpCaps| make(u, c));
        let (q, caps) = Qp::new(&dev, qinit, user.as_ref().map(|f| f as _))?;
        if let Some(u) = udata.as_mut() {
            let resp = q
                .with_user(|sq, rq| uqueue::qp_resp(q.num(), sq, rq))
                .ok_or(EINVAL)?;
            if let Err(e) = u.respond(&resp) {
                q.destroy();
                return Err(e);
            }
        }
        fqp::caps_to(&caps, &mut init.cap);
        // SAFETY: in create_qp; the slot is empty.
        unsafe {
            (*qp).qp_num = q.num();
            obj::store(qp_slot(qp), q);
        }
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
    ret((|| {
        // SAFETY: live rsiw QP in the op.
        let q = unsafe { qp_obj(qp) }.ok_or(EINVAL)?;
        // SAFETY: valid for the call.
        let m = fqp::modify_from(unsafe { &*attr }, mask)?;
        q.modify(&m)
    })())
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
    ret((|| {
        // SAFETY: live rsiw QP in the op.
        let q = unsafe { qp_obj(qp) }.ok_or(EINVAL)?;
        // SAFETY: writable for the call.
        let (attr, init) = unsafe { (&mut *attr, &mut *init) };
        fqp::query_to(&q, qp, attr, init);
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
    // SAFETY: live rsiw QP during the op.
    let q: Option<Arc<Qp>> = unsafe { qp_obj(qp) }.map(Into::into);
    if let Some(q) = &q {
        // The QP stays reachable from the `ib_qp` while this waits: the
        // iw_cm's `iw_rem_ref` finds it there.
        q.destroy();
    }
    // SAFETY: destroy_qp: the iw_cm has dropped its references, no other
    // op on this QP runs or follows.
    drop(unsafe { obj::take::<Qp>(qp_slot(qp)) });
    drop(q);
    0
}

/// Walks a chain of work requests, stopping at the first that fails.
///
/// # Safety
///
/// `first` must be null or a valid chain linked through `next(wr)`.
unsafe fn post_chain<W>(
    first: *const W,
    next: impl Fn(&W) -> *const W,
    bad: *mut *const W,
    mut post: impl FnMut(&W) -> Result,
) -> c_int {
    let mut wr = first;
    while !wr.is_null() {
        // SAFETY: per the requirements.
        let w = unsafe { &*wr };
        if let Err(e) = post(w) {
            if !bad.is_null() {
                // SAFETY: the consumer's out-parameter.
                unsafe { *bad = wr };
            }
            return e.to_errno();
        }
        wr = next(w);
    }
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
    let Some(q) = (unsafe { qp_obj(qp) }) else {
        return EINVAL.to_errno();
    };
    let dev = q.dev().clone();
    // SAFETY: the consumer's chain; each WR heads the container its opcode names.
    unsafe {
        post_chain(
            wr,
            |w| w.next,
            bad,
            |w| {
                let wqe = fqp::send_wqe(&dev, w)?;
                q.post_send(wqe)
            },
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
    let Some(q) = (unsafe { qp_obj(qp) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the consumer's chain of valid receive WRs.
    unsafe { post_chain(wr, |w| w.next, bad, |w| q.post_recv(fqp::recv_wqe(w)?)) }
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
        // SAFETY: live SRQ with its PD set by the core.
        let (dev, pdn) = unsafe { pd_dev((*srq).pd) }?;
        // SAFETY: valid and writable for the call.
        let init = unsafe { &mut *init };
        if init.srq_type != b::ib_srq_type_IB_SRQT_BASIC {
            return Err(eopnotsupp());
        }
        // SAFETY: valid for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let a = SrqAttr {
            max_wr: init.attr.max_wr,
            max_sge: init.attr.max_sge,
            limit: init.attr.srq_limit,
        };
        let ib = NonNull::new(srq).ok_or(EINVAL)?;
        let user = udata
            .as_ref()
            .map(|u| |max| UserRq::new(u, a.max_wr, max, a.max_sge.max(1)));
        if !dev.get_srq() {
            return Err(ENOMEM);
        }
        // SAFETY: the ib_srq lives until destroy_srq, after its last QP.
        let made = Srq::new(unsafe { IbSrqRef::new(ib) }, pdn, a, user).and_then(|(s, g)| {
            if let Some(u) = udata.as_mut() {
                let resp = s.with_user(uqueue::srq_resp).ok_or(EINVAL)?;
                u.respond(&resp)?;
            }
            Ok((s, g))
        });
        let (s, granted) = made.inspect_err(|_| dev.put_srq())?;
        init.attr.max_wr = granted.max_wr;
        init.attr.max_sge = granted.max_sge;
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
    ret((|| {
        // SAFETY: live rsiw SRQ in the op.
        let s = unsafe { srq_obj(srq) }.ok_or(EINVAL)?;
        // SAFETY: valid for the call.
        let a = unsafe { &*attr };
        let max_wr = (mask & b::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0).then_some(a.max_wr);
        let limit = (mask & b::ib_srq_attr_mask_IB_SRQ_LIMIT != 0).then_some(a.srq_limit);
        s.modify(max_wr, limit)
    })())
}

/// `ib_device_ops.query_srq`.
///
/// # Safety
///
/// Core device op on a live SRQ with a writable `attr`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_srq(srq: *mut b::ib_srq, attr: *mut b::ib_srq_attr) -> c_int {
    ret((|| {
        // SAFETY: live rsiw SRQ in the op.
        let s = unsafe { srq_obj(srq) }.ok_or(EINVAL)?;
        let q = s.query();
        // SAFETY: writable for the call.
        let a = unsafe { &mut *attr };
        a.max_wr = q.max_wr;
        a.max_sge = q.max_sge;
        a.srq_limit = q.limit;
        Ok(())
    })())
}

/// `ib_device_ops.destroy_srq`.
///
/// # Safety
///
/// Core device op on an SRQ `create_srq` accepted; no QP uses it.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_destroy_srq(srq: *mut b::ib_srq, _udata: *mut b::ib_udata) -> c_int {
    ret((|| {
        // SAFETY: live SRQ of an rsiw device.
        let (_, dev) = unsafe { device((*srq).device) }?;
        // SAFETY: destroy_srq: no other op on this SRQ runs or follows.
        if unsafe { obj::take::<Srq>(srq_slot(srq)) }.is_some() {
            dev.put_srq();
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
    let Some(s) = (unsafe { srq_obj(srq) }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the consumer's chain of valid receive WRs.
    unsafe { post_chain(wr, |w| w.next, bad, |w| s.post(fqp::recv_wqe(w)?)) }
}

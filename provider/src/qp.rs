// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Queue pairs: created, modified and destroyed in the kernel; work requests
//! posted straight into the shared SQ/RQ rings, with the doorbell rung only when
//! the kernel's TX side is idle (`rsiw_abi::ring::SQ_IDLE`).

use crate::abi::CreateQpRespFull;
use crate::ring::Ring;
use crate::wr::{self, Limits};
use crate::{cmem, context, doorbell, qp_ex, sys};
use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::mem::size_of_val;
use core::ptr::null_mut;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::{fence, Ordering};
use rsiw_abi::ring::SQ_IDLE;
use rsiw_abi::wqe::{Rqe, Sqe};
use std::sync::{Mutex, MutexGuard};

/// The producer side of the SQ: our index and, for the `ibv_wr_*` API, the
/// batch being built.
pub struct SqState {
    /// Next free slot (free-running); published to the ring on completion of a post.
    pub tail: u32,
    /// `ibv_wr_*` batch: SQEs written but not yet published.
    pub batch: qp_ex::Batch,
}

/// The SQ lock. A spinlock rather than a `Mutex`: the `ibv_wr_*` API holds it
/// from `wr_start` to `wr_complete`/`wr_abort`, across calls, as C providers do.
pub struct SqLock {
    busy: AtomicBool,
    state: UnsafeCell<SqState>,
}

// SAFETY: `state` is only reached through `acquire`, which excludes other threads.
unsafe impl Sync for SqLock {}

impl SqLock {
    fn new() -> Self {
        Self {
            busy: AtomicBool::new(false),
            state: UnsafeCell::new(SqState {
                tail: 0,
                batch: Default::default(),
            }),
        }
    }

    /// Takes the lock for the rest of the caller's scope.
    pub fn lock(&self) -> SqGuard<'_> {
        self.spin();
        SqGuard { lock: self }
    }

    /// Takes the lock across calls (`ibv_wr_start` .. `ibv_wr_complete`); the
    /// holder reaches the state with [`Qp::sq_state_ptr`] and must
    /// [`Self::release`] it.
    pub fn acquire(&self) {
        self.spin();
    }

    fn spin(&self) {
        let mut spins = 0u32;
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                core::hint::spin_loop();
            }
        }
    }

    /// Drops the lock.
    ///
    /// # Safety
    ///
    /// The caller holds it (from [`Self::acquire`]) and no longer uses the state.
    pub unsafe fn release(&self) {
        self.busy.store(false, Ordering::Release);
    }
}

/// The SQ lock, held; released when dropped.
pub struct SqGuard<'a> {
    lock: &'a SqLock,
}

impl core::ops::Deref for SqGuard<'_> {
    type Target = SqState;

    fn deref(&self) -> &SqState {
        // SAFETY: the guard holds the lock, which excludes every other thread.
        unsafe { &*self.lock.state.get() }
    }
}

impl core::ops::DerefMut for SqGuard<'_> {
    fn deref_mut(&mut self) -> &mut SqState {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow.
        unsafe { &mut *self.lock.state.get() }
    }
}

impl Drop for SqGuard<'_> {
    fn drop(&mut self) {
        self.lock.busy.store(false, Ordering::Release);
    }
}

/// rsiw's QP.
#[repr(C)]
pub struct Qp {
    /// libibverbs' part, first (users hold a pointer to its `qp`). v55's size;
    /// libibverbs 44 writes its own shorter layout into it (see `qp_ex.rs`).
    pub vqp: sys::verbs_qp,
    /// The send ring; set before the QP is handed out.
    pub sq: Option<Ring>,
    /// The receive ring; `None` with an SRQ.
    pub rq: Option<Ring>,
    /// SQ producer state behind the SQ lock.
    pub sq_state: SqLock,
    /// RQ producer index; the RQ lock.
    rq_tail: Mutex<u32>,
    /// Granted send limits.
    pub send_lim: Limits,
    /// Granted receive SGEs.
    max_recv_sge: u32,
    /// The kernel's driver id, for the doorbell ioctl header.
    driver_id: u32,
}

/// Locks a queue, ignoring poisoning (a panic cannot leave ring indices half-updated).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Qp {
    /// A QP with no rings yet, at its final address.
    fn new_boxed(driver_id: u32) -> Box<Self> {
        Box::new(Qp {
            vqp: Default::default(),
            sq: None,
            rq: None,
            sq_state: SqLock::new(),
            rq_tail: Mutex::new(0),
            send_lim: Limits {
                max_sge: 0,
                max_inline: 0,
            },
            max_recv_sge: 0,
            driver_id,
        })
    }

    /// The QP behind an `ibv_qp` of ours.
    ///
    /// # Safety
    ///
    /// `qp` must come from [`create_qp_ex`] and not be destroyed.
    pub unsafe fn from_ibv<'a>(qp: *mut sys::ibv_qp) -> &'a Qp {
        // SAFETY: the ibv_qp is at offset 0 of verbs_qp, the first field of the
        // #[repr(C)] Qp.
        unsafe { &*qp.cast::<Qp>() }
    }

    fn ibv_qp(&self) -> &sys::ibv_qp {
        // SAFETY: reading the `qp` member of the union both views start with.
        unsafe { &self.vqp.__bindgen_anon_1.qp }
    }

    /// Publishes SQ slots up to `tail` and rings the doorbell if the kernel's
    /// TX side went idle; 0 or the errno of the doorbell.
    pub fn publish_sq(&self, ring: &Ring, tail: u32) -> c_int {
        // Release: the SQEs are complete before the kernel sees the index.
        ring.producer().store(tail, Ordering::Release);
        // Pairs with the kernel's fence between setting SQ_IDLE and re-reading
        // the producer: one of us sees the other, so no post is stranded.
        fence(Ordering::SeqCst);
        if ring.flags().load(Ordering::Relaxed) & SQ_IDLE == 0 {
            return 0;
        }
        let q = self.ibv_qp();
        // SAFETY: the QP's context is live while the QP is.
        let fd = unsafe { (*q.context).cmd_fd };
        doorbell::ring(fd, q.handle, self.driver_id)
    }

    /// Rings the SQ doorbell unconditionally (`rsiwdv_ring_sq_doorbell`).
    pub fn ring_doorbell(&self) -> c_int {
        let q = self.ibv_qp();
        // SAFETY: the QP's context is live while the QP is.
        let fd = unsafe { (*q.context).cmd_fd };
        doorbell::ring(fd, q.handle, self.driver_id)
    }

    /// Posts one prepared SQE (checked like any post) and rings the doorbell
    /// if needed; 0 or an errno (`ENOMEM` when the SQ is full).
    pub fn post_sqe(&self, sqe: &Sqe) -> c_int {
        let Some(ring) = &self.sq else {
            return sys::EINVAL as c_int;
        };
        if let Err(e) = wr::check_sqe(sqe, self.send_lim) {
            return e;
        }
        let mut st = self.sq_state.lock();
        match Qp::sq_room(ring, st.tail) {
            Ok(()) => {
                ring.put(st.tail, sqe);
                st.tail = st.tail.wrapping_add(1);
                self.publish_sq(ring, st.tail)
            }
            Err(e) => e,
        }
    }

    /// The QP behind an `ibv_qp`, if it is one of ours (its context posts
    /// with [`post_send`]); `None` for another provider's QP.
    ///
    /// # Safety
    ///
    /// `qp` is NULL or a live `ibv_qp` of any provider.
    pub unsafe fn ours<'a>(qp: *mut sys::ibv_qp) -> Option<&'a Qp> {
        if qp.is_null() {
            return None;
        }
        // SAFETY: a live QP has a live context.
        let post = unsafe { (*(*qp).context).ops.post_send };
        if post.map(|f| f as *const () as usize) != Some(post_send as *const () as usize) {
            return None;
        }
        // SAFETY: ours: created by create_qp_ex.
        Some(unsafe { Qp::from_ibv(qp) })
    }

    /// The SQ state behind the lock, for callers holding it.
    pub fn sq_state_ptr(&self) -> *mut SqState {
        self.sq_state.state.get()
    }

    /// A free SQ slot at `tail`, or `ENOMEM` when the ring is full.
    pub fn sq_room(ring: &Ring, tail: u32) -> Result<(), c_int> {
        let head = ring.consumer().load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= ring.entries() {
            return Err(sys::ENOMEM as c_int);
        }
        Ok(())
    }
}

/// `verbs_context_ops::create_qp`: the legacy entry, through [`create_qp_ex`].
///
/// # Safety
///
/// libibverbs passes a live PD of ours and a valid `attr`.
pub unsafe extern "C" fn create_qp(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> *mut sys::ibv_qp {
    // SAFETY: valid per the requirements.
    let (pd, a) = unsafe { (&mut *pd, &mut *attr) };
    let mut ex = sys::ibv_qp_init_attr_ex {
        qp_context: a.qp_context,
        send_cq: a.send_cq,
        recv_cq: a.recv_cq,
        srq: a.srq,
        cap: a.cap,
        qp_type: a.qp_type,
        sq_sig_all: a.sq_sig_all,
        comp_mask: sys::ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_PD,
        pd,
        ..Default::default()
    };
    // SAFETY: the context is the PD's, live.
    let qp = unsafe { create_qp_ex(pd.context, &mut ex) };
    if !qp.is_null() {
        // The legacy API reports the granted sizes in the caller's attr.
        a.cap = ex.cap;
    }
    qp
}

/// `verbs_context_ops::create_qp_ex`: NULL with errno set on failure.
///
/// # Safety
///
/// libibverbs passes a live context of ours and a valid `attr`.
pub unsafe extern "C" fn create_qp_ex(
    ibctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_qp_init_attr_ex,
) -> *mut sys::ibv_qp {
    // SAFETY: valid per the requirements.
    let a = unsafe { &mut *attr };
    if a.qp_type != sys::ibv_qp_type_IBV_QPT_RC {
        cmem::set_errno(sys::EOPNOTSUPP as c_int);
        return null_mut();
    }
    let ops = if a.comp_mask & sys::ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
        match qp_ex::check_send_ops(a.send_ops_flags) {
            Ok(()) => true,
            Err(e) => {
                cmem::set_errno(e);
                return null_mut();
            }
        }
    } else {
        false
    };
    // The command below (`ibv_cmd_create_qp_ex`) takes PD, XRCD and SEND_OPS_FLAGS
    // in `comp_mask` and refuses anything else with EINVAL. CREATE_FLAGS with no flag
    // set asks for nothing (pyverbs sets the bit at random): accepted; a flag rsiw
    // does not have: EOPNOTSUPP. The caller's `comp_mask` is restored after the call.
    let create_flags = sys::ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_CREATE_FLAGS;
    let no_flags = a.comp_mask & create_flags != 0;
    if no_flags {
        if a.create_flags != 0 {
            cmem::set_errno(sys::EOPNOTSUPP as c_int);
            return null_mut();
        }
        a.comp_mask &= !create_flags;
    }
    // SAFETY: a live context of ours.
    let driver_id = unsafe { context::driver_id(ibctx) };
    let mut qp = Qp::new_boxed(driver_id);
    let mut cmd = sys::ibv_create_qp::default();
    let mut resp = CreateQpRespFull::default();
    // SAFETY: the boxed QP keeps its address (the kernel's user_handle) for its
    // life; cmd/resp are live and sized with the driver part.
    let rc = unsafe {
        sys::ibv_cmd_create_qp_ex(
            ibctx,
            &mut qp.vqp,
            a,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp.core,
            size_of_val(&resp),
        )
    };
    if no_flags {
        a.comp_mask |= create_flags;
    }
    if rc != 0 {
        cmem::set_errno(rc);
        return null_mut();
    }
    // SAFETY: the context is live.
    let fd = unsafe { (*ibctx).cmd_fd };
    let d = resp.drv;
    let rq = a.srq.is_null().then_some((d.rq_offset, d.num_rqe));
    let rings = Ring::map_qp(fd, d.key, d.len, d.num_sqe, rq);
    match rings {
        Ok((sq, rq)) => {
            qp.sq = Some(sq);
            qp.rq = rq;
        }
        Err(e) => {
            // SAFETY: the kernel QP was created above and is not handed out.
            unsafe { sys::ibv_cmd_destroy_qp(&mut qp.vqp.__bindgen_anon_1.qp) };
            cmem::set_errno(e);
            return null_mut();
        }
    }
    qp.send_lim = Limits {
        max_sge: a.cap.max_send_sge,
        max_inline: d.max_inline,
    };
    qp.max_recv_sge = a.cap.max_recv_sge;
    // The rings may be larger than asked (powers of two): report all of them.
    a.cap.max_send_wr = d.num_sqe;
    a.cap.max_inline_data = d.max_inline;
    if a.srq.is_null() {
        a.cap.max_recv_wr = d.num_rqe;
    }
    let qp = Box::leak(qp);
    if ops {
        qp_ex::install(qp, a.send_ops_flags);
    }
    // SAFETY: the union's `qp` view is what users get.
    unsafe { &mut qp.vqp.__bindgen_anon_1.qp }
}

/// `verbs_context_ops::modify_qp`.
///
/// # Safety
///
/// libibverbs passes a QP of ours and a valid `attr`.
pub unsafe extern "C" fn modify_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = sys::ibv_modify_qp::default();
    // SAFETY: arguments as libibverbs gave them; cmd is live and sized.
    unsafe { sys::ibv_cmd_modify_qp(qp, attr, mask, &mut cmd, size_of_val(&cmd)) }
}

/// `verbs_context_ops::query_qp`.
///
/// # Safety
///
/// libibverbs passes a QP of ours and valid `attr`/`init_attr`.
pub unsafe extern "C" fn query_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: c_int,
    init_attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    let mut cmd = sys::ibv_query_qp::default();
    // SAFETY: arguments as libibverbs gave them; cmd is live and sized.
    unsafe { sys::ibv_cmd_query_qp(qp, attr, mask, init_attr, &mut cmd, size_of_val(&cmd)) }
}

/// `verbs_context_ops::destroy_qp`: on failure the QP stays usable.
///
/// # Safety
///
/// `qp` comes from [`create_qp_ex`]; no other thread uses it any more.
pub unsafe extern "C" fn destroy_qp(qp: *mut sys::ibv_qp) -> c_int {
    // SAFETY: a live QP of ours, leaked from a Box in create_qp_ex; after a
    // successful destroy nothing uses it.
    unsafe { cmem::free_boxed_if_destroyed(sys::ibv_cmd_destroy_qp(qp), qp.cast::<Qp>()) }
}

/// `verbs_context_ops::post_send`: every WR into the SQ ring, in order; on the
/// first failure `*bad_wr` names it and nothing after it is posted.
///
/// # Safety
///
/// libibverbs passes a QP of ours and a valid WR list.
pub unsafe extern "C" fn post_send(
    qp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_send_wr,
    bad_wr: *mut *mut sys::ibv_send_wr,
) -> c_int {
    // SAFETY: per the requirements.
    let qp = unsafe { Qp::from_ibv(qp) };
    let Some(ring) = &qp.sq else {
        return sys::EINVAL as c_int;
    };
    let mut guard = qp.sq_state.lock();
    let st = &mut *guard;
    let start = st.tail;
    let one = |w: &sys::ibv_send_wr| {
        Qp::sq_room(ring, st.tail)?;
        // SAFETY: the verbs contract on each WR's sg_list and inline buffers.
        let s = unsafe { wr::sqe_from_wr(w, qp.send_lim) }?;
        ring.put(st.tail, &s);
        st.tail = st.tail.wrapping_add(1);
        Ok(())
    };
    // SAFETY: the verbs contract on the list; bad_wr as libibverbs gave it.
    let mut rc = unsafe { cmem::each_wr(wr, |w| w.next, bad_wr, one) };
    if st.tail != start {
        let db = qp.publish_sq(ring, st.tail);
        if rc == 0 {
            rc = db;
        }
    }
    rc
}

/// Posts receive WRs into a receive ring (the QP's RQ or an SRQ).
///
/// # Safety
///
/// `wr` is a valid WR list; `bad_wr` is NULL or writable.
pub unsafe fn post_rq(
    ring: &Ring,
    tail: &Mutex<u32>,
    max_sge: u32,
    wr: *mut sys::ibv_recv_wr,
    bad_wr: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    let mut t = lock(tail);
    let start = *t;
    let one = |w: &sys::ibv_recv_wr| {
        let head = ring.consumer().load(Ordering::Acquire);
        if t.wrapping_sub(head) >= ring.entries() {
            return Err(sys::ENOMEM as c_int);
        }
        // SAFETY: the verbs contract on each WR's sg_list.
        let r: Rqe = unsafe { wr::rqe_from_wr(w, max_sge) }?;
        ring.put(*t, &r);
        *t = t.wrapping_add(1);
        Ok(())
    };
    // SAFETY: the verbs contract on the list; bad_wr as the caller gave it.
    let rc = unsafe { cmem::each_wr(wr, |w| w.next, bad_wr, one) };
    if *t != start {
        // Release: the RQEs are complete before the kernel sees the index.
        // iWARP needs no receive doorbell: RX takes buffers when data arrives.
        ring.producer().store(*t, Ordering::Release);
    }
    rc
}

/// `verbs_context_ops::post_recv`.
///
/// # Safety
///
/// libibverbs passes a QP of ours and a valid WR list.
pub unsafe extern "C" fn post_recv(
    qp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_recv_wr,
    bad_wr: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    // SAFETY: per the requirements.
    let qp = unsafe { Qp::from_ibv(qp) };
    let Some(ring) = &qp.rq else {
        // A QP with an SRQ takes receives only through the SRQ.
        if !bad_wr.is_null() {
            // SAFETY: the caller's out pointer.
            unsafe { *bad_wr = wr };
        }
        return sys::EINVAL as c_int;
    };
    // SAFETY: forwarded.
    unsafe { post_rq(ring, &qp.rq_tail, qp.max_recv_sge, wr, bad_wr) }
}

#[cfg(test)]
#[path = "qp_test.rs"]
mod test;

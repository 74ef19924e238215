// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The extended QP send API (`ibv_qp_ex`, `ibv_wr_*`): work requests built
//! field by field into the SQ ring between `wr_start` and `wr_complete`.
//!
//! `verbs_qp` grew between rdma-core 44 and 55 (`ibv_qp_ex::wr_flush`), which
//! moved its `comp_mask`. libibverbs' `ibv_qp_to_qp_ex` reads `comp_mask` at the
//! offset of the libibverbs that runs, so [`install`] writes it there.

use crate::qp::{Qp, SqState};
use crate::sys;
use crate::wr::{self, Limits};
use core::ffi::{c_int, c_void};
use core::mem::offset_of;
use rsiw_abi::wqe::{Sge, SqOpcode, Sqe, SQE_FENCE, SQE_INLINE, SQE_SIGNALED, SQE_SOLICITED};

/// The `ibv_wr_*` batch between `wr_start` and `wr_complete`.
#[derive(Default)]
pub struct Batch {
    /// SQ tail at `wr_start`, restored by `wr_abort` or a failed batch.
    start: u32,
    /// The WR being built (its SGEs or inline data may still come).
    cur: Option<Sqe>,
    /// First error of the batch, reported by `wr_complete`.
    err: c_int,
}

/// Send operations the extended API offers on rsiw.
pub fn supported_send_ops() -> u64 {
    u64::from(
        sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_INV
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_READ
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
            | sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_LOCAL_INV,
    )
}

/// `EOPNOTSUPP` if `flags` asks for an operation rsiw lacks (Send with
/// Immediate has no iWARP encoding; no memory windows, TSO, flush yet).
pub fn check_send_ops(flags: u64) -> Result<(), c_int> {
    if flags & !supported_send_ops() != 0 {
        return Err(sys::EOPNOTSUPP as c_int);
    }
    Ok(())
}

/// The offset of `verbs_qp::comp_mask` in the running libibverbs: v55 added
/// `wr_flush` (and `ibv_cmd_create_cq_ex2`) at the same time.
fn comp_mask_offset() -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT (NULL) and a NUL-terminated name.
    let v55 =
        !unsafe { sys::dlsym(core::ptr::null_mut(), c"ibv_cmd_create_cq_ex2".as_ptr()) }.is_null();
    if v55 {
        offset_of!(sys::verbs_qp, comp_mask)
    } else {
        offset_of!(sys::ibv_qp_ex, wr_flush)
    }
}

/// Fills the `ibv_wr_*` entry points for `ops` and marks the QP extended.
pub fn install(qp: &mut Qp, ops: u64) {
    let has = |f: u32| ops & u64::from(f) != 0;
    // SAFETY: the `qp_ex` view of the union; only function pointers are written.
    let x = unsafe { &mut qp.vqp.__bindgen_anon_1.qp_ex };
    x.wr_start = Some(wr_start);
    x.wr_complete = Some(wr_complete);
    x.wr_abort = Some(wr_abort);
    x.wr_set_sge = Some(wr_set_sge);
    x.wr_set_sge_list = Some(wr_set_sge_list);
    x.wr_set_inline_data = Some(wr_set_inline_data);
    x.wr_set_inline_data_list = Some(wr_set_inline_data_list);
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND) {
        x.wr_send = Some(wr_send);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_INV) {
        x.wr_send_inv = Some(wr_send_inv);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE) {
        x.wr_rdma_write = Some(wr_rdma_write);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) {
        x.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_READ) {
        x.wr_rdma_read = Some(wr_rdma_read);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) {
        x.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) {
        x.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_LOCAL_INV) {
        x.wr_local_inv = Some(wr_local_inv);
    }
    if has(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_BIND_MW) {
        x.wr_bind_mw = Some(wr_bind_mw);
    }
    let at = comp_mask_offset();
    let base = core::ptr::addr_of_mut!(qp.vqp).cast::<u8>();
    // SAFETY: `at` is inside verbs_qp (either layout's comp_mask, a u32 at a
    // 4-aligned offset); libibverbs wrote 0 there in create (set_qp).
    unsafe {
        let cm = base.add(at).cast::<u32>();
        cm.write(cm.read() | sys::verbs_qp_mask_VERBS_QP_EX);
    }
}

/// The QP and its SQ state, while the batch holds the SQ lock.
///
/// # Safety
///
/// `x` is the `qp_ex` of a QP of ours, and the caller holds its SQ lock
/// (inside `wr_start` .. `wr_complete`/`wr_abort`).
unsafe fn held<'a>(x: *mut sys::ibv_qp_ex) -> (&'a Qp, &'a mut SqState) {
    // SAFETY: per the requirements: qp_ex starts with the ibv_qp (qp_base).
    let qp = unsafe { Qp::from_ibv(x.cast()) };
    // SAFETY: the lock is held, so this thread has the state to itself.
    let st = unsafe { &mut *qp.sq_state_ptr() };
    (qp, st)
}

/// SQE flags from `ibv_qp_ex::wr_flags` (the verbs `IBV_SEND_*` bits).
fn flags_of(wr_flags: u32) -> Result<u8, c_int> {
    let f = wr::sq_flags(wr_flags)?;
    // Inline is chosen by wr_set_inline_data*, not by the flag.
    Ok(f & (SQE_SIGNALED | SQE_SOLICITED | SQE_FENCE | SQE_INLINE))
}

/// Writes the finished WR (if any) into the ring.
fn flush_cur(ring: &crate::ring::Ring, st: &mut SqState, lim: Limits) {
    let Some(sqe) = st.batch.cur.take() else {
        return;
    };
    if st.batch.err != 0 {
        return;
    }
    let r = wr::check_sqe(&sqe, lim).and_then(|()| Qp::sq_room(ring, st.tail));
    match r {
        Ok(()) => {
            ring.put(st.tail, &sqe);
            st.tail = st.tail.wrapping_add(1);
        }
        Err(e) => st.batch.err = e,
    }
}

/// Starts a new WR of `op`; `fill` sets its operation fields.
///
/// # Safety
///
/// As [`held`].
unsafe fn begin(x: *mut sys::ibv_qp_ex, op: SqOpcode, fill: impl FnOnce(&mut Sqe)) {
    // SAFETY: forwarded.
    let (qp, st) = unsafe { held(x) };
    let Some(ring) = &qp.sq else { return };
    flush_cur(ring, st, qp.send_lim);
    // SAFETY: x is a live qp_ex (per the requirements).
    let (wr_id, wr_flags) = unsafe { ((*x).wr_id, (*x).wr_flags) };
    let flags = match flags_of(wr_flags) {
        Ok(f) => f & !SQE_INLINE,
        Err(e) => {
            if st.batch.err == 0 {
                st.batch.err = e;
            }
            return;
        }
    };
    let mut sqe = Sqe {
        wr_id,
        opcode: op as u8,
        flags,
        ..Default::default()
    };
    fill(&mut sqe);
    st.batch.cur = Some(sqe);
}

/// The WR being built, for the `wr_set_*` calls.
///
/// # Safety
///
/// As [`held`].
unsafe fn with_cur(x: *mut sys::ibv_qp_ex, f: impl FnOnce(&mut Sqe, Limits) -> Result<(), c_int>) {
    // SAFETY: forwarded.
    let (qp, st) = unsafe { held(x) };
    let r = match st.batch.cur.as_mut() {
        Some(sqe) => f(sqe, qp.send_lim),
        None => Err(sys::EINVAL as c_int),
    };
    if let Err(e) = r {
        if st.batch.err == 0 {
            st.batch.err = e;
        }
    }
}

unsafe extern "C" fn wr_start(x: *mut sys::ibv_qp_ex) {
    // SAFETY: x is a QP of ours (libibverbs' contract for the ops).
    let qp = unsafe { Qp::from_ibv(x.cast()) };
    // Held until wr_complete or wr_abort (the API's contract).
    qp.sq_state.acquire();
    // SAFETY: we hold the lock now.
    let st = unsafe { &mut *qp.sq_state_ptr() };
    st.batch = Batch {
        start: st.tail,
        cur: None,
        err: 0,
    };
}

unsafe extern "C" fn wr_complete(x: *mut sys::ibv_qp_ex) -> c_int {
    // SAFETY: between wr_start and here the lock is held.
    let (qp, st) = unsafe { held(x) };
    let Some(ring) = &qp.sq else {
        return sys::EINVAL as c_int;
    };
    flush_cur(ring, st, qp.send_lim);
    let rc = if st.batch.err != 0 {
        // A failed batch posts nothing (the verbs semantics of wr_complete).
        st.tail = st.batch.start;
        st.batch.err
    } else if st.tail != st.batch.start {
        qp.publish_sq(ring, st.tail)
    } else {
        0
    };
    // SAFETY: the lock taken by wr_start; st is not used after this.
    unsafe { qp.sq_state.release() };
    rc
}

unsafe extern "C" fn wr_abort(x: *mut sys::ibv_qp_ex) {
    // SAFETY: between wr_start and here the lock is held.
    let (qp, st) = unsafe { held(x) };
    st.tail = st.batch.start;
    st.batch.cur = None;
    // SAFETY: the lock taken by wr_start; st is not used after this.
    unsafe { qp.sq_state.release() };
}

unsafe extern "C" fn wr_send(x: *mut sys::ibv_qp_ex) {
    // SAFETY: inside a batch (the API's contract).
    unsafe { begin(x, SqOpcode::Send, |_| {}) }
}

unsafe extern "C" fn wr_send_inv(x: *mut sys::ibv_qp_ex, rkey: u32) {
    // SAFETY: inside a batch.
    unsafe { begin(x, SqOpcode::SendInv, |s| s.set_inv_rkey(rkey)) }
}

unsafe extern "C" fn wr_rdma_write(x: *mut sys::ibv_qp_ex, rkey: u32, addr: u64) {
    // SAFETY: inside a batch.
    unsafe {
        begin(x, SqOpcode::Write, |s| {
            s.rkey = rkey;
            s.remote_addr = addr;
        })
    }
}

unsafe extern "C" fn wr_rdma_write_imm(x: *mut sys::ibv_qp_ex, rkey: u32, addr: u64, imm: u32) {
    // SAFETY: inside a batch.
    unsafe {
        begin(x, SqOpcode::WriteImm, |s| {
            s.rkey = rkey;
            s.remote_addr = addr;
            // Network order in, RFC 7306's 64-bit field (low half) out.
            s.set_imm(u64::from(u32::from_be(imm)));
        })
    }
}

unsafe extern "C" fn wr_rdma_read(x: *mut sys::ibv_qp_ex, rkey: u32, addr: u64) {
    // SAFETY: inside a batch.
    unsafe {
        begin(x, SqOpcode::Read, |s| {
            s.rkey = rkey;
            s.remote_addr = addr;
        })
    }
}

unsafe extern "C" fn wr_atomic_cmp_swp(
    x: *mut sys::ibv_qp_ex,
    rkey: u32,
    addr: u64,
    compare: u64,
    swap: u64,
) {
    // SAFETY: inside a batch.
    unsafe {
        begin(x, SqOpcode::CmpSwap, |s| {
            s.rkey = rkey;
            s.remote_addr = addr;
            s.set_atomic([swap, compare, 0, 0]);
        })
    }
}

unsafe extern "C" fn wr_atomic_fetch_add(x: *mut sys::ibv_qp_ex, rkey: u32, addr: u64, add: u64) {
    // SAFETY: inside a batch.
    unsafe {
        begin(x, SqOpcode::FetchAdd, |s| {
            s.rkey = rkey;
            s.remote_addr = addr;
            s.set_atomic([add, 0, 0, 0]);
        })
    }
}

unsafe extern "C" fn wr_local_inv(x: *mut sys::ibv_qp_ex, rkey: u32) {
    // SAFETY: inside a batch.
    unsafe { begin(x, SqOpcode::LocalInv, |s| s.set_inv_rkey(rkey)) }
}

unsafe extern "C" fn wr_bind_mw(
    x: *mut sys::ibv_qp_ex,
    mw: *mut sys::ibv_mw,
    rkey: u32,
    info: *const sys::ibv_mw_bind_info,
) {
    // SAFETY: inside a batch; the window and region are live (the API's
    // contract). A bad bind keeps no SGE, so wr_complete refuses it.
    unsafe {
        begin(x, SqOpcode::BindMw, |s| {
            if info.is_null() || crate::wr::set_bind(s, mw, rkey, &*info).is_err() {
                s.num_sge = 0;
            }
        })
    }
}

unsafe extern "C" fn wr_set_sge(x: *mut sys::ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    // SAFETY: inside a batch.
    unsafe {
        with_cur(x, |s, _| {
            s.set_sge(0, Sge { addr, length, lkey });
            s.num_sge = 1;
            Ok(())
        })
    }
}

unsafe extern "C" fn wr_set_sge_list(x: *mut sys::ibv_qp_ex, n: usize, list: *const sys::ibv_sge) {
    let sges = if n == 0 || list.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller passes `n` SGEs (API contract).
        unsafe { core::slice::from_raw_parts(list, n) }
    };
    // SAFETY: inside a batch; not inline, so no buffer is read.
    unsafe { with_cur(x, |s, lim| wr::set_payload(s, sges, lim)) }
}

unsafe extern "C" fn wr_set_inline_data(x: *mut sys::ibv_qp_ex, addr: *mut c_void, length: usize) {
    let Ok(len) = u32::try_from(length) else {
        // SAFETY: inside a batch.
        return unsafe { with_cur(x, |_, _| Err(sys::EINVAL as c_int)) };
    };
    let sge = [sys::ibv_sge {
        addr: addr as u64,
        length: len,
        lkey: 0,
    }];
    // SAFETY: inside a batch; the caller's buffer is readable (API contract).
    unsafe {
        with_cur(x, |s, lim| {
            s.flags |= SQE_INLINE;
            wr::set_payload(s, &sge, lim)
        })
    }
}

unsafe extern "C" fn wr_set_inline_data_list(
    x: *mut sys::ibv_qp_ex,
    n: usize,
    list: *const sys::ibv_data_buf,
) {
    let bufs = if n == 0 || list.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller passes `n` buffers (API contract).
        unsafe { core::slice::from_raw_parts(list, n) }
    };
    let mut sges = Vec::with_capacity(bufs.len());
    for b in bufs {
        let Ok(length) = u32::try_from(b.length) else {
            // SAFETY: inside a batch.
            return unsafe { with_cur(x, |_, _| Err(sys::EINVAL as c_int)) };
        };
        sges.push(sys::ibv_sge {
            addr: b.addr as u64,
            length,
            lkey: 0,
        });
    }
    // SAFETY: inside a batch; the caller's buffers are readable (API contract).
    unsafe {
        with_cur(x, |s, lim| {
            s.flags |= SQE_INLINE;
            wr::set_payload(s, &sges, lim)
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn send_ops_subset() {
        assert_eq!(check_send_ops(supported_send_ops()), Ok(()));
        let imm = u64::from(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_IMM);
        assert_eq!(check_send_ops(imm), Err(sys::EOPNOTSUPP as c_int));
        let bind = u64::from(sys::ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_BIND_MW);
        assert_eq!(
            check_send_ops(bind | supported_send_ops()),
            Err(sys::EOPNOTSUPP as c_int)
        );
    }

    #[test]
    fn flags_from_wr_flags() {
        let f = sys::ibv_send_flags_IBV_SEND_SIGNALED | sys::ibv_send_flags_IBV_SEND_FENCE;
        assert_eq!(flags_of(f), Ok(SQE_SIGNALED | SQE_FENCE));
        assert!(flags_of(sys::ibv_send_flags_IBV_SEND_IP_CSUM).is_err());
    }

    #[test]
    fn comp_mask_where_libibverbs_44_reads_it() {
        // The test links the system libibverbs (rdma-core 44 on Debian 12).
        assert_eq!(comp_mask_offset(), offset_of!(sys::ibv_qp_ex, wr_flush));
        assert!(comp_mask_offset() < offset_of!(sys::verbs_qp, comp_mask));
    }
}

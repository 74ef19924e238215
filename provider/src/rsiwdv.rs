// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw direct verbs: the RFC 7306 operations libibverbs has no call for —
//! masked Fetch and Add / Compare and Swap (§5.2.1), RDMA Write with 64-bit
//! Immediate Data (§6) and the 64-bit immediate of a completion — as Rust
//! functions and as the C entry points `include/rsiwdv.h` declares.
//!
//! Every call checks that the QP/CQ belongs to rsiw (`EOPNOTSUPP` otherwise)
//! and applies the checks of `ibv_post_send`. Do not call a post between
//! `ibv_wr_start` and `ibv_wr_complete` on the same QP (both take the SQ).

use crate::cq::{self, Cq};
use crate::qp::Qp;
use crate::{sys, wr};
use core::ffi::c_int;
use rsiw_abi::cqe::CQE_WITH_IMM;
use rsiw_abi::wqe::{Sge, SqOpcode, Sqe, MAX_SGE};

const EINVAL: c_int = sys::EINVAL as c_int;
const EOPNOTSUPP: c_int = sys::EOPNOTSUPP as c_int;

/// A work completion with the full 64-bit immediate (`struct rsiwdv_wc`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Wc {
    /// What `ibv_poll_cq` reports (its `imm_data` is the low 32 bits of
    /// `imm64`, in network byte order).
    pub wc: sys::ibv_wc,
    /// RFC 7306 §6 Immediate Data, host order; valid with `IBV_WC_WITH_IMM`.
    pub imm64: u64,
}

/// An atomic SQE: one 8-byte local buffer receives the original value
/// (RFC 7306 §5.2.2); `atomic` is `[swap or add, compare, swap mask,
/// compare or add mask]` (`rsiw_abi::wqe::Sqe::atomic`).
/// SQE flags of the verbs `flags` a direct-verbs post accepts: signaled,
/// fence, solicited (no inline: the payload is always SGEs).
fn dv_flags(flags: u32) -> Result<u8, c_int> {
    if flags & sys::ibv_send_flags_IBV_SEND_INLINE != 0 {
        return Err(EINVAL);
    }
    wr::sq_flags(flags)
}

fn atomic_sqe(
    op: SqOpcode,
    wr_id: u64,
    local: Sge,
    remote: (u64, u32),
    atomic: [u64; 4],
    flags: u32,
) -> Result<Sqe, c_int> {
    let mut sqe = Sqe {
        wr_id,
        opcode: op as u8,
        flags: dv_flags(flags)?,
        remote_addr: remote.0,
        rkey: remote.1,
        num_sge: 1,
        ..Default::default()
    };
    if !sqe.set_sge(0, local) {
        return Err(EINVAL);
    }
    sqe.set_atomic(atomic);
    Ok(sqe)
}

/// The SQE of a Masked Fetch and Add: at the target, each field of `add`
/// delimited by the set bits of `mask` (a set bit ends a field: no carry out
/// of it) is added to the 64-bit word at `raddr`.
pub fn masked_fetch_add_sqe(
    wr_id: u64,
    local: Sge,
    raddr: u64,
    rkey: u32,
    add: u64,
    mask: u64,
    flags: u32,
) -> Result<Sqe, c_int> {
    atomic_sqe(
        SqOpcode::MaskedFetchAdd,
        wr_id,
        local,
        (raddr, rkey),
        [add, 0, 0, mask],
        flags,
    )
}

/// The SQE of a Masked Compare and Swap: if `(word ^ compare) & compare_mask
/// == 0`, the target word becomes `(word & !swap_mask) | (swap & swap_mask)`.
#[allow(clippy::too_many_arguments)]
pub fn masked_cmp_swp_sqe(
    wr_id: u64,
    local: Sge,
    raddr: u64,
    rkey: u32,
    compare: u64,
    compare_mask: u64,
    swap: u64,
    swap_mask: u64,
    flags: u32,
) -> Result<Sqe, c_int> {
    atomic_sqe(
        SqOpcode::MaskedCmpSwap,
        wr_id,
        local,
        (raddr, rkey),
        [swap, compare, swap_mask, compare_mask],
        flags,
    )
}

/// The SQE of an RDMA Write of `sges` followed by Immediate Data `imm`
/// (RFC 7306 §6, all 64 bits on the wire, most significant byte first).
pub fn write_imm64_sqe(
    wr_id: u64,
    sges: &[Sge],
    raddr: u64,
    rkey: u32,
    imm: u64,
    flags: u32,
) -> Result<Sqe, c_int> {
    if sges.len() > MAX_SGE {
        return Err(EINVAL);
    }
    let mut sqe = Sqe {
        wr_id,
        opcode: SqOpcode::WriteImm as u8,
        flags: dv_flags(flags)?,
        remote_addr: raddr,
        rkey,
        ex: imm,
        num_sge: sges.len() as u8,
        ..Default::default()
    };
    for (i, s) in sges.iter().enumerate() {
        if !sqe.set_sge(i, *s) {
            return Err(EINVAL);
        }
    }
    Ok(sqe)
}

/// Posts `sqe` on `qp`: 0 or an errno.
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp` of any provider.
pub unsafe fn post(qp: *mut sys::ibv_qp, sqe: Result<Sqe, c_int>) -> c_int {
    // SAFETY: per the requirements.
    let Some(qp) = (unsafe { Qp::ours(qp) }) else {
        return EOPNOTSUPP;
    };
    match sqe {
        Ok(s) => qp.post_sqe(&s),
        Err(e) => e,
    }
}

/// Polls up to `n` completions into `wc` with their 64-bit immediates: the
/// count, or a negative errno (`-EOPNOTSUPP` for another provider's CQ).
///
/// # Safety
///
/// `cq` is NULL or a live `ibv_cq`; `wc` is valid for `n` entries.
pub unsafe fn poll_cq(cq: *mut sys::ibv_cq, n: c_int, wc: *mut Wc) -> c_int {
    // SAFETY: per the requirements.
    let Some(cq) = (unsafe { Cq::ours(cq) }) else {
        return -EOPNOTSUPP;
    };
    if wc.is_null() && n != 0 {
        return -EINVAL;
    }
    cq.poll(n, |i, c| {
        let w = Wc {
            wc: cq::to_wc(c),
            imm64: if c.flags & CQE_WITH_IMM != 0 { c.ex } else { 0 },
        };
        // SAFETY: i < n (the caller's array size).
        unsafe { wc.add(i).write(w) }
    })
}

fn sge(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

/// C: `rsiwdv_post_masked_fetch_add` (see `include/rsiwdv.h`).
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_post_masked_fetch_add(
    qp: *mut sys::ibv_qp,
    wr_id: u64,
    laddr: u64,
    lkey: u32,
    raddr: u64,
    rkey: u32,
    add: u64,
    mask: u64,
    flags: u32,
) -> c_int {
    let s = masked_fetch_add_sqe(wr_id, sge(laddr, 8, lkey), raddr, rkey, add, mask, flags);
    // SAFETY: forwarded requirement.
    unsafe { post(qp, s) }
}

/// C: `rsiwdv_post_masked_cmp_swp` (see `include/rsiwdv.h`).
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_post_masked_cmp_swp(
    qp: *mut sys::ibv_qp,
    wr_id: u64,
    laddr: u64,
    lkey: u32,
    raddr: u64,
    rkey: u32,
    compare: u64,
    compare_mask: u64,
    swap: u64,
    swap_mask: u64,
    flags: u32,
) -> c_int {
    let s = masked_cmp_swp_sqe(
        wr_id,
        sge(laddr, 8, lkey),
        raddr,
        rkey,
        compare,
        compare_mask,
        swap,
        swap_mask,
        flags,
    );
    // SAFETY: forwarded requirement.
    unsafe { post(qp, s) }
}

/// C: `rsiwdv_post_write_imm64` (see `include/rsiwdv.h`).
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`; `sg_list` is valid for `num_sge` entries.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_post_write_imm64(
    qp: *mut sys::ibv_qp,
    wr_id: u64,
    sg_list: *const sys::ibv_sge,
    num_sge: c_int,
    raddr: u64,
    rkey: u32,
    imm: u64,
    flags: u32,
) -> c_int {
    let Ok(n) = usize::try_from(num_sge) else {
        return EINVAL;
    };
    if n > MAX_SGE || (n > 0 && sg_list.is_null()) {
        return EINVAL;
    }
    let mut sges = [Sge::default(); MAX_SGE];
    if n > 0 {
        // SAFETY: valid for num_sge entries per the requirements.
        let list = unsafe { core::slice::from_raw_parts(sg_list, n) };
        for (d, s) in sges.iter_mut().zip(list) {
            *d = sge(s.addr, s.length, s.lkey);
        }
    }
    let s = write_imm64_sqe(wr_id, &sges[..n], raddr, rkey, imm, flags);
    // SAFETY: forwarded requirement.
    unsafe { post(qp, s) }
}

/// C: `rsiwdv_poll_cq` (see `include/rsiwdv.h`).
///
/// # Safety
///
/// `cq` is NULL or a live `ibv_cq`; `wc` is valid for `n` entries.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_poll_cq(cq: *mut sys::ibv_cq, n: c_int, wc: *mut Wc) -> c_int {
    // SAFETY: forwarded requirement.
    unsafe { poll_cq(cq, n, wc) }
}

/// `struct rsiwdv_ring`: one of a QP's rings as the application sees it.
#[repr(C)]
pub struct RingInfo {
    /// The mapping: `struct rsiw_ring_header`, then the slots.
    pub buf: *mut core::ffi::c_void,
    /// Slots (a power of two).
    pub entries: u32,
    /// Bytes per slot.
    pub stride: u32,
}

/// `struct rsiwdv_qp`.
#[repr(C)]
pub struct QpInfo {
    /// The send ring.
    pub sq: RingInfo,
    /// The receive ring (`buf` NULL with an SRQ).
    pub rq: RingInfo,
}

fn ring_info(r: Option<&crate::ring::Ring>) -> RingInfo {
    r.map_or(
        RingInfo {
            buf: core::ptr::null_mut(),
            entries: 0,
            stride: 0,
        },
        |r| RingInfo {
            buf: r.base().cast(),
            entries: r.entries(),
            stride: u32::try_from(r.stride()).unwrap_or(0),
        },
    )
}

/// C: `rsiwdv_query_qp`: where `qp`'s rings are mapped, for applications
/// that drive them directly (as `mlx5dv_init_obj` gives an mlx5 QP's
/// buffers); 0, or `EOPNOTSUPP` if `qp` is not rsiw's.
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_query_qp(qp: *mut sys::ibv_qp, out: *mut QpInfo) -> c_int {
    // SAFETY: forwarded requirement.
    let Some(q) = (unsafe { Qp::ours(qp) }) else {
        return sys::EOPNOTSUPP as c_int;
    };
    if out.is_null() {
        return EINVAL;
    }
    let info = QpInfo {
        sq: ring_info(q.sq.as_ref()),
        rq: ring_info(q.rq.as_ref()),
    };
    // SAFETY: `out` is writable (forwarded requirement).
    unsafe { out.write(info) };
    0
}

/// C: `rsiwdv_ring_sq_doorbell`: tells the kernel the SQ has new SQEs (after
/// writing them and the producer index directly); 0 or an errno.
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_ring_sq_doorbell(qp: *mut sys::ibv_qp) -> c_int {
    // SAFETY: forwarded requirement.
    match unsafe { Qp::ours(qp) } {
        Some(q) => q.ring_doorbell(),
        None => sys::EOPNOTSUPP as c_int,
    }
}

/// C: `rsiwdv_is_rsiw_qp`: 1 if `qp` belongs to rsiw, else 0.
///
/// # Safety
///
/// `qp` is NULL or a live `ibv_qp`.
#[no_mangle]
pub unsafe extern "C" fn rsiwdv_is_rsiw_qp(qp: *mut sys::ibv_qp) -> c_int {
    // SAFETY: forwarded requirement.
    c_int::from(unsafe { Qp::ours(qp) }.is_some())
}

#[cfg(test)]
mod test {
    use super::*;
    use rsiw_abi::wqe::SQE_SIGNALED;

    const LIM: wr::Limits = wr::Limits {
        max_sge: 4,
        max_inline: 64,
    };

    #[test]
    fn masked_fetch_add_puts_mask_where_the_kernel_reads_it() {
        let s = masked_fetch_add_sqe(
            7,
            sge(0x1000, 8, 3),
            0x8000,
            0x1234_5600,
            5,
            0x8000_0000,
            sys::ibv_send_flags_IBV_SEND_SIGNALED,
        )
        .unwrap();
        assert_eq!(s.opcode, SqOpcode::MaskedFetchAdd as u8);
        assert_eq!(s.atomic(), [5, 0, 0, 0x8000_0000]);
        assert_eq!(
            (s.remote_addr, s.rkey, s.flags, s.num_sge),
            (0x8000, 0x1234_5600, SQE_SIGNALED, 1)
        );
        assert_eq!(s.sge(0), Some(sge(0x1000, 8, 3)));
        assert_eq!(wr::check_sqe(&s, LIM), Ok(()));
    }

    #[test]
    fn masked_cmp_swp_operand_order() {
        let s = masked_cmp_swp_sqe(1, sge(0, 8, 1), 8, 2, 0xc, 0xcc, 0x5, 0x55, 0).unwrap();
        assert_eq!(s.opcode, SqOpcode::MaskedCmpSwap as u8);
        assert_eq!(s.atomic(), [0x5, 0xc, 0x55, 0xcc]);
        assert_eq!(wr::check_sqe(&s, LIM), Ok(()));
    }

    #[test]
    fn atomic_result_buffer_must_be_8_bytes() {
        let s = masked_fetch_add_sqe(1, sge(0, 4, 1), 8, 2, 1, 0, 0).unwrap();
        assert_eq!(wr::check_sqe(&s, LIM), Err(EINVAL));
    }

    #[test]
    fn write_imm64_keeps_all_64_bits() {
        let s = write_imm64_sqe(
            2,
            &[sge(0x10, 100, 4), sge(0x200, 28, 4)],
            0x4000,
            9,
            0x0102_0304_0506_0708,
            0,
        )
        .unwrap();
        assert_eq!(s.opcode, SqOpcode::WriteImm as u8);
        assert_eq!(s.imm(), 0x0102_0304_0506_0708);
        assert_eq!(s.num_sge, 2);
        assert_eq!(s.sge(1), Some(sge(0x200, 28, 4)));
        assert!(write_imm64_sqe(2, &[sge(0, 1, 1); MAX_SGE + 1], 0, 0, 0, 0).is_err());
        assert_eq!(
            write_imm64_sqe(2, &[], 0, 0, 0, sys::ibv_send_flags_IBV_SEND_IP_CSUM).unwrap_err(),
            EINVAL
        );
    }

    #[test]
    fn wc_layout_matches_the_header() {
        // include/rsiwdv.h: struct ibv_wc (48 bytes), then uint64_t imm64.
        assert_eq!(core::mem::offset_of!(Wc, imm64), 48);
        assert_eq!(core::mem::size_of::<Wc>(), 56);
    }

    #[test]
    fn foreign_or_null_objects_refused() {
        // SAFETY: NULL is allowed.
        unsafe {
            assert_eq!(
                rsiwdv_post_masked_fetch_add(core::ptr::null_mut(), 0, 0, 0, 0, 0, 0, 0, 0),
                EOPNOTSUPP
            );
            assert_eq!(
                rsiwdv_poll_cq(core::ptr::null_mut(), 1, core::ptr::null_mut()),
                -EOPNOTSUPP
            );
            assert_eq!(rsiwdv_is_rsiw_qp(core::ptr::null_mut()), 0);
        }
    }
}

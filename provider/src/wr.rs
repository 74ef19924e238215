// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Work requests into ring elements: `ibv_send_wr` → SQE, `ibv_recv_wr` → RQE
//! (`rsiw_abi::wqe`), with the checks the verbs API promises to report at post
//! time.

use crate::sys;
use core::ffi::c_int;
use rsiw_abi::wqe::{
    Rqe, Sge, SqOpcode, Sqe, MAX_SGE, SQE_FENCE, SQE_INLINE, SQE_SIGNALED, SQE_SOLICITED,
};

const EINVAL: c_int = sys::EINVAL as c_int;
const EOPNOTSUPP: c_int = sys::EOPNOTSUPP as c_int;

/// The SQE opcode of a verbs send opcode; the errno for what rsiw cannot do.
pub fn sq_opcode(op: sys::ibv_wr_opcode) -> Result<SqOpcode, c_int> {
    Ok(match op {
        sys::ibv_wr_opcode_IBV_WR_SEND => SqOpcode::Send,
        sys::ibv_wr_opcode_IBV_WR_SEND_WITH_INV => SqOpcode::SendInv,
        sys::ibv_wr_opcode_IBV_WR_RDMA_WRITE => SqOpcode::Write,
        sys::ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM => SqOpcode::WriteImm,
        sys::ibv_wr_opcode_IBV_WR_RDMA_READ => SqOpcode::Read,
        sys::ibv_wr_opcode_IBV_WR_LOCAL_INV => SqOpcode::LocalInv,
        sys::ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP => SqOpcode::CmpSwap,
        sys::ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD => SqOpcode::FetchAdd,
        sys::ibv_wr_opcode_IBV_WR_BIND_MW => SqOpcode::BindMw,
        // No RFC encoding for a Send with Immediate Data (RFC 7306 has only
        // RDMA Write with Immediate Data).
        sys::ibv_wr_opcode_IBV_WR_SEND_WITH_IMM => return Err(EOPNOTSUPP),
        _ => return Err(EINVAL),
    })
}

/// SQE flags of verbs send flags; `EINVAL` for flags rsiw does not implement.
pub fn sq_flags(flags: u32) -> Result<u8, c_int> {
    let known = sys::ibv_send_flags_IBV_SEND_FENCE
        | sys::ibv_send_flags_IBV_SEND_SIGNALED
        | sys::ibv_send_flags_IBV_SEND_SOLICITED
        | sys::ibv_send_flags_IBV_SEND_INLINE;
    if flags & !known != 0 {
        return Err(EINVAL);
    }
    let mut f = 0;
    for (verbs, abi) in [
        (sys::ibv_send_flags_IBV_SEND_FENCE, SQE_FENCE),
        (sys::ibv_send_flags_IBV_SEND_SIGNALED, SQE_SIGNALED),
        (sys::ibv_send_flags_IBV_SEND_SOLICITED, SQE_SOLICITED),
        (sys::ibv_send_flags_IBV_SEND_INLINE, SQE_INLINE),
    ] {
        if flags & verbs != 0 {
            f |= abi;
        }
    }
    Ok(f)
}

/// Queue limits a work request is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// SGEs per WR (the QP's granted `max_send_sge` / `max_recv_sge`).
    pub max_sge: u32,
    /// Inline bytes per send WR.
    pub max_inline: u32,
}

/// Fills the SGEs (or, with [`SQE_INLINE`], copies the data they point to).
///
/// # Safety
///
/// With [`SQE_INLINE`], every SGE must describe readable memory (the verbs
/// contract for inline sends: the buffers are read during the post).
pub unsafe fn set_payload(sqe: &mut Sqe, sges: &[sys::ibv_sge], lim: Limits) -> Result<(), c_int> {
    if sqe.flags & SQE_INLINE != 0 {
        let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        if total > u64::from(lim.max_inline) {
            return Err(EINVAL);
        }
        for s in sges.iter().filter(|s| s.length != 0) {
            // SAFETY: readable per the requirements; length ≤ max_inline.
            let data = unsafe {
                core::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
            };
            if !sqe.push_inline(data) {
                return Err(EINVAL);
            }
        }
        return Ok(());
    }
    if sges.len() > lim.max_sge as usize || sges.len() > MAX_SGE {
        return Err(EINVAL);
    }
    for (i, s) in sges.iter().enumerate() {
        let sge = Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
        if !sqe.set_sge(i, sge) {
            return Err(EINVAL);
        }
    }
    sqe.num_sge = sges.len() as u8;
    Ok(())
}

/// The checks the kernel applies to every SQE (`Sqe::validate`), reported at
/// post time as the verbs API expects: `EINVAL`.
pub fn check_sqe(sqe: &Sqe, lim: Limits) -> Result<(), c_int> {
    sqe.validate(lim.max_sge, lim.max_inline)
        .map(|_| ())
        .map_err(|_| EINVAL)
}

/// Fills a Bind MW SQE (`rsiw_abi::wqe::SqOpcode::BindMw`): the window's
/// current rkey, its new one, the range of the region as SGE 0 and the
/// rights; `EINVAL` without a window or region, or for a range longer than
/// an SGE can say.
///
/// # Safety
///
/// `mw` and `info.mr` must be null or live objects of this context.
pub unsafe fn set_bind(
    sqe: &mut Sqe,
    mw: *const sys::ibv_mw,
    rkey: u32,
    info: &sys::ibv_mw_bind_info,
) -> Result<(), c_int> {
    if mw.is_null() || info.mr.is_null() {
        return Err(EINVAL);
    }
    let length = u32::try_from(info.length).map_err(|_| EINVAL)?;
    // SAFETY: live objects per the requirements.
    let (cur, lkey) = unsafe { ((*mw).rkey, (*info.mr).lkey) };
    sqe.rkey = cur;
    sqe.set_inv_rkey(rkey);
    sqe.set_mw_access(info.mw_access_flags);
    if !sqe.set_sge(
        0,
        Sge {
            addr: info.addr,
            length,
            lkey,
        },
    ) {
        return Err(EINVAL);
    }
    sqe.num_sge = 1;
    Ok(())
}

/// The SQE for one verbs send work request.
///
/// # Safety
///
/// `wr.sg_list` must be valid for `wr.num_sge` entries, and with
/// `IBV_SEND_INLINE` their buffers readable (the verbs contract).
pub unsafe fn sqe_from_wr(wr: &sys::ibv_send_wr, lim: Limits) -> Result<Sqe, c_int> {
    let opcode = sq_opcode(wr.opcode)?;
    let mut sqe = Sqe {
        wr_id: wr.wr_id,
        opcode: opcode as u8,
        flags: sq_flags(wr.send_flags)?,
        ..Default::default()
    };
    let n = usize::try_from(wr.num_sge).map_err(|_| EINVAL)?;
    let sges = if n == 0 || wr.sg_list.is_null() {
        &[][..]
    } else {
        if n > MAX_SGE {
            return Err(EINVAL);
        }
        // SAFETY: valid for num_sge entries per the requirements.
        unsafe { core::slice::from_raw_parts(wr.sg_list, n) }
    };
    // SAFETY: union members of plain integers; which one is meant follows
    // from the opcode, as in the verbs API.
    unsafe {
        match opcode {
            SqOpcode::SendInv | SqOpcode::LocalInv => {
                sqe.set_inv_rkey(wr.__bindgen_anon_1.invalidate_rkey)
            }
            SqOpcode::WriteImm => {
                sqe.set_imm(u64::from(u32::from_be(wr.__bindgen_anon_1.imm_data)))
            }
            _ => {}
        }
        match opcode {
            SqOpcode::Write | SqOpcode::WriteImm | SqOpcode::Read => {
                sqe.remote_addr = wr.wr.rdma.remote_addr;
                sqe.rkey = wr.wr.rdma.rkey;
            }
            SqOpcode::CmpSwap | SqOpcode::FetchAdd => {
                let a = wr.wr.atomic;
                sqe.remote_addr = a.remote_addr;
                sqe.rkey = a.rkey;
                // [swap or add, compare, masks] (rsiw_abi::wqe::Sqe::atomic).
                sqe.set_atomic(if opcode == SqOpcode::CmpSwap {
                    [a.swap, a.compare_add, 0, 0]
                } else {
                    [a.compare_add, 0, 0, 0]
                });
            }
            _ => {}
        }
    }
    if opcode == SqOpcode::BindMw {
        // SAFETY: the bind member for this opcode; the verbs contract keeps
        // the window and region alive during the post.
        unsafe {
            let b = wr.__bindgen_anon_2.bind_mw;
            set_bind(&mut sqe, b.mw, b.rkey, &b.bind_info)?;
        }
    } else {
        // SAFETY: forwarded requirement.
        unsafe { set_payload(&mut sqe, sges, lim)? };
    }
    check_sqe(&sqe, lim)?;
    Ok(sqe)
}

/// The RQE for one verbs receive work request.
///
/// # Safety
///
/// `wr.sg_list` must be valid for `wr.num_sge` entries.
pub unsafe fn rqe_from_wr(wr: &sys::ibv_recv_wr, max_sge: u32) -> Result<Rqe, c_int> {
    let n = usize::try_from(wr.num_sge).map_err(|_| EINVAL)?;
    if n > MAX_SGE || n > max_sge as usize {
        return Err(EINVAL);
    }
    let mut rqe = Rqe {
        wr_id: wr.wr_id,
        num_sge: n as u8,
        ..Default::default()
    };
    if n > 0 {
        if wr.sg_list.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: valid for num_sge entries per the requirements.
        let sges = unsafe { core::slice::from_raw_parts(wr.sg_list, n) };
        for (i, s) in sges.iter().enumerate() {
            rqe.set_sge(
                i,
                Sge {
                    addr: s.addr,
                    length: s.length,
                    lkey: s.lkey,
                },
            );
        }
    }
    Ok(rqe)
}

#[cfg(test)]
mod test {
    use super::*;
    use core::ptr::null_mut;

    const LIM: Limits = Limits {
        max_sge: 4,
        max_inline: 64,
    };

    fn sge(addr: u64, length: u32, lkey: u32) -> sys::ibv_sge {
        sys::ibv_sge { addr, length, lkey }
    }

    fn wr(opcode: sys::ibv_wr_opcode, flags: u32, sg: &mut [sys::ibv_sge]) -> sys::ibv_send_wr {
        sys::ibv_send_wr {
            wr_id: 42,
            next: null_mut(),
            sg_list: sg.as_mut_ptr(),
            num_sge: sg.len() as c_int,
            opcode,
            send_flags: flags,
            ..Default::default()
        }
    }

    #[test]
    fn write_carries_remote_and_sges() {
        let mut sg = [sge(0x1000, 100, 7), sge(0x2000, 50, 8)];
        let mut w = wr(
            sys::ibv_wr_opcode_IBV_WR_RDMA_WRITE,
            sys::ibv_send_flags_IBV_SEND_SIGNALED,
            &mut sg,
        );
        w.wr.rdma.remote_addr = 0xabcd_0000;
        w.wr.rdma.rkey = 0x1234_5600;
        // SAFETY: sg_list points at `sg`.
        let s = unsafe { sqe_from_wr(&w, LIM) }.unwrap();
        assert_eq!(s.wr_id, 42);
        assert_eq!(s.opcode, SqOpcode::Write as u8);
        assert_eq!(s.flags, SQE_SIGNALED);
        assert_eq!(s.remote_addr, 0xabcd_0000);
        assert_eq!(s.rkey, 0x1234_5600);
        assert_eq!(s.num_sge, 2);
        assert_eq!(
            s.sge(1),
            Some(Sge {
                addr: 0x2000,
                length: 50,
                lkey: 8
            })
        );
    }

    #[test]
    fn inline_copies_bytes() {
        let a = *b"hello ";
        let b = *b"world";
        let mut sg = [sge(a.as_ptr() as u64, 6, 0), sge(b.as_ptr() as u64, 5, 0)];
        let w = wr(
            sys::ibv_wr_opcode_IBV_WR_SEND,
            sys::ibv_send_flags_IBV_SEND_INLINE,
            &mut sg,
        );
        // SAFETY: sg_list points at `sg`, whose buffers are live.
        let s = unsafe { sqe_from_wr(&w, LIM) }.unwrap();
        assert_eq!(s.flags, SQE_INLINE);
        assert_eq!(s.inline_data(), Some(&b"hello world"[..]));
        assert_eq!(s.num_sge, 0);
    }

    #[test]
    fn inline_over_limit_rejected() {
        let buf = [0u8; 65];
        let mut sg = [sge(buf.as_ptr() as u64, 65, 0)];
        let w = wr(
            sys::ibv_wr_opcode_IBV_WR_SEND,
            sys::ibv_send_flags_IBV_SEND_INLINE,
            &mut sg,
        );
        // SAFETY: as above.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
    }

    #[test]
    fn send_with_imm_unsupported_and_unknown_rejected() {
        let w = wr(sys::ibv_wr_opcode_IBV_WR_SEND_WITH_IMM, 0, &mut []);
        // SAFETY: no SGEs.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EOPNOTSUPP));
        // A bind without a window is refused at post time.
        let w = wr(sys::ibv_wr_opcode_IBV_WR_BIND_MW, 0, &mut []);
        // SAFETY: no SGEs.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
        let w = wr(
            sys::ibv_wr_opcode_IBV_WR_SEND,
            sys::ibv_send_flags_IBV_SEND_IP_CSUM,
            &mut [],
        );
        // SAFETY: no SGEs.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
    }

    #[test]
    fn bind_mw_fields() {
        let mut mr = sys::ibv_mr {
            lkey: 0x1234_5601,
            ..Default::default()
        };
        let mut mw = sys::ibv_mw {
            rkey: 0x0000_4207,
            ..Default::default()
        };
        let mut w = wr(
            sys::ibv_wr_opcode_IBV_WR_BIND_MW,
            sys::ibv_send_flags_IBV_SEND_SIGNALED,
            &mut [],
        );
        let access = sys::ibv_access_flags_IBV_ACCESS_REMOTE_READ;
        w.__bindgen_anon_2.bind_mw = sys::ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
            mw: &mut mw,
            rkey: 0x0000_4208,
            bind_info: sys::ibv_mw_bind_info {
                mr: &mut mr,
                addr: 0x7000_0010,
                length: 4096,
                mw_access_flags: access,
            },
        };
        // SAFETY: window and region are live locals.
        let s = unsafe { sqe_from_wr(&w, LIM) }.unwrap();
        assert_eq!(s.opcode, SqOpcode::BindMw as u8);
        assert_eq!(
            (s.rkey, s.inv_rkey(), s.mw_access()),
            (0x4207, 0x4208, access)
        );
        assert_eq!(s.num_sge, 1);
        assert_eq!(
            s.sge(0),
            Some(Sge {
                addr: 0x7000_0010,
                length: 4096,
                lkey: 0x1234_5601
            })
        );
        assert_eq!(s.flags, SQE_SIGNALED);
        // A range no SGE can carry.
        // Writing a union field is safe.
        w.__bindgen_anon_2.bind_mw.bind_info.length = 1 << 32;
        // SAFETY: the WR and its union member are as written above.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
    }

    #[test]
    fn too_many_sges_rejected() {
        let mut sg = [sge(0, 1, 1); 5];
        let w = wr(sys::ibv_wr_opcode_IBV_WR_SEND, 0, &mut sg);
        // SAFETY: sg_list points at `sg`.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
    }

    #[test]
    fn read_takes_one_sge() {
        let mut sg = [sge(0, 8, 1), sge(8, 8, 1)];
        let w = wr(sys::ibv_wr_opcode_IBV_WR_RDMA_READ, 0, &mut sg);
        // SAFETY: sg_list points at `sg`.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
        let w = wr(sys::ibv_wr_opcode_IBV_WR_RDMA_READ, 0, &mut sg[..1]);
        // SAFETY: sg_list points at `sg`.
        assert!(unsafe { sqe_from_wr(&w, LIM) }.is_ok());
    }

    #[test]
    fn write_imm_and_send_inv_fields() {
        let mut w = wr(sys::ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM, 0, &mut []);
        w.__bindgen_anon_1.imm_data = u32::from_ne_bytes([1, 2, 3, 4]);
        // SAFETY: no SGEs.
        let s = unsafe { sqe_from_wr(&w, LIM) }.unwrap();
        assert_eq!(s.imm(), 0x0102_0304);
        let mut w = wr(sys::ibv_wr_opcode_IBV_WR_SEND_WITH_INV, 0, &mut []);
        w.__bindgen_anon_1.invalidate_rkey = 0x77;
        // SAFETY: no SGEs.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }.unwrap().inv_rkey(), 0x77);
    }

    #[test]
    fn atomic_operands_in_abi_order() {
        let mut sg = [sge(0x100, 8, 3)];
        let mut w = wr(sys::ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP, 0, &mut sg);
        w.wr.atomic.compare_add = 5;
        w.wr.atomic.swap = 9;
        w.wr.atomic.remote_addr = 0x8000;
        // SAFETY: sg_list points at `sg`.
        let s = unsafe { sqe_from_wr(&w, LIM) }.unwrap();
        assert_eq!(s.atomic(), [9, 5, 0, 0]);
        assert_eq!(s.remote_addr, 0x8000);
        sg[0].length = 4;
        let w = wr(sys::ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD, 0, &mut sg);
        // SAFETY: sg_list points at `sg`.
        assert_eq!(unsafe { sqe_from_wr(&w, LIM) }, Err(EINVAL));
    }

    #[test]
    fn recv_sges() {
        let mut sg = [sge(0x10, 32, 4)];
        let w = sys::ibv_recv_wr {
            wr_id: 5,
            next: null_mut(),
            sg_list: sg.as_mut_ptr(),
            num_sge: 1,
        };
        // SAFETY: sg_list points at `sg`.
        let r = unsafe { rqe_from_wr(&w, 1) }.unwrap();
        assert_eq!((r.wr_id, r.num_sge), (5, 1));
        assert_eq!(
            r.sge(0),
            Some(Sge {
                addr: 0x10,
                length: 32,
                lkey: 4
            })
        );
        // SAFETY: as above.
        assert_eq!(unsafe { rqe_from_wr(&w, 0) }, Err(EINVAL));
    }
}

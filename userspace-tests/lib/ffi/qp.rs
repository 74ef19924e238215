// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Queue pairs: scatter/gather lists, work requests, posting.

use super::*;
use std::io::{Error, Result};
use std::rc::Rc;

/// One scatter/gather element: `len` bytes at `offset` in `mr`.
pub struct Sge<'a> {
    /// The region.
    pub mr: &'a Mr,
    /// Offset in the region.
    pub offset: usize,
    /// Length.
    pub len: u32,
}

pub(super) fn sge_list(sges: &[Sge]) -> Result<Vec<ibv_sge>> {
    sges.iter()
        .map(|s| {
            s.mr.bounds(s.offset, s.len as usize)?;
            Ok(ibv_sge {
                addr: s.mr.addr() + s.offset as u64,
                length: s.len,
                lkey: s.mr.lkey(),
            })
        })
        .collect()
}

pub(super) fn recv_wr(wr_id: u64, list: &mut [ibv_sge]) -> Result<ibv_recv_wr> {
    Ok(ibv_recv_wr {
        wr_id,
        next: std::ptr::null_mut(),
        sg_list: if list.is_empty() {
            std::ptr::null_mut()
        } else {
            list.as_mut_ptr()
        },
        num_sge: i32::try_from(list.len()).map_err(|_| Error::other("too many SGEs"))?,
    })
}

/// What a send-queue WR does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// Send.
    Send,
    /// Send with Invalidate of the peer's `rkey`.
    SendInv(u32),
    /// RDMA Write to the peer's `(addr, rkey)`.
    Write(u64, u32),
    /// RDMA Read from the peer's `(addr, rkey)`.
    Read(u64, u32),
    /// RDMA Write with immediate data `imm` (as posted, network order) to `(addr, rkey)`.
    WriteImm(u64, u32, u32),
    /// FetchAdd of `add` on the peer's word at `(addr, rkey)` (RFC 7306 §5.1.1).
    FetchAdd(u64, u32, u64),
    /// CmpSwap `(addr, rkey, compare, swap)` (RFC 7306 §5.1.2).
    CmpSwap(u64, u32, u64, u64),
}

/// What a Bind MW work request binds: `len` bytes at `offset` of `mr`, under `rkey`.
pub struct Bind<'a> {
    /// The window.
    pub mw: &'a Mw,
    /// The region it opens.
    pub mr: &'a Mr,
    /// Offset in the region.
    pub offset: usize,
    /// Length.
    pub len: usize,
    /// Remote access rights of the window.
    pub access: u32,
    /// The key the window gets (see [`Mw::next_rkey`]).
    pub rkey: u32,
}

/// `IBV_SEND_SIGNALED`.
pub const SIGNALED: u32 = ibv_send_flags_IBV_SEND_SIGNALED;
/// `IBV_SEND_SOLICITED`.
pub const SOLICITED: u32 = ibv_send_flags_IBV_SEND_SOLICITED;

struct QpInner {
    id: CmId,
    _cq: Rc<Cq>,
    _pd: Pd,
    _srq: Option<Rc<Srq>>,
}

impl Drop for QpInner {
    fn drop(&mut self) {
        // SAFETY: the QP was created on this ID by rdma_create_qp and is destroyed once.
        unsafe { rdma_destroy_qp(self.id.raw()) };
    }
}

/// An RC QP created with rdma_create_qp on a CM ID.
pub struct Qp(QpInner);

impl Qp {
    /// Posts a Bind MW work request (signaled).
    pub fn post_bind(&self, wr_id: u64, b: &Bind) -> Result<()> {
        b.mr.bounds(b.offset, b.len)?;
        let mut wr = ibv_send_wr {
            wr_id,
            opcode: ibv_wr_opcode_IBV_WR_BIND_MW,
            send_flags: SIGNALED,
            ..Default::default()
        };
        wr.__bindgen_anon_2.bind_mw = ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
            mw: b.mw.mw,
            rkey: b.rkey,
            bind_info: ibv_mw_bind_info {
                mr: b.mr.mr,
                addr: b.mr.addr() + b.offset as u64,
                length: b.len as u64,
                mw_access_flags: b.access,
            },
        };
        let mut bad = std::ptr::null_mut();
        // SAFETY: `wr` lives across the call; the MW and MR outlive the bind (owners keep them).
        check(
            unsafe { rsiw_shim_post_send(self.raw(), &mut wr, &mut bad) },
            "ibv_post_send(BIND_MW)",
        )
    }

    /// Creates the ID's QP: send and receive CQ `cq`, receives from `srq` if given.
    pub fn new(id: &CmId, pd: &Pd, cq: &Rc<Cq>, srq: Option<&Rc<Srq>>) -> Result<Self> {
        Self::with_sq(id, pd, cq, srq, 64)
    }

    /// As `new`, with `max_send_wr` send WRs.
    pub fn with_sq(
        id: &CmId,
        pd: &Pd,
        cq: &Rc<Cq>,
        srq: Option<&Rc<Srq>>,
        max_send_wr: u32,
    ) -> Result<Self> {
        let mut a = ibv_qp_init_attr {
            send_cq: cq.cq,
            recv_cq: cq.cq,
            srq: srq.map_or(std::ptr::null_mut(), |s| s.srq),
            cap: ibv_qp_cap {
                max_send_wr,
                max_recv_wr: 64,
                max_send_sge: 6,
                max_recv_sge: 6,
                max_inline_data: 0,
            },
            qp_type: ibv_qp_type_IBV_QPT_RC,
            ..Default::default()
        };
        // SAFETY: live ID, PD, CQ and SRQ, kept alive by the Rcs in QpInner.
        check(
            unsafe { rdma_create_qp(id.raw(), pd.0.pd, &mut a) },
            "rdma_create_qp",
        )?;
        Ok(Qp(QpInner {
            id: id.clone(),
            _cq: cq.clone(),
            _pd: pd.clone(),
            _srq: srq.cloned(),
        }))
    }

    fn raw(&self) -> *mut ibv_qp {
        // SAFETY: live ID with a QP.
        unsafe { (*self.0.id.raw()).qp }
    }

    /// Moves the QP to ERROR (`ibv_modify_qp`, IBV_QPS_ERR): its WRs flush in this call.
    pub fn set_error(&self) -> Result<()> {
        let mut a = ibv_qp_attr {
            qp_state: ibv_qp_state_IBV_QPS_ERR,
            ..Default::default()
        };
        // SAFETY: live QP; `a` is valid for the call.
        check(
            unsafe { ibv_modify_qp(self.raw(), &mut a, ibv_qp_attr_mask_IBV_QP_STATE as i32) },
            "ibv_modify_qp(ERR)",
        )
    }

    /// Sets the QP's remote access rights (`IBV_QP_ACCESS_FLAGS`, any state).
    pub fn set_access(&self, access: u32) -> Result<()> {
        let mut a = ibv_qp_attr {
            qp_access_flags: access,
            ..Default::default()
        };
        // SAFETY: live QP; `a` is valid for the call.
        check(
            unsafe {
                ibv_modify_qp(
                    self.raw(),
                    &mut a,
                    ibv_qp_attr_mask_IBV_QP_ACCESS_FLAGS as i32,
                )
            },
            "ibv_modify_qp(ACCESS_FLAGS)",
        )
    }

    /// The QP number.
    pub fn num(&self) -> u32 {
        // SAFETY: the QP is live while `self` is.
        unsafe { (*self.raw()).qp_num }
    }

    /// The `struct ibv_qp` (for provider extensions such as `rsiwdv.h`), valid while `self` lives.
    pub fn as_raw(&self) -> *mut ibv_qp {
        self.raw()
    }

    /// Posts one receive WR.
    pub fn post_recv(&self, wr_id: u64, sges: &[Sge]) -> Result<()> {
        let mut list = sge_list(sges)?;
        let mut wr = recv_wr(wr_id, &mut list)?;
        let mut bad = std::ptr::null_mut();
        // SAFETY: `wr` and `list` live across the call; MRs outlive the WR (see Srq::post_recv).
        check(
            unsafe { rsiw_shim_post_recv(self.raw(), &mut wr, &mut bad) },
            "ibv_post_recv",
        )
    }

    /// Posts one send-queue WR.
    pub fn post_send(&self, wr_id: u64, op: Op, sges: &[Sge], flags: u32) -> Result<()> {
        let mut list = sge_list(sges)?;
        let mut wr = ibv_send_wr {
            wr_id,
            sg_list: if list.is_empty() {
                std::ptr::null_mut()
            } else {
                list.as_mut_ptr()
            },
            num_sge: i32::try_from(list.len()).map_err(|_| Error::other("too many SGEs"))?,
            send_flags: flags,
            ..Default::default()
        };
        match op {
            Op::Send => wr.opcode = ibv_wr_opcode_IBV_WR_SEND,
            Op::SendInv(rkey) => {
                wr.opcode = ibv_wr_opcode_IBV_WR_SEND_WITH_INV;
                wr.__bindgen_anon_1.invalidate_rkey = rkey;
            }
            Op::WriteImm(addr, rkey, imm) => {
                wr.opcode = ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM;
                wr.__bindgen_anon_1.imm_data = imm;
                wr.wr.rdma = ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                    remote_addr: addr,
                    rkey,
                };
            }
            Op::FetchAdd(addr, rkey, add) => {
                wr.opcode = ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD;
                wr.wr.atomic = ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
                    remote_addr: addr,
                    compare_add: add,
                    swap: 0,
                    rkey,
                };
            }
            Op::CmpSwap(addr, rkey, compare, swap) => {
                wr.opcode = ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP;
                wr.wr.atomic = ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
                    remote_addr: addr,
                    compare_add: compare,
                    swap,
                    rkey,
                };
            }
            Op::Write(addr, rkey) | Op::Read(addr, rkey) => {
                wr.opcode = if matches!(op, Op::Write(..)) {
                    ibv_wr_opcode_IBV_WR_RDMA_WRITE
                } else {
                    ibv_wr_opcode_IBV_WR_RDMA_READ
                };
                wr.wr.rdma = ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                    remote_addr: addr,
                    rkey,
                };
            }
        }
        let mut bad = std::ptr::null_mut();
        // SAFETY: `wr` and `list` live across the call; local MRs outlive the WR.
        check(
            unsafe { rsiw_shim_post_send(self.raw(), &mut wr, &mut bad) },
            "ibv_post_send",
        )
    }
}

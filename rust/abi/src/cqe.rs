// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Completion queue elements in the shared CQ ring (32 bytes), with rsiw's own
//! opcode, status and flag values; the provider translates them to `IBV_WC_*`.

/// Size of one [`Cqe`].
pub const CQE_SIZE: usize = 32;

/// CQE opcodes (the values of [`Cqe::opcode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CqOpcode {
    /// A Send of any kind completed.
    Send = 0,
    /// An RDMA Write (with or without Immediate Data) completed.
    Write = 1,
    /// An RDMA Read completed.
    Read = 2,
    /// A Compare and Swap completed.
    CmpSwap = 3,
    /// A Fetch and Add completed.
    FetchAdd = 4,
    /// A Masked Compare and Swap completed.
    MaskedCmpSwap = 5,
    /// A Masked Fetch and Add completed.
    MaskedFetchAdd = 6,
    /// A local invalidate completed.
    LocalInv = 7,
    /// A receive buffer was filled by a Send.
    Recv = 8,
    /// A receive buffer was consumed by an RDMA Write with Immediate Data.
    RecvWriteImm = 9,
    /// A memory window bind completed.
    BindMw = 10,
}

impl CqOpcode {
    /// The opcode for a CQE byte, `None` for values this ABI does not define.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Send,
            1 => Self::Write,
            2 => Self::Read,
            3 => Self::CmpSwap,
            4 => Self::FetchAdd,
            5 => Self::MaskedCmpSwap,
            6 => Self::MaskedFetchAdd,
            7 => Self::LocalInv,
            8 => Self::Recv,
            9 => Self::RecvWriteImm,
            10 => Self::BindMw,
            _ => return None,
        })
    }
}

/// CQE status values (the values of [`Cqe::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CqStatus {
    /// Completed.
    Success = 0,
    /// Local length error (message longer than the buffer).
    LocLenErr = 1,
    /// Local QP operation error.
    LocQpOpErr = 2,
    /// Local protection error (bad lkey, PD or rights).
    LocProtErr = 3,
    /// Flushed: the QP went to ERROR before the WR was processed.
    WrFlushErr = 4,
    /// Bad response.
    BadRespErr = 5,
    /// Local access error.
    LocAccessErr = 6,
    /// Remote invalid request.
    RemInvReqErr = 7,
    /// Remote access error.
    RemAccessErr = 8,
    /// Remote operation error.
    RemOpErr = 9,
    /// Fatal error.
    FatalErr = 10,
    /// General error.
    GeneralErr = 11,
    /// Memory window bind error.
    MwBindErr = 12,
}

impl CqStatus {
    /// The status for a CQE byte, `None` for values this ABI does not define.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Success,
            1 => Self::LocLenErr,
            2 => Self::LocQpOpErr,
            3 => Self::LocProtErr,
            4 => Self::WrFlushErr,
            5 => Self::BadRespErr,
            6 => Self::LocAccessErr,
            7 => Self::RemInvReqErr,
            8 => Self::RemAccessErr,
            9 => Self::RemOpErr,
            10 => Self::FatalErr,
            11 => Self::GeneralErr,
            12 => Self::MwBindErr,
            _ => return None,
        })
    }
}

/// [`Cqe::flags`]: `ex` holds Immediate Data (RFC 7306 §6).
pub const CQE_WITH_IMM: u8 = 1 << 0;
/// [`Cqe::flags`]: `ex` holds the STag a Send with Invalidate invalidated.
pub const CQE_WITH_INV: u8 = 1 << 1;
/// [`Cqe::flags`]: the receive was of a solicited message (RFC 5040 §5.3).
pub const CQE_SOLICITED: u8 = 1 << 2;

/// Completion queue element (32 bytes), written by the kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// The work request id of the completed WQE.
    pub wr_id: u64,
    /// A [`CqOpcode`] value.
    pub opcode: u8,
    /// A [`CqStatus`] value.
    pub status: u8,
    /// `CQE_*` flags.
    pub flags: u8,
    /// Reserved, zero.
    pub reserved0: u8,
    /// Bytes transferred (receives: bytes placed).
    pub byte_len: u32,
    /// 64-bit Immediate Data with [`CQE_WITH_IMM`], the invalidated STag with
    /// [`CQE_WITH_INV`], else zero.
    pub ex: u64,
    /// Number of the QP the WQE belonged to.
    pub qp_num: u32,
    /// Reserved, zero.
    pub reserved1: u32,
}

#[cfg(test)]
mod test {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn cqe_layout() {
        assert_eq!(size_of::<Cqe>(), CQE_SIZE);
        assert_eq!(offset_of!(Cqe, opcode), 8);
        assert_eq!(offset_of!(Cqe, status), 9);
        assert_eq!(offset_of!(Cqe, flags), 10);
        assert_eq!(offset_of!(Cqe, byte_len), 12);
        assert_eq!(offset_of!(Cqe, ex), 16);
        assert_eq!(offset_of!(Cqe, qp_num), 24);
    }

    #[test]
    fn codes_roundtrip() {
        for v in 0..=10u8 {
            assert_eq!(CqOpcode::from_u8(v).map(|o| o as u8), Some(v));
        }
        assert_eq!(CqOpcode::from_u8(11), None);
        for v in 0..=12u8 {
            assert_eq!(CqStatus::from_u8(v).map(|o| o as u8), Some(v));
        }
        assert_eq!(CqStatus::from_u8(13), None);
    }
}

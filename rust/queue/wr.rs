// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Work requests as the driver keeps them: the send and receive WQEs the
//! verbs post (kernel work requests and user ring elements both become
//! these) and the engine consumes (RFC 5040 §5: the operations of an RDMAP
//! stream), with the per-WQE limits.

use crate::{
    queue::cq::WcOpcode,
    resources::mem::{Access, Mem},
};
use kernel::sync::Arc;

/// Scatter/gather entries per work request: the user ABI's, so that kernel and
/// user QPs have one limit.
pub(crate) const MAX_SGE: usize = crate::abi::wqe::MAX_SGE;
/// Outstanding RDMA Read / Atomic requests per QP, both directions (ORD and
/// IRD; RFC 6581 allows 14 bits).
pub(crate) const MAX_RD_ATOMIC: u32 = 128;
/// Inline payload bytes per send WQE.
pub(crate) const MAX_INLINE: usize = crate::abi::wqe::MAX_INLINE;
/// One scatter/gather entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sge {
    /// Address (kernel virtual for kernel consumers, user VA for user MRs).
    pub(crate) addr: u64,
    /// Length in bytes.
    pub(crate) len: u32,
    /// Local STag.
    pub(crate) lkey: u32,
}

/// A posted receive buffer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecvWqe {
    /// The consumer's work request id.
    pub(crate) wr_id: u64,
    /// Buffers, `num_sge` of them in use.
    pub(crate) sge: [Sge; MAX_SGE],
    /// Entries of `sge` in use.
    pub(crate) num_sge: u8,
}

impl RecvWqe {
    /// The entries in use.
    pub(crate) fn sges(&self) -> &[Sge] {
        self.sge.get(..usize::from(self.num_sge)).unwrap_or(&[])
    }
}

/// Send work request types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SendOp {
    /// RDMA Send.
    #[default]
    Send,
    /// Send with Invalidate of `inv_rkey` at the peer.
    SendInv,
    /// RDMA Write.
    Write,
    /// RDMA Write followed by Immediate Data (RFC 7306 §4).
    WriteImm,
    /// RDMA Read.
    Read,
    /// RDMA Read, then local invalidation of `inv_rkey`.
    ReadInv,
    /// Fast registration (`reg`).
    RegMr,
    /// Local invalidation of `inv_rkey`.
    LocalInv,
    /// Bind of the type-2 memory window named by `rkey`'s index to
    /// `sge[0]` (address, length, region lkey), with the new rkey
    /// `inv_rkey` and the rights in `imm` (user SQEs only).
    BindMw,
    /// Compare and swap (RFC 7306 §5).
    CmpSwap,
    /// Fetch and add.
    FetchAdd,
    /// Masked compare and swap.
    MaskedCmpSwap,
    /// Masked fetch and add.
    MaskedFetchAdd,
}

impl SendOp {
    /// The completion opcode.
    pub(crate) fn wc_opcode(self) -> WcOpcode {
        match self {
            Self::Send | Self::SendInv => WcOpcode::Send,
            Self::Write | Self::WriteImm => WcOpcode::RdmaWrite,
            Self::Read | Self::ReadInv => WcOpcode::RdmaRead,
            Self::RegMr => WcOpcode::RegMr,
            Self::LocalInv => WcOpcode::LocalInv,
            Self::BindMw => WcOpcode::BindMw,
            Self::CmpSwap => WcOpcode::CompSwap,
            Self::FetchAdd => WcOpcode::FetchAdd,
            Self::MaskedCmpSwap => WcOpcode::MaskedCompSwap,
            Self::MaskedFetchAdd => WcOpcode::MaskedFetchAdd,
        }
    }
}

/// A posted send work request.
#[derive(Clone)]
pub(crate) struct SendWqe {
    /// The consumer's work request id.
    pub(crate) wr_id: u64,
    /// Operation.
    pub(crate) op: SendOp,
    /// A completion is wanted on success (always on error).
    pub(crate) signaled: bool,
    /// Solicited event at the peer (RFC 5040 §5.3).
    pub(crate) solicited: bool,
    /// Wait for prior Reads/Atomics to complete first.
    pub(crate) fence: bool,
    /// Payload is `inline_data[..inline_len]`, not the SGEs.
    pub(crate) inline: bool,
    /// Local buffers, `num_sge` in use (not for inline WQEs).
    pub(crate) sge: [Sge; MAX_SGE],
    /// Entries of `sge` in use.
    pub(crate) num_sge: u8,
    /// Inline payload, copied at post time.
    pub(crate) inline_data: [u8; MAX_INLINE],
    /// Bytes of `inline_data` in use.
    pub(crate) inline_len: u32,
    /// Remote address (Write, Read, atomics).
    pub(crate) remote_addr: u64,
    /// Remote STag (Write, Read, atomics).
    pub(crate) rkey: u32,
    /// STag to invalidate (SendInv, ReadInv, LocalInv).
    pub(crate) inv_rkey: u32,
    /// Immediate data (WriteImm; verbs' 32 bits in the low half).
    pub(crate) imm: u64,
    /// RFC 7306 operands: `[swap or add, compare, swap mask, compare or add mask]`.
    pub(crate) atomic: [u64; 4],
    /// RegMr: the region, its new 8-bit key and rights.
    pub(crate) reg: Option<(Arc<Mem>, u32, Access)>,
    /// RegMr: `iova` and length of the `ib_mr` when the WR was posted (a
    /// consumer may move `iova` after `map_mr_sg`).
    pub(crate) reg_range: (u64, u64),
}

impl Default for SendWqe {
    fn default() -> Self {
        Self {
            wr_id: 0,
            op: SendOp::Send,
            signaled: false,
            solicited: false,
            fence: false,
            inline: false,
            sge: [Sge::default(); MAX_SGE],
            num_sge: 0,
            inline_data: [0; MAX_INLINE],
            inline_len: 0,
            remote_addr: 0,
            rkey: 0,
            inv_rkey: 0,
            imm: 0,
            atomic: [0; 4],
            reg: None,
            reg_range: (0, 0),
        }
    }
}

impl SendWqe {
    /// The SGEs in use.
    pub(crate) fn sges(&self) -> &[Sge] {
        if self.inline {
            return &[];
        }
        self.sge.get(..usize::from(self.num_sge)).unwrap_or(&[])
    }

    /// Payload bytes.
    pub(crate) fn len(&self) -> u64 {
        if self.inline {
            return u64::from(self.inline_len);
        }
        self.sges().iter().map(|s| u64::from(s.len)).sum()
    }
}

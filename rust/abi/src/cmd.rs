// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The driver parts of the create-CQ/QP/SRQ responses (mmap keys and ring sizes)
//! and the ids of rsiw's driver-specific uverbs method, the SQ doorbell.

/// First id of the driver-specific namespace of uverbs objects, methods and
/// attributes (`1 << UVERBS_ID_NS_SHIFT`).
pub const UVERBS_ID_DRIVER_NS: u16 = 1 << 12;
/// `UVERBS_OBJECT_QP`: the core object the doorbell method is added to.
pub const OBJECT_QP: u16 = 4;
/// The doorbell method on `UVERBS_OBJECT_QP`: the SQ has new work, the TX
/// worker should look at it. Needed only after the provider saw
/// [`SQ_IDLE`](super::ring::SQ_IDLE).
pub const METHOD_QP_DOORBELL: u16 = UVERBS_ID_DRIVER_NS;
/// The doorbell's only attribute: the QP handle (an IDR attribute, read access).
pub const ATTR_DOORBELL_QP_HANDLE: u16 = UVERBS_ID_DRIVER_NS;

/// Response of the kernel to `create_cq` from userspace.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateCqResp {
    /// CQ id, for diagnostics.
    pub cq_id: u32,
    /// Elements in the CQ ring (a power of two, at least the requested `cqe`).
    pub num_cqe: u32,
    /// `mmap` offset on the uverbs fd of the CQ ring.
    pub cq_key: u64,
    /// Length of that mapping in bytes (whole pages).
    pub cq_len: u64,
}

/// Response of the kernel to `create_qp` from userspace.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateQpResp {
    /// QP number (as in the core response), for diagnostics.
    pub qp_num: u32,
    /// Elements in the SQ ring (a power of two).
    pub num_sqe: u32,
    /// Elements in the RQ ring (a power of two); 0 if the QP uses an SRQ.
    pub num_rqe: u32,
    /// Largest inline payload the kernel accepts.
    pub max_inline: u32,
    /// `mmap` offset of the QP's rings: the SQ ring, then (without an SRQ)
    /// the RQ ring at `rq_offset` (ABI 4; one mapping per ring before).
    pub key: u64,
    /// Length of that mapping in bytes (whole pages).
    pub len: u64,
    /// Byte offset of the RQ ring in the mapping,
    /// [`qp_rq_offset`](super::ring::qp_rq_offset)`(num_sqe)`; 0 with an SRQ.
    pub rq_offset: u64,
    /// Reserved, zero.
    pub reserved: u64,
}

/// Response of the kernel to `create_srq` from userspace.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateSrqResp {
    /// Elements in the SRQ ring (a power of two).
    pub num_rqe: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// `mmap` offset of the SRQ ring.
    pub srq_key: u64,
    /// Length of the SRQ mapping in bytes (whole pages).
    pub srq_len: u64,
}

#[cfg(test)]
mod test {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn response_layouts() {
        assert_eq!(size_of::<CreateCqResp>(), 24);
        assert_eq!(offset_of!(CreateCqResp, cq_key), 8);
        assert_eq!(size_of::<CreateQpResp>(), 48);
        assert_eq!(offset_of!(CreateQpResp, key), 16);
        assert_eq!(offset_of!(CreateQpResp, rq_offset), 32);
        assert_eq!(size_of::<CreateSrqResp>(), 24);
        assert_eq!(offset_of!(CreateSrqResp, srq_key), 8);
    }

    #[test]
    fn doorbell_ids_in_driver_namespace() {
        assert_eq!(METHOD_QP_DOORBELL, 0x1000);
        assert_eq!(ATTR_DOORBELL_QP_HANDLE, 0x1000);
    }
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Error mapping: STag check failures to the Terminate codes of RFC 5041 §7.2
//! (tagged DDP placement) and RFC 5040 §7.1 (RDMAP Read source), and a
//! received Terminate to the work completion status of the failed request.

use crate::{
    proto::terminate::{TermCause, LAYER_DDP, LAYER_RDMAP},
    queue::cq::WcStatus,
    resources::mem::MemError,
};

/// A tagged buffer (RDMA Write or Read Response sink) failed its check.
/// RFC 5041 §7.2 names the DDP tagged-buffer errors; access rights are an
/// RDMAP protection error (RFC 5040 §7.1, as DDP has no such code).
pub(crate) fn tagged(e: MemError) -> TermCause {
    match e {
        MemError::Stag | MemError::State => TermCause::DDP_INVALID_STAG,
        MemError::Bounds => TermCause::DDP_BASE_BOUNDS,
        MemError::Pd => TermCause::DDP_STAG_NOT_ASSOCIATED,
        MemError::Access => TermCause::RDMAP_ACCESS_RIGHTS,
        MemError::Fault => TermCause::DDP_LOCAL_CATASTROPHIC,
    }
}

/// The data source of a Read Request or the target of an Atomic Request
/// failed its check: RFC 5040 §7.1 remote protection errors.
pub(crate) fn remote(e: MemError) -> TermCause {
    match e {
        MemError::Stag | MemError::State => TermCause::RDMAP_INVALID_STAG,
        MemError::Bounds => TermCause::RDMAP_BASE_BOUNDS,
        MemError::Pd => TermCause::RDMAP_STAG_NOT_ASSOCIATED,
        MemError::Access => TermCause::RDMAP_ACCESS_RIGHTS,
        MemError::Fault => TermCause::RDMAP_LOCAL_CATASTROPHIC,
    }
}

/// Completion status for the request a peer's Terminate names.
pub(crate) fn peer_status(c: TermCause) -> WcStatus {
    match (c.layer, c.etype) {
        // Protection errors at the peer: STag, bounds, rights.
        (LAYER_RDMAP, 0x1) | (LAYER_DDP, 0x1) => WcStatus::RemAccessErr,
        // Untagged buffer errors: no receive buffer, message too long.
        (LAYER_DDP, 0x2) => WcStatus::RemInvReqErr,
        _ => WcStatus::RemOpErr,
    }
}

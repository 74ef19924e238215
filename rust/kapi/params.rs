// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module parameters, all defined in `params.c` beside this file: each read
//! afresh where it applies, so that a change through sysfs takes effect from the
//! next connection on.

use super::bindings;

/// The connection module parameters (`mpa_crc`, `mpa_peer_to_peer`, `mpa_timeout_ms`,
/// `mpa_accept_timeout_ms`, `mpa_max_pending`, `draft_swap`, `mpa_large_fpdu`,
/// `mpa_markers`, `qp_conn_port`, `qp_conn_timeout_ms`); `rx_defer_bytes` is read by
/// `sock.c` alone.
#[derive(Clone, Copy)]
pub(crate) struct CmParams {
    /// Ask for CRCs.
    pub(crate) crc: bool,
    /// Initiator: ask for the peer-to-peer model (RTR).
    pub(crate) peer_to_peer: bool,
    /// Limit on the TCP connect and on each whole MPA frame, in ms (at least 100).
    pub(crate) timeout_ms: u32,
    /// Limit from a reported connection request to its accept or reject, in
    /// ms (0: none).
    pub(crate) accept_timeout_ms: u32,
    /// Most connections per listener in MPA setup or awaiting the ULP.
    pub(crate) max_pending: u32,
    /// Responder: execute draft-03's Atomic Swap (AOpCode 0x1).
    pub(crate) draft_swap: bool,
    /// Offer and use FPDUs longer than the EMSS with a peer that offers them.
    pub(crate) large_fpdu: bool,
    /// Ask the peer for MPA Markers in what it sends (RFC 5044 §4.3).
    pub(crate) markers: bool,
    /// TCP port of the devices' QP-connection listeners (0: none).
    pub(crate) qp_port: u16,
    /// Limit from a QP's RTR/RTS to its stream, in ms (at least 100).
    pub(crate) qp_timeout_ms: u32,
}

/// The connection parameters as they are now.
pub(crate) fn cm() -> CmParams {
    let mut p = bindings::rsiw_cm_params::default();
    // SAFETY: `p` is writable.
    unsafe { bindings::rsiw_shim_cm_params(&mut p) };
    CmParams {
        crc: p.crc,
        peer_to_peer: p.peer_to_peer,
        timeout_ms: p.timeout_ms,
        accept_timeout_ms: p.accept_timeout_ms,
        max_pending: p.max_pending,
        draft_swap: p.draft_swap,
        large_fpdu: p.large_fpdu,
        markers: p.markers,
        qp_port: u16::try_from(p.qp_port).unwrap_or(0),
        qp_timeout_ms: p.qp_timeout_ms,
    }
}

/// The `tx_zcopy_min` module parameter: 0 (the default) copies every
/// payload; otherwise Sends and Writes of at least this many payload bytes
/// go zero-copy, each completing once TCP has released its pages (`zc.c`,
/// `engine/tx/zcdone.rs`).
pub(crate) fn zc_min() -> u32 {
    // SAFETY: reads a module parameter; no preconditions.
    unsafe { bindings::rsiw_shim_zc_min() }
}

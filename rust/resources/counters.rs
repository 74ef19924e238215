// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What a port and each of its connections did: the counters of
//! `rdma statistic show link DEV/1` (per-CPU, summed when read) and of a QP's
//! `rdma resource show qp -d` line (its connection's own).
//!
//! Names follow rxe's where the meaning is the same (`rdma_sends`,
//! `rdma_recvs`, `link_downed`); the rest are iWARP's units: FPDUs (RFC 5044
//! §4), Terminates by layer (RFC 5040 §4.8), MPA connections (RFC 5044 §7).

use crate::kapi::{hwstats::StatDescs, percpu::PerCpuU64};
use crate::proto::{
    rdmap::Opcode,
    terminate::{TermCause, LAYER_DDP, LAYER_LLP},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{c_str, prelude::*, str::CStr, sync::Arc};

/// One counter; the discriminant is its index in [`NAMES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// FPDUs framed and handed to TCP.
    SentFpdus,
    /// FPDUs received whole, CRC checked.
    RcvdFpdus,
    /// Octets handed to TCP (FPDUs, markers included).
    SentOctets,
    /// Octets read from TCP.
    RcvdOctets,
    /// Send messages sent (all four variants).
    RdmaSends,
    /// Send messages received.
    RdmaRecvs,
    /// RDMA Write messages sent.
    RdmaWrites,
    /// RDMA Write messages received.
    RdmaWritesRcvd,
    /// Read Requests sent.
    ReadRequestsSent,
    /// Read Requests answered (their Read Response started).
    ReadRequestsServed,
    /// Read Responses received (last segment).
    ReadResponsesRcvd,
    /// Atomic Requests sent (RFC 7306 §5.2.1).
    AtomicRequestsSent,
    /// Atomic Requests executed and answered.
    AtomicRequestsServed,
    /// Atomic Responses received (RFC 7306 §5.2.2).
    AtomicResponsesRcvd,
    /// FPDUs whose MPA CRC did not match (RFC 5044 §8).
    MpaCrcErrors,
    /// Other MPA errors: a marker or ULPDU_Length that breaks the framing.
    MpaFramingErrors,
    /// Terminates sent, by layer (RFC 5040 §4.8).
    TerminatesSentLlp,
    TerminatesSentDdp,
    TerminatesSentRdmap,
    /// Terminates received, by layer.
    TerminatesRcvdLlp,
    TerminatesRcvdDdp,
    TerminatesRcvdRdmap,
    /// Connections whose MPA exchange completed and whose stream started.
    CmEstablished,
    /// Connection requests refused: ours by the peer (MPA Reject or TCP
    /// RST), the peer's by us or our ULP.
    CmRefused,
    /// Connection set-ups that failed otherwise (timeouts, resets, bad MPA
    /// frames, unreachable peers).
    CmSetupFailed,
    /// Established connections that ended (any way).
    CmClosed,
    /// Established connections that ended with a reset or error.
    CmAborted,
    /// TX found the socket full and waited for write space.
    TxStalls,
    /// TX held a Read or Atomic for a free ORD slot, or a fenced WQE.
    OrdStalls,
    /// Sends and Writes whose payload went to TCP by page reference
    /// (`tx_zcopy_min`): each completed only once TCP released its pages.
    TxZcopyHeld,
    /// FPDUs whose payload pages TCP copies (`COPY_PAGES_MIN`) that TX left
    /// before the socket took all of them: the rest was copied into the TX
    /// buffer first.
    TxCopyBounced,
    /// The port went down (its netdev lost carrier or went down).
    LinkDowned,
}

/// How many counters there are.
pub(crate) const N: usize = Counter::LinkDowned as usize + 1;

/// The counters' names, in [`Counter`] order.
pub(crate) const NAMES: [&CStr; N] = [
    c_str!("sent_fpdus"),
    c_str!("rcvd_fpdus"),
    c_str!("sent_octets"),
    c_str!("rcvd_octets"),
    c_str!("rdma_sends"),
    c_str!("rdma_recvs"),
    c_str!("rdma_writes"),
    c_str!("rdma_writes_rcvd"),
    c_str!("read_requests_sent"),
    c_str!("read_requests_served"),
    c_str!("read_responses_rcvd"),
    c_str!("atomic_requests_sent"),
    c_str!("atomic_requests_served"),
    c_str!("atomic_responses_rcvd"),
    c_str!("mpa_crc_errors"),
    c_str!("mpa_framing_errors"),
    c_str!("terminates_sent_llp"),
    c_str!("terminates_sent_ddp"),
    c_str!("terminates_sent_rdmap"),
    c_str!("terminates_rcvd_llp"),
    c_str!("terminates_rcvd_ddp"),
    c_str!("terminates_rcvd_rdmap"),
    c_str!("cm_established"),
    c_str!("cm_refused"),
    c_str!("cm_setup_failed"),
    c_str!("cm_closed"),
    c_str!("cm_aborted"),
    c_str!("tx_stalls"),
    c_str!("ord_stalls"),
    c_str!("tx_zcopy_held"),
    c_str!("tx_copy_bounced"),
    c_str!("link_downed"),
];

/// [`NAMES`] as ib_core's counter descriptions.
pub(crate) static DESCS: StatDescs<N> = StatDescs::new(NAMES);

/// Counters of the port alone: a connection's own are not these.
pub(crate) fn port_only(c: usize) -> bool {
    c >= Counter::CmEstablished as usize
        && c != Counter::TxStalls as usize
        && c != Counter::OrdStalls as usize
        && c != Counter::TxZcopyHeld as usize
        && c != Counter::TxCopyBounced as usize
}

/// The counter of a message of `op` sent (`rcvd`: received), if any.
fn message(op: Opcode, rcvd: bool) -> Option<Counter> {
    Some(match (op, rcvd) {
        (
            Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate,
            false,
        ) => Counter::RdmaSends,
        (
            Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate,
            true,
        ) => Counter::RdmaRecvs,
        (Opcode::Write, false) => Counter::RdmaWrites,
        (Opcode::Write, true) => Counter::RdmaWritesRcvd,
        (Opcode::ReadRequest, false) => Counter::ReadRequestsSent,
        (Opcode::ReadResponse, false) => Counter::ReadRequestsServed,
        (Opcode::ReadResponse, true) => Counter::ReadResponsesRcvd,
        (Opcode::AtomicRequest, false) => Counter::AtomicRequestsSent,
        (Opcode::AtomicResponse, false) => Counter::AtomicRequestsServed,
        (Opcode::AtomicResponse, true) => Counter::AtomicResponsesRcvd,
        _ => return None,
    })
}

/// The port's counters (one per device: rsiw devices have one port).
pub(crate) struct PortCounters(PerCpuU64<N>);

impl PortCounters {
    /// Zeroed counters (process context).
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(Self(PerCpuU64::new()?), GFP_KERNEL)?)
    }

    /// Counts one `c` (any context).
    pub(crate) fn inc(&self, c: Counter) {
        self.0.add(c as usize, 1);
    }

    /// Every counter's current value, in [`Counter`] order.
    pub(crate) fn values(&self) -> [u64; N] {
        core::array::from_fn(|i| self.0.sum(i))
    }
}

/// A connection's counters; each count goes to the port's as well.
pub(crate) struct ConnCounters {
    port: Arc<PortCounters>,
    own: [AtomicU64; N],
}

impl ConnCounters {
    /// Zeroed counters of a new connection on `port`.
    pub(crate) fn new(port: &Arc<PortCounters>) -> Self {
        Self {
            port: port.clone(),
            own: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Adds `v` to `c` (any context).
    pub(crate) fn add(&self, c: Counter, v: u64) {
        self.port.0.add(c as usize, v);
        if let Some(a) = self.own.get(c as usize) {
            a.fetch_add(v, Ordering::Relaxed);
        }
    }

    /// Counts one `c`.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// A message of `op` handed to the framer.
    pub(crate) fn message_sent(&self, op: Opcode) {
        if let Some(c) = message(op, false) {
            self.inc(c);
        }
    }

    /// An FPDU passed its CRC; `last`: it ended a message of `op`.
    pub(crate) fn fpdu_rcvd(&self, op: Opcode, last: bool) {
        self.inc(Counter::RcvdFpdus);
        if let Some(c) = message(op, true).filter(|_| last) {
            self.inc(c);
        }
    }

    /// A Terminate went out (`sent`) or came in, with `cause`.
    pub(crate) fn terminate(&self, cause: TermCause, sent: bool) {
        let c = match (cause.layer, sent) {
            (LAYER_LLP, true) => Counter::TerminatesSentLlp,
            (LAYER_DDP, true) => Counter::TerminatesSentDdp,
            (_, true) => Counter::TerminatesSentRdmap,
            (LAYER_LLP, false) => Counter::TerminatesRcvdLlp,
            (LAYER_DDP, false) => Counter::TerminatesRcvdDdp,
            (_, false) => Counter::TerminatesRcvdRdmap,
        };
        self.inc(c);
    }

    /// RX found the stream in error with `cause` (RFC 5044 §8 for MPA's).
    pub(crate) fn rx_error(&self, cause: TermCause) {
        if cause == TermCause::MPA_CRC {
            self.inc(Counter::MpaCrcErrors);
        } else if cause.layer == LAYER_LLP {
            self.inc(Counter::MpaFramingErrors);
        }
    }

    /// Every counter of this connection, in [`Counter`] order.
    pub(crate) fn values(&self) -> [u64; N] {
        core::array::from_fn(|i| self.own.get(i).map_or(0, |a| a.load(Ordering::Relaxed)))
    }
}

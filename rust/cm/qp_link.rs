// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The CM's link to the verbs objects and the engine: the QP an
//! `iw_connect`/`iw_accept` names, and starting its FPDU stream with the
//! parameters the MPA exchange (RFC 5044 §7.1, RFC 6581) negotiated.

use crate::{
    device::Device,
    engine,
    proto::mpa::StreamParams,
    qp::Qp,
    stream::{Stream, StreamConsumer},
};
use kernel::{prelude::*, sync::Arc};

/// What the engine needs to run a stream besides the stream itself.
#[derive(Clone, Copy)]
#[allow(dead_code)] // read by the engine's start
pub(crate) struct Setup {
    /// Negotiated CRC, markers, IRD/ORD and RTR.
    pub(crate) params: StreamParams,
    /// Our side sent the MPA Request (and so sends the RTR in peer-to-peer
    /// mode; the responder waits for it before sending).
    pub(crate) initiator: bool,
    /// The TCP MSS when the stream started.
    pub(crate) mss: u32,
}

/// The QP a connection runs on.
pub(crate) struct QpLink(Arc<Qp>);

/// Finds QP `qpn` of `dev`; `None` if there is none.
pub(crate) fn lookup(dev: &Device, qpn: u32) -> Option<QpLink> {
    dev.qp_lookup(qpn).map(QpLink)
}

/// Starts the engine on `qp` over `stream` and moves the QP to RTS with the
/// negotiated ORD/IRD.
pub(crate) fn start(qp: &QpLink, stream: Arc<Stream>, setup: &Setup) -> Result {
    // Until the engine lands its `Conn` carries nothing: the stream's bytes
    // are discarded, closes are still reported to the iw_cm.
    let conn = Arc::new(engine::Conn, GFP_KERNEL)?;
    stream.attach(Arc::new(Discard, GFP_KERNEL)?)?;
    qp.0.set_conn(Some(conn));
    let r = qp
        .0
        .set_rts(u32::from(setup.params.ord), u32::from(setup.params.ird));
    if r.is_err() {
        qp.0.set_conn(None);
        stream.detach();
    }
    r
}

/// The stream consumer while there is no engine.
struct Discard;

impl StreamConsumer for Discard {
    fn rx(&self, data: &[u8]) -> usize {
        data.len()
    }
    fn write_space(&self) {}
    fn closed(&self, _abortive: bool) {}
}

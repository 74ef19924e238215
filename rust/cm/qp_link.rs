// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The CM's link to the verbs objects and the engine: the QP an
//! `iw_connect`/`iw_accept` names, and starting its FPDU stream with the
//! parameters the MPA exchange (RFC 5044 §7.1, RFC 6581) negotiated.

use crate::{
    engine,
    objects::device::Device,
    objects::qp::{Attempt, Qp},
    proto::mpa::StreamParams,
    resources::stream::Stream,
};
use kernel::{prelude::*, sync::Arc};

/// What the engine needs to run a stream besides the stream itself.
#[derive(Clone, Copy)]
pub(crate) struct Setup {
    /// Negotiated CRC, markers, IRD/ORD and RTR.
    pub(crate) params: StreamParams,
    /// Our side sent the MPA Request (and so sends the RTR in peer-to-peer
    /// mode; the responder waits for it before sending).
    pub(crate) initiator: bool,
    /// The TCP MSS when the stream started.
    pub(crate) mss: u32,
}

/// The QP a connection runs on: found by an iw_cm verb, or armed by
/// `modify_qp` (`gen`: the arming the connection serves).
pub(crate) struct QpLink {
    qp: Arc<Qp>,
    gen: Option<u32>,
}

impl QpLink {
    /// The QP armed (generation `gen`) for a QP connection (`qpconn`).
    pub(crate) fn armed(qp: Arc<Qp>, gen: u32) -> Self {
        Self { qp, gen: Some(gen) }
    }

    /// What the armed QP was given now (`None`: not armed, or another
    /// arming).
    pub(crate) fn oob_given(&self) -> Option<crate::proto::qpconn::Given> {
        self.qp.oob_given(self.gen?)
    }
}

/// Finds QP `qpn` of `dev` for the caller of `iw_connect`/`iw_accept`:
/// `EINVAL` if there is none; `EACCES` if it is not the caller's (rdma_cm
/// passes a user's QP number through unchecked), `EBUSY` or `EINVAL` if it
/// cannot take a connection now (`Qp::may_bind`).
pub(crate) fn lookup(dev: &Device, qpn: u32) -> Result<QpLink> {
    let qp = dev.qp_lookup(qpn).ok_or(EINVAL)?;
    qp.may_bind()?;
    Ok(QpLink { qp, gen: None })
}

/// Starts the engine on `qp` over `stream`: binds the connection to the QP
/// and moves it to RTS with the negotiated ORD/IRD in one step (a QP that
/// has a connection, is not in INIT/RTR or is being destroyed is refused and
/// keeps what it had), then installs the stream callbacks and kicks TX.
///
/// An armed QP keeps its state (RTR or RTS, as its consumer set it) and its
/// rights; its CM attempt, whose work is done, is returned for the caller to
/// cancel once it holds no endpoint lock.
pub(crate) fn start(
    qp: &QpLink,
    stream: Arc<Stream>,
    setup: &Setup,
) -> Result<Option<Arc<dyn Attempt>>> {
    let mut params = engine::Params::new(&setup.params, setup.initiator, setup.mss);
    if crate::kapi::params::cm().draft_swap {
        params.dialect = crate::proto::atomic::Dialect::Draft03;
    }
    let q = &qp.qp;
    let port: Arc<dyn engine::QpPort> = q.clone();
    let res = engine::Resources {
        mems: q.dev().mems().clone(),
        inline: q.dev().inline_tx().clone(),
        counters: q.dev().counters().clone(),
    };
    let conn = engine::Conn::new(port, &res, &stream, params)?;
    let (ord, ird) = conn.ord_ird();
    let attempt = match qp.gen {
        None => q.bind_conn(conn.clone(), ord, ird).map(|()| None),
        Some(gen) => q.bind_oob(conn.clone(), gen),
    }?;
    if let Err(e) = stream.attach(conn.clone()) {
        conn.abandon();
        q.set_error();
        q.unbind_conn(&conn);
        return Err(e);
    }
    // A `destroy_qp` (or RESET) that raced the attach may have quiesced the
    // engine before the callbacks were installed: then nothing else would
    // detach them.
    if !q.is_bound(&conn) {
        conn.abandon();
        stream.detach();
        return Err(EINVAL);
    }
    conn.kick();
    if qp.gen.is_some() {
        // Requests parked for this QP are refused now, not at their deadline.
        if let Some(l) = q.dev().qp_listener_if_any() {
            l.rearm();
        }
    }
    Ok(attempt)
}

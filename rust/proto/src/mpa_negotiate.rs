// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA negotiation: what each side offers ([`LocalParams`]), the Request an initiator
//! sends, the responder's answer and the initiator's check of the Reply, and the
//! [`StreamParams`] both sides then use (RFC 5044 §7.1, RFC 6581).

use super::*;

/// What the local side offers or accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalParams {
    /// Highest revision spoken; an initiator with Rev 2 sends an enhanced Request.
    pub rev: Revision,
    /// Ask for CRCs (RFC 5044 §7.1.2: they are used if either side asks).
    pub crc: bool,
    /// Require Markers in the FPDUs we receive (our M bit).
    pub markers_rx: bool,
    /// We can insert Markers if the peer requires them.
    pub markers_tx: bool,
    /// Our inbound RDMA Read queue depth (the most Read Requests we accept at once).
    pub ird: u16,
    /// Our outbound RDMA Read queue depth (the most Read Requests we issue at once).
    pub ord: u16,
    /// Initiator: request the peer-to-peer model offering these RTR types (`None`:
    /// client-server, no RTR). Responder: the RTR types we accept (`None`: any).
    pub p2p: Option<RtrSet>,
    /// We accept FPDUs longer than the EMSS allows, and say so (`flag::LARGE_FPDU`);
    /// off for an RFC 5044 endpoint.
    pub large_fpdu: bool,
}

impl Default for LocalParams {
    fn default() -> Self {
        Self {
            rev: Revision::Rev2,
            crc: true,
            markers_rx: false,
            markers_tx: false,
            ird: 16,
            ord: 16,
            p2p: None,
            large_fpdu: false,
        }
    }
}

/// The parameters of the FPDU stream both sides agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamParams {
    /// Revision in use (the Reply's).
    pub rev: Revision,
    /// CRCs on FPDUs in both directions.
    pub crc: bool,
    /// We insert Markers into the FPDUs we send (the peer's M bit).
    pub markers_tx: bool,
    /// The peer inserts Markers into the FPDUs we receive (our M bit).
    pub markers_rx: bool,
    /// Most Read Requests the peer may have outstanding towards us.
    pub ird: u16,
    /// Most Read Requests we may have outstanding towards the peer.
    pub ord: u16,
    /// The RTR message the initiator sends first, in the peer-to-peer model.
    pub rtr: Option<Rtr>,
    /// We may send FPDUs longer than the EMSS allows: the Request offered them and
    /// the Reply acknowledged the offer (never with an RFC 5044 peer).
    pub large_fpdu_tx: bool,
}

/// Builds the initiator's Request carrying `private_data` for the ULP.
pub fn request<'a>(local: &LocalParams, private_data: &'a [u8]) -> FrameRepr<'a> {
    let ird_ord = match local.rev {
        Revision::Rev1 => None,
        Revision::Rev2 => Some(IrdOrd {
            peer_to_peer: local.p2p.is_some(),
            rtr: match local.p2p {
                Some(set) => set,
                None => RtrSet::NONE,
            },
            ird: wire_depth(local.ird),
            ord: wire_depth(local.ord),
        }),
    };
    FrameRepr {
        kind: FrameKind::Request,
        markers: local.markers_rx,
        crc: local.crc,
        reject: false,
        rev: local.rev,
        ird_ord,
        private_data,
        large_fpdu: local.large_fpdu,
        large_fpdu_ack: false,
    }
}

/// A local depth as sent: at most [`IRD_ORD_MAX`], so it never reads as "no value".
const fn wire_depth(v: u16) -> u16 {
    if v > IRD_ORD_MAX {
        IRD_ORD_MAX
    } else {
        v
    }
}

/// `ours` limited by the peer's stated value, unless the peer gave none.
fn limit(ours: u16, peer: u16) -> u16 {
    if peer == IRD_ORD_NO_VALUE {
        ours
    } else {
        ours.min(peer)
    }
}

/// Responder: checks the initiator's Request against `local` and builds the Reply
/// (carrying the ULP's `private_data`) and the resulting stream parameters.
pub fn respond<'a>(
    local: &LocalParams,
    req: &FrameRepr<'_>,
    private_data: &'a [u8],
) -> Result<(FrameRepr<'a>, StreamParams), MpaError> {
    if req.kind != FrameKind::Request {
        return Err(MpaError::BadKey);
    }
    if req.markers && !local.markers_tx {
        return Err(MpaError::MarkersUnsupported);
    }
    let rev = req.rev.min(local.rev);
    let crc = req.crc || local.crc;
    // Large FPDUs only between two endpoints that both offered them; the Reply
    // offers and acknowledges only in answer to a Request that offered.
    let large = req.large_fpdu && local.large_fpdu;
    let mut params = StreamParams {
        rev,
        crc,
        markers_tx: req.markers,
        markers_rx: local.markers_rx,
        ird: local.ird,
        ord: local.ord,
        rtr: None,
        large_fpdu_tx: large,
    };
    let ird_ord = match (rev, req.ird_ord) {
        (Revision::Rev2, Some(peer)) => {
            // Our ORD must fit the initiator's IRD, our IRD need not exceed its ORD.
            params.ord = limit(wire_depth(local.ord), peer.ird);
            params.ird = limit(wire_depth(local.ird), peer.ord);
            params.rtr = choose_rtr(local, &peer)?;
            if params.rtr == Some(Rtr::Read) {
                // Keep the slot the RTR Read occupies, even if the initiator's ORD is 0.
                params.ird = params.ird.max(1);
            }
            Some(IrdOrd {
                peer_to_peer: peer.peer_to_peer,
                rtr: match params.rtr {
                    Some(r) => RtrSet::only(r),
                    None => RtrSet::NONE,
                },
                ird: params.ird,
                ord: params.ord,
            })
        }
        _ => None,
    };
    let reply = FrameRepr {
        kind: FrameKind::Reply,
        markers: local.markers_rx,
        crc,
        reject: false,
        rev,
        ird_ord,
        private_data,
        large_fpdu: large,
        large_fpdu_ack: large,
    };
    Ok((reply, params))
}

/// The RTR type a responder picks from the initiator's offer.
fn choose_rtr(local: &LocalParams, peer: &IrdOrd) -> Result<Option<Rtr>, MpaError> {
    if !peer.peer_to_peer {
        return Ok(None);
    }
    let mut accepted = match local.p2p {
        Some(set) => set,
        None => RtrSet::ALL,
    };
    // A Read RTR is an RDMA Read Request: it needs an inbound Read slot here.
    accepted.read &= local.ird > 0;
    // An initiator asking for peer-to-peer without naming a type gets our choice.
    let offered = if peer.rtr.is_empty() {
        RtrSet::ALL
    } else {
        peer.rtr
    };
    match offered.intersect(&accepted).preferred() {
        Some(r) => Ok(Some(r)),
        None => Err(MpaError::NoMatchingRtr),
    }
}

/// Responder: the Reply that refuses a connection (R bit set) with optional ULP
/// private data; `rev` echoes the Request's when it was valid.
pub fn reject_reply<'a>(
    local: &LocalParams,
    req_rev: Option<Revision>,
    private_data: &'a [u8],
) -> FrameRepr<'a> {
    FrameRepr {
        kind: FrameKind::Reply,
        markers: false,
        crc: local.crc,
        reject: true,
        rev: match req_rev {
            Some(r) => r.min(local.rev),
            None => Revision::Rev1,
        },
        ird_ord: None,
        private_data,
        large_fpdu: false,
        large_fpdu_ack: false,
    }
}

/// Initiator: checks the responder's Reply to our Request `req` and derives the
/// stream parameters.
pub fn complete(
    local: &LocalParams,
    req: &FrameRepr<'_>,
    reply: &FrameRepr<'_>,
) -> Result<StreamParams, MpaError> {
    if reply.kind != FrameKind::Reply {
        return Err(MpaError::BadKey);
    }
    if reply.reject {
        return Err(MpaError::Rejected);
    }
    if reply.rev > req.rev {
        return Err(MpaError::RevisionMismatch {
            sent: req.rev.wire(),
            got: reply.rev.wire(),
        });
    }
    if reply.markers && !local.markers_tx {
        return Err(MpaError::MarkersUnsupported);
    }
    let mut params = StreamParams {
        rev: reply.rev,
        // RFC 5044 §7.1.2: CRC is used if either side asked for it.
        crc: req.crc || reply.crc,
        markers_tx: reply.markers,
        markers_rx: req.markers,
        ird: local.ird,
        ord: local.ord,
        rtr: None,
        // The acknowledgement, not the Reply's offer bit: a responder that copies
        // the Request's flags into its Reply (siw) echoes the offer.
        large_fpdu_tx: req.large_fpdu && reply.large_fpdu_ack,
    };
    let sent = match req.ird_ord {
        // A Rev 1 Reply to an enhanced Request is the downgrade of a Rev 1 peer.
        Some(sent) if reply.rev == Revision::Rev2 => sent,
        _ => return Ok(params),
    };
    let got = reply.ird_ord.ok_or(MpaError::MissingIrdOrd)?;
    if got.ord != IRD_ORD_NO_VALUE && got.ord > sent.ird {
        return Err(MpaError::InsufficientIrd {
            ird: sent.ird,
            peer_ord: got.ord,
        });
    }
    params.ird = limit(sent.ird, got.ord);
    params.ord = limit(sent.ord, got.ird);
    if sent.peer_to_peer {
        let offered = if sent.rtr.is_empty() {
            RtrSet::ALL
        } else {
            sent.rtr
        };
        params.rtr = got.rtr.intersect(&offered).preferred();
        // A Read RTR the responder has no inbound Read slot for cannot be sent.
        if params.rtr.is_none() || (params.rtr == Some(Rtr::Read) && got.ird == 0) {
            return Err(MpaError::NoMatchingRtr);
        }
    }
    Ok(params)
}

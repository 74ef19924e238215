// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The receive parser's header checks: everything it can decide from a DDP segment's
//! headers alone, in RFC order (RFC 5041 §7.2, RFC 5040 §7.2, RFC 7306 §8.2).

use super::*;

impl<C: Crc32c> RxParser<C> {
    /// All checks the parser can make alone, in RFC order: DDP (RFC 5041 §7.2), then
    /// RDMAP (RFC 5040 §7.2 / RFC 7306 §8.2).
    pub(super) fn validate(&self, ulpdu_len: u16, seg: &[u8]) -> Result<HeaderInfo, TermCause> {
        // RFC 5044 §8: the length field does not frame a DDP segment we accept.
        if ulpdu_len > self.cfg.max_ulpdu {
            return Err(TermCause::MPA_FRAMING);
        }
        let Some(&ctrl) = seg.first() else {
            return Err(TermCause::MPA_FRAMING);
        };
        let tagged = ctrl & ddp::FLAG_T != 0;
        // RFC 5041 §7.2: an unknown DDP version is reported before anything else, as the
        // rest of the header cannot be interpreted.
        if ctrl & ddp::MASK_DV != ddp::VERSION {
            return Err(if tagged {
                TermCause::DDP_TAGGED_VERSION
            } else {
                TermCause::DDP_UNTAGGED_VERSION
            });
        }
        // A ULPDU too short for its DDP header (RFC 5041 §4.2-§4.4): the length field
        // does not frame a DDP segment, an MPA framing error (RFC 5044 §8), not an
        // RDMAP one.
        let d = ddp::Repr::parse(&ddp::Packet::new_unchecked(seg))
            .map_err(|_| TermCause::MPA_FRAMING)?;
        let dlen = d.buffer_len();
        let ctl = Control::parse(d.ulp_ctrl);
        // RFC 5040 §7.2: RV other than 1.
        if ctl.version != VERSION {
            return Err(TermCause::RDMAP_VERSION);
        }
        let op = ctl.opcode;
        // RFC 5040 §4.2 / RFC 7306 §4: unknown opcodes and a T bit that contradicts the
        // opcode's buffer model are unexpected opcodes.
        if matches!(op, Opcode::Unknown(_)) || op.tagged() != tagged {
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        }
        let body = seg.get(dlen..).unwrap_or(&[]);
        let body_len = usize::from(ulpdu_len).saturating_sub(dlen);
        let payload_len = match d.buffer {
            Buffer::Tagged { to, .. } => {
                // RFC 5041 §7.2: TO wrap, checked without overflow.
                if !no_wrap_u64(to, body_len as u64) {
                    return Err(TermCause::DDP_TO_WRAP);
                }
                body_len
            }
            Buffer::Untagged { qn, msn, mo, .. } => {
                self.check_untagged(op, d.last, qn, msn, mo, body_len)?;
                match op.fixed_header_len() {
                    Some(_) => 0,
                    None if op == Opcode::Terminate => 0,
                    None => body_len,
                }
            }
        };
        let rdmap = match op {
            Opcode::ReadRequest => {
                let r = ReadRequest::parse(body).ok_or(TermCause::RDMAP_UNSPECIFIED)?;
                // RFC 5040 §7.2 / §5.2: the source range must not wrap.
                if !no_wrap_u64(r.source_to, u64::from(r.size)) {
                    return Err(TermCause::RDMAP_TO_WRAP);
                }
                RdmapHeader::ReadRequest(r)
            }
            Opcode::Terminate => RdmapHeader::Terminate(
                TerminateRepr::parse(body.get(..body_len).unwrap_or(body))
                    .map_err(|_| TermCause::RDMAP_UNSPECIFIED)?,
            ),
            Opcode::ImmediateData | Opcode::ImmediateDataSe => {
                let mut b = [0u8; IMMEDIATE_LEN];
                b.copy_from_slice(
                    body.get(..IMMEDIATE_LEN)
                        .ok_or(TermCause::RDMAP_UNSPECIFIED)?,
                );
                RdmapHeader::Immediate(u64::from_be_bytes(b))
            }
            Opcode::AtomicRequest => RdmapHeader::AtomicRequest(
                AtomicRequest::parse(body).ok_or(TermCause::RDMAP_UNSPECIFIED)?,
            ),
            Opcode::AtomicResponse => RdmapHeader::AtomicResponse(
                AtomicResponse::parse(body).ok_or(TermCause::RDMAP_UNSPECIFIED)?,
            ),
            _ => RdmapHeader::None,
        };
        Ok(HeaderInfo {
            opcode: op,
            last: d.last,
            ulpdu_len,
            payload_len: payload_len as u16,
            ddp: d.buffer,
            rdmap,
        })
    }

    /// Untagged checks: queue, sequence, offset and the shape of header-only messages.
    fn check_untagged(
        &self,
        op: Opcode,
        last: bool,
        qn: u32,
        msn: u32,
        mo: u32,
        body_len: usize,
    ) -> Result<(), TermCause> {
        // RFC 5040 §5.1 / RFC 7306 §5.2: each untagged opcode has its queue.
        if op.queue() != Some(qn) {
            return Err(TermCause::DDP_INVALID_QN);
        }
        let q = self
            .queues
            .get(qn as usize)
            .ok_or(TermCause::DDP_INVALID_QN)?;
        // RFC 5041 §5.3 / §7.2: messages on a queue arrive in MSN order.
        if msn != q.msn {
            return Err(TermCause::DDP_MSN_RANGE);
        }
        // RFC 5041 §5.3: segments of a message arrive in order with contiguous MOs.
        if mo != q.mo {
            return Err(TermCause::DDP_INVALID_MO);
        }
        // A later segment must continue the message it belongs to.
        if q.opcode.is_some_and(|o| o != op) {
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        }
        if mo.checked_add(body_len as u32).is_none() {
            return Err(TermCause::DDP_MESSAGE_TOO_LONG);
        }
        // Header-only messages fill exactly one last segment: RFC 5040 §4.4/§4.8, RFC 7306
        // §5.2/§6 (Immediate Data is exactly 8 octets). More octets than the queue's
        // buffer holds is "message too long" (RFC 5041 §7.2); fewer has no named code.
        let bounds = match op {
            Opcode::Terminate => Some((terminate::HDR_LEN, terminate::MAX_LEN)),
            _ => op.fixed_header_len().map(|l| (l, l)),
        };
        if let Some((min, max)) = bounds {
            if body_len > max {
                return Err(TermCause::DDP_MESSAGE_TOO_LONG);
            }
            if body_len < min || !last {
                return Err(TermCause::RDMAP_UNSPECIFIED);
            }
        }
        Ok(())
    }
}

/// Whether a segment is a received Terminate, which is never answered (RFC 5040 §7.2)
/// whatever else in it is wrong: answering it could start a Terminate exchange between
/// two peers that each find the other's malformed.
///
/// A Terminate travels untagged on queue 2 (RFC 5040 §5.1: QN 2 is RDMAP's queue for
/// Terminate messages; §4.8). A segment whose RDMAP opcode field says Terminate but
/// whose DDP header puts it elsewhere (the T bit set, or another QN) is not one: DDP
/// refuses the queue before RDMAP sees an opcode (RFC 5041 §7.2, Invalid QN, 1/2/0x01;
/// RFC 5040 §4.2 for the T bit, 0/2/0x06), and it is answered with that Terminate like
/// any other segment. Where the header cannot be read that far (a bad DDP version, a
/// segment cut before its QN) the opcode field alone decides.
pub(super) fn claims_terminate(seg: &[u8]) -> bool {
    if !seg
        .get(ddp::field::ULP_CTRL)
        .is_some_and(|&b| Control::parse(b).opcode == Opcode::Terminate)
    {
        return false;
    }
    let ctrl = seg.first().copied().unwrap_or(0);
    if ctrl & ddp::MASK_DV != ddp::VERSION {
        return true;
    }
    if ctrl & ddp::FLAG_T != 0 {
        return false;
    }
    match seg.get(ddp::field::QN) {
        Some(q) => u32::from_be_bytes([q[0], q[1], q[2], q[3]]) == QN_TERMINATE,
        None => true,
    }
}

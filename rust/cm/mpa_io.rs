// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA Request/Reply frames over a kernel socket (RFC 5044 §7.1, RFC 6581 §4):
//! collect exactly one frame from what arrives, never a byte of the FPDUs
//! after it and never waiting for it; write one frame; the Terminate that
//! refuses a complete but unusable Reply.

use crate::{
    kapi::{
        crc::KernelCrc32c,
        sock::{errno, Socket},
    },
    proto::{
        mpa::{self, FrameRepr, MpaError, HEADER_LEN, MAX_FRAME_LEN},
        rdmap::{Header, Opcode},
        terminate::{TermCause, TerminateRepr, LAYER_LLP},
        tx::{TxConfig, TxFramer, TxMessage},
    },
};
use kernel::prelude::*;

/// Why a frame could not be read or written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SetupError {
    /// The socket failed, timed out (`EAGAIN`) or the peer closed (`ECONNRESET`).
    Io(Error),
    /// The bytes are not an acceptable MPA frame.
    Mpa(MpaError),
}

impl From<Error> for SetupError {
    fn from(e: Error) -> Self {
        Self::Io(e)
    }
}

impl From<MpaError> for SetupError {
    fn from(e: MpaError) -> Self {
        Self::Mpa(e)
    }
}

/// One frame being received, then as it arrived.
pub(crate) struct FrameBuf {
    buf: [u8; MAX_FRAME_LEN],
    /// Octets received so far.
    len: usize,
}

impl FrameBuf {
    /// Nothing received yet.
    pub(crate) fn new() -> Self {
        Self {
            buf: [0; MAX_FRAME_LEN],
            len: 0,
        }
    }

    /// Takes what the socket holds of the frame, without waiting and never
    /// past the frame's end: the header first, so that a bad key, Rev or
    /// PD_Length (RFC 5044 §7.1.1: above 512 closes the connection) is
    /// refused before any private data. `Ok(true)` once the frame is whole,
    /// `Ok(false)` when the rest has not arrived yet; the peer's FIN before
    /// the end is `ECONNRESET`.
    pub(crate) fn fill(&mut self, sock: &Socket) -> Result<bool, SetupError> {
        loop {
            let want = match self.buf.get(..HEADER_LEN) {
                Some(head) if self.len >= HEADER_LEN => mpa::frame_len(head)?.ok_or(EINVAL)?,
                _ => HEADER_LEN,
            };
            if self.len >= want {
                return Ok(true);
            }
            let dst = self.buf.get_mut(self.len..want).ok_or(EINVAL)?;
            match sock.recv_now(dst) {
                Ok(0) => return Err(SetupError::Io(errno::connreset())),
                Ok(n) => self.len += n,
                Err(e) if e == EAGAIN => return Ok(false),
                Err(e) => return Err(SetupError::Io(e)),
            }
        }
    }

    /// The frame's bytes (once [`FrameBuf::fill`] said it is whole).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// Encodes `repr` and sends it, blocking up to the socket's send timeout.
pub(crate) fn write(sock: &Socket, repr: &FrameRepr<'_>) -> Result<(), SetupError> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let len = repr.buffer_len();
    let mut frame = mpa::Frame::new_unchecked(&mut buf[..]);
    repr.emit(&mut frame)?;
    sock.send_all(&[buf.get(..len).ok_or(EINVAL)?])?;
    Ok(())
}

/// RFC 6581 §4: the initiator's answer to a complete Reply it cannot use
/// (`code` from [`MpaError::terminate_code`]: Insufficient IRD, No Matching
/// RTR) is a Terminate, Layer LLP, Error Type MPA, as the first and only FPDU
/// (first message on QN 2: MSN 1, RFC 5041 §5.1), with a CRC if negotiated.
pub(crate) fn write_terminate(sock: &Socket, crc: bool, code: u8) -> Result<(), SetupError> {
    let cause = TermCause {
        layer: LAYER_LLP,
        etype: 0,
        ecode: code,
    };
    let hdr = Header::Terminate(TerminateRepr::new(cause));
    let msg = TxMessage::untagged(Opcode::Terminate, 1, 0, hdr, 0);
    let mut framer = TxFramer::new(TxConfig {
        crc,
        markers: false,
        mulpdu: 1024,
    });
    let mut buf = [0u8; 64];
    let mut len = 0usize;
    let mut fits = true;
    for f in framer.frames(&msg).map_err(|_| EINVAL)? {
        f.write(&KernelCrc32c, &[], |b| {
            let end = len.checked_add(b.len());
            match end.and_then(|e| buf.get_mut(len..e)) {
                Some(d) => {
                    d.copy_from_slice(b);
                    len += b.len();
                }
                None => fits = false,
            }
        })
        .map_err(|_| EINVAL)?;
    }
    if !fits {
        return Err(SetupError::Io(EINVAL));
    }
    sock.send_all(&[buf.get(..len).ok_or(EINVAL)?])?;
    Ok(())
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA Request/Reply frames over a kernel socket (RFC 5044 §7.1, RFC 6581 §4):
//! read exactly one frame, never a byte of the FPDUs after it; write one frame;
//! the Terminate that refuses a complete but unusable Reply.

use crate::{
    ffi::{crc::KernelCrc32c, sock::Socket},
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

/// One received frame, as it arrived.
pub(crate) struct FrameBuf {
    buf: [u8; MAX_FRAME_LEN],
    len: usize,
}

impl FrameBuf {
    /// Reads one frame: the header first, so that a bad key, Rev or
    /// PD_Length (RFC 5044 §7.1.1: above 512 closes the connection) is
    /// refused before waiting for private data.
    pub(crate) fn read(sock: &Socket) -> Result<Self, SetupError> {
        let mut f = Self {
            buf: [0; MAX_FRAME_LEN],
            len: 0,
        };
        let head = f.buf.get_mut(..HEADER_LEN).ok_or(EINVAL)?;
        sock.recv_exact(head)?;
        let len = mpa::frame_len(head)?.ok_or(EINVAL)?;
        let rest = f.buf.get_mut(HEADER_LEN..len).ok_or(EINVAL)?;
        sock.recv_exact(rest)?;
        f.len = len;
        Ok(f)
    }

    /// The frame's bytes.
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

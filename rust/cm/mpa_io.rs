// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA Request/Reply frames over a kernel socket (RFC 5044 §7.1, RFC 6581 §4):
//! read exactly one frame, never a byte of the FPDUs after it; write one frame.

use crate::{
    ffi::sock::Socket,
    proto::mpa::{self, FrameRepr, MpaError, HEADER_LEN, MAX_FRAME_LEN},
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

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Placeholder for the data-path engine (`rust/engine/`, RFC 5040/5041/5044)
//! until it lands: the `Conn` methods the verbs objects call. No connection
//! can exist yet, so none of these ever runs.

/// An established connection driving a QP.
pub(crate) struct Conn;

impl Conn {
    /// New SQ work.
    pub(crate) fn kick(&self) {}
    /// Local close.
    pub(crate) fn close(&self, _abortive: bool) {}
    /// Flush in-flight WQEs.
    pub(crate) fn flush(&self) {}
    /// Wait until no TX/RX runs.
    pub(crate) fn quiesce(&self) {}
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A QP's connection: binding the stream the CM set up (one step that
//! refuses a QP that is not the caller's, has a connection, is not in
//! INIT/RTR or is being destroyed) and the iw_cm's references on the
//! `ib_qp`.

use super::{Inner, Qp, QpState, MAX_RD_ATOMIC};
use crate::{engine::Conn, resources::mem::Access};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

impl Qp {
    /// The connection the engine runs, if any.
    pub(crate) fn conn(&self) -> Option<Arc<Conn>> {
        self.inner.lock().conn.clone()
    }

    /// May the caller bind a connection to this QP? The QP must be its
    /// own (a user QP: the creating process; a kernel QP: a kernel context),
    /// in INIT or RTR, without a connection and not being destroyed. Checked
    /// again by [`Self::bind_conn`] in the same lock hold as the binding;
    /// this early look lets the CM refuse before it answers the peer.
    pub(crate) fn may_bind(&self) -> Result {
        if !self.owner.is_caller() {
            return Err(EACCES);
        }
        let inner = self.inner.lock();
        Self::bindable(&inner)
    }

    fn bindable(inner: &Inner) -> Result {
        if inner.destroying || inner.conn.is_some() {
            return Err(EBUSY);
        }
        if !matches!(inner.state, QpState::Init | QpState::Rtr) {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Binds the connection the CM set up (after MPA) and moves the QP to
    /// RTS with the negotiated ORD/IRD (RFC 6581), in one lock hold: a QP
    /// that has a connection, is not in INIT/RTR or is being destroyed is
    /// refused and keeps what it had.
    ///
    /// The QP gets the remote rights the iw_cm gives an iWARP QP on its way
    /// to RTR (`iw_cm_init_qp_attr`: remote write and read). rdma_cm applies
    /// them only to a QP it moves itself (a kernel QP, or an accepting user's);
    /// the connecting side of a user QP still has INIT's local-write-only
    /// flags, and the stream must not depend on which side the consumer was.
    /// A consumer narrows them with `modify_qp` once connected.
    pub(crate) fn bind_conn(&self, conn: Arc<Conn>, ord: u32, ird: u32) -> Result {
        let mut inner = self.inner.lock();
        Self::bindable(&inner)?;
        self.access.fetch_or(
            Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0,
            Ordering::Relaxed,
        );
        inner.conn = Some(conn);
        inner.ord = ord.min(MAX_RD_ATOMIC);
        inner.ird = ird.min(MAX_RD_ATOMIC);
        inner.state = QpState::Rts;
        Ok(())
    }

    /// True while `conn` is the QP's connection and no destroy has begun:
    /// the CM's last look after attaching the stream. A destroy that began
    /// before it saw no stream to detach, so the starter detaches it itself.
    pub(crate) fn is_bound(&self, conn: &Arc<Conn>) -> bool {
        let inner = self.inner.lock();
        !inner.destroying && inner.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn))
    }

    /// Detaches `conn` if it is the QP's connection (a failed start, RESET).
    pub(crate) fn unbind_conn(&self, conn: &Arc<Conn>) {
        let old = {
            let mut inner = self.inner.lock();
            match &inner.conn {
                Some(c) if Arc::ptr_eq(c, conn) => inner.conn.take(),
                _ => None,
            }
        };
        drop(old);
    }

    /// `iw_add_ref`: the iw_cm keeps the `ib_qp` (any context).
    pub(crate) fn cm_hold(&self) {
        let mut refs = self.cm_refs.lock();
        *refs = refs.saturating_add(1);
    }

    /// `iw_rem_ref`: the iw_cm is done with the `ib_qp` (any context).
    pub(crate) fn cm_release(&self) {
        let mut refs = self.cm_refs.lock();
        *refs = refs.saturating_sub(1);
        if *refs == 0 {
            self.cm_released.notify_all();
        }
    }
}

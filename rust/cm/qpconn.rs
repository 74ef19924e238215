// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! QP connections from `modify_qp` (the out-of-band model of `ibv_rc_pingpong`
//! and perftest without `-R`): each device's listener on `qp_conn_port`, made
//! with the device (`link.rs`), and the CM's attempt for each arming (the
//! active side connects, the passive side waits). The MPA exchange and the
//! stream are the iw_cm path's (RFC 5044 §7.1, RFC 6581); what differs is
//! who is told: the QP, not a cm_id. See `qp/oob.rs` for the arming.

use super::{
    endpoint::{AttemptRef, Endpoint},
    ListenInner, Listener,
};
use crate::{
    kapi::{params, sock::Socket},
    objects::device::{Device, QpListener},
    objects::qp::{Attempt, Job, Qp},
};
use kernel::{new_mutex, new_work, prelude::*, sync::Arc};

/// The device's QP-connection listener, made now if there is none: `EINVAL`
/// if `qp_conn_port` is 0, the socket's error if the port cannot be had.
pub(crate) fn listener(dev: &Arc<Device>) -> Result<Arc<dyn QpListener>> {
    dev.qp_listener(|| {
        let port = params::cm().qp_port;
        if port == 0 {
            return Err(EINVAL);
        }
        let sock = Socket::listen_dev(dev.netdev(), port)?;
        let l = Arc::pin_init(
            pin_init!(Listener {
                work <- new_work!("rsiw_cm_listener"),
                ctr: dev.counters().clone(),
                inner <- new_mutex!(
                    ListenInner {
                        sock: None,
                        watch: None,
                        cm_id: None,
                        dev: Some(dev.clone()),
                        pending: KVec::new(),
                        n_pending: 0,
                    },
                    "rsiw_cm_listener"
                ),
            }),
            GFP_KERNEL,
        )?;
        l.listen(sock);
        Ok(l)
    })
}

/// Gives the CM the job of `qp`'s arming (after `modify_qp`): the active side
/// starts connecting, the passive side starts its wait and parked requests
/// look for their QP again. A job that cannot start fails the QP.
pub(crate) fn begin(qp: &Arc<Qp>, job: Job) {
    let ep = match Endpoint::start_qp(qp, job) {
        Ok(ep) => ep,
        Err(_) => return qp.oob_failed(job.gen),
    };
    let attempt: Arc<dyn Attempt> = match Arc::new(AttemptRef(ep.clone()), GFP_KERNEL) {
        Ok(a) => a,
        Err(_) => {
            AttemptRef(ep).cancel();
            return qp.oob_failed(job.gen);
        }
    };
    if !qp.oob_attach(job.gen, attempt) {
        // The arming ended meanwhile.
        return AttemptRef(ep).cancel();
    }
    if job.target.active {
        ep.kick_qp();
    } else if let Some(l) = qp.dev().qp_listener_if_any() {
        l.rearm();
    }
}

impl Listener {
    /// The device whose armed QPs this listener's requests are matched to
    /// (`None` for an iw_cm listener, or once stopped).
    pub(crate) fn qp_device(&self) -> Option<Arc<Device>> {
        self.inner.lock().dev.clone()
    }
}

impl QpListener for Listener {
    fn rearm(&self) {
        let pending: KVec<Arc<Endpoint>> = {
            let inner = self.inner.lock();
            let mut v = KVec::new();
            for p in inner.pending.iter().flatten() {
                if v.push(p.ep.clone(), GFP_KERNEL).is_err() {
                    break;
                }
            }
            v
        };
        for ep in pending.iter() {
            ep.rearm();
        }
    }

    fn stop(&self) {
        Listener::stop(self);
    }
}

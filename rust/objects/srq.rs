// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Receive queues: the ring of posted receive buffers a QP's RQ and a
//! shared receive queue (SRQ) both use, and the SRQ with its limit event
//! (RFC 5040 §5.3: untagged buffers are consumed in posting order).

use crate::queue::fifo::{Backend, Fifo};
use crate::queue::wr::{RecvWqe, MAX_SGE};
use crate::{
    kapi::{lock::IrqSpinLock, obj::eopnotsupp, srq::IbSrqRef},
    queue::uqueue::{BadWqe, UserRq},
};
use kernel::{prelude::*, sync::Arc};

/// Work requests per queue.
pub(crate) const MAX_WR: u32 = 1 << 14;
/// Shared receive queues per device.
pub(crate) const MAX_SRQ: u32 = 1 << 10;

/// A kernel consumer's receive WQEs, in posting order.
pub(crate) struct RecvRing(Fifo<RecvWqe>);

impl RecvRing {
    /// A ring of `size` entries (process context).
    pub(crate) fn new(size: u32) -> Result<Self> {
        Ok(Self(Fifo::new(size as usize)?))
    }

    /// Queues `wqe`; `ENOMEM` when full (the verbs' "queue full" status).
    pub(crate) fn push(&mut self, wqe: RecvWqe) -> Result {
        self.0.push(wqe).map_err(|_| ENOMEM)
    }

    /// Takes the oldest WQE.
    pub(crate) fn pop(&mut self) -> Option<RecvWqe> {
        self.0.pop_front()
    }

    /// Queued WQEs.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Capacity.
    pub(crate) fn size(&self) -> u32 {
        self.0.capacity() as u32
    }
}

/// The provider's receive ring and the next RQE the kernel takes
/// (free-running, kernel-owned).
pub(crate) struct UserRecv {
    /// The mapped ring.
    pub(crate) ring: UserRq,
    /// Next RQE to take.
    pub(crate) head: u32,
}

/// A receive queue: the kernel consumer's ring, or the provider's mapped one.
pub(crate) type RecvQueue = Backend<RecvRing, UserRecv>;

impl Backend<RecvRing, UserRecv> {
    /// Posts a kernel consumer's WQE; user queues are posted in their ring.
    pub(crate) fn push(&mut self, wqe: RecvWqe) -> Result {
        match self {
            Self::Kernel(r) => r.push(wqe),
            Self::User(_) => Err(EINVAL),
        }
    }

    /// Takes the oldest WQE; an invalid user RQE is consumed and returned
    /// as the error (its owner completes it with the error status).
    pub(crate) fn pop(&mut self) -> Result<Option<RecvWqe>, BadWqe> {
        match self {
            Self::Kernel(r) => Ok(r.pop()),
            Self::User(u) => u.ring.take(&mut u.head),
        }
    }

    /// WQEs posted and not taken (a corrupt user ring counts as empty).
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Kernel(r) => r.len(),
            Self::User(u) => u.ring.pending(u.head).unwrap_or(0) as usize,
        }
    }

    /// Capacity.
    pub(crate) fn size(&self) -> u32 {
        match self {
            Self::Kernel(r) => r.size(),
            Self::User(u) => u.ring.entries(),
        }
    }

    /// The provider's ring, if this is a user queue.
    pub(crate) fn user(&self) -> Option<&UserRq> {
        match self {
            Self::Kernel(_) => None,
            Self::User(u) => Some(&u.ring),
        }
    }
}

/// The fields [`Srq::inner`] protects.
struct Inner {
    ring: RecvQueue,
    /// Armed limit: an event fires when fewer WQEs remain; 0 = disarmed.
    limit: u32,
}

/// A shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    ib: IbSrqRef,
    /// Protection domain number.
    pd: u32,
    max_sge: u32,
    /// Taken from any context (post_srq_recv, RX placement in softirq).
    #[pin]
    inner: IrqSpinLock<Inner>,
}

/// SRQ attributes (create, modify, query).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SrqAttr {
    /// Work requests.
    pub(crate) max_wr: u32,
    /// SGEs per work request.
    pub(crate) max_sge: u32,
    /// Limit (0: disarmed).
    pub(crate) limit: u32,
}

impl Srq {
    /// A kernel SRQ of `attr.max_wr` entries, or (with `user`) one whose ring
    /// `user(max_wr)` made; returns the granted attributes.
    pub(crate) fn new(
        ib: IbSrqRef,
        pd: u32,
        attr: SrqAttr,
        user: Option<impl FnOnce(u32) -> Result<UserRq>>,
    ) -> Result<(Arc<Self>, SrqAttr)> {
        if attr.max_wr == 0 || attr.max_wr > MAX_WR || attr.max_sge as usize > MAX_SGE {
            return Err(EINVAL);
        }
        if attr.limit > attr.max_wr {
            return Err(EINVAL);
        }
        let ring = match user {
            Some(make) => make(MAX_WR).map(|ring| RecvQueue::User(UserRecv { ring, head: 0 })),
            None => RecvRing::new(attr.max_wr).map(RecvQueue::Kernel),
        };
        let made = ring.and_then(|ring| {
            Arc::pin_init(
                pin_init!(Self {
                    ib,
                    pd,
                    max_sge: attr.max_sge.max(1),
                    inner <- crate::new_irq_spinlock!(Inner { ring, limit: attr.limit }, "rsiw_srq"),
                }),
                GFP_KERNEL,
            )
        });
        let srq = made?;
        let max_wr = srq.inner.lock().ring.size();
        let granted = SrqAttr {
            max_sge: srq.max_sge,
            max_wr,
            ..attr
        };
        Ok((srq, granted))
    }

    /// The SRQ's protection domain number.
    pub(crate) fn pd(&self) -> u32 {
        self.pd
    }

    /// Posts a receive buffer (`post_srq_recv`, any context).
    pub(crate) fn post(&self, wqe: RecvWqe) -> Result {
        if u32::from(wqe.num_sge) > self.max_sge {
            return Err(EINVAL);
        }
        self.inner.lock().ring.push(wqe)
    }

    /// Runs `f` on the provider's ring (the create response needs it).
    pub(crate) fn with_user<R>(&self, f: impl FnOnce(&UserRq) -> R) -> Option<R> {
        self.inner.lock().ring.user().map(f)
    }

    /// Takes the next buffer for an arriving Send; raises
    /// `IB_EVENT_SRQ_LIMIT_REACHED` (once per arming) when fewer than the
    /// limit remain. An invalid user RQE comes back as the error.
    pub(crate) fn take(&self) -> Result<Option<RecvWqe>, BadWqe> {
        let (wqe, fire) = {
            let mut inner = self.inner.lock();
            let wqe = inner.ring.pop();
            let fire = inner.limit != 0 && (inner.ring.len() as u64) < u64::from(inner.limit);
            if fire {
                inner.limit = 0;
            }
            (wqe, fire)
        };
        if fire {
            self.ib.limit_reached();
        }
        wqe
    }

    /// `modify_srq`: arms the limit (`IB_SRQ_LIMIT`); resizing is refused.
    pub(crate) fn modify(&self, max_wr: Option<u32>, limit: Option<u32>) -> Result {
        let mut inner = self.inner.lock();
        if let Some(n) = max_wr {
            if n != inner.ring.size() {
                return Err(eopnotsupp());
            }
        }
        if let Some(l) = limit {
            if l > inner.ring.size() {
                return Err(EINVAL);
            }
            inner.limit = l;
        }
        Ok(())
    }

    /// `query_srq`.
    pub(crate) fn query(&self) -> SrqAttr {
        let inner = self.inner.lock();
        SrqAttr {
            max_wr: inner.ring.size(),
            max_sge: self.max_sge,
            limit: inner.limit,
        }
    }
}

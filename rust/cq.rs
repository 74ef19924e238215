// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Completion queues: the completion ring of kernel consumers, arming
//! (next / solicited, RFC 5040 §5.3 Solicited Event), completion events and
//! overflow (`IB_EVENT_CQ_ERR`).

use crate::{
    device::Device,
    ffi::{cq::IbCqRef, lock::IrqSpinLock, qp::IbQpRef},
};
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

/// Work completion status; values are the verbs ABI's (`IB_WC_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WcStatus {
    /// Completed.
    #[default]
    Success = 0,
    /// Local length error (message longer than the buffer).
    LocLenErr = 1,
    /// Local QP operation error.
    LocQpOpErr = 2,
    /// Local protection error (bad lkey, PD or rights).
    LocProtErr = 4,
    /// Flushed: the QP went to ERROR before the WR was processed.
    WrFlushErr = 5,
    /// Memory window bind error.
    MwBindErr = 6,
    /// Bad response.
    BadRespErr = 7,
    /// Local access error.
    LocAccessErr = 8,
    /// Remote invalid request.
    RemInvReqErr = 9,
    /// Remote access error (Terminate: STag/bounds/rights at the peer).
    RemAccessErr = 10,
    /// Remote operation error.
    RemOpErr = 11,
    /// Fatal error.
    FatalErr = 19,
    /// General error.
    GeneralErr = 21,
}

/// Work completion opcode; values are the verbs ABI's (`IB_WC_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WcOpcode {
    /// Send (any variant).
    #[default]
    Send = 0,
    /// RDMA Write.
    RdmaWrite = 1,
    /// RDMA Read.
    RdmaRead = 2,
    /// Compare and swap.
    CompSwap = 3,
    /// Fetch and add.
    FetchAdd = 4,
    /// Local invalidate.
    LocalInv = 6,
    /// Fast registration.
    RegMr = 10,
    /// Masked compare and swap.
    MaskedCompSwap = 11,
    /// Masked fetch and add.
    MaskedFetchAdd = 12,
    /// Receive.
    Recv = 128,
    /// Receive of an RDMA Write with Immediate Data.
    RecvRdmaWithImm = 129,
}

/// Work completion flags (`IB_WC_WITH_IMM`, `IB_WC_WITH_INVALIDATE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WcFlags(pub(crate) u32);

impl WcFlags {
    /// No flags.
    pub(crate) const NONE: Self = Self(0);
    /// `ex` carries immediate data.
    pub(crate) const WITH_IMM: Self = Self(2);
    /// `ex` carries the invalidated STag.
    pub(crate) const WITH_INV: Self = Self(4);
}

/// One completion.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cqe {
    /// The consumer's work request id.
    pub(crate) wr_id: u64,
    /// What completed.
    pub(crate) opcode: WcOpcode,
    /// How.
    pub(crate) status: WcStatus,
    /// Bytes received (receives) or transferred.
    pub(crate) byte_len: u32,
    /// The QP the work request was posted to.
    pub(crate) qp_num: u32,
    /// Its `ib_qp`, for the kernel `ib_wc`.
    pub(crate) qp: Option<IbQpRef>,
    /// [`WcFlags`].
    pub(crate) flags: WcFlags,
    /// Immediate data (64-bit, RFC 7306) or the invalidated STag.
    pub(crate) ex: u64,
    /// The message was solicited (RFC 5040 §5.3); decides solicited events.
    pub(crate) solicited: bool,
}

/// What `req_notify_cq` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    None,
    /// Any next completion.
    Next,
    /// The next solicited or failed completion.
    Solicited,
}

/// The fields [`Cq::inner`] protects.
struct Inner {
    ring: KVVec<Cqe>,
    /// Oldest unpolled entry.
    head: usize,
    count: usize,
    arm: Arm,
    /// An overflow was reported; later overflows are not reported again.
    overflowed: bool,
}

/// A completion queue.
#[pin_data]
pub(crate) struct Cq {
    ib: IbCqRef,
    /// Taken from any context (engine in softirq/work, poll from the consumer,
    /// possibly in hardirq); never held while calling the consumer.
    #[pin]
    inner: IrqSpinLock<Inner>,
}

/// Completion queues per device.
pub(crate) const MAX_CQ: u32 = 1 << 14;
/// Entries per completion queue.
pub(crate) const MAX_CQE: u32 = 1 << 16;

/// Whether `req_notify_cq` should report that completions are already queued.
pub(crate) struct Missed(pub(crate) bool);

impl Cq {
    /// A kernel CQ of at least `cqe` entries; returns it and its size.
    pub(crate) fn new(dev: &Device, ib: IbCqRef, cqe: u32) -> Result<(Arc<Self>, u32)> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        if !dev.get_cq() {
            return Err(ENOMEM);
        }
        let ring = match KVVec::from_elem(Cqe::default(), cqe as usize, GFP_KERNEL) {
            Ok(r) => r,
            Err(e) => {
                dev.put_cq();
                return Err(e.into());
            }
        };
        let cq = Arc::pin_init(
            pin_init!(Self {
                ib,
                inner <- crate::new_irq_spinlock!(
                    Inner { ring, head: 0, count: 0, arm: Arm::None, overflowed: false },
                    "rsiw_cq"
                ),
            }),
            GFP_KERNEL,
        );
        if cq.is_err() {
            dev.put_cq();
        }
        Ok((cq?, cqe))
    }

    /// Releases the CQ's device slot (destroy_cq); no QP uses it any more.
    pub(crate) fn destroy(&self, dev: &Device) {
        dev.put_cq();
    }

    /// Adds a completion and raises the completion event the arming asks
    /// for; `ENOSPC` on overflow, which is reported once as `IB_EVENT_CQ_ERR`.
    pub(crate) fn push(&self, cqe: Cqe) -> Result {
        let (notify, overflow) = {
            let mut inner = self.inner.lock();
            let size = inner.ring.len();
            if inner.count >= size {
                let first = !inner.overflowed;
                inner.overflowed = true;
                (false, Some(first))
            } else {
                let tail = (inner.head + inner.count) % size;
                if let Some(slot) = inner.ring.get_mut(tail) {
                    *slot = cqe;
                }
                inner.count += 1;
                let fire = match inner.arm {
                    Arm::None => false,
                    Arm::Next => true,
                    Arm::Solicited => cqe.solicited || cqe.status != WcStatus::Success,
                };
                if fire {
                    inner.arm = Arm::None;
                }
                (fire, None)
            }
        };
        // The consumer's handlers run without rsiw locks held.
        match overflow {
            Some(first) => {
                if first {
                    self.ib.event_err();
                }
                Err(ENOSPC)
            }
            None => {
                if notify {
                    self.ib.comp();
                }
                Ok(())
            }
        }
    }

    /// Hands up to `max` completions, oldest first, to `out`; returns how many.
    pub(crate) fn poll(&self, max: usize, mut out: impl FnMut(usize, &Cqe)) -> usize {
        let mut inner = self.inner.lock();
        let size = inner.ring.len();
        let mut n = 0;
        while n < max && inner.count > 0 {
            if let Some(cqe) = inner.ring.get(inner.head) {
                out(n, cqe);
            }
            inner.head = (inner.head + 1) % size;
            inner.count -= 1;
            n += 1;
        }
        n
    }

    /// Arms the CQ for the next (or next solicited) completion; with
    /// `report_missed`, says whether completions are already queued.
    pub(crate) fn req_notify(&self, solicited_only: bool, report_missed: bool) -> Missed {
        let mut inner = self.inner.lock();
        // A pending "next" arm is not narrowed by a later "solicited" one.
        if !(solicited_only && inner.arm == Arm::Next) {
            inner.arm = if solicited_only { Arm::Solicited } else { Arm::Next };
        }
        Missed(report_missed && inner.count > 0)
    }

    /// Entries the ring holds.
    pub(crate) fn size(&self) -> u32 {
        self.inner.lock().ring.len() as u32
    }
}

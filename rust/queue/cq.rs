// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Completion queues: the completion ring of kernel consumers, arming
//! (next / solicited, RFC 5040 §5.3 Solicited Event), completion events and
//! overflow (`IB_EVENT_CQ_ERR`).

use crate::queue::fifo::{Backend, Fifo};
use crate::{
    kapi::{cq::IbCqRef, lock::IrqSpinLock, qp::IbQpRef},
    queue::uqueue::UserCq,
};
use kernel::{prelude::*, sync::Arc};

/// Work completion status; values are the verbs ABI's (`IB_WC_*`). Some are
/// not produced yet but belong to the user ABI's mapping.
#[allow(dead_code)]
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

impl WcStatus {
    /// The status whose `IB_WC_*` value is `code`; `GeneralErr` for a value
    /// not listed.
    pub(crate) const fn from_code(code: u8) -> Self {
        match code {
            0 => Self::Success,
            1 => Self::LocLenErr,
            2 => Self::LocQpOpErr,
            4 => Self::LocProtErr,
            5 => Self::WrFlushErr,
            6 => Self::MwBindErr,
            7 => Self::BadRespErr,
            8 => Self::LocAccessErr,
            9 => Self::RemInvReqErr,
            10 => Self::RemAccessErr,
            11 => Self::RemOpErr,
            19 => Self::FatalErr,
            _ => Self::GeneralErr,
        }
    }
}

// `from_code` gives every status back from its value.
const _: () = {
    use WcStatus::*;
    let all = [
        Success,
        LocLenErr,
        LocQpOpErr,
        LocProtErr,
        WrFlushErr,
        MwBindErr,
        BadRespErr,
        LocAccessErr,
        RemInvReqErr,
        RemAccessErr,
        RemOpErr,
        FatalErr,
        GeneralErr,
    ];
    let mut i = 0;
    while i < all.len() {
        let s = all[i] as u32;
        assert!(s < 256 && WcStatus::from_code(s as u8) as u32 == s);
        i += 1;
    }
};

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
    /// Memory window bind.
    BindMw = 5,
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

/// A kernel consumer's ring (polled with `poll_cq`).
struct KernelRing {
    ring: Fifo<Cqe>,
    arm: Arm,
}

/// Where completions go: a kernel consumer's ring, or the provider's mapped
/// one (it polls and arms in user space).
type Store = Backend<KernelRing, UserCq>;

/// The fields [`Cq::inner`] protects.
struct Inner {
    store: Store,
    /// An overflow was reported; later overflows are not reported again.
    overflowed: bool,
}

/// Outcome of adding a completion under the lock.
enum Pushed {
    /// Stored; raise the completion event if true.
    Stored(bool),
    /// Lost: the ring is full.
    Overflow,
}

impl KernelRing {
    fn push(&mut self, cqe: Cqe) -> Pushed {
        // RFC 5040 §5.3: a solicited arm fires on solicited (or failed) completions.
        let fire = match self.arm {
            Arm::None => false,
            Arm::Next => true,
            Arm::Solicited => cqe.solicited || cqe.status != WcStatus::Success,
        };
        if self.ring.push(cqe).is_err() {
            return Pushed::Overflow;
        }
        if fire {
            self.arm = Arm::None;
        }
        Pushed::Stored(fire)
    }
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
/// Entries per completion queue (`max_cqe`): the most a user CQ's ring holds,
/// and kernel CQs the same, so that the one limit the device reports holds for
/// both (a CQ of `max_cqe` entries must be creatable: pyverbs' `test_cq` does it).
pub(crate) const MAX_CQE: u32 = crate::abi::ring::MAX_RING_ENTRIES;

/// Whether `req_notify_cq` should report that completions are already queued.
pub(crate) struct Missed(pub(crate) bool);

impl Cq {
    /// A kernel CQ of at least `cqe` entries, or (with `user`) a CQ whose
    /// ring `user` made; returns it and its size.
    pub(crate) fn new(
        ib: IbCqRef,
        cqe: u32,
        user: Option<impl FnOnce(u32) -> Result<UserCq>>,
    ) -> Result<(Arc<Self>, u32)> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        let (store, size) = match user {
            Some(make) => {
                let u = make(MAX_CQE)?;
                let n = u.entries();
                (Store::User(u), n)
            }
            None => (
                Store::Kernel(KernelRing {
                    ring: Fifo::new(cqe as usize)?,
                    arm: Arm::None,
                }),
                cqe,
            ),
        };
        let cq = Arc::pin_init(
            pin_init!(Self {
                ib,
                inner <- crate::new_irq_spinlock!(Inner { store, overflowed: false }, "rsiw_cq"),
            }),
            GFP_KERNEL,
        )?;
        Ok((cq, size))
    }

    /// Runs `f` on the user ring (the create response needs it).
    pub(crate) fn with_user<R>(&self, f: impl FnOnce(&UserCq) -> R) -> Option<R> {
        match &self.inner.lock().store {
            Store::User(u) => Some(f(u)),
            Store::Kernel(_) => None,
        }
    }

    /// Adds a completion and raises the completion event the arming asks
    /// for; `ENOSPC` on overflow, which is reported once as `IB_EVENT_CQ_ERR`.
    pub(crate) fn push(&self, cqe: Cqe) -> Result {
        let (notify, overflow) = {
            let mut inner = self.inner.lock();
            let pushed = match &mut inner.store {
                Store::Kernel(k) => k.push(cqe),
                Store::User(u) => match u.push(&cqe) {
                    Ok(fire) => Pushed::Stored(fire),
                    Err(_) => Pushed::Overflow,
                },
            };
            match pushed {
                Pushed::Stored(fire) => (fire, None),
                Pushed::Overflow => {
                    let first = !inner.overflowed;
                    inner.overflowed = true;
                    (false, Some(first))
                }
            }
        };
        // The consumer's handlers run without rsiw locks held.
        match overflow {
            Some(first) => {
                if first {
                    // Once per CQ: the consumer sized it too small, or did not
                    // poll; the completion is lost (verbs: CQ overflow).
                    pr_warn!("CQ overflow: a completion was lost, IB_EVENT_CQ_ERR raised\n");
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
    /// User CQs are polled by the provider: nothing here.
    pub(crate) fn poll(&self, max: usize, mut out: impl FnMut(usize, &Cqe)) -> usize {
        let mut inner = self.inner.lock();
        let Store::Kernel(k) = &mut inner.store else {
            return 0;
        };
        let mut n = 0;
        while n < max {
            let Some(cqe) = k.ring.pop_front() else { break };
            out(n, &cqe);
            n += 1;
        }
        n
    }

    /// Arms the CQ for the next (or next solicited) completion; with
    /// `report_missed`, says whether completions are already queued.
    pub(crate) fn req_notify(&self, solicited_only: bool, report_missed: bool) -> Missed {
        let mut inner = self.inner.lock();
        let Store::Kernel(k) = &mut inner.store else {
            // User CQs arm through their ring header.
            return Missed(false);
        };
        // A pending "next" arm is not narrowed by a later "solicited" one.
        if !(solicited_only && k.arm == Arm::Next) {
            k.arm = if solicited_only {
                Arm::Solicited
            } else {
                Arm::Next
            };
        }
        Missed(report_missed && !k.ring.is_empty())
    }
}

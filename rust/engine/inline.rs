// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause

//! Inline TX: transmit work that a process-context TX run causes on its own
//! device is done before that run returns, instead of waking a worker.
//!
//! When both ends of a connection are on one host (loopback), sending an
//! RDMA Read Request or Atomic Request runs the peer's receive path in this
//! task's softirq (`local_bh_enable` in the socket send): the peer engine
//! queues its Read or Atomic Response and kicks its TX. Without this, that
//! kick wakes a worker, and the round trip waits for the scheduler to run it
//! (on a busy-polling host, the larger part of the round trip). With it, the
//! doorbell's TX run (`Engine::tx_direct`) answers the request, and then
//! places the response, before it returns to user space.
//!
//! Only kicks made by the task that is running the doorbell's TX (its own
//! process context, or a softirq that interrupted it on its CPU) are taken
//! here; every other kick goes to the workqueue as before.

use super::{tx::Runner, Engine};
use crate::kapi::lock::IrqSpinLock;
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

/// Engines one drain holds at most; more go to the workqueue.
const PENDING: usize = 8;
/// Engine runs one doorbell does at most before it leaves the rest to the
/// workqueue (a bound on the time a system call spends on others' work).
const MAX_RUNS: usize = 32;

/// A device's inline TX state; its lock is a leaf, never held across a
/// transmission.
pub(crate) struct InlineTx {
    /// The task draining (its `task_struct` address), 0 if none.
    drainer: usize,
    /// Engines kicked by the drainer, each holding one `busy` count.
    pending: [Option<Arc<Engine>>; PENDING],
}

impl InlineTx {
    /// No drainer, nothing pending.
    pub(crate) fn new() -> Self {
        Self {
            drainer: 0,
            pending: core::array::from_fn(|_| None),
        }
    }
}

/// A device's inline TX state behind its leaf lock, shared by the device's
/// engines.
#[pin_data]
pub(crate) struct InlineTxCell {
    #[pin]
    inner: IrqSpinLock<InlineTx>,
}

impl InlineTxCell {
    /// No drainer, nothing pending.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                inner <- crate::new_irq_spinlock!(InlineTx::new(), "rsiw_inline_tx"),
            }),
            GFP_KERNEL,
        )
    }
}

/// What [`Engine::defer_inline`] did with a kick.
pub(super) enum Deferred {
    /// Taken: the drainer runs the engine and drops its `busy` count.
    Taken,
    /// The engine is pending already: drop this kick's `busy` count.
    Pending,
    /// Not the drainer's: queue the work item.
    No,
}

/// The running task, as a number to compare.
fn current_task() -> usize {
    core::ptr::from_ref(kernel::current!()) as usize
}

impl Engine {
    /// Becomes the device's drainer if there is none; true if so (the
    /// caller must then call [`Engine::drain_inline`]).
    pub(super) fn begin_inline(&self) -> bool {
        let mut g = self.inline.inner.lock();
        if g.drainer != 0 {
            return false;
        }
        g.drainer = current_task();
        true
    }

    /// A kick (holding a `busy` count) from the drainer's own task is kept
    /// for [`Engine::drain_inline`].
    pub(super) fn defer_inline(self: &Arc<Self>) -> Deferred {
        let mut g = self.inline.inner.lock();
        if g.drainer == 0 || g.drainer != current_task() {
            return Deferred::No;
        }
        if g.pending.iter().flatten().any(|e| Arc::ptr_eq(e, self)) {
            return Deferred::Pending;
        }
        match g.pending.iter_mut().find(|e| e.is_none()) {
            Some(slot) => {
                *slot = Some(self.clone());
                Deferred::Taken
            }
            None => Deferred::No,
        }
    }

    /// Runs the TX of the engines kicked meanwhile (and those they kick in
    /// turn), then stops draining; with `run` false, queues them instead.
    /// Process context, no locks held.
    pub(super) fn drain_inline(&self, run: bool, by: Runner) {
        let dev = &self.inline.inner;
        let mut runs = if run { 0 } else { MAX_RUNS };
        // Engines may be pending once draining stops.
        let mut left_over = true;
        loop {
            let (next, last) = {
                let mut g = dev.lock();
                // Stop taking kicks before the last run: what is kicked from
                // now on goes to the workqueue.
                if runs >= MAX_RUNS {
                    g.drainer = 0;
                    break;
                }
                let next = g.pending.iter_mut().find_map(Option::take);
                runs += 1;
                let last = next.is_none() || runs >= MAX_RUNS;
                if last {
                    g.drainer = 0;
                }
                // None pending and no drainer (so no kick is kept from now
                // on): nothing is left over, the usual end.
                left_over = next.is_some();
                (next, last)
            };
            if let Some(e) = next {
                e.run_deferred_kick(by);
            }
            if last {
                break;
            }
        }
        if !left_over {
            return;
        }
        // Left over after MAX_RUNS: hand to the workqueue.
        loop {
            let next = dev.lock().pending.iter_mut().find_map(Option::take);
            let Some(e) = next else { break };
            e.requeue_kick();
        }
    }

    /// A kick taken by the drainer: TX runs here, then its `busy` count
    /// ends.
    fn run_deferred_kick(self: &Arc<Self>, by: Runner) {
        if !self.stopped.load(Ordering::SeqCst) {
            self.tx_run(by);
        }
        self.unbusy();
    }
}

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Queueing a connection's work item on the CPU `wq.c` chooses.

use super::bindings;
use kernel::{
    sync::Arc,
    workqueue::{HasWork, RawWorkItem, WorkItem},
};

/// Queues `w` on the high-priority pool of a CPU chosen from `hint`, never
/// the calling CPU if another is online, unless the caller is a worker
/// (then on its CPU; `wq.c` says why). `Err(w)` if it is queued already.
pub(crate) fn enqueue_tx<T>(w: Arc<T>, hint: u32) -> Result<(), Arc<T>>
where
    T: WorkItem<Pointer = Arc<T>> + HasWork<T> + Send + Sync + 'static,
{
    // SAFETY: the shim passes `__enqueue`'s `work_struct` to `queue_work_on`
    // once and returns its result (false only if already pending); `T` is
    // `Send` and `'static`, so the work may run on any CPU, at any time.
    unsafe { w.__enqueue(|work| bindings::rsiw_shim_queue_tx_work(work, hint)) }
}

/// Queues `w` on the calling CPU's high-priority pool, for received bytes
/// the network softirq left to it (`wq.c` says why this CPU). `Err(w)`
/// if it is queued already.
pub(crate) fn enqueue_rx<T>(w: Arc<T>) -> Result<(), Arc<T>>
where
    T: WorkItem<Pointer = Arc<T>> + HasWork<T> + Send + Sync + 'static,
{
    // SAFETY: as in `enqueue_tx`.
    unsafe { w.__enqueue(|work| bindings::rsiw_shim_queue_rx_work(work)) }
}

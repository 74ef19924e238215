// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Queueing a connection's TX work item on the CPU `shim_wq.c` chooses.

use super::bindings;
use kernel::{
    sync::Arc,
    workqueue::{HasWork, RawWorkItem, WorkItem},
};

/// Queues `w` on the high-priority pool of a CPU chosen from `hint`, never
/// the calling CPU if another is online. `Err(w)` if it is queued already.
pub(crate) fn enqueue_tx<T>(w: Arc<T>, hint: u32) -> Result<(), Arc<T>>
where
    T: WorkItem<Pointer = Arc<T>> + HasWork<T>,
{
    // SAFETY: `__enqueue` passes the `work_struct` embedded in `w`, valid for
    // the call; the shim hands it to `queue_work_on` once and returns its
    // result, which is false only if the work is pending already, as
    // `__enqueue` requires. `Engine` work items are `Send` (the function
    // pointer may run on any CPU).
    unsafe { w.__enqueue(|work| bindings::rsiw_shim_queue_tx_work(work, hint)) }
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw verbs-object shim interface (included by shim.h, so it is also
 * bindgen input): irqsave spinlocks, the CQ/QP/SRQ/MR containers, the STag
 * and QP-number tables, memory access helpers and the Rust callbacks of the
 * object verbs.
 */
#ifndef RSIW_SHIM_OBJ_H
#define RSIW_SHIM_OBJ_H

#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

/* --- irqsave spinlock (rust/ffi/lock.rs) --- */
unsigned long rsiw_shim_spin_lock_irqsave(spinlock_t *lock);
void rsiw_shim_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

#endif /* RSIW_SHIM_OBJ_H */

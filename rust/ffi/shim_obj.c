// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C shim for the verbs objects: the macros and static inlines behind
 * irqsave spinlocks, xarray-based tables, page mapping and object events,
 * which bindgen cannot expose.
 */
#include "shim.h"

unsigned long rsiw_shim_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rsiw_shim_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

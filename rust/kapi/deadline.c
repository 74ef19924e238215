// SPDX-License-Identifier: GPL-2.0
/*
 * Connection setup deadlines (deadline.rs): a kernel timer per connection in MPA
 * setup that hands its context to Rust once, and the clock they count in.
 */
#include <linux/slab.h>
#include <linux/timer.h>
#include "bindings.h"

/* A handshake deadline: a timer that hands its context to Rust once. */
struct rsiw_deadline {
	struct timer_list timer;
	const void *ctx;
	/* Whose it is (the Rust side's `Expire::KIND`). */
	unsigned int kind;
	struct list_head node;
};

/* Every deadline, so that unload can stop a timer whose owner leaked. */
static LIST_HEAD(rsiw_deadlines);
static DEFINE_SPINLOCK(rsiw_deadlines_lock);

static void rsiw_deadline_fire(struct timer_list *t)
{
	struct rsiw_deadline *d = timer_container_of(d, t, timer);

	rsiw_rust_deadline_fired(d->kind, d->ctx);
}

/* CLOCK_MONOTONIC in milliseconds (the kernel crate's clock API differs by kernel). */
s64 rsiw_shim_now_ms(void)
{
	return ktime_to_ms(ktime_get());
}

struct rsiw_deadline *rsiw_shim_deadline_new(unsigned int kind)
{
	struct rsiw_deadline *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	d->kind = kind;
	timer_setup(&d->timer, rsiw_deadline_fire, 0);
	spin_lock_bh(&rsiw_deadlines_lock);
	list_add(&d->node, &rsiw_deadlines);
	spin_unlock_bh(&rsiw_deadlines_lock);
	return d;
}

void rsiw_shim_deadline_arm(struct rsiw_deadline *d, const void *ctx,
			    unsigned int ms)
{
	d->ctx = ctx;
	mod_timer(&d->timer, jiffies + msecs_to_jiffies(ms));
}

bool rsiw_shim_deadline_cancel(struct rsiw_deadline *d, const void **ctx)
{
	/* Waits for a running rsiw_deadline_fire(), which took its context. */
	if (!timer_delete_sync(&d->timer))
		return false;
	*ctx = d->ctx;
	return true;
}

void rsiw_shim_deadline_free(struct rsiw_deadline *d)
{
	/* An armed timer holds a reference on its owner: never armed here. */
	WARN_ON_ONCE(timer_pending(&d->timer));
	spin_lock_bh(&rsiw_deadlines_lock);
	list_del(&d->node);
	spin_unlock_bh(&rsiw_deadlines_lock);
	kfree(d);
}

/*
 * Unload, after every device is gone: every connection in setup was ended by
 * its listener's stop or its cm_id, except one whose connection request the
 * iw_cm dropped without a cm_id (allocation failure); its timer must not fire
 * into the unloaded module. Its memory stays leaked, as before the deadline.
 */
void rsiw_shim_deadlines_shutdown(void)
{
	struct rsiw_deadline *d;
	unsigned int n = 0;

	spin_lock_bh(&rsiw_deadlines_lock);
	list_for_each_entry(d, &rsiw_deadlines, node) {
		if (timer_shutdown(&d->timer))
			n++;
	}
	spin_unlock_bh(&rsiw_deadlines_lock);
	if (n)
		pr_warn("rsiw: %u connection setup deadlines armed at unload\n", n);
}

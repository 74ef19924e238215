/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Connection setup deadlines (deadline.c, wrapped by deadline.rs).
 */
#ifndef RSIW_DEADLINE_H
#define RSIW_DEADLINE_H

#include <linux/types.h>

/* A handshake deadline (timer and context), allocated by the shim. */
struct rsiw_deadline;

s64 rsiw_shim_now_ms(void);
struct rsiw_deadline *rsiw_shim_deadline_new(unsigned int kind);
void rsiw_shim_deadline_arm(struct rsiw_deadline *d, const void *ctx,
			    unsigned int ms);
bool rsiw_shim_deadline_cancel(struct rsiw_deadline *d, const void **ctx);
void rsiw_shim_deadline_free(struct rsiw_deadline *d);

/* Unload: stops every timer still armed. */
void rsiw_shim_deadlines_shutdown(void);

/* --- Rust entry (rust/entry/cm.rs) --- */
void rsiw_rust_deadline_fired(unsigned int kind, const void *ctx);

#endif /* RSIW_DEADLINE_H */

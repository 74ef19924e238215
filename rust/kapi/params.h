/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw's module parameters (params.c, read through params.rs): every one is
 * defined in params.c.
 */
#ifndef RSIW_PARAMS_H
#define RSIW_PARAMS_H

#include <linux/types.h>

/* The CM's module parameters. */
struct rsiw_cm_params {
	bool crc;
	bool peer_to_peer;
	unsigned int timeout_ms;
	unsigned int accept_timeout_ms;
	unsigned int max_pending;
	bool draft_swap;
	bool large_fpdu;
	bool markers;
	/* QP connections from modify_qp: the listener's port (0: off), the
	 * limit on a connection from RTR/RTS to the stream.
	 */
	unsigned int qp_port;
	unsigned int qp_timeout_ms;
};

void rsiw_shim_cm_params(struct rsiw_cm_params *p);
unsigned int rsiw_shim_zc_min(void);
/* The socket callbacks read it in the network softirq (sock.c). */
unsigned int rsiw_shim_rx_defer_bytes(void);

#endif /* RSIW_PARAMS_H */

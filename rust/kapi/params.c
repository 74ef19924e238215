// SPDX-License-Identifier: GPL-2.0
/*
 * Every module parameter of rsiw, and the readers the Rust side calls
 * (params.rs). A reader returns the value bounded as the code expects it.
 */
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/compiler.h>
#include "bindings.h"

static bool mpa_crc = true;
module_param(mpa_crc, bool, 0644);
MODULE_PARM_DESC(mpa_crc, "Ask for MPA CRCs in MPA Requests and Replies (a peer's request for CRCs is always honoured; RFC 5044 7.1.2)");

static bool mpa_peer_to_peer = true;
module_param(mpa_peer_to_peer, bool, 0644);
MODULE_PARM_DESC(mpa_peer_to_peer, "As initiator, ask for the RFC 6581 peer-to-peer model (an RTR message before any other FPDU)");

static unsigned int mpa_timeout_ms = 10000;
module_param(mpa_timeout_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_ms, "Limit on the TCP connect, on each whole MPA Request/Reply frame (from its first octet awaited to its last received) and on the wait for the peer's close after ours, in ms");

static unsigned int mpa_accept_timeout_ms = 60000;
module_param(mpa_accept_timeout_ms, uint, 0644);
MODULE_PARM_DESC(mpa_accept_timeout_ms, "Limit on the time from a connection request reported to the ULP to its accept or reject, in ms; the connection is then refused (0: no limit)");

static unsigned int mpa_max_pending = 1024;
module_param(mpa_max_pending, uint, 0644);
MODULE_PARM_DESC(mpa_max_pending, "Most connections per listener whose MPA Request is being read or awaits the ULP's accept or reject; more are reset");

static bool mpa_large_fpdu = true;
module_param(mpa_large_fpdu, bool, 0644);
MODULE_PARM_DESC(mpa_large_fpdu, "Offer to take FPDUs longer than the EMSS (a flag bit RFC 5044 reserves; an RFC peer ignores it) and send them, up to 64 KiB, to a peer that offered the same; TCP segments them. Off: RFC 5044 FPDU sizes both ways. Applies to connections established afterwards");

static bool mpa_markers;
module_param(mpa_markers, bool, 0644);
MODULE_PARM_DESC(mpa_markers, "Ask for MPA Markers (RFC 5044 4.3, the M flag) in MPA Requests and Replies: the peer then inserts a Marker every 512 octets of what it sends. A peer's request for Markers is always honoured. Off by default (RFC 5044 7.1.2 lets either side ask); applies to connections established afterwards");

static bool draft_swap;
module_param(draft_swap, bool, 0644);
MODULE_PARM_DESC(draft_swap, "Also execute the Atomic Swap of draft-ietf-storm-rdma-ext-03 (AOpCode 0x1) as responder; RFC 7306 dropped it, so by default it is an unsupported AOpCode and ends the stream with a Terminate. Applies to connections established afterwards");

static unsigned int rx_defer_bytes = 32768;
module_param(rx_defer_bytes, uint, 0644);
MODULE_PARM_DESC(rx_defer_bytes, "Received octets waiting on a connection that carries large segments (16 KiB of payload or more) from which the network softirq leaves their parsing and placement to the connection's work item (same CPU, high priority), which then takes all that queued in one pass; fewer, or small segments, are placed in the softirq (0: always in the softirq)");

static unsigned int qp_conn_port = 4792;
module_param(qp_conn_port, uint, 0444);
MODULE_PARM_DESC(qp_conn_port, "TCP port of each device's listener for QPs connected from modify_qp (an address vector and a destination QP number at RTR, as ibv_rc_pingpong and perftest without -R do; the listener is made at the first such RTR); 0: no listener, such QPs refuse RTR (default 4792)");

static unsigned int qp_conn_timeout_ms = 20000;
module_param(qp_conn_timeout_ms, uint, 0644);
MODULE_PARM_DESC(qp_conn_timeout_ms, "Limit from a QP's RTR to its stream being up (either side); then the QP goes to ERROR with an async event");

void rsiw_shim_cm_params(struct rsiw_cm_params *p)
{
	p->crc = READ_ONCE(mpa_crc);
	p->peer_to_peer = READ_ONCE(mpa_peer_to_peer);
	p->timeout_ms = max(READ_ONCE(mpa_timeout_ms), 100U);
	p->accept_timeout_ms = READ_ONCE(mpa_accept_timeout_ms);
	p->max_pending = max(READ_ONCE(mpa_max_pending), 1U);
	p->draft_swap = READ_ONCE(draft_swap);
	p->large_fpdu = READ_ONCE(mpa_large_fpdu);
	p->markers = READ_ONCE(mpa_markers);
	p->qp_port = min(READ_ONCE(qp_conn_port), 65535U);
	p->qp_timeout_ms = max(READ_ONCE(qp_conn_timeout_ms), 100U);
}

static unsigned int tx_zcopy_min;
module_param(tx_zcopy_min, uint, 0644);
MODULE_PARM_DESC(tx_zcopy_min, "0 (default): every payload is copied into the socket. N > 0: a Send or Write of at least N payload bytes from pinned user memory goes to TCP by page reference (MSG_ZEROCOPY), and its work request completes only once TCP has released the pages (acknowledged, or purged by a reset), so nothing the application writes after the completion reaches the wire; its completion (and those behind it) then waits for the peer's acknowledgement. Read Responses and kernel consumers' buffers are always copied. Applies to connections established afterwards");

unsigned int rsiw_shim_zc_min(void)
{
	return READ_ONCE(tx_zcopy_min);
}

unsigned int rsiw_shim_rx_defer_bytes(void)
{
	return READ_ONCE(rx_defer_bytes);
}

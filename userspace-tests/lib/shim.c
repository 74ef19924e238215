// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line copies of verbs.h's static inline data-path verbs, so Rust calls exactly
 * the code an application compiled against these headers would run.
 */
#include "wrapper.h"

int rsiw_shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

int rsiw_shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

int rsiw_shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_srq_recv(srq, wr, bad);
}

int rsiw_shim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

int rsiw_shim_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

struct ibv_mw *rsiw_shim_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	return ibv_alloc_mw(pd, type);
}

int rsiw_shim_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

uint32_t rsiw_shim_inc_rkey(uint32_t rkey)
{
	return ibv_inc_rkey(rkey);
}

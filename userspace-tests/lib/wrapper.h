/* SPDX-License-Identifier: GPL-2.0 */
/* The verbs and rdma_cm headers rsiw-verbs-test binds, plus the shim's prototypes. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

int rsiw_shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int rsiw_shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int rsiw_shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int rsiw_shim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int rsiw_shim_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_mw *rsiw_shim_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rsiw_shim_dealloc_mw(struct ibv_mw *mw);
uint32_t rsiw_shim_inc_rkey(uint32_t rkey);

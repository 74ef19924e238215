/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsiw direct verbs: RFC 7306 operations libibverbs has no call for
 * (masked Fetch and Add / Compare and Swap, RFC 7306 section 5.2.1; RDMA
 * Write with 64-bit Immediate Data, section 6; the 64-bit immediate of a
 * completion). Exported by the rsiw provider (librsiw-rdmav34.so); link
 * with -lrsiw-rdmav34 or resolve with dlsym.
 *
 * Posts return 0 or an errno value (EOPNOTSUPP: not an rsiw QP; EINVAL: the
 * checks of ibv_post_send; ENOMEM: SQ full). flags are IBV_SEND_SIGNALED,
 * IBV_SEND_FENCE, IBV_SEND_SOLICITED. Atomics write the original 64-bit
 * word, host byte order, into the 8 bytes at laddr (lkey), and complete
 * with IBV_WC_COMP_SWAP / IBV_WC_FETCH_ADD (libibverbs has no masked
 * completion opcodes), byte_len 8. Do not call a
 * post between ibv_wr_start() and ibv_wr_complete() on the same QP.
 */
#ifndef RSIWDV_H
#define RSIWDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A completion with all 64 bits of RFC 7306 Immediate Data. */
struct rsiwdv_wc {
	struct ibv_wc wc;	/* as ibv_poll_cq reports it */
	uint64_t imm64;		/* host order; valid with IBV_WC_WITH_IMM */
};

/* 1 if qp belongs to rsiw, else 0. */
int rsiwdv_is_rsiw_qp(struct ibv_qp *qp);

/*
 * One of a QP's rings, shared with the kernel: a header (producer, consumer,
 * flags: struct RingHeader of the rsiw ABI, rust/abi/src/ring.rs) followed by
 * entries slots of stride bytes (SQEs or RQEs, rust/abi/src/wqe.rs). A QP's two
 * rings lie in one mapping, the receive ring behind the last SQE.
 */
struct rsiwdv_ring {
	void *buf;
	uint32_t entries;
	uint32_t stride;
};

struct rsiwdv_qp {
	struct rsiwdv_ring sq;
	struct rsiwdv_ring rq;	/* buf is NULL with an SRQ */
};

/*
 * Where qp's rings are mapped, for applications that post by writing them
 * directly (as mlx5dv_init_obj gives an mlx5 QP's buffers). The kernel
 * validates every element it reads. 0, or EOPNOTSUPP if qp is not rsiw's.
 */
int rsiwdv_query_qp(struct ibv_qp *qp, struct rsiwdv_qp *out);

/*
 * After writing SQEs and the SQ producer index directly: tells the kernel to
 * look at the SQ (it may run the transmission in this call). Whoever writes
 * the rings directly must not also post through libibverbs on that QP.
 * 0 or an errno value.
 */
int rsiwdv_ring_sq_doorbell(struct ibv_qp *qp);

/*
 * Masked Fetch and Add: each field of the target word delimited by the set
 * bits of mask (a set bit is the most significant bit of a field: no carry
 * out of it) gets the matching field of add. mask 0: plain Fetch and Add.
 */
int rsiwdv_post_masked_fetch_add(struct ibv_qp *qp, uint64_t wr_id,
				 uint64_t laddr, uint32_t lkey,
				 uint64_t raddr, uint32_t rkey,
				 uint64_t add, uint64_t mask, unsigned int flags);

/*
 * Masked Compare and Swap: if ((word ^ compare) & compare_mask) == 0 the
 * word becomes (word & ~swap_mask) | (swap & swap_mask).
 */
int rsiwdv_post_masked_cmp_swp(struct ibv_qp *qp, uint64_t wr_id,
			       uint64_t laddr, uint32_t lkey,
			       uint64_t raddr, uint32_t rkey,
			       uint64_t compare, uint64_t compare_mask,
			       uint64_t swap, uint64_t swap_mask,
			       unsigned int flags);

/*
 * RDMA Write of sg_list followed by Immediate Data imm (all 64 bits on the
 * wire); the peer consumes one receive and completes it with
 * IBV_WC_RECV_RDMA_WITH_IMM (rsiwdv_wc.imm64 == imm).
 */
int rsiwdv_post_write_imm64(struct ibv_qp *qp, uint64_t wr_id,
			    const struct ibv_sge *sg_list, int num_sge,
			    uint64_t raddr, uint32_t rkey, uint64_t imm,
			    unsigned int flags);

/*
 * ibv_poll_cq with the 64-bit immediate: the number of completions, or a
 * negative errno (-EOPNOTSUPP: not an rsiw CQ).
 */
int rsiwdv_poll_cq(struct ibv_cq *cq, int n, struct rsiwdv_wc *wc);

#ifdef __cplusplus
}
#endif

#endif /* RSIWDV_H */

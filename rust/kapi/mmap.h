/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw user queues: ring memory shared with the provider through mmap, and the
 * SQ doorbell as a driver-specific uverbs method on UVERBS_OBJECT_QP.
 */
#ifndef RSIW_MMAP_H
#define RSIW_MMAP_H

#include <rdma/ib_verbs.h>

/*
 * The doorbell's ids in the driver namespace; the Rust side asserts at build
 * time that they equal rsiw_abi's METHOD_QP_DOORBELL / ATTR_DOORBELL_QP_HANDLE.
 */
enum rsiw_uq_ids {
	RSIW_METHOD_QP_DOORBELL = (1U << 12),
	RSIW_ATTR_DOORBELL_QP_HANDLE = (1U << 12),
};

struct rsiw_ucontext;

/*
 * A ring mapping: vmalloc_user memory owned by its rdma_user_mmap_entry, and
 * the context it counts in (rsiw_ucontext.rings) until it is removed.
 */
struct rsiw_uq_mmap {
	struct rdma_user_mmap_entry rdma;
	struct rsiw_ucontext *uctx;
	void *vaddr;
	size_t len;
};

struct ib_ucontext *rsiw_shim_uq_ucontext(struct ib_udata *udata);
struct rsiw_uq_mmap *rsiw_shim_uq_mmap_new(struct ib_ucontext *uctx, size_t len,
				      u64 *key, int *err);
void rsiw_shim_uq_mmap_remove(struct rsiw_uq_mmap *m);
void rsiw_shim_uq_setup_device(struct ib_device *ibdev);
int rsiw_shim_uq_alloc_ucontext(struct ib_ucontext *uctx,
				struct ib_udata *udata);
void rsiw_shim_uq_dealloc_ucontext(struct ib_ucontext *uctx);

/* Implemented in Rust (rust/entry/uq.rs). */
int rsiw_rust_qp_doorbell(struct ib_qp *qp);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C shim for user queues: vmalloc_user ring memory behind
 * rdma_user_mmap entries, the mmap/mmap_free device ops, and the SQ doorbell
 * uverbs method, whose declaration macros bindgen cannot express.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>
#include "bindings.h"

#define UVERBS_MODULE_NAME rsiw_ib
#include <rdma/uverbs_named_ioctl.h>

struct ib_ucontext *rsiw_shim_uq_ucontext(struct ib_udata *udata)
{
	/* What rdma_udata_to_drv_context() does, without the driver type. */
	return container_of(udata, struct uverbs_attr_bundle, driver_udata)
		->context;
}

/*
 * Zeroed ring memory of @len bytes (rounded up to pages) and its mmap entry;
 * @key receives the mmap offset. The memory lives until the entry is removed
 * and no mapping of it remains (rsiw_uq_mmap_free); pages the user still has
 * mapped stay referenced by the VMA.
 */
struct rsiw_uq_mmap *rsiw_shim_uq_mmap_new(struct ib_ucontext *uctx, size_t len,
				      u64 *key, int *err)
{
	struct rsiw_uq_mmap *m;

	if (!len) {
		*err = -EINVAL;
		return NULL;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->len = PAGE_ALIGN(len);
	m->vaddr = vmalloc_user(m->len);
	if (!m->vaddr) {
		kfree(m);
		*err = -ENOMEM;
		return NULL;
	}
	*err = rdma_user_mmap_entry_insert(uctx, &m->rdma, m->len);
	if (*err) {
		vfree(m->vaddr);
		kfree(m);
		return NULL;
	}
	m->uctx = container_of(uctx, struct rsiw_ucontext, base);
	atomic_inc(&m->uctx->rings);
	*key = rdma_user_mmap_get_offset(&m->rdma);
	return m;
}

/*
 * No new mmap finds @m after this; it is freed once no mapping holds it. The
 * context is still there: rsiw_shim_uq_dealloc_ucontext() waits for this.
 */
void rsiw_shim_uq_mmap_remove(struct rsiw_uq_mmap *m)
{
	/* Removing the entry may free @m. */
	struct rsiw_ucontext *uc = m->uctx;

	rdma_user_mmap_entry_remove(&m->rdma);
	if (atomic_dec_and_test(&uc->rings))
		complete(&uc->rings_gone);
}

int rsiw_shim_uq_alloc_ucontext(struct ib_ucontext *uctx,
				struct ib_udata *udata)
{
	struct rsiw_ucontext *uc = container_of(uctx, struct rsiw_ucontext, base);

	atomic_set(&uc->rings, 1);
	init_completion(&uc->rings_gone);
	return rsiw_rust_alloc_ucontext(uctx, udata);
}

/*
 * The core frees the context when this returns and expects its mmap entries
 * gone (ufile_destroy_ucontext() warns otherwise). Every uverbs object of the
 * context is destroyed by now, but a ring can outlive its verbs object: a QP
 * connection attempt in progress (cm/endpoint/qpconn.rs) may hold the QP, and
 * with it its CQs, until its work item ends, moments later. Removing a ring
 * entry touches the context, so the context waits for the last of them.
 */
void rsiw_shim_uq_dealloc_ucontext(struct ib_ucontext *uctx)
{
	struct rsiw_ucontext *uc = container_of(uctx, struct rsiw_ucontext, base);

	rsiw_rust_dealloc_ucontext(uctx);
	if (atomic_dec_and_test(&uc->rings))
		return;
	while (!wait_for_completion_timeout(&uc->rings_gone, 10 * HZ))
		pr_warn("rsiw: a closing user context waits for %d ring(s) still held by a connection in progress\n",
			atomic_read(&uc->rings));
}

static int rsiw_uq_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e;
	struct rsiw_uq_mmap *m;
	int rv;

	/* Checks that the VMA covers exactly the entry's pages. */
	e = rdma_user_mmap_entry_get(uctx, vma);
	if (!e)
		return -EINVAL;
	m = container_of(e, struct rsiw_uq_mmap, rdma);
	rv = remap_vmalloc_range(vma, m->vaddr, 0);
	rdma_user_mmap_entry_put(e);
	return rv;
}

static void rsiw_uq_mmap_free(struct rdma_user_mmap_entry *e)
{
	struct rsiw_uq_mmap *m = container_of(e, struct rsiw_uq_mmap, rdma);

	vfree(m->vaddr);
	kfree(m);
}

static int UVERBS_HANDLER(RSIW_METHOD_QP_DOORBELL)(
	struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *qp =
		uverbs_attr_get_obj(attrs, RSIW_ATTR_DOORBELL_QP_HANDLE);

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	return rsiw_rust_qp_doorbell(qp);
}

DECLARE_UVERBS_NAMED_METHOD(
	RSIW_METHOD_QP_DOORBELL,
	UVERBS_ATTR_IDR(RSIW_ATTR_DOORBELL_QP_HANDLE, UVERBS_OBJECT_QP,
			UVERBS_ACCESS_READ, UA_MANDATORY));

ADD_UVERBS_METHODS(rsiw_uq_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(RSIW_METHOD_QP_DOORBELL));

static const struct uapi_definition rsiw_uq_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &rsiw_uq_qp_methods),
	{},
};

static const struct ib_device_ops rsiw_uq_ops = {
	.mmap = rsiw_uq_mmap,
	.mmap_free = rsiw_uq_mmap_free,
};

/* Before ib_register_device(): the mmap ops and the doorbell method. */
void rsiw_shim_uq_setup_device(struct ib_device *ibdev)
{
	ib_set_device_ops(ibdev, &rsiw_uq_ops);
	ibdev->driver_def = rsiw_uq_uapi_defs;
}

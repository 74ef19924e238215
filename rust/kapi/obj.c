// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C shim for the verbs objects: the object ops table, and the macros
 * and static inlines behind irqsave spinlocks, page mapping, user memory
 * pinning and object events, which bindgen cannot expose.
 */
#include <linux/capability.h>
#include <linux/highmem.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <linux/workqueue.h>
#include "bindings.h"

/* uverbs passes create_cq a bundle; the Rust side takes only the udata. */
static int rsiw_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			  struct uverbs_attr_bundle *attrs)
{
	return rsiw_rust_create_cq(cq, attr, rsiw_shim_attrs_udata(attrs));
}

#ifdef RSIW_K7
/* 7.x passes a DMA handle (TPH steering hints): rsiw has none to honour. */
static struct ib_mr *rsiw_reg_user_mr(struct ib_pd *pd, u64 start, u64 len,
				      u64 virt, int access, struct ib_dmah *dmah,
				      struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return rsiw_rust_reg_user_mr(pd, start, len, virt, access, udata);
}
#else
#define rsiw_reg_user_mr rsiw_rust_reg_user_mr
#endif

const struct ib_device_ops rsiw_obj_ops = {
	.alloc_mr = rsiw_rust_alloc_mr,
	.alloc_mw = rsiw_rust_alloc_mw,
	.dealloc_mw = rsiw_rust_dealloc_mw,
	.create_cq = rsiw_create_cq,
	.create_qp = rsiw_rust_create_qp,
	.create_srq = rsiw_rust_create_srq,
	.dereg_mr = rsiw_rust_dereg_mr,
	.destroy_cq = rsiw_rust_destroy_cq,
	.destroy_qp = rsiw_rust_destroy_qp,
	.destroy_srq = rsiw_rust_destroy_srq,
	.get_dma_mr = rsiw_rust_get_dma_mr,
	.map_mr_sg = rsiw_shim_map_mr_sg,
	.modify_qp = rsiw_rust_modify_qp,
	.modify_srq = rsiw_rust_modify_srq,
	.poll_cq = rsiw_rust_poll_cq,
	.post_recv = rsiw_rust_post_recv,
	.post_send = rsiw_rust_post_send,
	.post_srq_recv = rsiw_rust_post_srq_recv,
	.query_qp = rsiw_rust_query_qp,
	.query_srq = rsiw_rust_query_srq,
	.reg_user_mr = rsiw_reg_user_mr,
	.req_notify_cq = rsiw_rust_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, rsiw_cq, base),
	INIT_RDMA_OBJ_SIZE(ib_mw, rsiw_mw, base),
	INIT_RDMA_OBJ_SIZE(ib_qp, rsiw_qp, base),
	INIT_RDMA_OBJ_SIZE(ib_srq, rsiw_srq, base),
};

void rsiw_shim_obj_layout(size_t *sizes)
{
	sizes[0] = sizeof(struct rsiw_cq);
	sizes[1] = sizeof(struct rsiw_qp);
	sizes[2] = sizeof(struct rsiw_srq);
	sizes[3] = sizeof(struct rsiw_mr);
	sizes[4] = sizeof(struct ib_wc);
	sizes[5] = sizeof(struct ib_send_wr);
	sizes[6] = sizeof(struct ib_qp_attr);
	sizes[7] = sizeof(struct ib_qp_init_attr);
}

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

bool rsiw_shim_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	unsigned long f;

	if (!spin_trylock_irqsave(lock, f))
		return false;
	*flags = f;
	return true;
}

void rsiw_shim_spin_assert_held(spinlock_t *lock)
{
	lockdep_assert_held(lock);
}

struct ib_mr *rsiw_shim_mr_alloc(void)
{
	struct rsiw_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	return mr ? &mr->base : NULL;
}

void rsiw_shim_mr_free(struct ib_mr *mr)
{
	kfree(container_of(mr, struct rsiw_mr, base));
}

/*
 * A user region's pages may be let go of in any context: the region's last
 * reference can be a placement in the receive path (softirq, or process
 * context under an irqsave lock), or a Send with Invalidate there, racing with
 * dereg_mr. ib_umem_release() may sleep (unpinning dirty pages takes the folio
 * lock), and so may kvfree() of a vmalloc'ed page array with interrupts off;
 * from atomic context both are handed to a work item, through the node they
 * were allocated with, so the hand-over cannot fail.
 */
static LLIST_HEAD(rsiw_umem_rel_list);

static void rsiw_umem_free(struct rsiw_umem *u)
{
	ib_umem_release(u->umem);
	kvfree(u->pages);
	kfree(u);
}

static void rsiw_umem_rel_fn(struct work_struct *w)
{
	struct llist_node *all = llist_del_all(&rsiw_umem_rel_list);
	struct rsiw_umem *u, *t;

	llist_for_each_entry_safe(u, t, all, node)
		rsiw_umem_free(u);
}

static DECLARE_WORK(rsiw_umem_rel_work, rsiw_umem_rel_fn);

struct rsiw_umem *rsiw_shim_umem_get(struct ib_device *ibdev, u64 start,
				     u64 len, int access, int *err)
{
	struct rsiw_umem *u = kzalloc(sizeof(*u), GFP_KERNEL);
	struct sg_page_iter it;
	size_t n = 0;

	if (!u) {
		*err = -ENOMEM;
		return NULL;
	}
	u->umem = rsiw_ib_umem_get(ibdev, start, len, access);
	if (IS_ERR(u->umem)) {
		*err = PTR_ERR(u->umem);
		kfree(u);
		return NULL;
	}
	u->npages = ib_umem_num_pages(u->umem);
	u->offset = ib_umem_offset(u->umem);
	u->pages = kvcalloc(max_t(size_t, u->npages, 1), sizeof(*u->pages),
			    GFP_KERNEL);
	if (!u->pages) {
		*err = -ENOMEM;
		rsiw_umem_free(u);
		return NULL;
	}
	for_each_sgtable_page(&u->umem->sgt_append.sgt, &it, 0) {
		if (n == u->npages)
			break;
		u->pages[n++] = sg_page_iter_page(&it);
	}
	if (n != u->npages) {
		*err = -EFAULT;
		rsiw_umem_free(u);
		return NULL;
	}
	return u;
}

void rsiw_shim_umem_release(struct rsiw_umem *u)
{
	/*
	 * Softirq and BH-disabled sections show in in_atomic() with any
	 * config; rsiw's spinlocks are all irqsave (a region's last reference
	 * can go at the end of a segment, under the RX lock), so they show in
	 * irqs_disabled() even without CONFIG_PREEMPT_COUNT.
	 */
	if (!in_atomic() && !irqs_disabled()) {
		rsiw_umem_free(u);
		return;
	}
	llist_add(&u->node, &rsiw_umem_rel_list);
	schedule_work(&rsiw_umem_rel_work);
}

/* Before a device is freed and at module exit: no release is left pending. */
void rsiw_shim_umem_release_flush(void)
{
	flush_work(&rsiw_umem_rel_work);
}

void rsiw_shim_page_copy(struct page *page, size_t off, void *buf,
			 size_t len, bool to_page)
{
	void *va = kmap_local_page(page);

	if (to_page)
		memcpy(va + off, buf, len);
	else
		memcpy(buf, va + off, len);
	kunmap_local(va);
}

u64 rsiw_shim_page_load64(struct page *page, size_t off)
{
	u64 *va = kmap_local_page(page);
	u64 v = READ_ONCE(*(u64 *)((u8 *)va + off));

	kunmap_local(va);
	return v;
}

u64 rsiw_shim_page_cmpxchg64(struct page *page, size_t off, u64 old, u64 new)
{
	u64 *va = kmap_local_page(page);
	u64 seen = cmpxchg64((u64 *)((u8 *)va + off), old, new);

	kunmap_local(va);
	return seen;
}

static int rsiw_set_page(struct ib_mr *mr, u64 addr)
{
	return rsiw_rust_mr_set_page(mr, addr);
}

int rsiw_shim_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg,
			int sg_nents, unsigned int *sg_offset)
{
	int rv = rsiw_rust_map_mr_begin(mr);

	if (rv)
		return rv;
	rv = ib_sg_to_pages(mr, sg, sg_nents, sg_offset, rsiw_set_page);
	if (rv > 0)
		rsiw_rust_map_mr_end(mr);
	return rv;
}

void rsiw_shim_cq_comp(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

void rsiw_shim_cq_event(struct ib_cq *cq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = type,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

void rsiw_shim_qp_event(struct ib_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->device,
		.element.qp = qp,
		.event = type,
	};

	if (qp->event_handler)
		qp->event_handler(&ev, qp->qp_context);
}

void rsiw_shim_srq_event(struct ib_srq *srq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = srq->device,
		.element.srq = srq,
		.event = type,
	};

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

struct ib_udata *rsiw_shim_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* The caller's thread group, counted; NULL when the caller is the kernel (a
 * kernel thread, or a task without user memory). */
struct pid *rsiw_shim_owner_current(void)
{
	if ((current->flags & PF_KTHREAD) || !current->mm)
		return NULL;
	return get_pid(task_tgid(current));
}

void rsiw_shim_owner_put(struct pid *owner)
{
	put_pid(owner);
}

/* True if the caller is a task of the thread group @owner. */
bool rsiw_shim_owner_is_current(struct pid *owner)
{
	return owner && !(current->flags & PF_KTHREAD) && task_tgid(current) == owner;
}

/* A kernel thread, or a task with CAP_NET_ADMIN (a kernel ULP running in
 * a privileged process's system call, e.g. at module load). */
bool rsiw_shim_caller_is_privileged(void)
{
	return (current->flags & PF_KTHREAD) || capable(CAP_NET_ADMIN);
}

void rsiw_shim_qp_av_get(const struct ib_qp_attr *attr, struct rsiw_av *av)
{
	const struct rdma_ah_attr *ah = &attr->ah_attr;
	const struct ib_global_route *grh = &ah->grh;

	memset(av, 0, sizeof(*av));
	av->global = !!(ah->ah_flags & IB_AH_GRH);
	av->sl = ah->sl;
	av->static_rate = ah->static_rate;
	av->port_num = ah->port_num;
	if (!av->global)
		return;
	memcpy(av->dgid, grh->dgid.raw, 16);
	av->flow_label = grh->flow_label;
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	/* rdma_fill_sgid_attr() resolved sgid_index in the port's GID cache. */
	if (grh->sgid_attr) {
		struct net_device *ndev;

		memcpy(av->sgid, grh->sgid_attr->gid.raw, 16);
		av->has_sgid = true;
		rcu_read_lock();
		ndev = rcu_dereference(grh->sgid_attr->ndev);
		av->sgid_ifindex = ndev ? ndev->ifindex : 0;
		rcu_read_unlock();
	}
}

void rsiw_shim_qp_av_set(struct ib_qp *qp, struct ib_qp_attr *attr,
			 const struct rsiw_av *av)
{
	struct rdma_ah_attr *ah = &attr->ah_attr;

	memset(ah, 0, sizeof(*ah));
	ah->type = rdma_ah_find_type(qp->device, av->port_num ? av->port_num : 1);
	rdma_ah_set_sl(ah, av->sl);
	rdma_ah_set_static_rate(ah, av->static_rate);
	rdma_ah_set_port_num(ah, av->port_num);
	if (av->global) {
		union ib_gid dgid;

		memcpy(dgid.raw, av->dgid, 16);
		rdma_ah_set_grh(ah, &dgid, av->flow_label, av->sgid_index,
				av->hop_limit, av->traffic_class);
	}
}

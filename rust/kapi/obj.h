/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw verbs-object shim interface (included by bindings.h, so it is also
 * bindgen input): irqsave spinlocks, the CQ/QP/SRQ/MR containers, memory
 * access helpers, object events and the Rust callbacks of the object verbs.
 */
#ifndef RSIW_OBJ_H
#define RSIW_OBJ_H

#include <linux/llist.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>

/* Object containers (INIT_RDMA_OBJ_SIZE; MRs are allocated by the driver).
 * priv is the Rust object (an Arc in foreign form), NULL until created. */
struct rsiw_cq {
	struct ib_cq base;
	const void *priv;
};

struct rsiw_srq {
	struct ib_srq base;
	const void *priv;
};

struct rsiw_qp {
	struct ib_qp base;
	const void *priv;
};

struct rsiw_mr {
	struct ib_mr base;
	const void *priv;
};

struct rsiw_mw {
	struct ib_mw base;
	const void *priv;
};

/* Container sizes as C sees them (cq, qp, srq, mr, ib_wc, ib_send_wr,
 * ib_qp_attr, ib_qp_init_attr); checked against bindgen's at load. */
#define RSIW_OBJ_LAYOUT_N 8
void rsiw_shim_obj_layout(size_t *sizes);

/* The object ops, merged into the device's ops after the base table. */
extern const struct ib_device_ops rsiw_obj_ops;

/* --- irqsave spinlock (rust/kapi/lock.rs) --- */
unsigned long rsiw_shim_spin_lock_irqsave(spinlock_t *lock);
void rsiw_shim_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
bool rsiw_shim_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
void rsiw_shim_spin_assert_held(spinlock_t *lock);

/* --- memory (rust/kapi/mr.rs, rust/kapi/umem.rs) --- */
struct ib_mr *rsiw_shim_mr_alloc(void);
void rsiw_shim_mr_free(struct ib_mr *mr);
/* A pinned user region (rust/kapi/umem.rs): its umem and its pages in order. */
struct rsiw_umem {
	struct llist_node node;
	struct ib_umem *umem;
	struct page **pages;
	size_t npages;
	/* Offset of the first registered byte in the first page. */
	unsigned int offset;
};
struct rsiw_umem *rsiw_shim_umem_get(struct ib_device *ibdev, u64 start,
				     u64 len, int access, int *err);
void rsiw_shim_umem_release(struct rsiw_umem *u);
void rsiw_shim_umem_release_flush(void);
void rsiw_shim_page_copy(struct page *page, size_t off, void *buf,
			 size_t len, bool to_page);
u64 rsiw_shim_page_load64(struct page *page, size_t off);
u64 rsiw_shim_page_cmpxchg64(struct page *page, size_t off, u64 old, u64 new);
int rsiw_shim_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg,
			int sg_nents, unsigned int *sg_offset);

/* --- events (rust/kapi/cq.rs, rust/kapi/qp.rs) --- */
void rsiw_shim_cq_comp(struct ib_cq *cq);
void rsiw_shim_cq_event(struct ib_cq *cq, enum ib_event_type type);
void rsiw_shim_qp_event(struct ib_qp *qp, enum ib_event_type type);

/* The address vector of a modify_qp/query_qp (IB_QP_AV): the GRH and the
 * source GID the core looked up for sgid_index.
 */
struct rsiw_av {
	bool global;
	u8 dgid[16];
	u8 sgid[16];
	bool has_sgid;
	u32 flow_label;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 static_rate;
	u8 port_num;
	u32 sgid_ifindex;
};
void rsiw_shim_qp_av_get(const struct ib_qp_attr *attr, struct rsiw_av *av);
void rsiw_shim_qp_av_set(struct ib_qp *qp, struct ib_qp_attr *attr,
			 const struct rsiw_av *av);
void rsiw_shim_srq_event(struct ib_srq *srq, enum ib_event_type type);
struct ib_udata *rsiw_shim_attrs_udata(struct uverbs_attr_bundle *attrs);

/* Who may bind a connection to a QP: the thread group of a user process
 * (counted struct pid), NULL for the kernel. */
struct pid *rsiw_shim_owner_current(void);
void rsiw_shim_owner_put(struct pid *owner);
bool rsiw_shim_owner_is_current(struct pid *owner);
bool rsiw_shim_caller_is_privileged(void);

/* --- Rust callbacks (rust/entry/obj.rs) --- */
int rsiw_rust_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			struct ib_udata *udata);
int rsiw_rust_destroy_cq(struct ib_cq *cq, struct ib_udata *udata);
int rsiw_rust_poll_cq(struct ib_cq *cq, int num, struct ib_wc *wc);
int rsiw_rust_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags);
struct ib_mr *rsiw_rust_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *rsiw_rust_reg_user_mr(struct ib_pd *pd, u64 start, u64 len,
				    u64 iova, int access,
				    struct ib_udata *udata);
struct ib_mr *rsiw_rust_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
				 u32 max_num_sg);
int rsiw_rust_dereg_mr(struct ib_mr *mr, struct ib_udata *udata);
int rsiw_rust_alloc_mw(struct ib_mw *mw, struct ib_udata *udata);
int rsiw_rust_dealloc_mw(struct ib_mw *mw);
int rsiw_rust_map_mr_begin(struct ib_mr *mr);
int rsiw_rust_mr_set_page(struct ib_mr *mr, u64 addr);
void rsiw_rust_map_mr_end(struct ib_mr *mr);
int rsiw_rust_create_qp(struct ib_qp *qp, struct ib_qp_init_attr *init,
			struct ib_udata *udata);
int rsiw_rust_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
			struct ib_udata *udata);
int rsiw_rust_query_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
		       struct ib_qp_init_attr *init);
int rsiw_rust_destroy_qp(struct ib_qp *qp, struct ib_udata *udata);
int rsiw_rust_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad);
int rsiw_rust_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad);
int rsiw_rust_create_srq(struct ib_srq *srq, struct ib_srq_init_attr *init,
			 struct ib_udata *udata);
int rsiw_rust_modify_srq(struct ib_srq *srq, struct ib_srq_attr *attr,
			 enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rsiw_rust_query_srq(struct ib_srq *srq, struct ib_srq_attr *attr);
int rsiw_rust_destroy_srq(struct ib_srq *srq, struct ib_udata *udata);
int rsiw_rust_post_srq_recv(struct ib_srq *srq, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad);

#endif /* RSIW_OBJ_H */

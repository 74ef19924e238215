// SPDX-License-Identifier: GPL-2.0
/*
 * Both ends of one rdma_cm connection (RFC 5044 MPA under iw_cm) on a single
 * device and address, their verbs objects, and bounded completion waits.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/spinlock.h>
#include <net/net_namespace.h>

#include "kv.h"

/* Events that end a connection attempt (or a connection) for good. */
#define KV_EV_ERR                                                               \
	(BIT(RDMA_CM_EVENT_ADDR_ERROR) | BIT(RDMA_CM_EVENT_ROUTE_ERROR) |       \
	 BIT(RDMA_CM_EVENT_CONNECT_ERROR) | BIT(RDMA_CM_EVENT_UNREACHABLE) |    \
	 BIT(RDMA_CM_EVENT_REJECTED) | BIT(RDMA_CM_EVENT_DEVICE_REMOVAL) |      \
	 BIT(RDMA_CM_EVENT_DISCONNECTED))

static struct rdma_cm_id *kv_lsn;
static struct sockaddr_in kv_sin;
static atomic64_t kv_wr_ids = ATOMIC64_INIT(0);

/*
 * The server end waiting for the next connect request. The handler takes it
 * under the lock and sets its id there, so a connection given up on (slot
 * cleared under the same lock) never gets a late child id behind its back.
 */
static DEFINE_SPINLOCK(kv_slot_lock);
static struct kv_end *kv_slot;

u64 kv_next_wr_id(void)
{
	return atomic64_inc_return(&kv_wr_ids);
}

static void kv_record(struct kv_end *e, enum rdma_cm_event_type ev, int status)
{
	unsigned long flags;

	spin_lock_irqsave(&e->lock, flags);
	if ((unsigned int)ev < BITS_PER_LONG)
		e->events |= BIT(ev);
	if (status)
		e->ev_status = status;
	spin_unlock_irqrestore(&e->lock, flags);
	wake_up(&e->wq);
}

static int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kv_end *e;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		spin_lock(&kv_slot_lock);
		e = kv_slot;
		kv_slot = NULL;
		if (e) {
			e->id = id;
			id->context = e;
		}
		spin_unlock(&kv_slot_lock);
		if (!e) {
			pr_info("rsiw-kverbs: unexpected connect request refused\n");
			/* Non-zero makes rdma_cm destroy the new id. */
			return 1;
		}
	} else {
		e = id->context;
	}
	pr_debug("rsiw-kverbs: %s: %s (%d)\n", e ? e->name : "listener",
		 rdma_event_msg(ev->event), ev->status);
	if (e)
		kv_record(e, ev->event, ev->status);
	return 0;
}

static unsigned long kv_events(struct kv_end *e)
{
	unsigned long flags, v;

	spin_lock_irqsave(&e->lock, flags);
	v = e->events;
	spin_unlock_irqrestore(&e->lock, flags);
	return v;
}

static int kv_wait_ev(struct kv_end *e, enum rdma_cm_event_type want)
{
	unsigned long ok = BIT(want), ev;

	wait_event_timeout(e->wq, kv_events(e) & (ok | KV_EV_ERR),
			   msecs_to_jiffies(KV_CM_MS));
	ev = kv_events(e);
	if (ev & ok)
		return 0;
	if (ev & KV_EV_ERR) {
		pr_err("rsiw-kverbs: %s: waiting for %s, got events %#lx status %d\n",
		       e->name, rdma_event_msg(want), ev, e->ev_status);
		return -ECONNABORTED;
	}
	pr_err("rsiw-kverbs: %s: no %s within %d ms\n", e->name, rdma_event_msg(want),
	       KV_CM_MS);
	return -ETIMEDOUT;
}

int kv_listen_start(void)
{
	struct rdma_cm_id *id;
	int rv;

	memset(&kv_sin, 0, sizeof(kv_sin));
	kv_sin.sin_family = AF_INET;
	kv_sin.sin_port = htons(kv_port);
	if (!in4_pton(kv_addr, -1, (u8 *)&kv_sin.sin_addr.s_addr, '\0', NULL))
		return -EINVAL;
	id = rdma_create_id(&init_net, kv_cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	rv = rdma_bind_addr(id, (struct sockaddr *)&kv_sin);
	if (!rv)
		rv = rdma_listen(id, 4);
	if (rv) {
		rdma_destroy_id(id);
		return rv;
	}
	kv_lsn = id;
	return 0;
}

void kv_listen_stop(void)
{
	if (kv_lsn)
		rdma_destroy_id(kv_lsn);
	kv_lsn = NULL;
}

static void kv_end_init(struct kv_end *e, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->name = name;
	spin_lock_init(&e->lock);
	init_waitqueue_head(&e->wq);
}

/* PD, CQ, scratch buffer and QP on the device the cm_id resolved to. */
static int kv_end_setup(struct kv_end *e)
{
	struct ib_device *dev = e->id->device;
	struct ib_qp_init_attr qa = {};
	struct ib_pd *pd;
	struct ib_cq *cq;
	u64 dma;
	int rv;

	if (strcmp(dev_name(&dev->dev), kv_dev)) {
		pr_err("rsiw-kverbs: %s: connection is on %s, not %s\n", e->name,
		       dev_name(&dev->dev), kv_dev);
		return -ENODEV;
	}
	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	e->pd = pd;
	cq = ib_alloc_cq(dev, NULL, 128, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	e->cq = cq;
	e->buf = kzalloc(KV_REGION, GFP_KERNEL);
	if (!e->buf)
		return -ENOMEM;
	dma = ib_dma_map_single(dev, e->buf, KV_REGION, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, dma))
		return -ENOMEM;
	e->dma = dma;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_ALL_WR;
	qa.cap.max_send_wr = 32;
	qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	rv = rdma_create_qp(e->id, pd, &qa);
	if (rv)
		return rv;
	e->qp_created = true;
	return 0;
}

/* Undo kv_end_setup and destroy the cm_id: QP, CQ, buffer, PD, then the id. */
static void kv_end_teardown(struct kv_end *e)
{
	if (!e->id)
		return;
	if (e->connected)
		rdma_disconnect(e->id);
	if (e->qp_created)
		rdma_destroy_qp(e->id);
	if (e->cq)
		ib_free_cq(e->cq);
	if (e->dma)
		ib_dma_unmap_single(e->id->device, e->dma, KV_REGION, DMA_BIDIRECTIONAL);
	kfree(e->buf);
	if (e->pd)
		ib_dealloc_pd(e->pd);
	rdma_destroy_id(e->id);
	kv_end_init(e, e->name);
}

void kv_disconnect(struct kv_conn *c)
{
	spin_lock(&kv_slot_lock);
	kv_slot = NULL;
	spin_unlock(&kv_slot_lock);
	kv_end_teardown(&c->cli);
	kv_end_teardown(&c->srv);
}

int kv_connect(struct kv_conn *c)
{
	struct rdma_conn_param p = {};
	struct rdma_cm_id *id;
	struct ib_device *dev;
	int rv;

	kv_end_init(&c->srv, "server");
	kv_end_init(&c->cli, "client");
	id = rdma_create_id(&init_net, kv_cm_handler, &c->cli, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	c->cli.id = id;
	rv = rdma_resolve_addr(id, NULL, (struct sockaddr *)&kv_sin, 2000);
	if (!rv)
		rv = kv_wait_ev(&c->cli, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!rv)
		rv = rdma_resolve_route(id, 2000);
	if (!rv)
		rv = kv_wait_ev(&c->cli, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!rv)
		rv = kv_end_setup(&c->cli);
	if (rv)
		goto fail;

	dev = id->device;
	p.responder_resources = min_t(u32, 4, dev->attrs.max_qp_rd_atom);
	p.initiator_depth = min_t(u32, 4, dev->attrs.max_qp_init_rd_atom);
	spin_lock(&kv_slot_lock);
	kv_slot = &c->srv;
	spin_unlock(&kv_slot_lock);
	rv = rdma_connect(id, &p);
	if (rv)
		goto fail;
	c->cli.connected = true;
	rv = kv_wait_ev(&c->srv, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!rv)
		rv = kv_end_setup(&c->srv);
	if (!rv) {
		rdma_lock_handler(c->srv.id);
		rv = rdma_accept(c->srv.id, &p);
		rdma_unlock_handler(c->srv.id);
	}
	if (rv)
		goto fail;
	c->srv.connected = true;
	rv = kv_wait_ev(&c->srv, RDMA_CM_EVENT_ESTABLISHED);
	if (!rv)
		rv = kv_wait_ev(&c->cli, RDMA_CM_EVENT_ESTABLISHED);
	if (!rv)
		return 0;
fail:
	kv_disconnect(c);
	return rv;
}

int kv_wait_wc(struct kv_end *e, u64 wr_id, struct ib_wc *out, unsigned int ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	struct ib_wc wc;
	int n;

	for (;;) {
		n = ib_poll_cq(e->cq, 1, &wc);
		if (n < 0)
			return n;
		if (n == 1) {
			if (wc.wr_id == wr_id) {
				*out = wc;
				return 0;
			}
			pr_info("rsiw-kverbs: %s: other completion wr_id %llu: %s opcode %d\n",
				e->name, wc.wr_id, ib_wc_status_msg(wc.status), wc.opcode);
			continue;
		}
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		usleep_range(100, 500);
	}
}

int kv_post_send_wait(struct kv_end *e, struct ib_send_wr *wr, struct ib_wc *wc)
{
	const struct ib_send_wr *bad;
	int rv;

	wr->send_flags |= IB_SEND_SIGNALED;
	rv = ib_post_send(e->id->qp, wr, &bad);
	if (rv)
		return rv;
	return kv_wait_wc(e, wr->wr_id, wc, KV_WC_MS);
}

int kv_post_recv(struct kv_end *e, u64 wr_id, u32 offset, u32 len)
{
	struct ib_sge sge = kv_sge(e, offset, len);
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(e->id->qp, &wr, &bad);
}

/* An SGE over [offset, offset + len) of the end's scratch buffer. */
struct ib_sge kv_sge(struct kv_end *e, u32 offset, u32 len)
{
	struct ib_sge sge = {
		.addr = e->dma + offset,
		.length = len,
		.lkey = e->pd->local_dma_lkey,
	};

	return sge;
}

int kv_post_rdma(struct kv_end *e, enum ib_wr_opcode op, u64 wr_id, struct ib_sge *sge,
		 u64 raddr, u32 rkey, u32 inv)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = wr_id,
			.sg_list = sge,
			.num_sge = 1,
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.ex.invalidate_rkey = inv,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};
	const struct ib_send_wr *bad;

	return ib_post_send(e->id->qp, &wr.wr, &bad);
}

/* SEND (or SEND_WITH_INV of inv) len bytes from the scratch buffer at offset; *wc gets the completion. */
int kv_send(struct kv_end *e, enum ib_wr_opcode op, u32 offset, u32 len, u32 inv,
	    struct ib_wc *wc)
{
	struct ib_sge sge = kv_sge(e, offset, len);
	struct ib_send_wr wr = {
		.wr_id = kv_next_wr_id(),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.ex.invalidate_rkey = inv,
	};

	return kv_post_send_wait(e, &wr, wc);
}

const char *kv_wc_str(const struct ib_wc *wc)
{
	return ib_wc_status_msg(wc->status);
}

/* Make the device's writes to the scratch buffer visible to the CPU. */
void kv_sync_cpu(struct kv_end *e)
{
	ib_dma_sync_single_for_cpu(e->id->device, e->dma, KV_REGION, DMA_BIDIRECTIONAL);
}

/* Hand the CPU's writes to the scratch buffer to the device. */
void kv_sync_dev(struct kv_end *e)
{
	ib_dma_sync_single_for_device(e->id->device, e->dma, KV_REGION, DMA_BIDIRECTIONAL);
}

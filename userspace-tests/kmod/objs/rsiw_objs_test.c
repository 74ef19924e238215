// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module (never shipped): exercises an RDMA device's verbs objects without a
 * connection. Creates PD, CQs, an RC QP, an FRWR MR and an SRQ on `dev`,
 * checks state transitions, flush completions (also posted from hardirq),
 * completion and CQ-overflow events, and SRQ limits. One line per check:
 *   RSIW-OBJS PASS <case> | RSIW-OBJS FAIL <case>: <why>, then a summary.
 */
#include <linux/module.h>
#include <linux/hrtimer.h>
#include <linux/version.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

static char *dev = "rsiw0";
module_param(dev, charp, 0444);
static int passed, failed;
module_param(passed, int, 0444);
module_param(failed, int, 0444);

#define CHECK(name, cond, fmt, ...)                                          \
	do {                                                                 \
		if (cond) {                                                  \
			passed++;                                            \
			pr_info("RSIW-OBJS PASS %s\n", name);                  \
		} else {                                                     \
			failed++;                                            \
			pr_info("RSIW-OBJS FAIL %s: " fmt "\n", name,          \
				##__VA_ARGS__);                              \
		}                                                            \
	} while (0)

static atomic_t comp_events, cq_err_events, srq_limit_events, last_wqe_events;

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&comp_events);
}

static void cq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_CQ_ERR)
		atomic_inc(&cq_err_events);
}

static void srq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&srq_limit_events);
}

static void qp_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED)
		atomic_inc(&last_wqe_events);
}

static int poll_all(struct ib_cq *cq, struct ib_wc *wc, int max)
{
	int n = 0, r;

	while (n < max && (r = ib_poll_cq(cq, max - n, wc + n)) > 0)
		n += r;
	return n;
}

static struct ib_qp *timer_qp;
static int timer_rv = 1;
static struct hrtimer timer;

static enum hrtimer_restart timer_fn(struct hrtimer *t)
{
	struct ib_send_wr wr = { .wr_id = 0x7777, .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;

	/* Hardirq context: post_send and the CQ push must be irq-safe. */
	timer_rv = ib_post_send(timer_qp, &wr, &bad);
	return HRTIMER_NORESTART;
}

static int modify_state(struct ib_qp *qp, enum ib_qp_state s)
{
	struct ib_qp_attr a = { .qp_state = s };

	return ib_modify_qp(qp, &a, IB_QP_STATE);
}

static void run(struct ib_device *ibdev)
{
	struct ib_cq_init_attr cqa = { .cqe = 16 };
	struct ib_qp_init_attr qa = {};
	struct ib_qp_attr attr = {};
	struct ib_qp_init_attr qinit = {};
	struct ib_wc wc[16];
	struct ib_pd *pd;
	struct ib_cq *cq = NULL, *small = NULL;
	struct ib_qp *qp = NULL, *qp2 = NULL;
	struct ib_mr *mr = NULL;
	struct ib_srq *srq = NULL;
	struct page *pages[3] = {};
	struct scatterlist sg[3];
	u8 *buf = NULL;
	int i, n, rv;

	pd = ib_alloc_pd(ibdev, 0);
	CHECK("alloc_pd", !IS_ERR(pd), "%ld", PTR_ERR(pd));
	if (IS_ERR(pd))
		return;
	CHECK("local_dma_lkey", pd->local_dma_lkey != 0, "lkey 0");

	cq = ib_create_cq(ibdev, comp_handler, cq_event, NULL, &cqa);
	CHECK("create_cq", !IS_ERR(cq), "%ld", PTR_ERR(cq));
	if (IS_ERR(cq)) {
		cq = NULL;
		goto out;
	}
	CHECK("create_cq size", cq->cqe >= 16, "cqe %d", cq->cqe);

	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.event_handler = qp_event;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = 64;
	qp = ib_create_qp(pd, &qa);
	CHECK("create_qp", !IS_ERR(qp), "%ld", PTR_ERR(qp));
	if (IS_ERR(qp)) {
		qp = NULL;
		goto out;
	}
	CHECK("create_qp caps", qa.cap.max_send_wr >= 8 && qa.cap.max_recv_wr >= 8 &&
	      qa.cap.max_inline_data >= 64, "send %u recv %u inline %u",
	      qa.cap.max_send_wr, qa.cap.max_recv_wr, qa.cap.max_inline_data);
	CHECK("qp_num", qp->qp_num != 0, "0");

	qa.cap.max_send_sge = 7;
	qp2 = ib_create_qp(pd, &qa);
	CHECK("create_qp rejects 7 SGEs", IS_ERR(qp2), "accepted");
	if (!IS_ERR(qp2))
		ib_destroy_qp(qp2);
	qp2 = NULL;

	/* An RNIC's QP starts in INIT (as siw's); RESET refuses receives. */
	{
		struct ib_qp_attr qattr = {};
		struct ib_qp_init_attr qinit = {};

		rv = ib_query_qp(qp, &qattr, IB_QP_STATE, &qinit);
		CHECK("new QP is in INIT", rv == 0 && qattr.qp_state == IB_QPS_INIT,
		      "rv %d state %d", rv, qattr.qp_state);
	}
	rv = modify_state(qp, IB_QPS_RESET);
	CHECK("modify INIT->RESET", rv == 0, "%d", rv);
	{
		struct ib_recv_wr r = { .wr_id = 1 };
		const struct ib_recv_wr *bad = NULL;

		rv = ib_post_recv(qp, &r, &bad);
		CHECK("post_recv in RESET fails", rv && bad == &r, "rv %d", rv);
	}
	rv = modify_state(qp, IB_QPS_INIT);
	CHECK("modify RESET->INIT", rv == 0, "%d", rv);
	rv = modify_state(qp, IB_QPS_RTS);
	CHECK("modify INIT->RTS without connection fails", rv != 0, "accepted");
	{
		struct ib_qp_attr a = { .qp_state = IB_QPS_RTR, .max_dest_rd_atomic = 16,
					.max_rd_atomic = 8 };

		rv = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_MAX_DEST_RD_ATOMIC |
				  IB_QP_MAX_QP_RD_ATOMIC);
		CHECK("modify INIT->RTR with IRD/ORD", rv == 0, "%d", rv);
	}
	rv = ib_query_qp(qp, &attr, IB_QP_STATE | IB_QP_CAP, &qinit);
	CHECK("query_qp", rv == 0 && attr.qp_state == IB_QPS_RTR &&
	      attr.max_dest_rd_atomic == 16 && attr.max_rd_atomic == 8 &&
	      qinit.send_cq == cq && qinit.cap.max_send_wr >= 8,
	      "rv %d state %d ird %u ord %u", rv, attr.qp_state,
	      attr.max_dest_rd_atomic, attr.max_rd_atomic);

	/* Three receives, then a send: sends are refused before RTS. */
	buf = kzalloc(4096, GFP_KERNEL);
	if (!buf)
		goto out;
	for (i = 0; i < 3; i++) {
		struct ib_sge s = { .addr = (uintptr_t)buf, .length = 64,
				    .lkey = pd->local_dma_lkey };
		struct ib_recv_wr r = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 };
		const struct ib_recv_wr *bad;

		rv = ib_post_recv(qp, &r, &bad);
		CHECK("post_recv in RTR", rv == 0, "%d", rv);
	}
	{
		struct ib_send_wr w[2] = {
			{ .wr_id = 200, .opcode = IB_WR_SEND },
			{ .wr_id = 201, .opcode = IB_WR_SEND_WITH_IMM },
		};
		const struct ib_send_wr *bad = NULL;

		rv = ib_post_send(qp, &w[0], &bad);
		CHECK("post_send in RTR fails", rv && bad == &w[0], "rv %d", rv);
	}

	/* ERROR flushes the three receives, in order. */
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	atomic_set(&comp_events, 0);
	rv = modify_state(qp, IB_QPS_ERR);
	CHECK("modify RTR->ERROR", rv == 0, "%d", rv);
	n = poll_all(cq, wc, 16);
	CHECK("3 flushed receives", n == 3 && wc[0].wr_id == 100 && wc[2].wr_id == 102 &&
	      wc[0].status == IB_WC_WR_FLUSH_ERR && wc[1].opcode == IB_WC_RECV &&
	      wc[0].qp == qp, "n %d id %llu status %d", n, n ? wc[0].wr_id : 0,
	      n ? wc[0].status : -1);
	CHECK("completion event once", atomic_read(&comp_events) == 1, "%d",
	      atomic_read(&comp_events));

	/* Posting to an ERROR QP completes at once with a flush status. */
	{
		struct ib_sge s = { .addr = (uintptr_t)buf, .length = 16,
				    .lkey = pd->local_dma_lkey };
		struct ib_send_wr w[3] = {
			{ .wr_id = 300, .opcode = IB_WR_SEND, .sg_list = &s, .num_sge = 1 },
			{ .wr_id = 301, .opcode = IB_WR_RDMA_WRITE, .sg_list = &s, .num_sge = 1,
			  .send_flags = IB_SEND_INLINE },
			{ .wr_id = 302, .opcode = IB_WR_SEND_WITH_IMM },
		};
		struct ib_rdma_wr rw = { .wr = w[1], .remote_addr = 0x1000, .rkey = 5 };
		const struct ib_send_wr *bad = NULL;

		w[0].next = &rw.wr;
		rw.wr.next = &w[2];
		rv = ib_post_send(qp, &w[0], &bad);
		CHECK("send_with_imm refused", rv == -EOPNOTSUPP && bad == &w[2],
		      "rv %d bad %s", rv, bad == &w[2] ? "ok" : "wrong");
		n = poll_all(cq, wc, 16);
		CHECK("2 flushed sends", n == 2 && wc[0].wr_id == 300 && wc[1].wr_id == 301 &&
		      wc[1].opcode == IB_WC_RDMA_WRITE && wc[1].status == IB_WC_WR_FLUSH_ERR,
		      "n %d", n);
	}
	{
		struct ib_recv_wr r = { .wr_id = 400 };
		const struct ib_recv_wr *bad;

		rv = ib_post_recv(qp, &r, &bad);
		n = poll_all(cq, wc, 16);
		CHECK("post_recv in ERROR flushes", rv == 0 && n == 1 && wc[0].wr_id == 400 &&
		      wc[0].status == IB_WC_WR_FLUSH_ERR, "rv %d n %d", rv, n);
	}

	/* Hardirq poster, solicited-only arming: a failed WR fires the event. */
	ib_req_notify_cq(cq, IB_CQ_SOLICITED);
	atomic_set(&comp_events, 0);
	timer_qp = qp;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0)
	hrtimer_setup(&timer, timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
#else
	hrtimer_init(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	timer.function = timer_fn;
#endif
	hrtimer_start(&timer, ns_to_ktime(1000000), HRTIMER_MODE_REL_HARD);
	msleep(50);
	hrtimer_cancel(&timer);
	n = poll_all(cq, wc, 16);
	CHECK("post_send from hardirq", timer_rv == 0 && n == 1 && wc[0].wr_id == 0x7777,
	      "rv %d n %d", timer_rv, n);
	CHECK("solicited arm fires on error completion", atomic_read(&comp_events) == 1,
	      "%d", atomic_read(&comp_events));
	rv = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
	CHECK("report missed events: none", rv == 0, "%d", rv);

	rv = modify_state(qp, IB_QPS_RESET);
	CHECK("modify ERROR->RESET", rv == 0, "%d", rv);

	/* CQ overflow: 2 entries, 3 flushed receives. */
	cqa.cqe = 2;
	small = ib_create_cq(ibdev, comp_handler, cq_event, NULL, &cqa);
	if (!IS_ERR(small)) {
		qa.send_cq = small;
		qa.recv_cq = small;
		qa.cap.max_send_sge = 1;
		qp2 = ib_create_qp(pd, &qa);
		if (!IS_ERR(qp2)) {
			modify_state(qp2, IB_QPS_INIT);
			for (i = 0; i < 3; i++) {
				struct ib_recv_wr r = { .wr_id = 500 + i };
				const struct ib_recv_wr *bad;

				ib_post_recv(qp2, &r, &bad);
			}
			atomic_set(&cq_err_events, 0);
			modify_state(qp2, IB_QPS_ERR);
			CHECK("cq overflow event", atomic_read(&cq_err_events) == 1, "%d",
			      atomic_read(&cq_err_events));
			n = poll_all(small, wc, 16);
			CHECK("overflowed cq holds 2", n == 2, "%d", n);
			ib_destroy_qp(qp2);
		}
		qp2 = NULL;
		ib_destroy_cq(small);
	}

	/* FRWR: 3 pages, mapped with an offset into the first. */
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK("alloc_mr", !IS_ERR(mr), "%ld", PTR_ERR(mr));
	if (IS_ERR(mr)) {
		mr = NULL;
		goto out;
	}
	sg_init_table(sg, 3);
	for (i = 0; i < 3; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		if (!pages[i])
			goto out;
		sg_set_page(&sg[i], pages[i], PAGE_SIZE - (i == 0 ? 256 : 0), i == 0 ? 256 : 0);
	}
	n = ib_dma_map_sg(ibdev, sg, 3, DMA_BIDIRECTIONAL);
	rv = ib_map_mr_sg(mr, sg, n, NULL, PAGE_SIZE);
	CHECK("map_mr_sg", rv == 3 && mr->length == 3 * PAGE_SIZE - 256 &&
	      mr->iova == (uintptr_t)page_address(pages[0]) + 256,
	      "rv %d len %llu", rv, mr->length);
	ib_dma_unmap_sg(ibdev, sg, 3, DMA_BIDIRECTIONAL);
	CHECK("alloc_mr too many pages fails", IS_ERR(ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 100000)),
	      "accepted");

	/* SRQ: limit event when fewer than 2 WQEs remain. */
	{
		struct ib_srq_init_attr sa = { .event_handler = srq_event,
					       .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ib_srq_attr s = { .srq_limit = 2 };

		srq = ib_create_srq(pd, &sa);
		CHECK("create_srq", !IS_ERR(srq), "%ld", PTR_ERR(srq));
		if (IS_ERR(srq)) {
			srq = NULL;
			goto out;
		}
		for (i = 0; i < 5; i++) {
			struct ib_recv_wr r = { .wr_id = 600 + i };
			const struct ib_recv_wr *bad;

			rv = ib_post_srq_recv(srq, &r, &bad);
			if (i < 4)
				CHECK("post_srq_recv", rv == 0, "%d", rv);
			else
				CHECK("post_srq_recv full", rv == -ENOMEM, "%d", rv);
		}
		rv = ib_modify_srq(srq, &s, IB_SRQ_LIMIT);
		CHECK("modify_srq limit", rv == 0, "%d", rv);
		memset(&s, 0, sizeof(s));
		rv = ib_query_srq(srq, &s);
		CHECK("query_srq", rv == 0 && s.srq_limit == 2 && s.max_wr == 4, "rv %d", rv);
		qa.srq = srq;
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qp2 = ib_create_qp(pd, &qa);
		CHECK("create_qp with srq", !IS_ERR(qp2), "%ld", PTR_ERR(qp2));
		if (IS_ERR(qp2)) {
			qp2 = NULL;
		} else {
			struct ib_recv_wr r = { .wr_id = 700 };
			const struct ib_recv_wr *bad;

			CHECK("post_recv on srq qp fails", ib_post_recv(qp2, &r, &bad) != 0,
			      "accepted");
			modify_state(qp2, IB_QPS_INIT);
			atomic_set(&last_wqe_events, 0);
			modify_state(qp2, IB_QPS_ERR);
			CHECK("srq qp last wqe reached", atomic_read(&last_wqe_events) == 1,
			      "%d", atomic_read(&last_wqe_events));
			n = poll_all(cq, wc, 16);
			CHECK("srq wqes not flushed by the qp", n == 0, "%d", n);
		}
	}
out:
	if (qp2)
		ib_destroy_qp(qp2);
	if (srq)
		ib_destroy_srq(srq);
	if (mr)
		CHECK("dereg_mr", ib_dereg_mr(mr) == 0, "failed");
	for (i = 0; i < 3; i++)
		if (pages[i])
			__free_page(pages[i]);
	kfree(buf);
	if (qp)
		CHECK("destroy_qp", ib_destroy_qp(qp) == 0, "failed");
	if (cq)
		ib_destroy_cq(cq);
	ib_dealloc_pd(pd);
}

/*
 * The device named by `dev`, held: an ib_client's add() sees every registered
 * device when the client registers (ib_device_get_by_name() is gone in 7.x).
 */
static struct ib_device *found;

static int find_add(struct ib_device *ibdev)
{
	if (!found && !strcmp(dev_name(&ibdev->dev), dev) && ib_device_try_get(ibdev))
		found = ibdev;
	return 0;
}

static void find_remove(struct ib_device *ibdev, void *data)
{
}

static struct ib_client find_client = {
	.name = "rsiw_objs_test",
	.add = find_add,
	.remove = find_remove,
};

static int __init objs_init(void)
{
	struct ib_device *ibdev = NULL;

	if (!ib_register_client(&find_client)) {
		ibdev = found;
		ib_unregister_client(&find_client);
	}
	if (!ibdev) {
		pr_info("RSIW-OBJS FAIL device: %s not found\n", dev);
		failed++;
	} else {
		run(ibdev);
		ib_device_put(ibdev);
	}
	pr_info("RSIW-OBJS SUMMARY passed=%d failed=%d\n", passed, failed);
	return 0;
}

static void __exit objs_exit(void)
{
}

module_init(objs_init);
module_exit(objs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("RDMA verbs-object test without a connection (test only)");

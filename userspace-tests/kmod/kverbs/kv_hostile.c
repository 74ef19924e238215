// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel ULP's memory after its STag died (hostile=1): RFC 5040 §6.4 says an
 * invalid STag is not accessed, and a ULP frees or reuses the pages of an FRWR
 * region as soon as it has the completion that invalidated it (NFS/RDMA does,
 * after a Send With Invalidate). The peer here queues RDMA READs of the whole
 * region up to its ORD, then invalidates the region (by Send With Invalidate,
 * or the server by LOCAL_INV) while the Read Responses are still being built;
 * the server overwrites the pages with another pattern ("poison") the moment
 * its invalidation completes. No poison byte may reach the reader: each READ
 * either completes with data read before the invalidation or fails.
 */
#include <linux/jiffies.h>
#include <linux/string.h>

#include "kv.h"

#define KV_ACC_READ (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ)
/* READs queued before the invalidation: the ORD the connection asks for. */
#define KV_NREADS 4
#define KV_SEED 0x44
#define KV_POISON 0xc3

static struct kv_conn conn;
static struct kv_frmr fr;

/*
 * The client's READs landed in its scratch buffer, all of them the whole
 * region: each byte holds the region's pattern or is untouched (0), never
 * the poison pattern written after the invalidation completed.
 */
static bool kv_no_poison(struct kv_end *e, const char *name)
{
	const u8 *b = e->buf;
	u32 i;
	u8 good, poison;

	kv_sync_cpu(e);
	for (i = 0; i < KV_REGION; i++) {
		kv_fill_at(&good, 1, KV_SEED, i);
		kv_fill_at(&poison, 1, KV_POISON, i);
		if (b[i] == good || b[i] == 0)
			continue;
		kv_fail(name, "byte %u of the READ data is %#x (%s), the region held %#x",
			i, b[i], b[i] == poison ? "written after the invalidation" : "garbage",
			good);
		return false;
	}
	kv_pass(name);
	return true;
}

/*
 * Collects the client's completions for ids[0..n) (the READs and the Send):
 * each must come (success or error) in bounded time. Returns how many of the
 * first KV_NREADS succeeded, or -1 if one is missing.
 */
static int kv_collect(struct kv_end *e, const u64 *ids, int n)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(KV_WC_MS);
	bool seen[KV_NREADS + 1] = {};
	int i, got = 0, ok = 0;
	struct ib_wc wc;

	while (got < n) {
		if (ib_poll_cq(e->cq, 1, &wc) != 1) {
			if (time_after(jiffies, deadline)) {
				kv_set_why("%d of %d completions within %d ms", got, n, KV_WC_MS);
				return -1;
			}
			usleep_range(100, 500);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (wc.wr_id != ids[i] || seen[i])
				continue;
			seen[i] = true;
			got++;
			if (i < KV_NREADS && wc.status == IB_WC_SUCCESS)
				ok++;
			if (wc.status != IB_WC_SUCCESS)
				pr_info("rsiw-kverbs: hostile: %s %d completed with %s\n",
					i < KV_NREADS ? "READ" : "Send", i, kv_wc_str(&wc));
		}
	}
	return ok;
}

/*
 * The server's receive rid, polled without sleeping: the ULP reacts at once,
 * as one whose completion handler reuses the pages would, and keeps its CPU
 * (no preemption in the test kernel) until it has, so a Read Response that
 * TX would build there is built afterwards.
 */
static int kv_spin_wc(struct kv_end *e, u64 rid, struct ib_wc *wc)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(KV_WC_MS);

	for (;;) {
		if (ib_poll_cq(e->cq, 1, wc) == 1) {
			if (wc->wr_id == rid)
				return 0;
			continue;
		}
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		cpu_relax();
	}
}

/* Posts a Send (with invalidate of inv, if not 0) of 8 bytes, without waiting. */
static int kv_post_send_nowait(struct kv_end *e, u64 id, u32 inv)
{
	struct ib_sge sge = kv_sge(e, 0, 8);
	struct ib_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = inv ? IB_WR_SEND_WITH_INV : IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = inv,
	};
	const struct ib_send_wr *bad;

	return ib_post_send(e->id->qp, &wr, &bad);
}

/* Posts KV_NREADS READs of the whole region into the client's scratch buffer. */
static int kv_post_reads(struct kv_conn *c, u64 *ids)
{
	struct ib_sge sge = kv_sge(&c->cli, 0, KV_REGION);
	int i, rv;

	memset(c->cli.buf, 0, KV_REGION);
	kv_sync_dev(&c->cli);
	for (i = 0; i < KV_NREADS; i++) {
		ids[i] = kv_next_wr_id();
		rv = kv_post_rdma(&c->cli, IB_WR_RDMA_READ, ids[i], &sge, fr.mr->iova,
				  fr.mr->rkey, 0);
		if (rv)
			return rv;
	}
	return 0;
}

/* The server's completion for receive rid, then the poison. */
static bool kv_poison_after(struct kv_conn *c, u64 rid, bool inv, const char *name)
{
	struct ib_wc wc;
	int rv = kv_spin_wc(&c->srv, rid, &wc);

	if (!kv_check(name, kv_wc_ok(rv, &wc, IB_WC_RECV, "recv"), "%s", kv_why))
		return false;
	if (inv && !(wc.wc_flags & IB_WC_WITH_INVALIDATE)) {
		kv_fail(name, "receive without IB_WC_WITH_INVALIDATE");
		return false;
	}
	if (!inv) {
		struct ib_send_wr li = {
			.opcode = IB_WR_LOCAL_INV,
			.wr_id = kv_next_wr_id(),
			.send_flags = IB_SEND_SIGNALED,
			.ex.invalidate_rkey = fr.mr->rkey,
		};
		const struct ib_send_wr *bad;

		rv = ib_post_send(c->srv.id->qp, &li, &bad);
		if (!rv)
			rv = kv_spin_wc(&c->srv, li.wr_id, &wc);
		if (!kv_check("hostile_local_inv", kv_wc_ok(rv, &wc, IB_WC_LOCAL_INV, "LOCAL_INV"),
			      "%s", kv_why))
			return false;
	}
	/* The STag is invalid: the ULP owns its pages again. */
	kv_frmr_fill(&c->srv, &fr, KV_POISON);
	return true;
}

/* Case names of one variant: the invalidation by Send With Invalidate or LOCAL_INV. */
struct kv_hostile_case {
	const char *connect, *posted, *sent, *received, *complete, *verdict, *by;
	bool send_inv;
};

static const struct kv_hostile_case kv_send_inv_case = {
	"connect_hostile_send_inv", "hostile_reads_posted", "hostile_send_inv_posted",
	"hostile_send_inv_received", "hostile_send_inv_reads_complete",
	"read_vs_send_inv_no_poison", "the Send With Invalidate", true,
};

static const struct kv_hostile_case kv_local_inv_case = {
	"connect_hostile_local_inv", "hostile_li_reads_posted", "hostile_li_send_posted",
	"hostile_li_send_received", "hostile_li_reads_complete",
	"read_vs_local_inv_no_poison", "the LOCAL_INV", false,
};

/*
 * READs, then a Send (no fence): with invalidate of the region they read, or
 * plain, and the server invalidates locally when it arrives.
 */
static void kv_read_then_invalidate(struct kv_conn *c, const struct kv_hostile_case *k)
{
	u64 ids[KV_NREADS + 1], rid = kv_next_wr_id();
	int rv, ok;

	rv = kv_post_recv(&c->srv, rid, 0, PAGE_SIZE);
	if (!rv)
		rv = kv_post_reads(c, ids);
	if (!kv_check(k->posted, !rv, "post: %d", rv))
		return;
	ids[KV_NREADS] = kv_next_wr_id();
	rv = kv_post_send_nowait(&c->cli, ids[KV_NREADS], k->send_inv ? fr.mr->rkey : 0);
	if (!kv_check(k->sent, !rv, "send: %d", rv))
		return;
	if (!kv_poison_after(c, rid, k->send_inv, k->received))
		return;
	ok = kv_collect(&c->cli, ids, KV_NREADS + 1);
	if (!kv_check(k->complete, ok >= 0, "%s", kv_why))
		return;
	pr_info("rsiw-kverbs: hostile: %d of %d READs completed before %s\n", ok, KV_NREADS,
		k->by);
	kv_no_poison(&c->cli, k->verdict);
}

static void kv_hostile_one(const struct kv_hostile_case *k)
{
	struct kv_conn *c = &conn;
	int rv;

	if (!kv_connect_case(c, k->connect))
		return;
	rv = kv_frmr_setup(&c->srv, &fr, KV_ACC_READ);
	if (kv_check("hostile_setup", !rv, "FRWR MR: %d", rv)) {
		kv_frmr_fill(&c->srv, &fr, KV_SEED);
		kv_read_then_invalidate(c, k);
	}
	kv_frmr_free(&c->srv, &fr);
	kv_disconnect(c);
}

void kv_run_hostile(void)
{
	kv_hostile_one(&kv_send_inv_case);
	kv_hostile_one(&kv_local_inv_case);
}

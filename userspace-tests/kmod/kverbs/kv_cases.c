// SPDX-License-Identifier: GPL-2.0
/*
 * The SEND/RECV, FRWR and invalidation cases (RFC 5040 §5: tagged buffers,
 * STag invalidation by LOCAL_INV, READ with local invalidate and SEND with
 * invalidate), each group on its own connection because an access through an
 * invalid STag is a DDP error (RFC 5041 §7.2) that ends the stream with a
 * Terminate (RFC 5040 §7).
 */
#include <linux/string.h>

#include "kv.h"

#define KV_ACC_RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

static struct kv_conn conn;
static struct kv_frmr fr, fr_sink;
char kv_why[160];

bool kv_wc_ok(int rv, const struct ib_wc *wc, enum ib_wc_opcode op, const char *what)
{
	if (rv) {
		kv_set_why("%s: no completion within %d ms (%d)", what, KV_WC_MS, rv);
		return false;
	}
	if (wc->status != IB_WC_SUCCESS) {
		kv_set_why("%s completed with %s", what, kv_wc_str(wc));
		return false;
	}
	if (wc->opcode != op) {
		kv_set_why("%s completed as opcode %d, want %d", what, wc->opcode, op);
		return false;
	}
	return true;
}

bool kv_connect_case(struct kv_conn *c, const char *name)
{
	int rv = kv_connect(c);

	return kv_check(name, !rv, "connect on %s to %s:%d: %d", kv_dev, kv_addr, kv_port, rv);
}

/*
 * The client SENDs len pattern bytes (op: SEND or SEND_WITH_INV of inv) into
 * a RECV posted by the server; checks both completions and the data.
 */
static bool kv_xfer(struct kv_conn *c, enum ib_wr_opcode op, u32 len, u8 seed, u32 inv,
		    struct ib_wc *rwc)
{
	u64 rid = kv_next_wr_id();
	struct ib_wc swc;
	long bad;
	int rv;

	memset(c->srv.buf, 0, PAGE_SIZE);
	kv_sync_dev(&c->srv);
	rv = kv_post_recv(&c->srv, rid, 0, PAGE_SIZE);
	if (rv) {
		kv_set_why("post_recv: %d", rv);
		return false;
	}
	kv_fill_at(c->cli.buf, len, seed, 0);
	kv_sync_dev(&c->cli);
	rv = kv_send(&c->cli, op, 0, len, inv, &swc);
	if (!kv_wc_ok(rv, &swc, IB_WC_SEND, "send"))
		return false;
	rv = kv_wait_wc(&c->srv, rid, rwc, KV_WC_MS);
	if (!kv_wc_ok(rv, rwc, IB_WC_RECV, "recv"))
		return false;
	kv_sync_cpu(&c->srv);
	bad = kv_buf_check(c->srv.buf, len, seed, 0);
	if (rwc->byte_len != len || bad >= 0) {
		kv_set_why("received %u bytes (want %u), first bad byte %ld", rwc->byte_len, len,
			   bad);
		return false;
	}
	return true;
}

/* Post a one-WR RDMA operation from e and wait for its completion. */
static int kv_rdma_wait(struct kv_end *e, enum ib_wr_opcode op, struct ib_sge *sge, u64 raddr,
			u32 rkey, u32 inv, struct ib_wc *wc)
{
	u64 id = kv_next_wr_id();
	int rv = kv_post_rdma(e, op, id, sge, raddr, rkey, inv);

	return rv ? rv : kv_wait_wc(e, id, wc, KV_WC_MS);
}

/*
 * An RDMA READ of 64 bytes from (raddr, rkey) into sink must fail: a refused
 * post or an error completion, in bounded time (an invalid STag is a DDP
 * error, RFC 5041 §7.2, reported by a Terminate, RFC 5040 §7).
 */
bool kv_read_fails(struct kv_end *e, struct ib_sge *sink, u64 raddr, u32 rkey)
{
	struct ib_wc wc;
	u64 id = kv_next_wr_id();
	int rv;

	rv = kv_post_rdma(e, IB_WR_RDMA_READ, id, sink, raddr, rkey, 0);
	if (rv) {
		pr_info("rsiw-kverbs: %s: READ refused at post (%d), as expected\n", e->name, rv);
		return true;
	}
	rv = kv_wait_wc(e, id, &wc, KV_WC_MS);
	if (rv) {
		kv_set_why("no READ completion within %d ms (%d)", KV_WC_MS, rv);
		return false;
	}
	if (wc.status == IB_WC_SUCCESS) {
		kv_set_why("READ through an invalidated STag succeeded");
		return false;
	}
	pr_info("rsiw-kverbs: %s: READ failed as expected: %s\n", e->name, kv_wc_str(&wc));
	return true;
}

/* The server's MR takes a WRITE and serves a READ; a WRITE then READ after LOCAL_INV fail. */
static void kv_frwr_cases(struct kv_conn *c)
{
	const u32 rd_off = 100, rd_len = 3 * PAGE_SIZE + 7;
	struct ib_sge sge;
	struct ib_wc wc;
	long bad;
	int rv;

	sge = kv_sge(&c->cli, 0, KV_REGION);
	kv_fill_at(c->cli.buf, KV_REGION, 0x22, 0);
	kv_sync_dev(&c->cli);
	rv = kv_rdma_wait(&c->cli, IB_WR_RDMA_WRITE, &sge, fr.mr->iova, fr.mr->rkey, 0, &wc);
	/*
	 * A WRITE's completion only frees the source; the SEND after it is
	 * delivered after the WRITE is placed (RFC 5040 §5.5), so its arrival
	 * proves placement.
	 */
	if (kv_wc_ok(rv, &wc, IB_WC_RDMA_WRITE, "write") &&
	    kv_xfer(c, IB_WR_SEND, 8, 0x33, 0, &wc)) {
		bad = kv_frmr_check(&c->srv, &fr, 0, KV_REGION, 0x22, 0);
		kv_check("frwr_rdma_write", bad < 0,
			 "%lu-byte WRITE into %d pages: first bad byte at %ld", KV_REGION,
			 KV_PAGES, bad);
	} else {
		kv_fail("frwr_rdma_write", "%s", kv_why);
	}

	kv_frmr_fill(&c->srv, &fr, 0x44);
	memset(c->cli.buf, 0, KV_REGION);
	kv_sync_dev(&c->cli);
	sge = kv_sge(&c->cli, 0, rd_len);
	rv = kv_rdma_wait(&c->cli, IB_WR_RDMA_READ, &sge, fr.mr->iova + rd_off, fr.mr->rkey, 0,
			  &wc);
	if (kv_wc_ok(rv, &wc, IB_WC_RDMA_READ, "read")) {
		kv_sync_cpu(&c->cli);
		bad = kv_buf_check(c->cli.buf, rd_len, 0x44, rd_off);
		if (bad < 0 && ((u8 *)c->cli.buf)[rd_len] != 0)
			bad = rd_len;
		kv_check("frwr_rdma_read", bad < 0,
			 "READ of %u bytes at offset %u: first bad byte at %ld", rd_len, rd_off,
			 bad);
	} else {
		kv_fail("frwr_rdma_read", "%s", kv_why);
	}

	if (kv_noinv) {
		pr_info("rsiw-kverbs: noinv: LOCAL_INV not posted\n");
	} else {
		rv = kv_frmr_local_inv(&c->srv, &fr, &wc);
		if (!kv_check("local_inv", kv_wc_ok(rv, &wc, IB_WC_LOCAL_INV, "LOCAL_INV"), "%s",
			      kv_why))
			return;
	}

	/* Both must be refused by the server: the STag is invalid (RFC 5041 §7.2). */
	sge = kv_sge(&c->cli, 0, PAGE_SIZE);
	kv_fill_at(c->cli.buf, PAGE_SIZE, 0x55, 0);
	kv_sync_dev(&c->cli);
	rv = kv_post_rdma(&c->cli, IB_WR_RDMA_WRITE, kv_next_wr_id(), &sge, fr.mr->iova,
			  fr.mr->rkey, 0);
	sge = kv_sge(&c->cli, PAGE_SIZE, 64);
	kv_check("read_after_local_inv_fails",
		 kv_read_fails(&c->cli, &sge, fr.mr->iova, fr.mr->rkey), "%s", kv_why);
	bad = kv_frmr_check(&c->srv, &fr, 0, KV_REGION, 0x44, 0);
	kv_check("write_after_local_inv_not_placed", bad < 0,
		 "region changed at byte %ld (write post %d)", bad, rv);
}

void kv_run_basic(void)
{
	struct kv_conn *c = &conn;
	struct ib_wc wc;
	int rv;

	if (!kv_connect_case(c, "connect_basic"))
		return;
	kv_check("send_recv", kv_xfer(c, IB_WR_SEND, 1000, 0x11, 0, &wc), "%s", kv_why);
	rv = kv_frmr_alloc(&c->srv, &fr);
	if (kv_check("frwr_alloc_mr", !rv, "%d-page MEM_REG MR: %d", KV_PAGES, rv)) {
		rv = kv_frmr_reg(&c->srv, &fr, KV_ACC_RW);
		if (kv_check("frwr_reg_mr", !rv, "map %d pages and REG_MR: %d", KV_PAGES, rv))
			kv_frwr_cases(c);
		kv_frmr_free(&c->srv, &fr);
	}
	kv_disconnect(c);
}

/*
 * RDMA READ with local invalidate (what rdma_rw posts on iWARP): the sink MR
 * of the reader is invalidated when the READ completes, so a later READ into
 * it must fail.
 */
void kv_run_read_inv(void)
{
	const u32 off = 200, len = KV_REGION - 200;
	struct kv_conn *c = &conn;
	struct ib_sge sge;
	struct ib_wc wc;
	long bad;
	int rv;

	if (!kv_connect_case(c, "connect_read_inv"))
		return;
	rv = kv_frmr_setup(&c->srv, &fr, KV_ACC_RW);
	if (!rv)
		rv = kv_frmr_setup(&c->cli, &fr_sink, IB_ACCESS_LOCAL_WRITE);
	if (!kv_check("read_inv_setup", !rv, "source and sink FRWR MRs: %d", rv))
		goto out;
	kv_frmr_fill(&c->srv, &fr, 0x66);
	sge.addr = fr_sink.mr->iova;
	sge.length = len;
	sge.lkey = fr_sink.mr->lkey;
	rv = kv_rdma_wait(&c->cli, kv_noinv ? IB_WR_RDMA_READ : IB_WR_RDMA_READ_WITH_INV, &sge, fr.mr->iova + off, fr.mr->rkey,
			  fr_sink.mr->lkey, &wc);
	if (kv_wc_ok(rv, &wc, IB_WC_RDMA_READ, "READ_WITH_INV")) {
		bad = kv_frmr_check(&c->cli, &fr_sink, 0, len, 0x66, off);
		kv_check("read_with_inv", bad < 0, "sink differs at byte %ld", bad);
		sge.length = 64;
		kv_check("read_with_inv_invalidated",
			 kv_read_fails(&c->cli, &sge, fr.mr->iova, fr.mr->rkey), "%s", kv_why);
	} else {
		kv_fail("read_with_inv", "%s", kv_why);
	}
out:
	kv_frmr_free(&c->cli, &fr_sink);
	kv_frmr_free(&c->srv, &fr);
	kv_disconnect(c);
}

/*
 * SEND with remote invalidate: the receiver's completion carries
 * IB_WC_WITH_INVALIDATE and the STag, which is then invalid for the peer
 * (RFC 5040 §5.3, Send with Invalidate).
 */
void kv_run_send_inv(void)
{
	struct kv_conn *c = &conn;
	struct ib_sge sge;
	struct ib_wc wc;
	int rv;

	if (!kv_connect_case(c, "connect_send_inv"))
		return;
	rv = kv_frmr_setup(&c->srv, &fr, KV_ACC_RW);
	if (!kv_check("send_inv_setup", !rv, "FRWR MR: %d", rv))
		goto out;
	if (!kv_xfer(c, kv_noinv ? IB_WR_SEND : IB_WR_SEND_WITH_INV, 512, 0x77, fr.mr->rkey,
		     &wc)) {
		kv_fail("send_with_inv", "%s", kv_why);
		goto out;
	}
	kv_check("send_with_inv",
		 (wc.wc_flags & IB_WC_WITH_INVALIDATE) && wc.ex.invalidate_rkey == fr.mr->rkey,
		 "receive wc_flags %#x invalidate_rkey %#x, want IB_WC_WITH_INVALIDATE and %#x",
		 wc.wc_flags, wc.ex.invalidate_rkey, fr.mr->rkey);
	sge = kv_sge(&c->cli, 0, 64);
	kv_check("send_with_inv_invalidated",
		 kv_read_fails(&c->cli, &sge, fr.mr->iova, fr.mr->rkey), "%s", kv_why);
out:
	kv_frmr_free(&c->srv, &fr);
	kv_disconnect(c);
}

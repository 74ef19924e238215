// SPDX-License-Identifier: GPL-2.0
/*
 * The RFC 7306 §5.1 masked atomics cases (masked FetchAdd and masked
 * CmpSwap) through IB_WR_MASKED_ATOMIC_*; on a device without masked atomics
 * they must fail cleanly (refused post or error completion, never a hang).
 */
#include <linux/string.h>

#include "kv.h"

/* Target word offsets in the server's region (8-byte aligned: RFC 7306 §5.1.1). */
#define KV_FADD_OFF 64
#define KV_CSWAP_OFF 128

static struct kv_conn aconn;
static struct kv_frmr afr;

/* RFC 7306 §5.1.1 pseudocode: add per field, a carry out of a bit set in mask is discarded. */
u64 kv_masked_fadd(u64 orig, u64 add, u64 mask)
{
	u64 res = 0, carry = 0, bit, sum;
	int i;

	for (i = 0; i < 64; i++) {
		bit = 1ULL << i;
		sum = carry + ((orig & bit) >> i) + ((add & bit) >> i);
		carry = (sum >> 1) & 1;
		if (sum & 1)
			res |= bit;
		if (mask & bit)
			carry = 0;
	}
	return res;
}

/* RFC 7306 §5.1.2 pseudocode: compare under cmask; on a match swap the bits under smask. */
u64 kv_masked_cswap(u64 orig, u64 cmp, u64 cmask, u64 swap, u64 smask)
{
	if ((cmp ^ orig) & cmask)
		return orig;
	return (orig & ~smask) | (swap & smask);
}

/* Post one masked atomic from the client; the original value lands in its buffer at 0. */
static int kv_atomic(struct kv_conn *c, enum ib_wr_opcode op, u32 off, u64 cadd, u64 cmask,
		     u64 swap, u64 smask, struct ib_wc *wc)
{
	struct ib_sge sge = kv_sge(&c->cli, 0, sizeof(u64));
	struct ib_atomic_wr wr = {
		.wr = {
			.wr_id = kv_next_wr_id(),
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = op,
		},
		.remote_addr = afr.mr->iova + off,
		.compare_add = cadd,
		.compare_add_mask = cmask,
		.swap = swap,
		.swap_mask = smask,
		.rkey = afr.mr->rkey,
	};

	memset(c->cli.buf, 0, sizeof(u64));
	kv_sync_dev(&c->cli);
	return kv_post_send_wait(&c->cli, &wr.wr, wc);
}

/*
 * One masked atomic on the word at off holding orig: checks the completion,
 * the returned original (host order, as the verbs deliver it) and the final
 * memory (RFC 7306 §5.1: the operation runs in the target's byte order).
 */
static void kv_atomic_case(struct kv_conn *c, const char *name, enum ib_wr_opcode op,
			   enum ib_wc_opcode wop, u32 off, u64 orig, u64 want, u64 cadd,
			   u64 cmask, u64 swap, u64 smask)
{
	struct ib_wc wc;
	u64 got, mem;
	int rv;

	*kv_frmr_word(&afr, off) = orig;
	rv = kv_atomic(c, op, off, cadd, cmask, swap, smask, &wc);
	if (!kv_wc_ok(rv, &wc, wop, name)) {
		kv_fail(name, "%s", kv_why);
		return;
	}
	kv_sync_cpu(&c->cli);
	got = *(u64 *)c->cli.buf;
	kv_frmr_sync_cpu(c->srv.id->device, &afr);
	mem = *kv_frmr_word(&afr, off);
	kv_check(name, got == orig && mem == want,
		 "returned %#llx (want %#llx), memory %#llx (want %#llx)", got, orig, mem, want);
}

/* xorshift64: reproducible operands for the randomized masked cases. */
static u64 kv_rand(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * 64 masked atomics with pseudo-random operands and masks, alternating masked
 * FetchAdd and masked CmpSwap on one word: each returned original and the word
 * afterwards must equal the model (RFC 7306 §5.1.1, §5.1.2); both CmpSwap
 * outcomes (match, mismatch) must have occurred.
 */
static void kv_atomic_random(struct kv_conn *c)
{
	const char *name = "masked_random";
	u64 s = 0x9e3779b97f4a7c15ULL, orig, a, am, cmp, cm, want, got, mem;
	unsigned int i, match = 0, mismatch = 0;
	struct ib_wc wc;
	bool fadd;
	int rv;

	for (i = 0; i < 64; i++) {
		fadd = !(i & 1);
		orig = kv_rand(&s);
		a = kv_rand(&s);
		am = kv_rand(&s) & kv_rand(&s);
		cm = kv_rand(&s);
		/* Every other CmpSwap differs from orig only outside the compare mask. */
		cmp = (i & 2) ? orig ^ (kv_rand(&s) & ~cm) : kv_rand(&s);
		if (fadd) {
			want = kv_masked_fadd(orig, a, am);
		} else {
			want = kv_masked_cswap(orig, cmp, cm, a, am);
			if ((cmp ^ orig) & cm)
				mismatch++;
			else
				match++;
		}
		*kv_frmr_word(&afr, KV_FADD_OFF) = orig;
		rv = kv_atomic(c, fadd ? IB_WR_MASKED_ATOMIC_FETCH_AND_ADD :
				 IB_WR_MASKED_ATOMIC_CMP_AND_SWP, KV_FADD_OFF,
			       fadd ? a : cmp, fadd ? am : cm, fadd ? 0 : a, fadd ? 0 : am, &wc);
		if (!kv_wc_ok(rv, &wc, fadd ? IB_WC_MASKED_FETCH_ADD : IB_WC_MASKED_COMP_SWAP,
			      name)) {
			kv_fail(name, "op %u: %s", i, kv_why);
			return;
		}
		kv_sync_cpu(&c->cli);
		got = *(u64 *)c->cli.buf;
		kv_frmr_sync_cpu(c->srv.id->device, &afr);
		mem = *kv_frmr_word(&afr, KV_FADD_OFF);
		if (got != orig || mem != want) {
			kv_fail(name, "op %u (%s): orig %#llx ops %#llx/%#llx/%#llx/%#llx: returned %#llx, memory %#llx (want %#llx)",
				i, fadd ? "FetchAdd" : "CmpSwap", orig, a, am, cmp, cm, got, mem,
				want);
			return;
		}
	}
	kv_check(name, match && mismatch, "CmpSwap outcomes: %u matches, %u mismatches", match,
		 mismatch);
}

/* Device without masked atomics: the request must be refused or complete in error. */
static void kv_atomics_unsupported(struct kv_conn *c)
{
	struct ib_wc wc;
	int rv;

	*kv_frmr_word(&afr, KV_FADD_OFF) = 5;
	rv = kv_atomic(c, IB_WR_MASKED_ATOMIC_FETCH_AND_ADD, KV_FADD_OFF, 1, 0, 0, 0, &wc);
	if (rv == -ETIMEDOUT) {
		kv_fail("masked_atomic_unsupported_clean_error", "no completion within %d ms",
			KV_WC_MS);
		return;
	}
	if (rv) {
		pr_info("rsiw-kverbs: masked FetchAdd refused at post (%d), as expected\n", rv);
		kv_pass("masked_atomic_unsupported_clean_error");
		return;
	}
	kv_check("masked_atomic_unsupported_clean_error", wc.status != IB_WC_SUCCESS,
		 "a device reporting no masked atomics completed one successfully");
	kv_check("masked_atomic_unsupported_memory_intact", *kv_frmr_word(&afr, KV_FADD_OFF) == 5,
		 "target word changed to %#llx", *kv_frmr_word(&afr, KV_FADD_OFF));
}

void kv_run_atomics(void)
{
	/* Four 16-bit fields: 0x80ff+0x8001, 0x7fff+1, 0xffff+1, 0x00f0+0x10. */
	const u64 fa_orig = 0x80ff7fffffff00f0ULL, fa_add = 0x8001000100010010ULL,
		  fa_mask = 0x8000800080008000ULL, fa_want = 0x0100800000000100ULL;
	const u64 cs_orig = 0x1122334455667788ULL, cs_swap = 0xaaaabbbbccccddddULL,
		  cs_smask = 0x0000ffff0000ffffULL, cs_cmask = 0xffff000000000000ULL,
		  cs_want = 0x1122bbbb5566ddddULL;
	struct kv_conn *c = &aconn;
	bool supported;
	int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	int rv;

	/* The model itself, against results worked out by hand from the RFC text. */
	if (!kv_check("masked_atomic_model",
		      kv_masked_fadd(fa_orig, fa_add, fa_mask) == fa_want &&
		      kv_masked_fadd(~0ULL, 1, 0) == 0 &&
		      kv_masked_cswap(cs_orig, 0x1122000000000000ULL, cs_cmask, cs_swap,
				      cs_smask) == cs_want &&
		      kv_masked_cswap(cs_orig, 0x9922000000000000ULL, cs_cmask, cs_swap,
				      cs_smask) == cs_orig,
		      "masked FetchAdd/CmpSwap model disagrees with the worked examples"))
		return;
	if (!kv_connect_case(c, "connect_atomics"))
		return;
	supported = c->srv.id->device->attrs.masked_atomic_cap != IB_ATOMIC_NONE;
	pr_info("rsiw-kverbs: %s masked_atomic_cap %d\n", kv_dev,
		c->srv.id->device->attrs.masked_atomic_cap);
	if (supported)
		access |= IB_ACCESS_REMOTE_ATOMIC;
	rv = kv_frmr_setup(&c->srv, &afr, access);
	if (!kv_check("atomics_setup", !rv, "FRWR MR: %d", rv))
		goto out;
	if (!supported) {
		kv_atomics_unsupported(c);
		goto out;
	}
	kv_atomic_case(c, "masked_fetch_add", IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		       IB_WC_MASKED_FETCH_ADD, KV_FADD_OFF, fa_orig, fa_want, fa_add, fa_mask, 0, 0);
	kv_atomic_case(c, "masked_cmp_swap_match", IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		       IB_WC_MASKED_COMP_SWAP, KV_CSWAP_OFF, cs_orig, cs_want,
		       0x1122000000000000ULL, cs_cmask, cs_swap, cs_smask);
	kv_atomic_case(c, "masked_cmp_swap_mismatch", IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		       IB_WC_MASKED_COMP_SWAP, KV_CSWAP_OFF, cs_orig, cs_orig,
		       0x9922000000000000ULL, cs_cmask, cs_swap, cs_smask);
	kv_atomic_random(c);
out:
	kv_frmr_free(&c->srv, &afr);
	kv_disconnect(c);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * FRWR regions for the test: KV_PAGES separate pages behind one
 * IB_MR_TYPE_MEM_REG MR, registered by an IB_WR_REG_MR work request and
 * invalidated by IB_WR_LOCAL_INV (RFC 5040 §5: STags name tagged buffers until invalidated).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "kv.h"

/* The test pattern: byte x of a buffer filled with seed (period > one page). */
static u8 kv_pat(u8 seed, u32 x)
{
	return (u8)(seed + x * 7 + (x >> 8));
}

void kv_fill_at(void *p, u32 len, u8 seed, u32 start)
{
	u8 *b = p;
	u32 i, x;

	for (i = 0; i < len; i++) {
		x = start + i;
		b[i] = kv_pat(seed, x);
	}
}

int kv_frmr_alloc(struct kv_end *e, struct kv_frmr *f)
{
	struct ib_mr *mr;
	int i;

	memset(f, 0, sizeof(*f));
	sg_init_table(f->sg, KV_PAGES);
	for (i = 0; i < KV_PAGES; i++) {
		f->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!f->pages[i])
			goto nomem;
		sg_set_page(&f->sg[i], f->pages[i], PAGE_SIZE, 0);
	}
	f->mapped = ib_dma_map_sg(e->id->device, f->sg, KV_PAGES, DMA_BIDIRECTIONAL);
	if (f->mapped <= 0) {
		f->mapped = 0;
		goto nomem;
	}
	mr = ib_alloc_mr(e->pd, IB_MR_TYPE_MEM_REG, KV_PAGES);
	if (IS_ERR(mr)) {
		kv_frmr_free(e, f);
		return PTR_ERR(mr);
	}
	f->mr = mr;
	return 0;
nomem:
	kv_frmr_free(e, f);
	return -ENOMEM;
}

/*
 * Map all pages into the MR with a fresh key and register it with a REG_MR
 * work request; returns 0 only on a successful IB_WC_REG_MR completion.
 */
int kv_frmr_reg(struct kv_end *e, struct kv_frmr *f, int access)
{
	struct ib_reg_wr wr = {};
	struct ib_wc wc;
	int n, rv;

	n = ib_map_mr_sg(f->mr, f->sg, f->mapped, NULL, PAGE_SIZE);
	if (n != f->mapped) {
		pr_err("rsiw-kverbs: ib_map_mr_sg mapped %d of %d\n", n, f->mapped);
		return n < 0 ? n : -EINVAL;
	}
	ib_update_fast_reg_key(f->mr, (u8)(ib_inc_rkey(f->mr->rkey) & 0xff));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_id = kv_next_wr_id();
	wr.mr = f->mr;
	wr.key = f->mr->rkey;
	wr.access = access;
	rv = kv_post_send_wait(e, &wr.wr, &wc);
	if (rv)
		return rv;
	if (wc.status != IB_WC_SUCCESS || wc.opcode != IB_WC_REG_MR) {
		pr_err("rsiw-kverbs: REG_MR completed %s opcode %d\n", kv_wc_str(&wc), wc.opcode);
		return -EIO;
	}
	if (f->mr->length != KV_REGION) {
		pr_err("rsiw-kverbs: MR length %llu, want %lu\n", f->mr->length, KV_REGION);
		return -EINVAL;
	}
	return 0;
}

/* kv_frmr_alloc then kv_frmr_reg. */
int kv_frmr_setup(struct kv_end *e, struct kv_frmr *f, int access)
{
	int rv = kv_frmr_alloc(e, f);

	return rv ? rv : kv_frmr_reg(e, f, access);
}

/* Post IB_WR_LOCAL_INV of the MR's key and wait for its completion (in *wc). */
int kv_frmr_local_inv(struct kv_end *e, struct kv_frmr *f, struct ib_wc *wc)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_id = kv_next_wr_id(),
		.ex.invalidate_rkey = f->mr->rkey,
	};

	return kv_post_send_wait(e, &wr, wc);
}

void kv_frmr_free(struct kv_end *e, struct kv_frmr *f)
{
	int i;

	if (f->mr)
		ib_dereg_mr(f->mr);
	if (f->mapped)
		ib_dma_unmap_sg(e->id->device, f->sg, KV_PAGES, DMA_BIDIRECTIONAL);
	for (i = 0; i < KV_PAGES; i++)
		if (f->pages[i])
			__free_page(f->pages[i]);
	memset(f, 0, sizeof(*f));
}

/* The CPU view of the region: make device writes visible (a no-op for software devices). */
void kv_frmr_sync_cpu(struct ib_device *dev, struct kv_frmr *f)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(f->sg, sg, f->mapped, i)
		ib_dma_sync_single_for_cpu(dev, sg_dma_address(sg), sg_dma_len(sg),
					   DMA_BIDIRECTIONAL);
}

static void kv_frmr_sync_dev(struct ib_device *dev, struct kv_frmr *f)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(f->sg, sg, f->mapped, i)
		ib_dma_sync_single_for_device(dev, sg_dma_address(sg), sg_dma_len(sg),
					      DMA_BIDIRECTIONAL);
}

/* Fill the whole region with the kv_fill_at pattern of seed, as if one buffer. */
void kv_frmr_fill(struct kv_end *e, struct kv_frmr *f, u8 seed)
{
	int i;

	kv_frmr_sync_cpu(e->id->device, f);
	for (i = 0; i < KV_PAGES; i++)
		kv_fill_at(page_address(f->pages[i]), PAGE_SIZE, seed, i * PAGE_SIZE);
	kv_frmr_sync_dev(e->id->device, f);
}

/* Check p[0, len) against the pattern of seed from index start: -1 if equal, else the first bad index. */
long kv_buf_check(const void *p, u32 len, u8 seed, u32 start)
{
	const u8 *b = p;
	u32 i;

	for (i = 0; i < len; i++)
		if (b[i] != kv_pat(seed, start + i))
			return i;
	return -1;
}

/* Check region bytes [offset, offset + len) against the pattern: -1 if equal, else the first bad offset. */
long kv_frmr_check(struct kv_end *e, struct kv_frmr *f, u32 offset, u32 len, u8 seed,
		   u32 start)
{
	u32 i, at;
	u8 *p;

	if (offset > KV_REGION || len > KV_REGION - offset)
		return offset;
	kv_frmr_sync_cpu(e->id->device, f);
	for (i = 0; i < len; i++) {
		at = offset + i;
		p = page_address(f->pages[at / PAGE_SIZE]);
		if (p[at % PAGE_SIZE] != kv_pat(seed, start + i))
			return at;
	}
	return -1;
}

/* The u64 at byte offset (8-aligned, within the first page) of the region. */
u64 *kv_frmr_word(struct kv_frmr *f, u32 offset)
{
	return (u64 *)((u8 *)page_address(f->pages[0]) + offset);
}

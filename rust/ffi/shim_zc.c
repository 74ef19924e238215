// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw zero-copy transmit: sends payload pages by reference with
 * MSG_SPLICE_PAGES (TCP takes its own page references, so a page stays valid
 * for retransmission after the work request completed and the region was
 * unpinned), and computes the MPA CRC (RFC 5044 §4.4) over them.
 */
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <net/sock.h>
#include "shim.h"

static unsigned int tx_zcopy_min = PAGE_SIZE;
module_param(tx_zcopy_min, uint, 0644);
MODULE_PARM_DESC(tx_zcopy_min, "Messages of at least this many payload bytes in pinned user memory are sent zero-copy (TCP references the pages, MSG_SPLICE_PAGES) instead of copied into the socket; 0 disables zero-copy. Kernel consumers' buffers are always copied. Applies to connections established afterwards (default: one page)");

unsigned int rsiw_shim_zc_min(void)
{
	return READ_ONCE(tx_zcopy_min);
}

void rsiw_shim_zc_get_page(struct page *p)
{
	get_page(p);
}

void rsiw_shim_zc_put_page(struct page *p)
{
	put_page(p);
}

u32 rsiw_shim_zc_crc(u32 crc, struct page *p, u32 off, u32 len)
{
	void *va;

	if (off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return crc;
	va = kmap_local_page(p);
	crc = crc32c(crc, va + off, len);
	kunmap_local(va);
	return crc;
}

/*
 * Sends the @n pieces in order without blocking. A page the network stack may
 * not reference (sendpage_ok(): slab pages, pages without a reference) turns
 * the whole call into a copy, which is always correct.
 */
int rsiw_shim_zc_send(struct socket *s, const struct rsiw_zc_seg *segs,
		      size_t n, bool more)
{
	struct bio_vec bv[RSIW_ZC_MAX_SEGS];
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_SPLICE_PAGES,
	};
	size_t i, total = 0;

	if (n > RSIW_ZC_MAX_SEGS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (segs[i].off >= PAGE_SIZE || segs[i].len > PAGE_SIZE - segs[i].off)
			return -EINVAL;
		if (!sendpage_ok(segs[i].page))
			msg.msg_flags &= ~MSG_SPLICE_PAGES;
		bvec_set_page(&bv[i], segs[i].page, segs[i].len, segs[i].off);
		total += segs[i].len;
	}
	if (total > INT_MAX)
		return -EMSGSIZE;
	msg.msg_flags |= rsiw_sock_send_flags(more);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, n, total);
	return sock_sendmsg(s, &msg);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw zero-copy transmit, opted into with tx_zcopy_min: sends payload pages
 * by reference with MSG_SPLICE_PAGES (TCP takes its own page references, so a
 * page stays allocated for retransmission after the work request completed
 * and the region was unpinned), and computes the MPA CRC (RFC 5044 §4.4) over
 * them. An FPDU's framing octets go in the same call, from a page fragment of
 * their own. TCP reads the pages when it transmits, which can be after the
 * completion: what the application writes there afterwards can reach the
 * wire, hence copy by default.
 */
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <net/sock.h>
#include "bindings.h"

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

/*
 * Sends an FPDU in one call: @hlen framing octets at @head (the rest of its
 * length field and DDP/RDMAP headers), the @n payload pieces, then @tlen
 * octets at @tail (PAD and CRC field; RFC 5044 §4). The framing octets are
 * copied into a page fragment, so that TCP can reference them as it does the
 * payload pages (nvme-tcp sends its PDU headers the same way) and one call
 * and one pass through TCP's send path carry the whole FPDU; TCP holds its
 * own reference to the fragment, ours is dropped before returning. Returns
 * the octets taken (possibly short, as sock_sendmsg) or a negative errno;
 * -ENOMEM when no fragment could be had, with nothing sent: the caller then
 * sends the pieces one call each.
 */
int rsiw_shim_zc_send_fpdu(struct socket *s, const u8 *head, size_t hlen,
			   const struct rsiw_zc_seg *segs, size_t n,
			   const u8 *tail, size_t tlen, bool more)
{
	struct bio_vec bv[RSIW_ZC_MAX_SEGS + 2];
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_SPLICE_PAGES,
	};
	size_t i, nv = 0, total = 0;
	u8 *frag;
	int rv;

	if (n > RSIW_ZC_MAX_SEGS || hlen + tlen > RSIW_ZC_MAX_FRAMING)
		return -EINVAL;
	if (!hlen && !tlen)
		return rsiw_shim_zc_send(s, segs, n, more);
	frag = netdev_alloc_frag(hlen + tlen);
	if (!frag)
		return -ENOMEM;
	/* Each bio_vec below names one page: the fragment must not cross one. */
	if (offset_in_page(frag) + hlen + tlen > PAGE_SIZE) {
		skb_free_frag(frag);
		return -ENOMEM;
	}
	memcpy(frag, head, hlen);
	memcpy(frag + hlen, tail, tlen);
	if (hlen) {
		bvec_set_virt(&bv[nv++], frag, hlen);
		total += hlen;
	}
	for (i = 0; i < n; i++) {
		if (segs[i].off >= PAGE_SIZE ||
		    segs[i].len > PAGE_SIZE - segs[i].off) {
			skb_free_frag(frag);
			return -EINVAL;
		}
		if (!sendpage_ok(segs[i].page))
			msg.msg_flags &= ~MSG_SPLICE_PAGES;
		bvec_set_page(&bv[nv++], segs[i].page, segs[i].len, segs[i].off);
		total += segs[i].len;
	}
	if (tlen) {
		bvec_set_virt(&bv[nv++], frag + hlen, tlen);
		total += tlen;
	}
	msg.msg_flags |= rsiw_sock_send_flags(more);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, nv, total);
	rv = sock_sendmsg(s, &msg);
	skb_free_frag(frag);
	return rv;
}

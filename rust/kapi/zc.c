// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw zero-copy transmit (tx_zcopy_min): sends payload pages by reference
 * and computes the MPA CRC (RFC 5044 §4.4) over them. An FPDU's framing
 * octets go in the same call, from a page fragment of their own.
 *
 * TCP reads the pages whenever it transmits: behind a peer's closed window,
 * on every retransmission. So the pages go with MSG_ZEROCOPY and a ubuf_info
 * of ours (io_uring's zero-copy send does the same with its bvecs): TCP links
 * it to every skb that references them and calls ->complete as each is
 * freed; a loopback delivery copies the fragments and completes at once
 * (skb_orphan_frags_rx). The engine completes the work request only once the
 * count has dropped to zero, so a completion still means that nothing the
 * application writes afterwards reaches the wire.
 */
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <net/sock.h>
#include "bindings.h"

struct rsiw_zc_ubuf {
	/*
	 * refcnt: one per skb referencing the pages, plus the sender's until
	 * rsiw_shim_zc_ubuf_sent().
	 */
	struct ubuf_info ubuf;
	/* The engine's handle, and one more until the pages are released. */
	refcount_t life;
	bool released;
	/* Held until released: the kick goes through its callbacks. */
	struct sock *sk;
};

static void rsiw_zc_life_put(struct rsiw_zc_ubuf *z)
{
	if (refcount_dec_and_test(&z->life))
		kfree(z);
}

static void rsiw_zc_release(struct rsiw_zc_ubuf *z, bool kick)
{
	struct sock *sk = z->sk;

	smp_store_release(&z->released, true);
	if (kick)
		rsiw_sock_kick_tx(sk);
	sock_put(sk);
	rsiw_zc_life_put(z);
}

/*
 * TCP freed an skb that referenced the pages: any context (the ACK's
 * softirq, the write queue's purge, a device's TX completion).
 */
static void rsiw_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			     bool zerocopy_success)
{
	struct rsiw_zc_ubuf *z = container_of(uarg, struct rsiw_zc_ubuf, ubuf);

	if (refcount_dec_and_test(&uarg->refcnt))
		rsiw_zc_release(z, true);
}

static const struct ubuf_info_ops rsiw_zc_ops = {
	.complete = rsiw_zc_complete,
};

/* A tracker for one message's pages on @s; NULL without memory. */
struct rsiw_zc_ubuf *rsiw_shim_zc_ubuf_new(struct socket *s)
{
	struct rsiw_zc_ubuf *z = kzalloc(sizeof(*z), GFP_KERNEL);

	if (!z)
		return NULL;
	z->ubuf.ops = &rsiw_zc_ops;
	/* As MSG_ZEROCOPY's own: never copied out on a device's TX. */
	z->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	refcount_set(&z->ubuf.refcnt, 1);
	refcount_set(&z->life, 2);
	z->sk = s->sk;
	sock_hold(z->sk);
	return z;
}

/*
 * The sender hands no more pages to TCP under @z. True if they are released
 * already (no skb referenced them, or every one is freed): no kick follows.
 */
bool rsiw_shim_zc_ubuf_sent(struct rsiw_zc_ubuf *z)
{
	if (!refcount_dec_and_test(&z->ubuf.refcnt))
		return false;
	rsiw_zc_release(z, false);
	return true;
}

bool rsiw_shim_zc_ubuf_released(const struct rsiw_zc_ubuf *z)
{
	return smp_load_acquire(&z->released);
}

/* Drops the engine's handle (after rsiw_shim_zc_ubuf_sent()). */
void rsiw_shim_zc_ubuf_put(struct rsiw_zc_ubuf *z)
{
	rsiw_zc_life_put(z);
}

/*
 * With @z the pages go by reference, under MSG_ZEROCOPY and @z (TCP takes its
 * own page references and links @z to each skb); without, TCP copies them
 * into its own buffers before the call returns, so the caller's pages are
 * free again once it has.
 */
static void rsiw_zc_msg(struct msghdr *msg, struct rsiw_zc_ubuf *z)
{
	if (z) {
		msg->msg_flags |= MSG_ZEROCOPY;
		msg->msg_ubuf = &z->ubuf;
	}
}

/* A piece turned out not to be referenceable: the call copies instead. */
static void rsiw_zc_msg_copy(struct msghdr *msg)
{
	msg->msg_flags &= ~MSG_ZEROCOPY;
	msg->msg_ubuf = NULL;
}

/* Copies @len octets at @off of @p to @dst (a bounce of a piece). */
void rsiw_shim_zc_copy(u8 *dst, struct page *p, u32 off, u32 len)
{
	if (off >= PAGE_SIZE || len > PAGE_SIZE - off)
		return;
	memcpy_from_page(dst, p, off, len);
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
 * Sends the @n pieces in order without blocking, by reference under @z, or
 * copied without it (rsiw_zc_msg). A page the network stack may not reference
 * (sendpage_ok(): slab pages, pages without a reference) turns the whole call
 * into a copy, which is always correct.
 */
int rsiw_shim_zc_send(struct socket *s, struct rsiw_zc_ubuf *z,
		      const struct rsiw_zc_seg *segs, size_t n, bool more)
{
	struct bio_vec bv[RSIW_ZC_MAX_SEGS];
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT,
	};
	size_t i, total = 0;

	if (n > RSIW_ZC_MAX_SEGS)
		return -EINVAL;
	rsiw_zc_msg(&msg, z);
	for (i = 0; i < n; i++) {
		if (segs[i].off >= PAGE_SIZE || segs[i].len > PAGE_SIZE - segs[i].off)
			return -EINVAL;
		if (!sendpage_ok(segs[i].page))
			rsiw_zc_msg_copy(&msg);
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
 * own reference to the fragment, ours is dropped before returning. Without
 * @z the whole FPDU is copied by TCP, as rsiw_shim_zc_send does. Returns
 * the octets taken (possibly short, as sock_sendmsg) or a negative errno;
 * -ENOMEM when no fragment could be had, with nothing sent: the caller then
 * sends the pieces one call each.
 */
int rsiw_shim_zc_send_fpdu(struct socket *s, struct rsiw_zc_ubuf *z,
			   const u8 *head, size_t hlen,
			   const struct rsiw_zc_seg *segs, size_t n,
			   const u8 *tail, size_t tlen, bool more)
{
	struct bio_vec bv[RSIW_ZC_MAX_SEGS + 2];
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT,
	};
	size_t i, nv = 0, total = 0;
	u8 *frag;
	int rv;

	if (n > RSIW_ZC_MAX_SEGS || hlen + tlen > RSIW_ZC_MAX_FRAMING)
		return -EINVAL;
	if (!hlen && !tlen)
		return rsiw_shim_zc_send(s, z, segs, n, more);
	rsiw_zc_msg(&msg, z);
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
			rsiw_zc_msg_copy(&msg);
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

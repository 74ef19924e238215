/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw zero-copy transmit: payload pages handed to TCP by reference
 * (MSG_ZEROCOPY with a ubuf_info of rsiw's own, which tells when TCP has
 * released them) and the MPA CRC (RFC 5044 §4.4) computed over them.
 */
#ifndef RSIW_ZC_H
#define RSIW_ZC_H

#include <linux/types.h>

struct page;
struct socket;

/*
 * Most page pieces one rsiw_shim_zc_send call takes: the 15 pages of a large
 * FPDU, one more when its payload does not start on a page boundary, and two
 * SGE boundaries. The engine copies an FPDU of more pieces; the array of them
 * is part of every connection's state, so it stays small.
 */
#define RSIW_ZC_MAX_SEGS 18

/*
 * Most framing octets rsiw_shim_zc_send_fpdu takes around the payload: the
 * length field and the longest DDP + RDMAP headers (2 + 46) before it, PAD
 * and CRC (3 + 4) after it, in one cache line of a page fragment.
 */
#define RSIW_ZC_MAX_FRAMING 64

/* A piece of one page: @len bytes at @off. */
struct rsiw_zc_seg {
	struct page *page;
	u32 off;
	u32 len;
};

/*
 * Tracks the pages one message hands to TCP: released once every skb that
 * referenced them is freed (acknowledged and gone from the write queue, or
 * copied on a loopback delivery) and the sender has said it is done.
 */
struct rsiw_zc_ubuf;

struct rsiw_zc_ubuf *rsiw_shim_zc_ubuf_new(struct socket *s);
bool rsiw_shim_zc_ubuf_sent(struct rsiw_zc_ubuf *z);
bool rsiw_shim_zc_ubuf_released(const struct rsiw_zc_ubuf *z);
void rsiw_shim_zc_ubuf_put(struct rsiw_zc_ubuf *z);

void rsiw_shim_zc_get_page(struct page *p);
void rsiw_shim_zc_put_page(struct page *p);
u32 rsiw_shim_zc_crc(u32 crc, struct page *p, u32 off, u32 len);
void rsiw_shim_zc_copy(u8 *dst, struct page *p, u32 off, u32 len);
int rsiw_shim_zc_send(struct socket *s, struct rsiw_zc_ubuf *z,
		      const struct rsiw_zc_seg *segs, size_t n, bool more);
int rsiw_shim_zc_send_fpdu(struct socket *s, struct rsiw_zc_ubuf *z,
			   const u8 *head, size_t hlen,
			   const struct rsiw_zc_seg *segs, size_t n,
			   const u8 *tail, size_t tlen, bool more);

#endif

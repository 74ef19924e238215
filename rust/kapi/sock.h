/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw's kernel TCP sockets (sock.c, wrapped by sock.rs; included by
 * bindings.h, so it is also bindgen input): the MPA exchange and the FPDU
 * stream, the socket callbacks that feed the Rust side, the CM work queue.
 */
#ifndef RSIW_SOCK_H
#define RSIW_SOCK_H

#include <linux/net.h>
#include <linux/socket.h>
#include <net/sock.h>
#include <rdma/iw_cm.h>

/* One buffer of a gathered send. */
struct rsiw_buf {
	const void *ptr;
	size_t len;
};

/* The socket callbacks a watch replaced, restored by unwatch. */
struct rsiw_sk_saved {
	void (*data_ready)(struct sock *sk);
	void (*write_space)(struct sock *sk);
	void (*state_change)(struct sock *sk);
};

/* An IP address (IPv4 mapped into IPv6, as in a GID) and TCP port. */
struct rsiw_inaddr {
	u8 addr[16];
	u16 port;
	u32 scope_id;
};

/* The most buffers one rsiw_shim_sock_send() takes. */
#define RSIW_SEND_MAX_BUFS 8

/*
 * The most pieces of a socket buffer handed to rsiw_rust_stream_rx() in one
 * call: a zero-copy sender's buffers arrive as page-sized fragments, and a
 * call (and the RX lock hold in it) per fragment cost about as much as the
 * fragment's copy (Documentation/datapath.md, RX).
 */
#define RSIW_RX_MAX_PIECES 8

/*
 * The flags of a stream send. @more: more of the stream follows at once;
 * TCP holds a partial segment back for it (MSG_MORE). Otherwise the send ends
 * what there is to send now, and MSG_EOR ends its segment: TCP's autocorking
 * (tcp_should_autocork()) would otherwise hold that last partial segment back
 * until the NIC has completed the earlier segments of the burst, although
 * nothing will follow it to fill it.
 */
static inline int rsiw_sock_send_flags(bool more)
{
	return more ? MSG_MORE : MSG_EOR;
}

/* Wakes a watched stream's TX (zc.c: its pages released); any context. */
void rsiw_sock_kick_tx(struct sock *sk);

/* --- CM work queue (sock.rs) --- */
int rsiw_shim_cm_init(void);
void rsiw_shim_cm_exit(void);
struct workqueue_struct *rsiw_shim_cm_wq(void);

/* --- sockets (sock.rs) --- */
int rsiw_shim_sock_listen(struct iw_cm_id *id, int backlog,
			  struct socket **out);
int rsiw_shim_sock_accept(struct socket *lsock,
			  const struct rsiw_sk_saved *saved,
			  struct socket **out);
int rsiw_shim_sock_connect_start(struct iw_cm_id *id, struct socket **out);
int rsiw_shim_sock_connected(struct socket *s);
int rsiw_shim_sock_listen_dev(struct net_device *ndev, u16 port,
			      struct socket **out);
int rsiw_shim_sock_connect_addr(const struct rsiw_inaddr *local,
				const struct rsiw_inaddr *remote,
				struct socket **out);
int rsiw_shim_sock_peer(struct socket *s, struct rsiw_inaddr *out);
bool rsiw_shim_sock_readable(struct socket *s);
/* Classes of lines about peers, each rate-limited on its own. */
#define RSIW_WARN_CLASSES 7
void rsiw_shim_sock_warn(struct socket *s, unsigned int class, const char *msg);
void rsiw_shim_sock_set_timeout(struct socket *s, unsigned int ms);
int rsiw_shim_sock_send(struct socket *s, const struct rsiw_buf *bufs,
			size_t n, bool more, bool block);
void rsiw_shim_sock_push(struct socket *s);
int rsiw_shim_sock_recv(struct socket *s, void *buf, size_t len, bool block);
void rsiw_shim_sock_shutdown(struct socket *s, bool abortive);
void rsiw_shim_sock_release(struct socket *s);
u32 rsiw_shim_sock_mss(struct socket *s);
int rsiw_shim_sock_names(struct socket *s, struct sockaddr_storage *local,
			 struct sockaddr_storage *peer);
/* What a watch routes: a listener's ready connections (to
 * rsiw_rust_listen_ready), a stream's bytes, write space and close
 * (rsiw_rust_stream_*), or a connection in MPA setup's bytes and state
 * changes (rsiw_rust_handshake_event).
 */
#define RSIW_WATCH_LISTEN 0
#define RSIW_WATCH_STREAM 1
#define RSIW_WATCH_HANDSHAKE 2
void rsiw_shim_sock_watch(struct socket *s, const void *ctx,
			  struct rsiw_sk_saved *saved, unsigned int kind);
void rsiw_shim_sock_unwatch(struct socket *s,
			    const struct rsiw_sk_saved *saved);
void rsiw_shim_sock_drain(struct socket *s);
void rsiw_shim_sock_rx(struct socket *s);

/* --- Rust callbacks (rust/entry/cm.rs) --- */
void rsiw_rust_listen_ready(const void *ctx);
size_t rsiw_rust_stream_rx(const void *ctx, const struct rsiw_buf *pieces, size_t n);
void rsiw_rust_stream_write_space(const void *ctx);
bool rsiw_rust_stream_rx_defer(const void *ctx);
void rsiw_rust_stream_closed(const void *ctx, bool abortive);
void rsiw_rust_handshake_event(const void *ctx);

#endif /* RSIW_SOCK_H */

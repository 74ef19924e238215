// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw's kernel TCP sockets (sock.rs): listen, accept, connect, send, receive,
 * shutdown, the socket callbacks that hand received bytes, write space and close
 * to Rust, and the CM work queue.
 */
#include <linux/module.h>
#include <linux/random.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/tcp.h>
#include "bindings.h"

/* A line about a refused peer, with its address; rate-limited per class (10
 * lines per 5 s each), so that a flood of one kind hides no other.
 */
void rsiw_shim_sock_warn(struct socket *s, unsigned int class, const char *msg)
{
	static struct ratelimit_state rs[RSIW_WARN_CLASSES] = {
		[0 ... RSIW_WARN_CLASSES - 1] = RATELIMIT_STATE_INIT(rs, 5 * HZ, 10),
	};
	struct sockaddr_storage peer = {};

	if (!__ratelimit(&rs[min(class, RSIW_WARN_CLASSES - 1U)]))
		return;
	if (kernel_getpeername(s, (struct sockaddr *)&peer) < 0)
		pr_warn("rsiw: peer (unknown): %s\n", msg);
	else
		pr_warn("rsiw: peer %pISpc: %s\n", &peer, msg);
}

/* MPA exchange and teardown work; destroyed (and drained) at unload. */
static struct workqueue_struct *rsiw_cm_wq;

int rsiw_shim_cm_init(void)
{
	rsiw_cm_wq = alloc_workqueue("rsiw_cm", WQ_UNBOUND, 0);
	return rsiw_cm_wq ? 0 : -ENOMEM;
}

void rsiw_shim_cm_exit(void)
{
	rsiw_shim_deadlines_shutdown();
	if (rsiw_cm_wq)
		destroy_workqueue(rsiw_cm_wq);
	rsiw_cm_wq = NULL;
}

struct workqueue_struct *rsiw_shim_cm_wq(void)
{
	return rsiw_cm_wq;
}

static int rsiw_addr_len(const struct sockaddr_storage *a)
{
	switch (a->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return -EAFNOSUPPORT;
	}
}

static bool rsiw_addr_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* The callback pointer is tagged NOCOPY so accepted children do not inherit it. */
static void rsiw_set_ctx(struct sock *sk, const void *ctx)
{
	__rcu_assign_sk_user_data_with_flags(sk, (void *)ctx,
					     SK_USER_DATA_NOCOPY);
}

static const void *rsiw_get_ctx(const struct sock *sk)
{
	return __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
}

/* A TCP socket in the initial namespace, for an address of family @a. */
static int rsiw_sock_new(const struct sockaddr_storage *a, struct socket **s)
{
	int rv = sock_create_kern(&init_net, a->ss_family, SOCK_STREAM,
				  IPPROTO_TCP, s);

	if (rv)
		return rv;
	/* A port still in TIME_WAIT from the last connection can be reused. */
	sock_set_reuseaddr((*s)->sk);
	return 0;
}

int rsiw_shim_sock_listen(struct iw_cm_id *id, int backlog,
			  struct socket **out)
{
	struct sockaddr_storage *laddr = &id->m_local_addr;
	int len = rsiw_addr_len(laddr);
	struct socket *s;
	int rv;

	if (len < 0)
		return len;
	rv = rsiw_sock_new(laddr, &s);
	if (rv)
		return rv;
	if (rsiw_addr_any(laddr)) {
		/* A wildcard listener serves only this device's netdev. */
		struct net_device *ndev = ib_device_get_netdev(id->device, 1);

		if (!ndev) {
			rv = -ENODEV;
			goto err;
		}
		s->sk->sk_bound_dev_if = ndev->ifindex;
		dev_put(ndev);
	}
	/*
	 * rdma_cm asks for an IPv6-only listener (afonly, e.g. svcrdma's
	 * "[::]:20049" next to its "0.0.0.0:20049"): without IPV6_V6ONLY the
	 * IPv6 wildcard would also take the IPv4 port and the second listen
	 * fail with EADDRINUSE. siw does the same.
	 */
	if (laddr->ss_family == AF_INET6 && id->afonly) {
		rv = ip6_sock_set_v6only(s->sk);
		if (rv)
			goto err;
	}
	rv = kernel_bind(s, (rsiw_sockaddr *)laddr, len);
	if (rv)
		goto err;
	rv = kernel_listen(s, backlog);
	if (rv)
		goto err;
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

int rsiw_shim_sock_accept(struct socket *lsock,
			  const struct rsiw_sk_saved *saved,
			  struct socket **out)
{
	struct socket *s;
	struct sock *sk;
	int rv;

	rv = kernel_accept(lsock, &s, O_NONBLOCK);
	if (rv)
		return rv;
	sk = s->sk;
	/* The child was cloned with the listener's callbacks. */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = saved->data_ready;
	sk->sk_write_space = saved->write_space;
	sk->sk_state_change = saved->state_change;
	rcu_assign_sk_user_data(sk, NULL);
	write_unlock_bh(&sk->sk_callback_lock);
	tcp_sock_set_nodelay(sk);
	*out = s;
	return 0;
}

int rsiw_shim_sock_connect_start(struct iw_cm_id *id, struct socket **out)
{
	struct sockaddr_storage *laddr = &id->m_local_addr;
	struct sockaddr_storage *raddr = &id->m_remote_addr;
	int len = rsiw_addr_len(raddr);
	struct socket *s;
	int rv;

	if (len < 0)
		return len;
	if (laddr->ss_family != raddr->ss_family)
		return -EINVAL;
	rv = rsiw_sock_new(raddr, &s);
	if (rv)
		return rv;
	rv = kernel_bind(s, (rsiw_sockaddr *)laddr, len);
	if (rv)
		goto err;
	tcp_sock_set_nodelay(s->sk);
	/* Never waits: the handshake watch reports the outcome. */
	rv = kernel_connect(s, (rsiw_sockaddr *)raddr, len, O_NONBLOCK);
	if (rv && rv != -EINPROGRESS)
		goto err;
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

/* @a as a socket address: IPv4-mapped addresses become AF_INET. */
static int rsiw_inaddr_to_sa(const struct rsiw_inaddr *a,
			     struct sockaddr_storage *ss)
{
	const struct in6_addr *in6 = (const struct in6_addr *)a->addr;

	memset(ss, 0, sizeof(*ss));
	if (ipv6_addr_v4mapped(in6)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		sin->sin_addr.s_addr = in6->s6_addr32[3];
		return sizeof(*sin);
	}
	if (!IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	{
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		sin6->sin6_addr = *in6;
		sin6->sin6_scope_id = a->scope_id;
		return sizeof(*sin6);
	}
}

static void rsiw_sa_to_inaddr(const struct sockaddr_storage *ss,
			      struct rsiw_inaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		struct in6_addr in6;

		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr, &in6);
		memcpy(a->addr, &in6, 16);
		a->port = ntohs(sin->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		memcpy(a->addr, &sin6->sin6_addr, 16);
		a->port = ntohs(sin6->sin6_port);
		a->scope_id = sin6->sin6_scope_id;
	}
}

/* A listener on @port of every address of @ndev: IPv6 with IPv4 mapped in
 * (one socket for both) where IPv6 exists, else IPv4.
 */
int rsiw_shim_sock_listen_dev(struct net_device *ndev, u16 port,
			      struct socket **out)
{
	struct sockaddr_storage ss = {};
	struct socket *s;
	int len, rv;

	if (IS_ENABLED(CONFIG_IPV6)) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		len = sizeof(*sin6);
		rv = rsiw_sock_new(&ss, &s);
		if (!rv)
			s->sk->sk_ipv6only = false;
	} else {
		rv = -EAFNOSUPPORT;
	}
	if (rv) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		memset(&ss, 0, sizeof(ss));
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		len = sizeof(*sin);
		rv = rsiw_sock_new(&ss, &s);
		if (rv)
			return rv;
	}
	s->sk->sk_bound_dev_if = ndev->ifindex;
	rv = kernel_bind(s, (rsiw_sockaddr *)&ss, len);
	if (rv)
		goto err;
	rv = kernel_listen(s, 128);
	if (rv)
		goto err;
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

/* Privileged source ports a QP connection is made from (sunrpc's
 * xprt_min_resvport..xprt_max_resvport): only CAP_NET_BIND_SERVICE binds
 * them, so the listener knows the request comes from a kernel or root.
 */
#define RSIW_RESVPORT_MIN 665
#define RSIW_RESVPORT_MAX 1023

int rsiw_shim_sock_connect_addr(const struct rsiw_inaddr *local,
				const struct rsiw_inaddr *remote,
				struct socket **out)
{
	const u16 n = RSIW_RESVPORT_MAX - RSIW_RESVPORT_MIN + 1;
	struct sockaddr_storage l, r;
	int llen = rsiw_inaddr_to_sa(local, &l);
	int rlen = rsiw_inaddr_to_sa(remote, &r);
	u16 start = get_random_u32_below(n);
	struct socket *s;
	int rv = -EADDRINUSE;
	u16 i;

	if (llen < 0 || rlen < 0)
		return -EAFNOSUPPORT;
	if (l.ss_family != r.ss_family)
		return -EINVAL;
	/* From a random privileged port; the next one while a port is taken
	 * (bound, or its 4-tuple to this peer still in TIME_WAIT).
	 */
	for (i = 0; i < n; i++) {
		__be16 port = htons(RSIW_RESVPORT_MIN + (start + i) % n);

		if (l.ss_family == AF_INET)
			((struct sockaddr_in *)&l)->sin_port = port;
		else
			((struct sockaddr_in6 *)&l)->sin6_port = port;
		rv = rsiw_sock_new(&r, &s);
		if (rv)
			return rv;
		rv = kernel_bind(s, (rsiw_sockaddr *)&l, llen);
		if (!rv) {
			tcp_sock_set_nodelay(s->sk);
			rv = kernel_connect(s, (rsiw_sockaddr *)&r, rlen,
					    O_NONBLOCK);
			if (!rv || rv == -EINPROGRESS) {
				*out = s;
				return 0;
			}
		}
		sock_release(s);
		if (rv != -EADDRINUSE && rv != -EADDRNOTAVAIL)
			return rv;
		cond_resched();
	}
	return rv;
}

int rsiw_shim_sock_peer(struct socket *s, struct rsiw_inaddr *out)
{
	struct sockaddr_storage peer = {};
	int rv = kernel_getpeername(s, (struct sockaddr *)&peer);

	if (rv < 0)
		return rv;
	rsiw_sa_to_inaddr(&peer, out);
	return 0;
}

int rsiw_shim_sock_connected(struct socket *s)
{
	struct sock *sk = s->sk;
	int err = sock_error(sk);

	if (err)
		return err;
	switch (READ_ONCE(sk->sk_state)) {
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
		return 0;
	case TCP_ESTABLISHED:
	case TCP_CLOSE_WAIT:
		/* A FIN already in is seen by the first read. */
		return 1;
	default:
		return -ECONNRESET;
	}
}

bool rsiw_shim_sock_readable(struct socket *s)
{
	return tcp_inq(s->sk) > 0;
}

void rsiw_shim_sock_set_timeout(struct socket *s, unsigned int ms)
{
	long t = ms ? (long)msecs_to_jiffies(ms) : MAX_SCHEDULE_TIMEOUT;

	WRITE_ONCE(s->sk->sk_rcvtimeo, t);
	WRITE_ONCE(s->sk->sk_sndtimeo, t);
}

int rsiw_shim_sock_send(struct socket *s, const struct rsiw_buf *bufs,
			size_t n, bool more, bool block)
{
	struct kvec vec[RSIW_SEND_MAX_BUFS];
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	size_t i, total = 0;

	if (n > RSIW_SEND_MAX_BUFS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		vec[i].iov_base = (void *)bufs[i].ptr;
		vec[i].iov_len = bufs[i].len;
		total += bufs[i].len;
	}
	if (total > INT_MAX)
		return -EMSGSIZE;
	if (!block)
		msg.msg_flags |= MSG_DONTWAIT;
	msg.msg_flags |= rsiw_sock_send_flags(more);
	return kernel_sendmsg(s, &msg, vec, n, total);
}

void rsiw_shim_sock_push(struct socket *s)
{
	/* Uncorking pushes the queued frames (TCP_NODELAY is set). */
	tcp_sock_set_cork(s->sk, false);
}

int rsiw_shim_sock_recv(struct socket *s, void *buf, size_t len, bool block)
{
	struct kvec vec = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int flags = MSG_NOSIGNAL | (block ? 0 : MSG_DONTWAIT);

	if (len > INT_MAX)
		return -EMSGSIZE;
	return kernel_recvmsg(s, &msg, &vec, 1, len, flags);
}

void rsiw_shim_sock_shutdown(struct socket *s, bool abortive)
{
	if (abortive)
		/* RST now, whatever is queued (the SO_LINGER 0 close). */
		tcp_abort(s->sk, ECONNABORTED);
	else
		kernel_sock_shutdown(s, SHUT_RDWR);
}

void rsiw_shim_sock_release(struct socket *s)
{
	sock_release(s);
}

u32 rsiw_shim_sock_mss(struct socket *s)
{
	return READ_ONCE(tcp_sk(s->sk)->mss_cache);
}

int rsiw_shim_sock_names(struct socket *s, struct sockaddr_storage *local,
			 struct sockaddr_storage *peer)
{
	int rv;

	rv = kernel_getsockname(s, (struct sockaddr *)local);
	if (rv < 0)
		return rv;
	rv = kernel_getpeername(s, (struct sockaddr *)peer);
	return rv < 0 ? rv : 0;
}

/* Calls @fn with the socket's context, if it still has one. */
static void rsiw_ctx_call(struct sock *sk, void (*fn)(const void *ctx))
{
	const void *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = rsiw_get_ctx(sk);
	if (ctx)
		fn(ctx);
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Wakes the stream's TX as write space does (zero-copy pages released); any
 * context.
 */
void rsiw_sock_kick_tx(struct sock *sk)
{
	rsiw_ctx_call(sk, rsiw_rust_stream_write_space);
}

/* Listening socket: a connection is ready to accept. Softirq. */
static void rsiw_listen_data_ready(struct sock *sk)
{
	rsiw_ctx_call(sk, rsiw_rust_listen_ready);
}

/* A connection in MPA setup: bytes arrived or its state changed (connected,
 * refused, reset, FIN). Softirq, or process context with bottom halves off.
 */
static void rsiw_handshake_event(struct sock *sk)
{
	rsiw_ctx_call(sk, rsiw_rust_handshake_event);
}

/*
 * Hands the pieces of @skb from @off on to the consumer, up to
 * RSIW_RX_MAX_PIECES per call. A piece's address stays valid after the next
 * skb_seq_read() only where fragment pages need no temporary mapping (no
 * HIGHMEM): elsewhere each piece goes alone.
 */
static int rsiw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			 unsigned int off, size_t len)
{
	const size_t batch = IS_ENABLED(CONFIG_HIGHMEM) ? 1 : RSIW_RX_MAX_PIECES;
	struct rsiw_buf p[RSIW_RX_MAX_PIECES];
	struct skb_seq_state st;
	unsigned int done = 0, queued = 0, got;
	size_t n = 0, used;
	const u8 *data;

	skb_prepare_seq_read(skb, off, off + len, &st);
	do {
		got = skb_seq_read(done + queued, &data, &st);
		if (got) {
			p[n].ptr = data;
			p[n].len = got;
			n++;
			queued += got;
		}
		if (n == batch || (!got && n)) {
			used = rsiw_rust_stream_rx(desc->arg.data, p, n);
			done += min_t(size_t, used, queued);
			if (used < queued) {
				/* The consumer wants no more now; the rest stays queued. */
				if (got)
					skb_abort_seq_read(&st);
				desc->count = 0;
				break;
			}
			n = 0;
			queued = 0;
		}
	} while (got);
	return done;
}

/* In the network softirq, a bulk of received octets is left to the
 * connection's work item (rsiw_shim_sock_rx, queued on this CPU): the
 * softirq returns at once to what it interrupted (over loopback, the sender
 * of those octets), and the work item parses and places all that queued
 * meanwhile in one pass, with the socket owned. A few octets (a
 * latency-bound exchange), or a stream of small segments, are placed here,
 * without a wakeup (the consumer says which: Engine::rx_defer).
 */
static bool rsiw_stream_rx_defer(struct sock *sk, const void *ctx)
{
	unsigned int bulk = rsiw_shim_rx_defer_bytes();

	return bulk && in_serving_softirq() &&
	       tcp_inq(sk) >= (int)min(bulk, (unsigned int)INT_MAX) &&
	       rsiw_rust_stream_rx_defer(ctx);
}

/* Connected stream: bytes arrived. Softirq, or process context from
 * release_sock(); always with the socket owned and bottom halves off.
 */
static void rsiw_stream_data_ready(struct sock *sk)
{
	read_descriptor_t rd = { .count = 1 };

	read_lock_bh(&sk->sk_callback_lock);
	rd.arg.data = (void *)rsiw_get_ctx(sk);
	if (rd.arg.data && !rsiw_stream_rx_defer(sk, rd.arg.data))
		tcp_read_sock(sk, &rd, rsiw_rx_actor);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Hands what is queued to @ctx now (the socket owned, as for data_ready). */
static void rsiw_stream_read(struct sock *sk, const void *ctx)
{
	read_descriptor_t rd = { .count = 1, .arg.data = (void *)ctx };

	tcp_read_sock(sk, &rd, rsiw_rx_actor);
}

static void rsiw_stream_write_space(struct sock *sk)
{
	const void *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = rsiw_get_ctx(sk);
	/* Wake the sender only once a useful amount fits (as sk_stream_write_space). */
	if (ctx && sk_stream_wspace(sk) >= sk_stream_min_wspace(sk)) {
		if (sk->sk_socket)
			clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		rsiw_rust_stream_write_space(ctx);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void rsiw_stream_state_change(struct sock *sk)
{
	const void *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = rsiw_get_ctx(sk);
	if (ctx) {
		switch (sk->sk_state) {
		case TCP_CLOSE_WAIT:
			/* The peer's FIN: an orderly close, after what the peer
			 * sent before it. That may be queued still: left to the
			 * work item (rsiw_stream_rx_defer), or in the FIN's own
			 * segment, which tcp_fin() reports before data_ready.
			 */
			rsiw_stream_read(sk, ctx);
			rsiw_rust_stream_closed(ctx, false);
			break;
		case TCP_CLOSE:
			/* An error (RST, timeout) makes it abortive. */
			rsiw_rust_stream_closed(ctx, READ_ONCE(sk->sk_err) != 0);
			break;
		default:
			break;
		}
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

void rsiw_shim_sock_watch(struct socket *s, const void *ctx,
			  struct rsiw_sk_saved *saved, unsigned int kind)
{
	struct sock *sk = s->sk;

	write_lock_bh(&sk->sk_callback_lock);
	saved->data_ready = sk->sk_data_ready;
	saved->write_space = sk->sk_write_space;
	saved->state_change = sk->sk_state_change;
	switch (kind) {
	case RSIW_WATCH_LISTEN:
		sk->sk_data_ready = rsiw_listen_data_ready;
		break;
	case RSIW_WATCH_STREAM:
		sk->sk_data_ready = rsiw_stream_data_ready;
		sk->sk_write_space = rsiw_stream_write_space;
		sk->sk_state_change = rsiw_stream_state_change;
		break;
	case RSIW_WATCH_HANDSHAKE:
		sk->sk_data_ready = rsiw_handshake_event;
		sk->sk_state_change = rsiw_handshake_event;
		break;
	}
	rsiw_set_ctx(sk, ctx);
	write_unlock_bh(&sk->sk_callback_lock);
}

void rsiw_shim_sock_unwatch(struct socket *s,
			    const struct rsiw_sk_saved *saved)
{
	struct sock *sk = s->sk;

	/* The callbacks read ctx under the read side: none runs after this. */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = saved->data_ready;
	sk->sk_write_space = saved->write_space;
	sk->sk_state_change = saved->state_change;
	rcu_assign_sk_user_data(sk, NULL);
	write_unlock_bh(&sk->sk_callback_lock);
}

void rsiw_shim_sock_rx(struct socket *s)
{
	struct sock *sk = s->sk;

	lock_sock(sk);
	rsiw_stream_data_ready(sk);
	release_sock(sk);
}

void rsiw_shim_sock_drain(struct socket *s)
{
	struct sock *sk = s->sk;

	lock_sock(sk);
	rsiw_stream_data_ready(sk);
	/* A close that happened before the watch was installed. */
	if (sk->sk_state == TCP_CLOSE_WAIT || sk->sk_state == TCP_CLOSE)
		rsiw_stream_state_change(sk);
	release_sock(sk);
}

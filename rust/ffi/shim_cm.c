// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw connection shim: kernel TCP sockets (listen, accept, connect, send,
 * receive, shutdown), the socket callbacks that hand received bytes, write
 * space and close to Rust, the CM work queue, and iw_cm event delivery.
 */
#include <linux/module.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/tcp.h>
#include "shim.h"

static bool mpa_crc = true;
module_param(mpa_crc, bool, 0644);
MODULE_PARM_DESC(mpa_crc, "Ask for MPA CRCs in MPA Requests and Replies (a peer's request for CRCs is always honoured; RFC 5044 7.1.2)");

static bool mpa_peer_to_peer = true;
module_param(mpa_peer_to_peer, bool, 0644);
MODULE_PARM_DESC(mpa_peer_to_peer, "As initiator, ask for the RFC 6581 peer-to-peer model (an RTR message before any other FPDU)");

static unsigned int mpa_timeout_ms = 10000;
module_param(mpa_timeout_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_ms, "Limit on TCP connect and on each MPA Request/Reply send or receive, in ms");

static bool draft_swap;
module_param(draft_swap, bool, 0644);
MODULE_PARM_DESC(draft_swap, "Also execute the Atomic Swap of draft-ietf-storm-rdma-ext-03 (AOpCode 0x1) as responder; RFC 7306 dropped it, so by default it is an unsupported AOpCode and ends the stream with a Terminate. Applies to connections established afterwards");

void rsiw_shim_cm_params(struct rsiw_cm_params *p)
{
	p->crc = READ_ONCE(mpa_crc);
	p->peer_to_peer = READ_ONCE(mpa_peer_to_peer);
	p->timeout_ms = max(READ_ONCE(mpa_timeout_ms), 100U);
	p->draft_swap = READ_ONCE(draft_swap);
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
	rv = kernel_bind(s, (struct sockaddr *)laddr, len);
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

int rsiw_shim_sock_connect(struct iw_cm_id *id, unsigned int timeout_ms,
			   struct socket **out)
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
	rv = kernel_bind(s, (struct sockaddr *)laddr, len);
	if (rv)
		goto err;
	rsiw_shim_sock_set_timeout(s, timeout_ms);
	tcp_sock_set_nodelay(s->sk);
	/* Blocking connect, bounded by sk_sndtimeo; -EINPROGRESS means it expired. */
	rv = kernel_connect(s, (struct sockaddr *)raddr, len, 0);
	if (rv == -EINPROGRESS)
		rv = -ETIMEDOUT;
	if (rv)
		goto err;
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
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
	if (more)
		msg.msg_flags |= MSG_MORE;
	return kernel_sendmsg(s, &msg, vec, n, total);
}

void rsiw_shim_sock_push(struct socket *s)
{
	/* Uncorking pushes the queued frames (TCP_NODELAY is set). */
	tcp_sock_set_cork(s->sk, false);
}

int rsiw_shim_sock_recv(struct socket *s, void *buf, size_t len)
{
	struct kvec vec = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };

	if (len > INT_MAX)
		return -EMSGSIZE;
	return kernel_recvmsg(s, &msg, &vec, 1, len, MSG_NOSIGNAL);
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

/* Listening socket: a connection is ready to accept. Softirq. */
static void rsiw_listen_data_ready(struct sock *sk)
{
	const void *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = rsiw_get_ctx(sk);
	if (ctx)
		rsiw_rust_listen_ready(ctx);
	read_unlock_bh(&sk->sk_callback_lock);
}

static int rsiw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			 unsigned int off, size_t len)
{
	struct skb_seq_state st;
	unsigned int done = 0, got;
	const u8 *data;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while ((got = skb_seq_read(done, &data, &st)) != 0) {
		size_t used = rsiw_rust_stream_rx(desc->arg.data, data, got);

		done += min_t(size_t, used, got);
		if (used < got) {
			/* The consumer wants no more now; the rest stays queued. */
			skb_abort_seq_read(&st);
			desc->count = 0;
			break;
		}
	}
	return done;
}

/* Connected stream: bytes arrived. Softirq, or process context from
 * release_sock(); always with the socket owned and bottom halves off.
 */
static void rsiw_stream_data_ready(struct sock *sk)
{
	read_descriptor_t rd = { .count = 1 };

	read_lock_bh(&sk->sk_callback_lock);
	rd.arg.data = (void *)rsiw_get_ctx(sk);
	if (rd.arg.data)
		tcp_read_sock(sk, &rd, rsiw_rx_actor);
	read_unlock_bh(&sk->sk_callback_lock);
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
			/* The peer's FIN: an orderly close. */
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

static void rsiw_watch(struct socket *s, const void *ctx,
		       struct rsiw_sk_saved *saved, bool listen)
{
	struct sock *sk = s->sk;

	write_lock_bh(&sk->sk_callback_lock);
	saved->data_ready = sk->sk_data_ready;
	saved->write_space = sk->sk_write_space;
	saved->state_change = sk->sk_state_change;
	if (listen) {
		sk->sk_data_ready = rsiw_listen_data_ready;
	} else {
		sk->sk_data_ready = rsiw_stream_data_ready;
		sk->sk_write_space = rsiw_stream_write_space;
		sk->sk_state_change = rsiw_stream_state_change;
	}
	rsiw_set_ctx(sk, ctx);
	write_unlock_bh(&sk->sk_callback_lock);
}

void rsiw_shim_sock_watch_listen(struct socket *s, const void *ctx,
				 struct rsiw_sk_saved *saved)
{
	rsiw_watch(s, ctx, saved, true);
}

void rsiw_shim_sock_watch_stream(struct socket *s, const void *ctx,
				 struct rsiw_sk_saved *saved)
{
	rsiw_watch(s, ctx, saved, false);
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

void rsiw_shim_iw_id_get(struct iw_cm_id *id)
{
	id->add_ref(id);
}

void rsiw_shim_iw_id_put(struct iw_cm_id *id)
{
	id->rem_ref(id);
}

int rsiw_shim_iw_event(struct iw_cm_id *id, enum iw_cm_event_type type,
		       int status, struct socket *s, const void *pdata,
		       u8 pdata_len, u8 ird, u8 ord, void *provider_data)
{
	/* iw_cm copies private data before returning. */
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.private_data = (void *)pdata,
		.private_data_len = pdata ? pdata_len : 0,
		.ird = ird,
		.ord = ord,
		.provider_data = provider_data,
	};

	if (s)
		rsiw_shim_sock_names(s, &ev.local_addr, &ev.remote_addr);
	return id->event_handler(id, &ev);
}

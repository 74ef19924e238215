// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C shim: the ib_device_ops / rdma_link_ops / netdevice notifier tables
 * (pointing at the Rust callbacks) and wrappers for the static-inline kernel
 * helpers and macros that bindgen cannot expose (ib_alloc_device(),
 * INIT_RDMA_OBJ_SIZE(), dev_hold(), netif_running(), ...).
 */
#include <linux/etherdevice.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/random.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include "bindings.h"

/* The Rust registry; set once in rsiw_shim_init() before any table is live. */
static const void *rsiw_ctx;

static int rsiw_newlink(const char *ibdev_name, struct net_device *ndev)
{
	return rsiw_rust_newlink(rsiw_ctx, ibdev_name, ndev);
}

static void rsiw_dealloc_driver(struct ib_device *ibdev)
{
	rsiw_rust_dealloc_driver(rsiw_ctx, ibdev);
	/* A deferred ib_umem_release() still reads the device. */
	rsiw_shim_umem_release_flush();
}

static int rsiw_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *arg)
{
	rsiw_rust_netdev_event(rsiw_ctx, netdev_notifier_info_to_dev(arg),
			       event);
	return NOTIFY_OK;
}

/* sysfs fw_ver and ibv_devinfo's: the fw_ver query_device reported. */
static void rsiw_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 v = ibdev->attrs.fw_ver;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%llu.%llu.%llu", v >> 32,
		 (v >> 16) & 0xffff, v & 0xffff);
}

/* Not const: uverbs_abi_ver comes from the Rust ABI crate at init. */
static struct ib_device_ops rsiw_device_ops = {
	.owner = THIS_MODULE,
	/* 6.12's enum rdma_driver_id is closed; the provider matches by name. */
	.driver_id = RDMA_DRIVER_UNKNOWN,

	.alloc_hw_port_stats = rsiw_rust_alloc_hw_port_stats,
	.alloc_pd = rsiw_rust_alloc_pd,
	.alloc_ucontext = rsiw_shim_uq_alloc_ucontext,
	.dealloc_driver = rsiw_dealloc_driver,
	.dealloc_pd = rsiw_rust_dealloc_pd,
	.dealloc_ucontext = rsiw_shim_uq_dealloc_ucontext,
	.fill_res_qp_entry = rsiw_rust_fill_res_qp_entry,
	.get_dev_fw_str = rsiw_get_dev_fw_str,
	.get_hw_stats = rsiw_rust_get_hw_stats,
	.get_port_immutable = rsiw_rust_get_port_immutable,
	.iw_accept = rsiw_rust_iw_accept,
	.iw_add_ref = rsiw_rust_iw_add_ref,
	.iw_connect = rsiw_rust_iw_connect,
	.iw_create_listen = rsiw_rust_iw_create_listen,
	.iw_destroy_listen = rsiw_rust_iw_destroy_listen,
	.iw_get_qp = rsiw_rust_iw_get_qp,
	.iw_reject = rsiw_rust_iw_reject,
	.iw_rem_ref = rsiw_rust_iw_rem_ref,
	.query_device = rsiw_rust_query_device,
	.query_gid = rsiw_rust_query_gid,
	.query_pkey = rsiw_rust_query_pkey,
	.query_port = rsiw_rust_query_port,

	INIT_RDMA_OBJ_SIZE(ib_pd, rsiw_pd, base),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rsiw_ucontext, base),
};

static struct rdma_link_ops rsiw_link_ops = {
	.type = "rsiw",
	.newlink = rsiw_newlink,
};

static struct notifier_block rsiw_netdev_nb = {
	.notifier_call = rsiw_netdev_event,
};

/*
 * An address of @ndev came or went: the GIDs past index 0 are its addresses
 * (rsiw_shim_netdev_ips), so the core re-reads the table. Any context (the
 * IPv6 chain is atomic): the device lookup is RCU, the event queued.
 */
static void rsiw_addr_changed(struct net_device *ndev)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return;
	if (ibdev->ops.dealloc_driver == rsiw_dealloc_driver)
		rsiw_shim_port_event(ibdev, 1, IB_EVENT_GID_CHANGE);
	ib_device_put(ibdev);
}

static int rsiw_inetaddr_event(struct notifier_block *nb, unsigned long event,
			       void *arg)
{
	rsiw_addr_changed(((struct in_ifaddr *)arg)->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int rsiw_inet6addr_event(struct notifier_block *nb, unsigned long event,
				void *arg)
{
	rsiw_addr_changed(((struct inet6_ifaddr *)arg)->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block rsiw_inetaddr_nb = {
	.notifier_call = rsiw_inetaddr_event,
};

static struct notifier_block rsiw_inet6addr_nb = {
	.notifier_call = rsiw_inet6addr_event,
};

unsigned int rsiw_shim_netdev_ips(struct net_device *ndev, u8 (*out)[16],
				  unsigned int max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	unsigned int n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(ndev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			struct in6_addr a;

			if (n >= max)
				break;
			ipv6_addr_set_v4mapped(ifa->ifa_local, &a);
			memcpy(out[n++], &a, 16);
		}
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct inet6_dev *idev = __in6_dev_get(ndev);
		struct inet6_ifaddr *ifp;

		if (idev) {
			read_lock_bh(&idev->lock);
			list_for_each_entry(ifp, &idev->addr_list, if_list) {
				if (n >= max)
					break;
				memcpy(out[n++], &ifp->addr, 16);
			}
			read_unlock_bh(&idev->lock);
		}
	}
#endif
	rcu_read_unlock();
	return n;
}

void rsiw_shim_device_set_parent(struct ib_device *ibdev,
				 struct net_device *ndev)
{
	/* As siw: sysfs device/net/ then names the netdev (tools look there). */
	ibdev->dev.parent = ndev->dev.parent;
}

int rsiw_shim_init(const void *ctx, u32 uverbs_abi_ver)
{
	int rv;

	rsiw_ctx = ctx;
	rsiw_device_ops.uverbs_abi_ver = uverbs_abi_ver;
	/*
	 * Destroyed by rsiw_shim_wq_exit() and rsiw_shim_cm_exit() after the
	 * last device is gone.
	 */
	rv = rsiw_shim_wq_init();
	if (rv)
		return rv;
	rv = rsiw_shim_cm_init();
	if (rv) {
		rsiw_shim_wq_exit();
		return rv;
	}
	rv = register_netdevice_notifier(&rsiw_netdev_nb);
	if (rv) {
		rsiw_shim_cm_exit();
		rsiw_shim_wq_exit();
		return rv;
	}
	register_inetaddr_notifier(&rsiw_inetaddr_nb);
	register_inet6addr_notifier(&rsiw_inet6addr_nb);
	rdma_link_register(&rsiw_link_ops);
	return 0;
}

void rsiw_shim_exit(void)
{
	/* Waits for a running newlink (link_ops_rwsem) before returning. */
	rdma_link_unregister(&rsiw_link_ops);
	unregister_inet6addr_notifier(&rsiw_inet6addr_nb);
	unregister_inetaddr_notifier(&rsiw_inetaddr_nb);
	unregister_netdevice_notifier(&rsiw_netdev_nb);
	rsiw_shim_umem_release_flush();
}

void rsiw_shim_layout(struct rsiw_layout *l)
{
	l->ib_device = sizeof(struct ib_device);
	l->ib_device_attr = sizeof(struct ib_device_attr);
	l->ib_port_attr = sizeof(struct ib_port_attr);
	l->ib_port_immutable = sizeof(struct ib_port_immutable);
	l->ib_udata = sizeof(struct ib_udata);
	l->ib_pd = sizeof(struct ib_pd);
	l->ib_ucontext = sizeof(struct ib_ucontext);
	l->rsiw_ibdev = sizeof(struct rsiw_ibdev);
	l->rsiw_pd = sizeof(struct rsiw_pd);
	l->rsiw_ucontext = sizeof(struct rsiw_ucontext);
}

static struct rsiw_ibdev *to_rsiw_ibdev(const struct ib_device *ibdev)
{
	return container_of(ibdev, struct rsiw_ibdev, base);
}

struct ib_device *rsiw_shim_alloc_device(const struct rsiw_dev_init *init,
					 const void *priv)
{
	struct rsiw_ibdev *dev = ib_alloc_device(rsiw_ibdev, base);
	struct ib_device *base;

	if (!dev)
		return NULL;
	base = &dev->base;
	dev->priv = priv;
	base->node_type = RDMA_NODE_RNIC;
	base->node_guid = init->node_guid;
	base->phys_port_cnt = 1;
	base->num_comp_vectors = init->num_comp_vectors;
	/* The CM binds the mapped addresses iw_cm gives it; no port mapper. */
	base->iw_driver_flags = IW_F_NO_PORT_MAP;
	memcpy(base->node_desc, init->node_desc, sizeof(base->node_desc));
	ib_set_device_ops(base, &rsiw_device_ops);
	ib_set_device_ops(base, &rsiw_obj_ops);
	rsiw_shim_uq_setup_device(base);
	return base;
}

const void *rsiw_shim_device_priv(const struct ib_device *ibdev)
{
	return to_rsiw_ibdev(ibdev)->priv;
}

const void *rsiw_shim_take_priv(struct ib_device *ibdev)
{
	const void *priv = to_rsiw_ibdev(ibdev)->priv;

	to_rsiw_ibdev(ibdev)->priv = NULL;
	return priv;
}

bool rsiw_shim_device_try_get(struct ib_device *ibdev)
{
	return ib_device_try_get(ibdev);
}

void rsiw_shim_device_hold(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void rsiw_shim_device_release(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

void rsiw_shim_port_event(struct ib_device *ibdev, u32 port,
			  enum ib_event_type type)
{
	struct ib_event event = {
		.device = ibdev,
		.element.port_num = port,
		.event = type,
	};

	ib_dispatch_event(&event);
}

int rsiw_shim_copy_to_udata(struct ib_udata *udata, const void *src,
			    size_t len)
{
	if (udata->outlen < len)
		return -EINVAL;
	return copy_to_user(udata->outbuf, src, len) ? -EFAULT : 0;
}

void rsiw_shim_netdev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rsiw_shim_netdev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

bool rsiw_shim_netdev_active(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

unsigned int rsiw_shim_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

unsigned int rsiw_shim_netdev_addr(const struct net_device *ndev, u8 *mac,
				   unsigned int len)
{
	unsigned int n = min_t(unsigned int, ndev->addr_len, len);

	memcpy(mac, ndev->dev_addr, n);
	return n;
}

void rsiw_shim_random_mac(u8 *mac)
{
	eth_random_addr(mac);
}

/* STag keys and the STag index permutation's key (rust/kapi/random.rs). */
u32 rsiw_shim_random_u32(void)
{
	return get_random_u32();
}

void rsiw_shim_random_bytes(void *buf, size_t len)
{
	get_random_bytes(buf, len);
}

MODULE_ALIAS_RDMA_LINK("rsiw");
/*
 * udev's rdma-core rules load ib_uverbs when an RDMA device appears; systems
 * without them (initramfs, test VMs) still get /dev/infiniband/uverbsN.
 */
MODULE_SOFTDEP("post: ib_uverbs");

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw C shim interface, the bindgen input for the module's bindings
 * (bindings.rs): the container layouts, the device and driver services of
 * registration.c, the Rust callbacks the C ops tables point to, and the header
 * of every other C file of this folder (each beside the wrapper that calls it).
 */
#ifndef RSIW_BINDINGS_H
#define RSIW_BINDINGS_H

#include <linux/netdevice.h>
#include <linux/net.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_netlink.h>
#include "compat.h"
#include "obj.h"
#include "sock.h"
#include "iwcm.h"
#include "deadline.h"
#include "params.h"
#include "mmap.h"
#include "zc.h"
#include "wq.h"
#include "hwstats.h"

/* The ib_device container; the core allocates it with ib_alloc_device(). */
struct rsiw_ibdev {
	struct ib_device base;
	/* Rust per-device state (an Arc<Device> in foreign form). */
	const void *priv;
};

/* Protection domain container (INIT_RDMA_OBJ_SIZE). */
struct rsiw_pd {
	struct ib_pd base;
	u32 pdn;
};

/*
 * User context container (INIT_RDMA_OBJ_SIZE). @rings counts the context's
 * own reference and one per ring mapping not yet removed; @rings_gone is
 * completed when it drops to zero (mmap.c).
 */
struct rsiw_ucontext {
	struct ib_ucontext base;
	atomic_t rings;
	struct completion rings_gone;
};

/* Static device properties the Rust side decides; applied before registration. */
struct rsiw_dev_init {
	__be64 node_guid;
	u32 num_comp_vectors;
	char node_desc[IB_DEVICE_NODE_DESC_MAX];
};

/* Sizes as the C compiler sees them; checked against bindgen's at load. */
struct rsiw_layout {
	size_t ib_device;
	size_t ib_device_attr;
	size_t ib_port_attr;
	size_t ib_port_immutable;
	size_t ib_udata;
	size_t ib_pd;
	size_t ib_ucontext;
	size_t rsiw_ibdev;
	size_t rsiw_pd;
	size_t rsiw_ucontext;
};

/* --- Shim services called from Rust (registration.c) --- */
void rsiw_shim_layout(struct rsiw_layout *layout);
int rsiw_shim_init(const void *ctx, u32 uverbs_abi_ver);
void rsiw_shim_exit(void);
struct ib_device *rsiw_shim_alloc_device(const struct rsiw_dev_init *init,
					 const void *priv);
const void *rsiw_shim_device_priv(const struct ib_device *ibdev);
const void *rsiw_shim_take_priv(struct ib_device *ibdev);
bool rsiw_shim_device_try_get(struct ib_device *ibdev);
void rsiw_shim_device_hold(struct ib_device *ibdev);
void rsiw_shim_device_release(struct ib_device *ibdev);
void rsiw_shim_port_event(struct ib_device *ibdev, u32 port,
			  enum ib_event_type event);
int rsiw_shim_copy_to_udata(struct ib_udata *udata, const void *src,
			    size_t len);
void rsiw_shim_netdev_hold(struct net_device *ndev);
void rsiw_shim_netdev_put(struct net_device *ndev);
bool rsiw_shim_netdev_active(const struct net_device *ndev);
unsigned int rsiw_shim_netdev_mtu(const struct net_device *ndev);
unsigned int rsiw_shim_netdev_addr(const struct net_device *ndev, u8 *mac,
				   unsigned int len);
void rsiw_shim_random_mac(u8 *mac);
u32 rsiw_shim_random_u32(void);
void rsiw_shim_random_bytes(void *buf, size_t len);
unsigned int rsiw_shim_netdev_ips(struct net_device *ndev, u8 (*out)[16],
				  unsigned int max);
void rsiw_shim_device_set_parent(struct ib_device *ibdev,
				 struct net_device *ndev);

/* --- Rust callbacks (rust/entry/dev.rs); ctx is the Rust registry --- */
int rsiw_rust_newlink(const void *ctx, const char *ibdev_name,
		      struct net_device *ndev);
void rsiw_rust_netdev_event(const void *ctx, struct net_device *ndev,
			    unsigned long event);
void rsiw_rust_dealloc_driver(const void *ctx, struct ib_device *ibdev);
int rsiw_rust_query_device(struct ib_device *ibdev,
			   struct ib_device_attr *attr, struct ib_udata *udata);
int rsiw_rust_query_port(struct ib_device *ibdev, u32 port,
			 struct ib_port_attr *attr);
int rsiw_rust_get_port_immutable(struct ib_device *ibdev, u32 port,
				 struct ib_port_immutable *imm);
int rsiw_rust_query_gid(struct ib_device *ibdev, u32 port, int index,
			union ib_gid *gid);
int rsiw_rust_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			 u16 *pkey);
int rsiw_rust_alloc_ucontext(struct ib_ucontext *uctx,
			     struct ib_udata *udata);
void rsiw_rust_dealloc_ucontext(struct ib_ucontext *uctx);
int rsiw_rust_alloc_pd(struct ib_pd *pd, struct ib_udata *udata);
int rsiw_rust_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata);

#endif /* RSIW_BINDINGS_H */

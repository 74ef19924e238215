/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw counters: per-CPU u64 arrays (rust/kapi/percpu.rs), the hw_stats block
 * ib_core reads port counters into (rust/kapi/hwstats.rs), and the driver
 * attribute table of a restrack entry (rust/kapi/nlres.rs).
 */
#ifndef RSIW_HWSTATS_H
#define RSIW_HWSTATS_H

#include <linux/percpu.h>
#include <rdma/ib_verbs.h>

/* --- per-CPU counters --- */
u64 __percpu *rsiw_shim_pcpu_alloc(size_t n);
void rsiw_shim_pcpu_free(u64 __percpu *p);
void rsiw_shim_pcpu_add(u64 __percpu *p, size_t i, u64 v);
u64 rsiw_shim_pcpu_sum(u64 __percpu *p, size_t i);

/* --- hw_stats --- */
struct rdma_hw_stats *rsiw_shim_hw_stats_alloc(const struct rdma_stat_desc *d,
					       int n);
int rsiw_shim_hw_stats_len(const struct rdma_hw_stats *s);
void rsiw_shim_hw_stats_set(struct rdma_hw_stats *s, int i, u64 v);

/* --- restrack driver attributes (RDMA_NLDEV_ATTR_DRIVER) --- */
struct nlattr *rsiw_shim_nl_driver_begin(struct sk_buff *msg);
void rsiw_shim_nl_driver_end(struct sk_buff *msg, struct nlattr *table);
void rsiw_shim_nl_driver_cancel(struct sk_buff *msg, struct nlattr *table);

/* --- Rust callbacks (rust/entry/dev.rs, obj.rs) --- */
struct rdma_hw_stats *rsiw_rust_alloc_hw_port_stats(struct ib_device *ibdev,
						    u32 port);
int rsiw_rust_get_hw_stats(struct ib_device *ibdev,
			   struct rdma_hw_stats *stats, u32 port, int index);
int rsiw_rust_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *qp);

#endif /* RSIW_HWSTATS_H */

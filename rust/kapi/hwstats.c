// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw counters: per-CPU u64 arrays, the hw_stats block of
 * `rdma statistic show link`, and the driver table of `rdma resource show`.
 */
#include <linux/cpumask.h>
#include <net/netlink.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>
#include "hwstats.h"

u64 __percpu *rsiw_shim_pcpu_alloc(size_t n)
{
	/* Zeroed; one u64 per counter per possible CPU. */
	return __alloc_percpu(n * sizeof(u64), sizeof(u64));
}

void rsiw_shim_pcpu_free(u64 __percpu *p)
{
	free_percpu(p);
}

void rsiw_shim_pcpu_add(u64 __percpu *p, size_t i, u64 v)
{
	/* One instruction on x86-64: safe against preemption and interrupts. */
	this_cpu_add(p[i], v);
}

u64 rsiw_shim_pcpu_sum(u64 __percpu *p, size_t i)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr(&p[i], cpu));
	return sum;
}

struct rdma_hw_stats *rsiw_shim_hw_stats_alloc(const struct rdma_stat_desc *d,
					       int n)
{
	return rdma_alloc_hw_stats_struct(d, n, RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int rsiw_shim_hw_stats_len(const struct rdma_hw_stats *s)
{
	return s->num_counters;
}

void rsiw_shim_hw_stats_set(struct rdma_hw_stats *s, int i, u64 v)
{
	if (i >= 0 && i < s->num_counters)
		s->value[i] = v;
}

struct nlattr *rsiw_shim_nl_driver_begin(struct sk_buff *msg)
{
	return nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rsiw_shim_nl_driver_end(struct sk_buff *msg, struct nlattr *table)
{
	nla_nest_end(msg, table);
}

void rsiw_shim_nl_driver_cancel(struct sk_buff *msg, struct nlattr *table)
{
	nla_nest_cancel(msg, table);
}

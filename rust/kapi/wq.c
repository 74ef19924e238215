// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw TX work placement. A kick from a poster (its doorbell) or from a
 * softirq that interrupted one queues the TX work on a CPU chosen from the
 * connection's hint (connections are spread over the online CPUs, as siw
 * spreads its QPs over per-CPU TX threads), but never on the calling CPU
 * while another is online: that CPU runs the poster, which would otherwise
 * have to be preempted first. A kick from a worker (the TX work itself, or
 * the receive and socket callbacks that run in a worker's softirq over
 * loopback: write space, a Read Response to send) stays on the worker's
 * CPU, where the connection's kernel work already runs; sending it to
 * another CPU would land it on the CPU of the busy-polling consumers (with
 * two CPUs, always) and bounce the stream between the two (performance.md,
 * run AH). The high-priority pool lets the TX work run ahead of a
 * busy-polling consumer on its CPU, as the receive softirq does.
 *
 * The work items run on rsiw's own queue (per-CPU, high priority, as
 * system_highpri_wq), not a system one, so that unload can wait for every
 * one of them: a work item still running the tail of an engine's run (and
 * the drop of its last reference) after the last device is gone would
 * otherwise execute module text that rmmod frees.
 */
#include <linux/cpumask.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/workqueue.h>
#include "bindings.h"

/* Connections' TX/RX work; destroyed (and drained) at unload. */
static struct workqueue_struct *rsiw_wq;

int rsiw_shim_wq_init(void)
{
	rsiw_wq = alloc_workqueue("rsiw", WQ_HIGHPRI | RSIW_WQ_PERCPU, 0);
	return rsiw_wq ? 0 : -ENOMEM;
}

/*
 * With every device gone (every engine stopped: none queues work any more),
 * waits for the work items still queued or running, then frees the queue.
 */
void rsiw_shim_wq_exit(void)
{
	if (rsiw_wq)
		destroy_workqueue(rsiw_wq);
	rsiw_wq = NULL;
}

bool rsiw_shim_queue_tx_work(struct work_struct *w, unsigned int hint)
{
	unsigned int n = num_online_cpus();
	unsigned int cpu;

	if (n < 2)
		return queue_work(rsiw_wq, w);
	/* A worker, or a softirq over one: stay (bound workers do not move). */
	if (current->flags & PF_WQ_WORKER)
		return queue_work_on(raw_smp_processor_id(), rsiw_wq, w);
	cpu = cpumask_nth(hint % n, cpu_online_mask);
	/* A hint only: the CPU may change right after this read. */
	if (cpu == raw_smp_processor_id())
		cpu = cpumask_nth((hint + 1) % n, cpu_online_mask);
	/* CPU hotplug raced with the count: let the workqueue choose. */
	if (cpu >= nr_cpu_ids)
		return queue_work(rsiw_wq, w);
	return queue_work_on(cpu, rsiw_wq, w);
}

/*
 * A connection's received bytes, left by the network softirq: on this CPU's
 * high-priority pool. The softirq returns to what it interrupted (over
 * loopback, the sender, which goes on sending) and the work item then reads
 * all that queued meanwhile in one pass. Another CPU was tried: it made the
 * bandwidth bimodal, since that CPU runs the poster, which the work item
 * then keeps from posting (performance.md, run AF).
 */
bool rsiw_shim_queue_rx_work(struct work_struct *w)
{
	return queue_work(rsiw_wq, w);
}

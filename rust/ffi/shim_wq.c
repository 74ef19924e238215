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
 */
#include <linux/cpumask.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/workqueue.h>
#include "shim.h"

bool rsiw_shim_queue_tx_work(struct work_struct *w, unsigned int hint)
{
	unsigned int n = num_online_cpus();
	unsigned int cpu;

	if (n < 2)
		return queue_work(system_highpri_wq, w);
	/* A worker, or a softirq over one: stay (bound workers do not move). */
	if (current->flags & PF_WQ_WORKER)
		return queue_work_on(raw_smp_processor_id(), system_highpri_wq, w);
	cpu = cpumask_nth(hint % n, cpu_online_mask);
	/* A hint only: the CPU may change right after this read. */
	if (cpu == raw_smp_processor_id())
		cpu = cpumask_nth((hint + 1) % n, cpu_online_mask);
	/* CPU hotplug raced with the count: let the workqueue choose. */
	if (cpu >= nr_cpu_ids)
		return queue_work(system_highpri_wq, w);
	return queue_work_on(cpu, system_highpri_wq, w);
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
	return queue_work(system_highpri_wq, w);
}

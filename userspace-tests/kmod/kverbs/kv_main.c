// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module: runs both ends of an RDMA connection in the kernel through
 * rdma_cm and checks SEND/RECV, FRWR with RDMA WRITE/READ, invalidation
 * (RFC 5040 §5 STag invalidation) and, with atomics=1, the RFC 7306
 * masked atomics. One "RSIW-KVERBS PASS|FAIL case" kernel log line per case
 * and a summary. Loading succeeds whenever the run completed, failed cases or
 * not (a failing init would be run twice by busybox's finit_module/init_module
 * fallback); the verdict is the summary line and the read-only parameters
 * passed and failed.
 */
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "kv.h"

char *kv_dev = "siw0";
module_param_named(dev, kv_dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device that must carry the connection (default siw0)");

char *kv_addr = "10.0.2.15";
module_param_named(addr, kv_addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address of that device's netdev; both ends use it");

int kv_port = 18515;
module_param_named(port, kv_port, int, 0444);
MODULE_PARM_DESC(port, "TCP port of the listening end (default 18515)");

bool kv_atomics;
module_param_named(atomics, kv_atomics, bool, 0444);
MODULE_PARM_DESC(atomics, "also run the RFC 7306 masked-atomics cases (default 0)");

bool kv_noinv;
module_param_named(noinv, kv_noinv, bool, 0444);
MODULE_PARM_DESC(noinv, "self-test of the test: skip every invalidation, so the invalidation cases must fail");

bool kv_hostile;
module_param_named(hostile, kv_hostile, bool, 0444);
MODULE_PARM_DESC(hostile, "run only the cases of memory read after its STag died (default 0)");

static unsigned int kv_passed, kv_failed;
module_param_named(passed, kv_passed, uint, 0444);
MODULE_PARM_DESC(passed, "result: cases passed by the run at load (read-only)");
module_param_named(failed, kv_failed, uint, 0444);
MODULE_PARM_DESC(failed, "result: cases failed by the run at load (read-only)");

void kv_pass(const char *name)
{
	kv_passed++;
	pr_info("RSIW-KVERBS PASS %s\n", name);
}

void kv_fail(const char *name, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	kv_failed++;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("RSIW-KVERBS FAIL %s: %pV\n", name, &vaf);
	va_end(args);
}

static int __init kv_init(void)
{
	int rv;

	/* Results, not inputs: a value given at load is ignored. */
	kv_passed = 0;
	kv_failed = 0;
	pr_info("rsiw-kverbs: dev=%s addr=%s port=%d atomics=%d noinv=%d\n", kv_dev, kv_addr,
		kv_port, kv_atomics, kv_noinv);
	rv = kv_listen_start();
	if (kv_check("listen", !rv, "rdma_cm listener on %s:%d: %d", kv_addr, kv_port, rv) &&
	    kv_hostile) {
		kv_run_hostile();
		kv_listen_stop();
	} else if (!rv) {
		kv_run_basic();
		kv_run_read_inv();
		kv_run_send_inv();
		if (kv_atomics)
			kv_run_atomics();
		kv_listen_stop();
	}
	pr_info("RSIW-KVERBS SUMMARY passed=%u failed=%u\n", kv_passed, kv_failed);
	return 0;
}

static void __exit kv_exit(void)
{
}

module_init(kv_init);
module_exit(kv_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rsiw test: kernel verbs over rdma_cm (SEND, FRWR, invalidation, masked atomics)");

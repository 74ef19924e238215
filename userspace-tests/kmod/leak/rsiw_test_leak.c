// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module: leaks one allocation when loaded, so the VM suite can check
 * that the harness's end-of-run kmemleak scan fails the run
 * (qemu/tests/harness-leak.sh).
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/slab.h>

static int __init rsiw_test_leak_init(void)
{
	void *p = kmalloc(200, GFP_KERNEL);

	/* The only reference dies with this frame: kmemleak must report it. */
	pr_info("rsiw_test_leak: leaking %zu bytes\n", p ? ksize(p) : 0);
	return 0;
}

static void __exit rsiw_test_leak_exit(void)
{
}

module_init(rsiw_test_leak_init);
module_exit(rsiw_test_leak_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rsiw harness self-test: leaks memory at load");

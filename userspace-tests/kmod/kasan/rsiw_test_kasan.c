// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module: reads one byte past a heap object when loaded, so the VM
 * suite can check that the harness fails a run on a KASAN report
 * (qemu/tests/harness-kasan.sh).
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/slab.h>

/* A parameter, so the compiler cannot see the access is out of bounds. */
static int len = 13;
module_param(len, int, 0444);

static int __init rsiw_test_kasan_init(void)
{
	volatile char *p = kmalloc(13, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	pr_info("rsiw_test_kasan: byte past the end: %d\n", p[len]);
	kfree((void *)p);
	return 0;
}

static void __exit rsiw_test_kasan_exit(void)
{
}

module_init(rsiw_test_kasan_init);
module_exit(rsiw_test_kasan_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rsiw harness self-test: KASAN out-of-bounds read at load");

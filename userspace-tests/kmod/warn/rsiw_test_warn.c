// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module: WARNs when loaded, so the VM suite can check that the
 * harness fails a run with a kernel splat (qemu/tests/harness-warn.sh).
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init rsiw_test_warn_init(void)
{
	WARN_ON(1);
	return 0;
}

static void __exit rsiw_test_warn_exit(void)
{
}

module_init(rsiw_test_warn_init);
module_exit(rsiw_test_warn_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rsiw harness self-test: WARN_ON at load");

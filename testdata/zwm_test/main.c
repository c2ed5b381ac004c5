// SPDX-License-Identifier: GPL-2.0
/*
 * zwm_test, file B: strong overrides of two weak defaults from weak.c, plus
 * a few ordinary traced functions so the module also has valid
 * __mcount_loc entries. Every function here starts with "call __fentry__".
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>
#include "zwm_test.h"

/* Side effect that stops gcc from dropping or merging the functions. */
static int zwm_test_calls;

/* Strong override of weak.c's shape-1 default (which sits at .text+0). */
noinline int zwm_arch_weak_first(void)
{
	zwm_test_calls += 1;
	return 1;
}

/* Strong override of weak.c's shape-2 default (after zwm_arch_kept). */
noinline int zwm_arch_weak_second(void)
{
	zwm_test_calls += 2;
	return 2;
}

/* Ordinary valid entries: a static and a global function. */
static noinline int zwm_static_helper(void)
{
	zwm_test_calls += 3;
	return 3;
}

noinline int zwm_global_helper(void)
{
	zwm_test_calls += 4;
	return 4;
}

/*
 * Function table, visible outside this file. Without it gcc sees that the
 * helpers are only called from (cold) init code and moves them to
 * .text.unlikely; we want every interesting function in plain .text.
 */
int (*const zwm_test_funcs[])(void) = {
	zwm_arch_weak_first,	/* resolves to the strong override above */
	zwm_arch_kept,		/* resolves to the weak default in weak.c */
	zwm_arch_weak_second,	/* resolves to the strong override above */
	zwm_static_helper,
	zwm_global_helper,
};

static int __init zwm_test_init(void)
{
	unsigned int i;
	int sum = 0;

	for (i = 0; i < ARRAY_SIZE(zwm_test_funcs); i++)
		sum += zwm_test_funcs[i]();
	/* Expect sum=10 (1+0+2+3+4): the overrides, not the weak bodies, ran. */
	pr_info("zwm_test: loaded (sum=%d, calls=%d)\n", sum, zwm_test_calls);
	return 0;
}

static void __exit zwm_test_exit(void)
{
}

module_init(zwm_test_init);
module_exit(zwm_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("zero-weak-mcount test: overridden __weak functions");

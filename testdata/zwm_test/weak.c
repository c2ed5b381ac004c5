// SPDX-License-Identifier: GPL-2.0
/*
 * zwm_test, file A: "arch defaults" declared __weak, like kvm's generic
 * kvm_arch_*() stubs in virt/kvm/kvm_main.c.
 *
 * main.c overrides two of them. After the module link (ld -r) the
 * overridden weak bodies keep their bytes and their __mcount_loc entries,
 * but their symbols are gone: those entries point into code that no symbol
 * of the module covers. The ORDER of the functions in this file matters.
 */
#include <linux/compiler.h>
#include "zwm_test.h"

/*
 * Shape 1: FIRST function of the first object file, so its body sits at
 * .text+0 of the linked module. Overridden by main.c, so after linking
 * there is no symbol at or before it at all
 * (ftrace: "__ftrace_invalid_address___0").
 */
__weak int zwm_arch_weak_first(void)
{
	return 0;
}

/*
 * Not overridden: this weak default is the one that gets linked in, so its
 * symbol is kept. It is the "preceding symbol" of shape 2 below.
 */
__weak int zwm_arch_kept(void)
{
	return 0;
}

/*
 * Shape 2: overridden weak body right after a kept function. Its
 * __mcount_loc entry lands N > 0 bytes past zwm_arch_kept's symbol
 * (ftrace: "__ftrace_invalid_address___N").
 */
__weak int zwm_arch_weak_second(void)
{
	return 0;
}

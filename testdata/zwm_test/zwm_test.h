/* SPDX-License-Identifier: GPL-2.0 */
#ifndef ZWM_TEST_H
#define ZWM_TEST_H

/* Weak defaults in weak.c; main.c overrides the two "weak_*" ones. */
int zwm_arch_weak_first(void);
int zwm_arch_kept(void);
int zwm_arch_weak_second(void);

/* main.c's global helper: declared, so -Wmissing-prototypes (on by default
 * since 6.8) has nothing to say. */
int zwm_global_helper(void);

#endif

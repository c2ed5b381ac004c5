/* SPDX-License-Identifier: GPL-2.0 */
#ifndef ZWM_TEST_H
#define ZWM_TEST_H

/* Weak defaults in weak.c; main.c overrides the two "weak_*" ones. */
int zwm_arch_weak_first(void);
int zwm_arch_kept(void);
int zwm_arch_weak_second(void);

#endif

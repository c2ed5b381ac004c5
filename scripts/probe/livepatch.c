// SPDX-License-Identifier: GPL-2.0-only
/*
 * zwm_probe_livepatch: a livepatch that replaces kvm's irqfd_wakeup()
 * (virt/kvm/eventfd.c) with a wrapper that counts its runs in the "runs"
 * parameter and then runs the original body.  Built by
 * scripts/probe/probe.py against the Debian release's own headers.
 *
 * A livepatch replaces a function outright, and calling the old function
 * from its replacement would come back to the replacement.  So the wrapper
 * calls the old function past its ftrace call: "target" is irqfd_wakeup's
 * address (the guest reads it from /proc/kallsyms).  On x86_64 with IBT the
 * function starts with endbr64 (4 bytes) and the 5-byte call at its patch
 * site, so the body starts 9 bytes in; without IBT (Debian's 6.1) the
 * 5-byte call is the first instruction and the body starts 5 bytes in.  The
 * init function checks those bytes and refuses to load if they are
 * anything else.
 */
#include <linux/kernel.h>
#include <linux/livepatch.h>
#include <linux/module.h>
#include <linux/wait.h>

static unsigned long target;
module_param(target, ulong, 0400);
MODULE_PARM_DESC(target, "address of irqfd_wakeup");

static unsigned int runs;
/* Where irqfd_wakeup's body starts, after its patch site (set by init). */
static unsigned long body_offset;
module_param(runs, uint, 0444);
MODULE_PARM_DESC(runs, "how often the replacement ran");

typedef int (*wakeup_fn)(struct wait_queue_entry *wait, unsigned int mode, int sync, void *key);

static int zwm_irqfd_wakeup(struct wait_queue_entry *wait, unsigned int mode, int sync, void *key)
{
	wakeup_fn body = (wakeup_fn)(target + body_offset);

	WRITE_ONCE(runs, READ_ONCE(runs) + 1);
	return body(wait, mode, sync, key);
}

static struct klp_func funcs[] = {
	{ .old_name = "irqfd_wakeup", .new_func = zwm_irqfd_wakeup },
	{ }
};

static struct klp_object objs[] = {
	{ .name = "kvm", .funcs = funcs },
	{ }
};

static struct klp_patch patch = {
	.mod = THIS_MODULE,
	.objs = objs,
};

static int __init zwm_probe_livepatch_init(void)
{
	const u8 *p = (const u8 *)target;
	static const u8 endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

	unsigned long site;

	if (!target) {
		pr_err("zwm_probe_livepatch: no target\n");
		return -EINVAL;
	}
	site = memcmp(p, endbr64, 4) ? 0 : 4;
	/* call rel32 (ftrace on) or the 5-byte NOP 0f 1f 44 00 00 (off). */
	if (p[site] != 0xe8 && p[site] != 0x0f) {
		pr_err("zwm_probe_livepatch: target %lx has no 5-byte patch site at +%lu\n", target, site);
		return -EINVAL;
	}
	body_offset = site + 5;
	return klp_enable_patch(&patch);
}

static void __exit zwm_probe_livepatch_exit(void)
{
}

module_init(zwm_probe_livepatch_init);
module_exit(zwm_probe_livepatch_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("zero-weak-mcount probe: count irqfd_wakeup runs through a livepatch");
MODULE_INFO(livepatch, "Y");

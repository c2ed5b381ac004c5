#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py OUT SERIES-BOOT BROKEN-BOOT ROUNDS [STOCK-BOOT]: judge scripts/kernel-debug.sh.

The series boot passes when its stress payload finished every round with
every load and unload successful, and its kernel log holds no splat
(guest.py's BAD lines), no panic and no taint. The broken boot, whose pass
allocates with GFP_KERNEL in ftrace_mod_clear_dead() while it holds
rcu_read_lock() over the module's symbols, must show the
debug checks catching it: "BUG: sleeping function called from invalid
context" in an insmod (with that function in its trace where the console
shows it). Otherwise the checks are not live and the clean series boot
proves nothing. STOCK-BOOT, the same
kernel with 7.2's own ftrace.c (--stock-control), is described, not
judged: it tells whether a failure is the series' or the environment's."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

CAUGHT = "BUG: sleeping function called from invalid context"
RCU_CAUGHT = "WARNING: suspicious RCU usage"
# The generated module is built out of tree (M=), so loading it sets
# TAINT_OOT_MODULE (O, bit 12) by design; any other taint flag fails.
EXPECTED_TAINT = 1 << 12


def stress(rep):
    fields = guest.marked(rep, "STRESS")
    return dict(f.split("=", 1) for f in fields[-1]) if fields else None


def clean_run(name, boot_dir, rounds=None):
    """(summary line or None, failures) of a boot that must pass the stress
    cleanly: ROUNDS of it, or as many as its payload was given."""
    fails = []
    rep = guest.read_console(boot_dir)
    s = stress(rep)
    if rounds is None:
        rounds = int(s["rounds"]) if s else int(Path(boot_dir, "initrd/stress/rounds").read_text())
    want = rounds * 4 + (rounds // 4) * 2
    bad = guest.bad_lines(rep["dmesg"]) + rep["panic"]
    # A boot that did not finish is reported below, with its round.
    if rep["end"] and (why := guest.unjudged(rep)):
        fails.append(f"{name}: {why}")
    line = None
    if not rep["end"] or s is None:
        got = guest.marked(rep, "ROUND")
        fails.append(f"{name}: the guest did not finish the stress payload"
                     + (f" (it stopped in round {got[-1][0]} of {rounds})" if got else ""))
    else:
        if int(s["failed"]) or int(s["loads"]) != want:
            fails.append(f"{name}: {s['failed']} failed insmod/rmmod, {s['loads']} of {want} loads")
        if int(rep["taint"]) & ~EXPECTED_TAINT:
            fails.append(f"{name}: tainted {rep['taint']} (only {EXPECTED_TAINT}, O, is expected)")
        line = (f"{name}: {s['loads']} loads in {s['rounds']} rounds, {s['failed']} failed, "
                f"{s['toggles']} tracer toggles, taint {rep['taint']}, "
                f"{len(bad)} splat lines, {Path(boot_dir, 'boot-seconds').read_text().strip()} s")
    fails += [f"{name}: {ln}" for ln in bad[:20]]
    return line, fails


def main():
    out, series_dir, broken_dir, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    line, fails = clean_run("series", series_dir, rounds)
    lines = [line] if line else []
    broken = guest.read_console(broken_dir)
    dmesg = broken["dmesg"] or Path(broken_dir, "console.log").read_text(errors="replace").splitlines()
    caught = [i for i, ln in enumerate(dmesg) if CAUGHT in ln]
    # The console runs at loglevel 4, so the trace itself may not be there;
    # the task is: only an insmod runs the pass.
    named = any("ftrace_mod_clear_dead" in ln or "name: insmod" in ln
                for i in caught for ln in dmesg[i:i + 40])
    if not caught or not named:
        fails.append("broken: the sleeping allocation under RCU was not reported: the debug checks are not live")
    else:
        rcu = sum(RCU_CAUGHT in ln for ln in dmesg)
        lines.append(f"broken (negative control): caught, {len(caught)} reports in insmod, the first: {dmesg[caught[0]].strip()}"
                     + (f"; and PROVE_RCU, {rcu}x: {RCU_CAUGHT}" if rcu else ""))
    if len(sys.argv) > 5:
        line, stock_fails = clean_run("stock ftrace.c (control, not judged)", sys.argv[5])
        lines += [line] if line else []
        lines += [f"not clean: {f}" for f in stock_fails]
    sys.exit(guest.verdict(out, "\n".join(lines), fails, "kernel-debug"))


if __name__ == "__main__":
    main()

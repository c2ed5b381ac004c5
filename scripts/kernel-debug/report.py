#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py OUT SERIES-BOOT BROKEN-BOOT ROUNDS: judge scripts/kernel-debug.sh.

The series boot passes when its stress payload finished every round with
every load and unload successful, and its kernel log holds no splat
(guest.py's BAD lines), no panic and no taint. The broken boot, whose pass
allocates with GFP_KERNEL inside rcu_read_lock(), must show the debug
checks catching it: "BUG: sleeping function called from invalid context"
in an insmod (with ftrace_mod_explained_locs() in its trace where the
console shows it). Otherwise the checks are not
live and the clean series boot proves nothing."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

CAUGHT = "BUG: sleeping function called from invalid context"


def stress(rep):
    fields = guest.marked(rep, "STRESS")
    return dict(f.split("=", 1) for f in fields[-1]) if fields else None


def main():
    out, series_dir, broken_dir, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    fails, lines = [], []
    want = rounds * 4 + (rounds // 4) * 2
    series = guest.read_console(series_dir)
    s = stress(series)
    bad = guest.bad_lines(series["dmesg"]) + series["panic"]
    if not series["end"] or s is None:
        fails.append("series: the guest did not finish the stress payload")
    else:
        if int(s["failed"]) or int(s["loads"]) != want:
            fails.append(f"series: {s['failed']} failed insmod/rmmod, {s['loads']} of {want} loads")
        if series["taint"] != "0":
            fails.append(f"series: tainted {series['taint']}")
        lines.append(f"series: {s['loads']} loads in {s['rounds']} rounds, {s['failed']} failed, "
                     f"{s['toggles']} tracer toggles, taint {series['taint']}, "
                     f"{len(bad)} splat lines, {Path(series_dir, 'boot-seconds').read_text().strip()} s")
    fails += [f"series: {ln}" for ln in bad[:20]]
    broken = guest.read_console(broken_dir)
    dmesg = broken["dmesg"] or Path(broken_dir, "console.log").read_text(errors="replace").splitlines()
    caught = [i for i, ln in enumerate(dmesg) if CAUGHT in ln]
    # The console runs at loglevel 4, so the trace itself may not be there;
    # the task is: only an insmod runs the pass.
    named = any("ftrace_mod_explained_locs" in ln or "name: insmod" in ln
                for i in caught for ln in dmesg[i:i + 40])
    if not caught or not named:
        fails.append("broken: the sleeping allocation under RCU was not reported: the debug checks are not live")
    else:
        lines.append(f"broken (negative control): caught: {dmesg[caught[0]].strip()}")
    sys.exit(guest.verdict(out, "\n".join(lines), fails, "kernel-debug"))


if __name__ == "__main__":
    main()

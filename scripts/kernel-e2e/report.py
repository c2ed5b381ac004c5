#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge the kernel e2e boots (scripts/kernel-e2e.sh) and report.

  report.py OUT.md TOOL.JSON NM BOOT_DIR...
  report.py summary TOOL.JSON     one line: what the tool did to kvm.ko

Each BOOT_DIR holds console.log from one boot of scripts/guest/run.sh with
payload loads.sh, and a file `kernel` naming the kernel (stock, series or
broken: the series with its pass broken, which keeps every location); the
one with a file `expect-warn` is the negative control.  Cases are named
KERNEL/FORM-kvm, FORM one of unchecked (as built), processed (the tool),
debug-stripped and stripped.  TOOL.JSON is the tool's --format=json report
on the unchecked kvm.ko (docs/report-format.md: the distance of each weak
entry it zeroed), NM is `nm` of it.

The reference for a form is stock/FORM where a stock kernel was built
(x86_64), else broken/unchecked-kvm (ppc64le, no stock build): the broken
pass keeps a record for every weak location, as stock does.  What must
hold:

  * every insmod and rmmod succeeded in every boot; no boot but the
    negative control shows WARNING, BUG, Oops, a call trace or an ftrace bug
    in dmesg, and those kernels stayed untainted; the ftrace smoke test
    enabled every filtered kvm record, and every case was listed the same
    way in every boot;
  * the weak locations are real: stock/unchecked-kvm (or broken's) lists
    dead lines, invalid ones and second ones (a name listed more often than
    NM has it), and they are, one for one, the entries the tool zeroed;
  * stock/processed-kvm, and series/FORM for every form: 0 invalid lines,
    no dead second line (but stripped, whose static functions lost the
    symbols NM counts), every other line the reference's for that form
    (stock's unchecked, or FORM's) less its second lines (in stripped also
    static functions that lost their symbols, up to the max offset past
    another symbol).  Against broken, or a stock
    that checks nothing, stripped is judged by names: fewer lines, each name
    one the reference lists or an alias of one (same address in NM), since
    such a kernel lists a static function that lost its symbol under the
    name before it, where the series drops its record;
  * against a stock that checks records (lists invalid lines; riscv and s390
    check none): series/{unchecked,processed}-kvm load faster, median of 30+;
  * negative control: the broken kernel lists dead lines or WARNs, or the
    boots could not tell a working pass from none.

Prints the table and writes it to OUT.md; exits 1 if anything fails.
"""
import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

FORMS = ["unchecked-kvm", "processed-kvm", "debug-stripped-kvm", "stripped-kvm"]


def parse(boot):
    con = guest.read_console(boot)
    return {"kernel": (boot / "kernel").read_text().strip(), "dir": boot,
            "warn": (boot / "expect-warn").exists(),
            "rc": [f for tag in ("INSMOD", "RMMOD") for f in guest.marked(con, tag) if f[-1] != "rc=0"],
            "aff": {name: lines for (t, name), lines in con["blocks"].items() if t == "AFF"},
            "smoke": {f[0]: tuple(int(x.split("=")[1]) for x in f[1:3]) for f in guest.marked(con, "SMOKE")},
            "times": guest.load_times(con["dmesg"]), "dmesg": con["dmesg"],
            "unjudged": guest.unjudged(con), "taint": con["taint"]}


def judge_boots(boots, fails):
    """The checks every boot must pass; returns the listings, load times and
    smoke counts by KERNEL/CASE."""
    aff, times, smoke = {}, collections.defaultdict(list), {}
    for b in boots:
        where = f"{b['dir']} ({b['kernel']})"
        if b["unjudged"]:
            fails.append(f"{where}: {b['unjudged']}")
        fails += [f"{where}: {' '.join(f)}" for f in b["rc"]]
        if not b["warn"]:
            fails += [f"{where}: dmesg: {x}" for x in guest.bad_lines(b["dmesg"])]
            if b["taint"] != "0":
                fails.append(f"{where}: kernel tainted ({b['taint']})")
        for case, lines in b["aff"].items():
            key = f"{b['kernel']}/{case}"
            if key in aff and sorted(aff[key]) != sorted(lines):
                fails.append(f"{where}: {key} listed differently than in an earlier boot")
            aff.setdefault(key, lines)
        for case, (n, e) in b["smoke"].items():
            key = f"{b['kernel']}/{case}"
            smoke.setdefault(key, (n, e))
            if not b["warn"] and (n == 0 or n != e):
                fails.append(f"{where}: {key}: smoke test filtered {n} records, enabled {e}")
        for case, ms in b["times"].items():
            times[f"{b['kernel']}/{case}"].extend(ms)
    return aff, times, smoke


def by_names(lines, ref, nm):
    """stripped against the reference's listing: (ok, what it means, failures)."""
    v, i = guest.split_lines(lines)
    rv, _ = guest.split_lines(ref)
    addr = {f[2]: int(f[0], 16) for f in (x.split() for x in nm.read_text().splitlines()) if len(f) == 3}
    known, names = {x.split()[0] for x in rv}, {x.split()[0] for x in v}
    aliases = {x for x in names - known if x in addr and any(addr.get(k) == addr[x] for k in known)}
    strangers = sorted(names - known - aliases)
    return (not i and not strangers and sum(v.values()) < sum(rv.values()),
            "0 invalid, fewer lines, each name one of the reference's or an alias of one"
            + (f" ({', '.join(sorted(aliases))})" if aliases else ""),
            [f"series/stripped-kvm: names neither the reference's nor aliases: {strangers}"] if strangers else [])


def judge_lines(aff, stock, zeroed, nm, fails, warned):
    """The listing rows: (case, lines, invalid, expected, holds)."""
    ref_key = "stock/unchecked-kvm" if stock else "broken/unchecked-kvm"
    funcs = collections.Counter(f[2] for f in (x.split() for x in nm.read_text().splitlines())
                                if len(f) == 3 and f[1] in "tTwW")
    def n_dead(lines):   # invalid lines (FTRACE_MCOUNT_MAX_OFFSET checks), else second lines
        v, i = guest.split_lines(lines)
        return sum(i.values()) + sum(guest.listed_twice(v, funcs)[0].values())
    dead = {k: n_dead(aff.get(k, [])) for k in (ref_key, "broken/unchecked-kvm")}
    rows = []
    base = aff.get(ref_key)
    if base is None:
        fails.append(f"{ref_key}: no available_filter_functions listing")
        return rows, dead
    bv, bi = guest.split_lines(base)
    why = guest.unexplained(bi, guest.listed_twice(bv, funcs)[0], zeroed)
    if not dead[ref_key]:
        fails.append(f"{ref_key}: no dead lines, so the comparison proves nothing")
    elif why:
        fails.append(f"{ref_key}: {why}")
    rows.append((ref_key, len(base), sum(bi.values()), "dead lines = the tool's zeroed entries", bool(dead[ref_key]) and not why))
    cases = ([("stock/processed-kvm", ref_key)] if stock else []) + \
        [(f"series/{f}", f"stock/{f}" if stock else ref_key) for f in FORMS]
    for key, against in cases:
        lines, ref = aff.get(key), aff.get(against)
        if lines is None or ref is None:
            fails.append(f"{key}: no listing for it or for {against}")
            continue
        v, i = guest.split_lines(lines)
        if key == "series/stripped-kvm" and not (stock and bi):
            ok, expect, why = by_names(lines, ref, nm)
            fails += why
        else:
            rv, d = guest.split_lines(ref)[0], None
            # Stock keeps a record up to its max offset past a symbol, and lists
            # it as a second line of that name: a dead body, or in stripped a
            # static function whose symbol is gone; the series keeps neither.
            rv -= guest.listed_twice(rv, funcs)[0]
            if not key.endswith("/stripped-kvm"):   # stripped lacks the static functions' symbols NM counts
                d, twice = guest.listed_twice(v, funcs)
                fails += [f"{key}: {t}" for t in twice]
            ok = not i and not d and v == rv
            expect = f"0 invalid, every other line {against}'s less its dead second lines"
        if not ok:
            fails.append(f"{key}: lines are not {expect} ({len(lines)} lines, {sum(i.values())} invalid)")
        rows.append((key, len(lines), sum(i.values()), expect, ok))
    if not (dead["broken/unchecked-kvm"] or warned):
        fails.append("negative control: the broken pass listed no dead record and raised no WARN")
    return rows, dead


def tool_report(path):
    """The tool's one --format=json object for kvm.ko."""
    reps = [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]
    if len(reps) != 1 or reps[0]["status"] != "changed":
        sys.exit(f"{path}: expected one changed module, got {[r['status'] for r in reps]}")
    return reps[0]


def summary(rep):
    return (f"{rep['weak']} of {rep['entries']} entries weak, neutralised by {rep['neutraliser']} "
            f"[{rep['arch']}, {rep['section']}, {rep['rule']} {rep['max_offset']}]")


def main():
    if sys.argv[1] == "summary":
        return print(summary(tool_report(sys.argv[2])))
    out, tool, nm = Path(sys.argv[1]), tool_report(sys.argv[2]), Path(sys.argv[3])
    boots = [parse(Path(d)) for d in sys.argv[4:]]
    fails = []
    aff, times, smoke = judge_boots(boots, fails)
    warns = [x.strip() for b in boots if b["warn"] for x in b["dmesg"] if "WARNING:" in x]
    stock = any(b["kernel"] == "stock" for b in boots)
    zeroed = [(f["symbol"], f["distance"]) for f in tool["findings"] if f["verdict"] == "weak"]
    rows, dead = judge_lines(aff, stock, zeroed, nm, fails, bool(warns))
    report = ["| kernel / kvm.ko | lines | invalid | expected | holds |", "|---|---|---|---|---|"]
    report += [f"| {k} | {n} | {inv} | {e} | {'yes' if ok else 'NO'} |" for k, n, inv, e, ok in rows]
    report += ["", "| kernel / kvm.ko | loads | median ms | IQR ms | min-max ms |", "|---|---|---|---|---|"]
    for key in sorted(times):
        med, q1, q3, lo, hi = guest.summary(times[key])
        report.append(f"| {key} | {len(times[key])} | {med:.1f} | {q1:.1f}-{q3:.1f} | {lo:.1f}-{hi:.1f} |")
    for form in ("unchecked-kvm", "processed-kvm") if stock and rows and rows[0][2] else ():
        b_ms, s_ms = times.get(f"stock/{form}", []), times.get(f"series/{form}", [])
        if not (b_ms and s_ms):
            fails.append(f"{form}: no timed loads on one of the kernels")
            continue
        b, s = statistics.median(b_ms), statistics.median(s_ms)
        report += ["", f"Load time of {form}.ko, stock -> series kernel: median {b:.1f} ms -> {s:.1f} ms "
                   f"({b / s:.2f}x faster, {b - s:.1f} ms saved per load)."]
        if not s < b:
            fails.append(f"series/{form} median {s:.1f} ms is not below stock's {b:.1f} ms")
        for k, ms in ((f"stock/{form}", b_ms), (f"series/{form}", s_ms)):
            if len(ms) < 30:
                fails.append(f"{k}: only {len(ms)} timed loads (want >= 30)")
    report += ["", f"{len(boots)} boots; smoke test (filtered = enabled records): " +
               ", ".join(f"{k} {n}" for k, (n, _) in sorted(smoke.items())),
               f"tool zeroed {len(zeroed)} entries at distances {sorted(d for _, d in zeroed)}",
               f"negative control (broken pass): {dead['broken/unchecked-kvm']} dead lines"
               + (f"; WARN: {warns[0]}" if warns else "; no WARN")]
    return guest.verdict(out, "\n".join(report) + "\n", fails, "kernel-e2e")


if __name__ == "__main__":
    sys.exit(main())

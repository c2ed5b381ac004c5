#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge the kernel e2e boots (scripts/kernel-e2e.sh) and report.

  report.py OUT.md TOOL-V.LOG NM BOOT_DIR...

Each BOOT_DIR holds console.log from one boot of scripts/guest/run.sh with
payload loads.sh and a file `kernel` naming the kernel (stock or series);
the one with a file `expect-warn` is the negative control: kvm.ko with a
tag forged to match its counts (nothing zeroed) in the series kernel.
Cases are named KERNEL/MODULE.  TOOL-V.LOG is the tool's -v stderr on the
unchecked kvm.ko (the distance of each entry it zeroed), NM is `nm` of it.

The baseline ("before") is stock/stock-kvm where a stock kernel was built
(x86_64), else series/forged-kvm (ppc64le: the kernel trusts the forged
tag, skips the load-time pass and keeps a record for every weak location).
What must hold:

  * every insmod and rmmod succeeded in every boot; no boot but the
    negative control shows WARNING, BUG, Oops, a call trace or an ftrace bug
    in dmesg, and those kernels stayed untainted;
  * the baseline has invalid lines (else the proof would be vacuous); with
    the forged baseline, their distances are one for one the entries the
    tool zeroed;
  * series/tagged-kvm (the tag skips the load-time pass) and
    series/unchecked-kvm (the kernel zeroes at load time), and
    stock/tagged-kvm where built: 0 invalid lines, every other line exactly
    the baseline's;
  * series/stripped-kvm (its tag is stale, so the kernel must fall back to
    the load-time pass): 0 invalid lines and fewer lines than the
    baseline's valid ones, since its static functions lost their symbols.
    Against stock: each line one of stock's valid lines.  Against forged
    (ppc64le): each name one forged lists, or an alias of one (same address
    in NM: init_module for the static kvmppc_book3s_init); names, not lines,
    since a static function that starts at most FTRACE_MCOUNT_MAX_OFFSET
    (16) bytes after a surviving symbol keeps its record under that name,
    which can then appear twice;
  * the ftrace smoke test enabled every filtered kvm record in every case,
    and every case was listed the same way in every boot;
  * against stock: tagged and unchecked load faster (median) than the
    baseline, over at least 30 timed loads each;
  * negative control: the forged kvm.ko makes the series kernel WARN, or
    the boots could not tell that a valid tag really skips the pass.

Prints the table and writes it to OUT.md; exits 1 if anything fails.
"""
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
import guest  # noqa: E402
from zwm_e2e import zeroed_distances  # noqa: E402


def parse(boot):
    con = guest.read_console(boot)
    return {"kernel": (boot / "kernel").read_text().strip(), "dir": boot,
            "warn": (boot / "expect-warn").exists(),
            "rc": [f for tag in ("INSMOD", "RMMOD") for f in guest.marked(con, tag) if f[-1] != "rc=0"],
            "aff": {name: lines for (t, name), lines in con["blocks"].items() if t == "AFF"},
            "smoke": {f[0]: tuple(int(x.split("=")[1]) for x in f[1:3]) for f in guest.marked(con, "SMOKE")},
            "times": guest.load_times(con["dmesg"]), "dmesg": con["dmesg"],
            "end": con["end"], "taint": con["taint"]}


def judge_boots(boots, fails):
    """The checks every boot must pass; returns the listings, load times and
    smoke counts by KERNEL/CASE."""
    aff, times, smoke = {}, collections.defaultdict(list), {}
    for b in boots:
        where = f"{b['dir']} ({b['kernel']})"
        if not b["end"]:
            fails.append(f"{where}: the guest did not finish")
        fails += [f"{where}: {' '.join(f)}" for f in b["rc"]]
        if b["warn"]:
            continue
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
            if n == 0 or n != e:
                fails.append(f"{where}: {key}: smoke test filtered {n} records, enabled {e}")
        for case, ms in b["times"].items():
            times[f"{b['kernel']}/{case}"].extend(ms)
    return aff, times, smoke


def stripped_ok(lines, base, nm):
    """Whether the stripped module's lines are what a stale tag must give,
    and what that means here."""
    v, i = guest.split_lines(lines)
    bv, _ = guest.split_lines(base["lines"])
    if base["key"].startswith("stock/"):
        return (not i and not (collections.Counter(lines) - bv) and len(lines) < sum(bv.values()),
                "0 invalid, fewer lines, each one of stock/stock-kvm's valid lines", [])
    addr = {f[2]: int(f[0], 16) for f in (x.split() for x in nm.read_text().splitlines()) if len(f) == 3}
    known, names = {x.split()[0] for x in bv}, {x.split()[0] for x in v}
    aliases = {x for x in names - known if x in addr and any(addr.get(k) == addr[x] for k in known)}
    strangers = sorted(names - known - aliases)
    return (not i and not strangers and sum(v.values()) < sum(bv.values()),
            "0 invalid, fewer lines, each name one of forged's or an alias of one"
            + (f" ({', '.join(sorted(aliases))})" if aliases else ""),
            [f"series/stripped-kvm: names neither listed by forged nor aliases: {strangers}"] if strangers else [])


def main():
    out, tool_log, nm = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    boots = [parse(Path(d)) for d in sys.argv[4:]]
    fails, control = [], []
    aff, times, smoke = judge_boots(boots, fails)
    negative = [b for b in boots if b["warn"]]
    for b in negative:
        warns = [x.strip() for x in b["dmesg"] if "WARNING:" in x]
        if warns:
            control.append(f"negative control ({b['dir']}): the forged tag made the series kernel WARN: {warns[0]}")
        else:
            fails.append(f"negative control ({b['dir']}): kvm.ko with a forged mcount= tag raised no WARN")
    kernels = {b["kernel"] for b in boots if not b["warn"]}
    zeroed = collections.Counter(zeroed_distances(tool_log))
    if "stock" in kernels:
        base = {"key": "stock/stock-kvm", "lines": aff.get("stock/stock-kvm")}
        want = ["stock/tagged-kvm", "series/tagged-kvm", "series/unchecked-kvm", "series/stripped-kvm"]
    else:
        base = {"key": "series/forged-kvm", "lines": negative[0]["aff"].get("forged-kvm") if negative else None}
        want = ["series/tagged-kvm", "series/unchecked-kvm", "series/stripped-kvm"]
    rows = []
    for key in [base["key"]] + want:
        lines = base["lines"] if key == base["key"] else aff.get(key)
        if lines is None:
            fails.append(f"{key}: no available_filter_functions listing")
            continue
        if base["lines"] is None:
            continue
        v, i = guest.split_lines(lines)
        bv, bi = guest.split_lines(base["lines"])
        if key == base["key"]:
            ok, expect = bool(bi), "the baseline, with invalid lines"
            if not bi:
                fails.append(f"{key}: no invalid lines, so the comparison proves nothing")
            if key == "series/forged-kvm":
                ok = ok and bi == zeroed and bool(negative[0]["dmesg"]) and bool(control)
                expect = "WARN; invalid lines = the tool's zeroed entries"
                if bi != zeroed:
                    fails.append(f"forged: invalid distances {sorted(bi.elements())} are not the tool's "
                                 f"zeroed {sorted(zeroed.elements())}")
        elif key == "series/stripped-kvm":
            ok, expect, why = stripped_ok(lines, base, nm)
            fails += why
        else:
            ok = not i and v == bv
            expect = f"0 invalid, every other line identical to {base['key']}'s"
        if not ok and key != base["key"]:
            fails.append(f"{key}: lines are not {expect} ({len(lines)} lines, {sum(i.values())} invalid)")
        rows.append((key, len(lines), sum(i.values()), expect, ok))

    report = ["| kernel / kvm.ko | lines | invalid | expected | holds |", "|---|---|---|---|---|"]
    report += [f"| {k} | {n} | {inv} | {e} | {'yes' if ok else 'NO'} |" for k, n, inv, e, ok in rows]
    report += ["", "| kernel / kvm.ko | loads | median ms | IQR ms | min-max ms |", "|---|---|---|---|---|"]
    for b in negative:
        times.setdefault("series/forged-kvm", []).extend(b["times"].get("forged-kvm", []))
    for key in [base["key"]] + want:
        if not times.get(key):
            if key != "series/forged-kvm":
                fails.append(f"{key}: no timed loads")
            continue
        med, q1, q3, lo, hi = guest.summary(times[key])
        report.append(f"| {key} | {len(times[key])} | {med:.1f} | {q1:.1f}-{q3:.1f} | {lo:.1f}-{hi:.1f} |")
    if base["key"] == "stock/stock-kvm":
        for key in ("series/tagged-kvm", "series/unchecked-kvm"):
            if not (times.get(base["key"]) and times.get(key)):
                continue
            b, s = statistics.median(times[base["key"]]), statistics.median(times[key])
            report += ["", f"Load time, stock kernel + stock kvm.ko -> {key.replace('/', ' kernel + ')}.ko: "
                       f"median {b:.1f} ms -> {s:.1f} ms ({b / s:.2f}x faster, {b - s:.1f} ms saved per load)."]
            if not s < b:
                fails.append(f"{key} median {s:.1f} ms is not below {base['key']} {b:.1f} ms")
            for k in (base["key"], key):
                if len(times[k]) < 30:
                    fails.append(f"{k}: only {len(times[k])} timed loads (want >= 30)")
    report += ["", f"{len(boots)} boots; smoke test (filtered = enabled records): " +
               ", ".join(f"{k} {n}" for k, (n, _) in sorted(smoke.items())),
               f"tool zeroed {sum(zeroed.values())} entries at distances {sorted(zeroed.elements())}"]
    report += [""] + control
    return guest.verdict(out, "\n".join(report) + "\n", fails, "kernel-e2e")


if __name__ == "__main__":
    sys.exit(main())

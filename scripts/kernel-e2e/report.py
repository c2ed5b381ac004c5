#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge the kernel e2e boots (scripts/kernel-e2e.sh) and report.

  report.py OUT.md BOOT_DIR...

Each BOOT_DIR holds console.log from one boot of scripts/kernel-e2e/init and
a file `kernel` naming the kernel (stock or series).  Cases are named
KERNEL/MODULE: stock/stock-kvm, stock/tagged-kvm, series/tagged-kvm,
series/unchecked-kvm and series/stripped-kvm.  What must hold:

  * every insmod and rmmod succeeded, no boot shows WARNING, BUG, Oops or an
    ftrace bug in dmesg, and the kernels stayed untainted;
  * stock kernel, stock kvm.ko: the baseline; it has invalid lines (else the
    proof below would be vacuous);
  * series kernel, tagged kvm.ko (the tag skips the load-time pass): 0
    invalid lines, every other line exactly the baseline's, and a lower
    median load time than the baseline;
  * series kernel, unchecked kvm.ko (built without the tool: the kernel
    zeroes its weak locations at load time): the same lines, and a lower
    median load time than the baseline too;
  * series kernel, tagged-then-stripped kvm.ko (its tag is stale, so the
    kernel must fall back to the load-time pass): 0 invalid lines, every
    line one of the baseline's valid lines, and fewer of them, since its
    static functions lost their symbols; trusting the stale tag would have
    listed those as invalid and WARNed;
  * stock kernel, tagged kvm.ko: loads and shows what series/tagged shows;
  * the ftrace smoke test enabled every filtered kvm record in every case;
  * every case was loaded and listed the same way in every boot;
  * negative control: a BOOT_DIR with a file `expect-warn` loads kvm.ko
    with a tag forged to match its counts (nothing zeroed) into the series
    kernel; it must WARN, or the boots above could not tell that a valid
    tag really skips the load-time pass.

Prints the table and writes it to OUT.md; exits 1 if anything fails.
"""
import collections
import re
import statistics
import sys
from pathlib import Path

INVALID = "__ftrace_invalid_address___"
BAD = ("WARNING:", "BUG:", "Oops", "ftrace bug", "ftrace failed", "Call Trace")
# The optional [ T1] is the caller id that PRINTK_CALLER adds (ppc64le's
# guest config has it).
STAMP = re.compile(r"^\[\s*(\d+\.\d+)\](?:\[\s*\S+\])? zwm-load (\S+) (\d+) (start|end)$")


def parse(boot):
    kernel = (boot / "kernel").read_text().strip()
    text = (boot / "console.log").read_text(errors="replace").replace("\r", "")
    lines = text.split("\n")
    res = {"kernel": kernel, "insmod": [], "rmmod": [], "aff": {}, "smoke": {},
           "times": collections.defaultdict(list), "dmesg": [], "end": False,
           "taint": None}
    aff = None
    in_dmesg = False
    starts = {}
    for line in lines:
        if line.startswith("@@ZWM AFF-BEGIN "):
            aff = line.split()[2]
            res["aff"][aff] = []
        elif line.startswith("@@ZWM AFF-END"):
            aff = None
        elif aff is not None:
            res["aff"][aff].append(line)
        elif line.startswith("@@ZWM INSMOD"):
            res["insmod"].append(line)
        elif line.startswith("@@ZWM RMMOD"):
            res["rmmod"].append(line)
        elif line.startswith("@@ZWM SMOKE"):
            _, _, case, filt, enab = line.split()
            res["smoke"][case] = (int(filt.split("=")[1]), int(enab.split("=")[1]))
        elif line.startswith("@@ZWM TAINT"):
            res["taint"] = line.split()[2]
        elif line == "@@ZWM DMESG-BEGIN":
            in_dmesg = True
        elif line == "@@ZWM DMESG-END":
            in_dmesg = False
        elif line == "@@ZWM END":
            res["end"] = True
        elif in_dmesg:
            res["dmesg"].append(line)
            m = STAMP.match(line)
            if m:
                t, case, i, what = float(m[1]), m[2], m[3], m[4]
                if what == "start":
                    starts[(case, i)] = t
                elif (case, i) in starts:
                    res["times"][case].append(1000 * (t - starts.pop((case, i))))
    return res


def summary(ms):
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return statistics.median(ms), q[0], q[2], min(ms), max(ms)


def main():
    out = Path(sys.argv[1])
    dirs = [d for d in sys.argv[2:] if not (Path(d) / "expect-warn").exists()]
    negative = [d for d in sys.argv[2:] if (Path(d) / "expect-warn").exists()]
    boots = [parse(Path(d)) for d in dirs]
    fails = []
    control = []
    for d in negative:
        warns = [x.strip() for x in parse(Path(d))["dmesg"] if "WARNING:" in x]
        if warns:
            control.append(f"negative control ({d}): the forged tag made the series kernel WARN: {warns[0]}")
        else:
            fails.append(f"negative control ({d}): kvm.ko with a forged mcount= tag raised no WARN")
    aff = {}
    times = collections.defaultdict(list)
    smoke = {}
    for b, d in zip(boots, dirs):
        where = f"{d} ({b['kernel']})"
        if not b["end"]:
            fails.append(f"{where}: the guest did not finish")
        for line in b["insmod"] + b["rmmod"]:
            if not line.endswith("rc=0"):
                fails.append(f"{where}: {line}")
        for line in b["dmesg"]:
            if any(x in line for x in BAD):
                fails.append(f"{where}: dmesg: {line.strip()}")
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

    base_key, tagged_key, unchecked_key = "stock/stock-kvm", "series/tagged-kvm", "series/unchecked-kvm"
    stripped_key = "series/stripped-kvm"
    want = [base_key, "stock/tagged-kvm", tagged_key, unchecked_key, stripped_key]
    for key in want:
        if key not in aff:
            fails.append(f"{key}: no available_filter_functions listing")
        if len(times.get(key, [])) == 0:
            fails.append(f"{key}: no timed loads")

    def invalid(lines):
        return [x for x in lines if x.startswith(INVALID)]

    def valid(lines):
        return collections.Counter(x for x in lines if not x.startswith(INVALID))

    rows = []
    if all(k in aff for k in want):
        base = aff[base_key]
        if not invalid(base):
            fails.append(f"{base_key}: no invalid lines, so the comparison proves nothing")
        for key in want:
            lines = aff[key]
            if key == base_key:
                ok = True
                expect = "the baseline"
            elif key == stripped_key:
                ok = (not invalid(lines) and not (collections.Counter(lines) - valid(base))
                      and len(lines) < sum(valid(base).values()))
                expect = "0 invalid, fewer lines, each one of stock/stock-kvm's valid lines"
            else:
                ok = not invalid(lines) and valid(lines) == valid(base)
                expect = "0 invalid, every other line identical to stock/stock-kvm"
            if not ok:
                fails.append(f"{key}: lines are not {expect} "
                             f"({len(lines)} lines, {len(invalid(lines))} invalid)")
            rows.append((key, len(lines), len(invalid(lines)), expect, ok))

    report = ["| kernel / kvm.ko | lines | invalid | expected | holds |",
              "|---|---|---|---|---|"]
    for key, n, inv, expect, ok in rows:
        report.append(f"| {key} | {n} | {inv} | {expect} | {'yes' if ok else 'NO'} |")
    report += ["", "| kernel / kvm.ko | loads | median ms | IQR ms | min-max ms |",
               "|---|---|---|---|---|"]
    for key in want:
        ms = times.get(key, [])
        if ms:
            med, q1, q3, lo, hi = summary(ms)
            report.append(f"| {key} | {len(ms)} | {med:.1f} | {q1:.1f}-{q3:.1f} | {lo:.1f}-{hi:.1f} |")
    for key in (tagged_key, unchecked_key):
        if not (times.get(base_key) and times.get(key)):
            continue
        b, s = statistics.median(times[base_key]), statistics.median(times[key])
        report += ["", f"Load time, stock kernel + stock kvm.ko -> {key.replace('/', ' kernel + ')}.ko: "
                   f"median {b:.1f} ms -> {s:.1f} ms ({b / s:.2f}x faster, {b - s:.1f} ms saved per load)."]
        if not s < b:
            fails.append(f"{key} median {s:.1f} ms is not below {base_key} {b:.1f} ms")
        for k in (base_key, key):
            if len(times[k]) < 30:
                fails.append(f"{k}: only {len(times[k])} timed loads (want >= 30)")
    report += ["", f"{len(boots)} boots; smoke test (filtered = enabled records): " +
               ", ".join(f"{k} {n}" for k, (n, _) in sorted(smoke.items()))]
    report += [""] + control
    text = "\n".join(report) + "\n"
    out.write_text(text + ("".join(f"\nFAIL: {f}" for f in fails) + "\n" if fails else ""))
    print(text)
    for f in fails:
        print(f"FAIL: {f}")
    print("kernel-e2e: " + ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge the ppc64le kernel e2e boots (scripts/kernel-e2e-ppc64le.sh).

  report-ppc64le.py OUT.md TOOL-V.LOG NM BOOT_DIR NEGATIVE_DIR

BOOT_DIR holds console.log of one boot of the series kernel that loaded
series/tagged-kvm, series/unchecked-kvm and series/stripped-kvm (parsed as
scripts/kernel-e2e/report.py parses them); NEGATIVE_DIR the boot that loaded
series/forged-kvm (the unchecked module with a tag forged to match its
counts, nothing zeroed).  TOOL-V.LOG is the tool's -v stderr on the
unchecked module, which names the distance of each entry it zeroed; NM is
`nm` of the unchecked module (address, type, name).

No stock kernel is built, so the forged boot is the baseline ("before"):
the kernel trusts its tag, skips the load-time pass and keeps a record for
every weak location.  What must hold:

  * forged: the kernel WARNs (the negative control: a valid tag really
    skips the pass), and lists __ftrace_invalid_address___N lines whose
    distances N are, one for one, the entries the tool zeroed (so the
    baseline is not vacuous and the tool zeroed exactly what the kernel
    cannot name);
  * tagged (the tag skips the load-time pass) and unchecked (the kernel
    zeroes at load time): 0 invalid lines and every other line exactly the
    forged boot's valid lines;
  * stripped (stale tag, so the kernel must fall back to the load-time
    pass): 0 invalid lines and fewer of them, since its static functions
    lost their symbols, and each name it lists is one the forged boot
    lists, or an alias of one (same address in NM: init_module for the
    static kvmppc_book3s_init).  Names, not lines: a static function that
    starts at most FTRACE_MCOUNT_MAX_OFFSET (16) bytes after a symbol that
    survives keeps its record under that symbol's name, which can then
    appear twice (__probestub_* stubs are one instruction);
  * in the main boot: every insmod and rmmod succeeded, no WARNING, BUG,
    Oops, call trace or ftrace bug in dmesg, kernel untainted, and the
    ftrace smoke test enabled every filtered kvm record of every case.

Prints the table and writes it to OUT.md; exits 1 if anything fails.
"""
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
from report import BAD, parse, summary  # noqa: E402
from zwm_e2e import split_lines, zeroed_distances  # noqa: E402


def main():
    out, tool_log, nm, main_dir, neg_dir = map(Path, sys.argv[1:6])
    addr = {}
    for line in nm.read_text().splitlines():
        f = line.split()
        if len(f) == 3:
            addr[f[2]] = int(f[0], 16)
    fails = []
    b, n = parse(main_dir), parse(neg_dir)
    for boot, d in ((b, main_dir), (n, neg_dir)):
        if not boot["end"]:
            fails.append(f"{d}: the guest did not finish")
        for line in boot["insmod"] + boot["rmmod"]:
            if not line.endswith("rc=0"):
                fails.append(f"{d}: {line}")
    for line in b["dmesg"]:
        if any(x in line for x in BAD):
            fails.append(f"{main_dir}: dmesg: {line.strip()}")
    if b["taint"] != "0":
        fails.append(f"{main_dir}: kernel tainted ({b['taint']})")
    for case, (filt, enab) in b["smoke"].items():
        if filt == 0 or filt != enab:
            fails.append(f"{case}: smoke test filtered {filt} records, enabled {enab}")

    warns = [x.strip() for x in n["dmesg"] if "WARNING:" in x]
    control = []
    if warns:
        control.append(f"negative control: the forged tag made the series kernel WARN: {warns[0]}")
    else:
        fails.append("negative control: kvm.ko with a forged mcount= tag raised no WARN")

    zeroed = collections.Counter(zeroed_distances(tool_log))
    base = n["aff"].get("forged-kvm", [])
    bv, bi = split_lines(base)
    if not bi:
        fails.append("forged: no invalid lines, so the comparisons prove nothing")
    if bi != zeroed:
        fails.append(f"forged: invalid distances {sorted(bi.elements())} are not the tool's "
                     f"zeroed {sorted(zeroed.elements())}")
    rows = [("forged (baseline, pass skipped)", len(base), sum(bi.values()),
             "WARN; invalid lines = the tool's zeroed entries", bool(warns) and bi == zeroed and bool(bi))]
    for case in ("tagged-kvm", "unchecked-kvm", "stripped-kvm"):
        lines = b["aff"].get(case)
        if lines is None:
            fails.append(f"{case}: no available_filter_functions listing")
            continue
        v, i = split_lines(lines)
        if case == "stripped-kvm":
            known = {x.split()[0] for x in bv}
            names = {x.split()[0] for x in v}
            aliases = {x for x in names - known
                       if x in addr and any(addr.get(k) == addr[x] for k in known)}
            ok = not i and not (names - known - aliases) and sum(v.values()) < sum(bv.values())
            expect = ("0 invalid, fewer lines, each name one of forged's or an alias of one"
                      + (f" ({', '.join(sorted(aliases))})" if aliases else ""))
            if names - known - aliases:
                fails.append(f"{case}: names neither listed by forged nor aliases: {sorted(names - known - aliases)}")
        else:
            ok = not i and v == bv
            expect = "0 invalid, every other line identical to forged's"
        if not ok:
            fails.append(f"{case}: lines are not {expect} ({len(lines)} lines, {sum(i.values())} invalid)")
        rows.append((case, len(lines), sum(i.values()), expect, ok))

    report = ["| series kernel / kvm.ko | lines | invalid | expected | holds |",
              "|---|---|---|---|---|"]
    for case, count, inv, expect, ok in rows:
        report.append(f"| {case} | {count} | {inv} | {expect} | {'yes' if ok else 'NO'} |")
    report += ["", "| kvm.ko | loads | median ms | IQR ms | min-max ms |", "|---|---|---|---|---|"]
    for boot in (b, n):
        for case, ms in boot["times"].items():
            med, q1, q3, lo, hi = summary(ms)
            report.append(f"| {case} | {len(ms)} | {med:.1f} | {q1:.1f}-{q3:.1f} | {lo:.1f}-{hi:.1f} |")
    report += ["", "smoke test (filtered = enabled records): " +
               ", ".join(f"{k} {f}" for k, (f, _) in sorted(b["smoke"].items())),
               f"tool zeroed {sum(zeroed.values())} entries at distances {sorted(zeroed.elements())}",
               ""] + control
    text = "\n".join(report) + "\n"
    out.write_text(text + ("".join(f"\nFAIL: {f}" for f in fails) + "\n" if fails else ""))
    print(text)
    for f in fails:
        print(f"FAIL: {f}")
    print("kernel-e2e-ppc64le: " + ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge and tabulate the kernel-bench boots (scripts/kernel-bench.sh).

  report.py WORK SIZES.TSV BOOT_DIR...

Each BOOT_DIR holds console.log from one boot of scripts/guest/run.sh
with payload loads.sh
and a file `kernel` naming the kernel (stock, v2, ours, floor; v2 may be
absent).  For
every kernel and case it reports the load time (median and interquartile
range over every load of every boot, from printk timestamps), what ftrace
itself cost each load (the "ftrace-bench:" lines of time.patch:
ftrace_module_init() plus ftrace_module_enable()), the ratio to
stock and to floor, the module's lines of available_filter_functions (how
many, how many invalid, and whether its valid lines are exactly stock's
valid lines for the same module), and whether the boot WARNed or tainted.
Writes WORK/report.md and WORK/curve.svg (load time against functions, one
line per kernel, for the unchecked and the processed generated modules).

Expected, and checked (exit 1 otherwise): every insmod and rmmod succeeded;
stock lists invalid lines for kvm-unchecked (else nothing is measured); ours
and v2 (the posted v2, which drops the weak locations too) list 0 invalid
lines for every case, with valid lines equal to stock's; neither v2 nor
ours WARNs; floor, which skips all weak handling,
lists the weak records (an invalid line or a WARN) for kvm-unchecked: the
negative control that the cases really contain weak locations.
"""
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

KERNELS = ["stock", "v2", "ours", "floor"]
REQUIRED = ["stock", "ours", "floor"]
COLORS = {"stock": "#d62728", "v2": "#2ca02c", "ours": "#1f77b4", "floor": "#7f7f7f"}


BENCH = re.compile(r"ftrace-bench: \S+ init_ns=(\d+) enable_ns=(\d+)")


def ftrace_ns(dmesg):
    """{CASE: [ns...]}: what time.patch says ftrace cost each load
    (init + enable), for the case whose "zwm-load CASE I start" came last."""
    out, case = collections.defaultdict(list), None
    for ln in dmesg:
        m = guest.STAMP.match(ln)
        if m:
            case = m[2] if m[4] == "start" else None
            continue
        b = BENCH.search(ln)
        if b and case:
            out[case].append(int(b[1]) + int(b[2]))
    return out


def parse(boot):
    con = guest.read_console(boot)
    kv = {f[0]: dict(x.split("=", 1) for x in f[1:]) for f in guest.marked(con, "AFF")}
    return {"kernel": (boot / "kernel").read_text().strip(), "times": guest.load_times(con["dmesg"]),
            "aff": {c: (int(a["lines"]), int(a["invalid"]), a["valid-md5"]) for c, a in kv.items()},
            "bad": guest.bad_lines(con["dmesg"]), "ftrace_ns": ftrace_ns(con["dmesg"]),
            "rc": [" ".join(f) for t in ("INSMOD", "RMMOD") for f in guest.marked(con, t) if f[-1] != "rc=0"],
            "taint": con["taint"], "unjudged": guest.unjudged(con)}


def stats(ms):
    return guest.summary(ms)[:3]


def svg(path, sizes, med, kernels):
    """Load time against functions, log-log, one line per kernel."""
    import math
    xs = sorted(sizes)
    pts = [v for k in kernels for kind in ("unchecked", "processed") for n in xs
           if (v := med.get((k, f"gen{n}-{kind}"))) is not None]
    if not xs or not pts:
        return
    W, H, L, R, T, B = 760, 480, 70, 150, 40, 50
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
    ly0, ly1 = math.floor(math.log10(min(pts))), math.ceil(math.log10(max(pts)))
    X = lambda n: L + (math.log10(n) - lx0) / max(lx1 - lx0, 1e-9) * (W - L - R)
    Y = lambda v: H - B - (math.log10(v) - ly0) / max(ly1 - ly0, 1e-9) * (H - T - B)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">Module load time under QEMU/TCG '
           '(median; solid: unchecked module, dashed: processed)</text>']
    for e in range(ly0, ly1 + 1):
        y = Y(10 ** e)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g} ms</text>')
    for n in xs:
        x = X(n)
        out.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">functions in the module '
               '(about 3 symbols each, 1 % weak)</text>')
    for i, k in enumerate(kernels):
        for kind, dash in (("unchecked", ""), ("processed", ' stroke-dasharray="6 4"')):
            p = [(X(n), Y(v)) for n in xs if (v := med.get((k, f"gen{n}-{kind}"))) is not None]
            if len(p) > 1:
                d = " ".join(f"{x:.1f},{y:.1f}" for x, y in p)
                out.append(f'<polyline points="{d}" fill="none" stroke="{COLORS[k]}" stroke-width="2"{dash}/>')
            for x, y in p:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[k]}"/>')
        y = T + 20 + 22 * i
        out.append(f'<line x1="{W - R + 15}" y1="{y}" x2="{W - R + 45}" y2="{y}" stroke="{COLORS[k]}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 52}" y="{y + 4}">{k}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def main():
    work, sizes_tsv, dirs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    boots = [parse(Path(d)) for d in dirs]
    fails, times, aff, warns = [], collections.defaultdict(list), {}, collections.defaultdict(list)
    booted = {b["kernel"] for b in boots}
    fails += [f"{b['kernel']}: not a kernel of the bench" for b in boots if b["kernel"] not in KERNELS]
    fails += [f"no boot of {k}" for k in REQUIRED if k not in booted]
    kernels = [k for k in KERNELS if k in booted]
    fns = collections.defaultdict(list)
    for b, d in zip(boots, dirs):
        k = b["kernel"]
        if b["unjudged"]:
            fails.append(f"{d}: {b['unjudged']}")
        fails += [f"{d}: {x}" for x in b["rc"]]
        warns[k] += b["bad"]
        for case, ms in b["times"].items():
            times[(k, case)] += ms
        for case, ns in b["ftrace_ns"].items():
            fns[(k, case)] += ns
        for case, a in b["aff"].items():
            if (k, case) in aff and aff[(k, case)] != a:
                fails.append(f"{d}: {k}/{case} listed differently than in an earlier boot")
            aff.setdefault((k, case), a)
    listed = {c for _, c in aff}
    if not listed:
        fails.append("no boot listed any case: nothing was measured")
    for case in listed:
        for k in kernels:
            if not times.get((k, case)):
                fails.append(f"{k}/{case}: no timed load")
    cases = sorted({c for _, c in times}, key=lambda c: (not c.startswith("kvm"), int(re.sub(r"\D", "", c) or 0), c))
    med = {key: stats(ms)[0] for key, ms in times.items()}

    for case in cases:
        base = aff.get(("stock", case))
        for k in kernels:
            a = aff.get((k, case))
            if a is None:
                fails.append(f"{k}/{case}: no listing")
                continue
            if k in ("ours", "v2") and base:
                if a[1] or a[2] != base[2]:
                    fails.append(f"{k}/{case}: {a[1]} invalid lines, valid lines "
                                 f"{'equal to' if a[2] == base[2] else 'differ from'} stock's")
    for k in ("v2", "ours"):
        if warns[k]:
            fails.append(f"{k}: {warns[k][0]}")
    if not aff.get(("stock", "kvm-unchecked"), (0, 0))[1]:
        fails.append("stock/kvm-unchecked lists no invalid line: the bench measures nothing")
    fl = aff.get(("floor", "kvm-unchecked"))
    if not (warns["floor"] or (fl and fl[1])):
        fails.append("floor/kvm-unchecked neither WARNed nor listed an invalid line: negative control failed")

    rows = ["| module | kernel | loads | median ms | IQR ms | vs stock | vs floor | ftrace µs (median, IQR; min) "
            "| lines | invalid | valid = stock's |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in cases:
        for k in kernels:
            ms = times.get((k, case))
            if not ms:
                continue
            m, q1, q3 = stats(ms)
            a = aff.get((k, case), (0, 0, ""))
            same = "yes" if a[2] == aff.get(("stock", case), (0, 0, "?"))[2] else "no"
            vs_stock = med[("stock", case)] / m if ("stock", case) in med else float("nan")
            vs_floor = m / med[("floor", case)] if ("floor", case) in med else float("nan")
            ns = fns.get((k, case))
            # The minimum beside the median: on a shared host a TCG guest's
            # clock runs on while it waits for a core, so the least of the
            # loads is the nearest to the pass's own cost.
            f_us = "-" if not ns else "{:.0f} ({:.0f}-{:.0f}; {:.0f})".format(
                *(x / 1000 for x in (*stats(ns), min(ns))))
            rows.append(f"| {case} | {k} | {len(ms)} | {m:.1f} | {q1:.1f}-{q3:.1f} | {vs_stock:.2f}x faster | "
                        f"{100 * (vs_floor - 1):+.1f} % | {f_us} | {a[0]} | {a[1]} | {same} |")
    rows += ["", "WARN / taint per kernel: " + "; ".join(
        f"{k}: {len(warns[k])} bad dmesg lines" + (f" ({warns[k][0]})" if warns[k] else "") for k in kernels)]
    sizes = [int(re.sub(r"\D", "", c)) for c in cases if c.startswith("gen") and c.endswith("-unchecked")]
    svg(work / "curve.svg", sizes, med, kernels)
    header = (work / "header.md").read_text() if (work / "header.md").exists() else ""
    text = header + "\nModule sizes:\n\n```\n" + sizes_tsv.read_text() + "```\n\n" + "\n".join(rows) + "\n"
    return guest.verdict(work / "report.md", text, fails, "kernel-bench")


if __name__ == "__main__":
    sys.exit(main())

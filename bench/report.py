#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Render scripts/bench.sh results (hyperfine JSON, TSV) as one table of ratios.

usage: report.py RESULTS_DIR
       report.py --doc DOC TABLE   put TABLE (results/table.txt) into DOC between its marker lines,
                                   less the in-process phases and the profile (in results/)
"""
import glob
import json
import os
import re
import statistics
import sys

if sys.argv[1] == "--doc":
    doc, table = sys.argv[2], open(sys.argv[3]).read()
    table = re.sub(r"\n== In-process phases.*?\n(?=\n== )", "", table, flags=re.S)
    table = re.sub(r"  inclusive, top functions:\n(    .*\n)*", "", table)
    begin, end = "<!-- written by make bench: begin -->\n", "<!-- written by make bench: end -->\n"
    head, rest = open(doc).read().split(begin)
    tail = rest.split(end)[1]
    with open(doc, "w") as f:
        f.write(f"{head}{begin}```\n{table}```\n{end}{tail}")
    sys.exit(0)

R = sys.argv[1]


def load(name):
    path = os.path.join(R, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def hf(name):
    """hyperfine export -> {command name: (median wall s, spread, mean cpu s)}.

    spread = interquartile range / median. cpu = mean user + system time of
    the command and its children (hyperfine reports only means)."""
    d = load(name)
    out = {}
    for r in (d or {}).get("results", []):
        t = sorted(r["times"])
        med = statistics.median(t)
        q = statistics.quantiles(t, n=4) if len(t) >= 4 else [t[0], med, t[-1]]
        spread = (q[2] - q[0]) / med if med else 0.0
        out[r["command"]] = (med, spread, r["user"] + r["system"])
    return out


def tsv(name):
    path = os.path.join(R, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    head, body = rows[0], rows[1:]
    return [dict(zip(head, r)) for r in body]


def ms(s):
    return f"{s * 1e3:.2f}" if s < 1 else f"{s * 1e3:.0f}"


def cell(v):
    med, spread, cpu = v
    return f"{ms(med)} ±{spread * 50:.0f}% ({ms(cpu)})"


def ratio(a, b):
    """a/b for wall medians, and (cpu) in parentheses."""
    return f"{a[0] / b[0]:.2f} ({a[2] / b[2]:.2f})"


targets = []


def target(name, ok, measured, bound):
    targets.append((name, "info" if ok is None else "met" if ok else "MISSED", measured, bound))


def table(head, rows):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).rjust(w[i]) if i else str(x).ljust(w[i]) for i, x in enumerate(r))
    print(line(head))
    print("  ".join("-" * x for x in w))
    for r in rows:
        print(line(r))


# --- biggest modules --------------------------------------------------------
phases = {os.path.basename(r["file"])[:-3]: r for r in tsv("phases.tsv")}
rows = []
mods = [os.path.basename(p)[4:-5] for p in sorted(glob.glob(os.path.join(R, "mod.*.json")))]
order = ["amdgpu", "i915", "xe", "xfs", "nouveau", "kvm"]
mods.sort(key=lambda m: order.index(m) if m in order else 99)
for m in mods:
    h = hf(f"mod.{m}.json")
    n = hf(f"naive.{m}.json").get("naive")
    with open(os.path.join(R, f"bytes.{m}.txt")) as f:
        need = int(f.read().split()[0])
    p = phases.get(m, {})
    t, rl, c = h["tool"], h["readlimit"], h["cat"]
    r_rl = t[0] / rl[0]
    r_naive = n[0] / t[0] if n else float("nan")
    rows.append([
        m, p.get("symtab", "?"), p.get("entries", "?"), p.get("zeroed", "?"),
        f"{need / 2**20:.2f}",
        cell(t), cell(rl), cell(h["readlimit-text"]), cell(c), f"{ms(n[0])} ({ms(n[2])})" if n else "-",
        ratio(t, rl), f"{r_naive:.0f} ({n[2] / t[2]:.0f})" if n else "-", ratio(c, t),
    ])
    if m == "amdgpu":
        r_rl_cpu = t[2] / rl[2]
        target("amdgpu: tool <= 2x read limit (wall; cpu)", r_rl <= 2 and r_rl_cpu <= 2,
               f"{r_rl:.2f}x; {r_rl_cpu:.2f}x", "<= 2x")
        r_naive_cpu = n[2] / t[2] if n else float("nan")
        target("amdgpu: tool >= 1000x faster than naive (wall; cpu)", r_naive >= 1000 and r_naive_cpu >= 1000,
               f"{r_naive:.0f}x; {r_naive_cpu:.0f}x", ">= 1000x")
print("\n== Biggest modules: whole process, ms: wall median ±half the IQR (mean CPU user+sys) ==")
table(["module", "symtab", "entries", "zeroed", "must-read MiB", "tool", "read limit", "read+text", "cat", "naive",
       "tool/readlimit", "naive/tool", "cat/tool"], rows)
print("  read+text = the read limit plus the page of every callsite's target in .text (what reading the code would add).")
print("  naive = median of 3 runs (1 in quick mode), kernel algorithm; same parsing and plan code.")

# --- phases -----------------------------------------------------------------
if phases:
    print("\n== In-process phases (µs, median of 11 passes; naive search alone, capped at 5 s, * = extrapolated) ==")
    rows = []
    for m in mods:
        p = phases.get(m)
        if not p:
            continue
        tot = sum(float(p[k]) for k in ("parse_us", "extract_us", "sort_us", "layout_us", "decide_us", "plan_us"))
        pct = lambda k: f"{float(p[k]):.0f} ({100 * float(p[k]) / tot:.0f}%)"
        rows.append([m, p["lookup_syms"], pct("parse_us"), pct("extract_us"), pct("sort_us"), pct("layout_us"),
                     pct("decide_us"), pct("plan_us"), f"{tot:.0f}",
                     f"{float(p['naive_decide_us']):.0f}{'*' if p['naive_extrapolated'] == '1' else ''}",
                     f"{float(p['naive_total_us']) / tot:.0f}", p["agree"], p.get("read_us", "-")])
    table(["module", "lookup syms", "parse", "extract", "sort", "layout", "decide", "plan", "sum", "naive search",
           "naive/tool", "same verdicts", "read"], rows)
    print("  read = parse and kept::all_kept, what the tool runs instead of the phases when every entry is kept")
    print("  (- : a module it hands to them); sum and naive/tool are the phases'.")

# --- RSS --------------------------------------------------------------------
rss = {}
path = os.path.join(R, "rss.amdgpu.tsv")
if os.path.exists(path):
    with open(path) as f:
        for l in f:
            k, v = l.rstrip("\n").split("\t", 1)
            rss[k] = v
    need = int(open(os.path.join(R, "bytes.amdgpu.txt")).read().split()[0]) / 1024
    const = int(rss["tool-small"])
    bound = 2 * need + const
    tool = int(rss["tool"])
    print("\n== Peak RSS, amdgpu.ko (KiB, median of 3, /usr/bin/time) ==")
    table(["what", "KiB"], [
        ["tool --check amdgpu.ko", tool],
        ["tool --check on the smallest module (the constant)", const],
        ["bytes the tool must read", f"{need:.0f}"],
        ["bound: 2 x must-read + constant", f"{bound:.0f}"],
        ["read limit", rss["readlimit"]],
        ["read limit + .text at callsites", rss["readlimit-text"]],
        ["cat", rss["cat"]],
    ])
    target("amdgpu: peak RSS < 2x must-read + constant", tool < bound, f"{tool} KiB", f"< {bound:.0f} KiB")

# --- tree -------------------------------------------------------------------
tr = hf("tree.json")
tx = hf("tree-xz.json")
if tr:
    size = int(open(os.path.join(R, "tree-bytes.txt")).read())
    readb = int(open(os.path.join(R, "tree-readbytes.txt")).read())
    j1, j2 = tr["tool-j1"], tr["tool-j2"]
    print(f"\n== Whole tree: {size / 2**20:.0f} MiB of modules, {readb / 2**20:.0f} MiB that the tool must read "
          "(the tool's tree mode, -j N) ==")
    rows = []
    for k in ("tool-j1", "tool-j2", "readlimit-j1", "cat-j1", "cat-j2"):
        if k in tr:
            rows.append([k, cell(tr[k]), ratio(tr[k], j1)])
    for k in ("xz-d-j1", "xz-d-j2"):
        if k in tx:
            rows.append([k, cell(tx[k]), ratio(tx[k], j1)])
    table(["command", "ms wall (cpu)", "/ tool-j1 wall (cpu)"], rows)
    print("  -j2 vs -j1 can only show a speedup when a second core is free: compare the load average above.")
    if "xz-d-j1" in tx and "xz-d-j2" in tx:
        print(f"  control: xz -d -P2 is {tx['xz-d-j1'][0] / tx['xz-d-j2'][0]:.2f}x faster than -P1 on this machine now "
              "(embarrassingly parallel: ~2x when two cores are free).")
    wp = os.path.join(R, "tree-walk.txt")
    if os.path.exists(wp):
        w = re.search(r"([0-9.]+) us", open(wp).read())
        if w:
            f = float(w.group(1)) / 1e6 / j1[0]
            print(f"  serial part: the tree walk (walk::tree) takes {float(w.group(1)) / 1e3:.1f} ms = {100 * f:.0f}% "
                  f"of tool -j1 wall; Amdahl bound for -j2: {1 / (f + (1 - f) / 2):.2f}x.")
    c1 = tr["cat-j1"]
    target("tree: tool -j1 faster than cat -j1 (wall; cpu)", j1[0] < c1[0] and j1[2] < c1[2],
           f"cat/tool = {c1[0] / j1[0]:.2f}; {c1[2] / j1[2]:.2f}", "> 1")
    target("tree: -j2 >= 1.6x faster than -j1", j1[0] / j2[0] >= 1.6,
           f"{j1[0] / j2[0]:.2f}x (cpu -j2/-j1 {j2[2] / j1[2]:.2f})", ">= 1.6x")
    target("tree: tool -j1 / read limit -j1", None, ratio(j1, tr["readlimit-j1"]), "-")
    if "xz-d-j1" in tx:
        target("tree: xz -d -j1 / tool -j1", None, ratio(tx["xz-d-j1"], j1), "-")

# --- synthetic --------------------------------------------------------------
syn = tsv("synth-phases.tsv")
if syn:
    sh = hf("synth-tool.json")
    print("\n== Synthetic scaling (in process, µs; naive capped at 3 s, * = extrapolated linearly from the entries done) ==")
    rows = []
    prev = None
    for p in syn:
        name = os.path.basename(p["file"])[:-3]
        tot = float(p["total_us"])
        nv = float(p["naive_total_us"])
        whole = sh.get(name)
        grow = f"{tot / prev[0]:.1f} / {nv / prev[1]:.0f}" if prev else "-"
        prev = (tot, nv)
        rows.append([name, p["lookup_syms"], p["entries"], p["zeroed"], f"{tot:.0f}",
                     f"{nv:.0f}{'*' if p['naive_extrapolated'] == '1' else ''}", f"{nv / tot:.0f}", grow,
                     f"{ms(whole[0])} ({ms(whole[2])})" if whole else "-", p["agree"]])
    table(["module", "lookup syms", "entries", "zeroed", "tool µs", "naive µs", "naive/tool", "growth x10: tool / naive",
           "tool whole ms (cpu)", "same verdicts"], rows)

# --- instructions -----------------------------------------------------------
# scripts/bench.sh section 0: each module's count against its budget
# (bench/budgets), then amdgpu's beside the read limit's.
path = os.path.join(R, "instructions.tsv")
if os.path.exists(path):
    print("\n== Instructions, tool --check (callgrind, whole process) ==")
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    table(["module", "instructions", "budget", "within"],
          [[n, f"{int(c):,}" if c.isdigit() else c, b if b == "-" else f"{int(b):,}",
            "-" if b == "-" or not c.isdigit() else ("yes" if int(c) <= int(b) else "NO")] for n, c, b in rows])
ir = {}
for what, log in (("tool", "amdgpu"), ("readlimit", "readlimit")):
    p = os.path.join(R, f"callgrind.{log}.log")
    if os.path.exists(p):
        m = re.search(r"Collected : (\d+)", open(p).read())
        if m:
            ir[what] = int(m.group(1))
if ir:
    print("\n== Instructions, amdgpu.ko (callgrind, whole process) ==")
    for k, v in ir.items():
        print(f"  {k}: {v:,}")
    if "tool" in ir and "readlimit" in ir:
        print(f"  tool/readlimit: {ir['tool'] / ir['readlimit']:.1f}x")
    top = os.path.join(R, "callgrind.tool.top.txt")
    if os.path.exists(top):
        print("  inclusive, top functions:")
        for l in open(top):
            print("   ", l.rstrip()[:150])

print("\n== Targets ==")
table(["target", "result", "measured", "bound"], [list(t) for t in targets])

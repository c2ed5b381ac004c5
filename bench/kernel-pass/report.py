#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py INSTRUCTIONS.tsv [TIMES.tsv]: the markdown tables of docs/kernel-bench.md.

INSTRUCTIONS.tsv is `run.sh --instructions` output: one row per module,
the instructions each candidate executes (millions), and a last row with
the sums. Where both the series and the posted v2 were run (the verbatim
rows), a column gives series / v2 and a closing line says on how many
modules the series executes fewer instructions than v2.

TIMES.tsv, plain `run.sh` output, adds a second table: per module the
fastest of the timed runs of each model candidate (microseconds; the
minimum is the run least disturbed by the rest of the machine), and the
bytes the bitmap and the merge's symbol copy take."""
import collections
import csv
import sys

ORDER = ("stock", "bsearch", "gallop", "merge", "v2", "series")


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r.get("module") != "module"]


def name(path):
    return path.rsplit("/", 1)[-1].removesuffix(".bin")


def instructions(path):
    instr = collections.defaultdict(dict)
    for r in rows(path):
        instr[r["module"]][r["candidate"]] = int(r["instructions"])
    seen = {c for m in instr.values() for c in m}
    cands = [c for c in ORDER if c in seen] + sorted(seen - set(ORDER))
    both = "v2" in seen and "series" in seen
    print("| module | " + " | ".join(f"{c} (M instr.)" for c in cands) + (" | series / v2 |" if both else " |"))
    print("|" + "---|" * (1 + len(cands) + both))
    total = collections.Counter()
    below = 0
    for m in sorted(instr, key=lambda m: -instr[m].get("stock", 0)):
        for c in cands:
            total[c] += instr[m][c]
        cells = [m] + [f"{instr[m][c] / 1e6:.2f}" for c in cands]
        if both:
            cells.append(f"{instr[m]['series'] / instr[m]['v2']:.2f}")
            below += instr[m]["series"] < instr[m]["v2"]
        print("| " + " | ".join(cells) + " |")
    cells = [f"all {len(instr)}"] + [f"{total[c] / 1e6:.2f}" for c in cands]
    if both:
        cells.append(f"{total['series'] / total['v2']:.2f}")
    print("| " + " | ".join(cells) + " |")
    if both:
        print()
        print(f"The series executes fewer instructions than v2 on {below} of {len(instr)} modules.")


def times(path):
    t, shape = collections.defaultdict(dict), {}
    for r in rows(path):
        m = name(r["module"])
        t[m][r["candidate"]] = (float(r["min_us"]), int(r["extra_bytes"]))
        shape[m] = (int(r["locations"]), int(r["symbols"]), int(r["kept"]))
    cands = [c for c in ORDER if any(c in v for v in t.values())]
    print("| module | callsites | symbols | kept | " + " | ".join(f"{c} (min µs)" for c in cands)
          + " | bitmap | merge copy |")
    print("|" + "---|" * (4 + len(cands) + 2))
    for m in sorted(t, key=lambda m: -shape[m][0]):
        cells = [m, *map(str, shape[m])] + [f"{t[m][c][0]:.0f}" for c in cands]
        cells += [f"{t[m]['gallop'][1]} B", f"{t[m]['merge'][1] / 1024:.0f} KiB"]
        print("| " + " | ".join(cells) + " |")


def main():
    instructions(sys.argv[1])
    if len(sys.argv) > 2:
        print()
        times(sys.argv[2])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py INSTRUCTIONS.tsv TIMES.tsv: the markdown table of docs/kernel-bench.md.

INSTRUCTIONS.tsv is `run.sh --instructions` output, TIMES.tsv plain
`run.sh` output. One row per module: instructions per candidate (millions),
the fastest of the timed runs per candidate (microseconds; the minimum is
the run least disturbed by the rest of the machine), and the bytes the
bitmap and the merge's symbol copy take. A last row sums the instructions."""
import collections
import csv
import sys

CANDIDATES = ("stock", "bsearch", "gallop", "merge")


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r.get("module") != "module"]


def name(path):
    return path.rsplit("/", 1)[-1].removesuffix(".bin")


def main():
    instr = collections.defaultdict(dict)
    for r in rows(sys.argv[1]):
        instr[r["module"]][r["candidate"]] = int(r["instructions"])
    times, shape = collections.defaultdict(dict), {}
    for r in rows(sys.argv[2]):
        m = name(r["module"])
        times[m][r["candidate"]] = (float(r["min_us"]), int(r["extra_bytes"]))
        shape[m] = (int(r["locations"]), int(r["symbols"]), int(r["kept"]))
    print("| module | callsites | symbols | kept | " + " | ".join(f"{c} (M instr.)" for c in CANDIDATES)
          + " | " + " | ".join(f"{c} (min µs)" for c in CANDIDATES) + " | bitmap | merge copy |")
    print("|" + "---|" * (4 + 2 * len(CANDIDATES) + 2))
    total = collections.Counter()
    for m in sorted(instr, key=lambda m: -shape[m][0]):
        for c in CANDIDATES:
            total[c] += instr[m][c]
        cells = [m, *map(str, shape[m])]
        cells += [f"{instr[m][c] / 1e6:.2f}" for c in CANDIDATES]
        cells += [f"{times[m][c][0]:.0f}" for c in CANDIDATES]
        cells += [f"{times[m]['gallop'][1]} B", f"{times[m]['merge'][1] / 1024:.0f} KiB"]
        print("| " + " | ".join(cells) + " |")
    print(f"| all {len(instr)} | | | | " + " | ".join(f"{total[c] / 1e6:.2f}" for c in CANDIDATES)
          + " |" + " |" * (len(CANDIDATES) + 2))
    g = total["gallop"]
    print()
    print("Instructions relative to gallop, all modules: "
          + ", ".join(f"{c} {total[c] / g:.2f}x" for c in CANDIDATES) + ".")


if __name__ == "__main__":
    main()

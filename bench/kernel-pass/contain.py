#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""contain.py MODEL.tsv DUMPS TOOL.jsonl TOP [--control] [--stock] [--instructions TSV --top N]

Holds the words the series' pass cleared (MODEL.tsv, verbatim.c built
with the arch's ftrace_call_adjust(); its dumps under DUMPS) against the
entries the tool would neutralise (TOOL.jsonl, --check --format=json over
the tree TOP), module by module, by table offset. Prints the tree's figures
and every module where the two differ, with what the tool says of each
differing entry (a doubt and its reason, or why the module was left
alone), and with --stock every record where stock's check and the series
part (verbatim.c -DSTOCK_MAX_OFFSET), with what the tool says of it. Exit 1 on
a difference from the tool; with --control, exit 1 on none (a control
model must differ). --instructions adds the callgrind counts
(contain.sh --instructions) in total and for the N modules costing most."""
import json
import sys
from pathlib import Path


def key(path, top, suffix):
    return str(Path(path).relative_to(top)).split(suffix)[0]


def main():
    args = sys.argv[1:]
    control = "--control" in args
    instr = args[args.index("--instructions") + 1] if "--instructions" in args else None
    top_n = int(args[args.index("--top") + 1]) if "--top" in args else 10
    model_tsv, dumps, tool_jsonl, top = args[:4]
    model, stock = {}, []
    for line in open(model_tsv):
        f = line.rstrip("\n").split("\t")
        cleared = set() if len(f) < 4 or not f[3] else {int(x, 16) for x in f[3].split(",")}
        model[key(f[0], dumps, ".bin")] = (int(f[1]), int(f[2]), cleared, f[4] if len(f) > 4 else "")
        for d in f[5].split(",") if len(f) > 5 and f[5] else []:
            off, name = d[1:].split("=")
            stock.append((key(f[0], dumps, ".bin"), int(off, 16), name, d[0] == "+"))
    tool = {key(o["file"], top, ".ko"): o for o in map(json.loads, open(tool_jsonl))}
    assert set(model) == set(tool), f"modules differ: {sorted(set(model) ^ set(tool))[:5]}"

    entries = kept = cleared = weak = doubt = 0
    bad, warned = [], []
    for m in sorted(model):
        n, k, mc, warn = model[m]
        o = tool[m]
        entries, kept, cleared = entries + n, kept + k, cleared + len(mc)
        findings = {int(f["table_offset"], 16): f for f in o["findings"]}
        tc = {off for off, f in findings.items() if f["verdict"] == "weak"}
        weak, doubt = weak + len(tc), doubt + (o["doubt"] or 0)
        if warn:
            warned.append(f"{m}: {warn}")
        if mc == tc:
            continue
        why = []
        for off in sorted(mc - tc):
            f = findings.get(off)
            said = f"doubt: {f['doubt']}" if f else f"{o['status']}" + (f" ({o['reason']})" if o["reason"] else "")
            why.append(f"  {off:#x}: the model clears it, the tool keeps it ({said})")
        for off in sorted(tc - mc):
            why.append(f"  {off:#x}: the tool neutralises it ({findings[off]['location']}), the model keeps it")
        bad.append((m, why))

    print(f"{len(model)} modules, {sum(1 for v in model.values() if v[0])} with a callsite table: "
          f"{entries} entries; the model clears {cleared} (keeps {kept} words), "
          f"the tool would neutralise {weak} (and keeps {doubt} as doubts); "
          f"{len(bad)} modules differ")
    for m, why in bad[:20]:
        print(m)
        print("\n".join(why[:4] + ([f"  ... and {len(why) - 4} more"] if len(why) > 4 else [])))
    if len(bad) > 20:
        print(f"... and {len(bad) - 20} more modules")
    for w in warned:
        print(f"ftrace_call_adjust() warned: {w}")
    if "--stock" in args:
        only = sum(1 for d in stock if d[3])
        print(f"\nstock's check and the series part on {len(stock)} records: stock alone keeps {only}, "
              f"the series alone {len(stock) - only}")
        if stock:
            print("| module | table offset | kallsyms names the ip | kept by | the tool |\n|---|---|---|---|---|")
        for m, off, name, stock_keeps in stock[:40]:
            f = {int(x["table_offset"], 16): x for x in tool[m]["findings"]}.get(off)
            said = f"{f['verdict']}, {f['location']}, found_by {f['found_by']}, stock {f['stock']}" if f else "keeps it"
            print(f"| {m} | {off:#x} | {name} | {'stock' if stock_keeps else 'the series'} | {said} |")
        if len(stock) > 40:
            print(f"... and {len(stock) - 40} more records")
    if instr:
        rows = [line.rstrip("\n").split("\t") for line in open(instr)]
        rows = sorted(((key_.removesuffix(".bin"), int(c)) for key_, c in rows), key=lambda r: -r[1])
        total = sum(c for _, c in rows)
        print(f"\ninstructions: {total} over {len(rows)} modules ({total / max(entries, 1):.1f} per entry); "
              f"stock: 0 (no check without FTRACE_MCOUNT_MAX_OFFSET)")
        print("| module | entries | series (M instr.) |\n|---|---|---|")
        for m, c in rows[:top_n]:
            print(f"| {Path(m).name} | {model[m][0]} | {c / 1e6:.2f} |")
    if control:
        print("control: " + ("differs, as it must" if bad else "FAILED to differ"))
        return 0 if bad else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for scripts/tree-check.sh (see docs/trees.md).

Subcommands:
  prep SRC DST [JOBS]    copy every module under SRC (.ko, .ko.xz/.gz/.zst)
                         to the same relative path under DST as a plain ELF:
                         decompressed, appended signature stripped (the
                         helpers of scripts/guest/guest.py). Prints the count.
  analyse DEFAULT.jsonl KCONFIG.jsonl ROOT OUT.json
                         read the tool's `--check --format=json` reports on
                         the tree ROOT (without and with --kconfig) and
                         compare them module by module; print a summary,
                         write details
  symbols ROOT           count symbols whose names start with '$' or 'L0'
                         in every module under ROOT (the names that 7.2's
                         kallsyms skips and 6.1-6.5 did not always)
"""
import collections
import json
import multiprocessing
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "guest"))
import guest  # noqa: E402  (read_module, strip_signature, the ELF layer)

MOD_RE = re.compile(r"\.ko(\.(xz|gz|zst))?$")


def modules_under(root):
    for d, _dirs, files in os.walk(root):
        for f in files:
            if MOD_RE.search(f):
                yield os.path.join(d, f)


def _prep_one(job):
    src, dst = job
    data = guest.read_module(src)
    elf, _signed = guest.strip_signature(data)
    if elf[:4] != b"\x7fELF":
        return f"{src}: not an ELF module after decompression"
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "wb") as f:
        f.write(elf)
    return None


def cmd_prep(src, dst, jobs=2):
    work = []
    for p in modules_under(src):
        rel = os.path.relpath(p, src)
        rel = MOD_RE.sub(".ko", rel)
        work.append((p, os.path.join(dst, rel)))
    with multiprocessing.Pool(int(jobs)) as pool:
        bad = [r for r in pool.map(_prep_one, work, chunksize=32) if r]
    for b in bad:
        print(f"tree_check: {b}", file=sys.stderr)
    print(len(work))
    return 1 if bad else 0


def parse_log(path, root):
    """Per module, from the tool's --format=json lines (docs/report-format.md):
    weak entries {location: distance}, kept-for-doubt locations, warnings,
    errors, the status and the rule; and the tree's counts."""
    mods = {}
    tree = collections.Counter()
    skipped = collections.Counter()
    other = []
    for ln in open(path, errors="replace"):
        try:
            o = json.loads(ln)
        except ValueError:
            other.append(ln.rstrip("\n"))
            continue
        found = o["findings"]
        rule = (f"{o['arch']}, {o['section']}, {o['rule']} {o['max_offset']}, {o['neutraliser']}"
                if o["rule"] else f"({(o['reason'] or o['error'] or 'no rule')[:60]})")
        mods[os.path.relpath(o["file"], root)] = {
            "zero": {f["location"]: f["distance"] for f in found if f["verdict"] == "weak"},
            "keep": [f["location"] for f in found if f["verdict"] == "doubt"],
            "warning": o["warnings"], "error": [o["error"]] if o["error"] else [],
            "status": o["status"], "rule": rule}
        tree["modules"] += 1
        tree[o["status"]] += 1
        if o["status"] == "skipped":
            skipped[o["reason"] or ""] += 1
    tree = {"modules": tree["modules"], "would_change": tree["would_change"], "unchanged": tree["unchanged"],
            "skipped": tree["skipped"], "skipped_kinds": dict(skipped), "errors": tree["error"]}
    return collections.defaultdict(lambda: {"zero": {}, "keep": [], "warning": [], "error": [],
                                            "status": None, "rule": "(not seen)"}, mods), tree, other


def cmd_analyse(dlog, klog, root, out):
    d, dtree, dother = parse_log(dlog, root)
    k, ktree, kother = parse_log(klog, root)
    names = sorted(set(d) | set(k))
    res = {"default": dtree, "kconfig": ktree, "modules_seen": len(names),
           "unparsed_lines": {"default": dother, "kconfig": kother}}
    for tag, mods in (("default", d), ("kconfig", k)):
        res[tag + "_modules_zeroing"] = sum(1 for n in names if mods[n]["zero"])
        res[tag + "_entries_zeroed"] = sum(len(mods[n]["zero"]) for n in names)
        res[tag + "_kept_for_doubt"] = sum(len(mods[n]["keep"]) for n in names)
        res[tag + "_error_modules"] = sorted(n for n in names if mods[n]["error"])
        res[tag + "_warnings"] = collections.Counter(
            re.sub(r"\d+", "N", w) for n in names for w in mods[n]["warning"]).most_common()
        res[tag + "_changed_list"] = {n: sorted(mods[n]["zero"].values()) for n in names if mods[n]["zero"]}
        # would change without zeroing anything (a tag write, say)
        res[tag + "_change_without_zero"] = sorted(
            n for n in names if mods[n]["status"] == "would_change" and not mods[n]["zero"])
    agree, differ = 0, []
    viol = []
    for n in names:
        dz, kz = d[n]["zero"], k[n]["zero"]
        if dz == kz:
            agree += 1
            continue
        only_d = sorted(set(dz) - set(kz))
        only_k = sorted(set(kz) - set(dz))
        kind = ("default zeroes more (invariant 1 violated)" if only_d and not only_k else
                "default zeroes less (misses)" if only_k and not only_d else
                "both differ" if only_d and only_k else "same entries, other distance")
        differ.append({"module": n, "kind": kind, "only_default": {x: dz[x] for x in only_d},
                       "only_kconfig": {x: kz[x] for x in only_k},
                       "default_rule": d[n]["rule"], "kconfig_rule": k[n]["rule"]})
        if only_d:
            viol.append(n)
    res["agree"] = agree
    res["differ"] = differ
    res["differ_kinds"] = collections.Counter(x["kind"] for x in differ).most_common()
    res["invariant1_violations"] = viol
    # which rule each run used, by count
    for tag, mods in (("default", d), ("kconfig", k)):
        res[tag + "_rules"] = collections.Counter(mods[n]["rule"] for n in names).most_common(6)
    json.dump(res, open(out, "w"), indent=1, sort_keys=True)
    print(json.dumps({x: res[x] for x in ("modules_seen", "default", "kconfig", "default_modules_zeroing",
                                          "kconfig_modules_zeroing", "default_entries_zeroed",
                                          "kconfig_entries_zeroed", "agree", "differ_kinds",
                                          "invariant1_violations")}))
    return 0


def symbol_names(data):
    """Names in .symtab of an ELF image (guest.py's ELF layer)."""
    if data[:4] != b"\x7fELF":
        return []
    return [s["name"] for s in guest.elf_symbols(data)[0] if s["name"]]


def _symbols_one(path):
    names = symbol_names(guest.read_module(path))
    return (sum(1 for n in names if n.startswith("$")),
            sum(1 for n in names if n.startswith("L0")),
            collections.Counter(n[:3] for n in names if n.startswith("$") or n.startswith("L0")))


def cmd_symbols(root):
    paths = list(modules_under(root))
    with multiprocessing.Pool(2) as pool:
        res = pool.map(_symbols_one, paths, chunksize=32)
    dollar = sum(r[0] for r in res)
    l0 = sum(r[1] for r in res)
    mods = sum(1 for r in res if r[0] or r[1])
    kinds = collections.Counter()
    for r in res:
        kinds.update(r[2])
    print(json.dumps({"modules": len(paths), "dollar": dollar, "L0": l0, "modules_with_any": mods,
                      "prefixes": kinds.most_common(8)}))
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    fn = {"prep": cmd_prep, "analyse": cmd_analyse, "symbols": cmd_symbols}.get(cmd)
    if fn is None:
        print(__doc__, file=sys.stderr)
        return 2
    return fn(*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

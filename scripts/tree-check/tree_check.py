#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for scripts/tree-check.sh (see docs/trees.md).

Subcommands:
  prep SRC DST [JOBS]    copy every module under SRC (.ko, .ko.xz/.gz/.zst)
                         to the same relative path under DST as a plain ELF:
                         decompressed, appended signature stripped (the
                         helpers of scripts/e2e/zwm_e2e.py). Prints the count.
  analyse DEFAULT.log KCONFIG.log ROOT OUT.json
                         parse two `--check -v` logs of the tool on the tree
                         ROOT (without and with --kconfig) and compare them
                         module by module; print a summary, write details
  symbols ROOT           count symbols whose names start with '$' or 'L0'
                         in every module under ROOT (the names that 7.2's
                         kallsyms skips and 6.1-6.5 did not always)
"""
import collections
import json
import multiprocessing
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import zwm_e2e  # noqa: E402  (read_module, strip_signature)

MOD_RE = re.compile(r"\.ko(\.(xz|gz|zst))?$")


def modules_under(root):
    for d, _dirs, files in os.walk(root):
        for f in files:
            if MOD_RE.search(f):
                yield os.path.join(d, f)


def _prep_one(job):
    src, dst = job
    data = zwm_e2e.read_module(src)
    elf, _signed = zwm_e2e.strip_signature(data)
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


LINE_RE = re.compile(r"^zero-weak-mcount: (.+?\.ko): (.*)$")
SUMMARY_RE = re.compile(r"^zero-weak-mcount: (\d+) modules?: (\d+) would change, (\d+) unchanged, "
                        r"(\d+) skipped(?: \(([^)]*)\))?, (\d+) errors?$")
# An entry the tool zeroes or drops (its neutraliser): both count as gone.
ZERO_RE = re.compile(r"^(?:zero|drop) (\S+) \(distance (\d+)")


def parse_log(path, root):
    """Per module: zeroed entries {location: distance}, kept-for-doubt
    locations, warnings, errors, the 'would change' summary; and the tool's
    tree summary line."""
    mods = collections.defaultdict(lambda: {"zero": {}, "keep": [], "warning": [], "error": [],
                                            "note": [], "summary": None})
    tree = None
    other = []
    for ln in open(path, errors="replace"):
        ln = ln.rstrip("\n")
        m = SUMMARY_RE.match(ln)
        if m:
            tree = {"modules": int(m[1]), "would_change": int(m[2]), "unchanged": int(m[3]),
                    "skipped": int(m[4]), "skipped_kinds": m[5] or "", "errors": int(m[6])}
            continue
        m = LINE_RE.match(ln)
        if not m:
            other.append(ln)
            continue
        mod = os.path.relpath(m[1], root)
        rest = m[2]
        rec = mods[mod]
        z = ZERO_RE.match(rest)
        if z:
            rec["zero"][z[1]] = int(z[2])
        elif rest.startswith("keep "):
            rec["keep"].append(rest)
        elif rest.startswith("warning: "):
            rec["warning"].append(rest[9:])
        elif rest.startswith("error: "):
            rec["error"].append(rest[7:])
        elif rest.startswith("note: "):
            rec["note"].append(rest[6:])
        else:
            rec["summary"] = rest
    return mods, tree, other


RULE_RE = re.compile(r"\[([^\]]*)\]")


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
            n for n in names if (mods[n]["summary"] or "").startswith("would change") and not mods[n]["zero"])
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
        rd = RULE_RE.findall(d[n]["summary"] or "")
        rk = RULE_RE.findall(k[n]["summary"] or "")
        differ.append({"module": n, "kind": kind, "only_default": {x: dz[x] for x in only_d},
                       "only_kconfig": {x: kz[x] for x in only_k},
                       "default_rule": rd[-1] if rd else d[n]["summary"],
                       "kconfig_rule": rk[-1] if rk else k[n]["summary"]})
        if only_d:
            viol.append(n)
    res["agree"] = agree
    res["differ"] = differ
    res["differ_kinds"] = collections.Counter(x["kind"] for x in differ).most_common()
    res["invariant1_violations"] = viol
    # which rule each run used, by count
    for tag, mods in (("default", d), ("kconfig", k)):
        res[tag + "_rules"] = collections.Counter(
            (RULE_RE.findall(mods[n]["summary"] or "") or ["(" + (mods[n]["summary"] or "no summary")[:60] + ")"])[-1]
            for n in names).most_common(6)
    json.dump(res, open(out, "w"), indent=1, sort_keys=True)
    print(json.dumps({x: res[x] for x in ("modules_seen", "default", "kconfig", "default_modules_zeroing",
                                          "kconfig_modules_zeroing", "default_entries_zeroed",
                                          "kconfig_entries_zeroed", "agree", "differ_kinds",
                                          "invariant1_violations")}))
    return 0


def symbol_names(data):
    """Names in .symtab of an ELF image (32/64 bit, either endianness)."""
    if data[:4] != b"\x7fELF":
        return []
    cls, end = data[4], data[5]
    e = "<" if end == 1 else ">"
    if cls == 2:
        shoff, = struct.unpack_from(e + "Q", data, 0x28)
        shentsize, shnum, _ = struct.unpack_from(e + "HHH", data, 0x3A)
        shfmt, symsz = e + "IIQQQQIIQQ", 24
    else:
        shoff, = struct.unpack_from(e + "I", data, 0x20)
        shentsize, shnum, _ = struct.unpack_from(e + "HHH", data, 0x2E)
        shfmt, symsz = e + "IIIIIIIIII", 16
    secs = [struct.unpack_from(shfmt, data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for s in secs:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        stroff = secs[s[6]][4]
        off, size = s[4], s[5]
        for i in range(1, size // symsz):
            name, = struct.unpack_from(e + "I", data, off + i * symsz)
            if name:
                j = data.index(b"\0", stroff + name)
                out.append(data[stroff + name:j])
    return out


def _symbols_one(path):
    names = symbol_names(zwm_e2e.read_module(path))
    return (sum(1 for n in names if n.startswith(b"$")),
            sum(1 for n in names if n.startswith(b"L0")),
            collections.Counter(n[:3].decode(errors="replace") for n in names
                                if n.startswith(b"$") or n.startswith(b"L0")))


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

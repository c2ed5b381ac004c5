#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tree-check: run `zero-weak-mcount --check --format=json` over whole
Debian module trees, with and without the package's own --kconfig, and
compare the two runs module by module (docs/trees.md).

Usage: scripts/tree-check.py [--trees LIST] [--work DIR] [-j N] [--tool ZWM]
       scripts/tree-check.py --audit docs/audit.md [--trees LIST] [--tool ZWM]

A tree is SUITE-DEBARCH (the newest build scripts/fetch-debian-kernel.sh
gets for it) or SUITE-DEBARCH@ABI (an ABI already unpacked in the cache,
for instance trixie-ppc64el@6.12.107+deb13-powerpc64le, which the mirror no
longer serves; it is never fetched); /FLAVOUR after either picks a flavour
(bookworm-armel/marvell).  Default: the seven trees of DEFAULT_TREES below.
--audit FILE writes the audit of AUDIT_TREES instead (docs/trees.md, "The audit").

The tool runs twice over lib/modules/KVER/kernel as shipped (--check reads
a compressed or signed module in memory, and "would change" means "has
entries to zero"), without and with --kconfig (boot/config-KVER or
lib/modules/KVER/config).  Reported per tree: modules, modules that would
change, entries zeroed, entries kept for doubt, errors, modules where both
runs zero exactly the same entries (section+offset), the kinds of
difference, and the invariant-1 violations: entries the run without
--kconfig zeroes but the --kconfig run keeps.  Also the count of symbols
named '$*' or 'L0*' (kallsyms rules of 6.1-6.5 and 7.2 differ on them).

Environment: ZWM (the tool, unless --tool names it; default
target/release/zero-weak-mcount; cargo build --release runs unless --tool is
given), ZWM_CACHE (scripts/fetch-debian-kernel.sh).
Exit status: 0 when no run reports an error and invariant 1 holds in every
tree (an audit: the control passes), 1 otherwise (also when a tree cannot be
fetched or found; in an audit, unless the suite builds no such kernel).
"""
import argparse
import collections
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts/guest"))
import guest  # noqa: E402  (read_module, strip_signature, the ELF layer; log, build_tools)
guest.PROG = "tree-check"
log = guest.log

DEFAULT_TREES = "sid-amd64 sid-ppc64el trixie-amd64 trixie-ppc64el bookworm-amd64 bookworm-i386 bookworm-ppc64el"
# Every arch of each suite's Release file (2026-12), and every flavour but the default that one of them builds.
FLAVOURS = {"amd64": "cloud-amd64 rt-amd64", "arm64": "arm64-16k cloud-arm64 rt-arm64", "armel": "marvell",
            "armhf": "armmp-lpae rt-armmp", "i386": "686-pae rt-686-pae", "ppc64el": "powerpc64le-64k",
            "mips64el": "loongson-3 mips64r6el octeon", "mipsel": "loongson-3 mips32r2el octeon"}
AUDIT_TREES = " ".join(f"{s}-{a}{f}" for s, arches in (
    ("sid", "amd64 arm64 armhf i386 loong64 ppc64el riscv64 s390x"),
    ("trixie", "amd64 arm64 armel armhf i386 ppc64el riscv64 s390x"),
    ("trixie-backports", "amd64 arm64 armel armhf i386 ppc64el riscv64 s390x"),
    ("bookworm", "amd64 arm64 armel armhf i386 mips64el mipsel ppc64el s390x"),
    ("bookworm-backports", "amd64 arm64 armel armhf i386 mips64el mipsel ppc64el s390x"))
    for a in arches.split() for f in ["", *(f"/{f}" for f in FLAVOURS.get(a, "").split())])
CACHE = Path(os.environ.get("ZWM_CACHE") or Path.home() / ".cache/zero-weak-mcount")
MOD_RE = re.compile(r"\.ko(\.(xz|gz|zst))?$")


def modules_under(root):
    for d, _dirs, files in os.walk(root):
        for f in files:
            if MOD_RE.search(f):
                yield os.path.join(d, f)


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


def analyse(dlog, klog, root, out):
    """The two reports on the tree ROOT compared module by module; the
    result is also written to OUT (analysis.json)."""
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
        # which rule each run used, by count
        res[tag + "_rules"] = collections.Counter(mods[n]["rule"] for n in names).most_common(6)
    agree, differ, viol = 0, [], []
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
    res.update(agree=agree, differ=differ, invariant1_violations=viol,
               differ_kinds=collections.Counter(x["kind"] for x in differ).most_common())
    json.dump(res, open(out, "w"), indent=1, sort_keys=True)
    return res


def _symbols_one(path):
    data = guest.read_module(path)
    names = [s["name"] for s in guest.elf_symbols(data)[0] if s["name"]] if data[:4] == b"\x7fELF" else []
    odd = [n for n in names if n.startswith("$") or n.startswith("L0")]
    return sum(1 for n in odd if n[0] == "$"), sum(1 for n in odd if n[0] == "L"), collections.Counter(n[:3] for n in odd)


def symbols(root):
    """The symbols whose names start with '$' or 'L0' in every module under
    ROOT (the names that 7.2's kallsyms skips and 6.1-6.5 did not always)."""
    paths = list(modules_under(root))
    with multiprocessing.Pool(2) as pool:
        res = pool.map(_symbols_one, paths, chunksize=32)
    kinds = collections.Counter()
    for r in res:
        kinds.update(r[2])
    return {"modules": len(paths), "dollar": sum(r[0] for r in res), "L0": sum(r[1] for r in res),
            "modules_with_any": sum(1 for r in res if r[0] or r[1]), "prefixes": kinds.most_common(8)}


def tree_root(spec):
    """The extraction root of SPEC (fetching SUITE-DEBARCH[/FLAVOUR])."""
    spec, _, flavour = spec.partition("/")
    why = f"not in {CACHE}"
    if "@" in spec:
        base, abi = spec.split("@", 1)
        root = CACHE / "debian" / base / abi / "root"
    else:
        suite, _, arch = spec.rpartition("-")
        out = subprocess.run([REPO / "scripts/fetch-debian-kernel.sh", suite, arch], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "ZWM_FLAVOUR": flavour or ""})
        sys.stderr.write(out.stderr)
        why = (out.stderr.strip().splitlines() or ["fetch failed"])[-1].replace("fetch-debian-kernel: ", "")
        root = Path(out.stdout.split()[-1]) if out.returncode == 0 and arch and out.stdout.split() else None
    if root is None or not root.is_dir():
        raise RuntimeError(f"no such tree ({why})")
    return root


def module_dir(root):
    """(KVER, lib/modules/KVER, its config) of the extraction root ROOT."""
    kver = root.parent.name
    mdir = ([d for d in (root / "lib/modules" / kver, root / "usr/lib/modules" / kver) if (d / "kernel").is_dir()]
            or [None])[-1]
    if mdir is None:
        raise RuntimeError(f"no lib/modules/{kver}/kernel under {root}")
    cfg = next((f for f in (root / f"boot/config-{kver}", mdir / "config") if f.is_file()), None)
    if cfg is None:
        raise RuntimeError(f"no config for {kver} under {root}")
    return kver, mdir, cfg


def check_tree(t, tool, work, jobs, failures):
    """One tree: its row for the summary; problems go to FAILURES."""
    t0 = time.time()
    kver, mdir, cfg = module_dir(tree_root(t))
    tdir, mods, rc = work / t.replace("@", "_").replace("/", "_"), mdir / "kernel", []
    tdir.mkdir(parents=True, exist_ok=True)
    # --check exits 1 when a file would change, 2 on an error; the reports say which.
    for tag, extra in (("default", []), ("kconfig", ["--kconfig", str(cfg)])):
        with open(tdir / f"{tag}.jsonl", "w") as out, open(tdir / f"{tag}.log", "w") as err:
            rc.append(subprocess.run([tool, "--check", "--format=json", "-j", str(jobs), *extra, mods],
                                     stdout=out, stderr=err).returncode)
    a = analyse(tdir / "default.jsonl", tdir / "kconfig.jsonl", mods, tdir / "analysis.json")
    try:
        syms = symbols(mods)
    except Exception as e:  # a count for the table, not a verdict
        failures.append(f"{t}: counting the $*/L0* symbols failed: {e}")
        syms = {}
    for m in a["invariant1_violations"]:
        failures.append(f"{t}: invariant 1 violated in {m}: the default zeroes entries the --kconfig run keeps "
                        f"(see {tdir}/analysis.json)")
    if (a["default"]["errors"], a["kconfig"]["errors"]) != (0, 0):
        failures.append(f"{t}: the tool reported errors (default, kconfig): {a['default']['errors']} "
                        f"{a['kconfig']['errors']} (see {tdir}/*.log)")
    return {"tree": t, "kver": kver, "rc": rc, "secs": int(time.time() - t0), "a": a, "syms": syms}


def audit_run(tool, kdir, cfg, jobs, errlog):
    """The tool's report on each module under KDIR, as shipped, by path."""
    p = subprocess.run([tool, "--check", "--format=json", "-j", str(jobs), "--kconfig", cfg, kdir],
                       stdout=subprocess.PIPE, stderr=open(errlog, "w"), text=True)
    return {os.path.relpath(o["file"], kdir): o for o in map(json.loads, p.stdout.splitlines())}


def dead(reps):
    return {m: o for m, o in sorted(reps.items()) if o["weak"]}


def audit_tree(t, tool, work, jobs, failures):
    t0, root = time.time(), tree_root(t)
    kver, mdir, cfg = module_dir(root)
    reps = audit_run(tool, mdir / "kernel", cfg, jobs, work / f"{t.replace('/', '_')}.log")
    failures += [f"{t}: {m}: {o['error']}" for m, o in reps.items() if o["status"] == "error"]
    fb = p.read_text().split() if (p := root.parents[1] / "apt/state/fallback").is_file() else []
    listed = len(fb) == 2 and fb[1].removesuffix("-unsigned") == f"linux-image-{kver}"  # the fetch's note, if this flavour's
    note = f" (the suite lists {fb[0][12:]}, which the mirror lacks)" if listed else ""
    return {"tree": t, "kver": kver + note, "reps": reps, "dead": dead(reps), "kdir": mdir / "kernel", "cfg": cfg,
            "secs": int(time.time() - t0)}


def control(r, tool, work, jobs):
    """(passed, module, tree): R's first module with dead entries processed by the tool in a
    copy of its tree (hard links, that module copied) must leave the audit, the rest unchanged."""
    (m, _), copy = next(iter(r["dead"].items())), work / "control"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(r["kdir"], copy, copy_function=os.link)
    os.unlink(copy / m)
    shutil.copy2(r["kdir"] / m, copy / m)
    subprocess.run([tool, "--compressed=recompress", "--signed=strip", copy / m], check=True, stderr=subprocess.DEVNULL)
    every = audit_run(tool, copy, r["cfg"], jobs, work / "control.log")
    return len(every) == len(r["reps"]) and [(k, o["findings"]) for k, o in dead(every).items()] == [
        (k, o["findings"]) for k, o in r["dead"].items() if k != m], m, r["tree"]


def audit_md(rows, missing, ctl, version, secs):
    def does(mods):  # what stock does with each dead record: the findings' `stock`, counted
        said = {"rejected": "disabled", "kept_enabled": "enabled, under the previous name",
                "kept_enabled_unchecked": "enabled on dead code"}
        n = collections.Counter(f["stock"] for o in mods for f in o["findings"] if f["verdict"] == "weak")
        return "; ".join(f"{c} {said[k]}" for k, c in sorted(n.items())) or "-"
    yield (f"# Dead ftrace records in Debian's kernels\n\nWritten by `make audit` (scripts/tree-check.py) on "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `{version}`, in {secs} s: rerun it, do not "
           "edit it. What each column means, and how the trees are read: docs/trees.md, \"The audit\".\n\n"
           "| suite | arch | kernel | modules | skipped / errors | with dead entries | dead entries "
           "| at-risk functions | the kernel | s |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        d, st, where = r["dead"], collections.Counter(o["status"] for o in r["reps"].values()), r["tree"].split("/")
        yield (f"| {' | '.join(where[0].split('@')[0].rsplit('-', 1))}{''.join('/' + f for f in where[1:])} | {r['kver']} "
               f"| {len(r['reps'])} | {st['skipped']} / {st['error']} | {len(d)} | {sum(o['weak'] for o in d.values())} | "
               f"{sum(len({a['function'] for a in o['at_risk']}) for o in d.values())} | {does(d.values())} | {r['secs']} |")
    for r in rows:
        why = collections.Counter(f"{o['status']}: {o['reason'] or o['error']}" for o in r["reps"].values()
                                  if o["status"] in ("skipped", "error"))
        yield f"\n## {r['tree']}: {r['kver']}\n"
        yield "| module | dead entries | at-risk functions | the kernel |\n|---|---|---|---|" if r["dead"] else "No module judged has a dead entry."
        for m, o in r["dead"].items():
            fs = sorted({a["function"] for a in o["at_risk"]})
            yield f"| {m} | {o['weak']} | {len(fs)}{': ' if fs else ''}{', '.join(f'`{f}`' for f in fs)} | {does([o])} |"
        yield from ["", *(f"- not judged, {n} modules: {w}" for w, n in why.most_common())] if why else []
    yield "\n## Not covered\n\n" + ("\n".join(f"- {t}: {why}" for t, why in missing) or "Every tree named was read.")
    yield ("\n## Control\n\n" + (f"{ctl[1]} processed by the tool (`--compressed=recompress --signed=strip`) in a copy "
           f"of {ctl[2]}, whose audit must no longer list it, and must list as many modules and every other one with "
           f"dead entries with the same findings: {'PASS' if ctl[0] else 'FAIL'}." if ctl else "No tree has a dead entry: FAIL."))


def summary(rows):
    def zeroing(changed):
        return ", ".join(f"{MOD_RE.sub('', m.split('/')[-1])} {len(v)}" for m, v in sorted(changed.items())) or "none"
    yield ("| tree | kernel | modules | would change (default / kconfig) | entries zeroed (default / kconfig) "
           "| kept for doubt (d / k) | errors (d / k) | default = kconfig | differ | invariant-1 violations "
           "| `$*` / `L0*` symbols | s |")
    yield "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for r in rows:
        a, sy = r["a"], r["syms"]
        d, k = a["default"], a["kconfig"]
        kinds = ", ".join(f"{n} {kind}" for kind, n in a["differ_kinds"]) or "0"
        yield (f"| {r['tree']} | {r['kver']} | {a['modules_seen']} | {d['would_change']} / {k['would_change']} "
               f"| {a['default_entries_zeroed']} / {a['kconfig_entries_zeroed']} "
               f"| {a['default_kept_for_doubt']} / {a['kconfig_kept_for_doubt']} | {d['errors']} / {k['errors']} "
               f"| {a['agree']}/{a['modules_seen']} | {kinds} | {len(a['invariant1_violations'])} "
               f"| {sy.get('dollar', '?')} / {sy.get('L0', '?')} | {r['secs']} |")
    yield ""
    for r in rows:
        a = r["a"]
        yield f"* {r['tree']}: modules zeroing with --kconfig: {zeroing(a['kconfig_changed_list'])}"
        if a["default_changed_list"] != a["kconfig_changed_list"]:
            yield f"  without --kconfig: {zeroing(a['default_changed_list'])}"
        for x in a["differ"][:8]:
            yield (f"  differs: {x['module']}: {x['kind']}; only default {x['only_default']}, "
                   f"only kconfig {x['only_kconfig']}; rules [{x['default_rule']}] vs [{x['kconfig_rule']}]")
        if len(a["differ"]) > 8:
            yield f"  ... {len(a['differ']) - 8} more in analysis.json"
        for tag in ("default", "kconfig"):
            cw = a[tag + "_change_without_zero"]
            if cw:
                yield f"  {tag}: {len(cw)} modules would change without zeroing: {cw[:5]}"
        for tag in ("default", "kconfig"):
            yield f"  rules used ({tag}): {[list(r) for r in a[tag + '_rules']]}"


def main():
    ap = argparse.ArgumentParser(prog="tree-check", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", help="comma- or space-separated trees (default DEFAULT_TREES, or AUDIT_TREES)")
    ap.add_argument("--audit", metavar="FILE", type=Path, help="write the audit of the trees to FILE")
    ap.add_argument("--tool", help="the tool (default $ZWM, else this checkout's cargo build --release)")
    ap.add_argument("--work", help="the work folder (default: a new /tmp/zwm-trees.*)")
    ap.add_argument("-j", type=int, default=2, dest="jobs")
    args = ap.parse_args()
    os.nice(5)
    if not args.tool:
        guest.build_tools()
    tool = os.path.abspath(args.tool or guest.ZWM)
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="zwm-trees."))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work folder: {work}")
    t0, rows, missing, failures = time.time(), [], [], []
    for t in (args.trees or (AUDIT_TREES if args.audit else DEFAULT_TREES)).replace(",", " ").split():
        log(f"=== tree {t}")
        try:
            rows.append((audit_tree if args.audit else check_tree)(t, tool, work, args.jobs, failures))
        except Exception as e:  # a failing tree is reported, the others still run; in an audit, a suite
            missing.append((t, str(e)))  # that builds no kernel for an arch is a fact of the suite
            failures += [] if args.audit and "cannot resolve" in str(e) else [f"{t}: {e}"]
    if args.audit:
        r = next((r for r in rows if r["dead"]), None)
        ctl = control(r, tool, work, args.jobs) if r else None
        failures += [] if ctl and ctl[0] else ["the control failed: the audit does not see what the tool processed"]
        version = subprocess.run([tool, "--version"], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        args.audit.write_text("\n".join(audit_md(rows, missing, ctl, version, int(time.time() - t0))) + "\n")
    else:
        text = "\n".join(summary(rows)) + "\n"
        print(text, end="")
        (work / "summary.md").write_text(text)
    if failures:
        print("FAILED:\n" + "".join(f"  - {f}\n" for f in failures), end="", file=sys.stderr)
        log(f"FAIL ({len(failures)} problem(s)); logs in {work}")
        return 1
    log(f"PASS; logs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make probe-e2e: does a probe on a function reach that function?  Boots
stock Debian kernels under QEMU (TCG) with a module as Debian ships it
(signed, loaded as is) and as zero-weak-mcount processed it, and for every
function that precedes a dead weak body in the module (the symbol of each
weak finding of the tool's --format=json report) measures an fprobe
(tracefs dynamic_events "f:"), a BPF fentry program and, where a row has
one, a livepatch, each against the function tracer as control, on the same
workload (scripts/guest/payload/probe.sh).  The host replays the kernel's
record lookup on the records the guest listed, so the test knows which
functions the stock module must misdirect (the negative control: the stock
boot must show exactly those) and that the processed one must misdirect
none.  docs/probes.md has the kernel path, the rows and what each proves.

  probe.py [--rows A,B] [--work DIR] [--patch1-kernel IMAGE]
      every row of ROWS (or those named); exit 1 unless every row passed.
      Environment: ZWM (the tool), ZWM_CACHE (downloads), ZWM_PROBE_WORK
      (work folder).  Needs gcc and the static C library of each arch.
  probe.py facts BOOT_DIR MODULE.ko ARCH OUT.json
      read one boot (scripts/guest/payload/probe.sh) and replay the
      kernel's lookup on the record array the guest listed; write the
      per-function facts
  probe.py row STOCK.json PROCESSED.json TOOL.json OUT.txt
      compare the two boots and the tool's at_risk and at_risk_after (its
      --format=json report on the module it processed); print the table
      and the verdict; exit 1 on a failure

The replay (kernel/trace/ftrace.c, 7.2): ftrace_location(F) first looks
for a record overlapping [F, F]; without one, and F being a symbol start,
it calls lookup_rec(F, F + size - 1), size running to the next module
kallsyms symbol.  lookup_rec() walks the record pages in order and runs a
bsearch on each whose span overlaps the range; ftrace_cmp_recs() calls any
record that overlaps the range a match, so the first pivot that overlaps
wins.  The pages are those ftrace_allocate_pages() made for the module's
whole __mcount_loc (groups of a power-of-two number of pages, the largest
that fits, filled in ip order with the non-zero entries), less the
.init.text records that ftrace_free_mem() removed after the module's init.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402
from guest import log, run  # noqa: E402

# Per arch: sizeof(struct dyn_ftrace) and MCOUNT_INSN_SIZE (7.2: powerpc's
# dyn_arch_ftrace holds the out-of-line stub's address with
# CONFIG_PPC_FTRACE_OUT_OF_LINE, which Debian's ppc64el kernel sets;
# riscv's is empty, and its record is the 4-byte JALR after the AUIPC).
ARCH = {"x86_64": (16, 5), "aarch64": (16, 4), "ppc64le": (24, 4), "riscv64": (16, 4)}
PAGE = 4096
MAX_PATCH_OFFSET = 16
# --patch1-kernel: the image booted instead of the row's Debian kernel.
PATCH1 = None


def tool_report(path):
    """The objects of the tool's --format=json report (one a line)."""
    return [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]


def functions(path):
    """The symbol before every weak entry, once each, in order."""
    return list(dict.fromkeys(f["symbol"] for o in tool_report(path) for f in o["findings"]
                              if f["verdict"] == "weak" and f["symbol"]))


def group_sizes(count, entry):
    """ftrace_allocate_pages(): the record capacity of each group."""
    sizes = []
    per_page = PAGE // entry
    while count > 0:
        pages = -(-count * entry // PAGE)
        order = pages.bit_length() - 1
        cnt = min(per_page << order, count)
        sizes.append(cnt)
        count -= cnt
    return sizes


def init_entries(elf):
    """(all __mcount_loc entries, those that point into .init.text, those
    the file leaves zero, [(section, offset)] of the non-zero ones) of a
    module file, read with the harness's ELF layer (guest.elf_file)."""
    elf = guest.elf_file(elf)
    # The table the module loader hands ftrace: __mcount_loc, or where the
    # kernel uses -fpatchable-function-entry (arm64, ppc64le),
    # __patchable_function_entries.
    table = elf.get_section_by_name("__mcount_loc") or elf.get_section_by_name("__patchable_function_entries")
    total = table["sh_size"] // (elf.elfclass // 8)
    rela = elf.get_section_by_name(".rela" + table.name)
    if rela is None:
        return total, 0, 0, []
    symtab = elf.get_section(rela["sh_link"])
    # R_*_NONE: an entry the file leaves zero.
    relocs = [r for r in rela.iter_relocations() if r["r_info_type"]]
    sites = []
    for r in relocs:
        sym = symtab.get_symbol(r["r_info_sym"])
        if isinstance(sym["st_shndx"], int) and 0 < sym["st_shndx"] < elf.num_sections():
            sites.append((elf.get_section(sym["st_shndx"]).name, sym["st_value"] + r["r_addend"]))
    init = sum(1 for sec, _o in sites if sec == ".init.text")
    return total, init, total - len({r["r_offset"] for r in relocs}), sites


def place_records(names, sites, sects, arch):
    """Before 6.5 the guest lists a module's records by name only
    (available_filter_functions, in record order, which is address order).
    Their addresses are the module's __mcount_loc entries placed at the
    loaded section addresses (x86_64: ftrace_call_adjust() changes
    nothing), less .init.text, whose records are freed after init."""
    if arch != "x86_64":
        raise SystemExit(f"probe.py: no record addresses for {arch}")
    ips = sorted(sects[sec] + off for sec, off in sites if sec != ".init.text" and sec in sects)
    if len(ips) != len(names) or len(ips) != sum(1 for sec, _o in sites if sec != ".init.text"):
        raise SystemExit(f"probe.py: {len(names)} records listed, {len(ips)} placed from the module")
    return dict(zip(ips, names))


def bsearch(recs, lo, hi, insn):
    """lib/bsearch.c with ftrace_cmp_recs(): the matching record or None."""
    base, num = 0, len(recs)
    while num > 0:
        pivot = base + (num >> 1)
        ip = recs[pivot]
        if lo >= ip + insn:
            base = pivot + 1
            num -= 1
        elif hi >= ip:
            return ip
        num >>= 1
    return None


def lookup_rec(pages, lo, hi, insn):
    if PATCH1:  # kernel/0001: the lowest record overlapping the range
        return min((ip for pg in pages for ip in pg if lo < ip + insn and ip <= hi), default=None)
    for pg in pages:
        ip = bsearch(pg, lo, hi, insn) if pg and pg[0] <= hi and lo < pg[-1] + insn else None
        if ip is not None:
            return ip
    return None


def facts(boot, module, arch, out):
    rep = guest.read_console(boot)
    mod = next(k[1] for k in rep["blocks"] if k[0] == "RECORDS")
    recs, names = {}, []
    for ln in rep["blocks"][("RECORDS", mod)]:
        f = ln.split()
        if len(f) == 3 and re.fullmatch(r"[0-9a-f]+", f[0]):
            recs[int(f[0], 16)] = f[1]
        elif len(f) == 2 and f[1] == f"[{mod}]":
            names.append(f[0])
    syms = [(int(f[0], 16), f[1], f[2]) for f in map(str.split, rep["blocks"][("KALLSYMS", mod)])
            if len(f) >= 4 and re.fullmatch(r"[0-9a-f]+", f[0])]
    sects = {f[0]: int(f[1], 16) for f in map(str.split, rep["blocks"].get(("SECTIONS", mod), [])) if len(f) == 2}
    entry, insn = ARCH[arch]
    elf, _signed = guest.strip_signature(guest.read_module(module))
    total, n_init, n_zero, sites = init_entries(elf)
    placed = not recs and bool(names)
    if placed:
        recs = place_records(names, sites, sects, arch)
    ips = sorted(recs)
    init_high = sects.get(".init.text", 0) > sects.get(".text", 0)
    # The module's records as loaded: init ones (None) at the end or start.
    loaded = ips + [None] * n_init if init_high else [None] * n_init + ips
    pages, i = [], 0
    for cap in group_sizes(total, entry):
        pages.append([ip for ip in loaded[i:i + cap] if ip is not None])
        i += cap
    funcs = [ln.split()[0] for ln in rep["blocks"].get(("HITS", "control"), []) if ln.split()]
    # The first of each name; a weak function the module keeps is "w"
    # (riscv64's kvm.ko).
    by_name = {n: a for a, t, n in reversed(syms) if t in "tTwW"}
    if placed:
        # Each placed record that the kernel names after a function must
        # sit at that function's first byte (no IBT: offset 0).
        at = {(a, n) for a, _t, n in syms}
        wrong = [f"{n}@{ip:#x}" for ip, n in recs.items() if not n.startswith(guest.INVALID) and (ip, n) not in at]
        if wrong:
            raise SystemExit(f"probe.py: placed records disagree with kallsyms: {wrong[:5]}")
    # kernel/module/kallsyms.c:find_kallsyms_symbol() skips what
    # is_mapping_symbol() names (".L*", "L0*", "$*"): riscv64 modules keep
    # their local labels, and F's extent runs past them.
    addrs = sorted({a for a, _t, n in syms if not (n.startswith((".L", "L0", "$")))})
    text_end = max(recs) + insn

    def blocks(tag):
        return {k[1]: v for k, v in rep["blocks"].items() if k[0] == tag}
    enabled = blocks("ENABLED")
    hits = {k: dict((ln.split()[0], int(ln.split()[1])) for ln in v if len(ln.split()) == 2)
            for k, v in blocks("HITS").items()}
    fentry = {}
    for ln in rep["blocks"].get(("FENTRY", None), []):
        m = re.match(r"FENTRY (\S+) btf_id=(-?\d+) load=(-?\d+) attach=(-?\d+) hits=(\d+)", ln)
        if m:
            fentry[m[1]] = {"btf_id": int(m[2]), "load": int(m[3]), "attach": int(m[4]),
                            "hits": int(m[5])}
    marks = {t: a for t, a in rep["markers"]}
    fprobe_events = marks.get("FPROBE-EVENTS", ["yes"])[0] == "yes"
    rcs = {tag: dict(x.split("=", 1) for x in marks.get(tag, [])) for tag in ("FPROBE-DEFINE", "FPROBE-ENABLE")}
    a = marks.get("LIVEPATCH-INSMOD")
    lp = a and {"function": a[0], "insmod": a[1], "state": " ".join(marks.get("LIVEPATCH-STATE", [])),
                "runs": int(marks["LIVEPATCH-RUNS"][1]) if len(marks.get("LIVEPATCH-RUNS", [])) > 1 else None}

    peeks = {k: dict((int(ln.split()[1], 16), ln.split()[2]) for ln in v
                     if ln.startswith("KPEEK ") and len(ln.split()) == 3)
             for k, v in blocks("KPEEK").items()}

    def patched(stage, ips):
        """Of IPS, the sites whose bytes differ from the baseline in STAGE
        (None without kpeek)."""
        if stage not in peeks or "baseline" not in peeks:
            return None
        return [ip for ip in ips if peeks[stage].get(ip) != peeks["baseline"].get(ip)]

    def listed(stage, f):
        return any(re.match(re.escape(f) + r"(\+0x[0-9a-f]+/0x[0-9a-f]+)? \[", ln)
                   for ln in enabled.get(stage, []))
    rows = []
    for f in funcs:
        a = by_name.get(f)
        row = {"function": f}
        if a is None:
            row["error"] = "not in kallsyms"
            rows.append(row)
            continue
        nxt = min((x for x in addrs if x > a), default=text_end)
        size = nxt - a
        # F's own record is its first, at its patch site (within the
        # widest patch-site offset of any arch); the others in its extent
        # are dead bodies' (named invalid where the kernel checks, after F
        # where it does not).
        inside = [ip for ip in ips if a <= ip < nxt]
        own = inside[:1] if inside and inside[0] - a <= MAX_PATCH_OFFSET and recs[inside[0]] == f else []
        dead = [ip for ip in inside if ip not in own]
        exact = lookup_rec(pages, a, a, insn)
        chosen = exact if exact is not None else lookup_rec(pages, a, a + size - 1, insn)
        row.update({
            "addr": hex(a), "size": size,
            "patch_site": "+%#x" % (own[0] - a) if own else None,
            "dead_sites": ["+%#x" % (ip - a) for ip in dead],
            "at_risk": exact is None and bool(dead),
            "lookup": None if chosen is None else "+%#x" % (chosen - a),
            "predicted_misdirected": chosen is not None and chosen not in own,
            "control_hits": hits.get("control", {}).get(f),
            "control_listed": listed("control", f),
            "fprobe_define": rcs["FPROBE-DEFINE"].get(f), "fprobe_enable": rcs["FPROBE-ENABLE"].get(f),
            "fprobe_listed": listed("fprobe", f), "fprobe_hits": hits.get("fprobe", {}).get(f),
            # A local function's clone (F.part.0) has no BTF: no fentry.
            "fentry": fentry.get(f) if fentry.get(f, {}).get("btf_id", -1) >= 0 else None,
            "fentry_btf": (f in fentry and fentry[f]["btf_id"] >= 0) if fentry else None,
            "fentry_listed": listed("fentry", f) if "fentry" in enabled else None,
        })
        for stage in ("control", "fprobe", "fentry", "livepatch"):
            pa = patched(stage, own + dead)
            if pa is not None:
                row[f"{stage}_patched"] = ["own" if ip in own else "+%#x" % (ip - a) for ip in pa]
        if lp and f == lp["function"]:
            row["livepatch"] = dict(lp, listed=listed("livepatch", f))
        rows.append(row)
    res = {"uname": rep["uname"], "module": mod, "arch": arch, "records": len(ips),
           "records_placed": placed, "fprobe_events": fprobe_events,
           "invalid_records": sum(1 for n in recs.values() if n.startswith(guest.INVALID)),
           "mcount_entries": total, "init_entries": n_init, "zero_entries": n_zero,
           "groups": [len(p) for p in pages], "init_high": init_high,
           "workloads": {k: " ".join(v[1:]) for k, v in
                         ((a[0], a) for t, a in rep["markers"] if t == "WORKLOAD")},
           "panic": rep["panic"], "unjudged": guest.unjudged(rep), "functions": rows}
    Path(out).write_text(json.dumps(res, indent=1) + "\n")
    return res


def reached(r, col):
    """Whether a probe of COL reached the function: listed in
    enabled_functions (fentry: listed too) and as many hits as the control."""
    c = r["control_hits"]
    # Where kpeek read the text: F's own site must be the one rewritten
    # (enabled_functions names a dead record after F on arches without
    # the kernel's check, so there its listing proves nothing).
    own = r.get(f"{col}_patched")
    own = own is None or own == ["own"]
    if col == "fprobe":
        return own and r["fprobe_listed"] and r["fprobe_hits"] == c
    if col == "fentry":
        fe = r.get("fentry")
        return own and bool(fe) and fe["attach"] == 0 and r["fentry_listed"] and fe["hits"] == c
    if col == "livepatch":
        lp = r.get("livepatch")
        return own and bool(lp) and lp["listed"] and lp["runs"] == c
    raise ValueError(col)


def row_verdict(stock_p, proc_p, tool_p, out):
    s, p = json.loads(Path(stock_p).read_text()), json.loads(Path(proc_p).read_text())
    fails = []
    lines = [f"kernel {s['uname']} ({s['arch']}), module {s['module']}: {s['records']} records "
             f"({s['invalid_records']} invalid) in groups {s['groups']}; processed: {p['records']} "
             f"({p['invalid_records']} invalid)",
             "function | patch | dead | at risk | predicted | control | stock fprobe | stock fentry | "
             "processed fprobe | processed fentry"]
    pred, seen_f, seen_b, risk = set(), set(), set(), set()
    pr_bad_f, pr_bad_b = set(), set()
    ver = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", s["uname"]).groups())
    # fprobe events came with 6.5; a kernel without them has no column.
    has_f = s.get("fprobe_events", True) and p.get("fprobe_events", True)
    if not has_f and ver >= (6, 5):
        fails.append(f"{s['uname']} should have fprobe events (tracefs README lacks the f: syntax)")
    for a, b in zip(s["functions"], p["functions"]):
        f = a["function"]
        if "error" in a or "error" in b:
            fails.append(f"{f}: {a.get('error') or b.get('error')}")
            continue

        def cell(r, col):
            pa = r.get(f"{col}_patched")
            site = "" if pa is None else " site " + (",".join(pa) or "none")
            if col == "fprobe":
                if not has_f:
                    return "-"
                return ("listed" if r["fprobe_listed"] else "NOT listed") + f" {r['fprobe_hits']}" + site
            fe = r.get("fentry")
            if not fe:
                return "no BTF" if r.get("fentry_btf") is False else "-"
            return ("listed" if r["fentry_listed"] else "NOT listed") + f" {fe['hits']}" + site
        if a["predicted_misdirected"]:
            pred.add(f)
        if a["at_risk"]:
            risk.add(f)
        if has_f and not reached(a, "fprobe"):
            seen_f.add(f)
        if a.get("fentry") and not reached(a, "fentry"):
            seen_b.add(f)
        if has_f and not reached(b, "fprobe"):
            pr_bad_f.add(f)
        if b.get("fentry") and not reached(b, "fentry"):
            pr_bad_b.add(f)
        if b["at_risk"] or b["predicted_misdirected"]:
            fails.append(f"processed: {f} still at risk by the replay")
        for r, tag in ((a, "stock"), (b, "processed")):
            if has_f and (r["fprobe_define"] != "0" or r["fprobe_enable"] != "0"):
                fails.append(f"{tag}: {f}: fprobe define/enable rc {r['fprobe_define']}/{r['fprobe_enable']}")
            if not r["control_listed"]:
                fails.append(f"{tag}: {f}: the control (function tracer) did not enable it")
        if a["control_hits"] != b["control_hits"]:
            fails.append(f"{f}: control hits differ between boots ({a['control_hits']} vs {b['control_hits']})")
        lines.append(f"{f} | {a['patch_site']} | {','.join(a['dead_sites'])} | {'yes' if a['at_risk'] else 'no'} | "
                     f"{'MISDIRECTED' if a['predicted_misdirected'] else 'own'} | {a['control_hits']} | "
                     f"{cell(a, 'fprobe')} | {cell(a, 'fentry')} | {cell(b, 'fprobe')} | {cell(b, 'fentry')}")
    for r, tag in ((s, "stock"), (p, "processed")):
        if r["panic"] or r["unjudged"]:
            fails.append(f"{tag}: the guest did not end cleanly: {r['unjudged'] or r['panic'][:3]}")
    lines.append(f"at risk (replay): {len(risk)} {sorted(risk)}")
    lines.append(f"predicted misdirected: {sorted(pred)}")
    lines.append(f"stock, fprobe did not reach: {sorted(seen_f)}; fentry did not reach: {sorted(seen_b)}")
    lines.append(f"processed, fprobe did not reach: {sorted(pr_bad_f)}; fentry did not reach: {sorted(pr_bad_b)}")
    # fprobe events register by name glob through ftrace_set_filter() (a
    # name match over the records that skips disabled ones) until fprobe
    # moved onto the function graph tracer in 6.14; since then each name
    # becomes an address and goes through ftrace_location().
    pred_f = pred if ver >= (6, 14) else set()
    if not has_f:
        lines.append(f"fprobe: {s['uname']} has no fprobe events: no column")
    elif ver < (6, 14):
        lines.append(f"fprobe: {s['uname']} resolves fprobe events by name (before 6.14): none predicted")
    if seen_f != pred_f:
        fails.append(f"stock fprobe misdirected {sorted(seen_f)} != predicted {sorted(pred_f)}")
    fentry_ok = any(x.get("fentry") and x["fentry"]["attach"] == 0 for x in s["functions"])
    if any(x.get("fentry") for x in s["functions"]) and not fentry_ok:
        rcs = sorted({x["fentry"]["load"] if x["fentry"]["load"] else x["fentry"]["attach"]
                      for x in s["functions"] if x.get("fentry")})
        lines.append(f"BPF fentry: no program could be loaded and attached on this kernel (rc {rcs})")
        seen_b, pr_bad_b = pred, set()
    if any(x.get("fentry") for x in s["functions"]) and seen_b != pred:
        fails.append(f"stock fentry misdirected {sorted(seen_b)} != predicted {sorted(pred)}")
    if pr_bad_f or pr_bad_b:
        fails.append(f"processed: probes that did not reach their function: {sorted(pr_bad_f | pr_bad_b)}")
    for a, b in zip(s["functions"], p["functions"]):
        if "livepatch" in a or "livepatch" in b:
            la, lb = a.get("livepatch", {}), b.get("livepatch", {})
            lines.append(f"livepatch on {a['function']}: stock {la} ; processed {lb}; control {a['control_hits']}")
            if a["predicted_misdirected"] and reached(a, "livepatch"):
                fails.append("stock livepatch reached a function predicted misdirected")
            if not a["predicted_misdirected"] and not reached(a, "livepatch"):
                fails.append("stock livepatch missed a function the lookup gives its own record")
            if not reached(b, "livepatch"):
                fails.append("processed livepatch did not run as often as the control")
    # The tool's own report on the shipped module: at risk as the replay
    # says, and nothing once processed, as the processed boot says.
    tool = {k: {r["function"] for o in tool_report(tool_p) for r in o[k]} for k in ("at_risk", "at_risk_after")}
    lines.append(f"tool at_risk: {sorted(tool['at_risk'])}")
    if tool["at_risk"] != risk:
        fails.append(f"tool at_risk {sorted(tool['at_risk'])} != replay at risk {sorted(risk)}")
    if tool["at_risk_after"]:
        fails.append(f"tool at_risk_after {sorted(tool['at_risk_after'])}: not empty")
    # The dead records are there on the shipped module and gone on the
    # processed one: each dead site the boots found inside a probed
    # function's extent is one record fewer after processing.
    dead = sum(len(x.get("dead_sites", [])) for x in s["functions"])
    lines.append(f"dead records: stock {dead} in the probed functions' extents "
                 f"({s['invalid_records']} listed invalid), processed "
                 f"{s['records'] - p['records']} fewer records ({p['invalid_records']} invalid)")
    if dead == 0 or s["records"] - p["records"] != dead:
        fails.append(f"stock has {dead} dead records, the processed boot {s['records'] - p['records']} fewer")
    if p["invalid_records"]:
        fails.append(f"processed: {p['invalid_records']} invalid records")
    if not risk:
        # The negative control of a row that predicts nothing: why nothing.
        sites = sorted({x["patch_site"] for x in s["functions"] if "patch_site" in x}, key=str)
        lines.append("nothing at risk, so nothing predicted misdirected: every probed function's own "
                     f"record is at its patch site {sites}, so ftrace_location(F) finds it in the "
                     "exact lookup [F, F] and never runs the range lookup that can return a dead record")
    elif not pred:
        lines.append("nothing predicted misdirected: the negative control cannot fail here")
    return guest.verdict(out, "\n".join(lines), fails, "probe-e2e")


# --- the driver ------------------------------------------------------------------------
# A row: Debian suite and arch, the guest arch (scripts/guest/arches.tsv)
# and its CPU, the module probed and the modules loaded (in load order,
# paths under lib/modules/KVER/kernel/), the workload (scripts/probe/NAME.c,
# or none), the livepatched function and the cross compiler's triplet.
# The rows without a workload rely on kpeek (the kernel text read from
# /proc/kcore) to see which patch site each probe made ftrace rewrite.
Row = collections.namedtuple("Row", "suite debarch arch cpu module chain workload livepatch cross")
# kvm-amd needs ccp, kvm irqbypass; QEMU's -cpu max has the SVM that
# kvm-amd needs, so /dev/kvm works.
AMD64 = ("virt/lib/irqbypass", "arch/x86/kvm/kvm", "drivers/crypto/ccp/ccp", "arch/x86/kvm/kvm-amd")
OTX2 = "drivers/net/ethernet/marvell/octeontx2/"
ROWS = {
    "sid-amd64": Row("sid", "amd64", "x86_64", "max", "kvm", AMD64, "kvmdrive", "irqfd_wakeup", ""),
    "trixie-amd64": Row("trixie", "amd64", "x86_64", "max", "kvm", AMD64, "kvmdrive", "irqfd_wakeup", ""),
    # No IBT: nothing at risk, the control of the rows above.
    "bookworm-amd64": Row("bookworm", "amd64", "x86_64", "max", "kvm", AMD64, "kvmdrive", "irqfd_wakeup", ""),
    # rvu_nicpf: the one module of the arm64 tree with dead weak bodies (kvm is built in).
    "sid-arm64": Row("sid", "arm64", "aarch64", "", "rvu_nicpf", (OTX2 + "af/rvu_mbox", OTX2 + "nic/otx2_ptp",
                     "drivers/net/macsec", OTX2 + "nic/rvu_nicpf"), "none", "", "aarch64-linux-gnu"),
    "sid-ppc64el": Row("sid", "ppc64el", "ppc64le", "", "kvm", ("arch/powerpc/kvm/kvm",), "none", "",
                       "powerpc64le-linux-gnu"),
    "sid-riscv64": Row("sid", "riscv64", "riscv64", "", "kvm", ("arch/riscv/kvm/kvm",), "none", "",
                       "riscv64-linux-gnu"),
}
HERE = Path(__file__).resolve().parent


def build_livepatch(row, r, kver, config, rdir):
    """scripts/probe/livepatch.c built against the release's own headers
    (linux-headers-KVER) with the gcc that built the kernel
    (CONFIG_CC_VERSION_TEXT), in a Debian root kept in the cache."""
    broot = Path(os.environ.get("ZWM_CACHE") or Path.home() / ".cache/zero-weak-mcount",
                 "probe-build", f"{r.suite}-{r.debarch}-{kver}")
    # "x86_64-linux-gnu-gcc-14 (Debian ...)" from 6.12 on, "gcc-12 (Debian ...)" in 6.1.
    gcc = re.search(r'^CONFIG_CC_VERSION_TEXT="(?:.*-)?gcc-(\d+) ', config.read_text(), re.M)
    if not gcc:
        raise RuntimeError(f"no gcc version in {config}")
    # A release's newest kernel is often in its -security suite only.
    mirrors = [f"deb {os.environ.get('ZWM_DEBIAN_MIRROR') or 'http://deb.debian.org/debian'} {r.suite} main"]
    if r.suite != "sid":
        mirrors.append(f"deb {os.environ.get('ZWM_DEBIAN_SECURITY') or 'http://deb.debian.org/debian-security'} "
                       f"{r.suite}-security main")
    if not (broot / f"usr/src/linux-headers-{kver}").is_dir():
        log(f"{row}: making a {r.suite} root with gcc-{gcc[1]} and linux-headers-{kver}")
        shutil.rmtree(broot, ignore_errors=True)
        broot.parent.mkdir(parents=True, exist_ok=True)
        with open(rdir / "mmdebstrap.log", "w") as out:
            if run(["nice", "mmdebstrap", "--variant=apt", '--aptopt=Acquire::Check-Valid-Until "false"',
                    '--aptopt=Acquire::Check-Date "false"', f"--include=make,gcc-{gcc[1]},libc6-dev,linux-headers-{kver}",
                    r.suite, broot, *mirrors], stdout=out, stderr=subprocess.STDOUT).returncode:
                shutil.rmtree(broot, ignore_errors=True)
                raise RuntimeError(f"mmdebstrap failed ({rdir}/mmdebstrap.log)")
    shutil.rmtree(broot / "build", ignore_errors=True)
    (broot / "build").mkdir()
    shutil.copy(HERE / "livepatch.c", broot / "build/zwm_probe_livepatch.c")
    (broot / "build/Kbuild").write_text("obj-m := zwm_probe_livepatch.o\n")
    # objtool reads /proc.
    if run(["mount", "-t", "proc", "proc", broot / "proc"]).returncode:
        raise RuntimeError(f"cannot mount proc in {broot}")
    with open(rdir / "livepatch-build.log", "w") as out:
        rc = run(["nice", "chroot", broot, "make", "-C", f"/usr/src/linux-headers-{kver}", "M=/build", "modules"],
                 stdout=out, stderr=subprocess.STDOUT).returncode
    run(["umount", broot / "proc"])
    if rc:
        raise RuntimeError(f"building the livepatch failed ({rdir}/livepatch-build.log)")
    shutil.copy(broot / "build/zwm_probe_livepatch.ko", rdir / "probe/livepatch.ko")


def run_row(row, r, work):
    """Fetch, process, build the guest's programs, boot stock and processed,
    judge; returns the row's failures."""
    rdir = work / row
    for d in ("stock/mods", "processed/mods", "probe"):
        (rdir / d).mkdir(parents=True, exist_ok=True)
    kver, kernel, config, bb, files = guest.debian_kernel(r.suite, r.debarch, r.arch, r.chain)
    names = [guest.module_name(f) for f in files]
    for f, n in zip(files, names):
        data = guest.read_module(f)   # as Debian ships it: decompressed, still signed (the kernel checks it)
        for v in ("stock", "processed"):
            (rdir / v / "mods" / f"{n}.ko").write_bytes(data)
    # The tool's report (docs/report-format.md): the weak entries, at_risk
    # before and at_risk_after.
    with open(rdir / "tool.json", "w") as out, open(rdir / "tool.log", "w") as err:
        if run([guest.ZWM, "--format=json", "--signed=strip", "--kconfig", config, "-o",
                rdir / f"processed/mods/{r.module}.ko", rdir / f"stock/mods/{r.module}.ko"],
               stdout=out, stderr=err).returncode:
            return [f"the tool failed on {r.module}.ko: {(rdir / 'tool.log').read_text()[-300:]}"]
    probe = rdir / "probe"
    funcs = functions(rdir / "tool.json")
    if not funcs:
        return ["no function precedes a dead body"]
    (probe / "functions").write_text("\n".join(funcs) + "\n")
    (probe / "module").write_text(r.module + "\n")
    (probe / "workload").write_text(r.workload + "\n")
    cc = f"{r.cross}-gcc" if r.cross else "gcc"
    if r.workload == "none":
        (probe / "none").write_text('#!/bin/sh\necho "none: ok (no workload)"\n')
        (probe / "none").chmod(0o755)
    for prog in ([] if r.workload == "none" else [r.workload]) + ["kpeek", "fentry"]:
        if run([cc, "-O2", "-Wall", "-static", "-o", probe / prog, HERE / f"{prog}.c"]).returncode:
            return [f"cannot build {HERE / prog}.c"]
    if r.livepatch:
        build_livepatch(row, r, kver, config, rdir)
        (probe / "livepatch-function").write_text(r.livepatch + "\n")
    for v in ("stock", "processed"):
        log(f"{row}: booting {v} ({' '.join(names)})")
        vdir = rdir / v
        rc = run(["nice", guest.REPO / "scripts/guest/run.sh", "--arch", r.arch, *(["--cpu", r.cpu] if r.cpu else []),
                  "--kernel", PATCH1 or kernel, "--busybox", bb, "--out", vdir / "boot", "--mem", "1024", "--timeout", "1200",
                  "--payload", guest.REPO / "scripts/guest/payload/probe.sh", "--add", f"{probe}=/probe",
                  *(vdir / "mods" / f"{n}.ko" for n in names)]).returncode
        secs = vdir / "boot/boot-seconds"
        log(f"{row}: {v} boot: rc {rc}, {secs.read_text().strip() if secs.exists() else '?'}s")
        if rc:
            return [f"{v} boot rc {rc} ({vdir}/boot/console.log)"]
        try:
            facts(vdir / "boot", vdir / f"mods/{r.module}.ko", r.arch, vdir / "facts.json")
        except (SystemExit, Exception) as e:
            return [f"{v}: cannot read the boot: {e}"]
    return ["see " + str(rdir / "row.txt")] if row_verdict(rdir / "stock/facts.json", rdir / "processed/facts.json",
                                                           rdir / "tool.json", rdir / "row.txt") else []


def main(argv):
    ap = argparse.ArgumentParser(description="make probe-e2e (docs/probes.md)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from {', '.join(ROWS)}")
    ap.add_argument("--work", default=os.environ.get("ZWM_PROBE_WORK"))
    ap.add_argument("--patch1-kernel", help="boot this build of the row's release and Debian config with "
                    "kernel/0001 instead; the replay then takes the lowest record, and no probe may miss")
    a = ap.parse_args(argv)
    global PATCH1
    PATCH1 = a.patch1_kernel and str(Path(a.patch1_kernel).resolve())
    rows = a.rows.replace(",", " ").split()
    if set(rows) - set(ROWS):
        sys.exit(f"probe-e2e: error: unknown row(s) {sorted(set(rows) - set(ROWS))}")
    multiarch = run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() if shutil.which("gcc") else ""
    need = ["gcc gcc", f"/usr/lib/{multiarch}/libc.a libc6-dev"]
    for r in (ROWS[x] for x in rows):
        need += [f"{r.cross}-gcc gcc-{r.cross}", f"/usr/{r.cross}/lib/libc.a libc6-dev-{r.debarch}-cross"] if r.cross else []
        need += ["mmdebstrap mmdebstrap"] if r.livepatch else []
    guest.host_tools({ROWS[x].arch for x in rows}, need)
    guest.build_tools()
    work = Path(a.work).resolve() if a.work else Path(tempfile.mkdtemp(prefix="zwm-probe."))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work folder: {work}")
    failures = []
    for row in rows:
        try:
            failures += [f"{row}: {f}" for f in run_row(row, ROWS[row], work)]
        except (RuntimeError, OSError) as e:
            failures.append(f"{row}: {e}")
    log(f"work folder: {work}")
    for f in failures:
        log(f"FAIL: {f}")
    if failures:
        return 1
    log(f"PASS ({' '.join(rows)})")
    return 0


if __name__ == "__main__":
    guest.PROG = "probe-e2e"
    for v in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        os.environ.pop(v, None)
    a = sys.argv[1:]
    if a[:1] == ["facts"] and len(a) == 5:
        facts(*a[1:])
    elif a[:1] == ["row"] and len(a) == 5:
        sys.exit(row_verdict(*a[1:]))
    else:
        sys.exit(main(a))

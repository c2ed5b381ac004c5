#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for the zero-weak-mcount end-to-end test (scripts/e2e.sh).

Subcommands:
  prep IN OUT            decompress (.xz/.gz/.zst by magic) and strip an
                         appended module signature; write a plain ELF to OUT
  decompress IN OUT      decompress only (keeps any signature)
  sigstate FILE          print "signed" or "unsigned"
  modname FILE           print the module's name (.modinfo name=)
  parse CONSOLE JSON MOD...
                         parse the console log of a scripts/guest/run.sh boot
                         with payload/ftrace-report.sh into JSON; exit with
                         the boot classification code (see EXIT_* below)
  zeroed STDERR PATH     print the distances of the entries that the tool's
                         -v stderr says it zeroed in PATH, one per line
  empty-table IN OUT     copy a 64-bit module with its __mcount_loc and that
                         table's relocations emptied (sh_size 0): what the
                         tool never writes on s390 (its loader then fails)
  noinit IN OUT          copy a 64-bit module with its init_module relocation
                         turned into R_*_NONE (s390x kvm.ko under TCG)
  compare-contained ORIG.json PROC.json MOD LOG ORIG.ko PROC.ko OFFSETS
                         the comparison for kernels without a check: records
                         are placed in the module files by their ips; LOG is
                         the tool's -v output, OFFSETS the patch-site offsets
                         from a function's symbol (e.g. 4,8)
  compare-named ORIG.json PROC.json MOD LOG ORIG.ko
                         the comparison for kernels without a check that list
                         no record ips (before 6.5): a dead record is a line
                         more of a name than the module has functions of it
  compare ORIG.json PROC.json MOD ZEROED [--label L]
                         check the processed boot against the original one
                         for module MOD; ZEROED is a file of distances (from
                         'zeroed'); print a verdict; exit 0 if all hold, 1 if not
"""
import collections
import json
import re
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402
from guest import (elf_symbols, module_name, read_module, split_lines,  # noqa: E402,F401
                   strip_signature, SIG_MARKER)

# Boot classification (boot_set in scripts/e2e.sh returns these).
EXIT_OK = 0
EXIT_LOAD = 10      # an insmod failed
EXIT_PANIC = 11     # kernel panic / oops / BUG in the console log
EXIT_TIMEOUT = 12   # the guest did not power off in time
EXIT_REPORT = 13    # report missing or incomplete
EXIT_USAGE = 2

BAD_DMESG = ("ftrace bug", "ftrace failed", "WARNING:", "BUG:", "Oops")
PANIC_RE = re.compile(r"Kernel panic|Oops[:\s]|BUG: |general protection fault|"
                      r"Unable to handle kernel|kernel BUG at")


def die(msg, code=EXIT_USAGE):
    print(f"zwm_e2e: error: {msg}", file=sys.stderr)
    sys.exit(code)


def cmd_prep(src, dst):
    data = read_module(src)
    try:
        elf, signed = strip_signature(data)
    except ValueError as e:
        die(f"{src}: {e}")
    if elf[:4] != b"\x7fELF":
        die(f"{src}: not an ELF module after decompression")
    with open(dst, "wb") as f:
        f.write(elf)
    print(f"zwm_e2e: {src} -> {dst} ({len(elf)} bytes"
          f"{', signature stripped' if signed else ''})", file=sys.stderr)


def is_mapping_symbol(name):
    return name.startswith((".L", "L0", "$")) or not name


def place_records(module, addrs, sections):
    """Place each record (ip, name) of a loaded module in its file: the
    section holding the ip, the offset in it, and the sized function symbol
    (STT_FUNC) that contains it. Returns (placed, problems): placed is a
    list of (name, section, offset, function, offset - function start)."""
    symbols, sizes = elf_symbols(read_module(module))
    funcs = [y for y in symbols if y["type"] == 2 and y["size"] > 0 and y["section"]]
    placed, problems = [], []
    for ip, name in addrs:
        hit = [(sec, ip - base) for sec, base in sections.items()
               if sec in sizes and base <= ip < base + sizes[sec]]
        if len(hit) != 1:
            problems.append(f"record {name} at {ip:#x} lies in {len(hit)} sections of the module")
            continue
        sec, off = hit[0]
        inside = [f for f in funcs if f["section"] == sec and f["value"] & ~1 <= off < f["value"] + f["size"]]
        if not inside:
            placed.append((name, sec, off, None, None))
            continue
        f = min(inside, key=lambda f: off - f["value"])
        placed.append((name, sec, off, f["name"], off - (f["value"] & ~1)))
    return placed, problems


def cmd_empty_table(src, dst, table="__mcount_loc"):
    """Write a copy of the 64-bit module SRC whose callsite table and its
    relocation section have sh_size 0: every entry dropped."""
    data = bytearray(read_module(src))
    if data[4] != 2:
        die(f"{src}: empty-table handles 64-bit modules only")
    e = guest.elf_header(data)[0]
    hits = 0
    for i, (name, *_rest) in enumerate(guest.elf_sections(data)):
        if name in (table, ".rela" + table):
            struct.pack_into(e + "Q", data, guest.elf_shdr_offset(data, i) + 32, 0)   # sh_size
            hits += 1
    if hits != 2:
        die(f"{src}: no {table} with its .rela{table}")
    with open(dst, "wb") as f:
        f.write(data)


def cmd_noinit(src, dst):
    """Write a copy of the s390x module SRC whose loader sees no init and no
    exit: the RELA relocations that store init_module and cleanup_module
    into .gnu.linkonce.this_module become R_390_NONE (0), so both pointers
    stay 0; do_init_module() calls nothing, and rmmod runs no exit that
    would tear down what init never set up. For kvm.ko under TCG, which has
    no SIE for kvm_s390_init() to find; the callsite table is untouched."""
    data = bytearray(read_module(src))
    if data[4] != 2:
        die(f"{src}: noinit handles 64-bit modules only")
    e = guest.elf_header(data)[0]
    secs = guest.elf_sections(data)
    rela = [s for s in secs if s[0] == ".rela.gnu.linkonce.this_module"]
    if len(rela) != 1:
        die(f"{src}: no single .rela.gnu.linkonce.this_module")
    _n, _t, _f, off, size, link, _e = rela[0]
    symtab = secs[link]
    symstr = secs[symtab[5]][3]
    hits = 0
    for at in range(off, off + size, 24):
        info, = struct.unpack_from(e + "Q", data, at + 8)
        sym = info >> 32
        name_at, = struct.unpack_from(e + "I", data, symtab[3] + sym * 24)
        name = data[symstr + name_at:data.index(b"\0", symstr + name_at)]
        if name in (b"init_module", b"cleanup_module"):
            struct.pack_into(e + "Q", data, at + 8, sym << 32)    # type 0: R_*_NONE
            hits += name == b"init_module"
    if hits != 1:
        die(f"{src}: {hits} relocations against init_module, expected 1")
    with open(dst, "wb") as f:
        f.write(data)


# The tool says "zero" or "drop" for an entry, after its neutraliser.
ZERO_AT_RE = re.compile(r"^zero-weak-mcount: .*: (?:zero|drop) (\S+)\+(0x[0-9a-f]+) \((?:distance \d+ after (\S+)\)|.*no symbol)")


def zeroed_locations(log):
    """(section, offset, name or None) of each entry the tool's -v log says it zeroed or dropped."""
    out = []
    for ln in open(log, errors="replace"):
        m = ZERO_AT_RE.match(ln.rstrip("\n"))
        if m:
            out.append((m.group(1), int(m.group(2), 16), m.group(3)))
    return out


def boot_problems(orig, proc, mod):
    """What the check-less comparisons ask of the boots before anything
    else: both ran to the end, and the processed module loaded."""
    problems = [f"{tag} boot failed: {r.get('why')}"
                for r, tag in ((orig, "original"), (proc, "processed")) if r.get("exit") != EXIT_OK]
    if proc["insmod"].get(mod) != 0:
        problems.append(f"processed {mod} did not load (insmod rc {proc['insmod'].get(mod)})")
    return problems


def after_load_problems(orig, proc, mod):
    """And after: the smoke test passed and dmesg is clean, in each boot."""
    problems = []
    for r, tag in ((orig, "original"), (proc, "processed")):
        s = r["smoke"].get(mod)
        if not s or s["result"] != "ok":
            problems.append(f"{tag}: ftrace smoke test for {mod} failed: {s['detail'] if s else 'no result'}")
        problems += [f"{tag} dmesg: {ln.strip()}" for ln in r["dmesg"] if any(b in ln for b in BAD_DMESG)]
    return problems


def compare_contained(orig, proc, mod, log, orig_ko, proc_ko, patch_offsets):
    """The comparison for kernels without a check (arm64, riscv, s390): a
    dead weak record is listed under the name of the function before it, so
    it is told apart by where its ip lies in the module file, not by name.
    Returns (ok, facts, problems)."""
    problems = boot_problems(orig, proc, mod)
    zeroed = zeroed_locations(log)
    placed = {}
    for r, ko, tag in ((orig, orig_ko, "original"), (proc, proc_ko, "processed")):
        addrs = r["addrs"].get(mod, [])
        if len(addrs) != len(r["aff"].get(mod, [])):
            problems.append(f"{tag}: {len(addrs)} record ips for {len(r['aff'].get(mod, []))} lines")
        placed[tag], probs = place_records(ko, addrs, r["sections"].get(mod, {}))
        problems += [f"{tag}: {p}" for p in probs]
    dead = [p for p in placed["original"] if p[3] is None]
    facts = dict(
        lines_before=len(orig["aff"].get(mod, [])), lines_after=len(proc["aff"].get(mod, [])),
        invalid_before=len(dead), invalid_after=sum(1 for p in placed["processed"] if p[3] is None),
        zeroed=len(zeroed),
        patch_offsets=sorted({p[4] for p in placed["processed"] if p[4] is not None}),
    )
    if facts["lines_before"] == 0:
        problems.append(f"original boot shows no available_filter_functions lines for {mod}")
    # Every record left is at a function's patch site, named after it.
    symbols, _ = elf_symbols(read_module(proc_ko))
    for name, sec, off, func, delta in placed["processed"] + [p for p in placed["original"] if p[3]]:
        if func is None:
            problems.append(f"processed record {name} at {sec}+{off:#x} lies in no sized function")
        elif delta not in patch_offsets:
            problems.append(f"record {name} at {sec}+{off:#x} is {delta} bytes into {func}, not at a patch site {patch_offsets}")
        elif name not in {y["name"] for y in symbols if y["section"] == sec and y["value"] & ~1 == off - delta}:
            problems.append(f"record {name} at {sec}+{off:#x} is named after no symbol at the start of {func}")
    # Each zeroed entry was one dead record, just before its ip.
    unmatched = list(dead)
    for sec, at, name in zeroed:
        hit = [p for p in unmatched if p[1] == sec and 0 <= p[2] - at <= 16 and (name is None or p[0] == name)]
        if not hit:
            problems.append(f"zeroed {sec}+{at:#x} ({name}) matches no dead record of the original boot")
        else:
            unmatched.remove(hit[0])
    if unmatched:
        problems.append(f"dead records not zeroed: {[(p[0], p[1], hex(p[2])) for p in unmatched]}")
    # The remaining lines are the original ones less exactly the dead ones.
    ov = collections.Counter(orig["aff"].get(mod, [])) - collections.Counter(f"{p[0]} [{mod}]" for p in dead)
    pv = collections.Counter(proc["aff"].get(mod, []))
    if ov != pv:
        lost, gained = counter_diff(ov, pv), counter_diff(pv, ov)
        problems.append(f"valid lines differ: {len(lost)} missing after processing (e.g. {lost[:5]}), "
                        f"{len(gained)} new (e.g. {gained[:5]})")
    problems += after_load_problems(orig, proc, mod)
    return (not problems), facts, problems


def compare_named(orig, proc, mod, log, orig_ko):
    """The comparison for kernels without a check that do not list record
    ips (available_filter_functions_addrs is 6.5 on). A dead weak record is
    listed under the name of the symbol before it, so a name listed more
    often than the module has sized functions of that name carries dead
    records. After processing there must be none; the lines removed must be
    exactly those the tool says it zeroed (by that name); no line is new.
    Returns (ok, facts, problems)."""
    problems = boot_problems(orig, proc, mod)
    symbols, _ = elf_symbols(read_module(orig_ko))
    funcs = collections.Counter(f"{y['name']} [{mod}]" for y in symbols if y["type"] == 2 and y["size"] > 0)
    ol = collections.Counter(orig["aff"].get(mod, []))
    pl = collections.Counter(proc["aff"].get(mod, []))

    def dead(lines):
        return sum(max(0, n - funcs[name]) for name, n in lines.items())
    zeroed = zeroed_locations(log)
    facts = dict(lines_before=sum(ol.values()), lines_after=sum(pl.values()),
                 invalid_before=dead(ol), invalid_after=dead(pl), zeroed=len(zeroed))
    if facts["lines_before"] == 0:
        problems.append(f"original boot shows no available_filter_functions lines for {mod}")
    invalid = [ln for ln in pl if ln.startswith(guest.INVALID)]
    if invalid:
        problems.append(f"processed {mod} has {len(invalid)} __ftrace_invalid_address___ line(s)")
    if facts["invalid_after"]:
        extra = sorted(n for n, c in pl.items() if c > funcs[n])
        problems.append(f"processed {mod} still lists {facts['invalid_after']} dead duplicate(s): {extra[:5]}")
    removed, gained = ol - pl, pl - ol
    claimed = collections.Counter(f"{name} [{mod}]" for _, _, name in zeroed if name)
    unnamed = sum(1 for _, _, name in zeroed if not name)
    lost = counter_diff(removed, claimed)
    if len(lost) > unnamed or gained:
        problems.append(f"valid lines differ: {len(lost) - unnamed} missing after processing (e.g. {lost[:5]}), "
                        f"{sum(gained.values())} new (e.g. {counter_diff(gained, collections.Counter())[:5]})")
    if counter_diff(claimed, removed):
        problems.append(f"zeroed entries whose line did not go: {counter_diff(claimed, removed)[:5]}")
    problems += after_load_problems(orig, proc, mod)
    return (not problems), facts, problems


def cmd_decompress(src, dst):
    data = read_module(src)
    with open(dst, "wb") as f:
        f.write(data)


def cmd_sigstate(path):
    print("signed" if read_module(path).endswith(SIG_MARKER) else "unsigned")


def parse_console(text, modules):
    """The facts of one e2e boot (payload/ftrace-report.sh) for JSON."""
    con = guest.parse(text)
    blocks = con["blocks"]

    def named(tag, keep):
        return {name: [x for x in lines if keep(x, name)]
                for (t, name), lines in blocks.items() if t == tag}
    rep = {
        "begin": con["begin"], "end": con["end"], "tracefs": con["tracefs"],
        "insmod": {f[0]: int(f[1].split("=", 1)[1]) for f in guest.marked(con, "INSMOD") if len(f) >= 2},
        "rmmod": {f[0]: int(f[1].split("=", 1)[1]) for f in guest.marked(con, "RMMOD") if len(f) >= 2},
        "smoke": {f[0]: {"result": f[1], "detail": " ".join(f[2:])}
                  for f in guest.marked(con, "SMOKE") if len(f) >= 2},
        "aff": named("AFF", lambda x, m: x.endswith(f" [{m}]")),
        "addrs": {m: [[int(x.split()[0], 16), x.split()[1]] for x in lines]
                  for m, lines in named("ADDRS", lambda x, m: x.endswith(f" [{m}]") and len(x.split()) == 3).items()},
        "sections": {m: {x.split()[0]: int(x.split()[1], 16) for x in lines}
                     for m, lines in named("SECTIONS", lambda x, m: len(x.split()) == 2 and x.split()[1].startswith("0x")).items()},
        "dmesg": con["dmesg"], "panic": con["panic"],
    }
    # Lines with ips stand for the plain list, which the guest then omits.
    for m, recs in rep["addrs"].items():
        rep["aff"].setdefault(m, [f"{name} [{m}]" for _ip, name in recs])
    rep["modules"] = modules
    return rep


def classify(rep, timed_out):
    if rep["panic"]:
        return EXIT_PANIC, "kernel panic/oops: " + rep["panic"][0].strip()
    for m in rep["modules"]:
        rc = rep["insmod"].get(m)
        if rc is not None and rc != 0:
            return EXIT_LOAD, f"insmod {m} failed (rc {rc})"
    if timed_out:
        return EXIT_TIMEOUT, "timeout: the guest did not power off"
    if not rep["begin"] or not rep["end"]:
        return EXIT_REPORT, "report missing or incomplete (no BEGIN/END marker)"
    for m in rep["modules"]:
        if m not in rep["insmod"]:
            return EXIT_REPORT, f"no insmod result for {m}"
        if m not in rep["aff"]:
            return EXIT_REPORT, f"no available_filter_functions section for {m}"
    return EXIT_OK, "ok"


def cmd_parse(console, out, modules, timed_out=False):
    text = open(console, "rb").read().decode("utf-8", "replace")
    rep = parse_console(text, modules)
    code, why = classify(rep, timed_out)
    rep["exit"] = code
    rep["why"] = why
    with open(out, "w") as f:
        json.dump(rep, f, indent=1)
    return code, why


ZERO_RE = re.compile(r"^zero-weak-mcount: (.*): (?:zero|drop) \S+ \(distance (\d+)")


def zeroed_distances(stderr_path, path=None):
    out = []
    for ln in open(stderr_path, errors="replace"):
        m = ZERO_RE.match(ln.rstrip("\n"))
        if m and (path is None or m.group(1) == path):
            out.append(int(m.group(2)))
    return out


def counter_diff(a, b):
    """Elements of a not in b, as a sorted list (multiset difference)."""
    return sorted((a - b).elements())


def compare(orig, proc, mod, zeroed, label=""):
    """Return (ok, facts, problems)."""
    problems = []
    facts = {}
    if orig.get("exit") != EXIT_OK:
        problems.append(f"original boot failed: {orig.get('why')}")
    if proc.get("exit") != EXIT_OK:
        problems.append(f"processed boot failed: {proc.get('why')}")
    if proc["insmod"].get(mod) != 0:
        problems.append(f"processed {mod} did not load (insmod rc {proc['insmod'].get(mod)})")
    ov, oi = split_lines(orig["aff"].get(mod, []))
    pv, pi = split_lines(proc["aff"].get(mod, []))
    facts.update(
        lines_before=sum(ov.values()) + sum(oi.values()),
        invalid_before=sum(oi.values()),
        lines_after=sum(pv.values()) + sum(pi.values()),
        invalid_after=sum(pi.values()),
        zeroed=len(zeroed),
    )
    if facts["lines_before"] == 0:
        problems.append(f"original boot shows no available_filter_functions lines for {mod}")
    if pi:
        problems.append(f"processed {mod} still has {sum(pi.values())} invalid line(s): "
                        f"distances {sorted(pi.elements())}")
    if ov != pv:
        lost = counter_diff(ov, pv)
        gained = counter_diff(pv, ov)
        msg = f"valid lines differ: {len(lost)} missing after processing"
        if lost:
            msg += f" (e.g. {lost[:5]})"
        msg += f", {len(gained)} new"
        if gained:
            msg += f" (e.g. {gained[:5]})"
        problems.append(msg)
    removed = oi - pi
    zc = collections.Counter(zeroed)
    if removed != zc:
        problems.append(
            "removed invalid lines do not match the zeroed entries: kernel removed "
            f"distances {sorted(removed.elements())}, tool zeroed {sorted(zc.elements())}")
    for r, tag in ((orig, "original"), (proc, "processed")):
        s = r["smoke"].get(mod)
        if not s or s["result"] != "ok":
            problems.append(f"{tag}: ftrace smoke test for {mod} failed: "
                            f"{s['detail'] if s else 'no result'}")
    for ln in proc["dmesg"]:
        if any(b in ln for b in BAD_DMESG):
            problems.append(f"processed dmesg: {ln.strip()}")
    for ln in orig["dmesg"]:
        if any(b in ln for b in BAD_DMESG):
            problems.append(f"original dmesg: {ln.strip()}")
    return (not problems), facts, problems


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd = argv[1]
    if cmd == "prep" and len(argv) == 4:
        cmd_prep(argv[2], argv[3])
    elif cmd == "decompress" and len(argv) == 4:
        cmd_decompress(argv[2], argv[3])
    elif cmd == "modname" and len(argv) == 3:
        print(module_name(argv[2]))
    elif cmd == "sigstate" and len(argv) == 3:
        cmd_sigstate(argv[2])
    elif cmd == "parse" and len(argv) >= 4:
        args = argv[2:]
        timed_out = False
        if "--timed-out" in args:
            args.remove("--timed-out")
            timed_out = True
        code, why = cmd_parse(args[0], args[1], args[2:], timed_out)
        print(why)
        sys.exit(code)
    elif cmd == "zeroed" and len(argv) in (3, 4):
        for d in zeroed_distances(argv[2], argv[3] if len(argv) == 4 else None):
            print(d)
    elif cmd == "empty-table" and len(argv) == 4:
        cmd_empty_table(argv[2], argv[3])
    elif cmd == "noinit" and len(argv) == 4:
        cmd_noinit(argv[2], argv[3])
    elif cmd == "compare-contained" and len(argv) == 9:
        orig = json.load(open(argv[2]))
        proc = json.load(open(argv[3]))
        offsets = {int(x) for x in argv[8].split(",")}
        ok, facts, problems = compare_contained(orig, proc, argv[4], argv[5], argv[6], argv[7], offsets)
        facts["ok"] = ok
        facts["problems"] = problems
        print(json.dumps(facts))
        sys.exit(0 if ok else 1)
    elif cmd == "compare-named" and len(argv) == 7:
        orig = json.load(open(argv[2]))
        proc = json.load(open(argv[3]))
        ok, facts, problems = compare_named(orig, proc, argv[4], argv[5], argv[6])
        facts["ok"] = ok
        facts["problems"] = problems
        print(json.dumps(facts))
        sys.exit(0 if ok else 1)
    elif cmd == "compare" and len(argv) >= 6:
        orig = json.load(open(argv[2]))
        proc = json.load(open(argv[3]))
        mod = argv[4]
        zeroed = [int(x) for x in open(argv[5]).read().split()]
        label = argv[7] if len(argv) >= 8 and argv[6] == "--label" else ""
        ok, facts, problems = compare(orig, proc, mod, zeroed, label)
        facts["ok"] = ok
        facts["problems"] = problems
        print(json.dumps(facts))
        sys.exit(0 if ok else 1)
    else:
        die(__doc__)


if __name__ == "__main__":
    main(sys.argv)

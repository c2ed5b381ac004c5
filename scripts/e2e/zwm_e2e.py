#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e: prove zero-weak-mcount in real kernels (docs/e2e.md: the cases, the
checks, the results).

  scripts/e2e/zwm_e2e.py [--group check|old|build] [--cases A,B] [--negative]
                         [--no-negative] [--work DIR]
  scripts/e2e/zwm_e2e.py boot ARCH KERNEL BUSYBOX OUT MODULE...

Environment: ZWM (the tool; default target/release/zero-weak-mcount, built
with cargo), ZWM_ZERO_EXTRA, ZWM_CACHE (scripts/fetch-debian-kernel.sh),
ZWM_E2E_WORK (work folder). Exit status 0 when every case passed and every
negative control was detected, 1 otherwise.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts/guest"))
import guest  # noqa: E402
from guest import log, run, tool  # noqa: E402

X86 = ("virt/lib/irqbypass", "arch/x86/kvm/kvm")
IB = ("drivers/infiniband/core/ib_core", "drivers/infiniband/core/ib_uverbs",
      "drivers/infiniband/sw/rdmavt/rdmavt", "drivers/dca/dca", "drivers/infiniband/hw/qib/ib_qib")
PPC = ("arch/powerpc/kvm/kvm",)
ARM64 = ("drivers/net/ethernet/marvell/octeontx2/af/rvu_mbox", "drivers/net/ethernet/marvell/octeontx2/nic/otx2_ptp",
         "drivers/net/macsec", "drivers/net/ethernet/marvell/octeontx2/nic/rvu_nicpf")
OLD = {"ZWM_DEBIAN_SECURITY": "none"}   # bullseye: the security suite is gone


@dataclass(frozen=True)
class Case:
    name: str
    suite: str            # Debian suite (scripts/fetch-debian-kernel.sh), "" for a clang build
    debarch: str
    arch: str             # a row of scripts/guest/arches.tsv
    mods: tuple           # under lib/modules/KVER/kernel/, no .ko; loaded in this order
    variants: tuple = ("tool-default",)
    group: str = "check"
    compare: str = "checked"
    patch_sites: tuple = ()   # contained: offsets from a function's symbol to its record
    noinit: bool = False      # boot copies without their init call (s390x kvm.ko: TCG has no SIE)
    reuse: str = ""           # the case whose original boot this one reuses
    kind: str = "debian"      # debian, testdata (plus testdata/zwm_test), empty, clang
    env: dict = field(default_factory=dict)


# The one list of cases, in the order they run. PATCH_SITES come from each
# arch's ftrace_call_adjust() and CC_FLAGS_FTRACE in 7.2 (docs/e2e.md).
CASES = [
    Case("bookworm-amd64", "bookworm", "amd64", "x86_64", X86, ("tool-kconfig", "tool-default"), kind="testdata"),
    Case("sid-amd64", "sid", "amd64", "x86_64", X86),
    Case("sid-ppc64el", "sid", "ppc64el", "ppc64le", PPC, ("tool-default", "unprocessed")),
    Case("trixie-ppc64el", "trixie", "ppc64el", "ppc64le", PPC, ("tool-kconfig", "tool-default")),
    Case("trixie-amd64", "trixie", "amd64", "x86_64", X86 + IB),
    Case("bookworm-i386", "bookworm", "i386", "i386", X86),
    Case("bookworm-ppc64el", "bookworm", "ppc64el", "ppc64le", PPC, ("tool-default", "zero-extra"), compare="named"),
    Case("sid-arm64", "sid", "arm64", "aarch64", ARM64, compare="contained", patch_sites=(4, 8)),
    Case("sid-riscv64", "sid", "riscv64", "riscv64", ("arch/riscv/kvm/kvm",), compare="contained", patch_sites=(4,)),
    Case("sid-s390x", "sid", "s390x", "s390x", ("arch/s390/kvm/kvm",), compare="contained", patch_sites=(0,),
         noinit=True),
    Case("negative", "sid", "amd64", "x86_64", X86, ("zero-extra",), reuse="sid-amd64"),
    Case("negative-arm64", "sid", "arm64", "aarch64", ARM64, ("zero-extra",), compare="contained",
         patch_sites=(4, 8), reuse="sid-arm64"),
    Case("bullseye-amd64", "bullseye", "amd64", "x86_64", X86 + IB, ("tool-default", "zero-extra"), "old",
         compare="named", env=OLD),
    Case("bullseye-arm64", "bullseye", "arm64", "aarch64", ("drivers/net/macsec",), ("tool-default", "zero-extra"),
         "old", compare="named", env=OLD),
    Case("bookworm-arm64", "bookworm", "arm64", "aarch64", ("drivers/net/macsec",), ("tool-default", "zero-extra"),
         "old", compare="named"),
    Case("bpo-arm64", "bookworm-backports", "arm64", "aarch64", ARM64, ("tool-default", "zero-extra"), "old",
         compare="contained", patch_sites=(4, 8), env={"ZWM_KERNEL_IMAGE": "linux-image-6.12.94+deb12-arm64"}),
    # s390's module_finalize() sizes its trampolines from __mcount_loc: a
    # module as processed loads, the same with its table emptied must not.
    Case("s390x-empty", "sid", "s390x", "s390x", ("drivers/net/dummy",), (), "old", kind="empty"),
    # A whole kernel built with clang (scripts/build-clang-kernel.sh). clang
    # builds ppc64le with plain -pg: that kernel checks nothing, so
    # zero-extra has nothing to act on there.
    Case("clang-amd64", "", "amd64", "x86_64", X86, ("tool-kconfig", "tool-default", "zero-extra"), "build",
         kind="clang"),
    Case("clang-ppc64el", "", "ppc64el", "ppc64le", PPC, ("tool-kconfig", "tool-default"), "build", kind="clang"),
]
BY_NAME = {c.name: c for c in CASES}
COLUMNS = ("case", "variant", "kernel", "module", "max off", "lines before", "lines after", "invalid before",
           "invalid after", "zeroed", "result", "boot s", "default=kconfig", "case wall s")
STT_FUNC = 2
# The negative controls, by the problem one module at least must show: one valid entry
# more zeroed; the original boot judged as the processed one (a dead second line).
NEGATIVE = {"zero-extra": "valid lines differ: 1 missing after processing", "unprocessed": "processed {}: "}
# Boot classification.
EXIT_OK, EXIT_LOAD, EXIT_PANIC, EXIT_TIMEOUT, EXIT_REPORT = 0, 10, 11, 12, 13


def weak(report):
    """The entries the tool neutralised (or would): (section, offset, symbol, distance)."""
    return [(f["section"], int(f["offset"], 16), f["symbol"], f["distance"])
            for f in report["findings"] if f["verdict"] == "weak"]


# --- boots ---------------------------------------------------------------------------
def parse_console(text, modules):
    """The facts of one boot (payload/ftrace-report.sh): per module, its
    available_filter_functions lines ("aff"), record ips ("addrs", 6.5 on,
    where they stand for "aff" too) and section addresses."""
    con = guest.parse(text)
    rep = {k: con[k] for k in ("begin", "end", "dmesg", "panic")}
    rep.update(modules=modules, aff={}, addrs={}, sections={},
               insmod={f[0]: int(f[1].split("=", 1)[1]) for f in guest.marked(con, "INSMOD") if len(f) >= 2},
               smoke={f[0]: {"result": f[1], "detail": " ".join(f[2:])} for f in guest.marked(con, "SMOKE") if len(f) >= 2})
    for (tag, m), lines in con["blocks"].items():
        mine = [x for x in lines if x.endswith(f" [{m}]")]
        if tag == "AFF":
            rep["aff"][m] = mine
        elif tag == "ADDRS":
            rep["addrs"][m] = [[int(x.split()[0], 16), x.split()[1]] for x in mine if len(x.split()) == 3]
            rep["aff"].setdefault(m, [f"{name} [{m}]" for _ip, name in rep["addrs"][m]])
        elif tag == "SECTIONS":
            rep["sections"][m] = {f[0]: int(f[1], 16) for f in map(str.split, lines) if len(f) == 2 and f[1].startswith("0x")}
    return rep


def classify(rep, timed_out):
    if rep["panic"]:
        return EXIT_PANIC, "kernel panic/oops: " + rep["panic"][0].strip()
    for m in rep["modules"]:
        if rep["insmod"].get(m, 0) != 0:
            return EXIT_LOAD, f"insmod {m} failed (rc {rep['insmod'][m]})"
    if timed_out:
        return EXIT_TIMEOUT, "timeout: the guest did not power off"
    if not rep["begin"]:
        return EXIT_REPORT, "report missing (no BEGIN marker)"
    if why := guest.unjudged(rep):
        return EXIT_REPORT, why
    for m in rep["modules"]:
        if m not in rep["insmod"] or m not in rep["aff"]:
            return EXIT_REPORT, f"no insmod result or available_filter_functions section for {m}"
    return EXIT_OK, "ok"


def boot(arch, kernel, busybox, out, mods):
    """Boot MODS under scripts/guest/run.sh; OUT/report.json holds the facts.
    Returns the report (its "exit" one of EXIT_*, 2 for a host error)."""
    names = [guest.module_name(m) for m in mods]
    rc = run([REPO / "scripts/guest/run.sh", "--arch", arch, "--kernel", kernel, "--busybox", busybox,
              "--out", out, "--payload", REPO / "scripts/guest/payload/ftrace-report.sh", *mods]).returncode
    if rc not in (0, 12):
        return {"exit": 2, "why": f"scripts/guest/run.sh exit {rc}"}
    console = Path(out, "console.log").read_bytes().decode("utf-8", "replace")
    rep = parse_console(console, names)
    rep["exit"], rep["why"] = classify(rep, rc == 12)
    rep["seconds"] = Path(out, "boot-seconds").read_text().strip()
    Path(out, "report.json").write_text(json.dumps(rep, indent=1))
    log(f"boot {arch} {' '.join(names)}: {rep['why']} ({rep['seconds']}s) -> {out}")
    if rep["exit"]:
        log("last console lines:\n" + "".join(f"  | {x}\n" for x in console.splitlines()[-25:]))
    return rep


# --- the comparisons: (facts, problems) ------------------------------------------------
def common_problems(orig, proc, mod):
    """Both boots ran to the end, the processed module loaded, the smoke
    test passed and dmesg is clean in each."""
    problems = [f"{tag} boot failed: {r.get('why')}"
                for r, tag in ((orig, "original"), (proc, "processed")) if r.get("exit") != EXIT_OK]
    if proc.get("insmod", {}).get(mod) != 0:
        problems.append(f"processed {mod} did not load (insmod rc {proc.get('insmod', {}).get(mod)})")
    for r, tag in ((orig, "original"), (proc, "processed")):
        s = r.get("smoke", {}).get(mod)
        if not s or s["result"] != "ok":
            problems.append(f"{tag}: ftrace smoke test for {mod} failed: {s['detail'] if s else 'no result'}")
        problems += [f"{tag} dmesg: {x}" for x in guest.bad_lines(r.get("dmesg", []))]
    return problems


def lines_differ(want, got):
    lost, gained = sorted((want - got).elements()), sorted((got - want).elements())
    return (f"valid lines differ: {len(lost)} missing after processing (e.g. {lost[:5]}), "
            f"{len(gained)} new (e.g. {gained[:5]})")


def functions(ko):
    """The module file's sized function symbols, counted by name."""
    syms = guest.elf_symbols(Path(ko).read_bytes())[0]
    return collections.Counter(s["name"] for s in syms if s["type"] == STT_FUNC and s["size"] > 0)


def compare_checked(orig, proc, mod, zeroed, orig_ko, proc_ko, **_):
    ov, oi = guest.split_lines(orig.get("aff", {}).get(mod, []))
    pv, pi = guest.split_lines(proc.get("aff", {}).get(mod, []))
    # A dead record the kernel keeps (it checks none, or it lies within
    # FTRACE_MCOUNT_MAX_OFFSET of a symbol) is a second line of the function before it.
    (od, _), (pd, problems) = (guest.listed_twice(v, functions(ko), f"processed {mod}: ")
                               for v, ko in ((ov, orig_ko), (pv, proc_ko)))
    facts = dict(lines_before=sum(ov.values()) + sum(oi.values()), lines_after=sum(pv.values()) + sum(pi.values()),
                 invalid_before=sum(oi.values()) + sum(od.values()), invalid_after=sum(pi.values()) + sum(pd.values()),
                 zeroed=len(zeroed))
    if pi:
        problems.append(f"processed {mod} still has {sum(pi.values())} invalid line(s): distances {sorted(pi.elements())}")
    if ov - od != pv - pd:
        problems.append(lines_differ(ov - od, pv - pd))
    why = guest.unexplained(oi - pi, od - pd, [(name, d) for _s, _o, name, d in zeroed])
    return facts, problems + ([why] if why else [])


def place_records(ko, addrs, sections):
    """Each record (ip, name) of a loaded module placed in its file: (name,
    section, offset, containing sized function or None, offset into it)."""
    symbols, sizes = guest.elf_symbols(Path(ko).read_bytes())
    funcs = [s for s in symbols if s["type"] == STT_FUNC and s["size"] > 0 and s["section"]]
    placed, problems = [], []
    for ip, name in addrs:
        hit = [(sec, ip - base) for sec, base in sections.items() if sec in sizes and base <= ip < base + sizes[sec]]
        if len(hit) != 1:
            problems.append(f"record {name} at {ip:#x} lies in {len(hit)} sections of the module")
            continue
        sec, off = hit[0]
        inside = [f for f in funcs if f["section"] == sec and f["value"] & ~1 <= off < f["value"] + f["size"]]
        f = min(inside, key=lambda f: off - f["value"]) if inside else None
        placed.append((name, sec, off, f and f["name"], f and off - (f["value"] & ~1)))
    return placed, problems


def compare_contained(orig, proc, mod, zeroed, orig_ko, proc_ko, patch_sites):
    problems, placed = [], {}
    for r, ko, tag in ((orig, orig_ko, "original"), (proc, proc_ko, "processed")):
        addrs = r.get("addrs", {}).get(mod, [])
        if len(addrs) != len(r.get("aff", {}).get(mod, [])):
            problems.append(f"{tag}: {len(addrs)} record ips for {len(r['aff'].get(mod, []))} lines")
        placed[tag], probs = place_records(ko, addrs, r.get("sections", {}).get(mod, {}))
        problems += [f"{tag}: {p}" for p in probs]
    dead = [p for p in placed["original"] if p[3] is None]
    facts = dict(lines_before=len(orig["aff"].get(mod, [])), lines_after=len(proc.get("aff", {}).get(mod, [])),
                 invalid_before=len(dead), invalid_after=sum(1 for p in placed["processed"] if p[3] is None),
                 zeroed=len(zeroed))
    # Every record left is at a function's patch site, named after it.
    symbols, _ = guest.elf_symbols(Path(proc_ko).read_bytes())
    for name, sec, off, func, delta in placed["processed"] + [p for p in placed["original"] if p[3]]:
        if func is None:
            problems.append(f"processed record {name} at {sec}+{off:#x} lies in no sized function")
        elif delta not in patch_sites:
            problems.append(f"record {name} at {sec}+{off:#x} is {delta} bytes into {func}, not at a patch site {patch_sites}")
        elif name not in {s["name"] for s in symbols if s["section"] == sec and s["value"] & ~1 == off - delta}:
            problems.append(f"record {name} at {sec}+{off:#x} is named after no symbol at the start of {func}")
    # Each zeroed entry was one dead record, just before its ip.
    unmatched = list(dead)
    for sec, at, name, _d in zeroed:
        hit = [p for p in unmatched if p[1] == sec and 0 <= p[2] - at <= 16 and (name is None or p[0] == name)]
        if hit:
            unmatched.remove(hit[0])
        else:
            problems.append(f"zeroed {sec}+{at:#x} ({name}) matches no dead record of the original boot")
    if unmatched:
        problems.append(f"dead records not zeroed: {[(p[0], p[1], hex(p[2])) for p in unmatched]}")
    # The remaining lines are the original ones less exactly the dead ones.
    ov = collections.Counter(orig["aff"].get(mod, [])) - collections.Counter(f"{p[0]} [{mod}]" for p in dead)
    pv = collections.Counter(proc.get("aff", {}).get(mod, []))
    if ov != pv:
        problems.append(lines_differ(ov, pv))
    return facts, problems


# Before 6.5 (no ips, no check on some arches) the names alone say it all.
COMPARE = {"checked": compare_checked, "contained": compare_contained, "named": compare_checked}


# --- one run ----------------------------------------------------------------------------
class Run:
    def __init__(self, work):
        self.work, self.rows, self.failures, self.negative = work, [], [], []

    def fail(self, msg):
        self.failures.append(msg)

    def row(self, *cells):
        self.rows.append([str(c) for c in cells])

    def clang(self, case):
        p = run([REPO / "scripts/build-clang-kernel.sh", "--arch", case.arch], stdout=subprocess.PIPE, text=True)
        if p.returncode:
            raise RuntimeError(f"scripts/build-clang-kernel.sh --arch {case.arch} failed")
        obj = Path(p.stdout.strip())
        log(f"{case.name}: kernel build {(obj / 'build-seconds').read_text().strip()}s")
        kver = (obj / "include/config/kernel.release").read_text().strip()
        if case.arch == "x86_64":
            bb, kernel = "/bin/busybox", obj / "arch/x86/boot/bzImage"
        else:
            bb, kernel = guest.debian_kernel("sid", "ppc64el", "ppc64le", ())[3], obj / "vmlinux"
        return kver, kernel, obj / ".config", bb, [obj / f"{m}.ko" for m in case.mods]

    def case(self, case):
        kver, kernel, config, bb, mods = (self.clang(case) if case.kind == "clang" else
                                          guest.debian_kernel(case.suite, case.debarch, case.arch, case.mods, case.env))
        log(f"{case.name}: kernel {kver}")
        cdir = self.work / case.name
        if case.kind == "testdata":
            bdir = cdir / "build"
            if run([REPO / "scripts/build-testdata.sh", "--kver", kver, "--out", bdir], stdout=sys.stderr).returncode:
                raise RuntimeError(f"scripts/build-testdata.sh --kver {kver} failed")
            mods.insert(0, bdir / "zwm_test.ko")
        if case.kind == "empty":
            return self.empty(case, kver, kernel, bb, mods[0], cdir)
        self.variants(case, kver, kernel, config, bb, mods, cdir)

    def variants(self, case, kver, kernel, config, bb, mods, cdir):
        names, agree = [], {}
        for d in ("shipped", "orig"):
            (cdir / d).mkdir(parents=True, exist_ok=True)
        for m in mods:
            name = guest.module_name(m)
            names.append(name)
            shipped, orig = cdir / "shipped" / f"{name}.ko", cdir / "orig" / f"{name}.ko"
            shipped.write_bytes(guest.read_module(m))   # decompressed, signature kept
            hostile("noinit" if case.noinit else "strip", shipped, orig)
            a, b = ({(f[0], f[1]) for f in weak(tool(["--check", "--signed=strip", *k, shipped]))}
                    for k in ([], ["--kconfig", config]))
            agree[name] = "yes" if a == b else "no"
            if a != b:
                log(f"{shipped}: default and --kconfig differ: {sorted(a ^ b)}")
        origs = [cdir / "orig" / f"{n}.ko" for n in names]
        reuse = self.work / case.reuse / "boot-orig"
        if (case.reuse and (reuse / "report.json").exists() and (reuse / "kernel-path").read_text() == str(kernel)
                and json.loads((reuse / "report.json").read_text()).get("modules") == names):
            log(f"{case.name}: reusing the original boot in {reuse}")
            shutil.rmtree(cdir / "boot-orig", ignore_errors=True)
            shutil.copytree(reuse, cdir / "boot-orig")
            orig = json.loads((cdir / "boot-orig/report.json").read_text())
        else:
            log(f"{case.name}: booting the original modules ({' '.join(names)})")
            orig = boot(case.arch, kernel, bb, cdir / "boot-orig", origs)
            (cdir / "boot-orig").mkdir(exist_ok=True)
            (cdir / "boot-orig/kernel-path").write_text(str(kernel))
        if orig["exit"] != EXIT_OK:
            return self.fail(f"{case.name}: the ORIGINAL modules do not boot cleanly ({orig['why']}, {cdir}/boot-orig)")
        for v in case.variants:
            self.variant(case, v, kver, kernel, config, bb, names, cdir, orig, agree)

    def process(self, v, shipped, out, config):
        """Process SHIPPED as variant V into OUT; the report of what the
        tool neutralised (for the negative controls: what the real tool
        would, while OUT is the tool's output with one valid entry more
        zeroed, or the unprocessed module)."""
        if v.startswith("tool-"):
            return tool(["--signed=strip", *(["--kconfig", config] if v == "tool-kconfig" else []), "-o", out, shipped])
        hostile("strip", shipped, f"{out}.in")
        report = tool(["-o", f"{out}.tool", f"{out}.in"])
        if run([ZERO_EXTRA if v == "zero-extra" else "cp", f"{out}.in", out]).returncode:
            raise RuntimeError(f"{v} failed")
        return report

    def variant(self, case, v, kver, kernel, config, bb, names, cdir, orig, agree):
        vdir, procs, reports = cdir / v, [], {}
        vdir.mkdir(exist_ok=True)
        for name in names:
            shipped, out = cdir / "shipped" / f"{name}.ko", vdir / f"{name}.ko"
            try:
                reports[name] = r = self.process(v, shipped, out, config)
            except RuntimeError as e:
                self.fail(f"{case.name}/{v}: processing {name} failed: {e}")
                continue
            # A kernel newer than the rule table is processed with the newest
            # rules; here that meets a real kernel, so it fails until someone
            # reads the new source (docs/rules.md, "Newer kernels").
            self.failures += [f"{case.name}/{v}: {name}: {w}" for w in r["warnings"] if "is newer than" in w]
            # --signed=strip drops the signature of a module it changes; one
            # with nothing to change comes out as it went in, still signed.
            data = out.read_bytes()
            if data.endswith(guest.SIG_MARKER) and data != shipped.read_bytes():
                self.fail(f"{case.name}/{v}: {name} output was changed but still carries a signature")
            if v.startswith("tool-"):
                again = tool(["-o", vdir / f"{name}.again.ko", out])   # idempotence: nothing more to do
                if again["weak"]:
                    self.fail(f"{case.name}/{v}: second run on the processed {name} finds {again['weak']} more")
            if case.noinit:
                hostile("noinit", out, vdir / f"{name}.noinit.ko")
                out = vdir / f"{name}.noinit.ko"
            procs.append(out)
        if len(procs) != len(names):
            return
        proc = orig if v == "unprocessed" else boot(case.arch, kernel, bb, vdir / "boot", procs)
        hit = False
        for name in names:
            zeroed = weak(reports[name])
            facts, problems = COMPARE[case.compare](
                orig, proc, name, zeroed, orig_ko=cdir / "orig" / f"{name}.ko",
                proc_ko=vdir / f"{name}.ko", patch_sites=case.patch_sites)
            problems = common_problems(orig, proc, name) + problems
            if not orig["aff"].get(name):
                problems.insert(0, f"original boot shows no available_filter_functions lines for {name}")
            (vdir / f"{name}.compare.json").write_text(json.dumps({**facts, "problems": problems}, indent=1))
            if v in NEGATIVE:
                caught = any(p.startswith(NEGATIVE[v].format(name)) for p in problems)
                hit |= caught
                verdict = "FAIL-as-expected" if caught else "NOT-DETECTED"
                log(f"negative control {name}: {'; '.join(problems) or 'comparison PASSED'}")
            else:
                verdict = "FAIL" if problems else "PASS"
                if problems:
                    self.fail(f"{case.name}/{v}/{name}: " + "; ".join(problems))
            r = reports[name]   # max off: the rule's max_offset, "in" for in_function, which has none
            self.row(case.name, v, kver, name, {"max_offset": r["max_offset"], "in_function": "in"}.get(r["rule"], "-"),
                     *(facts[k] for k in ("lines_before", "lines_after", "invalid_before", "invalid_after", "zeroed")),
                     verdict, proc.get("seconds", "?"), agree[name])
        if v in NEGATIVE:
            self.negative.append(f"{case.name}/{v} {'detected' if hit else 'NOT detected'}")
            if not hit:
                self.fail(f"negative control {case.name}/{v}: '{NEGATIVE[v]}' was NOT among the problems")

    def empty(self, case, kver, kernel, bb, mod, cdir):
        name = guest.module_name(mod)
        for d in ("processed", "empty"):
            (cdir / d).mkdir(parents=True, exist_ok=True)
        (cdir / f"{name}.shipped.ko").write_bytes(guest.read_module(mod))
        hostile("strip", cdir / f"{name}.shipped.ko", cdir / f"{name}.in.ko")
        tool(["-o", cdir / "processed" / f"{name}.ko", cdir / f"{name}.in.ko"])
        hostile("empty-table", cdir / "processed" / f"{name}.ko", cdir / "empty" / f"{name}.ko")
        ok = boot(case.arch, kernel, bb, cdir / "boot-processed", [cdir / "processed" / f"{name}.ko"])
        bad = boot(case.arch, kernel, bb, cdir / "boot-empty", [cdir / "empty" / f"{name}.ko"])
        lines = len(ok.get("aff", {}).get(name, []))
        self.row(case.name, "processed", kver, name, "-", lines, lines, "-", "-", 0,
                 "PASS" if ok["exit"] == EXIT_OK else "FAIL", ok.get("seconds"), "-")
        refused = bad["exit"] == EXIT_LOAD and "Cannot allocate memory" in (cdir / "boot-empty/console.log").read_text(errors="replace")
        self.row(case.name, "emptied", kver, name, "-", "-", "-", "-", "-", "all",
                 "FAIL-as-expected" if refused else "NOT-DETECTED", bad.get("seconds"), "-")
        if ok["exit"] != EXIT_OK:
            self.fail(f"{case.name}: the processed {name} does not boot cleanly ({ok['why']}, {cdir}/boot-processed)")
        self.negative.append(f"{case.name} {'detected' if refused else 'NOT detected'}")
        if not refused:
            self.fail(f"{case.name}: {name} with an empty __mcount_loc did not fail to load ({bad['why']})")


def hostile(edit, src, dst):
    if run([HOSTILE, edit, src, dst]).returncode:
        raise RuntimeError(f"hostile-edit {edit} {src} failed")


def summary(run_, times, total):
    body = [r + [str(times.get(r[0], "?"))] for r in run_.rows]
    w = [max(len(x) for x in col) for col in zip(COLUMNS, *body)]
    out = [f"\nzero-weak-mcount e2e summary (work folder {run_.work})"]
    out += ["  ".join(x.ljust(n) for x, n in zip(r, w)).rstrip() for r in [list(COLUMNS), *body]]
    out += [f"negative control: {'; '.join(run_.negative) or 'not run'}", f"total wall time: {total}s"]
    text = "\n".join(out) + "\n"
    print(text, end="")
    (run_.work / "summary.txt").write_text(text)


def main(argv):
    if argv[:1] == ["boot"] and len(argv) >= 6:
        os.makedirs(argv[4], exist_ok=True)
        sys.exit(boot(*argv[1:5], argv[5:])["exit"])
    ap = argparse.ArgumentParser(description="Prove zero-weak-mcount in real kernels (docs/e2e.md).")
    ap.add_argument("--group", default="check", choices=("check", "old", "build"))
    ap.add_argument("--cases", help="comma-separated names from CASES")
    ap.add_argument("--negative", action="store_true", help="only the negative controls of group check")
    ap.add_argument("--no-negative", action="store_true")
    ap.add_argument("--work", default=os.environ.get("ZWM_E2E_WORK"))
    a = ap.parse_args(argv)
    names = a.cases.split(",") if a.cases else [c.name for c in CASES if c.group == a.group]
    if a.negative:
        names = [c.name for c in CASES if c.reuse]
    names = [n for n in names if not (a.no_negative and n.startswith("negative"))]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        sys.exit(f"e2e: error: unknown case(s) {unknown}; the cases: {', '.join(BY_NAME)}")
    cases = [BY_NAME[n] for n in names]
    guest.host_tools({c.arch for c in cases},
                     (["/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin qemu-system-data"]
                      if any(c.arch == "riscv64" for c in cases) else [])
                     + (["modinfo kmod"] if any(c.kind == "clang" for c in cases) else []))
    global ZERO_EXTRA, HOSTILE
    ex = guest.build_tools("zero-extra", "hostile-edit")
    ZERO_EXTRA, HOSTILE = os.environ.get("ZWM_ZERO_EXTRA") or ex["zero-extra"], ex["hostile-edit"]
    work = Path(a.work).resolve() if a.work else Path(tempfile.mkdtemp(prefix="zwm-e2e."))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work folder: {work}")
    r, times, t_all = Run(work), {}, time.time()
    for c in cases:
        t0 = time.time()
        log(f"=== case {c.name}")
        try:
            r.case(c)
        except (RuntimeError, OSError, ValueError) as e:
            r.fail(f"{c.name}: {e}")
        times[c.name] = round(time.time() - t0)
    summary(r, times, round(time.time() - t_all))
    if r.failures:
        print("FAILED:\n" + "".join(f"  - {f}\n" for f in r.failures)
              + f"e2e: FAIL ({len(r.failures)} problem(s)); logs in {work}", file=sys.stderr)
        return 1
    if not r.negative:
        log("note: negative control not run (--no-negative / --cases)")
    print(f"e2e: PASS; logs in {work}", file=sys.stderr)
    return 0


ZERO_EXTRA = HOSTILE = None
if __name__ == "__main__":
    guest.PROG = "e2e"
    # Builds run here must not inherit flags from an outer make.
    for v in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        os.environ.pop(v, None)
    sys.exit(main(sys.argv[1:]))

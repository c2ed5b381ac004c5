#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The report library of the guest runner (scripts/guest/run.sh): the
console of a guest that spoke scripts/guest/init's protocol, the module
files it loaded, and the harness's one ELF layer (elf_*: pyelftools, Debian's
python3-pyelftools). Every proof's report imports this; `guest.py modname
FILE` prints a module's name (.modinfo name=), `guest.py secsize FILE NAME`
the size of a section, `guest.py modstate FILE OUT` what scripts/lib.sh's
module checks need (module_state below). The host side of the Python
drivers (scripts/e2e/zwm_e2e.py, scripts/probe/probe.py) is here too: host
packages, the tool and its examples, a Debian kernel and its modules, the
tool's --format=json report.

parse(text) returns a dict: begin, uname, end (the BEGIN marker, with
uname -r, and END seen); tracefs, taint (their markers); markers, [(TAG,
[field...])] in order; blocks, {(TAG, NAME or None): [line...]} of each
"@@ZWM TAG-BEGIN [NAME]" ... "@@ZWM TAG-END"; dmesg, the DMESG block (the
kernel log since /init's mark); panic, the lines that show a panic, oops
or BUG. A marker is found anywhere in a line: the console interleaves
kernel messages with the guest's output.
"""
import collections
import gzip
import io
import json
import lzma
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

try:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_ST_INFO_TYPE
    from elftools.elf.relocation import RelocationSection
    from elftools.elf.sections import SymbolTableSection
except ModuleNotFoundError:
    # Debian's python3-pyelftools serves /usr/bin/python3 alone; a python3
    # first on PATH (pyenv's, a virtualenv) lacks it.  One line, not a
    # traceback in whichever report imported this (lib.sh's need_elftools).
    sys.exit(f"{sys.executable} cannot import elftools: python3-pyelftools is "
             "installed for /usr/bin/python3 (put that python3 first on PATH, "
             "or run: pyenv global system)")

MARK = "@@ZWM "
# What /init writes to the kernel log first (scripts/guest/init).
START = "zwm-e2e: start"
# What no clean boot prints in its kernel log: the one list, for every proof
# that boots (make e2e and the kernel proofs alike); bad_lines() applies it.
BAD = ("WARNING:", "BUG:", "Oops", "ftrace bug", "ftrace failed", "Call Trace")
PANIC_RE = re.compile(r"Kernel panic|Oops[:\s]|BUG: |general protection fault|"
                      r"Unable to handle kernel|kernel BUG at")
# A timed load (payload/loads.sh); the optional [ T1] is the caller id that
# PRINTK_CALLER adds.
STAMP = re.compile(r"^\[\s*(\d+\.\d+)\](?:\[\s*\S+\])? zwm-load (\S+) (\d+) (start|end)$")
INVALID = "__ftrace_invalid_address___"


def parse(text):
    rep = {"begin": False, "uname": None, "end": False, "tracefs": None, "taint": None,
           "markers": [], "blocks": {}, "dmesg": [], "panic": []}
    block = None
    for ln in text.replace("\r", "").split("\n"):
        i = ln.find(MARK)
        if i < 0:
            if block is not None:
                rep["blocks"][block].append(ln)
            if PANIC_RE.search(ln):
                rep["panic"].append(ln)
            continue
        f = ln[i + len(MARK):].split()
        if not f:
            continue
        tag, args = f[0], f[1:]
        if tag.endswith("-BEGIN"):
            block = (tag[:-6], args[0] if args else None)
            rep["blocks"].setdefault(block, [])
        elif tag.endswith("-END"):
            block = None
        else:
            rep["markers"].append((tag, args))
            if tag == "BEGIN":
                rep["begin"], rep["uname"] = True, args[0] if args else None
            elif tag == "END":
                rep["end"] = True
            elif tag in ("TRACEFS", "TAINT") and args:
                rep[tag.lower()] = args[0]
    rep["dmesg"] = rep["blocks"].get(("DMESG", None), [])
    return rep


def read_console(boot_dir):
    return parse((Path(boot_dir) / "console.log").read_bytes().decode("utf-8", "replace"))


def marked(rep, tag):
    """The fields of every marker TAG, in order."""
    return [args for t, args in rep["markers"] if t == tag]


def bad_lines(lines):
    return [ln.strip() for ln in lines if any(b in ln for b in BAD)]


def unjudged(rep):
    """Why a boot's console cannot be judged, or None: the guest did not
    finish, or the kernel log it printed at the end (the DMESG block, from
    /init's mark on) lacks the mark.  The console is quiet after /init, so
    that log is all a report sees of the kernel; a ring buffer that wrapped
    past the mark leaves it cut or empty, and it would pass whatever
    happened."""
    if not rep["end"]:
        return "the guest did not finish"
    if not any(START in ln for ln in rep["dmesg"]):
        return f"the kernel log lost /init's mark '{START}' (its ring buffer wrapped): nothing to judge"
    return None


def load_times(dmesg):
    """{CASE: [ms...]}: each timed load's time from its printk stamps."""
    times, starts = collections.defaultdict(list), {}
    for ln in dmesg:
        m = STAMP.match(ln)
        if not m:
            continue
        t, key = float(m[1]), (m[2], m[3])
        if m[4] == "start":
            starts[key] = t
        elif key in starts:
            times[m[2]].append(1000 * (t - starts.pop(key)))
    return times


def summary(ms):
    """median, first and third quartile, min, max."""
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return statistics.median(ms), q[0], q[2], min(ms), max(ms)


def split_lines(lines):
    """available_filter_functions lines as (valid, invalid) multisets: valid
    lines as they are, invalid ones by their distance N."""
    valid, invalid = collections.Counter(), collections.Counter()
    for ln in lines:
        if ln.startswith(INVALID):
            invalid[int(ln[len(INVALID):].split()[0])] += 1
        else:
            valid[ln] += 1
    return valid, invalid


def listed_twice(valid, funcs, say=""):
    """(dead, problems): the lines of VALID (a multiset) listed more often
    than FUNCS counts function symbols of their name, by how many more, as a
    dead record the kernel keeps is a second line of the function before it."""
    dead = collections.Counter({x: n - funcs[x.split()[0]] for x, n in valid.items() if n > funcs[x.split()[0]]})
    return dead, [f"{say}{x} listed {valid[x]} times, the module file has {funcs[x.split()[0]]} function "
                  "symbol(s) of that name" for x in sorted(dead)]


def unexplained(invalid, dead, zeroed):
    """Why the zeroed entries, (symbol, distance), are not the dead lines
    that went: an INVALID line of that distance, else a DEAD second line."""
    inv, dup, extra = +invalid, collections.Counter({x.split()[0]: n for x, n in dead.items()}), []
    for name, d in zeroed:
        if inv[d] > 0:
            inv[d] -= 1
        elif dup[name] > 0:
            dup[name] -= 1
        elif name is not None:   # before every symbol: the kernel names no line for it
            extra.append(f"{name}+{d}")
    return (f"the dead lines that went are not the zeroed entries: invalid distances {sorted((+inv).elements())} "
            f"and second lines of {sorted((+dup).elements())} went with none zeroed; zeroed with no such line: "
            f"{extra}") if extra or +inv or +dup else None


def verdict(out, text, fails, proof):
    """Write TEXT and the failures to OUT, print them and PROOF's verdict;
    return the exit status (1 if anything failed)."""
    Path(out).write_text(text + ("".join(f"\nFAIL: {f}" for f in fails) + "\n" if fails else ""))
    print(text)
    for f in fails:
        print(f"FAIL: {f}")
    print(f"{proof}: " + ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


# --- module files ---------------------------------------------------------------
SIG_MARKER = b"~Module signature appended~\n"
# A module file's compression: its name's suffix and its magic.
COMPRESSED = {".xz": b"\xfd7zXZ\x00", ".gz": b"\x1f\x8b", ".zst": b"\x28\xb5\x2f\xfd"}
# The integrity check of an xz stream (its header's flags), as xz -l names it:
# the kernel's xz decoder takes CRC32 only.
XZ_CHECKS = {0: "None", 1: "CRC32", 4: "CRC64", 10: "SHA-256"}


def compression(data):
    """The suffix of DATA's compression by its magic, '' for none."""
    return next((s for s, magic in COMPRESSED.items() if data.startswith(magic)), "")


def read_module(path):
    """A module's bytes, decompressed (.xz, .gz, .zst by magic)."""
    data = open(path, "rb").read()
    kind = compression(data)
    if kind == ".xz":
        data = lzma.decompress(data)
    elif kind == ".gz":
        data = gzip.decompress(data)
    elif kind == ".zst":
        # Debian's Python has no zstd module before 3.14
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    return data


def strip_signature(data):
    """(elf_bytes, was_signed).  Layout: ELF, PKCS#7 (sig_len), struct
    module_signature (12 bytes, sig_len big-endian in the last 4), marker."""
    if not data.endswith(SIG_MARKER):
        return data, False
    info = data[-len(SIG_MARKER) - 12:-len(SIG_MARKER)]
    sig_len = int.from_bytes(info[8:12], "big")
    elf_len = len(data) - len(SIG_MARKER) - 12 - sig_len
    if info[2] != 2 or elf_len <= 0:
        raise ValueError("malformed module signature")
    return data[:elf_len], True


def elf_file(data):
    """The one ELF reader of the harness: pyelftools' ELFFile over an ELF
    image in memory (any class, either byte order)."""
    return ELFFile(io.BytesIO(bytes(data)))


def elf_symbols(data):
    """(symbols, section sizes): dicts of name, value, size, type (STT_*
    number) and the name of their section (None when not a real section
    index)."""
    elf = elf_file(data)
    secs = list(elf.iter_sections())
    out = []
    for tab in secs:
        if not isinstance(tab, SymbolTableSection) or tab["sh_type"] != "SHT_SYMTAB":
            continue
        for sym in list(tab.iter_symbols())[1:]:
            shndx = sym["st_shndx"]
            out.append({"name": sym.name, "value": sym["st_value"], "size": sym["st_size"],
                        "type": ENUM_ST_INFO_TYPE.get(sym["st_info"]["type"], sym["st_info"]["type"]),
                        "section": secs[shndx].name if isinstance(shndx, int) and 0 < shndx < len(secs) else None})
    return out, {s.name: s["sh_size"] for s in secs}


def module_name(path):
    """The kernel's name for a module: .modinfo name=, else the file name."""
    s = elf_file(read_module(path)).get_section_by_name(".modinfo")
    mi = s.data() if s is not None else b""
    for kv in mi.split(b"\0"):
        if kv.startswith(b"name="):
            return kv[5:].decode()
    return Path(path).name.split(".ko")[0].replace("-", "_")


def section_size(path, name):
    """`guest.py secsize FILE NAME`: the size of section NAME of module FILE, 0 without one."""
    sec = elf_file(strip_signature(read_module(path))[0]).get_section_by_name(name)
    return 0 if sec is None else sec["sh_size"]


def module_state(path, out):
    """`guest.py modstate FILE OUT`: write the ELF image of module FILE as
    the kernel sees it (decompressed, an appended signature cut off into
    OUT.p7s) to OUT; return "RELOCS WORDS WHAT": the entries of the
    relocation section of __mcount_loc, the words of __mcount_loc, and
    what the file is (compression, signature)."""
    raw = open(path, "rb").read()
    kind = compression(raw)
    # The name says the compression to packagers and kmod: it must be the one.
    if not str(path).endswith(".ko" + kind):
        raise ValueError(f"not named *.ko{kind}, as its {kind[1:] or 'uncompressed'} content is")
    data = read_module(path)
    what = {"": "plain", ".gz": "gzip-compressed", ".zst": "zstd-compressed", ".xz": "xz-compressed"}[kind]
    if kind == ".xz":
        what += f" (check: {XZ_CHECKS.get(raw[7] & 15, 'unknown')})"
    image, signed = strip_signature(data)
    if signed:
        sig_len = len(data) - len(image) - 12 - len(SIG_MARKER)
        Path(f"{out}.p7s").write_bytes(data[len(image):len(image) + sig_len])
        what += f", signed (PKCS#7 {sig_len} bytes; ELF image {len(image)} of {len(data)} bytes)"
    else:
        what += ", unsigned"
    Path(out).write_bytes(image)
    elf = elf_file(image)
    secs = list(elf.iter_sections())
    loc = next((i for i, s in enumerate(secs) if s.name == "__mcount_loc"), None)
    if loc is None:
        raise ValueError("no __mcount_loc section")
    relocs = sum(s.num_relocations() for s in secs if isinstance(s, RelocationSection) and s["sh_info"] == loc)
    return f"{relocs} {secs[loc]['sh_size'] // (elf.elfclass // 8)} {what}"


# --- the host side of the drivers ----------------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
PROG = "guest"      # the drivers' message prefix
ZWM = None          # the tool (build_tools)


def log(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], **kw)


def host_tools(arches, need=()):
    """Install what booting ARCHES (rows of arches.tsv) and NEED
    ("CMD-OR-PATH PACKAGE" entries) take; scripts/lib.sh does the asking."""
    qemu = {r.split()[0]: r.split()[1] for r in (REPO / "scripts/guest/arches.tsv").read_text().splitlines()
            if r.strip() and not r.startswith("#")}
    pkg = {"x86_64": "x86", "i386": "x86", "ppc64le": "ppc", "aarch64": "arm"}
    need = ["qemu-system-x86_64 qemu-system-x86", "cpio cpio", "xz xz-utils", "python3 python3", *need]
    need += sorted({f"{qemu[a]} qemu-system-{pkg.get(a, 'misc')}" for a in arches})
    script = ('. "$REPO/scripts/lib.sh"; missing_packages "$@"; '
              'has_line insmod /bin/busybox --list || MISSING+=(busybox-static); install_packages "${MISSING[@]}"')
    if run(["bash", "-c", script, PROG, *need], env={**os.environ, "REPO": str(REPO), "PROG": PROG}).returncode:
        sys.exit(f"{PROG}: error: cannot install the host tools")


def build_tools(*examples):
    """Set ZWM ($ZWM, else the release build) and return {EXAMPLE: path},
    all built from these sources with cargo build --release."""
    global ZWM
    rel = REPO / "target/release"
    log("cargo build --release (the tool" + "".join(f", example {e}" for e in examples) + ")")
    if run(["cargo", "build", "--release", "--quiet", "--bins", *(x for e in examples for x in ("--example", e))],
           cwd=REPO, stdout=sys.stderr).returncode:
        sys.exit(f"{PROG}: error: cargo build --release failed")
    ZWM = os.path.abspath(os.environ.get("ZWM") or rel / "zero-weak-mcount")
    return {e: rel / "examples" / e for e in examples}


def tool(args):
    """The tool's --format=json report (one module), or raise with its stderr."""
    p = run([ZWM, "--format=json", *args], capture_output=True, text=True)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    if p.returncode not in (0, 1) or len(lines) != 1 or lines[0]["status"] == "error":
        raise RuntimeError(f"rc {p.returncode}: {(lines[0]['error'] if lines else p.stderr.strip())[-300:]}")
    return lines[0]


def debian_kernel(suite, debarch, arch, mods, env=None):
    """(kver, kernel image, config, busybox, module files) of the newest
    Debian kernel of SUITE (scripts/fetch-debian-kernel.sh); MODS are paths
    under lib/modules/KVER/kernel/ without .ko."""
    p = run([REPO / "scripts/fetch-debian-kernel.sh", suite, debarch, *([] if arch == "x86_64" else ["busybox-static"])],
            stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    if p.returncode:
        raise RuntimeError("fetch failed")
    root = Path(p.stdout.strip())
    kver = (root.parent / "kver").read_text().strip()

    def find(*rels):
        for rel in rels:
            for base in (root, root / "usr"):
                hits = sorted(base.glob(rel))
                if hits:
                    return hits[0]
        raise RuntimeError(f"none of {rels} under {root}")
    kernel = find(*(f"{d}/{n}" for d in ("boot", f"lib/modules/{kver}") for n in (f"vmlinuz-{kver}", f"vmlinux-{kver}", "vmlinuz", "vmlinux")))
    config = find(f"boot/config-{kver}", f"lib/modules/{kver}/config")
    bb = "/bin/busybox" if arch == "x86_64" else find("bin/busybox")
    return kver, kernel, config, bb, [find(f"lib/modules/{kver}/kernel/{m}.ko", f"lib/modules/{kver}/kernel/{m}.ko.*")
                                      for m in mods]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "modname":
        print(module_name(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] in ("modstate", "secsize"):
        try:
            print((module_state if sys.argv[1] == "modstate" else section_size)(*sys.argv[2:]))
        except (OSError, ValueError, lzma.LZMAError, ELFError, subprocess.CalledProcessError) as e:
            sys.exit(f"guest.py {sys.argv[1]}: {sys.argv[2]}: {e}")
    else:
        sys.exit(__doc__)

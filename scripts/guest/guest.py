#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The report library of the guest runner (scripts/guest/run.sh): reading
the console of a guest that spoke the protocol of scripts/guest/init, and
the module files it loaded.  Every proof's report imports this.

  guest.py modname FILE     print the module's name (.modinfo name=)

Console: parse(text) returns a dict of
  begin, uname, end   the BEGIN (with uname -r) and END markers were seen
  tracefs, taint      from the TRACEFS and TAINT markers
  markers             [(TAG, [field...])] of every one-line marker, in order
  blocks              {(TAG, NAME or None): [line...]} of every
                      "@@ZWM TAG-BEGIN [NAME]" ... "@@ZWM TAG-END" block
  dmesg               the DMESG block: the kernel log since /init's mark
  panic               console lines that show a panic, oops or BUG
A marker is searched for anywhere in a line: the console interleaves kernel
messages with the guest's output, and one may precede a marker.
"""
import collections
import gzip
import lzma
import re
import statistics
import struct
import subprocess
import sys
from pathlib import Path

MARK = "@@ZWM "
# What no clean boot prints in its kernel log.
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


def read_module(path):
    """A module's bytes, decompressed (.xz, .gz, .zst by magic)."""
    data = open(path, "rb").read()
    if data[:6] == b"\xfd7zXZ\x00":
        data = lzma.decompress(data)
    elif data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
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


def elf_header(data):
    """(byte order for struct, shoff, shentsize, shnum, shstrndx) of an ELF image."""
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    e = "<" if data[5] == 1 else ">"
    if data[4] == 2:
        shoff, = struct.unpack_from(e + "Q", data, 0x28)
        return (e, shoff) + struct.unpack_from(e + "HHH", data, 0x3A)
    shoff, = struct.unpack_from(e + "I", data, 0x20)
    return (e, shoff) + struct.unpack_from(e + "HHH", data, 0x2E)


def elf_shdr_offset(data, index):
    """Where section header INDEX of an ELF image starts in the file."""
    _e, shoff, shentsize, _n, _s = elf_header(data)
    return shoff + index * shentsize


def elf_sections(data):
    """[(name, type, flags, offset, size, link, entsize)] of an ELF image,
    in section index order."""
    e, shoff, shentsize, shnum, shstrndx = elf_header(data)
    fmt = e + ("IIQQQQIIQQ" if data[4] == 2 else "IIIIIIIIII")
    raw = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    strs = raw[shstrndx][4]

    def cstr(at):
        return data[at:data.index(b"\0", at)].decode(errors="replace")
    return [(cstr(strs + h[0]), h[1], h[2], h[4], h[5], h[6], h[9]) for h in raw]


def elf_section(data, want):
    """The bytes of section WANT, or None."""
    for name, _t, _f, off, size, _l, _e in elf_sections(data):
        if name == want:
            return data[off:off + size]
    return None


def elf_symbols(data):
    """(symbols, section sizes): dicts of name, value, size, type and the
    name of their section (None when not a real section index)."""
    secs = elf_sections(data)
    cls, e = data[4], "<" if data[5] == 1 else ">"
    out = []
    for _n, typ, _f, off, size, link, ent in secs:
        if typ != 2:   # SHT_SYMTAB
            continue
        strs = secs[link][3]
        for i in range(1, size // ent):
            at = off + i * ent
            if cls == 2:
                name, info, _o, shndx, value, sz = struct.unpack_from(e + "IBBHQQ", data, at)
            else:
                name, value, sz, info, _o, shndx = struct.unpack_from(e + "IIIBBH", data, at)
            out.append({"name": data[strs + name:data.index(b"\0", strs + name)].decode(errors="replace"),
                        "value": value, "size": sz, "type": info & 15,
                        "section": secs[shndx][0] if 0 < shndx < len(secs) else None})
    return out, {s[0]: s[4] for s in secs}


def module_name(path):
    """The kernel's name for a module: .modinfo name=, else the file name."""
    mi = elf_section(read_module(path), ".modinfo") or b""
    for kv in mi.split(b"\0"):
        if kv.startswith(b"name="):
            return kv[5:].decode()
    return Path(path).name.split(".ko")[0].replace("-", "_")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "modname":
        print(module_name(sys.argv[2]))
    else:
        sys.exit(__doc__)

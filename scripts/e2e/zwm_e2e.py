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
                         parse a guest console log (markers written by the
                         /init of boot.sh) into JSON; exit with the boot
                         classification code (see EXIT_* below)
  zeroed STDERR PATH     print the distances of the entries that the tool's
                         -v stderr says it zeroed in PATH, one per line
  compare ORIG.json PROC.json MOD ZEROED [--label L]
                         check the processed boot against the original one
                         for module MOD; ZEROED is a file of distances (from
                         'zeroed'); print a verdict; exit 0 if all hold, 1 if not
"""
import collections
import json
import lzma
import gzip
import re
import subprocess
import sys

# Boot classification (boot.sh exits with these).
EXIT_OK = 0
EXIT_LOAD = 10      # an insmod failed
EXIT_PANIC = 11     # kernel panic / oops / BUG in the console log
EXIT_TIMEOUT = 12   # the guest did not power off in time
EXIT_REPORT = 13    # report missing or incomplete
EXIT_USAGE = 2

SIG_MARKER = b"~Module signature appended~\n"
INVALID_RE = re.compile(r"^__ftrace_invalid_address___(\d+) \[")
BAD_DMESG = ("ftrace bug", "ftrace failed", "WARNING:", "BUG:", "Oops")
PANIC_RE = re.compile(r"Kernel panic|Oops[:\s]|BUG: |general protection fault|"
                      r"Unable to handle kernel|kernel BUG at")


def die(msg, code=EXIT_USAGE):
    print(f"zwm_e2e: error: {msg}", file=sys.stderr)
    sys.exit(code)


def read_module(path):
    data = open(path, "rb").read()
    if data[:6] == b"\xfd7zXZ\x00":
        data = lzma.decompress(data)
    elif data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        data = subprocess.run(["zstd", "-dc", path], check=True,
                              capture_output=True).stdout
    return data


def strip_signature(data):
    """Return (elf_bytes, was_signed). Layout: ELF, PKCS#7 (sig_len),
    struct module_signature (12 bytes, sig_len big-endian in the last 4),
    marker (28 bytes)."""
    if not data.endswith(SIG_MARKER):
        return data, False
    info = data[-len(SIG_MARKER) - 12:-len(SIG_MARKER)]
    sig_len = int.from_bytes(info[8:12], "big")
    elf_len = len(data) - len(SIG_MARKER) - 12 - sig_len
    if info[2] != 2 or elf_len <= 0:
        die("malformed module signature")
    return data[:elf_len], True


def cmd_prep(src, dst):
    data = read_module(src)
    elf, signed = strip_signature(data)
    if elf[:4] != b"\x7fELF":
        die(f"{src}: not an ELF module after decompression")
    with open(dst, "wb") as f:
        f.write(elf)
    print(f"zwm_e2e: {src} -> {dst} ({len(elf)} bytes"
          f"{', signature stripped' if signed else ''})", file=sys.stderr)


def elf_section(data, want):
    """Return the bytes of section `want` of an ELF image, or None."""
    import struct
    if data[:4] != b"\x7fELF":
        return None
    cls, end = data[4], data[5]
    e = "<" if end == 1 else ">"
    if cls == 2:
        shoff, = struct.unpack_from(e + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(e + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x2E)

    def sh(i):
        o = shoff + i * shentsize
        if cls == 2:
            name, _t, _f, _a, off, size = struct.unpack_from(e + "IIQQQQ", data, o)
        else:
            name, _t, _f, _a, off, size = struct.unpack_from(e + "IIIIII", data, o)
        return name, off, size

    _, stroff, _ = sh(shstrndx)
    for i in range(shnum):
        name, off, size = sh(i)
        end_ = data.index(b"\0", stroff + name)
        if data[stroff + name:end_].decode() == want:
            return data[off:off + size]
    return None


def module_name(path):
    """The kernel's name for a module: .modinfo name=, else the file name."""
    import os
    mi = elf_section(read_module(path), ".modinfo") or b""
    for kv in mi.split(b"\0"):
        if kv.startswith(b"name="):
            return kv[5:].decode()
    b = os.path.basename(path)
    return b.split(".ko")[0].replace("-", "_")


def cmd_decompress(src, dst):
    data = read_module(src)
    with open(dst, "wb") as f:
        f.write(data)


def cmd_sigstate(path):
    print("signed" if read_module(path).endswith(SIG_MARKER) else "unsigned")


def parse_console(text, modules):
    """Parse the marker protocol printed by the guest /init."""
    lines = text.replace("\r", "").split("\n")
    rep = {
        "begin": False, "end": False, "insmod": {}, "aff": {}, "smoke": {},
        "rmmod": {}, "dmesg": [], "panic": [], "tracefs": None,
    }
    section = None
    name = None
    for ln in lines:
        # The console interleaves kernel messages with the init output; the
        # markers always start a line, but a kernel message may precede them
        # on the same line in rare cases, so search for the marker.
        i = ln.find("@@ZWM ")
        if i >= 0:
            f = ln[i + 6:].split()
            if not f:
                continue
            tag = f[0]
            if tag == "BEGIN":
                rep["begin"] = True
            elif tag == "END":
                rep["end"] = True
            elif tag == "TRACEFS":
                rep["tracefs"] = f[1] if len(f) > 1 else None
            elif tag == "INSMOD" and len(f) >= 3:
                rep["insmod"][f[1]] = int(f[2].split("=", 1)[1])
            elif tag == "AFF-BEGIN":
                section, name = "aff", f[1]
                rep["aff"][name] = []
            elif tag == "DMESG-BEGIN":
                section = "dmesg"
            elif tag in ("AFF-END", "DMESG-END"):
                section = None
            elif tag == "SMOKE" and len(f) >= 3:
                rep["smoke"][f[1]] = {"result": f[2], "detail": " ".join(f[3:])}
            elif tag == "RMMOD" and len(f) >= 3:
                rep["rmmod"][f[1]] = int(f[2].split("=", 1)[1])
            continue
        if section == "aff":
            if ln.endswith(f" [{name}]"):
                rep["aff"][name].append(ln)
        elif section == "dmesg":
            rep["dmesg"].append(ln)
        if PANIC_RE.search(ln):
            rep["panic"].append(ln)
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


ZERO_RE = re.compile(r"^zero-weak-mcount: (.*): zero \S+ \(distance (\d+)")


def zeroed_distances(stderr_path, path=None):
    out = []
    for ln in open(stderr_path, errors="replace"):
        m = ZERO_RE.match(ln.rstrip("\n"))
        if m and (path is None or m.group(1) == path):
            out.append(int(m.group(2)))
    return out


def split_lines(lines):
    valid = collections.Counter()
    invalid = collections.Counter()
    for ln in lines:
        m = INVALID_RE.match(ln)
        if m:
            invalid[int(m.group(1))] += 1
        else:
            valid[ln] += 1
    return valid, invalid


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

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""dump.py MODULE.ko[.xz] OUT.bin [MAX_OFFSET]: what ftrace_process_locs() sees
of a module.   dump.py --count MODULE...: its callsite count, one line each.

The load-time pass works on relocated addresses: the module's sections
placed in their memory regions (kernel/module/main.c layout_sections()),
its symbols' values moved with them (simplify_symbols()), and the
callsite words resolved by their RELA relocations (apply_relocate_add()).
This lays an x86_64 or ppc64le module out the same way, with every region
at its own page-aligned base, and writes the result for pass.c:

  u64 magic "zwmpass1", u64 max_offset,
  u64 nregions, nregions x (u64 base, u64 size),
  u64 nsyms,    nsyms x (u64 value, u64 nameable),
  u64 nlocs,    nlocs x u64 location   (file order, unsorted)

and then, for verbatim.c (pass.c stops reading before it), what a
candidate written against the kernel's own structures needs:

  u64 magic "zwmsyms1",
  nregions x u64 enum mod_mem_type of each region,
  nsyms x (u64 st_shndx, u64 st_name), u64 strtab size, the strtab

"nameable" is find_kallsyms_symbol()'s filter: defined, named, and not a
mapping symbol (include/linux/module_symbol.h). The layout is the
kernel's in its grouping and alignment; exact offsets inside a region do
not change how much work a pass does.
"""
import lzma
import struct
import sys

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
# (required flags, forbidden flags) per core region, in layout order.
MASKS = [(SHF_EXECINSTR | SHF_ALLOC, 0), (SHF_ALLOC, SHF_WRITE | SHF_EXECINSTR),
         ("ro_after_init", 0), (SHF_WRITE | SHF_ALLOC, 0)]
# Their enum mod_mem_type (include/linux/module.h); the init regions are these + 4.
TYPES = [0, 2, 3, 1]  # MOD_TEXT, MOD_RODATA, MOD_RO_AFTER_INIT, MOD_DATA
REGION_STRIDE = 1 << 26
BASE = 0xFFFFFFFFA0000000


def read(path):
    data = open(path, "rb").read()
    if data[:6] == b"\xfd7zXZ\0":
        data = lzma.decompress(data)
    return data


def cstr(data, off):
    return data[off:data.index(b"\0", off)].decode("latin-1")


def is_mapping(name):
    return name.startswith(".L") or name.startswith("L0") or name.startswith("$")


def sections(data):
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "ELF64 LE only"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, num, strndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(num)]
    names = raw[strndx][4]
    return [dict(name=cstr(data, names + r[0]), type=r[1], flags=r[2], off=r[4], size=r[5],
                 link=r[6], info=r[7], align=max(r[8], 1), entsize=r[9]) for r in raw]


def layout(secs):
    """Section index -> address, and the regions as (base, size)."""
    where, regions = {}, []
    for init in (False, True):
        for (req, forbid), kind in zip(MASKS, TYPES):
            base = BASE + len(regions) * REGION_STRIDE
            size = 0
            for i, s in enumerate(secs):
                if i in where or not s["flags"] & SHF_ALLOC or s["name"].startswith(".init") != init:
                    continue
                if req == "ro_after_init":
                    if s["name"] != ".data..ro_after_init":
                        continue
                elif (s["flags"] & req) != req or s["flags"] & forbid:
                    continue
                size = (size + s["align"] - 1) // s["align"] * s["align"]
                where[i] = base + size
                size += s["size"]
            assert size < REGION_STRIDE, "a region is larger than the stride"
            if size:
                regions.append((base, size, kind + 4 * init))
    return where, regions


def callsite_table(secs):
    # x86 modules can carry both: __patchable_function_entries there is the
    # call padding's, and __mcount_loc the callsites (include/linux/ftrace.h).
    names = [s["name"] for s in secs]
    for name in ("__mcount_loc", "__patchable_function_entries"):
        if name in names:
            return names.index(name)
    return None


def count(paths):
    for path in paths:
        secs = sections(read(path))
        table = callsite_table(secs)
        print(0 if table is None else secs[table]["size"] // 8, path)


def main():
    if sys.argv[1] == "--count":
        return count(sys.argv[2:])
    src, out = sys.argv[1], sys.argv[2]
    max_offset = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    data = read(src)
    secs = sections(data)
    where, regions = layout(secs)
    symtab = next(s for s in secs if s["type"] == 2)
    strtab = secs[symtab["link"]]["off"]
    syms, names = [], []
    for i in range(symtab["size"] // 24):
        name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab["off"] + i * 24)
        if shndx not in (SHN_UNDEF, SHN_ABS, SHN_COMMON) and shndx < len(secs):
            value += where.get(shndx, 0)
        text = cstr(data, strtab + name)
        syms.append((value, int(shndx != SHN_UNDEF and text != "" and not is_mapping(text))))
        names.append((shndx, name))
    table = callsite_table(secs)
    rela = next(s for s in secs if s["type"] == 4 and s["info"] == table)
    locs = []
    for j in range(rela["size"] // 24):
        off, rinfo, addend = struct.unpack_from("<QQq", data, rela["off"] + j * 24)
        locs.append((syms[rinfo >> 32][0] + addend) & (2**64 - 1))
    with open(out, "wb") as f:
        f.write(b"zwmpass1" + struct.pack("<Q", max_offset))
        f.write(struct.pack("<Q", len(regions)) + b"".join(struct.pack("<QQ", *r[:2]) for r in regions))
        f.write(struct.pack("<Q", len(syms)) + b"".join(struct.pack("<QQ", *s) for s in syms))
        f.write(struct.pack("<Q", len(locs)) + b"".join(struct.pack("<Q", l) for l in locs))
        strtab_sec = secs[symtab["link"]]
        f.write(b"zwmsyms1" + b"".join(struct.pack("<Q", r[2]) for r in regions))
        f.write(b"".join(struct.pack("<QQ", *n) for n in names))
        f.write(struct.pack("<Q", strtab_sec["size"]) + data[strtab:strtab + strtab_sec["size"]])
    print(f"{src}: {len(regions)} regions, {len(syms)} symbols, {len(locs)} locations")


if __name__ == "__main__":
    main()

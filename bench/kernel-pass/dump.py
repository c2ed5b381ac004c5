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
import struct
import sys
from pathlib import Path

from elftools.elf.enums import ENUM_ST_SHNDX

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "guest"))
import guest  # noqa: E402  (the harness's one ELF layer)

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
# (required flags, forbidden flags) per core region, in layout order.
MASKS = [(SHF_EXECINSTR | SHF_ALLOC, 0), (SHF_ALLOC, SHF_WRITE | SHF_EXECINSTR),
         ("ro_after_init", 0), (SHF_WRITE | SHF_ALLOC, 0)]
# Their enum mod_mem_type (include/linux/module.h); the init regions are these + 4.
TYPES = [0, 2, 3, 1]  # MOD_TEXT, MOD_RODATA, MOD_RO_AFTER_INIT, MOD_DATA
REGION_STRIDE = 1 << 26
BASE = 0xFFFFFFFFA0000000


def read(path):
    elf = guest.elf_file(guest.read_module(path))
    assert elf.elfclass == 64, "ELF64 only"
    return elf


def is_mapping(name):
    return name.startswith(".L") or name.startswith("L0") or name.startswith("$")


def sections(elf):
    return [dict(name=s.name, flags=s["sh_flags"], size=s["sh_size"], align=max(s["sh_addralign"], 1))
            for s in elf.iter_sections()]


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
    elf = read(src)
    secs = sections(elf)
    where, regions = layout(secs)
    symtab = next(s for s in elf.iter_sections() if s["sh_type"] == "SHT_SYMTAB")
    strtab = elf.get_section(symtab["sh_link"]).data()
    syms, names = [], []
    for sym in symtab.iter_symbols():
        shndx, value = sym["st_shndx"], sym["st_value"]
        if isinstance(shndx, int) and shndx < len(secs):   # not UNDEF, ABS or COMMON
            value += where.get(shndx, 0)
        syms.append((value, int(shndx != "SHN_UNDEF" and sym.name != "" and not is_mapping(sym.name))))
        names.append((ENUM_ST_SHNDX.get(shndx, shndx), sym["st_name"]))
    table = callsite_table(secs)
    rela = next(s for s in elf.iter_sections() if s["sh_type"] == "SHT_RELA" and s["sh_info"] == table)
    locs = [(syms[r["r_info_sym"]][0] + r["r_addend"]) & (2**64 - 1) for r in rela.iter_relocations()]
    with open(out, "wb") as f:
        f.write(b"zwmpass1" + struct.pack("<Q", max_offset))
        f.write(struct.pack("<Q", len(regions)) + b"".join(struct.pack("<QQ", *r[:2]) for r in regions))
        f.write(struct.pack("<Q", len(syms)) + b"".join(struct.pack("<QQ", *s) for s in syms))
        f.write(struct.pack("<Q", len(locs)) + b"".join(struct.pack("<Q", l) for l in locs))
        f.write(b"zwmsyms1" + b"".join(struct.pack("<Q", r[2]) for r in regions))
        f.write(b"".join(struct.pack("<QQ", *n) for n in names))
        f.write(struct.pack("<Q", len(strtab)) + strtab)
    print(f"{src}: {len(regions)} regions, {len(syms)} symbols, {len(locs)} locations")


if __name__ == "__main__":
    main()

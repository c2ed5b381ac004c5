#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""dump.py MODULE.ko[.xz] OUT.bin [MAX_OFFSET]: what ftrace_process_locs() sees
of a module.   dump.py --count MODULE...: its callsite count, one line each.
dump.py --tree OUTDIR TOP MODULE...: each MODULE (a path under TOP) to
OUTDIR/ its path under TOP .bin, unless that is newer; one process for a
whole tree.

The load-time pass works on relocated addresses: the module's sections
placed in their memory regions (kernel/module/main.c layout_sections()),
its symbols' values moved with them (simplify_symbols()), and the
callsite words resolved by their RELA relocations (apply_relocate_add()).
This lays a module out the same way (x86_64, ppc64le, arm64, riscv64,
s390x, loongarch64, and i386 below 4 GiB), with every region at its own
page-aligned base, and writes the result, in the host's byte order and
with every field widened to 64 bits, for pass.c:

  u64 magic "zwmpass1", u64 max_offset,
  u64 nregions, nregions x (u64 base, u64 size),
  u64 nsyms,    nsyms x (u64 value, u64 nameable),
  u64 nlocs,    nlocs x u64 word   (the table's words in table order,
                                    each as its relocation leaves it)

and then, for verbatim.c (pass.c stops reading before it), what a
candidate written against the kernel's own structures needs:

  u64 magic "zwmsyms1",
  nregions x u64 enum mod_mem_type of each region,
  nsyms x (u64 st_shndx, u64 st_name), u64 strtab size, the strtab,
  u64 magic "zwmfunc1", nsyms x (u64 st_info, u64 st_size),
  u64 magic "zwmtype1", nsyms x u8 the type elf_type() gives the symbol

The types are kernel/module/kallsyms.c elf_type()'s, once the loader has
taken SHF_ALLOC off the sections it drops (kernel/module/main.c
rewrite_section_headers(): .modinfo and the __version* tables).
"nameable" is find_kallsyms_symbol()'s filter: defined, named, and not a
mapping symbol (include/linux/module_symbol.h). The layout is the
kernel's in its grouping and alignment; exact offsets inside a region do
not change how much work a pass does.
"""
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "guest"))
import guest  # noqa: E402  (the harness's one ELF layer)

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
# (required flags, forbidden flags) per core region, in layout order.
MASKS = [(SHF_EXECINSTR | SHF_ALLOC, 0), (SHF_ALLOC, SHF_WRITE | SHF_EXECINSTR),
         ("ro_after_init", 0), (SHF_WRITE | SHF_ALLOC, 0)]
# Their enum mod_mem_type (include/linux/module.h); the init regions are these + 4.
TYPES = [0, 2, 3, 1]  # MOD_TEXT, MOD_RODATA, MOD_RO_AFTER_INIT, MOD_DATA
REGION_STRIDE = 1 << 26
BASE = {64: 0xFFFFFFFFA0000000, 32: 0xC8000000}
# The one relocation a callsite word may carry, by e_machine: the word
# becomes S + A (R_X86_64_64, R_PPC64_ADDR64, R_AARCH64_ABS64, R_RISCV_64,
# R_390_64, R_LARCH_64 (pyelftools 0.29 has no name for EM_LOONGARCH, 258),
# R_386_32, whose A is the word itself: i386 relocates by SHT_REL).
ABS = {"EM_X86_64": 1, "EM_PPC64": 38, "EM_AARCH64": 257, "EM_RISCV": 2, "EM_S390": 22, 258: 2, "EM_386": 1}


def read(path):
    return guest.elf_file(guest.read_module(path))


def is_mapping(name):
    return name.startswith(".L") or name.startswith("L0") or name.startswith("$")


def sections(elf):
    return [dict(name=s.name, flags=s["sh_flags"], size=s["sh_size"], align=max(s["sh_addralign"], 1),
                 type=8 if s["sh_type"] == "SHT_NOBITS" else 0)
            for s in elf.iter_sections()]


def layout(secs, elfclass):
    """Section index -> address, and the regions as (base, size)."""
    where, regions = {}, []
    for init in (False, True):
        for (req, forbid), kind in zip(MASKS, TYPES):
            base = BASE[elfclass] + len(regions) * REGION_STRIDE
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


# Sections the loader reads but does not keep (rewrite_section_headers()).
DROPPED = {".modinfo", "__versions", "__version_ext_crcs", "__version_ext_names"}
SHN_LORESERVE, SHN_ABS, SHT_NOBITS = 0xFF00, 0xFFF1, 8


def elf_type(info, shndx, secs):
    """The character elf_type() gives a symbol (ARCH_SHF_SMALL is 0 here)."""
    if info >> 4 == 2:  # STB_WEAK
        return "v" if info & 0xF == 1 else "w"  # STT_OBJECT
    if shndx == 0:
        return "U"
    if shndx == SHN_ABS or shndx < SHN_LORESERVE and secs[shndx]["name"] == ".data..percpu":
        return "a"
    if shndx >= SHN_LORESERVE:
        return "?"
    s = secs[shndx]
    flags = s["flags"] & ~SHF_ALLOC if s["name"] in DROPPED else s["flags"]
    if flags & SHF_EXECINSTR:
        return "t"
    if flags & SHF_ALLOC and s["type"] != SHT_NOBITS:
        return "d" if flags & SHF_WRITE else "r"
    if s["type"] == SHT_NOBITS:
        return "b"
    return "n" if s["name"].startswith(".debug") else "?"


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
        elf = read(path)
        secs = sections(elf)
        table = callsite_table(secs)
        print(0 if table is None else secs[table]["size"] // (elf.elfclass // 8), path)


def tree(outdir, top, paths):
    for path in paths:
        out = Path(outdir) / (str(Path(path).relative_to(top)).split(".ko")[0] + ".bin")
        # A dump older than this file may lack what it now writes.
        if out.exists() and out.stat().st_mtime > max(Path(path).stat().st_mtime, Path(__file__).stat().st_mtime):
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        dump(path, str(out), 0, quiet=True)


def main():
    if sys.argv[1] == "--count":
        return count(sys.argv[2:])
    if sys.argv[1] == "--tree":
        return tree(sys.argv[2], sys.argv[3], sys.argv[4:])
    dump(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4)


def dump(src, out, max_offset, quiet=False):
    elf = read(src)
    secs = sections(elf)
    where, regions = layout(secs, elf.elfclass)
    symtab = next(s for s in elf.iter_sections() if s["sh_type"] == "SHT_SYMTAB")
    strtab = elf.get_section(symtab["sh_link"]).data()
    syms, names, funcs, types = [], [], [], []
    # Elf64_Sym read raw: st_name, st_info, st_other, st_shndx, st_value, st_size;
    # Elf32_Sym: st_name, st_value, st_size, st_info, st_other, st_shndx.
    order = "<" if elf.little_endian else ">"
    word = "Q" if elf.elfclass == 64 else "I"
    raw = struct.iter_unpack(order + ("IBBHQQ" if word == "Q" else "IIIBBH"), symtab.data())
    for st_name, info, shndx, value, size in ((r[0], r[1], r[3], r[4], r[5]) if word == "Q" else
                                              (r[0], r[3], r[5], r[1], r[2]) for r in raw):
        name = strtab[st_name:strtab.index(b"\0", st_name)].decode("latin-1")
        value += where.get(shndx, 0)   # UNDEF, ABS and COMMON are no section of where
        syms.append((value, int(shndx != 0 and name != "" and not is_mapping(name))))
        names.append((shndx, st_name))
        funcs.append((info, size))
        types.append(elf_type(info, shndx, secs))
    table = callsite_table(secs)
    locs = []
    if table is not None:
        data = elf.get_section(table).data()
        size = struct.calcsize(word)
        locs = list(struct.unpack(order + f"{len(data) // size}{word}", data))
        rela = next(s for s in elf.iter_sections() if s["sh_type"] in ("SHT_RELA", "SHT_REL") and s["sh_info"] == table)
        for r in rela.iter_relocations():
            assert r["r_info_type"] == ABS[elf["e_machine"]], f"{src}: relocation type {r['r_info_type']}"
            addend = r["r_addend"] if r.is_RELA() else locs[r["r_offset"] // size]
            locs[r["r_offset"] // size] = (syms[r["r_info_sym"]][0] + addend) & (2**elf.elfclass - 1)
    with open(out, "wb") as f:
        f.write(b"zwmpass1" + struct.pack("<Q", max_offset))
        f.write(struct.pack("<Q", len(regions)) + b"".join(struct.pack("<QQ", *r[:2]) for r in regions))
        f.write(struct.pack("<Q", len(syms)) + b"".join(struct.pack("<QQ", *s) for s in syms))
        f.write(struct.pack("<Q", len(locs)) + b"".join(struct.pack("<Q", l) for l in locs))
        f.write(b"zwmsyms1" + b"".join(struct.pack("<Q", r[2]) for r in regions))
        f.write(b"".join(struct.pack("<QQ", *n) for n in names))
        f.write(struct.pack("<Q", len(strtab)) + strtab)
        f.write(b"zwmfunc1" + b"".join(struct.pack("<QQ", *i) for i in funcs))
        f.write(b"zwmtype1" + "".join(types).encode())
    if not quiet:
        print(f"{src}: {len(regions)} regions, {len(syms)} symbols, {len(locs)} locations")


if __name__ == "__main__":
    main()

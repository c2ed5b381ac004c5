#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""counts.py MODULE.ko — print the mcount= tag value the series kernel
accepts for MODULE: "zeroed:<callsites>:<symbols>", eight hex digits each.

Counted here from the ELF section headers, independently of the tool, the
way kernel/module/main.c counts them: the entries (8 or 4 bytes) of the
first SHF_ALLOC section named __mcount_loc (x86 never uses
__patchable_function_entries), and the Elf_Sym entries of the one
SHT_SYMTAB section, null symbol included.
"""
import struct
import sys

SHT_SYMTAB, SHF_ALLOC = 2, 2


def counts(data):
    assert data[:4] == b"\x7fELF", "not an ELF file"
    is64, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
        fmt, word, sym = order + "IIQQQQIIQQ", 8, 24
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
        fmt, word, sym = order + "IIIIIIIIII", 4, 16
    shdrs = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    names = shdrs[shstrndx][4]

    def name(h):
        start = names + h[0]
        return data[start:data.index(b"\0", start)].decode()

    callsites = next((h[5] // word for h in shdrs if name(h) == "__mcount_loc" and h[2] & SHF_ALLOC), 0)
    symtabs = [h[5] // sym for h in shdrs if h[1] == SHT_SYMTAB]
    assert len(symtabs) == 1, f"{len(symtabs)} symbol tables"
    return callsites, symtabs[0]


if __name__ == "__main__":
    c, s = counts(open(sys.argv[1], "rb").read())
    print(f"zeroed:{c:08x}:{s:08x}")

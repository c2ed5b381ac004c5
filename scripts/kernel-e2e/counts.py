#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""counts.py MODULE.ko — print the mcount= tag value the series kernel
accepts for MODULE: "zeroed:<callsites>:<symbols>", eight hex digits each.

Counted here from the section headers (guest.py's ELF layer), independently
of the tool, the way kernel/module/main.c counts them: the entries (8 or 4
bytes) of the first SHF_ALLOC section named __mcount_loc (x86 never uses
__patchable_function_entries), and the Elf_Sym entries of the one
SHT_SYMTAB section, null symbol included.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

SHF_ALLOC = 2


def counts(data):
    elf = guest.elf_file(data)
    word = 8 if elf.elfclass == 64 else 4
    secs = list(elf.iter_sections())
    callsites = next((s["sh_size"] // word for s in secs if s.name == "__mcount_loc" and s["sh_flags"] & SHF_ALLOC), 0)
    symtabs = [s.num_symbols() for s in secs if s["sh_type"] == "SHT_SYMTAB"]
    assert len(symtabs) == 1, f"{len(symtabs)} symbol tables"
    return callsites, symtabs[0]


if __name__ == "__main__":
    c, s = counts(open(sys.argv[1], "rb").read())
    print(f"zeroed:{c:08x}:{s:08x}")

// SPDX-License-Identifier: GPL-2.0-only
//! Write a synthetic `x86_64` kernel module with N functions and N
//! `__mcount_loc` entries, with `object::write`.
//!
//! usage: zwm-synth N OUT.ko
//!
//! `.text` holds N 16-byte slots. Slot i has a local `STT_FUNC` symbol `f<i>`
//! except every tenth slot (i % 10 == 9): that is an overridden weak body
//! with no symbol, whose entry lies 16 bytes past the previous symbol and
//! is zeroed. Every entry is an `R_X86_64_64` relocation against the
//! `.text` section symbol with addend 16*i (+4 for every other slot, the
//! position after `endbr64`). `__mcount_loc` is `SHF_ALLOC`; `.modinfo`
//! holds `vermagic=7.2.0 SMP mod_unload`.

use object::write::{Object, Relocation, StandardSection, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionFlags, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope, elf,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().ok_or("usage: zwm-synth N OUT")?.parse()?;
    let out = args.next().ok_or("usage: zwm-synth N OUT")?;

    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    obj.add_file_symbol(b"synth.c".to_vec());

    let text = obj.section_id(StandardSection::Text);
    // endbr64; call __fentry__ (as nops); ret; int3 padding: 16 bytes.
    let slot: [u8; 16] =
        [0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc];
    let mut code = Vec::with_capacity(usize::try_from(n * 16)?);
    for _ in 0..n {
        code.extend_from_slice(&slot);
    }
    obj.append_section_data(text, &code, 16);
    for i in 0..n {
        if i % 10 == 9 {
            continue;
        }
        obj.add_symbol(Symbol {
            name: format!("f{i}").into_bytes(),
            value: i * 16,
            size: 16,
            kind: SymbolKind::Text,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    }
    let text_sym = obj.section_symbol(text);

    let mcount = obj.add_section(Vec::new(), b"__mcount_loc".to_vec(), SectionKind::ReadOnlyData);
    obj.section_mut(mcount).flags = SectionFlags::Elf { sh_flags: u64::from(elf::SHF_ALLOC) };
    obj.append_section_data(mcount, &vec![0u8; usize::try_from(n * 8)?], 8);
    for i in 0..n {
        obj.add_relocation(
            mcount,
            Relocation {
                offset: i * 8,
                symbol: text_sym,
                addend: i64::try_from(i * 16 + if i % 2 == 1 { 4 } else { 0 })?,
                flags: RelocationFlags::Elf { r_type: elf::R_X86_64_64 },
            },
        )?;
    }

    let modinfo = obj.add_section(Vec::new(), b".modinfo".to_vec(), SectionKind::ReadOnlyData);
    obj.section_mut(modinfo).flags = SectionFlags::Elf { sh_flags: u64::from(elf::SHF_ALLOC) };
    obj.append_section_data(modinfo, b"license=GPL\0vermagic=7.2.0 SMP mod_unload\0", 1);

    std::fs::write(&out, obj.write()?)?;
    Ok(())
}

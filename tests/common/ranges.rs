// SPDX-License-Identifier: GPL-2.0-only
//! The bytes a run may change, from the library's own parse of the input:
//! one definition for the mutation campaign, the fuzz targets
//! (`fuzz/fuzz_targets/apply.rs` includes this file) and the edge cases.

use object::elf;
use zero_weak_mcount::elf::parse_info;

/// Byte ranges a run may change in `image` (the file without any
/// signature): every callsite section the tool may pick, its `sh_size`
/// field and the `st_value` of each symbol defined in it (a drop shrinks
/// the table and moves them), the relocation sections that apply to it,
/// and their `sh_size` fields.
pub fn allowed_ranges(image: &[u8]) -> Vec<(u64, u64)> {
    let info = parse_info(image).expect("analyze accepted it, so parse_info must too");
    let mut ranges = Vec::new();
    for name in ["__mcount_loc", "__patchable_function_entries"] {
        let Some(cs) = info.alloc_section(name) else { continue };
        ranges.extend(info.sections[cs].file_range());
        let f = info.sh_size_field(cs);
        ranges.push((f, f + info.word_size()));
        ranges.extend(symbol_values_in(image, &info, cs));
        for (i, s) in info.sections.iter().enumerate() {
            if (s.sh_type == elf::SHT_REL || s.sh_type == elf::SHT_RELA) && s.info as usize == cs {
                ranges.extend(s.file_range());
                let f = info.sh_size_field(i);
                ranges.push((f, f + info.word_size()));
            }
        }
    }
    ranges
}

/// The `st_value` fields of the symbols defined in section `index`, read
/// from every symbol table (`Elf32_Sym`: after the 4-byte name; `Elf64_Sym`:
/// after name, info, other and shndx).
fn symbol_values_in(image: &[u8], info: &zero_weak_mcount::elf::ElfInfo, index: usize) -> Vec<(u64, u64)> {
    let word = info.word_size();
    let (value_at, shndx_at) = if info.is_64 { (8, 6) } else { (4, 14) };
    let mut out = Vec::new();
    for s in info.sections.iter().filter(|s| s.sh_type == elf::SHT_SYMTAB && s.entsize > 0) {
        let bytes = s.bytes(image);
        for (i, sym) in bytes.chunks_exact(s.entsize as usize).enumerate() {
            let shndx = zero_weak_mcount::elf::read_uint(&sym[shndx_at..shndx_at + 2], info.big_endian);
            if shndx as usize == index {
                let at = s.offset + i as u64 * s.entsize + value_at;
                out.push((at, at + word));
            }
        }
    }
    out
}

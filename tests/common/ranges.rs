// SPDX-License-Identifier: GPL-2.0-only
//! The bytes a run may change, from the library's own parse of the input:
//! one definition for the mutation campaign, the fuzz targets
//! (`fuzz/fuzz_targets/apply.rs` includes this file) and the edge cases.

use object::elf;
use zero_weak_mcount::elf::parse_info;

/// Byte ranges a run may change in `image` (the file without any
/// signature): every callsite section the tool may pick, the relocation
/// sections that apply to it, and their `sh_size` fields.
pub fn allowed_ranges(image: &[u8]) -> Vec<(u64, u64)> {
    let info = parse_info(image).expect("analyze accepted it, so parse_info must too");
    let mut ranges = Vec::new();
    for name in ["__mcount_loc", "__patchable_function_entries"] {
        let Some(cs) = info.alloc_section(name) else { continue };
        ranges.extend(info.sections[cs].file_range());
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

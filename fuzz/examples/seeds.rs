// SPDX-License-Identifier: GPL-2.0-only
//! Write the seed corpus: the synthetic module of every arch (the test
//! fixtures, tests/common) and the bundled real module, plain and signed.
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example seeds -- fuzz/corpus/analyze

#[path = "../../tests/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use common::{signed, standard};
use object::{Architecture, Endianness, elf};

fn main() {
    let dirs: Vec<String> = std::env::args().skip(1).collect();
    assert!(!dirs.is_empty(), "usage: seeds DIR...");
    let f = |arch, endian, e_flags, cs, abs, adjust, max| standard(arch, endian, e_flags, cs, abs, adjust, max).build();
    let real = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/zwm_test.ko")).unwrap();
    let seeds = [
        ("x86_64", f(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4)),
        ("i386", f(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0)),
        (
            "ppc64le",
            f(
                Architecture::PowerPc64,
                Endianness::Little,
                2,
                "__patchable_function_entries",
                elf::R_PPC64_ADDR64,
                0,
                16,
            ),
        ),
        (
            "ppc64be",
            f(Architecture::PowerPc64, Endianness::Big, 2, "__patchable_function_entries", elf::R_PPC64_ADDR64, 0, 16),
        ),
        ("ppc64-elfv1", f(Architecture::PowerPc64, Endianness::Big, 1, "__mcount_loc", elf::R_PPC64_ADDR64, 0, 16)),
        (
            "ppc32-pfe",
            f(Architecture::PowerPc, Endianness::Big, 0, "__patchable_function_entries", elf::R_PPC_ADDR32, 8, 16),
        ),
        ("ppc32-pg", f(Architecture::PowerPc, Endianness::Big, 0, "__mcount_loc", elf::R_PPC_ADDR32, 0, 8)),
        (
            "aarch64",
            f(Architecture::Aarch64, Endianness::Little, 0, "__patchable_function_entries", elf::R_AARCH64_ABS64, 0, 4),
        ),
        ("aarch64-drop", common::arm64_adjust_first()),
        (
            "x86_64-signed",
            signed(&f(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4)),
        ),
        ("zwm_test.ko", real.clone()),
        ("zwm_test.ko-signed", signed(&real)),
    ];
    for dir in &dirs {
        std::fs::create_dir_all(dir).unwrap();
        for (name, data) in &seeds {
            std::fs::write(std::path::Path::new(dir).join(name), data).unwrap();
        }
    }
    eprintln!("seeds: {} files into {}", seeds.len(), dirs.join(", "));
}

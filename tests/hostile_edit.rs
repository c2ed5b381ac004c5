// SPDX-License-Identifier: GPL-2.0-only
//! examples/hostile-edit, the e2e's edits of a module that the tool never
//! makes, on fixtures of either ELF class and byte order, read back with
//! the `object` crate: it edits what it says and nothing else.

mod common;

use std::path::PathBuf;
use std::process::Command;

use object::{Architecture, Endianness, Object as _, ObjectSection as _, RelocationFlags, elf};

/// `cargo test` builds the examples next to the test binaries' folder.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples/hostile-edit");
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}

fn edit(args: &[&str], data: &[u8]) -> Result<Vec<u8>, String> {
    let dir = common::Scratch::new("hostile");
    let input = dir.file("in.ko", data);
    let output = dir.0.join("out.ko");
    let out = Command::new(example()).arg(args[0]).arg(&input).arg(&output).args(&args[1..]).output().unwrap();
    if out.status.success() { Ok(std::fs::read(output).unwrap()) } else { Err(common::stderr(&out)) }
}

/// (relocation type, word offset, word value) of each relocation of the callsite table.
fn table(data: &[u8]) -> (u64, Vec<(u32, u64, u64)>) {
    let file = object::File::parse(data).unwrap();
    let cs = file.section_by_name("__mcount_loc").unwrap();
    let words = cs.data().unwrap();
    let w = if file.is_64() { 8 } else { 4 };
    let big = file.endianness() == Endianness::Big;
    let rels = cs
        .relocations()
        .map(|(offset, r)| {
            let RelocationFlags::Elf { r_type } = r.flags() else { panic!("not ELF") };
            let at = usize::try_from(offset).unwrap();
            let bytes = &words[at..at + w];
            (r_type, offset, zero_weak_mcount::elf::read_uint(bytes, big))
        })
        .collect();
    (cs.size(), rels)
}

#[test]
fn every_class_and_byte_order() {
    for (arch, endian, abs) in [
        (Architecture::X86_64, Endianness::Little, elf::R_X86_64_64),
        (Architecture::I386, Endianness::Little, elf::R_386_32),
        (Architecture::S390x, Endianness::Big, elf::R_390_64),
        (Architecture::PowerPc, Endianness::Big, elf::R_PPC_ADDR32),
    ] {
        let data = common::standard(arch, endian, 0, "__mcount_loc", abs, 0, 4).build();
        let (size, before) = table(&data);
        assert!(before.len() > 2 && before.iter().all(|r| r.0 == abs), "{arch:?}: {before:?}");

        assert_eq!(edit(&["strip"], &common::signed(&data)).unwrap(), data, "{arch:?}: strip");

        let out = edit(&["neutralise", "1"], &common::signed(&data)).unwrap();
        assert_eq!(out.len(), data.len(), "{arch:?}: neutralise also strips, and only edits");
        let (_, after) = table(&out);
        assert_eq!(after.len(), before.len(), "{arch:?}: every relocation still there");
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            let want = if i == 1 { (0, b.1, 0) } else { *b };
            assert_eq!(*a, want, "{arch:?}: relocation {i}");
        }

        let out = edit(&["empty-table"], &data).unwrap();
        let file = object::File::parse(&*out).unwrap();
        assert!(size > 0 && file.section_by_name("__mcount_loc").unwrap().size() == 0, "{arch:?}");
        let rel = [".rela__mcount_loc", ".rel__mcount_loc"].iter().find_map(|n| file.section_by_name(n)).unwrap();
        assert_eq!(rel.size(), 0, "{arch:?}: its relocations emptied too");

        let err = edit(&["noinit"], &data).unwrap_err();
        assert!(err.contains(".gnu.linkonce.this_module"), "{arch:?}: noinit on a module without one: {err}");
        assert!(edit(&["neutralise", "99"], &data).unwrap_err().contains("no relocation 99"));
    }
}

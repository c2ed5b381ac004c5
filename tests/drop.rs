// SPDX-License-Identifier: GPL-2.0-only
//! The drop neutraliser, on synthetic modules: where a kernel adjusts a
//! callsite word before testing it for zero (arm64 6.12.94), a rejected
//! entry's word goes, later words and their relocations move down, the
//! table's own symbols move with them, both sizes shrink, and nothing else
//! in the file changes. Where the kernel skips zero words first, the tool
//! still zeroes.
#![allow(clippy::cast_possible_truncation, reason = "test fixtures: small offsets the test itself wrote")]

mod common;

use common::{add_callsites, add_modinfo, assert_differs_only_in, changeable, entries};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::write::{Object, Relocation, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope, elf,
};
use zero_weak_mcount::elf::{Extraction, extract, parse_info, table_symbols};
use zero_weak_mcount::plan::{Plan, Removal};
use zero_weak_mcount::process::{Analysis, LeftAlone, Options, Outcome, analyze};
use zero_weak_mcount::rule::Neutraliser;

const ADJUST_FIRST: &str = "6.12.94+deb12-arm64 SMP preempt mod_unload aarch64";
const ZERO_FIRST: &str = "6.12.95+deb12-arm64 SMP preempt mod_unload aarch64";

/// Entry locations in `.text`: f [0x40, 0x80) and g [0xc0, 0x100) and h
/// [0x300, 0x320) are sized functions; 0x80 and 0x100 lie in none.
const LOCATIONS: [i64; 5] = [0x38, 0x80, 0xb8, 0x100, 0x300];

/// What else the module may hold, to see that a drop refuses it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    None,
    /// A global symbol defined in the callsite table.
    GlobalInTable,
    /// A relocation of another section against a symbol in the table.
    PointerIntoTable,
    /// An unaligned relocation whose word reaches into a dead entry's word
    /// (found by the `apply` fuzz target: the move cut it in two).
    Straddle,
}

/// An arm64 module: `LOCATIONS` in `__patchable_function_entries`, `$d`
/// mapping symbols at words 0, 2 and 5 (the end) of the table.
fn arm64(vermagic: &str, extra: Extra) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
    let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    obj.set_section_data(text, vec![0x1fu8; 0x400], 16);
    for (name, value, size) in [("f", 0x40, 0x40), ("g", 0xc0, 0x40), ("h", 0x300, 0x20)] {
        let section = SymbolSection::Section(text);
        obj.add_symbol(symbol(name, value, size, SymbolKind::Text, SymbolScope::Compilation, section));
    }
    let table = obj.add_section(Vec::new(), b"__patchable_function_entries".to_vec(), SectionKind::ReadOnlyData);
    obj.set_section_data(table, vec![0u8; LOCATIONS.len() * 8], 8);
    let section = obj.section_symbol(text);
    add_callsites(&mut obj, table, 0, 8, section, elf::R_AARCH64_ABS64, LOCATIONS);
    for value in [0, 16, 40] {
        let in_table = SymbolSection::Section(table);
        obj.add_symbol(symbol("$d", value, 0, SymbolKind::Data, SymbolScope::Compilation, in_table));
    }
    let in_table = SymbolSection::Section(table);
    if extra == Extra::GlobalInTable {
        obj.add_symbol(symbol("table_start", 0, 0, SymbolKind::Data, SymbolScope::Linkage, in_table));
    }
    if extra == Extra::PointerIntoTable {
        let data = obj.add_section(Vec::new(), b".data".to_vec(), SectionKind::Data);
        obj.set_section_data(data, vec![0u8; 8], 8);
        let target = obj.add_symbol(symbol("$d", 24, 0, SymbolKind::Data, SymbolScope::Compilation, in_table));
        let flags = RelocationFlags::Elf { r_type: elf::R_AARCH64_ABS64 };
        obj.add_relocation(data, Relocation { offset: 0, symbol: target, addend: 0, flags }).unwrap();
    }
    if extra == Extra::Straddle {
        let flags = RelocationFlags::Elf { r_type: elf::R_AARCH64_ABS64 };
        obj.add_relocation(table, Relocation { offset: 4, symbol: section, addend: 0x40, flags }).unwrap();
    }
    add_modinfo(&mut obj, vermagic, &[]);
    obj.write().unwrap()
}

fn symbol(name: &str, value: u64, size: u64, kind: SymbolKind, scope: SymbolScope, section: SymbolSection) -> Symbol {
    Symbol { name: name.as_bytes().to_vec(), value, size, kind, scope, weak: false, section, flags: SymbolFlags::None }
}

fn run(data: &[u8]) -> (Vec<u8>, Analysis) {
    let a = analyze(data, &Options { verbose: true, ..Options::default() }).unwrap_or_else(|e| panic!("refused: {e}"));
    (a.plan.apply_to(data), a)
}

/// `(sh_size, file offset, sh_size field offset)` of section `name`.
fn section(data: &[u8], name: &str) -> (u64, usize, usize) {
    let h = object::elf::FileHeader64::<Endianness>::parse(data).unwrap();
    let e = h.endian().unwrap();
    let table = h.sections(e, data).unwrap();
    let (i, s) = table.enumerate().find(|(_, s)| table.section_name(e, s).unwrap() == name.as_bytes()).unwrap();
    (s.sh_size(e), s.sh_offset(e) as usize, h.e_shoff(e) as usize + i.0 * 64 + 32)
}

/// `(name, value, file offset of st_value)` of the symbols in section `name`.
fn symbols_in(data: &[u8], name: &str) -> Vec<(String, u64, usize)> {
    let h = object::elf::FileHeader64::<Endianness>::parse(data).unwrap();
    let e = h.endian().unwrap();
    let sections = h.sections(e, data).unwrap();
    let (index, _) =
        sections.enumerate().find(|(_, s)| sections.section_name(e, s).unwrap() == name.as_bytes()).unwrap();
    let symtab = sections.symbols(e, data, elf::SHT_SYMTAB).unwrap();
    let at = sections.section(symtab.section()).unwrap().sh_offset(e) as usize;
    symtab
        .enumerate()
        .filter(|(_, s)| s.st_shndx(e) as usize == index.0 && s.st_type() != elf::STT_SECTION)
        .map(|(i, s)| {
            (String::from_utf8_lossy(symtab.symbol_name(e, s).unwrap()).into_owned(), s.st_value(e), at + i.0 * 24 + 8)
        })
        .collect()
}

/// Relocation offsets of `.rela__patchable_function_entries`, in order.
fn reloc_offsets(data: &[u8]) -> Vec<u64> {
    let (size, at, _) = section(data, ".rela__patchable_function_entries");
    (0..size as usize / 24)
        .map(|i| u64::from_le_bytes(data[at + i * 24..at + i * 24 + 8].try_into().unwrap()))
        .collect()
}

#[test]
fn an_adjust_first_kernel_gets_its_dead_words_dropped() {
    let before = arm64(ADJUST_FIRST, Extra::None);
    let (after, an) = run(&before);
    assert!(matches!(an.outcome, Outcome::Changed { neutralised: 2, .. }), "{an:?}");
    assert!(an.summary().starts_with("dropped 2 of 5 entries [arm64"), "{}", an.summary());
    assert!(
        an.details()[0]
            .starts_with("neutraliser drop: kernel 6.12.94 adjusts a callsite word before testing it for zero"),
        "{:#?}",
        an.details()
    );
    assert!(an.details().iter().any(|d| d == "drop .text+0x80 (distance 64 after f)"), "{:#?}", an.details());
    // The entries left are the live ones, in their order, one word apart.
    let mut live = entries(&before, "__patchable_function_entries", 0);
    live.retain(|(_, at)| *at != 0x80 && *at != 0x100);
    assert_eq!(entries(&after, "__patchable_function_entries", 0), live);
    assert_eq!(reloc_offsets(&after), [0, 8, 16]);
    let (size, at, _) = section(&after, "__patchable_function_entries");
    assert_eq!(size, 24);
    assert!(after[at..at + 40].iter().all(|&b| b == 0), "the words and the freed tail are zero");
    assert_eq!(section(&after, ".rela__patchable_function_entries").0, 3 * 24);
    // $d at word 0 stays, at word 2 moves past one dropped word, at the end past both.
    let values: Vec<u64> = symbols_in(&after, "__patchable_function_entries").iter().map(|s| s.1).collect();
    assert_eq!(values, [0, 8, 24]);
    // Nothing else changed.
    let mut ranges = changeable(&before, "__patchable_function_entries");
    let field = section(&before, "__patchable_function_entries").2;
    ranges.push((field, field + 8));
    ranges.extend(symbols_in(&before, "__patchable_function_entries").iter().map(|s| (s.2, s.2 + 8)));
    assert_differs_only_in(&before, &after, &ranges);
    // A second run finds nothing, and the same input gives the same bytes.
    let (again, an2) = run(&after);
    assert_eq!(again, after);
    assert!(an2.summary().starts_with("nothing to zero in 3 entries"), "{}", an2.summary());
    assert_eq!(run(&before).0, after);
}

#[test]
fn a_zero_first_kernel_still_gets_zeroed_words() {
    let before = arm64(ZERO_FIRST, Extra::None);
    let (after, an) = run(&before);
    assert!(an.summary().starts_with("zeroed 2 of 5 entries"), "{}", an.summary());
    assert!(an.details()[0].starts_with("neutraliser zero: the kernel skips a zero word"), "{:#?}", an.details());
    assert_eq!(section(&after, "__patchable_function_entries").0, 40, "a zeroed table keeps its size");
    assert_differs_only_in(&before, &after, &changeable(&before, "__patchable_function_entries"));
}

#[test]
fn what_points_into_the_table_keeps_the_module_unchanged() {
    for (extra, why) in [
        (Extra::GlobalInTable, "is defined in __patchable_function_entries and is not local"),
        (Extra::PointerIntoTable, ".rela.data relocates against a symbol defined in __patchable_function_entries"),
        (Extra::Straddle, "the relocation at 0x4 of __patchable_function_entries reaches into a word to drop"),
    ] {
        let before = arm64(ADJUST_FIRST, extra);
        let (after, an) = run(&before);
        assert_eq!(after, before);
        assert!(
            matches!(&an.outcome, Outcome::Skipped(LeftAlone::NoRule, r) if r.contains(why) && r.contains("left unchanged")),
            "{:?}",
            an.outcome
        );
        assert!(an.plan.is_empty());
    }
}

/// An i386 module (REL: the addend is the word): `__mcount_loc` words
/// holding `.text` offsets, a `$d`-like local label at word 3.
fn i386(addends: &[u32]) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::I386, Endianness::Little);
    let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    obj.set_section_data(text, vec![0x90u8; 0x400], 16);
    let table = obj.add_section(Vec::new(), b"__mcount_loc".to_vec(), SectionKind::ReadOnlyData);
    obj.set_section_data(table, addends.iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<u8>>(), 4);
    let section = obj.section_symbol(text);
    for i in 0..addends.len() {
        let flags = RelocationFlags::Elf { r_type: elf::R_386_32 };
        obj.add_relocation(table, Relocation { offset: i as u64 * 4, symbol: section, addend: 0, flags }).unwrap();
    }
    obj.add_symbol(symbol("$d", 12, 0, SymbolKind::Data, SymbolScope::Compilation, SymbolSection::Section(table)));
    add_modinfo(&mut obj, "6.1.0-57-686 SMP preempt mod_unload modversions 686", &[]);
    obj.write().unwrap()
}

#[test]
fn on_rel_arches_the_addend_moves_with_its_word() {
    // No rule drops on i386 (its adjust maps 0 to 0), so the plan is built
    // directly: what a drop writes must hold for REL too.
    let addends = [0x10u32, 0x40, 0x80, 0xc0, 0x100];
    let before = i386(&addends);
    let info = parse_info(&before).unwrap();
    let cs = info.alloc_section("__mcount_loc").unwrap();
    let shape = zero_weak_mcount::elf::RelocShape { rela: false, abs_type: elf::R_386_32 };
    let Extraction::Table(x) = extract(&before, &info, cs, shape, zero_weak_mcount::elf::Mapping::All).unwrap() else {
        panic!("no table")
    };
    let symbols = table_symbols(&before, &info, &x.callsite).unwrap().unwrap();
    assert_eq!(symbols.len(), 1);
    let plan = Plan::new(&before, &info, &x.callsite, &[1, 3], Removal::Drop(&symbols)).unwrap();
    let after = plan.apply_to(&before);
    let left: Vec<u64> = entries(&after, "__mcount_loc", 0).into_iter().map(|e| e.1).collect();
    assert_eq!(left, [0x10, 0x80, 0x100]);
    let info = parse_info(&after).unwrap();
    let s = &info.sections[cs];
    assert_eq!(s.size, 12);
    let words = &after[s.offset as usize..s.offset as usize + 20];
    assert_eq!(&words[12..], &[0; 8], "the freed tail is zero");
    // The label at word 3 had one dropped word below it.
    let x = extract(&after, &info, cs, shape, zero_weak_mcount::elf::Mapping::All).unwrap().table().unwrap();
    assert_eq!(table_symbols(&after, &info, &x.callsite).unwrap().unwrap()[0].value, 8);
}

#[test]
fn the_neutraliser_follows_the_zero_test_order() {
    use zero_weak_mcount::arch::{Overrides, Scope, rule_for};
    let releases = [
        (ADJUST_FIRST, true),
        (ZERO_FIRST, false),
        ("5.10.0-32-arm64 SMP mod_unload aarch64", true),
        ("6.1.0-57-arm64 SMP mod_unload aarch64", true),
        ("6.6.143 SMP aarch64", true),
        ("6.6.144 SMP aarch64", false),
        ("6.11.11 SMP aarch64", true),
        ("6.14.11 SMP aarch64", true),
        ("6.15.0 SMP aarch64", false),
    ];
    for (vermagic, drop) in releases {
        let data = arm64(vermagic, Extra::None);
        let info = parse_info(&data).unwrap();
        let Scope::Act(rule) = rule_for(&data, &info, None, &Overrides::default()).unwrap() else {
            panic!("{vermagic}: not acted on")
        };
        assert_eq!(matches!(rule.neutraliser, Neutraliser::Drop { .. }), drop, "{vermagic}");
    }
}

#[test]
fn the_shared_arm64_fixture_is_a_drop_case() {
    // The mutation campaign, the interruption test and the fuzz seeds use it.
    let data = common::arm64_adjust_first();
    let (after, an) = run(&data);
    assert!(an.summary().starts_with("dropped "), "{}", an.summary());
    assert!(section(&after, "__patchable_function_entries").0 < section(&data, "__patchable_function_entries").0);
}

#[test]
fn a_drop_module_with_a_malformed_relocation_section_writes_nothing() {
    // A drop reads the other relocation sections too (for pointers into
    // the table); a bad one is refused before the first write (invariant 3).
    let mut data = arm64(ADJUST_FIRST, Extra::PointerIntoTable);
    let (size, _, size_field) = section(&data, ".rela.data");
    data[size_field..size_field + 8].copy_from_slice(&(size + 0x1000_0000).to_le_bytes());
    let dir = common::Scratch::new("drop-bad");
    let path = dir.file("m.ko", &data);
    let out = std::process::Command::new(common::BIN).arg(&path).output().unwrap();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{}: error: ", path.display())) && err.contains(".rela.data"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), data, "file changed");
}

#[test]
fn arm64_5_10_and_6_1_configs_name_the_patchable_table() {
    // Before DYNAMIC_FTRACE_WITH_ARGS (6.2), WITH_REGS made arm64 build
    // with -fpatchable-function-entry=2 (arch/arm64/Makefile, 5.10.223).
    use zero_weak_mcount::kconfig::Kconfig;
    let data = arm64("5.10.0-32-arm64 SMP mod_unload aarch64", Extra::None);
    let config = "CONFIG_ARM64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_DYNAMIC_FTRACE_WITH_REGS=y\n";
    let opts = Options { kconfig: Some(Kconfig::parse(config)), ..Options::default() };
    let a = analyze(&data, &opts).unwrap();
    assert!(a.summary().starts_with("dropped 2 of 5 entries [arm64, __patchable_function_entries"), "{}", a.summary());
}

#[test]
fn x86_and_i386_before_6_0_are_zeroed_by_containment() {
    // No check in 5.10-5.19, an identity adjust: zeroing is safe, and the
    // rule is the function's extent, for RELA and REL alike.
    for (arch, abs) in [(Architecture::X86_64, elf::R_X86_64_64), (Architecture::I386, elf::R_386_32)] {
        let mut f = common::standard(arch, Endianness::Little, 0, "__mcount_loc", abs, 0, 4);
        f.vermagic = "5.10.0-32-amd64 SMP mod_unload modversions";
        f.function_size = 4;
        let (_, an) = run(&f.build());
        assert!(an.summary().starts_with("zeroed 5 of 9 entries"), "{arch:?}: {}", an.summary());
        assert!(an.summary().contains("inside a function symbol"), "{}", an.summary());
        assert!(an.details()[0].starts_with("neutraliser zero"), "{:#?}", an.details());
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! The containment rule (`Criterion::Contains`) on synthetic modules of every
//! arch it covers: arm64, riscv, s390, loongarch, arm and mips. Each module has
//! entries inside a sized function, in the patchable area before one, past
//! every function (an overridden weak body), before any symbol, next to a
//! symbol without a size and under an odd relocation; the test checks which
//! go, which stay, what `-v` says, and that nothing else in the file moves.
#![allow(clippy::cast_possible_truncation, reason = "test fixtures: small offsets the test itself wrote")]

mod common;

use common::{add_callsites, add_modinfo, assert_differs_only_in, changeable, entries};
use object::write::{Object, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, Object as _, ObjectSymbol as _, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope, elf,
};
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Analysis, LeftAlone, Options, Outcome, analyze};

/// One arch: how its modules record callsites, and its allowance.
struct Target {
    arch: Architecture,
    endian: Endianness,
    callsite: &'static str,
    abs_type: u32,
    /// Some other relocation type the arch knows, for the odd-shape entry.
    other_type: u32,
    before: u64,
    vermagic: &'static str,
}

const ARCHES: [Target; 8] = [
    Target {
        arch: Architecture::Aarch64,
        endian: Endianness::Little,
        callsite: "__patchable_function_entries",
        abs_type: elf::R_AARCH64_ABS64,
        other_type: elf::R_AARCH64_PREL64,
        before: 8,
        vermagic: "7.2.13+deb14-arm64 SMP preempt mod_unload aarch64",
    },
    Target {
        arch: Architecture::Riscv64,
        endian: Endianness::Little,
        callsite: "__patchable_function_entries",
        abs_type: elf::R_RISCV_64,
        other_type: elf::R_RISCV_32,
        before: 8,
        vermagic: "7.2.13+deb14-riscv64 SMP preempt mod_unload riscv",
    },
    Target {
        arch: Architecture::S390x,
        endian: Endianness::Big,
        callsite: "__mcount_loc",
        abs_type: elf::R_390_64,
        other_type: elf::R_390_32,
        before: 0,
        vermagic: "7.2.13+deb14-s390x SMP mod_unload modversions",
    },
    Target {
        arch: Architecture::LoongArch64,
        endian: Endianness::Little,
        callsite: "__patchable_function_entries",
        abs_type: elf::R_LARCH_64,
        other_type: elf::R_LARCH_32,
        before: 0,
        vermagic: "7.2.13+deb14-loong64 SMP preempt mod_unload modversions",
    },
    Target {
        arch: Architecture::Arm,
        endian: Endianness::Little,
        callsite: "__mcount_loc",
        abs_type: elf::R_ARM_ABS32,
        other_type: elf::R_ARM_REL32,
        before: 0,
        vermagic: "7.2.13+deb14-armmp SMP mod_unload modversions ARMv7 p2v8",
    },
    // mips64el: RELA, with its own `r_info` layout (object writes it).
    Target {
        arch: Architecture::Mips64,
        endian: Endianness::Little,
        callsite: "__mcount_loc",
        abs_type: elf::R_MIPS_64,
        other_type: elf::R_MIPS_32,
        before: 0,
        vermagic: "6.12.95+deb12-mips64r2el SMP mod_unload modversions MIPS64_R2 64BIT",
    },
    // Big-endian n64, whose `r_info` reads as the standard layout.
    Target {
        arch: Architecture::Mips64,
        endian: Endianness::Big,
        callsite: "__mcount_loc",
        abs_type: elf::R_MIPS_64,
        other_type: elf::R_MIPS_32,
        before: 0,
        vermagic: "6.12.95 SMP mod_unload modversions MIPS64_R2 64BIT",
    },
    // mipsel o32: REL, the addend in the word.
    Target {
        arch: Architecture::Mips,
        endian: Endianness::Little,
        callsite: "__mcount_loc",
        abs_type: elf::R_MIPS_32,
        other_type: elf::R_MIPS_16,
        before: 0,
        vermagic: "6.1.0-50-4kc-malta SMP mod_unload modversions MIPS32_R2 32BIT",
    },
];

/// What the tool must do with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Keep,
    Zero,
    Doubt,
}

/// The `.text` layout, relative to the arch's `before`:
/// `f` [0x40, 0x80) sized; a weak body at 0x88 with no symbol; `g` [0xc0,
/// 0x100) sized; `u` at 0x140 a function without a size; `l` at 0x200 a
/// label (`STT_NOTYPE`); `h` [0x300, 0x320) sized.
fn cases(before: u64) -> Vec<(u64, Want, &'static str)> {
    vec![
        (0x20, Want::Zero, "before any symbol"),
        (0x40 - before, Want::Keep, "f's patchable area (or f itself)"),
        (0x40 + 0x3c, Want::Keep, "f's last word"),
        (0x88 - before, Want::Zero, "the weak body after f"),
        (0xc0 - before - 4, Want::Zero, "4 bytes more than the allowance before g"),
        (0xc0 - before, Want::Keep, "the allowance before g, inclusive"),
        (0x100, Want::Zero, "g's end, exclusive"),
        (0x150, Want::Doubt, "after u, which has no size"),
        (0x208, Want::Doubt, "after the label l"),
        (0x310, Want::Keep, "inside h"),
    ]
}

/// The module: `cases(before)` as entries of the arch's callsite table, then
/// one entry of another relocation type (at h, so valid but for its shape).
fn build(a: &Target, local: bool) -> Vec<u8> {
    build_with(a, a.vermagic, local)
}

fn build_with(a: &Target, vermagic: &str, local: bool) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, a.arch, a.endian);
    let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    obj.set_section_data(text, vec![0x13u8; 0x400], 16);
    let scope = if local { SymbolScope::Compilation } else { SymbolScope::Linkage };
    for (name, value, size, kind) in [
        ("f", 0x40, 0x40, SymbolKind::Text),
        ("g", 0xc0, 0x40, SymbolKind::Text),
        ("u", 0x140, 0, SymbolKind::Text),
        ("l", 0x200, 0, SymbolKind::Label),
        ("h", 0x300, 0x20, SymbolKind::Text),
    ] {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size,
            kind,
            scope,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    }
    let word: u64 = if a.arch.address_size().unwrap().bytes() == 8 { 8 } else { 4 };
    let locations: Vec<i64> = cases(a.before).iter().map(|c| i64::from_ne_bytes(c.0.to_ne_bytes())).collect();
    let cs = obj.add_section(Vec::new(), a.callsite.as_bytes().to_vec(), SectionKind::ReadOnlyData);
    let mut words = vec![0u8; (locations.len() + 1) * word as usize];
    let mut odd: u32 = 0x310;
    if a.arch == Architecture::Mips {
        // object writes no 16-bit implicit addend: the REL word holds it.
        let at = locations.len() * word as usize;
        let bytes = if a.endian == Endianness::Big { odd.to_be_bytes() } else { odd.to_le_bytes() };
        words[at..at + 4].copy_from_slice(&bytes);
        odd = 0;
    }
    obj.set_section_data(cs, words, word);
    let sym = obj.section_symbol(text);
    add_callsites(&mut obj, cs, 0, word, sym, a.abs_type, locations.iter().copied());
    add_callsites(&mut obj, cs, locations.len() as u64, word, sym, a.other_type, [i64::from(odd)]);
    add_modinfo(&mut obj, vermagic, &[]);
    obj.write().unwrap()
}

fn verbose() -> Options {
    Options { verbose: true, ..Options::default() }
}

fn run(data: &[u8], opts: &Options) -> (Vec<u8>, Analysis) {
    let a = analyze(data, opts).unwrap_or_else(|e| panic!("refused: {e}"));
    (a.plan.apply_to(data), a)
}

#[test]
fn every_arch_keeps_what_lies_in_a_function_and_zeroes_the_rest() {
    for a in &ARCHES {
        let name = a.arch;
        let before = build(a, true);
        let (after, an) = run(&before, &verbose());
        let cases = cases(a.before);
        let zeroed: Vec<u64> = cases.iter().filter(|c| c.1 == Want::Zero).map(|c| c.0).collect();
        // The entries left are exactly the others, the odd one included.
        let mut want: Vec<(String, u64)> = entries(&before, a.callsite, 0);
        want.retain(|(_, at)| !zeroed.contains(at));
        assert_eq!(entries(&after, a.callsite, 0), want, "{name:?}");
        assert!(matches!(an.outcome, Outcome::Changed { neutralised: n, .. } if n == zeroed.len()), "{name:?} {an:?}");
        assert_differs_only_in(&before, &after, &changeable(&before, a.callsite));
        // -v names the rule and each zeroed or doubted entry's reason.
        assert!(an.summary().contains("inside a function symbol"), "{name:?}: {}", an.summary());
        assert!(an.summary().contains(&format!("up to {} bytes before it", a.before)), "{}", an.summary());
        assert!(an.summary().contains("3 kept for doubt"), "{name:?}: {}", an.summary());
        let has = |line: &str| an.details().iter().any(|d| d.contains(line));
        assert!(has("zero .text+0x20 (distance 0, no symbol before it)"), "{name:?} {:#?}", an.details());
        let weak = 0x88 - a.before;
        assert!(has(&format!("zero .text+{weak:#x} (distance {} after f)", weak - 0x40)), "{:#?}", an.details());
        assert!(has("zero .text+0x100 (distance 64 after g)"), "{name:?} {:#?}", an.details());
        assert!(has("keep .text+0x150: in no sized function, but the nearest symbol u has no function size"));
        assert!(has("keep .text+0x208: in no sized function, but the nearest symbol l has no function size"));
        assert!(
            an.details().iter().any(|d| d.contains(&format!("is not the absolute word type {}", a.abs_type))),
            "{name:?} {:#?}",
            an.details()
        );
        // A second run finds nothing more.
        let (again, an2) = run(&after, &verbose());
        assert_eq!(again, after, "{name:?}");
        assert!(an2.summary().contains("nothing to zero"), "{name:?}: {}", an2.summary());
    }
}

#[test]
fn without_local_function_symbols_nothing_outside_a_function_is_zeroed() {
    // The kernel keeps and traces a static function's record whatever its
    // symbol: with the local symbols stripped there is no extent to test.
    for a in &ARCHES {
        let (after, an) = run(&build(a, false), &verbose());
        assert_eq!(an.outcome, Outcome::Unchanged, "{:?}", a.arch);
        assert_eq!(after, build(a, false));
        assert!(
            an.details()
                .iter()
                .any(|d| d
                    == "keep .text+0x20: in no sized function, but the module has no local function symbols to tell"),
            "{:#?}",
            an.details()
        );
    }
}

#[test]
fn old_releases_are_left_alone_with_the_reason() {
    // arm64 and riscv from 6.13 adjust a location away from 0: only a
    // kernel that tests for zero first (6.12.95+, 6.15+) can take zeroed
    // words; the others get theirs dropped. s390's adjust is the identity,
    // so 6.12.0 is zeroed.
    let arm64 = &ARCHES[0];
    let riscv = &ARCHES[1];
    let s390 = &ARCHES[2];
    let left = [
        (arm64, "5.4.0-150-generic SMP preempt mod_unload aarch64", "predates 5.10"),
        (s390, "4.19.0 SMP mod_unload", "predates 5.10"),
    ];
    for (a, vermagic, why) in left {
        let data = build_with(a, vermagic, true);
        let (after, an) = run(&data, &verbose());
        assert_eq!(after, data, "{vermagic}");
        assert!(
            matches!(an.outcome, Outcome::Skipped(LeftAlone::NoRule, ref r) if r.contains(why)),
            "{vermagic}: {:?}",
            an.outcome
        );
    }
    // Zeroed where the kernel tests for zero first or the adjust keeps 0;
    // dropped where it adjusts first (tests/drop.rs).
    let neutralised = [
        (arm64, "6.12.95 SMP preempt mod_unload aarch64", "zeroed"),
        (arm64, "6.15.0 SMP preempt mod_unload aarch64", "zeroed"),
        (riscv, "6.12.0 SMP preempt mod_unload riscv", "zeroed"),
        (s390, "6.12.0 SMP mod_unload", "zeroed"),
        (s390, "5.10.0-32-s390x SMP mod_unload", "zeroed"),
        (arm64, "6.1.0-57-arm64 SMP preempt mod_unload aarch64", "dropped"),
        (arm64, "5.10.0-32-arm64 SMP preempt mod_unload aarch64", "dropped"),
        (arm64, "6.12.94 SMP preempt mod_unload aarch64", "dropped"),
        (arm64, "6.14.11 SMP preempt mod_unload aarch64", "dropped"),
        (riscv, "6.14.0 SMP preempt mod_unload riscv", "dropped"),
    ];
    for (a, vermagic, how) in neutralised {
        let (_, an) = run(&build_with(a, vermagic, true), &verbose());
        assert!(matches!(an.outcome, Outcome::Changed { neutralised: 4, .. }), "{vermagic}: {:?}", an.outcome);
        assert!(an.summary().starts_with(&format!("{how} 4 of")), "{vermagic}: {}", an.summary());
    }
}

#[test]
fn max_offset_has_no_meaning_here_and_the_config_picks_the_table() {
    let arm64 = &ARCHES[0];
    let opts = Options {
        overrides: zero_weak_mcount::arch::Overrides { max_offset: Some(4), section: None },
        ..Options::default()
    };
    let err = analyze(&build(arm64, true), &opts).unwrap_err().to_string();
    assert!(err.contains("has no FTRACE_MCOUNT_MAX_OFFSET"), "{err}");
    // arm64 without DYNAMIC_FTRACE_WITH_ARGS records mcount calls instead.
    let mcount =
        Options { kconfig: Some(Kconfig::parse("CONFIG_ARM64=y\nCONFIG_DYNAMIC_FTRACE=y\n")), ..Options::default() };
    let an = analyze(&build(arm64, true), &mcount).unwrap();
    assert_eq!(an.summary(), "nothing to do: no __mcount_loc section");
}

#[test]
fn a_tree_counts_these_modules_as_processed_not_skipped() {
    let dir = common::Scratch::new("contains-tree");
    let arm64 = &ARCHES[0];
    let weak = build(arm64, true);
    dir.file("weak.ko", &weak);
    dir.file("clean.ko", &run(&weak, &Options::default()).0);
    let out = common::tool(&[std::ffi::OsStr::new("--check"), dir.0.as_os_str()]);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("2 modules: 1 would change, 1 unchanged, 0 skipped, 0 errors"), "{err}");
    // The kernel checks nothing here: the dead records stay enabled.
    let line = "weak.ko: an fprobe, BPF fentry program or livepatch on them can attach to a dead weak body and never \
                run; its 4 dead records stay enabled, listed under the previous function's name\n";
    assert!(err.contains(line) && err.contains("weak.ko: 2 functions at risk: f and g\n"), "{err}");
    assert!(!err.contains("disables"), "{err}");
}

/// How a module was stripped, for [`build_strip`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strip {
    /// As `ld -r` leaves it, with debug information.
    None,
    /// `strip --strip-debug` (`INSTALL_MOD_STRIP=1`): the file symbols and
    /// the debug sections go.
    Debug,
    /// `strip --strip-unneeded`: every symbol no relocation names goes,
    /// the static function `s`, the file and `.modinfo` symbols with it.
    Unneeded,
}

/// A module of static functions: `f` [0x40, 0x80) and `h` [0x300, 0x320),
/// whose addresses a function table in `.data` takes (so a relocation names
/// them), `s` [0xc0, 0x100), which only code in its own section calls (so
/// none does), and an overridden weak body at 0x88 with no symbol. Each has
/// a callsite entry; as linked, the weak body's is the one dead entry.
fn build_strip(a: &Target, strip: Strip) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, a.arch, a.endian);
    if strip == Strip::None {
        for file in ["weak.c", "main.c"] {
            obj.add_file_symbol(file.as_bytes().to_vec());
        }
    }
    let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    obj.set_section_data(text, vec![0x13u8; 0x400], 16);
    let mut functions = vec![("f", 0x40, 0x40), ("h", 0x300, 0x20)];
    if strip != Strip::Unneeded {
        functions.push(("s", 0xc0, 0x40));
    }
    let ids: Vec<_> = functions
        .iter()
        .map(|&(name, value, size)| {
            obj.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value,
                size,
                kind: SymbolKind::Text,
                scope: SymbolScope::Compilation,
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            })
        })
        .collect();
    let word: u64 = if a.arch.address_size().unwrap().bytes() == 8 { 8 } else { 4 };
    let data = obj.add_section(Vec::new(), b".data".to_vec(), SectionKind::Data);
    obj.set_section_data(data, vec![0u8; 2 * word as usize], word);
    for (i, &id) in ids[..2].iter().enumerate() {
        add_callsites(&mut obj, data, i as u64, word, id, a.abs_type, [0]);
    }
    let locations = [0x40 - a.before, 0x88 - a.before, 0xc0 - a.before, 0x300 - a.before];
    let cs = obj.add_section(Vec::new(), a.callsite.as_bytes().to_vec(), SectionKind::ReadOnlyData);
    obj.set_section_data(cs, vec![0u8; locations.len() * word as usize], word);
    let sym = obj.section_symbol(text);
    add_callsites(&mut obj, cs, 0, word, sym, a.abs_type, locations.map(|l| i64::from_ne_bytes(l.to_ne_bytes())));
    let modinfo = add_modinfo(&mut obj, a.vermagic, &[]);
    if strip != Strip::Unneeded {
        // modpost's strings each have a static symbol no loaded section
        // relocates against (`__UNIQUE_ID_vermagic123`).
        let vermagic = obj.add_symbol(Symbol {
            name: b"__UNIQUE_ID_vermagic0".to_vec(),
            value: 12,
            size: a.vermagic.len() as u64 + 10,
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(modinfo),
            flags: SymbolFlags::None,
        });
        if strip == Strip::None {
            // Debug information that names each static symbol, as riscv's
            // assembler writes it: not a relocation the loader applies.
            let debug = obj.add_section(Vec::new(), b".debug_info".to_vec(), SectionKind::Debug);
            let named = [ids.as_slice(), &[vermagic]].concat();
            obj.set_section_data(debug, vec![0u8; named.len() * word as usize], 1);
            for (i, &id) in named.iter().enumerate() {
                add_callsites(&mut obj, debug, i as u64, word, id, a.abs_type, [0]);
            }
        }
    }
    obj.write().unwrap()
}

#[test]
fn a_module_stripped_of_unneeded_symbols_keeps_every_entry() {
    for a in &ARCHES {
        let name = a.arch;
        let weak = 0x88 - a.before;
        let (linked, debug, unneeded) =
            (build_strip(a, Strip::None), build_strip(a, Strip::Debug), build_strip(a, Strip::Unneeded));
        // The stripped module still has local function symbols (f and h):
        // the guard for a module without any does not apply.
        let file = object::File::parse(&*unneeded).unwrap();
        let locals: Vec<_> = file.symbols().filter(|s| s.is_local() && s.kind() == SymbolKind::Text).collect();
        assert_eq!(locals.len(), 2, "{name:?}");
        assert!(file.symbols().all(|s| s.kind() != SymbolKind::File), "{name:?}");
        // Negative control: as linked, and without its file symbols as
        // `--strip-debug` leaves it, only the weak body's entry goes.
        for (what, data) in [("linked", &linked), ("--strip-debug", &debug)] {
            let (after, an) = run(data, &verbose());
            let mut want = entries(data, a.callsite, 0);
            want.retain(|(_, at)| *at != weak);
            assert_eq!(entries(&after, a.callsite, 0), want, "{name:?} {what}");
            assert!(matches!(an.outcome, Outcome::Changed { neutralised: 1, .. }), "{name:?} {what}: {an:?}");
            assert!(an.details().iter().any(|d| d.contains(&format!("zero .text+{weak:#x}"))), "{name:?} {what}");
        }
        // Stripped of what no relocation names, s lost its symbol: its
        // entry and the weak body's now look alike, and both are kept.
        let (after, an) = run(&unneeded, &verbose());
        assert_eq!(after, unneeded, "{name:?}");
        assert_eq!(an.outcome, Outcome::Unchanged, "{name:?}");
        assert!(an.summary().contains("2 kept for doubt"), "{name:?}: {}", an.summary());
        for at in [weak, 0xc0 - a.before] {
            let line = format!(
                "keep .text+{at:#x}: in no sized function, but every local symbol left is one a relocation names \
                 (stripped with --strip-unneeded?): a static function may have lost its own"
            );
            assert!(an.details().contains(&line), "{name:?} {:#?}", an.details());
        }
    }
}

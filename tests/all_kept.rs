// SPDX-License-Identifier: GPL-2.0-only
//! The answer given while a module is read (`kept::all_kept`: every entry
//! kept, nothing stored) is the full decision's answer, on modules where it
//! answers and on modules where it hands over: the same report, plan,
//! outcome and warnings, and for a damaged module the same error. `-v`
//! always takes the full decision (it lists every kept entry), so the two
//! runs of [`analyses`] compare the two paths.
#![allow(
    clippy::cast_possible_truncation,
    reason = "test fixtures: offsets and sizes are small numbers the test itself wrote"
)]

mod common;

use common::{Fixture, Rng, Scratch, Text, module, standard};
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::arch::{self, Overrides, Scope};
use zero_weak_mcount::elf::parse_info;
use zero_weak_mcount::kept;
use zero_weak_mcount::process::{Options, analyze};
use zero_weak_mcount::report::Finding;

/// What the tool makes of `data`, and what the full decision makes of it
/// (with the kept entries `-v` adds taken out again), both as text.
fn analyses(data: &[u8]) -> (String, String) {
    let quick = analyze(data, &Options::default());
    let full = analyze(data, &Options { verbose: true, ..Options::default() }).map(|mut a| {
        a.report.findings.retain(|f| !matches!(f, Finding::Kept { .. }));
        a
    });
    (format!("{quick:?}"), format!("{full:?}"))
}

/// What `all_kept` answers for `data`: `Some(entries)`, or `None` where it
/// hands over (or there is no rule or table to ask about).
fn answered(data: &[u8]) -> Option<usize> {
    let info = parse_info(data).ok()?;
    let Scope::Act(rule) = arch::rule_for(data, &info, None, &Overrides::default()).ok()? else { return None };
    let callsite = info.alloc_section(rule.section)?;
    kept::all_kept(data, &info, callsite, &rule).ok()?
}

/// The standard fixture with only the entries the offset rule keeps: no
/// dead entry, no doubt (docs of `common::standard`). Built with
/// functions longer than `max`, each entry lies inside one.
fn all_kept(mut f: Fixture, max: u64) -> Fixture {
    f.texts[0].ips = vec![0x40, 0x40 + max, 0x100];
    f.texts[1].ips = vec![0x10];
    f
}

fn x86_64() -> Fixture {
    standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4)
}

fn i386() -> Fixture {
    standard(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0)
}

/// Big-endian, `ELFv2`.
fn ppc64() -> Fixture {
    standard(Architecture::PowerPc64, Endianness::Big, 2, "__patchable_function_entries", elf::R_PPC64_ADDR64, 0, 16)
}

/// Big-endian, 32-bit words.
fn ppc32() -> Fixture {
    standard(Architecture::PowerPc, Endianness::Big, 0, "__mcount_loc", elf::R_PPC_ADDR32, 0, 8)
}

#[test]
fn a_module_whose_every_entry_is_kept_is_answered_while_read() {
    let scratch = Scratch::new("all-kept");
    let cases = [
        ("x86_64", all_kept(x86_64(), 4).build(), 5),
        ("i386 (REL)", all_kept(i386(), 0).build(), 5),
        ("ppc64 big-endian", all_kept(ppc64(), 16).build(), 5),
        ("ppc32", all_kept(ppc32(), 8).build(), 5),
        // The bundled module once processed: its 2 dead entries are gone.
        ("zwm_test.ko processed", scratch.processed_module(), 6),
    ];
    for (name, data, entries) in cases {
        assert_eq!(answered(&data), Some(entries), "{name}");
        let (quick, full) = analyses(&data);
        assert_eq!(quick, full, "{name}");
        assert!(quick.contains(&format!("entries: {entries}, weak: 0, doubt: 0")), "{name}: {quick}");
    }
}

#[test]
fn a_dead_entry_or_a_doubt_hands_the_module_to_the_full_decision() {
    for (name, data) in [
        ("x86_64", x86_64().build()),
        ("i386 (REL)", i386().build()),
        ("ppc64 big-endian", ppc64().build()),
        ("ppc32", ppc32().build()),
        ("zwm_test.ko", module()),
    ] {
        assert_eq!(answered(&data), None, "{name}");
        let (quick, full) = analyses(&data);
        assert_eq!(quick, full, "{name}");
        assert!(quick.contains("Weak {"), "{name}: a dead entry is reported: {quick}");
    }
    // A doubt alone (a record past its section's end) is no dead entry,
    // and is still not kept by a symbol.
    let mut f = all_kept(x86_64(), 4);
    f.texts[1].ips.push(0x50);
    let data = f.build();
    assert_eq!(answered(&data), None);
    let (quick, full) = analyses(&data);
    assert_eq!(quick, full);
    assert!(quick.contains("Doubt {") && !quick.contains("Weak {"), "{quick}");
    // At the start of a section another precedes, a symbol at the end of
    // that one might satisfy the kernel's check; but the entry lies in no
    // function, so it is dead by sorttable's rule.
    let mut f = all_kept(x86_64(), 4);
    f.texts[1].ips.push(0);
    let data = f.build();
    assert_eq!(answered(&data), None);
    let (quick, full) = analyses(&data);
    assert_eq!(quick, full);
    assert!(quick.contains("by: Containment") && !quick.contains("Doubt {"), "{quick}");
}

#[test]
fn a_function_in_the_window_keeps_an_entry_here_only_if_it_covers_it() {
    // ppc64: max 16. The entry 16 bytes past a function lies in its
    // window, and inside it only if it is longer than 16 bytes; a shorter
    // function keeps nothing here, and the full decision answers.
    let mut f = all_kept(ppc64(), 16);
    f.texts[0].ips = vec![0x40, 0x50, 0x100];
    for (size, answer) in [(12, None), (16, None), (17, Some(5)), (0x20, Some(5))] {
        f.function_size = size;
        let data = f.build();
        assert_eq!(answered(&data), answer, "{size}-byte functions");
        let (quick, full) = analyses(&data);
        assert_eq!(quick, full, "{size}-byte functions");
        // Where it is not inside, sorttable's rule finds it dead.
        assert_eq!(quick.contains("by: Containment"), answer.is_none(), "{size}-byte functions: {quick}");
    }
}

/// A module of random text sections, symbols and callsites: dense enough
/// that windows cross the answer's blocks, with aliases, symbols past
/// their section's end, and now and then a dead entry.
fn random_module(rng: &mut Rng, arch: Architecture, abs: u32, max: u64) -> Vec<u8> {
    let names = [".text", ".text.unlikely", ".noinstr.text"];
    let mut f = standard(arch, Endianness::Little, 0, "__mcount_loc", abs, 0, max);
    f.texts.clear();
    for &name in &names[..=rng.below(3)] {
        let size = 0x100 + 0x10 * rng.below(256) as u64;
        let mut symbols: Vec<u64> = (0..=rng.below(120)).map(|_| rng.below(size as usize) as u64).collect();
        if rng.chance(10) {
            // Many aliases at one address: more than a block may hold.
            symbols.extend(std::iter::repeat_n(symbols[0], 150));
        }
        if rng.chance(10) {
            symbols.push(size + rng.below(64) as u64);
        }
        let mut ips: Vec<u64> = Vec::new();
        for &v in &symbols {
            if v < size && rng.chance(50) {
                ips.push((v + rng.below(max as usize + 1) as u64).min(size - 1));
            }
        }
        ips.sort_unstable();
        ips.dedup();
        if rng.chance(15) {
            ips.push(rng.below(size as usize) as u64);
        }
        let symbols: Vec<(&'static str, u64)> =
            symbols.into_iter().enumerate().map(|(i, v)| (["f", "g", "h", "k"][i % 4], v)).collect();
        f.texts.push(Text { name, size, symbols, ips });
    }
    // Functions as long as the window or shorter keep nothing while read.
    f.function_size = 1 + rng.below(2 * max as usize + 2) as u64;
    f.build()
}

#[test]
fn random_modules_get_the_full_decisions_answer() {
    let mut rng = Rng::new(0x5eed_0fa1_1e57);
    let (mut answered_n, mut handed_over) = (0, 0);
    for round in 0..600 {
        let (arch, abs, max) = if round % 2 == 0 {
            (Architecture::X86_64, elf::R_X86_64_64, 4)
        } else {
            (Architecture::I386, elf::R_386_32, 0)
        };
        let data = random_module(&mut rng, arch, abs, max);
        let (quick, full) = analyses(&data);
        assert_eq!(quick, full, "round {round}");
        *if answered(&data).is_some() { &mut answered_n } else { &mut handed_over } += 1;
    }
    // Both paths were taken often: the comparison is not vacuous.
    assert!(answered_n > 100 && handed_over > 100, "{answered_n} answered, {handed_over} handed over");
}

#[test]
fn a_damaged_module_fails_as_the_full_decision_fails() {
    let good = all_kept(x86_64(), 4).build();
    assert!(answered(&good).is_some());
    let mut rng = Rng::new(0x0bad_b17e);
    let (mut errors, mut answered_n) = (0, 0);
    for round in 0..3000 {
        let mut data = good.clone();
        for _ in 0..=rng.below(3) {
            let at = rng.below(data.len());
            data[at] ^= 1 << rng.below(8);
        }
        let (quick, full) = analyses(&data);
        assert_eq!(quick, full, "round {round}");
        if quick.starts_with("Err") {
            errors += 1;
        } else if answered(&data).is_some() {
            answered_n += 1;
        }
    }
    assert!(errors > 100 && answered_n > 100, "{errors} errors, {answered_n} answered while read");
}

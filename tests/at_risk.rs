// SPDX-License-Identifier: GPL-2.0-only
//! The at-risk report (docs/at-risk.md) on synthetic modules: a function
//! no record covers, with a dead record in its kallsyms extent, is named
//! before processing and not after, whether its record follows its
//! endbr64 or it has none (`notrace`, `x86_64` and i386), and where its
//! extent runs on into the next text section; a function its own record
//! covers is not (the negative controls).

mod common;

use common::{Fixture, Scratch, Text, VERMAGIC, stderr, tool};
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::process::{Options, analyze};
use zero_weak_mcount::risk::AtRisk;

fn fixture(arch: Architecture, texts: Vec<Text>) -> Fixture {
    let (abs_type, vermagic) = match arch {
        Architecture::I386 => (elf::R_386_32, "7.2.0 SMP preempt mod_unload 686"),
        _ => (elf::R_X86_64_64, VERMAGIC),
    };
    let (endian, e_flags, callsite, adjust, modinfo) = (Endianness::Little, 0, "__mcount_loc", 0, Vec::new());
    Fixture { arch, endian, e_flags, callsite, abs_type, adjust, vermagic, modinfo, texts, function_size: 5 }
}

/// f at 0x40 with its record at f+4 (after endbr64), or at f itself in a
/// build without IBT, and a dead body's record at 0x80 in its extent; g at
/// 0x100 with its record at g itself and a dead record at 0x180: g's exact
/// lookup succeeds, so g is safe.
fn module(endbr64: bool) -> Vec<u8> {
    let own = if endbr64 { 0x44 } else { 0x40 };
    let text = Text {
        name: ".text",
        size: 0x200,
        symbols: vec![("f", 0x40), ("g", 0x100)],
        ips: vec![own, 0x80, 0x100, 0x180],
    };
    let mut data = fixture(Architecture::X86_64, vec![text]).build();
    if !endbr64 {
        // The fixture's filler is endbr64; a build without IBT has none.
        let at = data.windows(4).position(|w| w == [0xf3, 0x0f, 0x1e, 0xfa]).unwrap();
        data[at..at + 0x200].fill(0x90);
    }
    data
}

fn risk(r: &AtRisk) -> (&str, &str, u64, Option<u64>, &str, u64) {
    (&r.function, &r.section, r.function_addr, r.patch_site, &r.dead_section, r.dead_site)
}

fn at_risk(data: &[u8]) -> Vec<(String, String, u64, Option<u64>, String, u64)> {
    let a = analyze(data, &Options::default()).unwrap();
    assert!(a.report.at_risk_after.is_empty(), "{:?}", a.report.at_risk_after);
    let list = a.report.at_risk.iter().map(risk);
    list.map(|(f, s, at, own, ds, d)| (f.into(), s.into(), at, own, ds.into(), d)).collect()
}

fn item(
    f: &str,
    at: u64,
    own: Option<u64>,
    dead_section: &str,
    dead: u64,
) -> (String, String, u64, Option<u64>, String, u64) {
    (f.into(), ".text".into(), at, own, dead_section.into(), dead)
}

/// A `notrace` function has no record, and, its address not taken, no
/// endbr64 either: the exact lookup at f finds nothing, and its extent
/// holds a dead body's record. The same module with f's record at f is
/// safe.
#[test]
fn a_notrace_function_before_a_dead_body_on_x86_64_and_i386() {
    for arch in [Architecture::X86_64, Architecture::I386] {
        let module = |own: &[u64]| {
            let mut ips = own.to_vec();
            ips.extend([0x80, 0x100]);
            let text = Text { name: ".text", size: 0x200, symbols: vec![("f", 0x40), ("g", 0x100)], ips };
            let mut data = fixture(arch, vec![text]).build();
            // f's first bytes: no endbr64 (the x86_64 filler is endbr64).
            let at = data.windows(4).position(|w| w == [0xf3, 0x0f, 0x1e, 0xfa] || w == [0x60, 0, 0, 0]).unwrap();
            data[at + 0x40..at + 0x44].fill(0x90);
            data
        };
        assert_eq!(at_risk(&module(&[])), [item("f", 0x40, None, ".text", 0x80)], "{arch:?}");
        assert_eq!(at_risk(&module(&[0x40])), [], "{arch:?}");
        // Processed, nothing is left to resolve to.
        let a = analyze(&module(&[]), &Options::default()).unwrap();
        assert_eq!(a.report.counts.unwrap().weak, 1, "{arch:?}: {}", a.summary());
        let again = analyze(&a.plan.apply_to(&module(&[])), &Options::default()).unwrap();
        assert!(again.report.at_risk.is_empty(), "{arch:?}: {:?}", again.report.at_risk);
    }
}

/// f is the last symbol of .text; the loader lays .text.unlikely out right
/// after it in the same region, so f's extent runs to g there and holds the
/// dead record at .text.unlikely+0x8. Were the next section .init.text (the
/// init region), f's extent would end with .text.
#[test]
fn an_extent_crosses_into_the_next_text_section() {
    let module = |next: &'static str| {
        let text = Text { name: ".text", size: 0x100, symbols: vec![("f", 0x40)], ips: vec![0x44] };
        let other = Text { name: next, size: 0x100, symbols: vec![("g", 0x40)], ips: vec![0x8, 0x44] };
        fixture(Architecture::X86_64, vec![text, other]).build()
    };
    let a = analyze(&module(".text.unlikely"), &Options::default()).unwrap();
    assert_eq!(a.report.counts.unwrap().weak, 1, "{}", a.summary());
    assert_eq!(at_risk(&module(".text.unlikely")), [item("f", 0x40, Some(0x44), ".text.unlikely", 0x8)]);
    let a = analyze(&module(".init.text"), &Options::default()).unwrap();
    assert_eq!(a.report.counts.unwrap().weak, 1, "{}", a.summary());
    assert_eq!(at_risk(&module(".init.text")), []);

    let dir = Scratch::new("at-risk-cross");
    let ko = dir.file("m.ko", &module(".text.unlikely"));
    let out = tool(&["--check", "--format=json", ko.to_str().unwrap()]);
    let o = String::from_utf8(out.stdout).unwrap();
    assert!(o.contains("\"dead_site\": \"0x8\", \"dead_section\": \".text.unlikely\", \"reason\": "), "{o}");
    assert!(o.contains("can return the dead record at .text.unlikely+0x8\""), "{o}");
    let out = tool(&["--check", "-v", ko.to_str().unwrap()]);
    let line = "at risk: f (patch site .text+0x44, after its endbr64) can resolve to dead .text.unlikely+0x8";
    assert!(stderr(&out).contains(line), "{}", stderr(&out));
}

#[test]
fn the_function_patched_after_endbr64_with_a_dead_record_in_its_extent() {
    let data = module(true);
    let a = analyze(&data, &Options::default()).unwrap();
    let weak = a.report.counts.unwrap().weak;
    assert_eq!(weak, 2, "{}", a.summary());
    let before: Vec<_> = a.report.at_risk.iter().map(risk).collect();
    assert_eq!(before, [("f", ".text", 0x40, Some(0x44), ".text", 0x80)]);
    assert!(a.report.at_risk_after.is_empty(), "{:?}", a.report.at_risk_after);
    // The processed module has no dead record left to resolve to.
    let after = a.plan.apply_to(&data);
    let again = analyze(&after, &Options::default()).unwrap();
    assert!(again.report.at_risk.is_empty() && again.report.counts.unwrap().weak == 0, "{:?}", again.report);
}

#[test]
fn without_endbr64_the_exact_lookup_finds_every_function() {
    let a = analyze(&module(false), &Options::default()).unwrap();
    // IBT off: max offset 0; f's record is at f, covering it, and g's at g.
    assert_eq!(a.report.counts.unwrap().weak, 2, "{}", a.summary());
    assert!(a.report.at_risk.is_empty(), "{:?}", a.report.at_risk);
}

#[test]
fn check_v_and_json_name_it_before_the_summary() {
    let dir = Scratch::new("at-risk");
    let ko = dir.file("m.ko", &module(true));
    let path = ko.to_str().unwrap();
    let out = tool(&["--check", "-v", path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let line = format!(
        "zero-weak-mcount: {path}: at risk: f (patch site .text+0x44, after its endbr64) can resolve to dead .text+0x80"
    );
    let at = lines.iter().position(|l| *l == line).unwrap_or_else(|| panic!("{line} missing: {err}"));
    assert!(lines[at + 1..].iter().any(|l| l.contains("would change: would zero 2 of 4")), "{err}");
    assert_eq!(lines.last().map(|l| l.contains("would change")), Some(true), "summary last: {err}");
    assert!(!lines.iter().any(|l| l.contains("still at risk")), "{err}");
    assert!(!line.contains(": zero ") && !line.contains(": drop "));

    let out = tool(&["--check", "--format=json", path]);
    let o = String::from_utf8(out.stdout).unwrap();
    assert!(
        o.contains(
            "\"at_risk\": [{\"function\": \"f\", \"section\": \".text\", \"function_addr\": \"0x40\", \
             \"patch_site\": \"0x44\", \"dead_site\": \"0x80\", \"dead_section\": null, \"reason\": \"f's own \
             record is at +0x4 (after its endbr64), not at the symbol"
        ),
        "{o}"
    );
    assert!(o.contains("\"at_risk_after\": []"), "{o}");
}

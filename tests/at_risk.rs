// SPDX-License-Identifier: GPL-2.0-only
//! The at-risk report (docs/at-risk.md) on a synthetic `x86_64` IBT module:
//! the function whose own record follows its endbr64 and whose kallsyms
//! extent holds a dead record is named, before processing and not after;
//! the same layout without endbr64 names nothing (the negative control).

mod common;

use common::{Fixture, Scratch, Text, VERMAGIC, stderr, tool};
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::process::{Options, analyze};
use zero_weak_mcount::risk::AtRisk;

/// f at 0x40 with its record at f+4 (after endbr64) and a dead body's
/// record at 0x80 in its extent; g at 0x100 with its record at g itself
/// and a dead record at 0x180: g's exact lookup succeeds, so g is safe.
fn module(endbr64: bool) -> Vec<u8> {
    let f = Fixture {
        arch: Architecture::X86_64,
        endian: Endianness::Little,
        e_flags: 0,
        callsite: "__mcount_loc",
        abs_type: elf::R_X86_64_64,
        adjust: 0,
        vermagic: VERMAGIC,
        modinfo: Vec::new(),
        texts: vec![Text {
            name: ".text",
            size: 0x200,
            symbols: vec![("f", 0x40), ("g", 0x100)],
            ips: vec![0x44, 0x80, 0x100, 0x180],
        }],
    };
    let mut data = f.build();
    if !endbr64 {
        // The fixture's filler is endbr64; a build without IBT has none.
        let at = data.windows(4).position(|w| w == [0xf3, 0x0f, 0x1e, 0xfa]).unwrap();
        data[at..at + 0x200].fill(0x90);
    }
    data
}

fn risk(r: &AtRisk) -> (&str, &str, u64, u64, u64) {
    (&r.function, &r.section, r.function_addr, r.patch_site, r.dead_site)
}

#[test]
fn the_function_patched_after_endbr64_with_a_dead_record_in_its_extent() {
    let data = module(true);
    let a = analyze(&data, &Options::default()).unwrap();
    let weak = a.report.counts.unwrap().weak;
    assert_eq!(weak, 2, "{}", a.summary());
    let before: Vec<_> = a.report.at_risk.iter().map(risk).collect();
    assert_eq!(before, [("f", ".text", 0x40, 0x44, 0x80)]);
    assert!(a.report.at_risk_after.is_empty(), "{:?}", a.report.at_risk_after);
    // The processed module has no dead record left to resolve to.
    let after = a.plan.apply_to(&data);
    let again = analyze(&after, &Options::default()).unwrap();
    assert!(again.report.at_risk.is_empty() && again.report.counts.unwrap().weak == 0, "{:?}", again.report);
}

#[test]
fn without_endbr64_the_exact_lookup_finds_every_function() {
    let a = analyze(&module(false), &Options::default()).unwrap();
    // IBT off: max offset 0, so f+4 is dead as well; f's symbol has no
    // endbr64, its patch site is f itself, and nothing is at risk.
    assert!(a.report.counts.unwrap().weak >= 2, "{}", a.summary());
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
    let line = format!("zero-weak-mcount: {path}: at risk: f (patch site .text+0x44) can resolve to dead .text+0x80");
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
             \"patch_site\": \"0x44\", \"dead_site\": \"0x80\", \"reason\": \"f's own record is at +0x4"
        ),
        "{o}"
    );
    assert!(o.contains("\"at_risk_after\": []"), "{o}");
}

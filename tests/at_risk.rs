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
    assert!(lines[at + 1].contains("would change: would zero 2 of 4"), "summary next: {err}");
    // Then what it means and what to do, last; -v has named f already.
    let meaning = "an fprobe, BPF fentry program or livepatch on it can attach to a dead weak body and never run; ";
    assert!(lines.last().is_some_and(|l| l.contains(meaning)) && at + 3 == lines.len(), "{err}");
    assert!(!err.contains("function at risk:"), "{err}");
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

/// Six functions f0..f5 at 0x40, 0x140, ..., each with its record after its
/// endbr64 and a dead body's record 0x80 past it, in its extent; f0's
/// extent holds a second one, at 0xe0.
fn six() -> Vec<u8> {
    let names = ["f0", "f1", "f2", "f3", "f4", "f5"];
    let mut text = Text { name: ".text", size: 0x700, symbols: Vec::new(), ips: vec![0xe0] };
    for (at, name) in (0x40..).step_by(0x100).zip(names) {
        text.symbols.push((name, at));
        text.ips.extend([at + 4, at + 0x80]);
    }
    text.ips.sort_unstable();
    fixture(Architecture::X86_64, vec![text]).build()
}

/// Without -v, `--check` names the functions at risk, each once, the list
/// bounded, and says in one line what that means and what to do; -v names
/// each function once with all the dead records its lookup can return;
/// the JSON keeps an item per dead record.
#[test]
fn check_names_each_function_at_risk_once_and_says_what_to_do() {
    let dir = Scratch::new("at-risk-words");
    let ko = dir.file("m.ko", &six());
    let path = ko.to_str().unwrap();
    let out = tool(&["--check", path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let at = format!("zero-weak-mcount: {path}: ");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with(&format!("{at}would change: would zero 7 of 13 entries [")), "{err}");
    assert_eq!(lines[1], format!("{at}6 functions at risk: f0, f1, f2, f3 and 2 more"));
    assert_eq!(
        lines[2],
        format!(
            "{at}an fprobe, BPF fentry program or livepatch on them can attach to a dead weak body and never run; \
             the kernel disables its 7 dead records (listed as __ftrace_invalid_address___N); to fix: \
             zero-weak-mcount {path}"
        )
    );

    let err = stderr(&tool(&["--check", "-v", path]));
    let f0: Vec<&str> = err.lines().filter(|l| l.contains(": at risk: f0 ")).collect();
    let dead = "can resolve to dead .text+0xc0 or .text+0xe0";
    assert_eq!(f0, [format!("{at}at risk: f0 (patch site .text+0x44, after its endbr64) {dead}")], "{err}");
    assert_eq!(err.matches(": at risk: ").count(), 6, "{err}");
    assert!(!err.contains("functions at risk:"), "-v has named them: {err}");

    let json = String::from_utf8(tool(&["--check", "--format=json", path]).stdout).unwrap();
    assert_eq!(json.matches("\"function\": \"f0\"").count(), 2, "{json}");
    assert_eq!(json.matches("\"dead_site\": ").count(), 7, "{json}");

    // Signed: where it is built, or a kernel that needs no processing.
    let signed = dir.file("s.ko", &common::signed(&six()));
    let err = stderr(&tool(&["--check", signed.to_str().unwrap()]));
    let step = "; to fix: process modules where they are built, before they are signed (install-kbuild-hook for \
                kernel, DKMS and M= builds; dh_zero_weak_mcount or brp-zero-weak-mcount when packaging), or run a \
                kernel with this project's ftrace series\n";
    assert!(err.contains(step) && err.contains("would change (signed)"), "{err}");

    // Processed, nothing is left to say.
    assert!(tool(&[path]).status.success());
    let out = tool(&["--check", path]);
    assert_eq!((out.status.code(), stderr(&out)), (Some(0), String::new()));
}

/// Dead records and no function at risk (IBT off: each record at its
/// function's first byte) read otherwise: "no function at risk", what the
/// kernel does with the dead records, and how to remove them.
#[test]
fn dead_records_with_no_function_at_risk_say_so() {
    let dir = Scratch::new("at-risk-none");
    let ko = dir.file("m.ko", &module(false));
    let path = ko.to_str().unwrap();
    let err = stderr(&tool(&["--check", path]));
    let at = format!("zero-weak-mcount: {path}: ");
    let line = format!(
        "{at}no function at risk: the kernel disables its 2 dead records (listed as \
         __ftrace_invalid_address___N); to remove them: zero-weak-mcount {path}"
    );
    assert_eq!(err.lines().last(), Some(line.as_str()), "{err}");
    assert!(!err.contains("at risk: f") && !err.contains("never run"), "{err}");
    // The control: with endbr64, f is at risk, named, and the line says so.
    let ko = dir.file("ibt.ko", &module(true));
    let err = stderr(&tool(&["--check", ko.to_str().unwrap()]));
    assert!(
        err.contains(": 1 function at risk: f\n") && err.contains(" on it can attach to a dead weak body"),
        "{err}"
    );
    assert!(!err.contains("no function at risk"), "{err}");
}

/// A tree ends with the functions at risk (each once) and in how many
/// modules, and the one next step: for the unsigned, running the tool
/// without --check; for the signed, where they are built. The modules'
/// own lines leave the step to it.
#[test]
fn a_tree_ends_with_the_functions_at_risk_and_the_next_step() {
    let dir = Scratch::new("at-risk-tree");
    dir.file("a.ko", &common::signed(&six()));
    dir.file("b.ko", &module(true));
    dir.file("c.ko", &module(false));
    let out = tool(&["--check", dir.0.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[lines.len() - 2],
        "zero-weak-mcount: 3 modules: 3 would change (1 signed), 0 unchanged, 0 skipped, 0 errors"
    );
    assert_eq!(
        lines[lines.len() - 1],
        "zero-weak-mcount: 7 functions at risk in 2 modules: an fprobe, BPF fentry program or livepatch on them can \
         attach to a dead weak body and never run; to fix: run zero-weak-mcount again without --check for the 2 \
         unsigned (--signed=skip leaves the others alone); for the 1 signed, process modules where they are built, \
         before they are signed (install-kbuild-hook for kernel, DKMS and M= builds; dh_zero_weak_mcount or \
         brp-zero-weak-mcount when packaging), or run a kernel with this project's ftrace series"
    );
    assert_eq!(err.matches("to fix").count(), 1, "the step once, at the end: {err}");
    // --signed=skip leaves the signed module alone: it still needs the step.
    let skip = stderr(&tool(&["--check", "--signed=skip", dir.0.to_str().unwrap()]));
    assert_eq!(skip.lines().last(), lines.last().copied(), "{skip}");
    assert!(skip.contains(": 3 modules: 2 would change, 0 unchanged, 1 skipped (1 signed), 0 errors\n"), "{skip}");
    assert!(err.contains("b.ko: 1 function at risk: f\n"), "{err}");
    assert!(err.contains("c.ko: no function at risk: the kernel disables its 2 dead records (listed as __ftrace_invalid_address___N)\n"), "{err}");
}

/// A dead body that starts within the max offset of a short function's
/// end: the kernel's check keeps its record, enabled under that function's
/// name. f is at risk of the dead record at 0x80, which the check rejects;
/// h (0x100, 1 byte long) has its record at itself, and the dead body's
/// record follows at 0x104.
#[test]
fn dead_records_the_kernel_keeps_enabled_are_told_apart() {
    let build = |ips: Vec<u64>| {
        let text = Text { name: ".text", size: 0x200, symbols: vec![("f", 0x40), ("h", 0x100)], ips };
        let mut data = fixture(Architecture::X86_64, vec![text]).build();
        set_size(&mut data, "h", 1);
        data
    };
    let dir = Scratch::new("at-risk-enabled");
    let at_once = |data: &[u8], name: &str| {
        let ko = dir.file(name, data);
        let err = stderr(&tool(&["--check", ko.to_str().unwrap()]));
        (err.lines().last().unwrap_or_default().to_string(), ko.to_str().unwrap().to_string())
    };
    let (line, path) = at_once(&build(vec![0x44, 0x80, 0x100, 0x104]), "both.ko");
    assert_eq!(
        line,
        format!(
            "zero-weak-mcount: {path}: an fprobe, BPF fentry program or livepatch on it can attach to a dead weak \
             body and never run; the kernel disables 1 of its 2 dead records (listed as \
             __ftrace_invalid_address___N); 1 stays enabled, listed under the previous function's name; to fix: \
             zero-weak-mcount {path}"
        )
    );
    let (line, path) = at_once(&build(vec![0x44, 0x100, 0x104]), "enabled.ko");
    assert_eq!(
        line,
        format!(
            "zero-weak-mcount: {path}: no function at risk: its 1 dead record stays enabled, listed under the \
             previous function's name; to remove it: zero-weak-mcount {path}"
        )
    );
    // The control: h as long as the others, and the record at 0x104 is its own.
    let text =
        Text { name: ".text", size: 0x200, symbols: vec![("f", 0x40), ("h", 0x100)], ips: vec![0x44, 0x100, 0x104] };
    let out = tool(&[
        "--check",
        dir.file("control.ko", &fixture(Architecture::X86_64, vec![text]).build()).to_str().unwrap(),
    ]);
    assert_eq!((out.status.code(), stderr(&out)), (Some(0), String::new()));
}

/// Set the `st_size` of the 64-bit little-endian symbol NAME.
fn set_size(data: &mut [u8], name: &str, size: u64) {
    use object::read::elf::{ElfFile64, FileHeader, SectionHeader, Sym};
    let e = Endianness::Little;
    let file = ElfFile64::<Endianness>::parse(&*data).unwrap();
    let sections = file.elf_header().sections(e, &*data).unwrap();
    let symbols = sections.symbols(e, &*data, elf::SHT_SYMTAB).unwrap();
    let index = symbols.iter().position(|s| s.name(e, symbols.strings()).unwrap() == name.as_bytes()).unwrap();
    let (start, _) = sections.section(symbols.section()).unwrap().file_range(e).unwrap();
    let at = usize::try_from(start).unwrap() + index * 24 + 16;
    data[at..at + 8].copy_from_slice(&size.to_le_bytes());
}

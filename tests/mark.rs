// SPDX-License-Identifier: GPL-2.0-only
//! The `mcount=` modinfo tag: flipped to `zeroed:<callsites>:<symbols>`
//! only when the run proves the module clean, back to `unchecked` when a
//! run finds doubt, never otherwise. How kmod's `modinfo` reads the
//! flipped file is tests/kmod.rs.
#![allow(
    clippy::cast_possible_truncation,
    clippy::doc_markdown,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]

mod common;

use std::fs;
use std::process::Command;

use common::{BIN, Fixture, Scratch, assert_differs_only_in, changeable, entries, signed, standard};
use object::{Architecture, Endianness, Object as _, ObjectSection as _, elf};
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, Outcome, SignedPolicy, analyze};

const IBT: &str = "CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_X86_KERNEL_IBT=y\n";
/// The placeholder of scripts/module-common.c: its dashes reserve the room
/// for the counted tag.
const TAG: &str = "mcount=unchecked:--------:--------";
/// The 9-byte slot of the first version of the series.
const OLD_TAG: &str = "mcount=unchecked";

/// The x86_64 standard fixture with the tag, and without its one doubtful
/// entry unless `doubt`.
fn tagged(tag: &'static str, doubt: bool) -> Fixture {
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    f.modinfo = vec![tag, "name=fixture"];
    if !doubt {
        f.texts[1].ips.retain(|&ip| ip != 0);
    }
    f
}

fn with_config() -> Options {
    Options { kconfig: Some(Kconfig::parse(IBT)), verbose: true, ..Options::default() }
}

/// `.modinfo` as the kernel reads it: the non-empty NUL-separated strings.
fn modinfo(data: &[u8]) -> Vec<String> {
    let file = object::File::parse(data).unwrap();
    let s = file.section_by_name(".modinfo").unwrap();
    s.data().unwrap().split(|&b| b == 0).filter(|t| !t.is_empty()).map(|t| String::from_utf8_lossy(t).into()).collect()
}

/// The byte range of the tag's slot: the only bytes outside the callsite
/// table that marking may change.
fn tag_range(data: &[u8]) -> (usize, usize) {
    let file = object::File::parse(data).unwrap();
    let (off, size) = file.section_by_name(".modinfo").unwrap().file_range().unwrap();
    let bytes = &data[off as usize..(off + size) as usize];
    let at = bytes.windows(7).position(|w| w == b"mcount=").unwrap() + 7;
    (off as usize + at, off as usize + at + 27)
}

/// The tag the kernel accepts for this file, counted independently of the
/// tool: `__mcount_loc` words and `.symtab` entries, in eight hex digits.
fn bound(data: &[u8]) -> String {
    let file = object::File::parse(data).unwrap();
    let size = |name: &str| file.section_by_name(name).unwrap().size();
    format!("zeroed:{:08x}:{:08x}", size("__mcount_loc") / 8, size(".symtab") / 24)
}

fn run(data: &[u8], opts: &Options) -> (Vec<u8>, zero_weak_mcount::process::Analysis) {
    let a = analyze(data, opts).unwrap();
    (a.plan.apply_to(data), a)
}

#[test]
fn a_proven_run_zeroes_and_marks_and_a_second_run_is_a_no_op() {
    let before = tagged(TAG, false).build();
    let (after, a) = run(&before, &with_config());
    assert!(matches!(a.outcome, Outcome::Changed { zeroed: 3, marked: true, .. }), "{:?}", a.outcome);
    let tag = bound(&before);
    assert!(a.summary.ends_with(&format!("; mcount=unchecked -> {tag}")), "{}", a.summary);
    assert!(a.details.iter().any(|d| d.starts_with(&format!("mark mcount={tag}"))), "{:#?}", a.details);
    let mut info = modinfo(&before);
    info[2] = format!("mcount={tag}");
    assert_eq!(modinfo(&after), info);
    let (s, e) = tag_range(&before);
    assert_eq!(&after[s..e], format!("{tag}\0\0\0").as_bytes());
    let mut allowed = changeable(&before, "__mcount_loc");
    allowed.push((s, e));
    assert_differs_only_in(&before, &after, &allowed);
    assert_eq!(entries(&after, "__mcount_loc", 0).len(), entries(&before, "__mcount_loc", 0).len() - 3);

    let (again, a) = run(&after, &with_config());
    assert_eq!(again, after);
    assert_eq!(a.outcome, Outcome::Unchanged);
}

#[test]
fn a_module_processed_before_is_marked_without_zeroing_anything() {
    let processed = run(&tagged(TAG, false).build(), &Options::default()).0;
    assert_eq!(modinfo(&processed)[2], TAG, "no --kconfig: no mark");
    let (after, a) = run(&processed, &with_config());
    assert!(matches!(a.outcome, Outcome::Changed { zeroed: 0, marked: true, .. }), "{:?}", a.outcome);
    let (s, e) = tag_range(&processed);
    assert_differs_only_in(&processed, &after, &[(s, e)]);
    assert_eq!(modinfo(&after)[2], format!("mcount={}", bound(&processed)));
}

#[test]
fn the_first_series_slot_is_read_but_never_marked() {
    let before = tagged(OLD_TAG, false).build();
    let (after, a) = run(&before, &with_config());
    assert_eq!(modinfo(&after)[2], "mcount=unchecked");
    assert!(
        a.details.iter().any(|d| d.starts_with("leave mcount=unchecked: its slot holds 9 bytes")),
        "{:#?}",
        a.details
    );
    assert!(matches!(a.outcome, Outcome::Changed { zeroed: 3, marked: false, .. }), "{:?}", a.outcome);
}

#[test]
fn a_tag_with_stale_counts_is_rebound_by_a_proven_run_and_reported_otherwise() {
    let marked = run(&tagged(TAG, false).build(), &with_config()).0;
    let tag = bound(&marked);
    let (s, e) = tag_range(&marked);
    // As if the module had lost symbols after it was marked.
    let mut stale = marked.clone();
    stale[s..e].copy_from_slice(format!("{}ffff\0\0\0", &tag[..20]).as_bytes());
    assert_ne!(stale, marked);
    let (kept, a) = run(&stale, &Options { verbose: true, ..Options::default() });
    assert_eq!(kept, stale);
    assert!(a.details.iter().any(|d| d.contains("so the kernel treats the module as untagged")), "{:#?}", a.details);
    let (rebound, a) = run(&stale, &with_config());
    assert_eq!(rebound, marked);
    assert!(a.summary.ends_with(&format!("-> {tag}")), "{}", a.summary);
}

#[test]
fn doubt_or_an_assumed_rule_leaves_the_tag_and_says_why() {
    let cases: [(Fixture, Options, &str); 4] = [
        (tagged(TAG, true), with_config(), "leave mcount=unchecked: 1 entry was kept for doubt"),
        (
            tagged(TAG, false),
            Options { verbose: true, ..Options::default() },
            "leave mcount=unchecked: no --kconfig: the rule is assumed, not known",
        ),
        (
            tagged(TAG, false),
            Options {
                overrides: zero_weak_mcount::arch::Overrides { max_offset: Some(4), section: None },
                ..with_config()
            },
            "leave mcount=unchecked: --max-offset overrides the configuration",
        ),
        (
            {
                let mut f = tagged(TAG, false);
                f.arch = Architecture::Aarch64;
                f.abs_type = elf::R_AARCH64_ABS64;
                f.callsite = "__patchable_function_entries";
                f
            },
            // Even with its own config: an arm64 kernel checks nothing, so
            // no tag can let it skip a check.
            Options {
                kconfig: Some(Kconfig::parse(
                    "CONFIG_ARM64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_DYNAMIC_FTRACE_WITH_ARGS=y\n",
                )),
                verbose: true,
                ..Options::default()
            },
            "leave mcount=unchecked: arm64: the kernel has no check for a tag to skip",
        ),
    ];
    for (fixture, opts, why) in cases {
        let before = fixture.build();
        let (after, a) = run(&before, &opts);
        assert!(a.details.iter().any(|d| d.starts_with(why)), "want {why:?} in {:#?}", a.details);
        assert!(!matches!(a.outcome, Outcome::Changed { marked: true, .. }), "{:?}", a.outcome);
        assert_eq!(modinfo(&after)[2], TAG);
        assert_eq!(
            &after[tag_range(&after).0..tag_range(&after).1],
            &before[tag_range(&before).0..tag_range(&before).1]
        );
    }
}

#[test]
fn a_marked_module_with_doubt_is_restored_and_an_assumed_rule_keeps_the_mark() {
    // A tag flipped by an earlier run, in a module where an entry is doubtful.
    let fresh = tagged(TAG, true).build();
    let mut doubtful = fresh.clone();
    let (s, e) = tag_range(&doubtful);
    doubtful[s..e].copy_from_slice(format!("{}\0\0\0", bound(&fresh)).as_bytes());
    let (after, a) = run(&doubtful, &with_config());
    assert!(matches!(a.outcome, Outcome::Changed { marked: true, .. }), "{:?}", a.outcome);
    assert!(a.warnings.iter().any(|w| w.contains("restored mcount=unchecked")), "{:#?}", a.warnings);
    assert_eq!(&after[s..e], &fresh[s..e], "the placeholder, dashes included");

    // The same for a bare "zeroed" of the first series, in its 9-byte slot.
    let mut old = tagged(OLD_TAG, true).build();
    let (s, _) = tag_range(&old);
    old[s..s + 9].copy_from_slice(b"zeroed\0\0\0");
    let after = run(&old, &with_config()).0;
    assert_eq!(&after[s..s + 9], b"unchecked");

    // "zeroed" with no padding after it was not written by this tool, and
    // cannot be restored in place: refused, nothing written.
    let err = analyze(&tagged("mcount=zeroed", true).build(), &with_config()).unwrap_err().to_string();
    assert!(err.contains("no room to restore mcount=unchecked"), "{err}");

    // Without --kconfig a run cannot judge: the mark stands.
    let marked = run(&tagged(TAG, false).build(), &with_config()).0;
    let (kept, a) = run(&marked, &Options { verbose: true, ..Options::default() });
    assert_eq!(kept, marked);
    let keep = format!("keep mcount={} from an earlier run", bound(&marked));
    assert!(a.details.iter().any(|d| d.starts_with(&keep)), "{:#?}", a.details);
}

#[test]
fn unknown_or_repeated_tags_are_left_alone_with_a_warning() {
    for (tags, what) in [
        (vec!["mcount=maybe"], ".modinfo has mcount=maybe; left alone"),
        (vec![TAG, TAG], ".modinfo has 2 mcount= tags; left alone"),
    ] {
        let mut f = tagged("name=fixture", false);
        f.modinfo = tags;
        let before = f.build();
        let (after, a) = run(&before, &with_config());
        assert!(a.warnings.iter().any(|w| w == what), "{:#?}", a.warnings);
        assert_eq!(modinfo(&after), modinfo(&before));
        let strict = Options { fatal_warnings: true, ..with_config() };
        assert!(analyze(&before, &strict).unwrap_err().to_string().contains(what));
    }
}

#[test]
fn marking_follows_the_signature_policy() {
    let plain = tagged(TAG, false).build();
    let data = signed(&plain);
    let refused = analyze(&data, &with_config()).unwrap_err().to_string();
    assert!(refused.contains("signed"), "{refused}");
    // --check predicts the real run: the tag write alone makes it refuse.
    let check = analyze(&data, &Options { check: true, ..with_config() }).unwrap_err().to_string();
    assert_eq!(check, refused);
    let check = analyze(&data, &Options { check: true, signed: SignedPolicy::Strip, ..with_config() }).unwrap();
    assert!(matches!(check.outcome, Outcome::Changed { marked: true, stripped: true, .. }), "{:?}", check.outcome);
    let (stripped, a) = run(&data, &Options { signed: SignedPolicy::Strip, ..with_config() });
    assert!(matches!(a.outcome, Outcome::Changed { marked: true, stripped: true, .. }), "{:?}", a.outcome);
    assert_eq!(stripped, run(&plain, &with_config()).0);
}

#[test]
fn the_cli_marks_under_kconfig_and_check_reports_a_mark_only_change() {
    let dir = Scratch::new("mark-cli");
    let config = dir.file("auto.conf", IBT.as_bytes());
    let processed = run(&tagged(TAG, false).build(), &Options::default()).0;
    let ko = dir.file("m.ko", &processed);
    let (k, p) = (config.to_str().unwrap(), ko.to_str().unwrap());
    let out = Command::new(BIN).args(["--check", "--kconfig", k, p]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("would change: nothing to zero in 5 entries")
            && err.ends_with(&format!("; mcount=unchecked -> {}\n", bound(&processed))),
        "{err}"
    );
    assert_eq!(fs::read(&ko).unwrap(), processed);
    let out = Command::new(BIN).args(["-v", "--kconfig", k, p]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(modinfo(&fs::read(&ko).unwrap())[2], format!("mcount={}", bound(&processed)));
}

#[test]
fn a_table_without_relocations_is_proven_only_when_its_words_are_zero() {
    let mut data = tagged(TAG, false).build();
    // Make .rela__mcount_loc PROGBITS: then nothing relocates the table.
    let (header, table) = {
        let file = object::File::parse(&*data).unwrap();
        let rela = file.section_by_name(".rela__mcount_loc").unwrap().index().0;
        let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
        (shoff + rela * 64, file.section_by_name("__mcount_loc").unwrap().file_range().unwrap())
    };
    data[header + 4..header + 8].copy_from_slice(&elf::SHT_PROGBITS.to_le_bytes());
    assert!(data[table.0 as usize..(table.0 + table.1) as usize].iter().all(|&b| b == 0));
    let (marked, a) = run(&data, &with_config());
    assert!(matches!(a.outcome, Outcome::Changed { zeroed: 0, marked: true, .. }), "{:?}", a.outcome);
    assert_eq!(modinfo(&marked)[2], format!("mcount={}", bound(&data)));

    // Raw non-zero words would become records the kernel still has to check.
    data[table.0 as usize] = 0x40;
    let (after, a) = run(&data, &with_config());
    assert_eq!(after, data);
    assert!(
        a.details
            .iter()
            .any(|d| d.starts_with("leave mcount=unchecked: ") && d.ends_with("but its words are not zero")),
        "{:#?}",
        a.details
    );
}

#[test]
fn a_kernel_newer_than_the_checked_rules_is_processed_with_a_warning_but_never_tagged() {
    let mut f = tagged(TAG, false);
    f.vermagic = "7.9.1 SMP preempt mod_unload modversions";
    let before = f.build();
    let a = analyze(&before, &with_config()).unwrap();
    assert!(matches!(a.outcome, Outcome::Changed { .. }), "{:?}", a.outcome);
    assert!(a.warnings.iter().any(|w| w.contains("kernel 7.9.1 is newer than 7.3")), "{:?}", a.warnings);
    let after = a.plan.apply_to(&before);
    assert!(modinfo(&after).contains(&TAG.to_string()), "{:?}", modinfo(&after));
    // The same module for a checked release is tagged.
    f.vermagic = "7.3.0 SMP preempt mod_unload modversions";
    let before = f.build();
    let after = analyze(&before, &with_config()).unwrap().plan.apply_to(&before);
    assert!(modinfo(&after).iter().any(|t| t.starts_with("mcount=zeroed:")), "{:?}", modinfo(&after));
}

// SPDX-License-Identifier: GPL-2.0-only
//! The rules follow the kernel release, down to the stable patch level:
//! powerpc's table, section, adjust and zero-first order changed across
//! 6.2, 6.6, 6.13 and 6.15, and two stable lines took the order fix late.

mod common;

use common::{Fixture, entries, standard};
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, analyze};

const PPC_PATCHABLE: &str = "mod_unload modversions patchable-function-entry relocatable";

/// A ppc64le module laid out for `adjust` and max offset 16, from `release`.
fn ppc64(release: &str, words: &str, callsite: &'static str, adjust: u64) -> Fixture {
    let mut f = standard(Architecture::PowerPc64, Endianness::Little, 2, callsite, elf::R_PPC64_ADDR64, adjust, 16);
    f.vermagic = Box::leak(format!("{release} SMP {words}").into_boxed_str());
    f
}

/// The (section, ip) pairs a run removes, and the summary.
fn zeroed(f: &Fixture, opts: &Options) -> (Vec<(String, u64)>, String) {
    let before = f.build();
    let a = analyze(&before, opts).unwrap();
    let after = a.plan.apply_to(&before);
    let kept = entries(&after, f.callsite, f.adjust);
    let gone = entries(&before, f.callsite, f.adjust).into_iter().filter(|e| !kept.contains(e)).collect();
    (gone, a.summary())
}

/// The dead entries of the fixture laid out for max offset 16 and
/// `adjust`: three the kernel's check rejects, and `.noinstr.text`'s first
/// one, in no function.
fn weak_at_16(adjust: u64) -> Vec<(String, u64)> {
    let mut weak = vec![(".noinstr.text".to_string(), adjust)];
    weak.extend([0x20, 0x51, 0x180].iter().map(|&ip| (".text".to_string(), ip)));
    weak
}

#[test]
fn trixie_ppc64el_adds_four_from_vermagic_alone() {
    // 6.12: NOP pairs and +4, read from vermagic. The fixture's ips are
    // after the adjust, so exactly the weak ones at +4 go.
    let f = ppc64("6.12.107+deb13-powerpc64le", PPC_PATCHABLE, "__patchable_function_entries", 4);
    let (gone, summary) = zeroed(&f, &Options::default());
    assert_eq!(gone, weak_at_16(4), "{summary}");
    assert!(summary.contains("from vermagic"), "{summary}");
}

#[test]
fn an_adjust_first_stable_kernel_gets_its_weak_entries_dropped() {
    // 6.12.94 adjusts before the zero test: a zeroed entry would become a
    // record at ip 4, and ftrace_bug() would turn ftrace off; so the words
    // are dropped instead, the same ones. (6.13 and 6.14 have out-of-line
    // stubs and no +4: out_of_line_stubs_on_an_adjust_first_kernel_...)
    for release in ["6.12.94", "6.6.143", "6.7.5", "6.11.11"] {
        let f = ppc64(release, PPC_PATCHABLE, "__patchable_function_entries", 4);
        let (gone, summary) = zeroed(&f, &Options { verbose: true, ..Options::default() });
        assert_eq!(gone, weak_at_16(4), "{release}: {summary}");
        assert!(summary.starts_with("dropped 4 of"), "{release}: {summary}");
    }
    for release in ["6.12.95", "6.6.144", "6.15.0"] {
        let f = ppc64(release, PPC_PATCHABLE, "__patchable_function_entries", 4);
        let adjust = if release == "6.15.0" { 0 } else { 4 };
        let f = Fixture { adjust, ..f };
        assert_eq!(zeroed(&f, &Options::default()).0, weak_at_16(4), "{release}");
    }
}

#[test]
fn bookworm_predates_the_check_and_gets_the_containment_rule() {
    // 6.1 powerpc has no FTRACE_MCOUNT_MAX_OFFSET: it keeps every record,
    // so the rule is containment in a function symbol, and zeroing is safe
    // (the adjust is the identity).
    let f = ppc64("6.1.0-57-powerpc64le", "mod_unload modversions mprofile-kernel", "__mcount_loc", 0);
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert!(a.summary().contains("inside a function symbol"), "{}", a.summary());
    assert!(a.summary().starts_with("zeroed "), "{}", a.summary());
    // ELFv1 function symbols name descriptors, not code: left alone.
    let mut f = f;
    f.e_flags = 1;
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert!(a.plan.is_empty() && a.summary().contains("ELFv1"), "{}", a.summary());
}

#[test]
fn mprofile_kernel_uses_mcount_loc_and_no_adjust() {
    for release in ["6.4.16", "6.12.107"] {
        let f = ppc64(release, "mod_unload mprofile-kernel", "__mcount_loc", 0);
        assert_eq!(zeroed(&f, &Options::default()).0, weak_at_16(0), "{release}");
    }
}

#[test]
fn plain_pg_ppc64_is_not_checked() {
    let f = ppc64("6.12.107", "mod_unload", "__mcount_loc", 0);
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert!(a.plan.is_empty());
    assert!(a.summary().contains("plain -pg"), "{}", a.summary());
}

#[test]
fn out_of_line_stubs_on_an_adjust_first_kernel_need_the_config() {
    // 6.13/6.14 adjust first. Without a config the compiler is unknown and
    // clang's candidates move 0; the config says gcc, whose adjust is the
    // identity, so a zeroed word stays an empty slot.
    let f = ppc64("6.13.7", PPC_PATCHABLE, "__patchable_function_entries", 0);
    let (gone, summary) = zeroed(&f, &Options::default());
    assert_eq!(gone, weak_at_16(0));
    assert!(summary.starts_with("dropped "), "{summary}");
    let config = "CONFIG_PPC64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
                  CONFIG_PPC_FTRACE_OUT_OF_LINE=y\nCONFIG_CC_IS_GCC=y\n";
    let opts = Options { kconfig: Some(Kconfig::parse(config)), ..Options::default() };
    assert_eq!(zeroed(&f, &opts).0, weak_at_16(0));
}

/// The `x86_64` fixture, laid out for max offset 4: an IBT build, or with
/// its code overwritten by NOPs, with or without init and exit code.
fn x86_64(ibt: bool, init: bool) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    if !init {
        f.texts.retain(|t| t.name != ".init.text" && t.name != ".exit.text");
    }
    let mut data = f.build();
    if !ibt {
        let file = object::File::parse(&data[..]).unwrap();
        let ranges: Vec<_> =
            file.sections().filter(|s| s.kind() == object::SectionKind::Text).filter_map(|s| s.file_range()).collect();
        for (start, size) in ranges {
            let start = usize::try_from(start).unwrap();
            data[start..start + usize::try_from(size).unwrap()].fill(0x90);
        }
    }
    data
}

fn zeroed_ips(data: &[u8]) -> (Vec<(String, u64)>, String) {
    let a = analyze(data, &Options::default()).unwrap();
    let after = a.plan.apply_to(data);
    let kept = entries(&after, "__mcount_loc", 0);
    let gone = entries(data, "__mcount_loc", 0).into_iter().filter(|e| !kept.contains(e)).collect();
    (gone, a.summary())
}

#[test]
fn endbr64_in_the_code_says_ibt() {
    let (gone, summary) = zeroed_ips(&x86_64(true, true));
    let ips: Vec<u64> = gone.iter().filter(|(s, _)| s == ".text").map(|&(_, ip)| ip).collect();
    assert_eq!(ips, [0x20, 0x45, 0x180], "{summary}");
    assert!(summary.contains("IBT: endbr64 in the code"), "{summary}");
}

#[test]
fn init_code_without_endbr64_says_ibt_off() {
    // a+4 is explained only under IBT's offset of 4: without IBT it goes.
    let (gone, summary) = zeroed_ips(&x86_64(false, true));
    let ips: Vec<u64> = gone.iter().filter(|(s, _)| s == ".text").map(|&(_, ip)| ip).collect();
    assert_eq!(ips, [0x20, 0x44, 0x45, 0x180], "{summary}");
    assert!(summary.contains("IBT off: no endbr64 in the code"), "{summary}");
}

#[test]
fn code_that_proves_nothing_keeps_the_assumed_ibt() {
    let (gone, summary) = zeroed_ips(&x86_64(false, false));
    let ips: Vec<u64> = gone.iter().filter(|(s, _)| s == ".text").map(|&(_, ip)| ip).collect();
    assert_eq!(ips, [0x20, 0x45, 0x180], "{summary}");
    assert!(summary.contains("IBT assumed"), "{summary}");
}

#[test]
fn where_regions_may_touch_and_the_lookup_is_unbounded_a_region_start_is_in_doubt() {
    // x86's shared executable-page cache (6.13) can put another region just
    // before .text; the lookup was bounded to the region only in 7.2.13,
    // 6.12.117 and 7.3. An entry at .text+0 with no symbol before it may
    // then pass the kernel's check under another region's last symbol, but
    // it lies in no function of .text: it is zeroed on every release.
    for (release, goes) in [("7.1.3", true), ("6.13.7", true), ("7.2.13", true), ("6.12.107", true), ("7.3.0", true)] {
        let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
        f.vermagic = Box::leak(format!("{release} SMP mod_unload").into_boxed_str());
        f.texts[0].ips.insert(0, 0);
        let (gone, summary) = zeroed(&f, &Options::default());
        assert_eq!(gone.contains(&(".text".to_string(), 0)), goes, "{release}: {summary}");
        assert!(gone.contains(&(".text".to_string(), 0x20)), "{release}: far from the start, it goes anyway");
    }
}

#[test]
fn mapping_symbols_follow_the_release() {
    // 6.1 skips only `.L*` and `$a/$t/$x/$d`; 6.12 on skip every `$*` and
    // `L0*`. So `$w` explains the entry 2 bytes after it on 6.1 alone, and
    // `$x` explains nothing anywhere.
    for (release, symbol, goes) in [
        ("6.1.0", "$w", false),
        ("7.2.13", "$w", true),
        ("6.1.0", "$x", true),
        ("6.1.0", "L0w", false),
        ("6.12.107", "L0w", true),
    ] {
        let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
        f.vermagic = Box::leak(format!("{release} SMP mod_unload").into_boxed_str());
        f.texts[0].symbols.push((symbol, 0x17e));
        let (gone, summary) = zeroed(&f, &Options::default());
        assert_eq!(gone.contains(&(".text".to_string(), 0x180)), goes, "{release} {symbol}: {summary}");
    }
}

#[test]
fn a_function_at_risk_names_its_dead_record_as_the_findings_do() {
    // ppc64 6.12 adds 4 to each location: the at-risk item's dead site is
    // the record's ip, a finding's offset the location; the table offset
    // joins the two.
    let mut f = ppc64("6.12.107+deb13-powerpc64le", PPC_PATCHABLE, "__patchable_function_entries", 4);
    // f's kallsyms extent runs on to g, over a dead body's record.
    f.function_size = 12;
    f.texts.truncate(1);
    f.texts[0].symbols = vec![("f", 0x40), ("g", 0x80)];
    f.texts[0].ips = vec![0x48, 0x58, 0x88];
    let a = analyze(&f.build(), &Options::default()).unwrap();
    let json = zero_weak_mcount::render::json("m.ko", &Ok(a), true);
    let values = |key: &str| -> Vec<String> {
        json.split(&format!("\"{key}\": \"")).skip(1).map(|rest| rest[..rest.find('"').unwrap()].to_string()).collect()
    };
    let (dead, findings) = (values("dead_table_offset"), values("table_offset"));
    assert!(!dead.is_empty(), "a function at risk: {json}");
    for d in &dead {
        assert!(findings.contains(d), "{d} is no finding's table_offset: {json}");
    }
    assert_ne!(values("dead_site"), values("offset")[..dead.len()], "the ips and locations differ by the adjust");
}

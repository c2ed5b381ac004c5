// SPDX-License-Identifier: GPL-2.0-only
//! Every supported arch, on synthetic modules: exactly the weak entries
//! go, nothing else changes, and a second run is a no-op.

mod common;

use common::{Fixture, assert_differs_only_in, changeable, entries, standard};
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, Outcome, analyze};

fn run(data: &[u8], opts: &Options) -> (Vec<u8>, Outcome) {
    let a = analyze(data, opts).unwrap();
    (a.plan.apply_to(data), a.outcome)
}

/// Process `fixture` and check that exactly the entries at `zeroed` (as
/// `(section, ip)`) are gone, the rest of the file is untouched, and a
/// second run changes nothing.
fn check(fixture: &Fixture, opts: &Options, zeroed: &[(&str, u64)]) {
    let before = fixture.build();
    let (after, outcome) = run(&before, opts);
    let mut expected = entries(&before, fixture.callsite, fixture.adjust);
    for z in zeroed {
        let at = expected
            .iter()
            .position(|(s, ip)| (s.as_str(), *ip) == *z)
            .unwrap_or_else(|| panic!("{z:?} is not an entry"));
        expected.remove(at);
    }
    assert_eq!(entries(&after, fixture.callsite, fixture.adjust), expected);
    assert_differs_only_in(&before, &after, &changeable(&before, fixture.callsite));
    if zeroed.is_empty() {
        assert_eq!(before, after);
    } else {
        assert!(matches!(outcome, Outcome::Changed { neutralised: n, .. } if n == zeroed.len()), "{outcome:?}");
    }
    // The callsite words of removed entries are zero, so they load as 0.
    let (again, outcome) = run(&after, opts);
    assert_eq!(again, after, "second run changed the file");
    assert!(!matches!(outcome, Outcome::Changed { .. }));
}

/// The standard fixture's dead entries where the kernel checks records:
/// three its check rejects, and `.noinstr.text`'s first entry (at `adjust`
/// once adjusted), which a symbol at the end of `.text` might let the
/// check keep, but which lies in no function.
fn weak(max: u64, adjust: u64) -> Vec<(&'static str, u64)> {
    vec![(".text", 0x20), (".text", 0x41 + max), (".text", 0x180), (".noinstr.text", adjust)]
}

#[test]
fn x86_64_default_assumes_ibt() {
    // Neither endbr64 nor an init or exit routine: the code proves nothing.
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    f.texts.retain(|t| t.name != ".init.text" && t.name != ".exit.text");
    assert!(f.texts.iter().any(|t| t.name == ".text"));
    let weak: Vec<_> = weak(4, 0);
    check(&f, &Options::default(), &weak);
}

#[test]
fn x86_64_without_ibt_zeroes_at_plus_four() {
    // Laid out for max 4, processed with the config's max 0: a+4 now goes too.
    let f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    let opts = Options {
        kconfig: Some(Kconfig::parse("CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n# CONFIG_X86_KERNEL_IBT is not set\n")),
        ..Options::default()
    };
    let mut z = weak(4, 0);
    z.push((".text", 0x44));
    check(&f, &opts, &z);
}

#[test]
fn i386_rel_addend_in_the_word() {
    let f = standard(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0);
    check(&f, &Options::default(), &weak(0, 0));
}

#[test]
fn ppc64le_elfv2_patchable_entries() {
    let f = standard(
        Architecture::PowerPc64,
        Endianness::Little,
        2,
        "__patchable_function_entries",
        elf::R_PPC64_ADDR64,
        0,
        16,
    );
    check(&f, &Options::default(), &weak(16, 0));
}

#[test]
fn ppc64_big_endian_elfv2() {
    let f = standard(
        Architecture::PowerPc64,
        Endianness::Big,
        2,
        "__patchable_function_entries",
        elf::R_PPC64_ADDR64,
        0,
        16,
    );
    check(&f, &Options::default(), &weak(16, 0));
}

#[test]
fn ppc64_elfv1_is_left_alone() {
    let f = standard(Architecture::PowerPc64, Endianness::Big, 1, "__mcount_loc", elf::R_PPC64_ADDR64, 0, 16);
    check(&f, &Options::default(), &[]);
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert!(matches!(a.outcome, Outcome::Skipped(_, ref r) if r.contains("ELFv1")), "{:?}", a.outcome);
}

#[test]
fn ppc32_patchable_entries_adjust_by_eight() {
    let f =
        standard(Architecture::PowerPc, Endianness::Big, 0, "__patchable_function_entries", elf::R_PPC_ADDR32, 8, 16);
    let opts = Options {
        kconfig: Some(Kconfig::parse(
            "CONFIG_PPC32=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
             CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y\n",
        )),
        ..Options::default()
    };
    check(&f, &opts, &weak(16, 8));
}

#[test]
fn ppc32_plain_pg_has_max_eight() {
    let f = standard(Architecture::PowerPc, Endianness::Big, 0, "__mcount_loc", elf::R_PPC_ADDR32, 0, 8);
    check(&f, &Options::default(), &weak(8, 0));
}

#[test]
fn aarch64_6_1_gets_its_dead_entries_dropped() {
    // 6.1 adjusts a word before testing it for zero (+4 on arm64): a zeroed
    // entry would become a record at ip 4, so the words are dropped. The
    // rule is containment (the fixture's functions are 4 bytes long).
    let mut f = standard(
        Architecture::Aarch64,
        Endianness::Little,
        0,
        "__patchable_function_entries",
        elf::R_AARCH64_ABS64,
        0,
        4,
    );
    f.vermagic = "6.1.0-57-arm64 SMP preempt mod_unload modversions aarch64";
    let dead = [(".text", 0x20), (".text", 0x44), (".text", 0x45), (".text", 0x180), (".noinstr.text", 0)];
    check(&f, &Options::default(), &dead);
    let a = analyze(&f.build(), &Options { verbose: true, ..Options::default() }).unwrap();
    assert!(a.summary().starts_with("dropped 5 of 9 entries"), "{}", a.summary());
}

#[test]
fn kernels_before_the_check_get_the_containment_rule() {
    // x86 before 6.0 keeps every record (no test_for_valid_rec()): entries
    // in no function are zeroed (the adjust is the identity).
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    f.vermagic = "5.15.0-91-generic SMP mod_unload modversions";
    f.function_size = 4;
    let dead = [(".text", 0x20), (".text", 0x44), (".text", 0x45), (".text", 0x180), (".noinstr.text", 0)];
    check(&f, &Options::default(), &dead);
    // Older than any source read: left alone.
    f.vermagic = "4.19.0-27-amd64 SMP mod_unload modversions";
    check(&f, &Options::default(), &[]);
}

#[test]
fn doubt_is_reported_with_its_reason() {
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    // A callsite past the end of its section.
    f.texts[1].ips.push(0x50);
    let a = analyze(&f.build(), &Options { verbose: true, ..Options::default() }).unwrap();
    assert!(
        a.details().iter().any(|d| d.starts_with("keep __mcount_loc+0x40: target .noinstr.text+0x50 lies outside")),
        "{:#?}",
        a.details()
    );
    // At the start of a section .text precedes: a symbol at .text's end
    // might satisfy the kernel's check, but no function holds it.
    assert!(
        a.details()
            .iter()
            .any(|d| d.starts_with("zero .noinstr.text+0x0 (distance 0, no symbol before it; in no function")),
        "{:#?}",
        a.details()
    );
    assert!(
        a.details().contains(&"zero .text+0x20 (distance 0, no symbol before it)".to_string()),
        "{:#?}",
        a.details()
    );
    assert!(a.details().contains(&"zero .text+0x180 (distance 128 after b)".to_string()), "{:#?}", a.details());
    assert!(a.summary().contains("1 kept for doubt"), "{}", a.summary());
}

#[test]
fn output_is_reproducible() {
    let f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    let data = f.build();
    assert_eq!(run(&data, &Options::default()).0, run(&data, &Options::default()).0);
}

#[test]
fn ppc64_without_any_callsite_table_has_nothing_to_do() {
    // Data-only modules (crypto tables, nls) have no traced code; without
    // --kconfig that is "no table", not an unresolved -pg question.
    let mut f = standard(Architecture::PowerPc64, Endianness::Little, 2, ".rodata.table", elf::R_PPC64_ADDR64, 0, 16);
    f.vermagic = common::VERMAGIC_PPC_PATCHABLE;
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert_eq!(a.outcome, Outcome::Unchanged);
    assert_eq!(a.summary(), "nothing to do: no __patchable_function_entries section");
}

#[test]
fn a_dead_body_within_the_max_offset_of_a_short_function_goes_too() {
    // As in sid's ppc64el kvm.ko: the dead body's record is 16 bytes past
    // a 12-byte function, which the kernel's check (max offset 16) keeps,
    // enabled under that function's name. It lies in no function: zeroed.
    let mut f = standard(
        Architecture::PowerPc64,
        Endianness::Little,
        2,
        "__patchable_function_entries",
        elf::R_PPC64_ADDR64,
        0,
        16,
    );
    f.function_size = 12;
    f.texts.truncate(1);
    f.texts[0].symbols = vec![("short", 0x40), ("g", 0x80)];
    f.texts[0].ips = vec![0x48, 0x50, 0x88];
    check(&f, &Options::default(), &[(".text", 0x50)]);
    let a = analyze(&f.build(), &Options::default()).unwrap();
    assert!(
        a.details().contains(
            &"zero .text+0x50 (distance 16 after short; in no function, which the kernel's check misses: stock keeps \
              its record enabled)"
                .to_string()
        ),
        "{:#?}",
        a.details()
    );
    let json = zero_weak_mcount::render::json("m.ko", &Ok(a), true);
    assert!(json.contains("\"found_by\": \"in_function\", \"stock\": \"kept_enabled\""), "{json}");
}

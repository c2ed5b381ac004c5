// SPDX-License-Identifier: GPL-2.0-only
//! The per-arch rules: which callsite table the kernel reads, how it turns a
//! recorded location into a record's ip (`ftrace_call_adjust()`), and how far
//! past a symbol a valid record may lie (`FTRACE_MCOUNT_MAX_OFFSET`).
//!
//! The table, with the kernel file and function behind each row, is
//! docs/rules.md.
//!
//! Only x86 (from 6.0) and powerpc (from 6.2) define
//! `FTRACE_MCOUNT_MAX_OFFSET` (`arch/x86/include/asm/ftrace.h`,
//! `arch/powerpc/include/asm/ftrace.h`). Everywhere else, and on those two
//! before it, the kernel checks no module record: an overridden weak body
//! keeps its record, named after the function before it, a dead duplicate.
//! There we take those out as `scripts/sorttable.c` does for vmlinux
//! ([`Check::Contains`]); other arches are left alone. Each rule also says
//! how ([`Neutraliser`]): zeroed where the kernel skips a zero word, dropped
//! where it would adjust a zero into a bogus record.
//!
//! Where the kernel config is unknown we pick the largest offset any config
//! could have: a larger offset only keeps more entries, a smaller one than
//! the kernel's would zero valid ones.
//!
//! The facts are data: [`Arch`] comes from `e_machine` and the ELF class,
//! [`ROWS`] holds one row per arch and kernel-version range, and each row
//! names the small function that picks its table, adjust and offset from
//! the config. A rule for a new kernel range is a new row; a new kind of
//! check (such as "inside a function symbol", [`Check::Contains`]) is a new
//! [`Check`] variant that its rows name.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use std::fmt;

use object::elf;

use crate::elf::{ElfInfo, Mapping, RelocShape};
use crate::error::Error;
use crate::kconfig::Kconfig;
use crate::rule::{Adjust, Arch, Check, Neutraliser, Release, Rule, release};

pub const MCOUNT_LOC: &str = "__mcount_loc";
pub const PATCHABLE: &str = "__patchable_function_entries";

/// The releases whose `ftrace_process_locs()` (kernel/trace/ftrace.c) tests
/// a callsite word for zero before `ftrace_call_adjust()`: commit 6eeca746fa5f
/// ("ftrace: Test `mcount_loc` addr before calling `ftrace_call_addr()`"), in
/// 6.15 and backported to 6.12.95 and 6.6.144, never to 6.1. Each entry is a
/// stable line and the first release of it with the fix.
pub static ZERO_SKIPPED_FIRST: &[Release] = &[release(6, 6, 144), release(6, 12, 95), release(6, 15, 0)];

/// The newest release whose source the rows were checked against. A newer
/// kernel gets the newest rows, because the rules have held unchanged from
/// 6.15 through this release, but with a warning: see docs/rules.md,
/// "Newer kernels".
pub const CHECKED_THROUGH: (u32, u32) = (7, 3);

/// Whether a kernel skips a zero word before adjusting it. Elsewhere a zeroed
/// entry is adjusted first, and if the adjust maps 0 to a non-zero ip the
/// kernel builds a record there, fails to patch it and turns ftrace off.
#[must_use]
pub fn skips_zero_before_adjust(kernel: Release) -> bool {
    in_fixed_line(kernel, ZERO_SKIPPED_FIRST)
}

/// The releases whose `find_kallsyms_symbol()` (kernel/module/kallsyms.c)
/// bounds the search to the address's memory region (commit 0e9f090a4e9b):
/// the earliest of each line known to have it; 7.3 is its mainline release.
pub static REGION_BOUND_FIRST: &[Release] = &[release(6, 12, 117), release(7, 2, 13), release(7, 3, 0)];

/// Before 6.13 each module memory region was a vmalloc area of its own, with
/// a guard page after it, so the nearest symbol below an address was never in
/// another region. 6.13 brought x86's shared cache of executable pages
/// (`EXECMEM_ROX_CACHE`), which can place regions side by side.
pub const REGIONS_MAY_TOUCH_SINCE: Release = release(6, 13, 0);

/// Whether `kernel` has a fix whose first release on each stable line, and
/// last on mainline, `firsts` lists in order.
fn in_fixed_line(kernel: Release, firsts: &[Release]) -> bool {
    let mainline = firsts[firsts.len() - 1];
    kernel >= mainline
        || firsts
            .iter()
            .any(|first| (kernel.major, kernel.minor) == (first.major, first.minor) && kernel.patch >= first.patch)
}

/// What one row's family function picks from the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    pub section: &'static str,
    pub max_offset: u64,
    pub adjust: Adjust,
    /// Where the numbers came from, for `--verbose`.
    pub basis: &'static str,
}

/// What a family function sees.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The module file, for what its code reveals.
    pub image: &'a [u8],
    pub info: &'a ElfInfo,
    pub config: Option<&'a Kconfig>,
}

/// The facts of one arch over one range of kernel releases.
#[derive(Debug)]
pub struct Row {
    pub arch: Arch,
    /// The Kconfig symbol that says a config was made for this arch.
    pub config_symbol: &'static str,
    /// The releases this row holds for: `since` included, `until` excluded.
    pub since: Release,
    pub until: Option<Release>,
    /// What an older kernel lacks, for the reason it is left alone.
    pub older: &'static str,
    pub shape: RelocShape,
    /// `module_init_section()` returns false: `.init*` is core text.
    pub init_in_core: bool,
    /// Without a config, which table the kernel reads is a guess; `--section`
    /// may settle it.
    pub table_needs_config: bool,
    pub check: Check,
    /// Table, adjust and offset for a config, or why the kernel does not check.
    pub choose: fn(Ctx<'_>) -> Result<Choice, NoCheck>,
    /// The loader fails a module whose callsite table is empty.
    pub empty_table_fails: bool,
}

impl Row {
    fn holds_for(&self, kernel: Release) -> bool {
        kernel >= self.since && self.until.is_none_or(|until| kernel < until)
    }
}

const fn shape(rela: bool, abs_type: u32) -> RelocShape {
    RelocShape { rela, abs_type }
}

/// The rows, by arch and release range, from 5.10 ([`OLDEST_READ`]) on.
///
/// Each arch's first row is the one before its `FTRACE_MCOUNT_MAX_OFFSET`
/// (x86 6.0, powerpc 6.2), or its only kind of rule (containment) on the
/// arches that never define it.
pub static ROWS: &[Row] = &[
    Row {
        arch: Arch::X86_64,
        config_symbol: "X86_64",
        since: OLDEST_READ,
        until: Some(MAX_OFFSET_SINCE_X86),
        older: OLDER,
        shape: shape(true, elf::R_X86_64_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: x86_contained,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::X86_64,
        config_symbol: "X86_64",
        since: MAX_OFFSET_SINCE_X86,
        until: None,
        older: OLDER,
        shape: shape(true, elf::R_X86_64_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::MaxOffset,
        choose: x86_64,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::I386,
        config_symbol: "X86_32",
        since: OLDEST_READ,
        until: Some(MAX_OFFSET_SINCE_X86),
        older: OLDER,
        shape: shape(false, elf::R_386_32),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: x86_contained,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::I386,
        config_symbol: "X86_32",
        since: MAX_OFFSET_SINCE_X86,
        until: None,
        older: OLDER,
        shape: shape(false, elf::R_386_32),
        init_in_core: false,
        table_needs_config: false,
        check: Check::MaxOffset,
        choose: i386,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc64,
        config_symbol: "PPC64",
        since: OLDEST_READ,
        until: Some(MAX_OFFSET_SINCE_PPC),
        older: OLDER,
        shape: shape(true, elf::R_PPC64_ADDR64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: ppc64_contained,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc64,
        config_symbol: "PPC64",
        since: MAX_OFFSET_SINCE_PPC,
        until: Some(release(6, 6, 0)),
        older: OLDER,
        shape: shape(true, elf::R_PPC64_ADDR64),
        init_in_core: true,
        table_needs_config: true,
        check: Check::MaxOffset,
        choose: ppc64_v6_2,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc64,
        config_symbol: "PPC64",
        since: release(6, 6, 0),
        until: Some(release(6, 13, 0)),
        older: "",
        shape: shape(true, elf::R_PPC64_ADDR64),
        init_in_core: true,
        table_needs_config: true,
        check: Check::MaxOffset,
        choose: ppc64_v6_6,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc64,
        config_symbol: "PPC64",
        since: release(6, 13, 0),
        until: None,
        older: "",
        shape: shape(true, elf::R_PPC64_ADDR64),
        init_in_core: true,
        table_needs_config: true,
        check: Check::MaxOffset,
        choose: ppc64,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc32,
        config_symbol: "PPC32",
        since: OLDEST_READ,
        until: Some(MAX_OFFSET_SINCE_PPC),
        older: OLDER,
        shape: shape(true, elf::R_PPC_ADDR32),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: ppc_contained,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc32,
        config_symbol: "PPC32",
        since: MAX_OFFSET_SINCE_PPC,
        until: Some(release(6, 13, 0)),
        older: OLDER,
        shape: shape(true, elf::R_PPC_ADDR32),
        init_in_core: false,
        table_needs_config: true,
        check: Check::MaxOffset,
        choose: ppc32_v6_2,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Ppc32,
        config_symbol: "PPC32",
        since: release(6, 13, 0),
        until: None,
        older: "",
        shape: shape(true, elf::R_PPC_ADDR32),
        init_in_core: false,
        table_needs_config: true,
        check: Check::MaxOffset,
        choose: ppc32,
        empty_table_fails: false,
    },
    // The arches without FTRACE_MCOUNT_MAX_OFFSET, under sorttable's rule
    // (`Check::Contains`). Read in the source of 5.10.223, 6.1.192, 6.12.118
    // and 7.2.13 (docs/rules.md says what between them is inferred). `before` is the most any config places
    // ahead of a function: arm64's `-fpatchable-function-entry=4,2` (with
    // CALL_OPS) and riscv's `=8,4` of 2-byte c.nops (or `=4,2` of 4-byte
    // nops) both put 8 bytes there (arch/*/Makefile, `CC_FLAGS_FTRACE`).
    Row {
        arch: Arch::Arm64,
        config_symbol: "ARM64",
        since: OLDEST_READ,
        until: None,
        older: OLDER,
        shape: shape(true, elf::R_AARCH64_ABS64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 8 },
        choose: arm64,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Riscv,
        config_symbol: "RISCV",
        since: OLDEST_READ,
        until: Some(release(6, 13, 0)),
        older: OLDER,
        shape: shape(true, elf::R_RISCV_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 8 },
        choose: riscv_identity,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Riscv,
        config_symbol: "RISCV",
        since: release(6, 13, 0),
        until: None,
        older: OLDER,
        shape: shape(true, elf::R_RISCV_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 8 },
        choose: riscv_patch_site,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::S390,
        config_symbol: "S390",
        since: OLDEST_READ,
        until: None,
        older: OLDER,
        shape: shape(true, elf::R_390_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: s390,
        empty_table_fails: true,
    },
    Row {
        arch: Arch::LoongArch,
        config_symbol: "LOONGARCH",
        since: release(6, 12, 0),
        until: None,
        older: LOONGARCH_OLDER,
        shape: shape(true, elf::R_LARCH_64),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: loongarch,
        empty_table_fails: false,
    },
    Row {
        arch: Arch::Arm,
        config_symbol: "ARM",
        since: OLDEST_READ,
        until: None,
        older: OLDER,
        shape: shape(false, elf::R_ARM_ABS32),
        init_in_core: false,
        table_needs_config: false,
        check: Check::Contains { before: 0 },
        choose: arm,
        empty_table_fails: false,
    },
];

/// The oldest release whose source the rows were read in (Debian
/// bullseye's 5.10.223); older kernels are left alone.
pub const OLDEST_READ: Release = release(5, 10, 0);
const OLDER: &str = "predates 5.10, the oldest kernel whose source this tool's rules were checked against";

/// `FTRACE_MCOUNT_MAX_OFFSET` and `test_for_valid_rec()`: x86 from 6.0
/// (b39181f7c690; 5.19 not read, so taken to lack them: the containment
/// rule it then gets keeps at least what the offset rule keeps), powerpc
/// from 6.2 (7af82ff90a2b). Before them the kernel keeps every record.
pub const MAX_OFFSET_SINCE_X86: Release = release(6, 0, 0);
pub const MAX_OFFSET_SINCE_PPC: Release = release(6, 2, 0);

/// loongarch was read in 6.12 only, and no older Debian kernel exists for
/// it: older ones are left alone.
const LOONGARCH_OLDER: &str =
    "predates 6.12, the oldest loongarch kernel whose source this tool's rule was checked against";

/// `x86_64`: `FTRACE_MCOUNT_MAX_OFFSET` is `ENDBR_INSN_SIZE`, 4 with IBT, else 0.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn x86_64(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    let (max_offset, basis) = match cx.config {
        Some(c) => (if c.enabled("X86_KERNEL_IBT") { 4 } else { 0 }, "IBT from --kconfig"),
        None if has_endbr64(cx) => (4, "IBT: endbr64 in the code"),
        None if has_text(cx) => (0, "IBT off: no endbr64 in the code"),
        None => (4, "IBT assumed: no --kconfig"),
    };
    Ok(Choice { section: MCOUNT_LOC, max_offset, adjust: Adjust::Identity, basis })
}

/// `endbr64`. With `X86_KERNEL_IBT` the kernel builds with
/// `-fcf-protection=branch` (arch/x86/Makefile), which puts one at the entry
/// of every function that is global or has its address taken, so at least
/// `init_module` or `cleanup_module` of any module with either; without it,
/// with `-fcf-protection=none`, the compiler emits none. The bytes can also
/// occur by chance inside other instructions; that only ever reads as IBT,
/// whose larger offset keeps more.
pub const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// Whether a little-endian arm64 word is a `bti` landing pad (`bti`,
/// `bti c`, `bti j`, `bti jc`: `HINT #32..#38`, arch/arm64/include/asm/insn.h),
/// which a function starts with, before its patchable entry, under
/// `-mbranch-protection=bti`.
#[must_use]
pub fn is_arm64_bti(word: &[u8]) -> bool {
    let Ok(w) = <[u8; 4]>::try_from(word) else { return false };
    matches!(u32::from_le_bytes(w), 0xd503_241f | 0xd503_245f | 0xd503_249f | 0xd503_24df)
}

fn has_endbr64(cx: Ctx<'_>) -> bool {
    text_sections(cx).any(|code| code.windows(4).any(|w| w == ENDBR64))
}

/// Whether the module has the code whose entries would show `endbr64`: an
/// init or exit routine is global, so a module with neither proves nothing.
fn has_text(cx: Ctx<'_>) -> bool {
    text_sections(cx).next().is_some()
        && [".init.text", ".exit.text"].iter().any(|name| cx.info.alloc_section(name).is_some())
}

fn text_sections(cx: Ctx<'_>) -> impl Iterator<Item = &[u8]> {
    cx.info.sections.iter().filter(|s| s.is_alloc_exec()).map(|s| s.bytes(cx.image)).filter(|b| !b.is_empty())
}

/// i386: IBT is x86_64-only, so `ENDBR_INSN_SIZE` is 0 on every config.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn i386(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(Choice { section: MCOUNT_LOC, max_offset: 0, adjust: Adjust::Identity, basis: "i386" })
}

/// How a powerpc kernel makes its callsites. `MODULE_ARCH_VERMAGIC`
/// (arch/powerpc/include/asm/vermagic.h) names the first two in every
/// module's vermagic, so a module tells this even without a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PpcBuild {
    /// `-fpatchable-function-entry`: vermagic says `patchable-function-entry`.
    Patchable,
    /// `-pg -mprofile-kernel`: vermagic says `mprofile-kernel`.
    Mprofile,
    /// Plain `-pg`: neither word.
    PlainPg,
}

impl PpcBuild {
    fn of(cx: Ctx<'_>) -> (PpcBuild, &'static str) {
        let build = |patchable: bool, mprofile: bool| {
            if patchable {
                PpcBuild::Patchable
            } else if mprofile {
                PpcBuild::Mprofile
            } else {
                PpcBuild::PlainPg
            }
        };
        if let Some(c) = cx.config {
            let b = build(c.enabled("ARCH_USING_PATCHABLE_FUNCTION_ENTRY"), c.enabled("MPROFILE_KERNEL"));
            return (b, "from --kconfig");
        }
        let words = cx.info.vermagic.as_deref().unwrap_or_default();
        let has = |word| words.split_whitespace().any(|w| w == word);
        (build(has("patchable-function-entry"), has("mprofile-kernel")), "from vermagic")
    }
}

/// ppc64 in 6.2-6.5: only `-mprofile-kernel` builds are checked, through
/// `__mcount_loc`, and the adjust is the identity. The offset was 12 when
/// it was introduced (commit 7af82ff90a2b) and 16 by 6.6; we take the
/// larger, which can only keep more.
fn ppc64_v6_2(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    ppc64_elfv2(cx)?;
    match PpcBuild::of(cx) {
        (PpcBuild::Mprofile, basis) => {
            Ok(Choice { section: MCOUNT_LOC, max_offset: 16, adjust: Adjust::Identity, basis })
        }
        _ => Err(NoCheck::PpcPlainPg),
    }
}

/// ppc64 in 6.6-6.12: patchable entries come in pairs of NOPs
/// (`-fpatchable-function-entry=2`, arch/powerpc/Makefile) and
/// `ftrace_call_adjust()` (arch/powerpc/kernel/trace/ftrace.c) adds 4;
/// `-mprofile-kernel` keeps `__mcount_loc` and the identity.
fn ppc64_v6_6(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    ppc64_elfv2(cx)?;
    let choice = |section, adjust, basis| Choice { section, max_offset: 16, adjust, basis };
    match PpcBuild::of(cx) {
        (PpcBuild::Patchable, basis) => Ok(choice(PATCHABLE, Adjust::Add(4), basis)),
        (PpcBuild::Mprofile, basis) => Ok(choice(MCOUNT_LOC, Adjust::Identity, basis)),
        (PpcBuild::PlainPg, _) => Err(NoCheck::PpcPlainPg),
    }
}

fn ppc64_elfv2(cx: Ctx<'_>) -> Result<(), NoCheck> {
    if cx.info.e_flags & elf::EF_PPC64_ABI == 2 { Ok(()) } else { Err(NoCheck::PpcElfV1) }
}

/// ppc32 in 6.2-6.12: `-pg` with offset 8, or (from 6.6) NOP pairs with
/// offset 16 and +4.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn ppc32_v6_2(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(match PpcBuild::of(cx) {
        (PpcBuild::Patchable, basis) => Choice { section: PATCHABLE, max_offset: 16, adjust: Adjust::Add(4), basis },
        (_, basis) => Choice { section: MCOUNT_LOC, max_offset: 8, adjust: Adjust::Identity, basis },
    })
}

/// ppc64 (arch/powerpc/include/asm/ftrace.h): `ELFv2` only; patchable entries
/// or -mprofile-kernel, never plain -pg.
fn ppc64(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    if cx.info.e_flags & elf::EF_PPC64_ABI != 2 {
        return Err(NoCheck::PpcElfV1);
    }
    let choice = |section, adjust, basis| Choice { section, max_offset: 16, adjust, basis };
    Ok(match cx.config {
        Some(c) if c.enabled("ARCH_USING_PATCHABLE_FUNCTION_ENTRY") => {
            let adjust = if !c.enabled("PPC_FTRACE_OUT_OF_LINE") {
                Adjust::Add(if c.enabled("DYNAMIC_FTRACE_WITH_CALL_OPS") { 8 } else { 4 })
            } else if c.enabled("CC_IS_CLANG") {
                Adjust::ClangGlobalEntry
            } else {
                Adjust::Identity
            };
            choice(PATCHABLE, adjust, "patchable entries, from --kconfig")
        }
        Some(c) if c.enabled("MPROFILE_KERNEL") => {
            choice(MCOUNT_LOC, Adjust::Identity, "-mprofile-kernel, from --kconfig")
        }
        Some(_) => return Err(NoCheck::PpcPlainPg),
        // Out-of-line stubs are on wherever patchable entries are on ppc64
        // (`PPC_FTRACE_OUT_OF_LINE` is a def_bool, arch/powerpc/Kconfig).
        None => match PpcBuild::of(cx).0 {
            PpcBuild::Patchable => choice(
                PATCHABLE,
                Adjust::ClangGlobalEntry,
                "patchable entries from vermagic; compiler unknown, so both clang candidates",
            ),
            PpcBuild::Mprofile => choice(MCOUNT_LOC, Adjust::Identity, "-mprofile-kernel, from vermagic"),
            PpcBuild::PlainPg => return Err(NoCheck::PpcPlainPg),
        },
    })
}

/// ppc32: patchable entries where the compiler supports them, else -pg.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn ppc32(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(if PpcBuild::of(cx).0 == PpcBuild::Patchable {
        // The recorded location is one NOP before the function; the kernel
        // adds 4, and 4 more with DYNAMIC_FTRACE_WITH_CALL_OPS.
        let (adjust, basis) = match cx.config {
            Some(c) if c.enabled("DYNAMIC_FTRACE_WITH_CALL_OPS") => {
                (Adjust::Add(8), "patchable entries, from --kconfig")
            }
            Some(_) => (Adjust::Add(4), "patchable entries, from --kconfig"),
            None => (Adjust::AnyOf(4, 8), "patchable entries, no --kconfig: widest case"),
        };
        Choice { section: PATCHABLE, max_offset: 16, adjust, basis }
    } else {
        let basis = if cx.config.is_some() { "-pg, from --kconfig" } else { "-pg, no --kconfig: widest case" };
        Choice { section: MCOUNT_LOC, max_offset: 8, adjust: Adjust::Identity, basis }
    })
}

/// A choice under the containment rule, which has no max offset.
fn contained(section: &'static str, adjust: Adjust, basis: &'static str) -> Choice {
    Choice { section, max_offset: 0, adjust, basis }
}

/// arm64 (arch/arm64/kernel/ftrace.c, `ftrace_call_adjust()`): patchable
/// entries with `DYNAMIC_FTRACE_WITH_ARGS` (and before it, in 5.10 and 6.1,
/// `DYNAMIC_FTRACE_WITH_REGS`: arch/arm64/Makefile), and the adjust moves the
/// location to the `BL`; plain mcount otherwise, unadjusted.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn arm64(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    let patchable = match cx.config {
        Some(c) => c.enabled("DYNAMIC_FTRACE_WITH_ARGS") || c.enabled("DYNAMIC_FTRACE_WITH_REGS"),
        None => cx.info.alloc_section(PATCHABLE).is_some() || cx.info.alloc_section(MCOUNT_LOC).is_none(),
    };
    Ok(if patchable {
        contained(PATCHABLE, Adjust::PatchSite, "patchable entries, adjusted to the BL")
    } else {
        contained(MCOUNT_LOC, Adjust::Identity, "mcount, unadjusted")
    })
}

/// riscv up to 6.12 (arch/riscv/include/asm/ftrace.h): adjust the
/// identity. 6.1 and 6.12 record patchable entries; 5.10 plain `-pg`
/// (`__mcount_loc`, arch/riscv/Makefile). Between them the module says
/// which: the loader reads the one its build made (`FTRACE_CALLSITE_SECTION`,
/// include/linux/ftrace.h).
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn riscv_identity(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(if cx.info.alloc_section(PATCHABLE).is_some() || cx.info.alloc_section(MCOUNT_LOC).is_none() {
        contained(PATCHABLE, Adjust::Identity, "patchable entries, unadjusted")
    } else {
        contained(MCOUNT_LOC, Adjust::Identity, "-pg, unadjusted")
    })
}

/// x86 before 6.0: no check at all (no `test_for_valid_rec()` in
/// kernel/trace/ftrace.c, 5.10.223), so the kernel keeps a dead weak
/// body's record under the name of the function before it. The location
/// is the `call __fentry__` at a function's start (after `endbr64` with
/// IBT), inside it; the adjust is the identity (arch/x86/include/asm/ftrace.h).
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn x86_contained(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(MCOUNT_LOC, Adjust::Identity, "no check before 6.0: unadjusted"))
}

/// ppc64 before 6.2: no check; `-mprofile-kernel` or `-pg`, both through
/// `__mcount_loc`, the call inside the function, adjust the identity
/// (arch/powerpc/include/asm/ftrace.h, 5.10.223 and 6.1.192). `ELFv2` only:
/// `ELFv1` function symbols name descriptors in `.opd`, not code.
fn ppc64_contained(cx: Ctx<'_>) -> Result<Choice, NoCheck> {
    ppc64_elfv2(cx)?;
    ppc_contained(cx)
}

/// ppc32 before 6.2: `-pg` into `__mcount_loc`, adjust the identity.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn ppc_contained(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(MCOUNT_LOC, Adjust::Identity, "no check before 6.2: -pg or -mprofile-kernel, unadjusted"))
}

/// riscv in 7.2 (arch/riscv/kernel/ftrace.c): the adjust adds
/// `MCOUNT_AUIPC_SIZE`, and 8 more with `CALL_OPS`. 6.13 to 6.15 were not
/// read, so they are taken to move 0 too: the zero gate then leaves the
/// adjust-first ones alone.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn riscv_patch_site(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(PATCHABLE, Adjust::PatchSite, "patchable entries, adjusted past the AUIPC"))
}

/// s390 (arch/s390/include/asm/ftrace.h): `__mcount_loc` from
/// `-mrecord-mcount`, adjust the identity.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn s390(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(MCOUNT_LOC, Adjust::Identity, "-mrecord-mcount, unadjusted"))
}

/// loongarch (arch/loongarch/Makefile): `-fpatchable-function-entry=2`,
/// adjust the identity.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn loongarch(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(PATCHABLE, Adjust::Identity, "patchable entries, unadjusted"))
}

/// arm (arch/arm/include/asm/ftrace.h): `-pg` and recordmcount; the adjust
/// clears the Thumb-2 bit.
#[allow(clippy::unnecessary_wraps, reason = "every row's choose function has one signature")]
fn arm(_: Ctx<'_>) -> Result<Choice, NoCheck> {
    Ok(contained(MCOUNT_LOC, Adjust::ClearThumbBit, "-pg, Thumb bit cleared"))
}

/// The outcome of picking a rule for a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Act(Rule),
    /// The kernel does not check this module's callsites (or we cannot tell
    /// that it does): nothing to do.
    Unchecked(NoCheck),
}

/// Why the kernel does not check a module's callsites, or why we cannot
/// tell that it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCheck {
    /// A machine (or class) no row knows.
    UnknownMachine {
        machine: u16,
        is_64: bool,
    },
    /// An arch whose kernel does not define `FTRACE_MCOUNT_MAX_OFFSET`.
    NoMaxOffset(Arch),
    DynamicFtraceOff,
    NoVermagic,
    BadRelease(String),
    /// A kernel older than every row of its arch; `lacks` says what it lacks.
    TooOld {
        kernel: Release,
        lacks: &'static str,
    },
    PpcElfV1,
    PpcPlainPg,
    /// ppc, `--section __mcount_loc`, no config.
    PpcMcountSection,
}

impl fmt::Display for NoCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoCheck::UnknownMachine { machine, is_64 } => write!(
                f,
                "e_machine {machine} ({}-bit): not an architecture whose kernel checks ftrace callsites",
                if *is_64 { 64 } else { 32 }
            ),
            NoCheck::NoMaxOffset(arch) => write!(
                f,
                "{arch}: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET here, so it keeps weak callsites"
            ),
            NoCheck::DynamicFtraceOff => {
                f.write_str("CONFIG_DYNAMIC_FTRACE is off: the kernel ignores the callsite table")
            }
            NoCheck::NoVermagic => f.write_str("no vermagic in .modinfo: cannot tell which kernel this module is for"),
            NoCheck::BadRelease(vermagic) => write!(f, "cannot read the kernel release in vermagic {vermagic:?}"),
            NoCheck::TooOld { kernel, lacks } => write!(f, "kernel {kernel} {lacks}"),
            NoCheck::PpcElfV1 => f.write_str("ppc64 ELFv1: the kernel does not check weak callsites"),
            NoCheck::PpcPlainPg => {
                f.write_str("ppc64 with plain -pg: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET")
            }
            NoCheck::PpcMcountSection => f.write_str(
                "ppc with __mcount_loc: -mprofile-kernel and plain -pg cannot be told apart without --kconfig",
            ),
        }
    }
}

/// User overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub max_offset: Option<u64>,
    pub section: Option<String>,
}

/// Pick the rule for a module, or say why there is nothing to do.
pub fn rule_for(image: &[u8], info: &ElfInfo, config: Option<&Kconfig>, over: &Overrides) -> Result<Scope, Error> {
    match pick(image, info, config) {
        Ok((row, rule)) => apply_overrides(row, rule, config.is_some(), over),
        Err(Picked::Unchecked(why)) => Ok(Scope::Unchecked(why)),
        Err(Picked::Error(e)) => Err(e),
    }
}

enum Picked {
    Unchecked(NoCheck),
    Error(Error),
}

impl From<NoCheck> for Picked {
    fn from(why: NoCheck) -> Picked {
        Picked::Unchecked(why)
    }
}

/// The row for this module's arch and kernel, and the rule it gives.
fn pick(image: &[u8], info: &ElfInfo, config: Option<&Kconfig>) -> Result<(&'static Row, Rule), Picked> {
    let arch = Arch::from_elf(info.machine, info.is_64)
        .ok_or(NoCheck::UnknownMachine { machine: info.machine, is_64: info.is_64 })?;
    let mut rows = ROWS.iter().filter(|r| r.arch == arch).peekable();
    let first = *rows.peek().ok_or(NoCheck::NoMaxOffset(arch))?;
    if let Some(c) = config {
        // A config from another arch has none of this arch's facts: that
        // is an error, not a warning, as no rule could be read from it.
        if !c.enabled(first.config_symbol) {
            let header = match (&c.arch, &c.release) {
                (Some(a), Some((r, _))) => format!("; it is a Linux/{a} {r} config"),
                (Some(a), None) => format!("; it is a Linux/{a} config"),
                _ => String::new(),
            };
            return Err(Picked::Error(Error::Config(format!(
                "the config is not for {arch}, this module's arch (CONFIG_{} is not set{header})",
                first.config_symbol
            ))));
        }
        if let Some(a) = c.arch.as_deref().filter(|&a| crate::rule::srcarch_of(a) != arch.srcarch()) {
            return Err(Picked::Error(Error::Config(format!(
                "the config is for {a} (its header), this module for {arch} (arch/{})",
                arch.srcarch()
            ))));
        }
        if !c.enabled("DYNAMIC_FTRACE") {
            return Err(NoCheck::DynamicFtraceOff.into());
        }
    }
    let vermagic = info.vermagic.as_deref().ok_or(NoCheck::NoVermagic)?;
    let kernel = Release::from_vermagic(vermagic).ok_or_else(|| NoCheck::BadRelease(vermagic.to_string()))?;
    let row = rows.find(|r| r.holds_for(kernel)).ok_or(NoCheck::TooOld { kernel, lacks: first.older })?;
    let choice = (row.choose)(Ctx { image, info, config })?;
    let neutraliser = if choice.adjust.maps_zero_to_zero() || skips_zero_before_adjust(kernel) {
        Neutraliser::Zero
    } else {
        Neutraliser::Drop { kernel, adjust: choice.adjust }
    };
    let rule = Rule {
        arch,
        check: row.check,
        section: choice.section,
        shape: row.shape,
        max_offset: choice.max_offset,
        adjust: choice.adjust,
        init_in_core: row.init_in_core,
        mod_unload: vermagic.split_whitespace().any(|w| w == "mod_unload"),
        basis: choice.basis,
        unchecked_release: ((kernel.major, kernel.minor) > CHECKED_THROUGH).then_some(kernel),
        // 6.12 is the oldest release read with the wider set; a narrower set
        // counts more symbols, which can only keep more entries.
        mapping: if kernel >= release(6, 12, 0) { Mapping::All } else { Mapping::Arm },
        region_bound: kernel < REGIONS_MAY_TOUCH_SINCE || in_fixed_line(kernel, REGION_BOUND_FIRST),
        neutraliser,
        empty_table_fails: row.empty_table_fails,
    };
    Ok((row, rule))
}

/// `--section` and `--max-offset`, applied once, after the row's choice.
fn apply_overrides(row: &Row, mut rule: Rule, configured: bool, over: &Overrides) -> Result<Scope, Error> {
    if let Some(section) = over.section.as_deref().filter(|&s| s != rule.section) {
        let known = configured || !row.table_needs_config;
        if known || (section != MCOUNT_LOC && section != PATCHABLE) {
            return Err(Error::Section(format!(
                "--section {section}: the {} kernel{} reads {}",
                rule.arch,
                if configured { " of this config" } else { "" },
                rule.section
            )));
        }
        // ppc without a config: the caller knows which table the build uses.
        if section == MCOUNT_LOC {
            return Ok(Scope::Unchecked(NoCheck::PpcMcountSection));
        }
        rule.section = PATCHABLE;
    }
    if let Some(max) = over.max_offset {
        if !rule.check.kernel_checks() {
            return Err(Error::Config(format!(
                "--max-offset {max}: the {} kernel has no FTRACE_MCOUNT_MAX_OFFSET; its rule is containment in a \
                 function symbol",
                rule.arch
            )));
        }
        rule.max_offset = max;
        rule.basis = "--max-offset";
    }
    Ok(Scope::Act(rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_site_follows_the_adjust() {
        use crate::risk::PatchSite;
        // arm64 and riscv records move into the function only where the
        // adjust moves them; unadjusted mcount stays a symbol fact.
        assert_eq!(Arch::Arm64.patch_site(Adjust::PatchSite), PatchSite::ArmBl);
        assert_eq!(Arch::Arm64.patch_site(Adjust::Identity), PatchSite::AtSymbol);
        assert_eq!(Arch::Riscv.patch_site(Adjust::PatchSite), PatchSite::SecondInsn);
        assert_eq!(Arch::Riscv.patch_site(Adjust::Identity), PatchSite::AtSymbol);
        assert_eq!(Arch::X86_64.patch_site(Adjust::Identity), PatchSite::AfterEndbr64);
        assert_eq!(Arch::S390.patch_site(Adjust::Identity), PatchSite::AtSymbol);
    }

    #[test]
    fn bti_landing_pads_and_nothing_else() {
        for w in [0xd503_241f_u32, 0xd503_245f, 0xd503_249f, 0xd503_24df] {
            assert!(is_arm64_bti(&w.to_le_bytes()), "{w:#x}");
        }
        // nop, paciasp, and a bti word read big-endian are not landing pads.
        for w in [0xd503_201f_u32, 0xd503_233f, 0x5f24_03d5] {
            assert!(!is_arm64_bti(&w.to_le_bytes()), "{w:#x}");
        }
        assert!(!is_arm64_bti(&[0x5f, 0x24, 0x03]));
    }

    #[test]
    fn kernel_release_from_vermagic() {
        let read = Release::from_vermagic;
        assert_eq!(read("7.2.13+deb14-amd64 SMP preempt mod_unload modversions"), Some(release(7, 2, 13)));
        assert_eq!(read("6.12.107+deb13-powerpc64le SMP mod_unload"), Some(release(6, 12, 107)));
        assert_eq!(read("6.1.0-57-amd64 SMP preempt mod_unload modversions"), Some(release(6, 1, 0)));
        assert_eq!(read("7.3-rc7 SMP"), Some(release(7, 3, 0)));
        assert_eq!(read("6.15.0 SMP"), Some(release(6, 15, 0)));
        assert_eq!(read("garbage"), None);
        assert_eq!(read("6"), None);
    }

    #[test]
    fn zero_first_by_stable_line() {
        let skips = |a, b, c| skips_zero_before_adjust(release(a, b, c));
        assert!(!skips(6, 1, 192), "6.1.y never got the fix");
        assert!(!skips(6, 6, 143) && skips(6, 6, 144));
        assert!(!skips(6, 12, 94) && skips(6, 12, 95) && skips(6, 12, 107));
        assert!(!skips(6, 13, 7) && !skips(6, 14, 11), "no backport known: adjust first");
        assert!(skips(6, 15, 0) && skips(7, 2, 13) && skips(8, 0, 0));
        assert!(!skips(6, 11, 200), "a line without the fix stays without it");
    }

    #[test]
    fn clang_candidates_only_with_the_global_entry_pair() {
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, true), ([0x40, 0x48], 2));
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, false).1, 1);
        assert_eq!(Adjust::Add(8).candidates(0x40, false), ([0x48, 0], 1));
    }

    #[test]
    fn containment_rows_start_where_the_source_was_read() {
        // The containment rows were checked against 5.10.223, 6.1.192,
        // 6.12.118 and 7.2.13; their adjusts only pick the neutraliser.
        for row in ROWS.iter().filter(|r| !r.check.kernel_checks()) {
            assert!(!row.table_needs_config, "{}", row.arch);
            assert!(row.since >= OLDEST_READ, "{}: no source older than 5.10 was read", row.arch);
        }
        // Every arch has a row from 5.10 on, but loongarch (read in 6.12 only).
        for arch in
            [Arch::X86_64, Arch::I386, Arch::Ppc64, Arch::Ppc32, Arch::Arm64, Arch::Riscv, Arch::S390, Arch::Arm]
        {
            assert!(ROWS.iter().any(|r| r.arch == arch && r.since == OLDEST_READ), "{arch}");
        }
        assert!(ROWS.iter().all(|r| r.empty_table_fails == (r.arch == Arch::S390)));
        assert!(Adjust::ClearThumbBit.maps_zero_to_zero());
        assert!(!Adjust::PatchSite.maps_zero_to_zero());
        assert_eq!(Adjust::ClearThumbBit.candidates(0x41, false), ([0x40, 0], 1));
    }

    #[test]
    fn rows_of_one_arch_share_its_facts_and_do_not_overlap() {
        for (i, a) in ROWS.iter().enumerate() {
            for b in &ROWS[i + 1..] {
                if a.arch != b.arch {
                    continue;
                }
                assert_eq!(a.config_symbol, b.config_symbol, "{}", a.arch);
                let a_before_b = a.until.is_some_and(|u| u <= b.since);
                let b_before_a = b.until.is_some_and(|u| u <= a.since);
                assert!(a_before_b || b_before_a, "{} rows overlap", a.arch);
            }
        }
    }
}

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
//! before it, the kernel validates no module record: an overridden weak
//! body keeps its record, named after the function before it, a dead
//! duplicate. We take those out as `scripts/sorttable.c` does for vmlinux
//! ([`Criterion::Contains`]), and apply the same rule besides the kernel's
//! check where it has one ([`Criterion::MaxOffset`]); arches without a row
//! are left alone. Each rule
//! also says how ([`Neutraliser`]): zeroed where the kernel skips a zero
//! word, dropped where it would adjust a zero into a bogus record.
//!
//! Where the kernel config is unknown we pick the largest offset any config
//! could have: a larger offset only keeps more entries, a smaller one than
//! the kernel's would reject valid ones.
//!
//! The facts are data, in three tables: [`ARCHES`] holds what an arch is
//! whatever the release, [`ROWS`] one row per arch and range of releases,
//! and [`crate::release`] every release at which something changes. A row's
//! [`Choose`] is a constant [`Choice`] or the small function that reads it
//! from the config or the module. A rule for a new kernel range is a new
//! row; a new criterion (such as "inside a function symbol",
//! [`Criterion::Contains`]) is a new [`Criterion`] variant that its rows
//! name (docs/rules.md, "Adding an arch, a release or a neutraliser").

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use object::elf;

use crate::elf::{ElfInfo, RelocShape};
use crate::error::Error;
use crate::kconfig::Kconfig;
use crate::release::{
    KernelFacts, LOONGARCH_READ_SINCE, MAX_OFFSET_SINCE_PPC, MAX_OFFSET_SINCE_X86, OLDEST_READ, PATCH_SITE_SINCE,
    PPC_PATCHABLE_SINCE,
};
use crate::rule::{Adjust, Arch, Criterion, Neutraliser, Release, Rule};

pub const MCOUNT_LOC: &str = "__mcount_loc";
pub const PATCHABLE: &str = "__patchable_function_entries";

/// What one row picks, from the config or the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    pub section: &'static str,
    pub max_offset: u64,
    pub adjust: Adjust,
    /// Where the numbers came from, for `--verbose`.
    pub basis: &'static str,
}

/// What a row's choose function sees.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The module file, for what its code reveals.
    pub image: &'a [u8],
    pub info: &'a ElfInfo,
    pub config: Option<&'a Kconfig>,
}

/// How a row picks its table, adjust and offset.
#[derive(Debug, Clone, Copy)]
pub enum Choose {
    /// The same on every config and module.
    Fixed(Choice),
    /// Read from the config, else from the module.
    Read(fn(Ctx<'_>) -> Choice),
    /// Read, or the reason the kernel does not validate this build's
    /// records.
    ReadOrNone(fn(Ctx<'_>) -> Result<Choice, NoRule>),
}

impl Choose {
    fn choice(self, cx: Ctx<'_>) -> Result<Choice, NoRule> {
        match self {
            Choose::Fixed(choice) => Ok(choice),
            Choose::Read(read) => Ok(read(cx)),
            Choose::ReadOrNone(read) => read(cx),
        }
    }
}

/// What an arch is, whatever the kernel release.
#[derive(Debug)]
pub struct ArchFacts {
    pub arch: Arch,
    /// The Kconfig symbol that says a config was made for this arch.
    pub config_symbol: &'static str,
    /// The relocation its callsite words carry.
    pub shape: RelocShape,
    /// The loader fails a module whose callsite table is empty.
    pub empty_table_fails: bool,
    /// What a kernel older than the arch's first row lacks, for the reason
    /// it is left alone.
    pub older: &'static str,
}

const fn arch(arch: Arch, config_symbol: &'static str, rela: bool, abs_type: u32) -> ArchFacts {
    ArchFacts { arch, config_symbol, shape: RelocShape { rela, abs_type }, empty_table_fails: false, older: OLDER }
}

const OLDER: &str = "predates 5.10, the oldest kernel whose source this tool's rules were checked against";
const LOONGARCH_OLDER: &str =
    "predates 6.12, the oldest loongarch kernel whose source this tool's rule was checked against";

/// The arches whose kernels have rows; an arch without one is left alone.
pub static ARCHES: &[ArchFacts] = &[
    arch(Arch::X86_64, "X86_64", true, elf::R_X86_64_64),
    arch(Arch::I386, "X86_32", false, elf::R_386_32),
    arch(Arch::Ppc64, "PPC64", true, elf::R_PPC64_ADDR64),
    arch(Arch::Ppc32, "PPC32", true, elf::R_PPC_ADDR32),
    arch(Arch::Arm64, "ARM64", true, elf::R_AARCH64_ABS64),
    arch(Arch::Riscv, "RISCV", true, elf::R_RISCV_64),
    // The hotpatch trampolines are sized from the table (module_finalize()).
    ArchFacts { empty_table_fails: true, ..arch(Arch::S390, "S390", true, elf::R_390_64) },
    ArchFacts { older: LOONGARCH_OLDER, ..arch(Arch::LoongArch, "LOONGARCH", true, elf::R_LARCH_64) },
    arch(Arch::Arm, "ARM", false, elf::R_ARM_ABS32),
    // recordmcount writes the table's relocations in the kind of the text's
    // (`append_func()`, scripts/recordmcount.h), with `R_MIPS_64` or
    // `R_MIPS_32` by class (`do_file()`, scripts/recordmcount.c): RELA in
    // n64 modules, whose mips64el `r_info` is laid out apart (src/elf.rs
    // reads it), and REL in o32 ones.
    arch(Arch::Mips64, "MIPS", true, elf::R_MIPS_64),
    arch(Arch::Mips32, "MIPS", false, elf::R_MIPS_32),
];

/// The facts of one arch over one range of kernel releases.
#[derive(Debug)]
pub struct Row {
    pub arch: Arch,
    /// The releases this row holds for: `since` included, `until` excluded.
    pub since: Release,
    pub until: Option<Release>,
    pub criterion: Criterion,
    /// Table, adjust and offset for a config, or why the kernel does not
    /// validate the records.
    pub choose: Choose,
    /// `module_init_section()` returns false: `.init*` is core text.
    pub init_in_core: bool,
    /// Without a config, which table the kernel reads is a guess; `--section`
    /// may settle it.
    pub table_needs_config: bool,
}

const fn row(arch: Arch, since: Release, until: Option<Release>, criterion: Criterion, choose: Choose) -> Row {
    Row { arch, since, until, criterion, choose, init_in_core: false, table_needs_config: false }
}

/// A row of powerpc's offset rule: the table depends on the build.
const fn ppc_row(arch: Arch, since: Release, until: Option<Release>, init_in_core: bool, choose: Choose) -> Row {
    Row { init_in_core, table_needs_config: true, ..row(arch, since, until, Criterion::MaxOffset, choose) }
}

use Choose::{Fixed, Read, ReadOrNone};
use Criterion::{Contains, MaxOffset};

/// The rows, by arch and release range, from 5.10 ([`OLDEST_READ`]) on.
///
/// Each arch's first row is the one before its `FTRACE_MCOUNT_MAX_OFFSET`
/// (x86 6.0, powerpc 6.2), or its only kind of rule (containment) on the
/// arches that never define it.
pub static ROWS: &[Row] = &[
    row(Arch::X86_64, OLDEST_READ, Some(MAX_OFFSET_SINCE_X86), Contains { before: 0 }, Fixed(X86_CONTAINED)),
    row(Arch::X86_64, MAX_OFFSET_SINCE_X86, None, MaxOffset, Read(x86_64)),
    row(Arch::I386, OLDEST_READ, Some(MAX_OFFSET_SINCE_X86), Contains { before: 0 }, Fixed(X86_CONTAINED)),
    row(Arch::I386, MAX_OFFSET_SINCE_X86, None, MaxOffset, Fixed(I386)),
    row(Arch::Ppc64, OLDEST_READ, Some(MAX_OFFSET_SINCE_PPC), Contains { before: 0 }, ReadOrNone(ppc64_contained)),
    ppc_row(Arch::Ppc64, MAX_OFFSET_SINCE_PPC, Some(PPC_PATCHABLE_SINCE), true, ReadOrNone(ppc64_v6_2)),
    ppc_row(Arch::Ppc64, PPC_PATCHABLE_SINCE, Some(PATCH_SITE_SINCE), true, ReadOrNone(ppc64_v6_6)),
    ppc_row(Arch::Ppc64, PATCH_SITE_SINCE, None, true, ReadOrNone(ppc64)),
    row(Arch::Ppc32, OLDEST_READ, Some(MAX_OFFSET_SINCE_PPC), Contains { before: 0 }, Fixed(PPC_CONTAINED)),
    ppc_row(Arch::Ppc32, MAX_OFFSET_SINCE_PPC, Some(PATCH_SITE_SINCE), false, Read(ppc32_v6_2)),
    ppc_row(Arch::Ppc32, PATCH_SITE_SINCE, None, false, Read(ppc32)),
    // The arches without FTRACE_MCOUNT_MAX_OFFSET, under sorttable's rule
    // (`Criterion::Contains`). Read in the source of 5.10.223, 6.1.192,
    // 6.12.118 and 7.2.13 (docs/rules.md says what between them is
    // inferred). `before` is the most any config places ahead of a
    // function: arm64's `-fpatchable-function-entry=4,2` (with CALL_OPS)
    // and riscv's `=8,4` of 2-byte c.nops (or `=4,2` of 4-byte nops) both
    // put 8 bytes there (arch/*/Makefile, `CC_FLAGS_FTRACE`).
    row(Arch::Arm64, OLDEST_READ, None, Contains { before: 8 }, Read(arm64)),
    row(Arch::Riscv, OLDEST_READ, Some(PATCH_SITE_SINCE), Contains { before: 8 }, Read(riscv_identity)),
    row(Arch::Riscv, PATCH_SITE_SINCE, None, Contains { before: 8 }, Fixed(RISCV_PATCH_SITE)),
    row(Arch::S390, OLDEST_READ, None, Contains { before: 0 }, Fixed(S390)),
    row(Arch::LoongArch, LOONGARCH_READ_SINCE, None, Contains { before: 0 }, Fixed(LOONGARCH)),
    row(Arch::Arm, OLDEST_READ, None, Contains { before: 0 }, Fixed(ARM)),
    // mips: read in 5.10.262, 6.1.176, 6.12.95 and 7.2.13.
    row(Arch::Mips64, OLDEST_READ, None, Contains { before: 0 }, Fixed(MIPS)),
    row(Arch::Mips32, OLDEST_READ, None, Contains { before: 0 }, Fixed(MIPS)),
];

/// `x86_64`: `FTRACE_MCOUNT_MAX_OFFSET` is `ENDBR_INSN_SIZE`, 4 with IBT, else 0.
fn x86_64(cx: Ctx<'_>) -> Choice {
    let (max_offset, basis) = match cx.config {
        Some(c) => (if c.enabled("X86_KERNEL_IBT") { 4 } else { 0 }, "IBT from --kconfig"),
        None if has_endbr64(cx) => (4, "IBT: endbr64 in the code"),
        None if has_text(cx) => (0, "IBT off: no endbr64 in the code"),
        None => (4, "IBT assumed: no --kconfig"),
    };
    Choice { section: MCOUNT_LOC, max_offset, adjust: Adjust::Identity, basis }
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
const I386: Choice = Choice { section: MCOUNT_LOC, max_offset: 0, adjust: Adjust::Identity, basis: "i386" };

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
        let build = |patchable: bool, mprofile: bool| match (patchable, mprofile) {
            (true, _) => PpcBuild::Patchable,
            (false, true) => PpcBuild::Mprofile,
            (false, false) => PpcBuild::PlainPg,
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
fn ppc64_v6_2(cx: Ctx<'_>) -> Result<Choice, NoRule> {
    ppc64_elfv2(cx)?;
    let (PpcBuild::Mprofile, basis) = PpcBuild::of(cx) else { return Err(NoRule::PpcPlainPg) };
    Ok(Choice { section: MCOUNT_LOC, max_offset: 16, adjust: Adjust::Identity, basis })
}

/// ppc64 in 6.6-6.12: patchable entries come in pairs of NOPs
/// (`-fpatchable-function-entry=2`, arch/powerpc/Makefile) and
/// `ftrace_call_adjust()` (arch/powerpc/kernel/trace/ftrace.c) adds 4;
/// `-mprofile-kernel` keeps `__mcount_loc` and the identity.
fn ppc64_v6_6(cx: Ctx<'_>) -> Result<Choice, NoRule> {
    ppc64_elfv2(cx)?;
    let choice = |section, adjust, basis| Choice { section, max_offset: 16, adjust, basis };
    match PpcBuild::of(cx) {
        (PpcBuild::Patchable, basis) => Ok(choice(PATCHABLE, Adjust::Add(4), basis)),
        (PpcBuild::Mprofile, basis) => Ok(choice(MCOUNT_LOC, Adjust::Identity, basis)),
        (PpcBuild::PlainPg, _) => Err(NoRule::PpcPlainPg),
    }
}

fn ppc64_elfv2(cx: Ctx<'_>) -> Result<(), NoRule> {
    if cx.info.e_flags & elf::EF_PPC64_ABI == 2 { Ok(()) } else { Err(NoRule::PpcElfV1) }
}

/// ppc32 in 6.2-6.12: `-pg` with offset 8, or (from 6.6) NOP pairs with
/// offset 16 and +4.
fn ppc32_v6_2(cx: Ctx<'_>) -> Choice {
    match PpcBuild::of(cx) {
        (PpcBuild::Patchable, basis) => Choice { section: PATCHABLE, max_offset: 16, adjust: Adjust::Add(4), basis },
        (_, basis) => Choice { section: MCOUNT_LOC, max_offset: 8, adjust: Adjust::Identity, basis },
    }
}

/// ppc64 (arch/powerpc/include/asm/ftrace.h): `ELFv2` only; patchable entries
/// or -mprofile-kernel, never plain -pg.
fn ppc64(cx: Ctx<'_>) -> Result<Choice, NoRule> {
    ppc64_elfv2(cx)?;
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
        Some(_) => return Err(NoRule::PpcPlainPg),
        // Out-of-line stubs are on wherever patchable entries are on ppc64
        // (`PPC_FTRACE_OUT_OF_LINE` is a def_bool, arch/powerpc/Kconfig).
        None => match PpcBuild::of(cx).0 {
            PpcBuild::Patchable => choice(
                PATCHABLE,
                Adjust::ClangGlobalEntry,
                "patchable entries from vermagic; compiler unknown, so both clang candidates",
            ),
            PpcBuild::Mprofile => choice(MCOUNT_LOC, Adjust::Identity, "-mprofile-kernel, from vermagic"),
            PpcBuild::PlainPg => return Err(NoRule::PpcPlainPg),
        },
    })
}

/// ppc32: patchable entries where the compiler supports them, else -pg.
fn ppc32(cx: Ctx<'_>) -> Choice {
    if PpcBuild::of(cx).0 == PpcBuild::Patchable {
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
    }
}

/// A choice under the containment rule, which has no max offset.
const fn contained(section: &'static str, adjust: Adjust, basis: &'static str) -> Choice {
    Choice { section, max_offset: 0, adjust, basis }
}

/// arm64 (arch/arm64/kernel/ftrace.c, `ftrace_call_adjust()`): patchable
/// entries with `DYNAMIC_FTRACE_WITH_ARGS` (and before it, in 5.10 and 6.1,
/// `DYNAMIC_FTRACE_WITH_REGS`: arch/arm64/Makefile), and the adjust moves the
/// location to the `BL`; plain mcount otherwise, unadjusted.
fn arm64(cx: Ctx<'_>) -> Choice {
    let patchable = match cx.config {
        Some(c) => c.enabled("DYNAMIC_FTRACE_WITH_ARGS") || c.enabled("DYNAMIC_FTRACE_WITH_REGS"),
        None => cx.info.alloc_section(PATCHABLE).is_some() || cx.info.alloc_section(MCOUNT_LOC).is_none(),
    };
    if patchable {
        contained(PATCHABLE, Adjust::PatchSite, "patchable entries, adjusted to the BL")
    } else {
        contained(MCOUNT_LOC, Adjust::Identity, "mcount, unadjusted")
    }
}

/// riscv up to 6.12 (arch/riscv/include/asm/ftrace.h): adjust the
/// identity. 6.1 and 6.12 record patchable entries; 5.10 plain `-pg`
/// (`__mcount_loc`, arch/riscv/Makefile). Between them the module says
/// which: the loader reads the one its build made (`FTRACE_CALLSITE_SECTION`,
/// include/linux/ftrace.h).
fn riscv_identity(cx: Ctx<'_>) -> Choice {
    if cx.info.alloc_section(PATCHABLE).is_some() || cx.info.alloc_section(MCOUNT_LOC).is_none() {
        contained(PATCHABLE, Adjust::Identity, "patchable entries, unadjusted")
    } else {
        contained(MCOUNT_LOC, Adjust::Identity, "-pg, unadjusted")
    }
}

/// x86 before 6.0: no check at all (no `test_for_valid_rec()` in
/// kernel/trace/ftrace.c, 5.10.223), so the kernel keeps a dead weak
/// body's record under the name of the function before it. The location
/// is the `call __fentry__` at a function's start (after `endbr64` with
/// IBT), inside it; the adjust is the identity (arch/x86/include/asm/ftrace.h).
const X86_CONTAINED: Choice = contained(MCOUNT_LOC, Adjust::Identity, "no check before 6.0: unadjusted");

/// ppc64 before 6.2: no check; `-mprofile-kernel` or `-pg`, both through
/// `__mcount_loc`, the call inside the function, adjust the identity
/// (arch/powerpc/include/asm/ftrace.h, 5.10.223 and 6.1.192). `ELFv2` only:
/// `ELFv1` function symbols name descriptors in `.opd`, not code.
fn ppc64_contained(cx: Ctx<'_>) -> Result<Choice, NoRule> {
    ppc64_elfv2(cx)?;
    Ok(PPC_CONTAINED)
}

/// ppc32 before 6.2: `-pg` into `__mcount_loc`, adjust the identity.
const PPC_CONTAINED: Choice =
    contained(MCOUNT_LOC, Adjust::Identity, "no check before 6.2: -pg or -mprofile-kernel, unadjusted");

/// riscv in 7.2 (arch/riscv/kernel/ftrace.c): the adjust adds
/// `MCOUNT_AUIPC_SIZE`, and 8 more with `CALL_OPS`. 6.13 to 6.15 were not
/// read, so they are taken to move 0 too: the zero gate then leaves the
/// adjust-first ones alone.
const RISCV_PATCH_SITE: Choice = contained(PATCHABLE, Adjust::PatchSite, "patchable entries, adjusted past the AUIPC");

/// s390 (arch/s390/include/asm/ftrace.h): `__mcount_loc` from
/// `-mrecord-mcount`, adjust the identity.
const S390: Choice = contained(MCOUNT_LOC, Adjust::Identity, "-mrecord-mcount, unadjusted");

/// loongarch (arch/loongarch/Makefile): `-fpatchable-function-entry=2`,
/// adjust the identity.
const LOONGARCH: Choice = contained(PATCHABLE, Adjust::Identity, "patchable entries, unadjusted");

/// arm (arch/arm/include/asm/ftrace.h): `-pg` and recordmcount; the adjust
/// clears the Thumb-2 bit.
const ARM: Choice = contained(MCOUNT_LOC, Adjust::ClearThumbBit, "-pg, Thumb bit cleared");

/// mips (arch/mips/include/asm/ftrace.h): `-pg` and recordmcount, adjust
/// the identity. Modules are built with `-mlong-calls` (arch/mips/Makefile),
/// so a function calls `_mcount` through `lui`, `addiu`, `jalr`; recordmcount
/// records the `lui`, the first of the two relocations against `_mcount`
/// (`MIPS_is_fake_mcount()` drops the second), and `ftrace_make_nop()`
/// (arch/mips/kernel/ftrace.c) turns it into a branch over the sequence
/// (`MCOUNT_OFFSET_INSNS`): the location is inside the function.
const MIPS: Choice = contained(MCOUNT_LOC, Adjust::Identity, "-pg long calls, unadjusted");

/// The outcome of picking a rule for a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Act(Rule),
    /// The kernel does not validate this module's records (or we cannot
    /// tell that it does): nothing to do.
    NoRule(NoRule),
}

/// Why the kernel does not validate a module's records, or why we cannot
/// tell that it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoRule {
    /// A machine (or class) no row knows.
    #[error("e_machine {machine} ({bits}-bit): not an architecture whose kernel checks ftrace callsites")]
    UnknownMachine { machine: u16, bits: u8 },
    /// An arch whose kernel does not define `FTRACE_MCOUNT_MAX_OFFSET`.
    #[error("{0}: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET here, so it keeps weak callsites")]
    NoMaxOffset(Arch),
    #[error("CONFIG_DYNAMIC_FTRACE is off: the kernel ignores the callsite table")]
    DynamicFtraceOff,
    #[error("no vermagic in .modinfo: cannot tell which kernel this module is for")]
    NoVermagic,
    #[error("cannot read the kernel release in vermagic {0:?}")]
    BadRelease(String),
    /// A kernel older than every row of its arch; `lacks` says what it lacks.
    #[error("kernel {kernel} {lacks}")]
    TooOld { kernel: Release, lacks: &'static str },
    #[error("ppc64 ELFv1: the kernel does not check weak callsites")]
    PpcElfV1,
    #[error("ppc64 with plain -pg: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET")]
    PpcPlainPg,
    /// ppc, `--section __mcount_loc`, no config.
    #[error("ppc with __mcount_loc: -mprofile-kernel and plain -pg cannot be told apart without --kconfig")]
    PpcMcountSection,
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
        Err(Picked::NoRule(why)) => Ok(Scope::NoRule(why)),
        Err(Picked::Error(e)) => Err(e),
    }
}

enum Picked {
    NoRule(NoRule),
    Error(Error),
}

impl From<NoRule> for Picked {
    fn from(why: NoRule) -> Picked {
        Picked::NoRule(why)
    }
}

/// The row for this module's arch and kernel, and the rule it gives.
fn pick(image: &[u8], info: &ElfInfo, config: Option<&Kconfig>) -> Result<(&'static Row, Rule), Picked> {
    let arch = Arch::from_elf(info.machine, info.is_64)
        .ok_or(NoRule::UnknownMachine { machine: info.machine, bits: if info.is_64 { 64 } else { 32 } })?;
    let facts = ARCHES.iter().find(|a| a.arch == arch).ok_or(NoRule::NoMaxOffset(arch))?;
    if let Some(c) = config {
        // A config from another arch has none of this arch's facts: that
        // is an error, not a warning, as no rule could be read from it.
        if !c.enabled(facts.config_symbol) {
            let header = match (&c.arch, &c.release) {
                (Some(a), Some((r, _))) => format!("; it is a Linux/{a} {r} config"),
                (Some(a), None) => format!("; it is a Linux/{a} config"),
                _ => String::new(),
            };
            return Err(Picked::Error(Error::Config(format!(
                "the config is not for {arch}, this module's arch (CONFIG_{} is not set{header})",
                facts.config_symbol
            ))));
        }
        if let Some(a) = c.arch.as_deref().filter(|&a| crate::rule::srcarch_of(a) != arch.srcarch()) {
            return Err(Picked::Error(Error::Config(format!(
                "the config is for {a} (its header), this module for {arch} (arch/{})",
                arch.srcarch()
            ))));
        }
        if !c.enabled("DYNAMIC_FTRACE") {
            return Err(NoRule::DynamicFtraceOff.into());
        }
    }
    let vermagic = info.vermagic.as_deref().ok_or(NoRule::NoVermagic)?;
    let kernel = Release::from_vermagic(vermagic).ok_or_else(|| NoRule::BadRelease(vermagic.to_string()))?;
    let row = ROWS
        .iter()
        .find(|r| r.arch == arch && kernel >= r.since && r.until.is_none_or(|until| kernel < until))
        .ok_or(NoRule::TooOld { kernel, lacks: facts.older })?;
    let choice = row.choose.choice(Ctx { image, info, config })?;
    let release = KernelFacts::of(kernel);
    let neutraliser = if choice.adjust.maps_zero_to_zero() || release.skips_zero_before_adjust {
        Neutraliser::Zero
    } else {
        Neutraliser::Drop { kernel, adjust: choice.adjust }
    };
    let rule = Rule {
        arch,
        criterion: row.criterion,
        section: choice.section,
        shape: facts.shape,
        max_offset: choice.max_offset,
        adjust: choice.adjust,
        init_in_core: row.init_in_core,
        mod_unload: vermagic.split_whitespace().any(|w| w == "mod_unload"),
        basis: choice.basis,
        unread_release: release.unread.then_some(kernel),
        mapping: release.mapping,
        region_bound: release.region_bound,
        neutraliser,
        empty_table_fails: facts.empty_table_fails,
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
            return Ok(Scope::NoRule(NoRule::PpcMcountSection));
        }
        rule.section = PATCHABLE;
    }
    if let Some(max) = over.max_offset {
        if rule.criterion != Criterion::MaxOffset {
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
    use crate::rule::release;

    #[test]
    fn the_patch_site_follows_the_adjust() {
        use crate::rule::PatchSite;
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
    fn clang_candidates_only_with_the_global_entry_pair() {
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, true), ([0x40, 0x48], 2));
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, false).1, 1);
        assert_eq!(Adjust::Add(8).candidates(0x40, false), ([0x48, 0], 1));
    }

    #[test]
    fn containment_rows_start_where_the_source_was_read() {
        // The containment rows were checked against 5.10.223, 6.1.192,
        // 6.12.118 and 7.2.13; their adjusts only pick the neutraliser.
        for row in ROWS.iter().filter(|r| r.criterion != Criterion::MaxOffset) {
            assert!(!row.table_needs_config, "{}", row.arch);
            assert!(row.since >= OLDEST_READ, "{}: no source older than 5.10 was read", row.arch);
        }
        // Every arch has a row from 5.10 on, but loongarch (read in 6.12 only).
        for arch in ARCHES.iter().map(|a| a.arch).filter(|&a| a != Arch::LoongArch) {
            assert!(ROWS.iter().any(|r| r.arch == arch && r.since == OLDEST_READ), "{arch}");
        }
        assert!(ARCHES.iter().all(|a| a.empty_table_fails == (a.arch == Arch::S390)));
        assert!(Adjust::ClearThumbBit.maps_zero_to_zero());
        assert!(!Adjust::PatchSite.maps_zero_to_zero());
        assert_eq!(Adjust::ClearThumbBit.candidates(0x41, false), ([0x40, 0], 1));
    }

    #[test]
    fn every_row_has_its_arch_and_rows_of_one_arch_do_not_overlap() {
        for (i, a) in ROWS.iter().enumerate() {
            assert!(ARCHES.iter().any(|f| f.arch == a.arch), "{}: a row without its arch's facts", a.arch);
            for b in ROWS[i + 1..].iter().filter(|b| b.arch == a.arch) {
                let a_before_b = a.until.is_some_and(|u| u <= b.since);
                let b_before_a = b.until.is_some_and(|u| u <= a.since);
                assert!(a_before_b || b_before_a, "{} rows overlap", a.arch);
            }
        }
        for (i, a) in ARCHES.iter().enumerate() {
            assert!(ARCHES[i + 1..].iter().all(|b| b.arch != a.arch), "{}: facts twice", a.arch);
            assert!(ROWS.iter().any(|r| r.arch == a.arch), "{}: facts without a row", a.arch);
        }
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! The rule a module is judged by, as plain data: the arch, the kernel
//! release, the [`Criterion`], the adjust, and the decision input of one
//! entry. [`crate::arch`] picks a [`Rule`] from its table of rows;
//! [`crate::decide`] applies it. Both depend on this module, and it on
//! neither.

use std::fmt;

use object::elf;

use crate::elf::{ElfInfo, Entry, Mapping, Odd, RelocShape, Target};

/// The architecture a module was built for, from `e_machine` and the ELF
/// class, as `scripts/sorttable.c` tells them apart (`switch (e_machine)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    X86_64,
    I386,
    Ppc64,
    Ppc32,
    Arm64,
    Arm,
    Riscv,
    S390,
    LoongArch,
    /// n64 modules: ELF64, RELA.
    Mips64,
    /// o32 modules: ELF32, REL.
    Mips32,
    Parisc,
    Sparc,
    Sh,
    Csky,
    Microblaze,
}

impl Arch {
    /// The arch of a module, or `None` for a machine no kernel builds
    /// modules for with ftrace (or a class that arch does not use).
    #[must_use]
    pub fn from_elf(machine: u16, is_64: bool) -> Option<Arch> {
        Some(match (machine, is_64) {
            (elf::EM_X86_64, true) => Arch::X86_64,
            (elf::EM_386, false) => Arch::I386,
            (elf::EM_PPC64, true) => Arch::Ppc64,
            (elf::EM_PPC, false) => Arch::Ppc32,
            (elf::EM_AARCH64, _) => Arch::Arm64,
            (elf::EM_ARM, _) => Arch::Arm,
            (elf::EM_RISCV, _) => Arch::Riscv,
            (elf::EM_S390, _) => Arch::S390,
            (elf::EM_LOONGARCH, _) => Arch::LoongArch,
            (elf::EM_MIPS, true) => Arch::Mips64,
            (elf::EM_MIPS, false) => Arch::Mips32,
            (elf::EM_PARISC, _) => Arch::Parisc,
            (elf::EM_SPARCV9 | elf::EM_SPARC, _) => Arch::Sparc,
            (elf::EM_SH, _) => Arch::Sh,
            (elf::EM_CSKY, _) => Arch::Csky,
            (elf::EM_MICROBLAZE, _) => Arch::Microblaze,
            _ => return None,
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I386 => "i386",
            Arch::Ppc64 => "ppc64",
            Arch::Ppc32 => "ppc32",
            Arch::Arm64 => "arm64",
            Arch::Arm => "arm",
            Arch::Riscv => "riscv",
            Arch::S390 => "s390",
            Arch::LoongArch => "loongarch",
            Arch::Mips64 => "mips64",
            Arch::Mips32 => "mips32",
            Arch::Parisc => "parisc",
            Arch::Sparc => "sparc",
            Arch::Sh => "sh",
            Arch::Csky => "csky",
            Arch::Microblaze => "microblaze",
        }
    }

    /// The kernel's `SRCARCH` for this arch: the directory under `arch/`,
    /// and what a config's header line names (after the top Makefile's
    /// aliases: `x86_64` and `i386` are `x86`).
    #[must_use]
    pub fn srcarch(self) -> &'static str {
        match self {
            Arch::X86_64 | Arch::I386 => "x86",
            Arch::Ppc64 | Arch::Ppc32 => "powerpc",
            Arch::Mips64 | Arch::Mips32 => "mips",
            other => other.name(),
        }
    }

    /// Where a function's own ftrace record is relative to its symbol, as
    /// the at-risk report explains it ([`crate::risk`], docs/at-risk.md).
    /// The adjust matters: where `ftrace_call_adjust()` moves a location to
    /// the patched instruction, that instruction is never the first one.
    #[must_use]
    pub fn patch_site(self, adjust: Adjust) -> PatchSite {
        match (self, adjust) {
            // ENDBR_INSN_SIZE: the __fentry__ call follows endbr64.
            (Arch::X86_64, _) => PatchSite::AfterEndbr64,
            // `ELFv2`: the record follows the global-entry TOC setup.
            (Arch::Ppc64, _) => PatchSite::LocalEntry,
            // arch/arm64/kernel/ftrace.c: the record is the `BL`, which
            // follows `mov x9, x30` (and a leading `bti c`, when the
            // function has one).
            (Arch::Arm64, Adjust::PatchSite) => PatchSite::ArmBl,
            // arch/riscv/kernel/ftrace.c from 6.13: past the `auipc`.
            (Arch::Riscv, Adjust::PatchSite) => PatchSite::SecondInsn,
            // Not modelled: treated as at the symbol (docs/at-risk.md).
            _ => PatchSite::AtSymbol,
        }
    }

    /// `MCOUNT_INSN_SIZE`: the span `ftrace_cmp_recs()` gives a record.
    #[must_use]
    pub fn mcount_insn_size(self) -> u64 {
        match self {
            Arch::X86_64 | Arch::I386 => 5,
            _ => 4,
        }
    }
}

/// A config header's `ARCH`, as the top Makefile turns it into `SRCARCH`.
#[must_use]
pub fn srcarch_of(arch: &str) -> &str {
    match arch {
        "x86_64" | "i386" => "x86",
        "sparc32" | "sparc64" => "sparc",
        "parisc64" => "parisc",
        "sh64" => "sh",
        other => other,
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel release with its stable patch level, as `vermagic` names it.
///
/// The patch level matters: stable kernels take fixes that change whether
/// zeroing is safe (see [`crate::release::KernelFacts`]). A release string
/// that hides it, as Debian bookworm's `6.1.0-57-amd64` does, reads as
/// patch 0: the oldest kernel of its line, which is the careful reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

#[must_use]
pub const fn release(major: u32, minor: u32, patch: u32) -> Release {
    Release { major, minor, patch }
}

impl Release {
    /// `7.2.13+deb14-amd64 SMP ...` → 7.2.13; `6.1.0-57-amd64` → 6.1.0;
    /// `7.3-rc7` → 7.3.0.
    #[must_use]
    pub fn from_vermagic(vermagic: &str) -> Option<Release> {
        let text = vermagic.split_whitespace().next()?;
        let mut numbers = text.split('.');
        let major = numbers.next()?.parse().ok()?;
        let minor = leading_number(numbers.next()?)?;
        let patch = numbers.next().and_then(leading_number).unwrap_or(0);
        Some(release(major, minor, patch))
    }
}

fn leading_number(text: &str) -> Option<u32> {
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    text[..end].parse().ok()
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The criterion an entry is judged by. sorttable's containment rule
/// applies on every arch; where the kernel tests each record
/// ([`Criterion::MaxOffset`]) its test applies too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Criterion {
    /// `test_for_valid_rec()`: a symbol at most `FTRACE_MCOUNT_MAX_OFFSET`
    /// bytes before the record ip; and the record ip inside a sized
    /// function symbol of its section, which catches a dead body that
    /// starts within that offset of the end of a short function
    /// ([`crate::decide::checked_and_contained`]).
    MaxOffset,
    /// No check in the kernel: it keeps every record, and names a dead weak
    /// body after the function before it. We apply `scripts/sorttable.c`'s
    /// rule for vmlinux (commit ef378c3b8233, `cmp_func_addr()`): keep a
    /// location inside a sized function symbol, or at most `before` bytes
    /// ahead of one, where patchable entries placed before the function are.
    Contains { before: u64 },
}

/// `ftrace_call_adjust()`: the record ip(s) a location may become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adjust {
    Identity,
    Add(u64),
    /// The config is unknown between two additions: keep if either is valid.
    AnyOf(u64, u64),
    /// clang ppc64 modules (llvm issue 163706): +8 when the location holds
    /// the global-entry pair `ld r2,-8(r12); add r2,r2,r12`, which the loader
    /// may or may not rewrite; so both `addr` and `addr + 8` are candidates.
    ClangGlobalEntry,
    /// arm: `addr & ~1`, the Thumb-2 bit of a recorded location cleared.
    ClearThumbBit,
    /// arm64 and riscv from 6.13 on: the location moves to the patched
    /// instruction, by an amount that depends on the config and on the code
    /// (arm64: +4, or +12 and +16 past a BTI with `CALL_OPS`; riscv +4 or
    /// +12). Only [`Criterion::Contains`] rows use it, and they test the
    /// location itself; what matters is that 0 does not stay 0.
    PatchSite,
}

/// `ld r2,-8(r12)` and `add r2,r2,r12` (arch/powerpc/include/asm/ppc-opcode.h).
pub const PPC_LD_R2_R12_M8: u32 = 0xe84c_fff8;
pub const PPC_ADD_R2_R2_R12: u32 = 0x7c42_6214;

impl Adjust {
    /// The candidate ips for a location; `global_entry` says whether the two
    /// instructions at the location are the clang global-entry pair.
    #[must_use]
    #[allow(clippy::inline_always, reason = "once per entry in the relocation walk of kept::all_kept")]
    #[inline(always)]
    pub fn candidates(self, addr: u64, global_entry: bool) -> ([u64; 2], usize) {
        match self {
            Adjust::Add(n) => ([addr + n, 0], 1),
            Adjust::AnyOf(a, b) => ([addr + a, addr + b], 2),
            Adjust::ClangGlobalEntry if global_entry => ([addr, addr + 8], 2),
            Adjust::ClearThumbBit => ([addr & !1, 0], 1),
            Adjust::Identity | Adjust::ClangGlobalEntry | Adjust::PatchSite => ([addr, 0], 1),
        }
    }

    /// Whether `ftrace_call_adjust(0)` is 0, so that a zeroed word stays an
    /// empty slot whichever comes first, the adjust or the zero test. The
    /// clang adjust reads the code at the location, which at 0 is no code.
    #[must_use]
    pub fn maps_zero_to_zero(self) -> bool {
        matches!(self, Adjust::Identity | Adjust::ClearThumbBit)
    }
}

/// Where a function's own patch site is, relative to its symbol: an arch
/// fact. It never decides whether a function is at risk; it only says,
/// in the report, why a function's record is not at its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchSite {
    /// At the symbol.
    AtSymbol,
    /// `x86_64`: after a leading `endbr64` (4 bytes) when the function has one.
    AfterEndbr64,
    /// ppc64 `ELFv2`: at the local entry point, `st_other` says how far.
    LocalEntry,
    /// arm64 patchable entries: the `BL`, 4 bytes in, 8 after a `bti`.
    ArmBl,
    /// riscv patchable entries from 6.13: 4 bytes in, past the `auipc`.
    SecondInsn,
}

/// The module memory regions the loader lays text sections out in
/// (`__layout_sections()`): a symbol can only explain a location in the
/// same region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Text,
    InitText,
}

/// Everything the decision needs to know about the target kernel.
#[allow(clippy::struct_excessive_bools, reason = "independent facts of the kernel, each read from its own source")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub arch: Arch,
    pub criterion: Criterion,
    pub section: &'static str,
    pub shape: RelocShape,
    pub max_offset: u64,
    pub adjust: Adjust,
    /// ppc64's `module_init_section()` returns false: `.init*` is core text.
    pub init_in_core: bool,
    /// Without `CONFIG_MODULE_UNLOAD`, `.exit*` goes to init memory.
    pub mod_unload: bool,
    /// Where the numbers came from, for `--verbose`.
    pub basis: &'static str,
    /// The kernel, when it is newer than [`crate::release::READ_THROUGH`].
    pub unread_release: Option<Release>,
    /// The symbol names kallsyms skips.
    pub mapping: Mapping,
    /// The nearest symbol `find_kallsyms_symbol()` finds for an address is
    /// always in the address's own memory region: the kernel bounds the
    /// search, or its regions never touch.
    pub region_bound: bool,
    /// How an entry the rule rejects is taken out of the table.
    pub neutraliser: Neutraliser,
    /// The loader fails a module whose table is empty (s390's hotpatch
    /// trampolines, sized from the table): a drop must leave a word.
    pub empty_table_fails: bool,
}

/// How an entry is taken out of the callsite table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neutraliser {
    /// Remove its relocation and zero its word, which `ftrace_process_locs()`
    /// skips. The table keeps its size: the proven path, used wherever the
    /// kernel tests the word for zero before adjusting it, or the adjust
    /// maps 0 to 0.
    Zero,
    /// Remove the word itself: later words, their relocations and the
    /// table's own symbols move down one word, and the table shrinks. For
    /// kernels that adjust a word before testing it for zero, with an
    /// adjust that moves 0: there a zeroed word becomes a bogus record.
    Drop { kernel: Release, adjust: Adjust },
}

impl Rule {
    /// The decision input for one entry: its candidate record ips, after
    /// `ftrace_call_adjust()`.
    #[must_use]
    #[allow(clippy::inline_always, reason = "once per entry in the relocation walk of kept::all_kept")]
    #[inline(always)]
    pub fn input(&self, image: &[u8], info: &ElfInfo, entry: &Entry) -> Input {
        match &entry.target {
            Target::Odd(why) => Input::Odd((**why).clone()),
            &Target::At { section, offset } => {
                // Only clang's ppc64 adjust reads the code at the location,
                // for the global-entry pair: touching .text for every entry
                // on every arch would double the pages we fault in.
                let insn = |bytes: &[u8]| crate::elf::read_uint(bytes, info.big_endian);
                let global_entry = self.adjust == Adjust::ClangGlobalEntry
                    && crate::elf::section_bytes(image, info, section, offset, 8).is_some_and(|insns| {
                        insn(&insns[..4]) == u64::from(PPC_LD_R2_R12_M8)
                            && insn(&insns[4..]) == u64::from(PPC_ADD_R2_R2_R12)
                    });
                let (ips, count) = self.adjust.candidates(offset, global_entry);
                Input::Ips { section, ips, count }
            }
        }
    }

    #[must_use]
    pub fn region(&self, section_name: &str) -> Region {
        let init = !self.init_in_core
            && (section_name.starts_with(".init") || (!self.mod_unload && section_name.starts_with(".exit")));
        if init { Region::InitText } else { Region::Text }
    }
}

/// One callsite entry, reduced to what the decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The record ip(s) the kernel may compute for the entry, as offsets into
    /// `section`; more than one when the config leaves the adjust open.
    Ips { section: u32, ips: [u64; 2], count: usize },
    /// An entry the rule does not cover, and why.
    Odd(Odd),
}

//! The per-arch rules: which callsite table the kernel reads, how it turns a
//! recorded location into a record's ip (`ftrace_call_adjust()`), and how far
//! past a symbol a valid record may lie (`FTRACE_MCOUNT_MAX_OFFSET`).
//!
//! Only x86 and powerpc define FTRACE_MCOUNT_MAX_OFFSET. Everywhere else the
//! kernel keeps weak records (named after the preceding symbol), so zeroing
//! them would hide what the kernel shows: those modules are left alone.
//!
//! Where the kernel config is unknown we pick the largest offset any config
//! could have: a larger offset only keeps more entries, a smaller one than
//! the kernel's would zero valid ones. See kernel-rules.md §0, §2 and §10.

use object::elf;

use crate::elf::{ElfInfo, RelocShape};
use crate::error::Error;
use crate::kconfig::Kconfig;

pub const MCOUNT_LOC: &str = "__mcount_loc";
pub const PATCHABLE: &str = "__patchable_function_entries";

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
}

/// `ld r2,-8(r12)` and `add r2,r2,r12` (arch/powerpc/include/asm/ppc-opcode.h).
pub const PPC_LD_R2_R12_M8: u32 = 0xe84c_fff8;
pub const PPC_ADD_R2_R2_R12: u32 = 0x7c42_6214;

impl Adjust {
    /// The candidate ips for a location; `global_entry` says whether the two
    /// instructions at the location are the clang global-entry pair.
    pub fn candidates(self, addr: u64, global_entry: bool) -> ([u64; 2], usize) {
        match self {
            Adjust::Identity => ([addr, 0], 1),
            Adjust::Add(n) => ([addr + n, 0], 1),
            Adjust::AnyOf(a, b) => ([addr + a, addr + b], 2),
            Adjust::ClangGlobalEntry if global_entry => ([addr, addr + 8], 2),
            Adjust::ClangGlobalEntry => ([addr, 0], 1),
        }
    }
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub arch: &'static str,
    pub section: &'static str,
    pub shape: RelocShape,
    pub max_offset: u64,
    pub adjust: Adjust,
    /// ppc64's `module_init_section()` returns false: `.init*` is core text.
    pub init_in_core: bool,
    /// Without CONFIG_MODULE_UNLOAD, `.exit*` goes to init memory.
    pub mod_unload: bool,
    /// Where the numbers came from, for `--verbose`.
    pub basis: String,
}

impl Rule {
    pub fn region(&self, section_name: &str) -> Region {
        let init = !self.init_in_core
            && (section_name.starts_with(".init") || (!self.mod_unload && section_name.starts_with(".exit")));
        if init { Region::InitText } else { Region::Text }
    }
}

/// The outcome of picking a rule for a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Act(Rule),
    /// The kernel does not check this module's callsites: nothing to do.
    Skip(String),
}

/// User overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub max_offset: Option<u64>,
    pub section: Option<String>,
}

/// Kernel release from vermagic (`7.2.13+deb14-amd64 SMP ...`).
pub fn kernel_version(vermagic: &str) -> Option<(u32, u32)> {
    let release = vermagic.split_whitespace().next()?;
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn arch_of(info: &ElfInfo) -> Result<&'static str, String> {
    Ok(match (info.machine, info.is_64) {
        (elf::EM_X86_64, true) => "x86_64",
        (elf::EM_386, false) => "i386",
        (elf::EM_PPC64, true) => "ppc64",
        (elf::EM_PPC, false) => "ppc32",
        (elf::EM_AARCH64, _) => "arm64",
        (elf::EM_ARM, _) => "arm",
        (elf::EM_RISCV, _) => "riscv",
        (elf::EM_S390, _) => "s390",
        (elf::EM_LOONGARCH, _) => "loongarch",
        (elf::EM_MIPS, _) => "mips",
        (elf::EM_PARISC, _) => "parisc",
        (elf::EM_SPARCV9 | elf::EM_SPARC, _) => "sparc",
        (elf::EM_SH, _) => "sh",
        (elf::EM_CSKY, _) => "csky",
        (elf::EM_MICROBLAZE, _) => "microblaze",
        (m, is_64) => return Err(format!("e_machine {m} ({}-bit)", if is_64 { 64 } else { 32 })),
    })
}

/// The Kconfig symbol that says a config was made for this arch.
fn config_arch_symbol(arch: &str) -> Option<&'static str> {
    Some(match arch {
        "x86_64" => "X86_64",
        "i386" => "X86_32",
        "ppc64" => "PPC64",
        "ppc32" => "PPC32",
        _ => return None,
    })
}

/// Pick the rule for a module, or say why there is nothing to do.
pub fn rule_for(info: &ElfInfo, config: Option<&Kconfig>, over: &Overrides) -> Result<Scope, Error> {
    let arch = match arch_of(info) {
        Ok(a) => a,
        Err(what) => {
            return Ok(Scope::Skip(format!("{what}: not an architecture whose kernel checks ftrace callsites")));
        }
    };
    let Some(cfg_symbol) = config_arch_symbol(arch) else {
        return Ok(Scope::Skip(format!(
            "{arch}: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET here, so it keeps weak callsites"
        )));
    };
    if let Some(c) = config {
        if !c.enabled(cfg_symbol) {
            return Err(Error::Config(format!("the config is not for {arch} (CONFIG_{cfg_symbol} is not set)")));
        }
        if !c.enabled("DYNAMIC_FTRACE") {
            return Ok(Scope::Skip("CONFIG_DYNAMIC_FTRACE is off: the kernel ignores the callsite table".into()));
        }
    }

    // FTRACE_MCOUNT_MAX_OFFSET appeared for x86 in 6.0. For powerpc, the
    // 7.2 rules (zero entries skipped before the adjust, out-of-line
    // patchable entries) are only established from 6.13 on; older powerpc
    // kernels are left alone rather than guessed at.
    let Some(vermagic) = info.vermagic.as_deref() else {
        return Ok(Scope::Skip("no vermagic in .modinfo: cannot tell which kernel this module is for".into()));
    };
    let Some(version) = kernel_version(vermagic) else {
        return Ok(Scope::Skip(format!("cannot read the kernel release in vermagic {vermagic:?}")));
    };
    let since = if arch.starts_with("ppc") { (6, 13) } else { (6, 0) };
    if version < since {
        return Ok(Scope::Skip(format!(
            "kernel {}.{} {}",
            version.0,
            version.1,
            if arch.starts_with("ppc") {
                "predates the powerpc rules this tool models (6.13)"
            } else {
                "predates FTRACE_MCOUNT_MAX_OFFSET (6.0): it keeps weak callsites"
            }
        )));
    }
    let mod_unload = vermagic.split_whitespace().any(|w| w == "mod_unload");
    let has = |name| info.alloc_section(name).is_some();
    let basis_cfg = if config.is_some() { "from --kconfig" } else { "no --kconfig: widest case" };

    let rule = |section, rela, abs_type, max_offset, adjust, basis: String| Rule {
        arch,
        section,
        shape: RelocShape { rela, abs_type },
        max_offset,
        adjust,
        init_in_core: arch == "ppc64",
        mod_unload,
        basis,
    };

    let mut rule = match arch {
        "x86_64" => {
            let max = match config {
                Some(c) if c.enabled("X86_KERNEL_IBT") => 4,
                Some(_) => 0,
                None => 4,
            };
            rule(
                MCOUNT_LOC,
                true,
                elf::R_X86_64_64,
                max,
                Adjust::Identity,
                format!("IBT {}", if config.is_some() { "from --kconfig" } else { "assumed: no --kconfig" }),
            )
        }
        // IBT is x86_64-only, so ENDBR_INSN_SIZE is 0 on every i386 config.
        "i386" => rule(MCOUNT_LOC, false, elf::R_386_32, 0, Adjust::Identity, "i386".into()),
        "ppc64" => {
            if info.e_flags & elf::EF_PPC64_ABI != 2 {
                return Ok(Scope::Skip("ppc64 ELFv1: the kernel does not check weak callsites".into()));
            }
            let abs = elf::R_PPC64_ADDR64;
            match config {
                Some(c) if c.enabled("ARCH_USING_PATCHABLE_FUNCTION_ENTRY") => {
                    let adjust = if !c.enabled("PPC_FTRACE_OUT_OF_LINE") {
                        Adjust::Add(if c.enabled("DYNAMIC_FTRACE_WITH_CALL_OPS") { 8 } else { 4 })
                    } else if c.enabled("CC_IS_CLANG") {
                        Adjust::ClangGlobalEntry
                    } else {
                        Adjust::Identity
                    };
                    rule(PATCHABLE, true, abs, 16, adjust, "patchable entries, from --kconfig".into())
                }
                Some(c) if c.enabled("MPROFILE_KERNEL") => {
                    rule(MCOUNT_LOC, true, abs, 16, Adjust::Identity, "-mprofile-kernel, from --kconfig".into())
                }
                Some(_) => {
                    return Ok(Scope::Skip(
                        "ppc64 with plain -pg: the kernel does not define FTRACE_MCOUNT_MAX_OFFSET".into(),
                    ));
                }
                // No table at all (a module with no traced code) is
                // nothing to do either way; say so as "no table".
                None if has(PATCHABLE) || !has(MCOUNT_LOC) => rule(
                    PATCHABLE,
                    true,
                    abs,
                    16,
                    Adjust::ClangGlobalEntry,
                    "patchable entries; compiler unknown, so both clang candidates".into(),
                ),
                None => {
                    return Ok(Scope::Skip(
                        "ppc64 with __mcount_loc: -mprofile-kernel (checked) and plain -pg (not checked) \
                         cannot be told apart without --kconfig"
                            .into(),
                    ));
                }
            }
        }
        "ppc32" => {
            let abs = elf::R_PPC_ADDR32;
            let pfe = match config {
                Some(c) => c.enabled("ARCH_USING_PATCHABLE_FUNCTION_ENTRY"),
                None => has(PATCHABLE),
            };
            if pfe {
                // The recorded location is one NOP before the function; the
                // kernel adds 4, and 4 more with DYNAMIC_FTRACE_WITH_CALL_OPS.
                let adjust = match config {
                    Some(c) if c.enabled("DYNAMIC_FTRACE_WITH_CALL_OPS") => Adjust::Add(8),
                    Some(_) => Adjust::Add(4),
                    None => Adjust::AnyOf(4, 8),
                };
                rule(PATCHABLE, true, abs, 16, adjust, format!("patchable entries, {basis_cfg}"))
            } else {
                rule(MCOUNT_LOC, true, abs, 8, Adjust::Identity, format!("-pg, {basis_cfg}"))
            }
        }
        _ => unreachable!("config_arch_symbol covers exactly these"),
    };

    if let Some(section) = &over.section
        && section != rule.section
    {
        let known = config.is_some() || !arch.starts_with("ppc");
        if known || (section != MCOUNT_LOC && section != PATCHABLE) {
            return Err(Error::Usage(format!(
                "--section {section}: the {arch} kernel{} reads {}",
                if config.is_some() { " of this config" } else { "" },
                rule.section
            )));
        }
        // ppc without a config: the caller knows which table the build uses.
        if section == MCOUNT_LOC {
            return Ok(Scope::Skip(
                "ppc with __mcount_loc: -mprofile-kernel and plain -pg cannot be told apart without --kconfig".into(),
            ));
        }
        rule.section = PATCHABLE;
    }
    if let Some(max) = over.max_offset {
        rule.max_offset = max;
        rule.basis = "--max-offset".into();
    }
    Ok(Scope::Act(rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_release_from_vermagic() {
        assert_eq!(kernel_version("7.2.13+deb14-amd64 SMP preempt mod_unload modversions"), Some((7, 2)));
        assert_eq!(kernel_version("6.1.0-57-amd64 SMP preempt mod_unload modversions"), Some((6, 1)));
        assert_eq!(kernel_version("garbage"), None);
    }

    #[test]
    fn clang_candidates_only_with_the_global_entry_pair() {
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, true), ([0x40, 0x48], 2));
        assert_eq!(Adjust::ClangGlobalEntry.candidates(0x40, false).1, 1);
        assert_eq!(Adjust::Add(8).candidates(0x40, false), ([0x48, 0], 1));
    }
}

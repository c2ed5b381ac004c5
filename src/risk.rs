// SPDX-License-Identifier: GPL-2.0-only
//! Which functions' `ftrace_location()` can resolve to a dead record: a
//! pure function over plain data (docs/at-risk.md).
//!
//! `ftrace_location(F)` (kernel/trace/ftrace.c) first looks for a record
//! that covers F itself. When F's own record sits past F (x86 with IBT:
//! after `endbr64`; ppc64 `ELFv2`: after the global-entry prologue) that
//! finds nothing, and for a symbol start it searches the whole kallsyms
//! extent [F, F + size - 1] instead. `lookup_rec()` returns the first
//! record its bsearch meets inside that range: a dead weak body's record in
//! the extent can be the answer, and then an fprobe, BPF trampoline or
//! livepatch on F attaches to the dead ip and never runs.

/// Where a function's own patch site is, relative to its symbol: an arch
/// fact, refined per function from its code or its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchSite {
    /// At the symbol: the exact lookup always finds the function's record.
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

/// One function as kallsyms sees it in the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub section: u32,
    pub start: u64,
    /// Where the next symbol starts (or the section ends): the extent the
    /// range lookup searches is `[start, end)`.
    pub end: u64,
    /// Where its own record is, if not at `start`.
    pub patch_site: u64,
}

/// One record the kernel builds from the callsite table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub section: u32,
    pub ip: u64,
    /// The kernel rejects it (a weak body's entry): neutralised, it is gone.
    pub dead: bool,
}

/// A function whose `ftrace_location()` can return a dead record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtRisk {
    pub function: String,
    pub section: String,
    pub function_addr: u64,
    pub patch_site: u64,
    pub dead_site: u64,
}

/// The functions at risk, one item per (function, dead record in its
/// extent), in function order. `insn` is `MCOUNT_INSN_SIZE`, the span
/// `ftrace_cmp_recs()` gives each record; `section_name` names sections.
#[must_use]
pub fn at_risk(
    functions: &[Function],
    records: &[Record],
    insn: u64,
    section_name: &dyn Fn(u32) -> String,
) -> Vec<AtRisk> {
    let mut sorted: Vec<(u32, u64, bool)> = records.iter().map(|r| (r.section, r.ip, r.dead)).collect();
    sorted.sort_unstable();
    let from = |section: u32, ip: u64| sorted.partition_point(|&(s, i, _)| (s, i) < (section, ip));
    let mut out = Vec::new();
    for f in functions {
        if f.patch_site == f.start {
            continue;
        }
        // The exact lookup [F, F]: any record whose span covers F.
        let lo = from(f.section, f.start.saturating_sub(insn - 1));
        let covered = sorted[lo..].iter().take_while(|&&(s, i, _)| s == f.section && i <= f.start).next().is_some();
        if covered {
            continue;
        }
        let lo = from(f.section, f.start);
        for &(_, ip, _) in sorted[lo..].iter().take_while(|&&(s, i, _)| s == f.section && i < f.end).filter(|r| r.2) {
            out.push(AtRisk {
                function: f.name.clone(),
                section: section_name(f.section),
                function_addr: f.start,
                patch_site: f.patch_site,
                dead_site: ip,
            });
        }
    }
    out
}

/// The records once the dead ones are neutralised.
#[must_use]
pub fn after(records: &[Record]) -> Vec<Record> {
    records.iter().filter(|r| !r.dead).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, start: u64, end: u64, patch: u64) -> Function {
        Function { name: name.into(), section: 1, start, end, patch_site: start + patch }
    }

    fn r(ip: u64, dead: bool) -> Record {
        Record { section: 1, ip, dead }
    }

    fn names(v: &[AtRisk]) -> Vec<(&str, u64)> {
        v.iter().map(|a| (a.function.as_str(), a.dead_site)).collect()
    }

    const NAME: &dyn Fn(u32) -> String = &|_| ".text".to_string();

    /// kvm.ko's shape: F with endbr64 (record at F+4), a weak body later in
    /// F's extent; G without endbr64 (record at G); H with a record at F+4
    /// and no dead body.
    #[test]
    fn a_dead_record_in_the_extent_of_a_function_patched_past_its_start() {
        let functions = [f("f", 0x100, 0x200, 4), f("g", 0x200, 0x300, 0), f("h", 0x300, 0x400, 4)];
        let records = [r(0x104, false), r(0x180, true), r(0x200, false), r(0x280, true), r(0x304, false)];
        let risk = at_risk(&functions, &records, 5, NAME);
        assert_eq!(names(&risk), [("f", 0x180)]);
        assert_eq!((risk[0].function_addr, risk[0].patch_site, risk[0].section.as_str()), (0x100, 0x104, ".text"));
        // Processed: the dead records are gone, nothing is at risk.
        assert!(at_risk(&functions, &after(&records), 5, NAME).is_empty());
    }

    /// The extent ends at the next symbol: a dead record past it belongs
    /// to that symbol's extent, not F's; one exactly at F's end is out.
    #[test]
    fn only_the_extent_counts() {
        let functions = [f("f", 0x100, 0x180, 4)];
        assert!(at_risk(&functions, &[r(0x104, false), r(0x180, true)], 5, NAME).is_empty());
        assert_eq!(names(&at_risk(&functions, &[r(0x104, false), r(0x17f, true)], 5, NAME)), [("f", 0x17f)]);
    }

    /// A record whose span covers F answers the exact lookup first: then
    /// the range lookup never runs.
    #[test]
    fn a_record_covering_the_symbol_answers_first() {
        let functions = [f("f", 0x100, 0x200, 4)];
        assert!(at_risk(&functions, &[r(0xfc, false), r(0x180, true)], 5, NAME).is_empty());
        assert_eq!(names(&at_risk(&functions, &[r(0xfb, false), r(0x180, true)], 5, NAME)), [("f", 0x180)]);
    }

    /// Other sections' records are not in F's extent, and a function
    /// without its own record but with a dead one in its extent is at risk.
    #[test]
    fn sections_apart_and_functions_without_a_record() {
        let functions = [f("f", 0x100, 0x200, 4)];
        let other = Record { section: 2, ip: 0x180, dead: true };
        assert!(at_risk(&functions, &[other], 5, NAME).is_empty());
        assert_eq!(
            names(&at_risk(&functions, &[r(0x150, true), r(0x160, true)], 5, NAME)),
            [("f", 0x150), ("f", 0x160)]
        );
    }
}

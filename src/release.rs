// SPDX-License-Identifier: GPL-2.0-only
//! Every kernel release at which a rule changes, in one place: the rows of
//! [`crate::arch`] start and end at these, and [`KernelFacts`] holds what
//! depends on the release alone, whatever the arch. A new kernel release
//! that changes a rule is a constant here (docs/rules.md, "Adding a kernel
//! release").

use crate::elf::Mapping;
use crate::rule::{Release, release};

/// The oldest release whose source the rows were read in (Debian
/// bullseye's 5.10.223); older kernels are left alone.
pub const OLDEST_READ: Release = release(5, 10, 0);

/// The newest release whose source the rows were checked against. A newer
/// kernel gets the newest rows, because the rules have held unchanged from
/// 6.15 through this release, but with a warning: see docs/rules.md,
/// "Newer kernels".
pub const READ_THROUGH: (u32, u32) = (7, 3);

/// `FTRACE_MCOUNT_MAX_OFFSET` and `test_for_valid_rec()`: x86 from 6.0
/// (b39181f7c690; 5.19 not read, so taken to lack them: the containment
/// rule it then gets keeps at least what the offset rule keeps), powerpc
/// from 6.2 (7af82ff90a2b). Before them the kernel keeps every record.
pub const MAX_OFFSET_SINCE_X86: Release = release(6, 0, 0);
pub const MAX_OFFSET_SINCE_PPC: Release = release(6, 2, 0);

/// powerpc's patchable function entries (`-fpatchable-function-entry=2`,
/// arch/powerpc/Makefile) and their adjust of +4.
pub const PPC_PATCHABLE_SINCE: Release = release(6, 6, 0);

/// powerpc's out-of-line ftrace stubs and `CALL_OPS`
/// (arch/powerpc/kernel/trace/ftrace.c), and riscv's adjust past the
/// `auipc` (arch/riscv/kernel/ftrace.c).
pub const PATCH_SITE_SINCE: Release = release(6, 13, 0);

/// loongarch was read in 6.12 only, and no older Debian kernel exists for
/// it: older ones are left alone.
pub const LOONGARCH_READ_SINCE: Release = release(6, 12, 0);

/// 6.12 is the oldest release read with kallsyms' wider set of skipped
/// mapping symbols; a narrower set counts more symbols, which can only keep
/// more entries.
pub const ALL_MAPPING_SYMBOLS_SINCE: Release = release(6, 12, 0);

/// The releases whose `ftrace_process_locs()` (kernel/trace/ftrace.c) tests
/// a callsite word for zero before `ftrace_call_adjust()`: commit 6eeca746fa5f
/// ("ftrace: Test `mcount_loc` addr before calling `ftrace_call_addr()`"), in
/// 6.15 and backported to 6.12.95 and 6.6.144, never to 6.1. Each entry is a
/// stable line and the first release of it with the fix.
pub static ZERO_SKIPPED_FIRST: &[Release] = &[release(6, 6, 144), release(6, 12, 95), release(6, 15, 0)];

/// The releases whose `find_kallsyms_symbol()` (kernel/module/kallsyms.c)
/// bounds the search to the address's memory region (commit 0e9f090a4e9b):
/// the earliest of each line known to have it; 7.3 is its mainline release.
pub static REGION_BOUND_FIRST: &[Release] = &[release(6, 12, 117), release(7, 2, 13), release(7, 3, 0)];

/// Before 6.13 each module memory region was a vmalloc area of its own, with
/// a guard page after it, so the nearest symbol below an address was never in
/// another region. 6.13 brought x86's shared cache of executable pages
/// (`EXECMEM_ROX_CACHE`), which can place regions side by side.
pub const REGIONS_MAY_TOUCH_SINCE: Release = release(6, 13, 0);

/// What a kernel release alone decides, on every arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFacts {
    /// The kernel tests a callsite word for zero before adjusting it.
    /// Elsewhere a zeroed entry is adjusted first, and if the adjust maps 0
    /// to a non-zero ip the kernel builds a record there, fails to patch it
    /// and turns ftrace off.
    pub skips_zero_before_adjust: bool,
    /// The symbol names kallsyms skips.
    pub mapping: Mapping,
    /// The nearest symbol `find_kallsyms_symbol()` finds is always in the
    /// address's own memory region.
    pub region_bound: bool,
    /// The release is newer than [`READ_THROUGH`].
    pub unread: bool,
}

impl KernelFacts {
    #[must_use]
    pub fn of(kernel: Release) -> KernelFacts {
        KernelFacts {
            skips_zero_before_adjust: in_fixed_line(kernel, ZERO_SKIPPED_FIRST),
            mapping: if kernel >= ALL_MAPPING_SYMBOLS_SINCE { Mapping::All } else { Mapping::Arm },
            region_bound: kernel < REGIONS_MAY_TOUCH_SINCE || in_fixed_line(kernel, REGION_BOUND_FIRST),
            unread: (kernel.major, kernel.minor) > READ_THROUGH,
        }
    }
}

/// Whether `kernel` has a fix whose first release on each stable line, and
/// last on mainline, `firsts` lists in order.
fn in_fixed_line(kernel: Release, firsts: &[Release]) -> bool {
    let mainline = firsts[firsts.len() - 1];
    kernel >= mainline
        || firsts
            .iter()
            .any(|first| (kernel.major, kernel.minor) == (first.major, first.minor) && kernel.patch >= first.patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_first_by_stable_line() {
        let skips = |a, b, c| KernelFacts::of(release(a, b, c)).skips_zero_before_adjust;
        assert!(!skips(6, 1, 192), "6.1.y never got the fix");
        assert!(!skips(6, 6, 143) && skips(6, 6, 144));
        assert!(!skips(6, 12, 94) && skips(6, 12, 95) && skips(6, 12, 107));
        assert!(!skips(6, 13, 7) && !skips(6, 14, 11), "no backport known: adjust first");
        assert!(skips(6, 15, 0) && skips(7, 2, 13) && skips(8, 0, 0));
        assert!(!skips(6, 11, 200), "a line without the fix stays without it");
    }

    #[test]
    fn region_bound_by_stable_line() {
        let bound = |a, b, c| KernelFacts::of(release(a, b, c)).region_bound;
        assert!(bound(6, 12, 0), "regions never touched before 6.13");
        assert!(!bound(6, 13, 0) && !bound(7, 2, 12) && bound(7, 2, 13) && bound(7, 3, 0));
        assert!(!KernelFacts::of(release(7, 3, 9)).unread && KernelFacts::of(release(7, 4, 0)).unread);
    }
}

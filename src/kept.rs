// SPDX-License-Identifier: GPL-2.0-only
//! Whether the offset rule keeps every entry of a module, answered while
//! it is read and keeping nothing: most modules have no dead entry, and
//! theirs are never stored, sorted or laid out. An entry counts as kept
//! here only where a function of its section longer than `max` bytes
//! starts at most `max` bytes below one of its candidate ips: a symbol
//! lies within `max` bytes and a function contains the ip, so the full
//! decision ([`crate::decide`]) keeps it too, which debug builds check on
//! every module answered here (`process::decide_module`). Shorter
//! functions leave their entries to the full decision.

#![allow(
    clippy::cast_possible_truncation,
    reason = "block addresses are 32 bits (Blocks::new checks the total) and offsets within a block 16 (a block is 2^15 bytes at most)"
)]

use std::ops::ControlFlow;

use crate::elf::{self, ElfInfo, Entry, LookupSymbol, Section};
use crate::error::Error;
use crate::rule::{Criterion, Input, Rule};

/// Windows narrower than this, blocks of at most `2^MAX_SHIFT` bytes: the
/// 16-bit scan of [`Blocks::any_within`] is exact while a window and a
/// block fit in 2^16. Every arch's max offset is 16 at most; a wider
/// override goes to the full decision.
const MAX_WINDOW: u64 = 32;
const MAX_SHIFT: u32 = 15;

/// The most symbols a block may hold: a window is answered by a scan of
/// its blocks, so that scan stays short. A module with a fuller block
/// (many aliases at one address) goes to the full decision.
const BLOCK_CAP: u32 = 128;

/// `Some(entries)` when the offset rule keeps every entry of the callsite
/// table `callsite`, `None` when the full decision must run: also for the
/// containment rule, a window of `MAX_WINDOW` bytes or more, a function
/// past its section's end, a block over `BLOCK_CAP`, relocations out of
/// order (two may share a word), or no relocation section. The reading is
/// [`elf::read`], with [`elf::extract`]'s checks in its order: an error
/// here is the one the full decision would meet.
///
/// # Errors
///
/// Those of [`elf::extract`], for the same module.
pub fn all_kept(image: &[u8], info: &ElfInfo, callsite: usize, rule: &Rule) -> Result<Option<usize>, Error> {
    if rule.criterion != Criterion::MaxOffset || rule.max_offset >= MAX_WINDOW {
        return Ok(None);
    }
    let mut kept = AllKept { image, info, rule, blocks: Blocks::default(), entries: 0 };
    let read = elf::read(image, info, callsite, rule.shape, rule.mapping, &mut kept)?;
    let complete = read.table().is_some_and(|read| read.ascending && !read.stopped);
    Ok(complete.then_some(kept.entries))
}

/// The functions' starts, by block: the code sections side by side (each
/// as long as its header says, plus one byte for a label at its end,
/// rounded up to whole blocks), cut into blocks of `2^shift` bytes, and
/// for each block the offsets in it of the functions it holds. Counted in
/// the symbol walk, filled in once it ends (a counting sort by block):
/// callsites come in address order, so their blocks are read in order
/// too.
#[derive(Debug, Default)]
struct Blocks {
    shift: u32,
    /// By section index: where the section starts in the blocks' address
    /// space, and how many bytes of it are covered (0: not code).
    sections: Vec<(u32, u32)>,
    /// Each function's address in that space, in table order, until
    /// `fill`: the first `added` slots of one zeroed allocation, of which
    /// only the pages written into cost anything (a push's growth check
    /// would be a call in the walk).
    addresses: Vec<u32>,
    added: usize,
    /// By block: how many functions it holds, then (after `fill`) where
    /// its offsets start in `offsets`; one more slot at the end.
    starts: Vec<u32>,
    offsets: Vec<u16>,
    /// Every function fitted and no block is past [`BLOCK_CAP`].
    usable: bool,
}

impl Blocks {
    /// The blocks for the code sections of `sections`, sized for at most
    /// `symbols` symbols: about four a block on average, 16 bytes at the
    /// least (below that every window would cross blocks), `2^MAX_SHIFT`
    /// at the most.
    fn new(sections: &[Section], symbols: usize) -> Blocks {
        let total: u64 = sections.iter().filter(|s| s.is_alloc_exec()).map(|s| s.size + 1).sum();
        let wanted = (symbols / 4).max(1) as u64;
        let mut shift = 4;
        while shift < MAX_SHIFT && total >> shift > wanted {
            shift += 1;
        }
        Blocks::with_shift(sections, symbols, shift)
    }

    fn with_shift(sections: &[Section], symbols: usize, shift: u32) -> Blocks {
        let block = 1u64 << shift;
        let mut at = 0u64;
        let mut spans = Vec::with_capacity(sections.len());
        for s in sections {
            let covered = if s.is_alloc_exec() { (s.size + 1).div_ceil(block) * block } else { 0 };
            spans.push((at, covered));
            at += covered;
        }
        // The address space is 32 bits: a module with more code than that
        // goes to the full decision.
        let Ok(end) = u32::try_from(at) else { return Blocks::default() };
        Blocks {
            shift,
            sections: spans.into_iter().map(|(at, covered)| (at as u32, covered as u32)).collect(),
            addresses: vec![0; symbols],
            added: 0,
            starts: vec![0; (end >> shift) as usize + 1],
            offsets: Vec::new(),
            usable: true,
        }
    }

    /// Count a function at `value` of `section`; false when it does not
    /// fit.
    #[inline]
    fn add(&mut self, section: u32, value: u64) -> bool {
        let address = self
            .sections
            .get(section as usize)
            .filter(|&&(_, covered)| value < u64::from(covered) && self.usable)
            .map(|&(at, _)| at + value as u32);
        let (Some(address), Some(slot)) = (address, self.addresses.get_mut(self.added)) else {
            self.usable = false;
            return false;
        };
        *slot = address;
        self.added += 1;
        self.starts[(address >> self.shift) as usize] += 1;
        true
    }

    /// The counting sort's second half: each block's count becomes where
    /// its offsets start, and each function's offset is put in its block.
    fn fill(&mut self) {
        if !self.usable || self.starts.iter().any(|&n| n > BLOCK_CAP) {
            self.usable = false;
            return;
        }
        // Each slot first holds where its block ends; the offsets are put
        // in from there down, which leaves it where its block starts.
        let mut end = 0;
        for n in &mut self.starts {
            end += *n;
            *n = end;
        }
        self.offsets = vec![0; self.added];
        let mask = (1u32 << self.shift) - 1;
        for &address in &self.addresses[..self.added] {
            let start = &mut self.starts[(address >> self.shift) as usize];
            *start -= 1;
            self.offsets[*start as usize] = (address & mask) as u16;
        }
        self.addresses = Vec::new();
    }

    /// Whether a function of `section` starts at `low..=high` (both in
    /// the section's covered bytes; otherwise false).
    #[allow(clippy::inline_always, reason = "inlined into the relocation walk, with Rule::input")]
    #[inline(always)]
    fn any_within(&self, section: u32, low: u64, high: u64) -> bool {
        let Some(&(at, covered)) = self.sections.get(section as usize) else { return false };
        if high >= u64::from(covered) || low > high {
            return false;
        }
        let (low, high) = (at + low as u32, at + high as u32);
        let span = high - low;
        debug_assert!(u64::from(span) < MAX_WINDOW && self.shift <= MAX_SHIFT, "the 16-bit scan's bound");
        // In 16 bits an offset's distance above `low` is exact (a window
        // and a block fit in 2^16), and one below it wraps past any span:
        // one compare an offset, eight to a vector compare.
        let span = span as u16;
        let mut block = low >> self.shift;
        loop {
            let (start, end) = (self.starts[block as usize] as usize, self.starts[block as usize + 1] as usize);
            // `low` in the block's own terms.
            let from = low.wrapping_sub(block << self.shift) as u16;
            // Every offset of the block, no early exit: where the hit is
            // varies from entry to entry, and an exit there mispredicts.
            if self.offsets[start..end].iter().fold(false, |hit, &o| hit | (o.wrapping_sub(from) <= span)) {
                return true;
            }
            if block == high >> self.shift {
                return false;
            }
            block += 1;
        }
    }
}

/// [`all_kept`]'s visitor: each function longer than `max` counted into
/// its block, each entry asked of the blocks, nothing else kept.
struct AllKept<'r> {
    image: &'r [u8],
    info: &'r ElfInfo,
    rule: &'r Rule,
    blocks: Blocks,
    /// Entries found kept so far.
    entries: usize,
}

impl elf::Visit for AllKept<'_> {
    fn start(&mut self, symbols: usize, _relocations: usize) {
        self.blocks = Blocks::new(&self.info.sections, symbols);
    }

    #[inline]
    fn symbol(&mut self, symbol: LookupSymbol) -> ControlFlow<()> {
        // Any ip at most `max` bytes past a longer function's start lies
        // inside it; a shorter one (or one of no size) keeps nothing here.
        if symbol.size <= self.rule.max_offset || self.blocks.add(symbol.section, symbol.value) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }

    fn symbols_read(&mut self) -> ControlFlow<()> {
        self.blocks.fill();
        if self.blocks.usable { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    }

    #[allow(
        clippy::inline_always,
        reason = "inlined into the relocation walk, with Blocks::any_within and Rule::input"
    )]
    #[inline(always)]
    fn entry(&mut self, entry: Entry) -> ControlFlow<()> {
        let kept = match self.rule.input(self.image, self.info, &entry) {
            Input::Ips { section, ips, count } => {
                let max = self.rule.max_offset;
                let within = |ip: u64| self.blocks.any_within(section, ip.saturating_sub(max), ip);
                within(ips[0]) || (count > 1 && within(ips[1]))
            }
            Input::Odd(_) => false,
        };
        if kept {
            self.entries += 1;
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::tests::{text, xorshift};

    fn no_code(size: u64) -> Section {
        Section { flags: 0, ..text("", size) }
    }

    /// What [`Blocks::any_within`] must answer, by a scan of every start.
    fn any(functions: &[(u32, u64)], section: u32, low: u64, high: u64) -> bool {
        functions.iter().any(|&(s, value)| s == section && (low..=high).contains(&value))
    }

    fn filled(sections: &[Section], functions: &[(u32, u64)], shift: u32) -> Blocks {
        let mut blocks = Blocks::with_shift(sections, functions.len(), shift);
        for &(section, value) in functions {
            assert!(blocks.add(section, value));
        }
        blocks.fill();
        assert!(blocks.usable);
        blocks
    }

    #[test]
    fn the_blocks_agree_with_a_scan_at_every_width_and_block_size() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // Section 2 is no code; 1 and 3 are, of sizes that are no
        // multiple of a block, each longer than the widest block.
        let sections = [no_code(0), text(".text", 0x9345), no_code(900), text(".x", 0x8765)];
        for shift in 4..=MAX_SHIFT {
            // About 25 functions a block, where a block may hold 128.
            let n = 1000.min(50 * ((0x9345 + 0x8765) >> shift));
            let functions: Vec<(u32, u64)> =
                (0..n).map(|i| ([1, 3][i % 2], next() % sections[[1, 3][i % 2]].size)).collect();
            let blocks = filled(&sections, &functions, shift);
            for max in 0..MAX_WINDOW {
                let (mut hits, mut misses, mut crossing) = (0, 0, 0);
                for i in 0..300 {
                    // Half anywhere, half within max bytes past a function.
                    let (section, ip) = if i % 2 == 0 {
                        let section = [1, 3][(next() % 2) as usize];
                        (section, next() % sections[section as usize].size)
                    } else {
                        let (section, value) = functions[next() as usize % n];
                        (section, (value + next() % (max + 1)).min(sections[section as usize].size - 1))
                    };
                    let low = ip.saturating_sub(max);
                    let want = any(&functions, section, low, ip);
                    assert_eq!(blocks.any_within(section, low, ip), want, "shift {shift} {section}:{low:#x}..={ip:#x}");
                    *if want { &mut hits } else { &mut misses } += 1;
                    crossing += usize::from(want && low >> shift != ip >> shift);
                }
                // Both answers came up, and windows across two blocks where
                // blocks are small: the comparison is not vacuous.
                assert!(hits > 100 && misses > 20, "shift {shift} max {max}: {hits} {misses}");
                assert!(shift > 6 || max < 8 || crossing > 5, "shift {shift} max {max}: {crossing} crossing");
            }
        }
        assert!(!filled(&sections, &[(1, 0), (3, 0)], 4).any_within(2, 0, 16), "no code, no function");
    }

    #[test]
    fn what_the_blocks_cannot_hold_leaves_them_unusable() {
        let sections = [no_code(0), text(".text", 0x100)];
        // A function past the section's covered bytes (0x101 rounded up).
        let mut blocks = Blocks::new(&sections, 4);
        assert!(blocks.add(1, 0x100), "a label at the end fits");
        assert!(!blocks.add(1, 0x200));
        blocks.fill();
        assert!(!blocks.usable);
        // More functions in a block than BLOCK_CAP.
        let mut blocks = Blocks::new(&sections, 200);
        for _ in 0..=BLOCK_CAP {
            assert!(blocks.add(1, 0x10));
        }
        blocks.fill();
        assert!(!blocks.usable);
        // At the cap, still usable.
        let mut blocks = Blocks::new(&sections, 200);
        for _ in 0..BLOCK_CAP {
            assert!(blocks.add(1, 0x10));
        }
        blocks.fill();
        assert!(blocks.usable && blocks.any_within(1, 0x10, 0x10) && !blocks.any_within(1, 0x11, 0x20));
        // More functions than the blocks were sized for.
        let mut blocks = Blocks::new(&sections, 2);
        assert!(blocks.add(1, 0x10) && blocks.add(1, 0x20));
        assert!(!blocks.add(1, 0x30));
        blocks.fill();
        assert!(!blocks.usable);
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! Which functions' `ftrace_location()` can resolve to a dead record,
//! decided as the kernel decides it, from the records and the laid-out
//! symbols alone (docs/at-risk.md).
//!
//! `ftrace_location(F)` (kernel/trace/ftrace.c) first looks for a record
//! that covers F itself. When none does (F's record sits past F, or F has
//! no record at all), and F is a symbol start, it searches F's whole
//! kallsyms extent: from F to the next symbol `find_kallsyms_symbol()`
//! sees in F's memory region, which may lie in a later text section.
//! `lookup_rec()` returns the first record its bsearch meets inside that
//! range: a dead weak body's record in the extent can be the answer, and
//! then an fprobe, BPF trampoline or livepatch on F attaches to the dead
//! ip and never runs.
//!
//! Nothing here runs for a module without a dead record: the caller asks
//! only when there is one, and [`at_risk`] returns at once otherwise.

use crate::decide::SymbolIndex;
use crate::elf::{LookupSymbol, Section};
use crate::rule::Region;

/// Where the module loader puts a text section: its memory region and its
/// offset from the start of that region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub region: Region,
    pub base: u64,
}

/// The text sections as the loader lays them out (`__layout_sections()`
/// and `module_get_offset_and_type()` in kernel/module/main.c): each
/// region takes its sections in section-header order, each one starting at
/// the next multiple of its `sh_addralign`. `None` for a section that is
/// not allocated executable code. Also returns each region's size.
fn lay_out(sections: &[Section], region: impl Fn(&str) -> Region) -> (Vec<Option<Place>>, [u64; 2]) {
    let mut size = [0u64; 2];
    let places = sections
        .iter()
        .map(|s| {
            if !s.is_alloc_exec() {
                return None;
            }
            let r = region(&s.name);
            let end = &mut size[r as usize];
            let base = end.checked_next_multiple_of(s.align.max(1)).unwrap_or(u64::MAX);
            *end = base.saturating_add(s.size);
            Some(Place { region: r, base })
        })
        .collect();
    (places, size)
}

/// One record the kernel builds from the callsite table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub section: u32,
    /// The location the table gives, after the adjust the rule applies.
    pub ip: u64,
    /// The kernel rejects it (a weak body's entry): neutralised, it is gone.
    pub dead: bool,
    /// Its word's offset in the callsite table: what names it in the
    /// report's findings on every arch, where its ip may differ from the
    /// finding's location by the adjust.
    pub table_offset: u64,
}

/// The module as the lookup sees it.
pub struct Module<'s, 'a> {
    symbols: &'s SymbolIndex<'a>,
    places: Vec<Option<Place>>,
    /// Each region's size: where an extent ends when no symbol follows.
    region_size: [u64; 2],
    /// Per region, the text sections that hold symbols, in laid-out order.
    texts: [Vec<Text>; 2],
    /// Per region: a symbol lies past its section's end, so laid-out order
    /// is not section order and every lookup asks every section.
    overhang: [bool; 2],
    /// `MCOUNT_INSN_SIZE`, the span `ftrace_cmp_recs()` gives each record.
    insn: u64,
    /// How far past `Record::ip` the kernel's record is, at least: on the
    /// arches whose adjust moves the location to the patched instruction
    /// (arm64, riscv from 6.13) it is never the location itself.
    lead: u64,
}

/// A text section with symbols: where it is laid out, and its first symbol.
#[derive(Debug, Clone, Copy)]
struct Text {
    section: u32,
    base: u64,
    first: u64,
}

/// A function whose `ftrace_location()` can return a dead record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub function: LookupSymbol,
    /// F's own record: the first live one in its extent, if it has one.
    pub own: Option<Record>,
    /// A dead record covers F itself, so the exact lookup can return it.
    pub covered_by_dead: bool,
    pub dead: Record,
}

/// A function at risk, as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtRisk {
    pub function: String,
    pub section: String,
    pub function_addr: u64,
    /// F's own record, in F's section; `None` when F has none there (a
    /// `notrace` function).
    pub patch_site: Option<u64>,
    /// A dead record covers F itself: the exact lookup can return it.
    pub covered_by_dead: bool,
    pub dead_section: String,
    pub dead_site: u64,
    /// The dead record's word in the callsite table (a finding's
    /// `table_offset`).
    pub dead_table_offset: u64,
    /// The arch's reason for F's record to sit past F, where it has one.
    pub why: Option<&'static str>,
}

/// The report's items (one per dead record a function's lookup can
/// return) grouped by function, each function once, in laid-out order:
/// [`at_risk`] gives a function's items one after another.
pub fn by_function(list: &[AtRisk]) -> impl Iterator<Item = &[AtRisk]> {
    list.chunk_by(|a, b| (a.function_addr, &a.section, &a.function) == (b.function_addr, &b.section, &b.function))
}

/// A laid-out address: region, then offset in it.
type At = (Region, u64);

impl<'s, 'a> Module<'s, 'a> {
    /// The module's text as `lay_out` places it, `region` naming each
    /// section's region; `insn` and `lead` as the fields say.
    #[must_use]
    pub fn new(
        symbols: &'s SymbolIndex<'a>,
        sections: &[Section],
        region: impl Fn(&str) -> Region,
        insn: u64,
        lead: u64,
    ) -> Self {
        let (places, region_size) = lay_out(sections, region);
        let (mut texts, mut overhang) = ([Vec::new(), Vec::new()], [false; 2]);
        for (i, (place, s)) in places.iter().zip(sections).enumerate() {
            let (Some(p), Ok(section)) = (place, u32::try_from(i)) else { continue };
            let mut in_section = symbols.in_section(section);
            if let Some(first) = in_section.next() {
                let last = in_section.next_back().unwrap_or(first);
                overhang[p.region as usize] |= last.value > s.size;
                texts[p.region as usize].push(Text { section, base: p.base, first: first.value });
            }
        }
        Module { symbols, places, region_size, texts, overhang, insn, lead }
    }

    fn at(&self, section: u32, offset: u64) -> Option<At> {
        let p = (*self.places.get(section as usize)?)?;
        Some((p.region, p.base.saturating_add(offset)))
    }

    /// The symbol `find_kallsyms_symbol()` names `at` after: the nearest at
    /// or below it in the region, whichever text section it is in. Without
    /// an overhang, it is in the last section laid out at or below `at`, or
    /// else the last symbol of the one before.
    fn symbol_at_or_below(&self, (region, addr): At) -> Option<(u64, LookupSymbol)> {
        let texts = &self.texts[region as usize];
        let below = &texts[..texts.partition_point(|t| t.base <= addr)];
        let asked = if self.overhang[region as usize] { below } else { &below[below.len().saturating_sub(2)..] };
        let mut best: Option<(u64, LookupSymbol)> = None;
        for t in asked {
            if let Some(sym) = self.symbols.at_or_below(t.section, addr - t.base) {
                let laid = t.base.saturating_add(sym.value);
                if best.is_none_or(|(b, _)| laid > b) {
                    best = Some((laid, sym));
                }
            }
        }
        best
    }

    /// Where the kallsyms extent of a symbol at `at` ends: the nearest
    /// symbol above it in the region, or the region's end. Without an
    /// overhang, it is in the last section laid out at or below `at`, or
    /// else the first symbol of the next one.
    fn extent_end(&self, (region, addr): At) -> u64 {
        let texts = &self.texts[region as usize];
        let at = texts.partition_point(|t| t.base <= addr);
        let asked = if self.overhang[region as usize] {
            texts
        } else {
            &texts[at.saturating_sub(1)..(at + 1).min(texts.len())]
        };
        let mut end = self.region_size[region as usize];
        for t in asked {
            let next = if t.base > addr { Some(t.first) } else { self.symbols.next_above(t.section, addr - t.base) };
            if let Some(v) = next {
                end = end.min(t.base.saturating_add(v));
            }
        }
        end
    }
}

/// The functions at risk, one item per (function, dead record its lookup
/// can return), in laid-out order.
#[must_use]
pub fn at_risk(module: &Module<'_, '_>, records: &[Record]) -> Vec<Found> {
    if !records.iter().any(|r| r.dead) {
        return Vec::new();
    }
    let mut laid: Vec<(At, Record)> =
        records.iter().filter_map(|r| Some((module.at(r.section, r.ip.saturating_add(module.lead))?, *r))).collect();
    laid.sort_unstable_by_key(|&((region, addr), r)| (region as u8, addr, r.section, r.ip));
    let from = |at: At| laid.partition_point(|&((r, a), _)| (r as u8, a) < (at.0 as u8, at.1));
    // The only function whose extent can hold a dead record is the symbol
    // the kernel names that record after.
    let mut functions: Vec<(At, LookupSymbol)> = laid
        .iter()
        .filter(|(_, r)| r.dead)
        .filter_map(|&(at, _)| module.symbol_at_or_below(at).map(|(addr, sym)| ((at.0, addr), sym)))
        .collect();
    functions.dedup_by_key(|&mut (at, _)| at);
    let mut out = Vec::new();
    for (f, function) in functions {
        // The exact lookup [F, F]: every record whose span covers F.
        let covering = &laid[from((f.0, f.1.saturating_sub(module.insn - 1)))..from((f.0, f.1 + 1))];
        let (candidates, covered_by_dead) = if covering.is_empty() {
            let end = module.extent_end(f);
            (&laid[from(f)..from((f.0, end))], false)
        } else {
            (covering, true)
        };
        let own = candidates.iter().map(|&(_, r)| r).find(|r| !r.dead);
        for &(_, dead) in candidates.iter().filter(|(_, r)| r.dead) {
            out.push(Found { function, own, covered_by_dead, dead });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::tests::{region, xorshift};

    const STRINGS: &[u8] = b"\0f\0g\0h\0";

    fn sym(section: u32, value: u64, name: u32) -> LookupSymbol {
        LookupSymbol { section, value, name, size: 0 }
    }

    fn text(name: &str, size: u64, align: u64) -> Section {
        Section { offset: 0, align, ..crate::decide::tests::text(name, size) }
    }

    fn r(section: u32, ip: u64, dead: bool) -> Record {
        Record { section, ip, dead, table_offset: 0 }
    }

    /// `(name, dead section, dead ip)` of each item.
    fn run(sections: &[Section], symbols: &[LookupSymbol], records: &[Record], lead: u64) -> Vec<(u8, u32, u64)> {
        let index = SymbolIndex::from_vec(symbols.to_vec(), STRINGS);
        let m = Module::new(&index, sections, region, 5, lead);
        at_risk(&m, records).iter().map(|x| (STRINGS[x.function.name as usize], x.dead.section, x.dead.ip)).collect()
    }

    fn one_text() -> Vec<Section> {
        vec![Section { flags: 0, ..text("", 0, 0) }, text(".text", 0x400, 16)]
    }

    /// kvm.ko's shape: f with its record at f+4 (after endbr64), a weak
    /// body later in its extent; g with its record at g; h with a record
    /// at h+4 and no dead body.
    #[test]
    fn a_dead_record_in_the_extent_of_a_function_its_own_record_does_not_cover() {
        let symbols = [sym(1, 0x100, 1), sym(1, 0x200, 3), sym(1, 0x300, 5)];
        let records =
            [r(1, 0x104, false), r(1, 0x180, true), r(1, 0x200, false), r(1, 0x280, true), r(1, 0x304, false)];
        assert_eq!(run(&one_text(), &symbols, &records, 0), [(b'f', 1, 0x180)]);
        // Processed: the dead records are gone, nothing is at risk.
        let live: Vec<Record> = records.iter().filter(|r| !r.dead).copied().collect();
        assert!(run(&one_text(), &symbols, &live, 0).is_empty());
    }

    /// A function with no record at all (notrace) is searched the same way.
    #[test]
    fn a_function_without_a_record() {
        let symbols = [sym(1, 0x100, 1), sym(1, 0x200, 3)];
        assert_eq!(
            run(&one_text(), &symbols, &[r(1, 0x150, true), r(1, 0x160, true)], 0),
            [(b'f', 1, 0x150), (b'f', 1, 0x160)]
        );
    }

    /// The extent ends at the next symbol: a dead record past it belongs to
    /// that symbol's extent (here g's own record covers g); one a byte
    /// before it is F's.
    #[test]
    fn only_the_extent_counts() {
        let symbols = [sym(1, 0x100, 1), sym(1, 0x180, 3)];
        assert!(run(&one_text(), &symbols, &[r(1, 0x104, false), r(1, 0x181, true), r(1, 0x180, false)], 0).is_empty());
        assert_eq!(run(&one_text(), &symbols, &[r(1, 0x104, false), r(1, 0x17f, true)], 0), [(b'f', 1, 0x17f)]);
    }

    /// A record whose span covers F answers the exact lookup first; a dead
    /// one that does is what it returns.
    #[test]
    fn a_record_covering_the_symbol_answers_first() {
        let symbols = [sym(1, 0x100, 1)];
        assert!(run(&one_text(), &symbols, &[r(1, 0xfc, false), r(1, 0x180, true)], 0).is_empty());
        assert_eq!(run(&one_text(), &symbols, &[r(1, 0xfb, false), r(1, 0x180, true)], 0), [(b'f', 1, 0x180)]);
        assert_eq!(run(&one_text(), &symbols, &[r(1, 0xfe, true), r(1, 0x180, true)], 0), [(b'f', 1, 0xfe)]);
        // Where the kernel's record lies past the location (arm64), a
        // location at F covers nothing.
        assert_eq!(run(&one_text(), &symbols, &[r(1, 0x100, false), r(1, 0x180, true)], 4), [(b'f', 1, 0x180)]);
    }

    /// The extent runs on into the next text section of the region, up to
    /// its first symbol, wherever alignment puts that section; a section of
    /// the other region is never in it.
    #[test]
    fn the_extent_crosses_into_the_next_text_section() {
        let mut sections = one_text();
        sections.push(text(".init.text", 0x100, 16));
        sections.push(text(".text.unlikely", 0x100, 64));
        let symbols = [sym(1, 0x300, 1), sym(3, 0x40, 3), sym(2, 0x10, 5)];
        // .text.unlikely starts at 0x400: its 0x0..0x40 is still f's.
        let records = [r(1, 0x304, false), r(3, 0x20, true), r(3, 0x44, false), r(2, 0x0, true)];
        assert_eq!(run(&sections, &symbols, &records, 0), [(b'f', 3, 0x20)]);
        // A dead record past g is g's extent, which g's own record covers.
        assert!(run(&sections, &symbols, &[r(1, 0x300, false), r(3, 0x40, false), r(3, 0x80, true)], 0).is_empty());
    }

    /// A symbol past its section's end (an end label, or a hostile file)
    /// lands in the next section, and takes its place in laid-out order.
    #[test]
    fn a_symbol_past_its_section_end_counts_where_it_lands() {
        let mut sections = one_text();
        sections[1].size = 0x100;
        sections.push(text(".text.unlikely", 0x100, 16));
        let symbols = [sym(1, 0x80, 1), sym(1, 0x120, 5), sym(2, 0x40, 3)];
        let records = [r(1, 0x84, false), r(2, 0x10, true), r(2, 0x30, true), r(2, 0x44, false)];
        assert_eq!(run(&sections, &symbols, &records, 0), [(b'f', 2, 0x10), (b'h', 2, 0x30)]);
    }

    /// Asking only the neighbouring sections (no overhang) finds what
    /// asking every section finds, on pseudo-random modules.
    #[test]
    fn neighbours_alone_agree_with_every_section() {
        let mut random = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = move |n: u64| random() % n;
        let mut found = 0;
        for _ in 0..200 {
            let mut sections = vec![Section { flags: 0, ..text("", 0, 0) }];
            let n = 1 + next(6);
            for _ in 0..n {
                let name = if next(4) == 0 { ".init.text" } else { ".text" };
                sections.push(text(name, 0x40 + next(0x100), 1 << next(7)));
            }
            let mut symbols = Vec::new();
            let mut records = Vec::new();
            for s in 1..=u32::try_from(n).unwrap() {
                let size = sections[s as usize].size;
                for _ in 0..next(5) {
                    symbols.push(sym(s, next(size + 1), 1 + 2 * u32::try_from(next(3)).unwrap()));
                }
                for _ in 0..next(8) {
                    records.push(r(s, next(size), next(3) == 0));
                }
            }
            let index = SymbolIndex::from_vec(symbols.clone(), STRINGS);
            let mut m = Module::new(&index, &sections, region, 5, 0);
            assert_eq!(m.overhang, [false, false]);
            let fast = at_risk(&m, &records);
            found += fast.len();
            m.overhang = [true, true];
            assert_eq!(fast, at_risk(&m, &records), "{sections:?} {symbols:?} {records:?}");
        }
        assert!(found > 100, "{found} items: the modules must put functions at risk");
    }

    /// Alignment: a section placed at the next multiple of its alignment.
    #[test]
    fn sections_are_laid_out_in_header_order_aligned() {
        let mut sections = one_text();
        sections[1].size = 0x3f1;
        sections.push(text(".init.text", 0x10, 4));
        sections.push(text(".text.a", 0x10, 0x100));
        sections.push(text(".text.b", 0x10, 1));
        let (places, size) = lay_out(&sections, region);
        let bases: Vec<Option<u64>> = places.iter().map(|p| p.map(|p| p.base)).collect();
        assert_eq!(bases, [None, Some(0), Some(0), Some(0x400), Some(0x410)]);
        assert_eq!(size, [0x420, 0x10]);
    }
}

//! The weak-entry decision, as a pure function over plain data.
//!
//! The kernel (`test_for_valid_rec()`, 7.2) keeps a record when
//! `kallsyms_lookup(ip)` finds a symbol of the module at most
//! `FTRACE_MCOUNT_MAX_OFFSET` bytes before `ip = ftrace_call_adjust(location)`,
//! searching only the memory region that contains `ip`. We can see symbols
//! of the same section exactly; a symbol of an earlier section of the same
//! region could only qualify for a location within `max` bytes of its own
//! section's start, and how close it lands depends on load-time layout. Such
//! entries are kept, with the reason, as is anything else we cannot be sure of.

#![allow(
    clippy::cast_possible_truncation,
    reason = "a key packs section (32 bits), value (64) and table position (32) into a u128; the casts take them back out"
)]

use crate::arch::{Region, Rule};
use crate::elf::{ElfInfo, Entry, LookupSymbol, Odd, Section};

/// Where a lookup finds the nearest symbol at or below an address.
pub trait Lookup<'a> {
    /// The nearest symbol of `section` at or below `offset`; among several
    /// at that address, the first in table order (the one the kernel
    /// reports).
    fn at_or_below(&self, section: u32, offset: u64) -> Option<LookupSymbol>;
    fn name(&self, symbol: &LookupSymbol) -> &'a [u8];
}

/// The nearest symbol at or below each of a set of query addresses, found
/// without sorting the symbols: the queries are sorted (callsites come in
/// address order, so that is nearly free), each symbol is placed once by a
/// binary search among them, and one sweep carries each placement forward.
/// O(symbols · log queries + queries), where the kernel's scan is
/// O(queries × symbols); amdgpu has twice as many symbols as callsites.
#[derive(Debug, Clone)]
pub struct Nearest<'a> {
    /// The queries, `section << 64 | offset`, sorted and without repeats.
    queries: Vec<u128>,
    /// For each query, the nearest symbol at or below it, if any.
    answers: Vec<Option<Found>>,
    strings: &'a [u8],
}

/// A symbol found for a query: its value and position in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    value: u64,
    position: u32,
    name: u32,
}

impl Found {
    /// Whether `self` is a better answer than `other` for one query: nearer,
    /// or as near and earlier in the table.
    fn beats(self, other: Option<Found>) -> bool {
        other.is_none_or(|o| self.value > o.value || (self.value == o.value && self.position < o.position))
    }
}

fn query(section: u32, offset: u64) -> u128 {
    (u128::from(section) << 64) | u128::from(offset)
}

impl<'a> Nearest<'a> {
    /// Answer `queries` (section, offset) from `symbols`, in table order;
    /// `strings` is the table their names are in.
    ///
    /// # Panics
    ///
    /// With more than 2^32 symbols (a symbol table that large does not fit
    /// in a module file the ELF reader accepted).
    pub fn new(queries: impl IntoIterator<Item = (u32, u64)>, symbols: &[LookupSymbol], strings: &'a [u8]) -> Self {
        assert!(u32::try_from(symbols.len()).is_ok(), "positions are 32 bits");
        let mut queries: Vec<u128> = queries.into_iter().map(|(section, offset)| query(section, offset)).collect();
        queries.sort_unstable();
        queries.dedup();
        let mut answers: Vec<Option<Found>> = vec![None; queries.len()];
        // Each symbol is the candidate of the first query at or above it;
        // a query's bucket holds the symbols after the previous query.
        for (position, s) in symbols.iter().enumerate() {
            let at = query(s.section, s.value);
            let k = queries.partition_point(|&q| q < at);
            if k < queries.len() && (queries[k] >> 64) as u32 == s.section {
                let found = Found { value: s.value, position: position as u32, name: s.name };
                if found.beats(answers[k]) {
                    answers[k] = Some(found);
                }
            }
        }
        // A query's answer is the best of its bucket and its predecessor's
        // answer, within one section. Buckets hold disjoint addresses, so
        // "best" is simply the nearest.
        for k in 1..queries.len() {
            if queries[k] >> 64 == queries[k - 1] >> 64
                && let Some(before) = answers[k - 1]
                && before.beats(answers[k])
            {
                answers[k] = Some(before);
            }
        }
        Nearest { queries, answers, strings }
    }
}

impl<'a> Lookup<'a> for Nearest<'a> {
    /// # Panics
    ///
    /// If (`section`, `offset`) was not one of the queries.
    fn at_or_below(&self, section: u32, offset: u64) -> Option<LookupSymbol> {
        let k = self.queries.binary_search(&query(section, offset)).expect("a query given to Nearest::new");
        self.answers[k].map(|f| LookupSymbol { section, value: f.value, name: f.name })
    }

    fn name(&self, symbol: &LookupSymbol) -> &'a [u8] {
        crate::elf::string_at(self.strings, symbol.name)
    }
}

/// What may put a symbol of another section just before a location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionDoubt {
    /// Another text section precedes this one in its memory region: a symbol
    /// at its end may lie within `max` bytes of this section's start.
    Preceded { by: String },
    /// A symbol of an earlier section of the region lies past that section's
    /// end, so it may land anywhere in the sections that follow.
    Overhang { symbol: String, section: String },
}

/// Per-section facts the decision needs, indexed by section number.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub size: Vec<u64>,
    pub doubt: Vec<Option<SectionDoubt>>,
}

impl Layout {
    /// Model `__layout_sections()`: text sections are packed into their
    /// region in section-header order.
    pub fn new(
        sections: &[Section],
        symbols: &[LookupSymbol],
        strings: &[u8],
        region: impl Fn(&str) -> Region,
    ) -> Layout {
        // Per section, the symbol furthest past its end (the last in table
        // order among several at that address), in one pass.
        let mut past_end: Vec<Option<(u64, usize)>> = vec![None; sections.len()];
        for (position, sym) in symbols.iter().enumerate() {
            let i = sym.section as usize;
            if let Some(s) = sections.get(i)
                && sym.value > s.size
                && past_end[i].is_none_or(|(value, _)| sym.value >= value)
            {
                past_end[i] = Some((sym.value, position));
            }
        }
        let mut doubt = vec![None; sections.len()];
        let mut last: [Option<usize>; 2] = [None, None];
        let mut overhang: [Option<SectionDoubt>; 2] = [None, None];
        for (i, s) in sections.iter().enumerate() {
            if !s.is_alloc_exec() {
                continue;
            }
            let r = region(&s.name) as usize;
            doubt[i] = overhang[r]
                .clone()
                .or_else(|| last[r].map(|p| SectionDoubt::Preceded { by: sections[p].name.clone() }));
            last[r] = Some(i);
            if overhang[r].is_none()
                && let Some((_, position)) = past_end[i]
            {
                let name = crate::elf::string_at(strings, symbols[position].name);
                overhang[r] = Some(SectionDoubt::Overhang {
                    symbol: String::from_utf8_lossy(name).into_owned(),
                    section: s.name.clone(),
                });
            }
        }
        Layout { size: sections.iter().map(|s| s.size).collect(), doubt }
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

/// Why an entry is kept although no symbol explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doubt {
    /// The rule does not cover the relocation.
    Odd(Odd),
    /// The record ip lies past the end of its section.
    PastEnd { ip: u64 },
    /// Near the start of a section that another precedes in its region.
    Preceded { max: u64, by: String },
    /// A symbol of an earlier section lies past that section's end.
    Overhang { symbol: String, section: String },
}

impl std::fmt::Display for Doubt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Doubt::Odd(odd) => odd.fmt(f),
            Doubt::PastEnd { ip } => write!(f, "record ip {ip:#x} lies past the end of its section"),
            Doubt::Preceded { max, by } => {
                write!(f, "within {max} bytes of its section's start, and {by} precedes it in the same memory region")
            }
            Doubt::Overhang { symbol, section } => {
                write!(f, "symbol {symbol} of {section} lies past that section's end and may land here")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// A symbol explains the location: the kernel keeps the record.
    Valid,
    /// No symbol explains it: the kernel rejects the record, and prints it
    /// as `__ftrace_invalid_address___<distance>`.
    Zero { nearest: Option<&'a [u8]>, distance: u64 },
    /// Kept because we cannot be sure, for this reason.
    Doubt(Doubt),
}

/// Decide one entry.
///
/// # Panics
///
/// If `input` has no candidate ip (`count` is 0): `Rule::input` always
/// gives at least one.
pub fn decide<'a>(input: &Input, symbols: &impl Lookup<'a>, layout: &Layout, max: u64) -> Verdict<'a> {
    let (section, ips) = match input {
        Input::Odd(odd) => return Verdict::Doubt(Doubt::Odd(odd.clone())),
        Input::Ips { section, ips, count } => (*section, &ips[..*count]),
    };
    let mut doubt = None;
    let mut first_miss = None;
    for &ip in ips {
        let nearest = symbols.at_or_below(section, ip);
        if nearest.is_some_and(|s| ip - s.value <= max) {
            return Verdict::Valid;
        }
        let size = layout.size.get(section as usize).copied().unwrap_or(0);
        let section_doubt = layout.doubt.get(section as usize).and_then(Option::as_ref);
        if ip >= size {
            doubt.get_or_insert(Doubt::PastEnd { ip });
        } else {
            match section_doubt {
                Some(SectionDoubt::Preceded { by }) if nearest.is_none() && ip <= max => {
                    doubt.get_or_insert_with(|| Doubt::Preceded { max, by: by.clone() });
                }
                Some(SectionDoubt::Overhang { symbol, section }) => {
                    doubt.get_or_insert_with(|| Doubt::Overhang { symbol: symbol.clone(), section: section.clone() });
                }
                _ => {}
            }
        }
        first_miss.get_or_insert((nearest, ip));
    }
    if let Some(reason) = doubt {
        return Verdict::Doubt(reason);
    }
    let (nearest, ip) = first_miss.expect("at least one candidate ip");
    match nearest {
        Some(s) => Verdict::Zero { nearest: Some(symbols.name(&s)), distance: ip - s.value },
        None => Verdict::Zero { nearest: None, distance: 0 },
    }
}

/// What a pass over a callsite table decided, by entry index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Entries the kernel would reject: to be zeroed.
    pub zero: Vec<usize>,
    /// Entries kept because we cannot be sure.
    pub doubt: Vec<usize>,
}

/// Decide every entry of a callsite table. This is the one per-entry
/// pipeline: the tool, the benchmarks and the negative-control example all
/// call it. `symbols` are the lookup symbols in table order, their names in
/// `strings`; `each` sees every verdict, for `--verbose` and the like.
#[allow(clippy::too_many_arguments, reason = "the parsed module's parts, each needed once")]
pub fn all<'a>(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    entries: &[Entry],
    (symbols, strings): (&[LookupSymbol], &'a [u8]),
    layout: &Layout,
    mut each: impl FnMut(usize, &Entry, &Verdict<'a>),
) -> Decisions {
    let inputs: Vec<Input> = entries.iter().map(|entry| rule.input(image, info, entry)).collect();
    let queries = inputs.iter().flat_map(|input| {
        let (section, ips, count) = match input {
            &Input::Ips { section, ips, count } => (section, ips, count),
            Input::Odd(_) => (0, [0; 2], 0),
        };
        ips.into_iter().take(count).map(move |ip| (section, ip))
    });
    let nearest = Nearest::new(queries, symbols, strings);
    let mut out = Decisions::default();
    for (i, (entry, input)) in entries.iter().zip(&inputs).enumerate() {
        let verdict = decide(input, &nearest, layout, rule.max_offset);
        match &verdict {
            Verdict::Valid => {}
            Verdict::Zero { .. } => out.zero.push(i),
            Verdict::Doubt(_) => out.doubt.push(i),
        }
        each(i, entry, &verdict);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHT_PROGBITS};

    fn text(name: &str, size: u64) -> Section {
        Section {
            name: name.into(),
            sh_type: SHT_PROGBITS,
            flags: u64::from(SHF_ALLOC | SHF_EXECINSTR),
            offset: 0x40,
            size,
            link: 0,
            info: 0,
            entsize: 0,
        }
    }

    /// A symbol whose name is looked up in `STRINGS`.
    fn sym(section: u32, value: u64, name: &'static str) -> LookupSymbol {
        let at = STRINGS
            .windows(name.len() + 2)
            .position(|w| w[0] == 0 && &w[1..=name.len()] == name.as_bytes() && w[name.len() + 1] == 0);
        LookupSymbol { section, value, name: at.expect("name in STRINGS") as u32 + 1 }
    }

    const STRINGS: &[u8] = b"\0a\0b\0c\0f\0g\0h\0first\0second\0end_label\0";

    fn at(section: u32, ip: u64) -> Input {
        Input::Ips { section, ips: [ip, 0], count: 1 }
    }

    fn region(name: &str) -> Region {
        if name.starts_with(".init") { Region::InitText } else { Region::Text }
    }

    /// Section 0 is the null section, 1 is `.text`, as in a real module.
    /// Answers each lookup with a `Nearest` built for that one query.
    struct Index(Vec<LookupSymbol>);

    impl Lookup<'static> for Index {
        fn at_or_below(&self, section: u32, offset: u64) -> Option<LookupSymbol> {
            Nearest::new([(section, offset)], &self.0, STRINGS).at_or_below(section, offset)
        }

        fn name(&self, symbol: &LookupSymbol) -> &'static [u8] {
            crate::elf::string_at(STRINGS, symbol.name)
        }
    }

    fn setup(symbols: &[LookupSymbol], sections: Vec<Section>) -> (Index, Layout) {
        let mut all = vec![Section { flags: 0, ..text("", 0) }];
        all.extend(sections);
        let layout = Layout::new(&all, symbols, STRINGS, region);
        (Index(symbols.to_vec()), layout)
    }

    #[test]
    fn boundary_is_inclusive_at_max_and_rejects_max_plus_one() {
        let (s, l) = setup(&[sym(1, 0x100, "f")], vec![text(".text", 0x1000)]);
        assert_eq!(decide(&at(1, 0x104), &s, &l, 4), Verdict::Valid);
        assert_eq!(decide(&at(1, 0x105), &s, &l, 4), Verdict::Zero { nearest: Some(b"f"), distance: 5 });
        assert_eq!(decide(&at(1, 0x100), &s, &l, 0), Verdict::Valid);
        assert_eq!(decide(&at(1, 0x101), &s, &l, 0), Verdict::Zero { nearest: Some(b"f"), distance: 1 });
        assert_eq!(decide(&at(1, 0x110), &s, &l, 16), Verdict::Valid);
        assert_eq!(decide(&at(1, 0x111), &s, &l, 16), Verdict::Zero { nearest: Some(b"f"), distance: 17 });
    }

    #[test]
    fn nearest_symbol_is_the_closest_below_not_the_first() {
        let (s, l) = setup(
            &[sym(1, 0x10, "a"), sym(1, 0x80, "b"), sym(1, 0x200, "c")],
            vec![text(".text", 0x1000), text(".other", 0x100)],
        );
        assert_eq!(decide(&at(1, 0x84), &s, &l, 4), Verdict::Valid);
        assert_eq!(decide(&at(1, 0x150), &s, &l, 4), Verdict::Zero { nearest: Some(b"b"), distance: 0xd0 });
        // Symbols of other sections never explain a location.
        assert_eq!(decide(&at(2, 0x84), &s, &l, 4), Verdict::Zero { nearest: None, distance: 0 });
    }

    #[test]
    fn first_section_of_a_region_has_nothing_before_it() {
        // A weak body at .text+0, where the region starts: the kernel finds
        // no symbol at all and prints __ftrace_invalid_address___0.
        let (s, l) = setup(&[sym(1, 0x10, "f")], vec![text(".text", 0x100)]);
        assert_eq!(decide(&at(1, 0), &s, &l, 4), Verdict::Zero { nearest: None, distance: 0 });
    }

    #[test]
    fn near_the_start_of_a_section_that_follows_another_is_kept() {
        let (s, l) =
            setup(&[sym(1, 0x10, "f"), sym(2, 0x40, "g")], vec![text(".text", 0x100), text(".noinstr.text", 0x100)]);
        assert_eq!(decide(&at(2, 0), &s, &l, 4), Verdict::Doubt(Doubt::Preceded { max: 4, by: ".text".into() }));
        assert!(matches!(decide(&at(2, 4), &s, &l, 4), Verdict::Doubt(_)));
        // One byte further, no symbol of .text can be within 4 bytes.
        assert_eq!(decide(&at(2, 5), &s, &l, 4), Verdict::Zero { nearest: None, distance: 0 });
        // A symbol of its own section settles it either way.
        assert_eq!(decide(&at(2, 0x44), &s, &l, 4), Verdict::Valid);
    }

    #[test]
    fn init_text_is_its_own_region_except_where_the_arch_merges_it() {
        let sections = vec![text(".text", 0x100), text(".init.text", 0x100)];
        let (s, l) = setup(&[sym(1, 0x10, "f")], sections.clone());
        assert_eq!(decide(&at(2, 0), &s, &l, 4), Verdict::Zero { nearest: None, distance: 0 });
        // ppc64 puts .init.text in core text, right after .text.
        let index = Index(vec![sym(1, 0x10, "f")]);
        let mut all = vec![Section { flags: 0, ..text("", 0) }];
        all.extend(sections);
        let merged = Layout::new(&all, &index.0, STRINGS, |_| Region::Text);
        assert!(matches!(decide(&at(2, 0), &index, &merged, 16), Verdict::Doubt(_)));
    }

    #[test]
    fn a_symbol_past_its_section_end_casts_doubt_on_what_follows() {
        let (s, l) = setup(
            &[sym(1, 0x200, "end_label"), sym(2, 0x10, "g")],
            vec![text(".text", 0x100), text(".text.other", 0x100)],
        );
        assert_eq!(
            decide(&at(2, 0x80), &s, &l, 4),
            Verdict::Doubt(Doubt::Overhang { symbol: "end_label".into(), section: ".text".into() })
        );
    }

    #[test]
    fn mapping_symbols_are_not_lookup_symbols() {
        use crate::elf::is_mapping_symbol;
        for name in [".L__sym", "L0\u{1}", "$x", "$d.1"] {
            assert!(is_mapping_symbol(name.as_bytes()), "{name}");
        }
        for name in ["f", "__pfx_f", "L1", "x$"] {
            assert!(!is_mapping_symbol(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn ppc32_adjust_is_applied_before_the_lookup() {
        // With patchable entries the recorded location is one NOP before the
        // function and the kernel adds 8: the raw location would be invalid.
        let (s, l) = setup(&[sym(1, 0x24, "f")], vec![text(".text", 0x100)]);
        let (ips, count) = crate::arch::Adjust::Add(8).candidates(0x20, false);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16), Verdict::Valid);
        let weak = crate::arch::Adjust::Add(8).candidates(0x60, false);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips: weak.0, count: weak.1 }, &s, &l, 16),
            Verdict::Zero { nearest: Some(b"f"), distance: 0x44 }
        );
    }

    #[test]
    fn clang_ppc64_keeps_an_entry_if_either_candidate_is_valid() {
        // f at 0x30; location 0x20 holds the global-entry pair, so the kernel
        // may see 0x20 or 0x28. Neither is within 16 of f (f is after them).
        // g at 0x10: 0x20 is 16 past g (valid), 0x28 is 24 (invalid).
        let (s, l) = setup(&[sym(1, 0x10, "g")], vec![text(".text", 0x100)]);
        let (ips, count) = crate::arch::Adjust::ClangGlobalEntry.candidates(0x20, true);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16), Verdict::Valid);
        // 0x18 past g and 0x20 past g: both invalid, so it is zeroed.
        let (ips, count) = crate::arch::Adjust::ClangGlobalEntry.candidates(0x28, true);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16),
            Verdict::Zero { nearest: Some(b"g"), distance: 0x18 }
        );
        // The +8 candidate alone can make an entry valid.
        let (s2, l2) = setup(&[sym(1, 0x30, "h")], vec![text(".text", 0x100)]);
        let (ips, count) = crate::arch::Adjust::ClangGlobalEntry.candidates(0x28, true);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s2, &l2, 16), Verdict::Valid);
        // Without the pair there is no +8 candidate.
        let (ips, count) = crate::arch::Adjust::ClangGlobalEntry.candidates(0x28, false);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips, count }, &s2, &l2, 16),
            Verdict::Zero { nearest: None, distance: 0 }
        );
    }

    #[test]
    fn odd_entries_are_kept_with_their_reason() {
        let (s, l) = setup(&[], vec![text(".text", 0x100)]);
        assert_eq!(decide(&Input::Odd(Odd::Weak), &s, &l, 4), Verdict::Doubt(Doubt::Odd(Odd::Weak)));
    }

    #[test]
    fn one_walk_over_the_symbols_agrees_with_a_scan_for_every_query() {
        // Deterministic pseudo-random symbols (several at one address, with
        // different names) and queries, in and out of order, some repeated.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let names = ["a", "b", "c", "f", "g", "h"];
        let symbols: Vec<_> =
            (0..500).map(|i| sym((next() % 3) as u32 + 1, next() % 512 * 8, names[i % names.len()])).collect();
        // The kernel's answer: the nearest at or below, the first in table order.
        let scan = |section: u32, offset: u64| {
            symbols.iter().filter(|s| s.section == section && s.value <= offset).fold(
                None::<LookupSymbol>,
                |best, s| if best.is_none_or(|b| s.value > b.value) { Some(*s) } else { best },
            )
        };
        let mut queries: Vec<(u32, u64)> = (0..2000).map(|_| ((next() % 4) as u32, next() % 5000)).collect();
        queries.extend_from_within(..100);
        for sorted in [false, true] {
            if sorted {
                queries.sort_unstable();
            }
            let nearest = Nearest::new(queries.iter().copied(), &symbols, STRINGS);
            for &(section, offset) in &queries {
                assert_eq!(nearest.at_or_below(section, offset), scan(section, offset), "{section} {offset}");
            }
        }
    }

    #[test]
    fn the_first_symbol_in_table_order_names_an_address() {
        // Symbols come in table order; several at one address.
        let (s, _) = setup(
            &[sym(1, 0x8, "a"), sym(1, 0x10, "first"), sym(1, 0x10, "second"), sym(1, 0x10, "c")],
            vec![text(".text", 0x100)],
        );
        assert_eq!(s.name(&s.at_or_below(1, 0x20).unwrap()), b"first");
        assert_eq!(s.name(&s.at_or_below(1, 0xf).unwrap()), b"a");
    }
}

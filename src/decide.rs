// SPDX-License-Identifier: GPL-2.0-only
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
//!
//! On every arch an entry is also dead when its location lies in no sized
//! function symbol of its own section (sorttable's rule): alone where the
//! kernel checks nothing ([`contains`]), besides the kernel's check where
//! it has one ([`checked_and_contained`]).

#![allow(
    clippy::cast_possible_truncation,
    reason = "a key packs section (32 bits), value (64) and table position (32) into a u128; the casts take them back out"
)]

use crate::elf::{ElfInfo, Entry, LookupSymbol, Odd, Section, Target};
use crate::rule::{Criterion, Input, Region, Rule};

/// The symbols of a module, sorted on the first question that needs them:
/// the nearest symbol at or below an address is then one binary search
/// away, O((entries + symbols) · log symbols) where the kernel's scan is
/// O(entries × symbols). The sized functions, for the containment rule.
#[derive(Debug, Clone)]
pub struct SymbolIndex<'a> {
    /// In table order: a key's position is its index here.
    symbols: Vec<LookupSymbol>,
    strings: &'a [u8],
    /// The symbols sorted by address, each one `u128` key, section | value
    /// | position, so the sort compares integers, and among symbols at one
    /// address the first in table order (the one the kernel reports) comes
    /// first.
    sorted: std::cell::OnceCell<Vec<u128>>,
    /// Where the last search ended. Callsites come in address order, so
    /// the next answer is usually a few keys further: galloping from here
    /// beats a binary search over all symbols.
    hint: std::cell::Cell<usize>,
    /// The sized functions, built on the first containment question: the
    /// offset rule never asks one, and pays nothing for it.
    spans: std::cell::OnceCell<Spans>,
}

/// The sized function symbols, by section and start, each with the
/// furthest end among it and the functions before it in its section: one
/// binary search then says whether any function covers an address, even
/// where functions nest or alias.
#[derive(Debug, Clone, Default)]
struct Spans {
    starts: Vec<(u32, u64)>,
    reach: Vec<u64>,
}

impl Spans {
    fn new(index: &SymbolIndex<'_>) -> Spans {
        let sized = index.symbols.iter().filter(|s| s.size > 0).count();
        let mut spans = Spans { starts: Vec::with_capacity(sized), reach: Vec::with_capacity(sized) };
        for sym in index.keys().iter().map(|&k| index.symbol(k)).filter(|s| s.size > 0) {
            // Bit 0 of an arm Thumb-2 function symbol is the mode, not the
            // address; no other arch of the rule starts code at an odd one.
            let start = sym.value & !1;
            let end = sym.value.saturating_add(sym.size);
            let reach = match spans.starts.last() {
                Some(&(section, _)) if section == sym.section => end.max(spans.reach[spans.reach.len() - 1]),
                _ => end,
            };
            spans.starts.push((sym.section, start));
            spans.reach.push(reach);
        }
        spans
    }

    /// Whether a function of `section` starts at or before `start_limit` and
    /// ends after `at`.
    fn covers(&self, section: u32, start_limit: u64, at: u64) -> bool {
        let n = self.starts.partition_point(|&k| k <= (section, start_limit));
        n > 0 && self.starts[n - 1].0 == section && self.reach[n - 1] > at
    }
}

fn key(section: u32, value: u64, position: u32) -> u128 {
    (u128::from(section) << 96) | (u128::from(value) << 32) | u128::from(position)
}

/// The key without its position: which address it names.
fn address(key: u128) -> u128 {
    key >> 32
}

impl<'a> SymbolIndex<'a> {
    /// `symbols` in table order; `strings` is the table their names are in.
    ///
    /// # Panics
    ///
    /// With more than 2^32 symbols (a symbol table that large does not fit
    /// in a module file the ELF reader accepted).
    #[must_use]
    pub fn from_vec(symbols: Vec<LookupSymbol>, strings: &'a [u8]) -> Self {
        assert!(u32::try_from(symbols.len()).is_ok(), "positions are 32 bits");
        SymbolIndex {
            symbols,
            strings,
            sorted: std::cell::OnceCell::new(),
            hint: std::cell::Cell::new(0),
            spans: std::cell::OnceCell::new(),
        }
    }

    fn keys(&self) -> &[u128] {
        self.sorted.get_or_init(|| {
            let mut keys: Vec<u128> =
                self.symbols.iter().enumerate().map(|(i, s)| key(s.section, s.value, i as u32)).collect();
            keys.sort_unstable();
            keys
        })
    }

    fn symbol(&self, key: u128) -> LookupSymbol {
        self.symbols[key as u32 as usize]
    }

    /// Whether a sized function of `section` covers `at`, allowing `before`
    /// bytes of patchable entries placed before its symbol.
    pub fn in_function(&self, section: u32, at: u64, before: u64) -> bool {
        self.spans.get_or_init(|| Spans::new(self)).covers(section, at.saturating_add(before), at)
    }

    /// How many keys are at most `q`.
    fn count_at_most(&self, q: u128) -> usize {
        let keys = self.keys();
        let start = self.hint.get().min(keys.len());
        let end = if start > 0 && keys[start - 1] > q {
            keys[..start].partition_point(|&k| k <= q)
        } else {
            // keys[..start] are all <= q: gallop forward.
            let (mut lo, mut step) = (start, 1);
            while lo + step <= keys.len() && keys[lo + step - 1] <= q {
                lo += step;
                step *= 2;
            }
            lo + keys[lo..(lo + step).min(keys.len())].partition_point(|&k| k <= q)
        };
        self.hint.set(end);
        end
    }

    /// The address of the first symbol of `section` above `offset`: where
    /// the kallsyms extent of a symbol at `offset` ends.
    #[must_use]
    pub fn next_above(&self, section: u32, offset: u64) -> Option<u64> {
        let keys = self.keys();
        let at = keys.partition_point(|&k| k <= key(section, offset, u32::MAX));
        keys.get(at).filter(|&&k| (k >> 96) as u32 == section).map(|&k| (k >> 32) as u64)
    }

    /// The nearest symbol of `section` at or below `offset`.
    pub fn at_or_below(&self, section: u32, offset: u64) -> Option<LookupSymbol> {
        let end = self.count_at_most(key(section, offset, u32::MAX));
        let keys = self.keys();
        let last = *keys[..end].last()?;
        if (last >> 96) as u32 != section {
            return None;
        }
        // Step back to the first symbol at that address, if there are several.
        let first = if end >= 2 && address(keys[end - 2]) == address(last) {
            keys[..end].partition_point(|&k| address(k) < address(last))
        } else {
            end - 1
        };
        Some(self.symbol(keys[first]))
    }

    /// The symbols of `section`, by address.
    pub fn in_section(&self, section: u32) -> impl DoubleEndedIterator<Item = LookupSymbol> + '_ {
        let keys = self.keys();
        let start = keys.partition_point(|&k| (k >> 96) < u128::from(section));
        let end = keys.partition_point(|&k| (k >> 96) <= u128::from(section));
        keys[start..end].iter().map(|&k| self.symbol(k))
    }

    pub fn name(&self, symbol: &LookupSymbol) -> &'a [u8] {
        crate::elf::string_at(self.strings, symbol.name)
    }
}

/// Per-section facts the decision needs, indexed by section number.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub size: Vec<u64>,
    /// What may put a symbol of another section just before a location
    /// of this one: [`Doubt::Preceded`], [`Doubt::Overhang`] or
    /// [`Doubt::RegionStart`].
    pub doubt: Vec<Option<Doubt>>,
    /// Why the module's static functions may have lost their symbols, if
    /// it looks stripped (see [`Doubt::Stripped`]).
    pub stripped: Option<Stripped>,
}

/// What says a module was stripped of symbols the containment rule needs:
/// a static function whose symbol went looks just like an overridden weak
/// body, a callsite in no function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stripped {
    /// No local function symbols at all (`strip --discard-all`, or
    /// `--strip-unneeded` where no relocation names a static function).
    NoLocalFunctions,
    /// Local function symbols remain, but every local symbol left is one a
    /// relocation names: what `strip --strip-unneeded` keeps. A module
    /// `ld -r` linked always has some that no relocation names (the
    /// `.modinfo` strings, at least).
    OnlyRelocated,
}

impl Layout {
    /// Model `__layout_sections()`: text sections are packed into their
    /// region in section-header order.
    pub fn new(sections: &[Section], symbols: &SymbolIndex<'_>, region: impl Fn(&str) -> Region) -> Layout {
        let mut doubt = vec![None; sections.len()];
        let mut last: [Option<usize>; 2] = [None, None];
        let mut overhang: [Option<Doubt>; 2] = [None, None];
        for (i, s) in sections.iter().enumerate() {
            if !s.is_alloc_exec() {
                continue;
            }
            let r = region(&s.name) as usize;
            doubt[i] =
                overhang[r].clone().or_else(|| last[r].map(|p| Doubt::Preceded { by: sections[p].name.clone() }));
            last[r] = Some(i);
            if overhang[r].is_none() {
                // The highest symbol of the section is past its end if any is.
                if let Some(sym) = symbols.in_section(i as u32).next_back().filter(|sym| sym.value > s.size) {
                    overhang[r] = Some(Doubt::Overhang {
                        symbol: String::from_utf8_lossy(symbols.name(&sym)).into_owned(),
                        section: s.name.clone(),
                    });
                }
            }
        }
        Layout { size: sections.iter().map(|s| s.size).collect(), doubt, stripped: None }
    }

    /// The layout under `rule`: before the kernel bounded the symbol lookup
    /// to the address's memory region, the nearest symbol could belong to
    /// another region, and regions can be adjacent (x86's shared cache of
    /// executable pages, from 6.13): the start of each region is in doubt.
    pub fn for_rule(sections: &[Section], symbols: &SymbolIndex<'_>, rule: &Rule) -> Layout {
        let mut layout = Layout::new(sections, symbols, |name| rule.region(name));
        if !rule.region_bound {
            let mut seen = [false; 2];
            for (i, s) in sections.iter().enumerate().filter(|(_, s)| s.is_alloc_exec()) {
                let r = rule.region(&s.name) as usize;
                if !std::mem::replace(&mut seen[r], true) {
                    layout.doubt[i].get_or_insert(Doubt::RegionStart);
                }
            }
        }
        layout
    }
}

/// Why an entry is kept although no symbol explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doubt {
    /// The rule does not cover the relocation.
    Odd(Odd),
    /// The record ip lies past the end of its section.
    PastEnd { ip: u64 },
    /// Within the max offset of the start of a section that another
    /// precedes in its region: a symbol at that one's end may be nearest.
    Preceded { by: String },
    /// A symbol of an earlier section of the region lies past that
    /// section's end, so it may land anywhere in the sections that follow.
    Overhang { symbol: String, section: String },
    /// The nearest symbol is not a function with a size: the location may
    /// lie inside it.
    Unsized { symbol: String },
    /// The module looks stripped: its static functions may have no symbol,
    /// hence no extent to test, and the kernel keeps and traces their
    /// records.
    Stripped(Stripped),
    /// Within the max offset of the start of a memory region, on a kernel
    /// that may find the nearest symbol in another region, which may end
    /// just before it.
    RegionStart,
}

/// Which rule found a dead entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The kernel's own check (`test_for_valid_rec()`): no symbol at most
    /// `FTRACE_MCOUNT_MAX_OFFSET` below the record. Stock disables the
    /// record and lists it as `__ftrace_invalid_address___<distance>`.
    KernelCheck,
    /// sorttable's rule: the patched site lies in no sized function symbol
    /// of its section. Stock keeps the record enabled, named after the
    /// function before it (its check, where it has one, finds that
    /// function's symbol close enough).
    Containment,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// A symbol explains the location: the kernel keeps the record.
    Valid,
    /// A dead record: `by` says which rule found it, and so what a kernel
    /// that loads it as it is does with it.
    Dead { nearest: Option<&'a [u8]>, distance: u64, by: Found },
    /// Kept because we cannot be sure, for this reason.
    Doubt(Doubt),
}

/// Decide one entry.
///
/// # Panics
///
/// If `input` has no candidate ip (`count` is 0): `Rule::input` always
/// gives at least one.
pub fn decide<'a>(input: &Input, symbols: &SymbolIndex<'a>, layout: &Layout, max: u64) -> Verdict<'a> {
    let (section, ips, count) = match input {
        Input::Odd(odd) => return Verdict::Doubt(Doubt::Odd(odd.clone())),
        &Input::Ips { section, ips, count } => (section, ips, count),
    };
    let mut doubt = None;
    let mut first_miss = None;
    for &ip in &ips[..count] {
        let nearest = symbols.at_or_below(section, ip);
        if nearest.is_some_and(|s| ip - s.value <= max) {
            return Verdict::Valid;
        }
        let size = layout.size.get(section as usize).copied().unwrap_or(0);
        let section_doubt = layout.doubt.get(section as usize).and_then(Option::as_ref);
        // Another section's symbol can only be the nearest one where the
        // section's own has none within `max`, unless it overhangs.
        let near_start = nearest.is_none() && ip <= max;
        if ip >= size {
            doubt.get_or_insert(Doubt::PastEnd { ip });
        } else if let Some(d) = section_doubt.filter(|d| near_start || matches!(d, Doubt::Overhang { .. })) {
            doubt.get_or_insert_with(|| d.clone());
        }
        first_miss.get_or_insert((nearest, ip));
    }
    if let Some(reason) = doubt {
        return Verdict::Doubt(reason);
    }
    let (nearest, ip) = first_miss.expect("at least one candidate ip");
    let distance = nearest.map_or(0, |s| ip - s.value);
    Verdict::Dead { nearest: nearest.map(|s| symbols.name(&s)), distance, by: Found::KernelCheck }
}

/// Decide one entry by the rule of `scripts/sorttable.c` (`cmp_func_addr()`,
/// commit ef378c3b8233), for arches whose kernel keeps every record: a
/// location is valid when it lies inside a sized function symbol of its
/// section, or at most `before` bytes ahead of one (patchable entries placed
/// before the function). Unlike the offset rule, nothing here depends on
/// load-time layout: the symbol and the location are in the same section.
pub fn contains<'a>(entry: &Entry, symbols: &SymbolIndex<'a>, layout: &Layout, before: u64) -> Verdict<'a> {
    let (section, at) = match &entry.target {
        Target::Odd(odd) => return Verdict::Doubt(Doubt::Odd((**odd).clone())),
        // arm's ftrace_call_adjust() clears the Thumb bit; see Spans::new.
        &Target::At { section, offset } => (section, offset & !1),
    };
    if symbols.in_function(section, at, before) {
        return Verdict::Valid;
    }
    outside(section, at, symbols, layout, before)
}

/// The verdict on a location that no sized function of `section` covers
/// (allowing `before` bytes ahead of one): dead, unless the module looks
/// stripped or the nearest symbol has no size to test.
fn outside<'a>(section: u32, at: u64, symbols: &SymbolIndex<'a>, layout: &Layout, before: u64) -> Verdict<'a> {
    if let Some(why) = layout.stripped {
        return Verdict::Doubt(Doubt::Stripped(why));
    }
    match symbols.at_or_below(section, at.saturating_add(before)) {
        None => Verdict::Dead { nearest: None, distance: 0, by: Found::Containment },
        Some(s) if s.size == 0 => {
            Verdict::Doubt(Doubt::Unsized { symbol: String::from_utf8_lossy(symbols.name(&s)).into_owned() })
        }
        Some(s) => Verdict::Dead {
            nearest: Some(symbols.name(&s)),
            distance: at.saturating_sub(s.value),
            by: Found::Containment,
        },
    }
}

/// Decide one entry on an arch whose kernel checks records
/// ([`Criterion::MaxOffset`]): by that check ([`decide`]), then by
/// sorttable's rule on the patched site. The kernel's check alone keeps a
/// dead weak body that starts within `FTRACE_MCOUNT_MAX_OFFSET` of the end
/// of a short function before it (sid's ppc64el kvm.ko: 16 bytes past a
/// 12-byte function); containment finds it. Containment only ever adds a
/// dead entry: what the kernel's check rejects is dead whatever it says,
/// and where containment cannot tell (a stripped module, a symbol without
/// a size) the kernel's check decides alone.
pub fn checked_and_contained<'a>(input: &Input, symbols: &SymbolIndex<'a>, layout: &Layout, max: u64) -> Verdict<'a> {
    // Nearly every record answers both rules with one search: the nearest
    // symbol below is its own function, close enough and long enough.
    if let &Input::Ips { section, ips, count } = input {
        let own =
            |ip: u64| symbols.at_or_below(section, ip).is_some_and(|s| ip - s.value <= max && ip - s.value < s.size);
        if ips[..count].iter().any(|&ip| own(ip)) {
            return Verdict::Valid;
        }
    }
    let verdict = decide(input, symbols, layout, max);
    let layout_doubt =
        matches!(verdict, Verdict::Doubt(Doubt::Preceded { .. } | Doubt::Overhang { .. } | Doubt::RegionStart));
    let &Input::Ips { section, ips, count } = input else { return verdict };
    // The one search above has failed: ask every function (an alias
    // without a size may come first, a symbol may nest in a function).
    if !(verdict == Verdict::Valid || layout_doubt)
        || ips[..count].iter().any(|&ip| symbols.in_function(section, ip, 0))
    {
        return verdict;
    }
    match outside(section, ips[0], symbols, layout, 0) {
        dead @ Verdict::Dead { .. } => dead,
        _ => verdict,
    }
}

/// What a pass over a callsite table decided, by entry index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Dead entries: to be neutralised (zeroed or dropped).
    pub dead: Vec<usize>,
    /// Entries kept because we cannot be sure.
    pub doubt: Vec<usize>,
    /// How many dead entries sorttable's rule found ([`Found::Containment`]).
    pub contained: usize,
}

/// Decide every entry of a callsite table. This is the one per-entry
/// pipeline: the tool, the benchmarks and the negative-control example all
/// call it. `each` sees every verdict, for `--verbose` and the like.
pub fn all<'a>(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    entries: &[Entry],
    symbols: &SymbolIndex<'a>,
    layout: &Layout,
    mut each: impl FnMut(usize, &Entry, &Verdict<'a>),
) -> Decisions {
    let mut out = Decisions::default();
    for (i, entry) in entries.iter().enumerate() {
        let verdict = match rule.criterion {
            Criterion::MaxOffset => {
                checked_and_contained(&rule.input(image, info, entry), symbols, layout, rule.max_offset)
            }
            Criterion::Contains { before } => contains(entry, symbols, layout, before),
        };
        match &verdict {
            Verdict::Valid => {}
            Verdict::Dead { by, .. } => {
                out.dead.push(i);
                out.contained += usize::from(*by == Found::Containment);
            }
            Verdict::Doubt(_) => out.doubt.push(i),
        }
        each(i, entry, &verdict);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHT_PROGBITS};

    pub(crate) fn text(name: &str, size: u64) -> Section {
        Section {
            name: name.into(),
            sh_type: SHT_PROGBITS,
            flags: u64::from(SHF_ALLOC | SHF_EXECINSTR),
            offset: 0x40,
            size,
            link: 0,
            info: 0,
            entsize: 0,
            align: 16,
        }
    }

    /// A symbol whose name is looked up in `STRINGS`.
    fn sym(section: u32, value: u64, name: &'static str) -> LookupSymbol {
        let at = STRINGS
            .windows(name.len() + 2)
            .position(|w| w[0] == 0 && &w[1..=name.len()] == name.as_bytes() && w[name.len() + 1] == 0);
        LookupSymbol { section, value, name: at.expect("name in STRINGS") as u32 + 1, size: 0 }
    }

    const STRINGS: &[u8] = b"\0a\0b\0c\0f\0g\0h\0first\0second\0end_label\0";

    fn at(section: u32, ip: u64) -> Input {
        Input::Ips { section, ips: [ip, 0], count: 1 }
    }

    pub(crate) fn region(name: &str) -> Region {
        if name.starts_with(".init") { Region::InitText } else { Region::Text }
    }

    /// Section 0 is the null section, 1 is `.text`, as in a real module.
    fn setup(symbols: &[LookupSymbol], sections: Vec<Section>) -> (SymbolIndex<'static>, Layout) {
        let index = SymbolIndex::from_vec(symbols.to_vec(), STRINGS);
        let mut all = vec![Section { flags: 0, ..text("", 0) }];
        all.extend(sections);
        let layout = Layout::new(&all, &index, region);
        (index, layout)
    }

    #[test]
    fn boundary_is_inclusive_at_max_and_rejects_max_plus_one() {
        let (s, l) = setup(&[sym(1, 0x100, "f")], vec![text(".text", 0x1000)]);
        assert_eq!(decide(&at(1, 0x104), &s, &l, 4), Verdict::Valid);
        assert_eq!(
            decide(&at(1, 0x105), &s, &l, 4),
            Verdict::Dead { nearest: Some(b"f"), distance: 5, by: Found::KernelCheck }
        );
        assert_eq!(decide(&at(1, 0x100), &s, &l, 0), Verdict::Valid);
        assert_eq!(
            decide(&at(1, 0x101), &s, &l, 0),
            Verdict::Dead { nearest: Some(b"f"), distance: 1, by: Found::KernelCheck }
        );
        assert_eq!(decide(&at(1, 0x110), &s, &l, 16), Verdict::Valid);
        assert_eq!(
            decide(&at(1, 0x111), &s, &l, 16),
            Verdict::Dead { nearest: Some(b"f"), distance: 17, by: Found::KernelCheck }
        );
    }

    #[test]
    fn nearest_symbol_is_the_closest_below_not_the_first() {
        let (s, l) = setup(
            &[sym(1, 0x10, "a"), sym(1, 0x80, "b"), sym(1, 0x200, "c")],
            vec![text(".text", 0x1000), text(".other", 0x100)],
        );
        assert_eq!(decide(&at(1, 0x84), &s, &l, 4), Verdict::Valid);
        assert_eq!(
            decide(&at(1, 0x150), &s, &l, 4),
            Verdict::Dead { nearest: Some(b"b"), distance: 0xd0, by: Found::KernelCheck }
        );
        // Symbols of other sections never explain a location.
        assert_eq!(
            decide(&at(2, 0x84), &s, &l, 4),
            Verdict::Dead { nearest: None, distance: 0, by: Found::KernelCheck }
        );
    }

    #[test]
    fn first_section_of_a_region_has_nothing_before_it() {
        // A weak body at .text+0, where the region starts: the kernel finds
        // no symbol at all and prints __ftrace_invalid_address___0.
        let (s, l) = setup(&[sym(1, 0x10, "f")], vec![text(".text", 0x100)]);
        assert_eq!(decide(&at(1, 0), &s, &l, 4), Verdict::Dead { nearest: None, distance: 0, by: Found::KernelCheck });
    }

    #[test]
    fn near_the_start_of_a_section_that_follows_another_is_kept() {
        let (s, l) =
            setup(&[sym(1, 0x10, "f"), sym(2, 0x40, "g")], vec![text(".text", 0x100), text(".noinstr.text", 0x100)]);
        assert_eq!(decide(&at(2, 0), &s, &l, 4), Verdict::Doubt(Doubt::Preceded { by: ".text".into() }));
        assert!(matches!(decide(&at(2, 4), &s, &l, 4), Verdict::Doubt(_)));
        // One byte further, no symbol of .text can be within 4 bytes.
        assert_eq!(decide(&at(2, 5), &s, &l, 4), Verdict::Dead { nearest: None, distance: 0, by: Found::KernelCheck });
        // A symbol of its own section settles it either way.
        assert_eq!(decide(&at(2, 0x44), &s, &l, 4), Verdict::Valid);
    }

    #[test]
    fn init_text_is_its_own_region_except_where_the_arch_merges_it() {
        let sections = vec![text(".text", 0x100), text(".init.text", 0x100)];
        let (s, l) = setup(&[sym(1, 0x10, "f")], sections.clone());
        assert_eq!(decide(&at(2, 0), &s, &l, 4), Verdict::Dead { nearest: None, distance: 0, by: Found::KernelCheck });
        // ppc64 puts .init.text in core text, right after .text.
        let index = SymbolIndex::from_vec(vec![sym(1, 0x10, "f")], STRINGS);
        let mut all = vec![Section { flags: 0, ..text("", 0) }];
        all.extend(sections);
        let merged = Layout::new(&all, &index, |_| Region::Text);
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
        let is_mapping_symbol = |name: &[u8]| crate::elf::Mapping::All.skips(name);
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
        let (ips, count) = crate::rule::Adjust::Add(8).candidates(0x20, false);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16), Verdict::Valid);
        let weak = crate::rule::Adjust::Add(8).candidates(0x60, false);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips: weak.0, count: weak.1 }, &s, &l, 16),
            Verdict::Dead { nearest: Some(b"f"), distance: 0x44, by: Found::KernelCheck }
        );
    }

    #[test]
    fn clang_ppc64_keeps_an_entry_if_either_candidate_is_valid() {
        // f at 0x30; location 0x20 holds the global-entry pair, so the kernel
        // may see 0x20 or 0x28. Neither is within 16 of f (f is after them).
        // g at 0x10: 0x20 is 16 past g (valid), 0x28 is 24 (invalid).
        let (s, l) = setup(&[sym(1, 0x10, "g")], vec![text(".text", 0x100)]);
        let (ips, count) = crate::rule::Adjust::ClangGlobalEntry.candidates(0x20, true);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16), Verdict::Valid);
        // 0x18 past g and 0x20 past g: both invalid, so it is zeroed.
        let (ips, count) = crate::rule::Adjust::ClangGlobalEntry.candidates(0x28, true);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips, count }, &s, &l, 16),
            Verdict::Dead { nearest: Some(b"g"), distance: 0x18, by: Found::KernelCheck }
        );
        // The +8 candidate alone can make an entry valid.
        let (s2, l2) = setup(&[sym(1, 0x30, "h")], vec![text(".text", 0x100)]);
        let (ips, count) = crate::rule::Adjust::ClangGlobalEntry.candidates(0x28, true);
        assert_eq!(decide(&Input::Ips { section: 1, ips, count }, &s2, &l2, 16), Verdict::Valid);
        // Without the pair there is no +8 candidate.
        let (ips, count) = crate::rule::Adjust::ClangGlobalEntry.candidates(0x28, false);
        assert_eq!(
            decide(&Input::Ips { section: 1, ips, count }, &s2, &l2, 16),
            Verdict::Dead { nearest: None, distance: 0, by: Found::KernelCheck }
        );
    }

    /// A sized function symbol.
    fn func(section: u32, value: u64, size: u64, name: &'static str) -> LookupSymbol {
        LookupSymbol { size, ..sym(section, value, name) }
    }

    fn entry(section: u32, offset: u64) -> Entry {
        Entry { reloc: 0, word_offset: 0, target: Target::At { section, offset } }
    }

    #[test]
    fn containment_is_start_minus_allowance_inclusive_to_end_exclusive() {
        let (s, l) = setup(&[func(1, 0x40, 0x40, "f"), func(1, 0xc0, 0x10, "g")], vec![text(".text", 0x200)]);
        let verdict = |at, before| contains(&entry(1, at), &s, &l, before);
        assert_eq!(verdict(0x40, 0), Verdict::Valid);
        assert_eq!(verdict(0x7f, 0), Verdict::Valid);
        assert_eq!(verdict(0x80, 0), Verdict::Dead { nearest: Some(b"f"), distance: 0x40, by: Found::Containment });
        assert_eq!(verdict(0x3f, 0), Verdict::Dead { nearest: None, distance: 0, by: Found::Containment });
        assert_eq!(verdict(0x38, 8), Verdict::Valid);
        assert_eq!(verdict(0x34, 8), Verdict::Dead { nearest: None, distance: 0, by: Found::Containment });
        assert_eq!(verdict(0xb8, 8), Verdict::Valid);
        assert_eq!(verdict(0xb4, 8), Verdict::Dead { nearest: Some(b"f"), distance: 0x74, by: Found::Containment });
        // Another section's functions never contain a location.
        assert_eq!(
            contains(&entry(2, 0x50), &s, &l, 8),
            Verdict::Dead { nearest: None, distance: 0, by: Found::Containment }
        );
    }

    #[test]
    fn where_the_kernel_checks_records_containment_finds_what_its_check_keeps() {
        // sid ppc64el's kvm.ko: a dead body 16 bytes past a 12-byte function,
        // within the max offset of 16, so the kernel's check keeps it.
        let (s, mut l) = setup(&[func(1, 0x40, 12, "f"), func(1, 0x80, 0x40, "g")], vec![text(".text", 0x200)]);
        let v = |ip| checked_and_contained(&at(1, ip), &s, &l, 16);
        assert_eq!(v(0x50), Verdict::Dead { nearest: Some(b"f"), distance: 16, by: Found::Containment });
        assert_eq!(v(0x48), Verdict::Valid);
        assert_eq!(v(0x88), Verdict::Valid);
        // What the kernel's check rejects stays its finding.
        assert_eq!(v(0x51), Verdict::Dead { nearest: Some(b"f"), distance: 17, by: Found::KernelCheck });
        // One candidate inside a function is enough (clang's ppc64 pair).
        let pair = Input::Ips { section: 1, ips: [0x50, 0x80], count: 2 };
        assert_eq!(checked_and_contained(&pair, &s, &l, 16), Verdict::Valid);
        // A stripped module: the kernel's check decides alone.
        l.stripped = Some(Stripped::OnlyRelocated);
        assert_eq!(checked_and_contained(&at(1, 0x50), &s, &l, 16), Verdict::Valid);
        // An unsized symbol gives no extent to test: the check decides.
        let (s, l) = setup(&[sym(1, 0x40, "f")], vec![text(".text", 0x200)]);
        assert_eq!(checked_and_contained(&at(1, 0x50), &s, &l, 16), Verdict::Valid);
    }

    #[test]
    fn a_function_nested_in_a_longer_one_does_not_hide_it() {
        // An alias or inner label with a short size must not make the rest
        // of the outer function look uncovered.
        let (s, l) = setup(&[func(1, 0x40, 0x100, "a"), func(1, 0x60, 0x8, "b")], vec![text(".text", 0x200)]);
        assert_eq!(contains(&entry(1, 0x100), &s, &l, 0), Verdict::Valid);
        assert_eq!(
            contains(&entry(1, 0x140), &s, &l, 0),
            Verdict::Dead { nearest: Some(b"b"), distance: 0xe0, by: Found::Containment }
        );
    }

    #[test]
    fn a_thumb_function_covers_its_even_addresses() {
        let (s, l) = setup(&[func(1, 0x41, 0x20, "f")], vec![text(".text", 0x100)]);
        assert_eq!(contains(&entry(1, 0x40), &s, &l, 0), Verdict::Valid);
        assert_eq!(contains(&entry(1, 0x45), &s, &l, 0), Verdict::Valid);
        assert!(matches!(contains(&entry(1, 0x62), &s, &l, 0), Verdict::Dead { .. }));
    }

    #[test]
    fn without_a_size_or_without_local_symbols_an_outside_entry_is_kept() {
        let (s, mut l) = setup(&[func(1, 0x40, 0x10, "f"), sym(1, 0x80, "g")], vec![text(".text", 0x200)]);
        assert_eq!(contains(&entry(1, 0x90), &s, &l, 0), Verdict::Doubt(Doubt::Unsized { symbol: "g".into() }));
        // Within the allowance before an unsized symbol, too.
        assert_eq!(contains(&entry(1, 0x78), &s, &l, 8), Verdict::Doubt(Doubt::Unsized { symbol: "g".into() }));
        assert!(matches!(contains(&entry(1, 0x60), &s, &l, 0), Verdict::Dead { .. }));
        for why in [Stripped::NoLocalFunctions, Stripped::OnlyRelocated] {
            l.stripped = Some(why);
            assert_eq!(contains(&entry(1, 0x60), &s, &l, 0), Verdict::Doubt(Doubt::Stripped(why)));
        }
        assert_eq!(contains(&entry(1, 0x44), &s, &l, 0), Verdict::Valid);
        let odd = Entry { target: Target::odd(Odd::Weak), ..entry(1, 0) };
        assert_eq!(contains(&odd, &s, &l, 0), Verdict::Doubt(Doubt::Odd(Odd::Weak)));
    }

    #[test]
    fn odd_entries_are_kept_with_their_reason() {
        let (s, l) = setup(&[], vec![text(".text", 0x100)]);
        assert_eq!(decide(&Input::Odd(Odd::Weak), &s, &l, 4), Verdict::Doubt(Doubt::Odd(Odd::Weak)));
    }

    /// Deterministic pseudo-random numbers (xorshift64) from `x`.
    pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn galloping_from_the_last_answer_agrees_with_a_binary_search() {
        // Deterministic pseudo-random symbols and queries, in and out of order.
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let symbols: Vec<_> = (0..500).map(|_| sym((next() % 3) as u32 + 1, next() % 4096, "a")).collect();
        let index = SymbolIndex::from_vec(symbols, STRINGS);
        let mut queries: Vec<(u32, u64)> = (0..2000).map(|_| ((next() % 4) as u32, next() % 5000)).collect();
        for sorted in [false, true] {
            if sorted {
                queries.sort_unstable();
            }
            for &(section, offset) in &queries {
                let q = key(section, offset, u32::MAX);
                assert_eq!(index.count_at_most(q), index.keys().partition_point(|&k| k <= q), "{section} {offset}");
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

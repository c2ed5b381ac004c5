// SPDX-License-Identifier: GPL-2.0-only
//! Shared pieces of the benchmark binaries.
//!
//! `tool_*` run, with the library's public API, the phases of
//! `process::analyze` for one module (no `--kconfig`, default options) one
//! by one, so each can be timed on its own; the per-entry decision is the
//! library's own `decide::all`. `naive_*` replace
//! only the search: for each entry, a scan of the whole symbol table as the
//! kernel's `find_kallsyms_symbol()` does (kernel/module/kallsyms.c, 7.2).
#![allow(clippy::missing_errors_doc, reason = "a benchmark, no API: each binary prints the error and stops")]

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use object::Endianness;
use object::elf::{FileHeader32, FileHeader64, SHN_UNDEF};
use object::read::elf::{FileHeader, Sym};
use zero_weak_mcount::arch::{self, Overrides, Scope};
use zero_weak_mcount::decide::{self, Decisions, Layout, SymbolIndex};
use zero_weak_mcount::elf::{self, ElfInfo, Extracted, Mapping};
use zero_weak_mcount::kept;
use zero_weak_mcount::plan::{Plan, Removal};
use zero_weak_mcount::rule::{Input, Neutraliser, Rule};
use zero_weak_mcount::signature;

pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Map a file read-only, as the tool does.
pub fn map(path: &Path) -> Res<memmap2::Mmap> {
    let file = File::open(path)?;
    // SAFETY: benchmark inputs are private scratch copies nobody truncates.
    Ok(unsafe { memmap2::Mmap::map(&file)? })
}

/// The ELF image of a module (signature, if any, cut off).
pub fn image(data: &[u8]) -> Res<&[u8]> {
    Ok(match signature::elf_len(data)? {
        Some(len) => &data[..len],
        None => data,
    })
}

/// Phase 1 (parse): ELF header, section table, vermagic, the rule.
pub fn tool_parse(image: &[u8]) -> Res<Option<(ElfInfo, Rule)>> {
    let info = elf::parse_info(image)?;
    match arch::rule_for(image, &info, None, &Overrides::default())? {
        Scope::Act(rule) => Ok(Some((info, rule))),
        Scope::NoRule(_) => Ok(None),
    }
}

/// Phase 2 (extract): the callsite relocations and the lookup symbols.
pub fn tool_extract<'a>(image: &'a [u8], info: &ElfInfo, rule: &Rule) -> Res<Option<Extracted<'a>>> {
    let Some(callsite) = info.alloc_section(rule.section) else { return Ok(None) };
    Ok(elf::extract(image, info, callsite, rule.shape, rule.mapping)?.table())
}

/// What the tool does instead of phases 2 to 6 for a module whose every
/// entry the offset rule keeps (`kept::all_kept`): `Some(entries)`, or
/// `None` where it hands the module to the phases.
pub fn tool_all_kept(image: &[u8], info: &ElfInfo, rule: &Rule) -> Res<Option<usize>> {
    let Some(callsite) = info.alloc_section(rule.section) else { return Ok(None) };
    Ok(kept::all_kept(image, info, callsite, rule)?)
}

/// Phase 5 (decide): the library's own per-entry pipeline.
pub fn tool_decide(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    x: &Extracted<'_>,
    symbols: &SymbolIndex<'_>,
    layout: &Layout,
) -> Decisions {
    decide::all(image, info, rule, &x.callsite.entries, symbols, layout, |_, _, _| {})
}

/// Phase 6 (plan): the writes, with the rule's neutraliser as the tool
/// applies it; a drop the tool would refuse plans nothing.
pub fn tool_plan(image: &[u8], info: &ElfInfo, rule: &Rule, x: &Extracted<'_>, zero: &[usize]) -> Res<Plan> {
    let symbols = match rule.neutraliser {
        Neutraliser::Drop { .. } if !zero.is_empty() => match elf::table_symbols(image, info, &x.callsite)? {
            Ok(symbols) => Some(symbols),
            Err(_) => return Ok(Plan::default()),
        },
        _ => None,
    };
    let removal = symbols.as_deref().map_or(Removal::Zero, Removal::Drop);
    Ok(Plan::new(image, info, &x.callsite, zero, removal)?)
}

/// Timings of one pass of the tool's phases over one image.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    pub parse: Duration,
    pub extract: Duration,
    pub sort: Duration,
    pub layout: Duration,
    pub decide: Duration,
    pub plan: Duration,
}

impl Phases {
    #[must_use]
    pub fn total(&self) -> Duration {
        self.parse + self.extract + self.sort + self.layout + self.decide + self.plan
    }
}

/// Counts describing a module, for the tables.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    pub symtab: usize,
    pub lookup_symbols: usize,
    pub entries: usize,
    pub zeroed: usize,
    pub doubts: usize,
    pub plan_bytes: usize,
}

/// What one pass found: timings, counts, zeroed entries, doubted entries.
pub type Pass = (Phases, Shape, Vec<usize>, Vec<bool>);

/// One full pass of the tool's analysis, timed phase by phase.
pub fn tool_pass(image: &[u8]) -> Res<Option<Pass>> {
    let mut p = Phases::default();
    let t = Instant::now();
    let Some((info, rule)) = tool_parse(image)? else { return Ok(None) };
    p.parse = t.elapsed();
    let t = Instant::now();
    let Some(x) = tool_extract(image, &info, &rule)? else { return Ok(None) };
    p.extract = t.elapsed();
    let mut shape = Shape {
        symtab: symtab_len(image, &info, &x)?,
        lookup_symbols: x.symbols.len(),
        entries: x.callsite.entries.len(),
        ..Shape::default()
    };
    let t = Instant::now();
    let symbols = SymbolIndex::from_vec(x.symbols.clone(), x.strings);
    p.sort = t.elapsed();
    let t = Instant::now();
    let layout = Layout::for_rule(&info.sections, &symbols, &rule);
    p.layout = t.elapsed();
    let t = Instant::now();
    let d = tool_decide(image, &info, &rule, &x, &symbols, &layout);
    p.decide = t.elapsed();
    let t = Instant::now();
    let plan = tool_plan(image, &info, &rule, &x, &d.dead)?;
    p.plan = t.elapsed();
    shape.zeroed = d.dead.len();
    shape.doubts = d.doubt.len();
    shape.plan_bytes = plan.writes.iter().map(|w| w.bytes.len()).sum();
    let mut doubt = vec![false; shape.entries];
    for &i in &d.doubt {
        doubt[i] = true;
    }
    Ok(Some((p, shape, d.dead, doubt)))
}

/// Number of entries in the symbol table the callsite relocations use.
pub fn symtab_len(_image: &[u8], info: &ElfInfo, x: &Extracted<'_>) -> Res<usize> {
    let rs = &info.sections[x.callsite.reloc_section];
    let st = &info.sections[rs.link as usize];
    Ok(usize::try_from(st.size / st.entsize.max(1))?)
}

/// The outcome of a naive pass.
pub struct Naive {
    /// Entries decided before the budget ran out.
    pub done: usize,
    pub zero: Vec<usize>,
    pub elapsed: Duration,
}

/// The kernel's search, for every entry: scan the whole symbol table (all
/// of `num_symtab`, as `find_kallsyms_symbol()` does while the module is
/// still coming: the init-time kallsyms holds the full symtab), skipping
/// undefined, unnamed and mapping symbols, keeping the closest at or below
/// the address. File values are section-relative, so "at or below" is taken
/// within the entry's section. Stops after `budget` (checked every 64
/// entries) so that huge inputs can be extrapolated.
pub fn naive_decide(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    x: &Extracted<'_>,
    budget: Option<Duration>,
) -> Res<Naive> {
    if info.is_64 {
        naive_generic::<FileHeader64<Endianness>>(image, info, rule, x, budget)
    } else {
        naive_generic::<FileHeader32<Endianness>>(image, info, rule, x, budget)
    }
}

fn naive_generic<Elf: FileHeader<Endian = Endianness>>(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    x: &Extracted<'_>,
    budget: Option<Duration>,
) -> Res<Naive> {
    let header = Elf::parse(image).map_err(|e| e.to_string())?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let table = header.sections(endian, image).map_err(|e| e.to_string())?;
    let rs = &info.sections[x.callsite.reloc_section];
    let symtab = table
        .symbol_table_by_index(endian, image, object::SectionIndex(rs.link as usize))
        .map_err(|e| e.to_string())?;
    let syms = symtab.symbols();
    // The string table as raw bytes: like the kernel, look only at the
    // first bytes of a name (empty? mapping-symbol prefix?), never its length.
    let strings: &[u8] = info.sections.get(symtab.string_section().0).map_or(&[], |s| s.bytes(image));
    let start = Instant::now();
    let mut zero = Vec::new();
    let entries = &x.callsite.entries;
    let mut done = 0;
    for (i, entry) in entries.iter().enumerate() {
        if i % 64 == 0 && budget.is_some_and(|b| start.elapsed() > b) {
            break;
        }
        done = i + 1;
        let Input::Ips { section, ips, count } = rule.input(image, info, entry) else { continue };
        let mut valid = false;
        for &ip in &ips[..count] {
            // kernel/module/kallsyms.c: find_kallsyms_symbol()
            let mut best: Option<u64> = None;
            let mut nextval = u64::MAX;
            for sym in syms.iter().skip(1) {
                let shndx = sym.st_shndx(endian);
                if shndx == SHN_UNDEF {
                    continue;
                }
                let name = strings.get(sym.st_name(endian) as usize..).unwrap_or(b"");
                if name.first().is_none_or(|&c| c == 0) || Mapping::All.skips(name) {
                    continue;
                }
                if u32::from(shndx) != section {
                    continue;
                }
                let thisval: u64 = sym.st_value(endian).into();
                if thisval <= ip && best.is_none_or(|b| thisval > b) {
                    best = Some(thisval);
                }
                if thisval > ip && thisval < nextval {
                    nextval = thisval;
                }
            }
            std::hint::black_box(nextval);
            if best.is_some_and(|b| ip - b <= rule.max_offset) {
                valid = true;
                break;
            }
        }
        if !valid {
            zero.push(i);
        }
    }
    Ok(Naive { done, zero, elapsed: start.elapsed() })
}

#[must_use]
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    if v.is_empty() { Duration::ZERO } else { v[v.len() / 2] }
}

#[must_use]
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

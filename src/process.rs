// SPDX-License-Identifier: GPL-2.0-only
//! One module's bytes, start to end: read, decide, plan. Writing them is
//! [`crate::file`]'s job, and happens only after the plan is complete.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(clippy::struct_excessive_bools, reason = "Options holds independent command-line switches")]

use crate::arch::{self, Overrides, Scope};
use crate::compress::Format;
use crate::decide::{self, Layout, Stripped, SymbolIndex, Verdict};
use crate::elf::{self, Callsite, ElfInfo, Entry, Extraction, Target};
use crate::error::Error;
use crate::kconfig::Kconfig;
use crate::kept;
use crate::plan::{self, Plan};
use crate::report::{Counts, Finding, Location, Report};
use crate::risk::{self, AtRisk, Record};
use crate::rule::{Adjust, Input, Neutraliser, PatchSite, Rule};
use crate::signature;

/// What to do with a signed module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SignedPolicy {
    /// Fail: the module must be processed before it is signed.
    #[default]
    Refuse,
    /// Leave it unchanged, with a warning.
    #[value(name = "skip")]
    Leave,
    /// Drop the signature and process it; it must be re-signed.
    Strip,
}

/// What to do with a compressed module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressedPolicy {
    /// Leave it unchanged, with a warning.
    #[default]
    #[value(name = "skip")]
    Leave,
    /// Fail.
    Error,
    /// Decompress, process, and compress again with the kernel's settings.
    Recompress,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub compressed: CompressedPolicy,
    pub check: bool,
    pub verbose: bool,
    pub kconfig: Option<Kconfig>,
    pub overrides: Overrides,
    pub signed: SignedPolicy,
    pub fatal_warnings: bool,
    /// Write a sibling temporary file, fsync it and rename it into place.
    pub atomic: bool,
    /// Keep the file's modification time (tree mode, for packagers).
    pub keep_mtime: bool,
}

/// How a file ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Written (or, under `--check`, would be): entries neutralised (zeroed or
    /// dropped, as the arch has it), a signature dropped.
    /// `signed`: the module carries a signature that the change would (or,
    /// with `stripped`, did) invalidate; under `--check` a signed module is
    /// reported, not refused.
    Changed { neutralised: usize, stripped: bool, signed: bool },
    /// Nothing to write.
    Unchanged,
    /// Left alone on purpose, for this reason.
    Skipped(LeftAlone, String),
}

/// Why a module was left alone, for the tree summary (the CLI calls
/// these "skipped").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeftAlone {
    /// Signed and in need of changes, with `--signed=skip`.
    Signed,
    /// Compressed, with `--compressed=skip`.
    Compressed,
    /// The kernel does not check this module's callsites (architecture,
    /// kernel release or config), or we cannot tell whether it does.
    NoRule,
}

/// The counts of a run over many modules, for the tree summary and the
/// exit status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub modules: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub errors: usize,
    pub skipped: std::collections::BTreeMap<LeftAlone, usize>,
    /// Of `changed`, the modules that carry a signature.
    pub signed: usize,
    /// The functions at risk (each once) in the modules counted, and in
    /// how many modules.
    pub at_risk: usize,
    pub at_risk_modules: usize,
}

impl Tally {
    /// Count one module: how it ended up, or `None` for an error, and how
    /// many functions it puts at risk.
    pub fn add(&mut self, outcome: Option<&Outcome>, at_risk: usize) {
        self.modules += 1;
        self.at_risk += at_risk;
        self.at_risk_modules += usize::from(at_risk > 0);
        match outcome {
            Some(Outcome::Changed { signed, .. }) => {
                self.changed += 1;
                self.signed += usize::from(*signed);
            }
            Some(Outcome::Unchanged) => self.unchanged += 1,
            Some(Outcome::Skipped(kind, _)) => *self.skipped.entry(*kind).or_default() += 1,
            None => self.errors += 1,
        }
    }
}

/// The result of looking at one module: what to write, and what was found
/// ([`crate::render`] says it).
#[derive(Debug, Clone)]
pub struct Analysis {
    pub plan: Plan,
    pub outcome: Outcome,
    pub report: Report,
    pub warnings: Vec<String>,
    /// Things the user must act on that are not warnings, such as re-signing.
    pub notes: Vec<String>,
}

/// Decide what to do with a module's bytes. Pure: no I/O.
pub fn analyze(data: &[u8], opts: &Options) -> Result<Analysis, Error> {
    let analysis = analyze_module(data, opts)?;
    if let Some(w) = analysis.warnings.first().filter(|_| opts.fatal_warnings) {
        return Err(Error::FatalWarning(w.clone()));
    }
    Ok(analysis)
}

fn analyze_module(data: &[u8], opts: &Options) -> Result<Analysis, Error> {
    if data.is_empty() {
        return Err(Error::Empty);
    }
    if let Some(format) = Format::detect(data) {
        return Err(Error::Compressed(format.name()));
    }
    let mut warnings = Vec::new();
    // The image under a signature is analysed like any other; the policy
    // only matters once we know whether it needs a write, so that --check
    // and the real run give the same answer.
    let signed_len = signature::image_len(data)?;
    let image = signed_len.map_or(data, |len| &data[..len]);

    let info = elf::parse_info(image)?;
    warnings.extend(opts.kconfig.as_ref().and_then(|c| other_release(c, &info)));
    let mut analysis = match arch::rule_for(image, &info, opts.kconfig.as_ref(), &opts.overrides)? {
        Scope::NoRule(why) => Analysis::nothing(Some(LeftAlone::NoRule), why.to_string()),
        Scope::Act(rule) => decide_module(image, &info, &rule, opts, &mut warnings)?,
    };
    analysis.warnings = warnings;
    analysis.report.signed = signed_len.is_some();
    match signed_len {
        Some(len) => signed(analysis, len as u64, opts.signed, opts.check),
        None => Ok(analysis),
    }
}

/// A `--kconfig` for another kernel release than the module's vermagic
/// names (major.minor differ): its facts (IBT, compiler, call ops) may not
/// be this kernel's, as when a 7.2 config switched a 6.1 module's max
/// offset to 4. The patch level is not compared: Debian's vermagic hides it.
fn other_release(config: &Kconfig, info: &ElfInfo) -> Option<String> {
    let (text, from) = config.release.as_ref()?;
    let vermagic = info.vermagic.as_deref()?;
    let module = crate::rule::Release::from_vermagic(vermagic)?;
    let ours = crate::rule::Release::from_vermagic(text)?;
    let release = vermagic.split_whitespace().next()?;
    ((ours.major, ours.minor) != (module.major, module.minor)).then(|| {
        format!(
            "--kconfig is for kernel {text} (from {from}), this module for {release} (its vermagic): \
             the config's settings may not be this kernel's; give the config the module was built with"
        )
    })
}

/// Apply the signature policy to the analysis of a signed module's image.
/// A module that needs no write keeps its signature and is simply
/// unchanged, whatever the policy: nothing would invalidate it.
fn signed(mut analysis: Analysis, image_len: u64, policy: SignedPolicy, check: bool) -> Result<Analysis, Error> {
    let Outcome::Changed { stripped, signed, .. } = &mut analysis.outcome else {
        return Ok(analysis);
    };
    *signed = true;
    match policy {
        // An audit reports what needs doing; the real run would refuse it.
        SignedPolicy::Refuse if check => Ok(analysis),
        SignedPolicy::Refuse => Err(Error::Signed),
        SignedPolicy::Leave => {
            let why = "module is signed and needs changes; left unchanged (--signed=skip): process modules before \
                       signing";
            let mut warnings = analysis.warnings;
            warnings.push(why.to_string());
            // What the module holds is still worth reporting.
            let mut report = Report { nothing: Some(why.to_string()), ..analysis.report };
            // Left as it is: what is at risk stays so.
            report.at_risk_after.clone_from(&report.at_risk);
            Ok(Analysis { report, ..Analysis::skipped(LeftAlone::Signed, why.to_string(), warnings) })
        }
        SignedPolicy::Strip => {
            *stripped = true;
            analysis.plan.truncate = Some(image_len);
            analysis.notes.push("signature dropped: sign the module again".into());
            Ok(analysis)
        }
    }
}

/// What the tool says about a compressed module it leaves alone; the brp
/// and debhelper steps give the same advice.
pub const COMPRESSED_ADVICE: &str =
    "process modules before they are compressed (or pass --compressed=recompress, if they are not signed yet)";

impl Analysis {
    #[must_use]
    pub fn skipped(kind: LeftAlone, reason: String, warnings: Vec<String>) -> Analysis {
        Analysis { warnings, ..Analysis::nothing(Some(kind), reason) }
    }

    /// Nothing to write, for this reason: left alone on purpose (`kind`),
    /// or with nothing to do.
    fn nothing(kind: Option<LeftAlone>, reason: String) -> Analysis {
        let report = Report::nothing(reason.clone());
        let outcome = kind.map_or(Outcome::Unchanged, |kind| Outcome::Skipped(kind, reason));
        Analysis { outcome, ..Analysis::planned(Plan::default(), 0, report) }
    }

    /// `plan`'s writes, which neutralise that many entries; the warnings
    /// and the signature are settled by the caller.
    fn planned(plan: Plan, neutralised: usize, report: Report) -> Analysis {
        let outcome = if neutralised > 0 {
            Outcome::Changed { neutralised, stripped: false, signed: false }
        } else {
            Outcome::Unchanged
        };
        Analysis { plan, outcome, report, warnings: Vec::new(), notes: Vec::new() }
    }

    /// With what was learnt of the module before it was left alone.
    fn with(self, rule: &Rule, report: Report) -> Analysis {
        let nothing = self.report.nothing;
        Analysis { report: Report { rule: Some(rule.clone()), nothing, ..report }, ..self }
    }
}

fn decide_module(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Analysis, Error> {
    if let Some(kernel) = rule.unread_release {
        let (major, minor) = crate::release::READ_THROUGH;
        warnings.push(format!(
            "kernel {kernel} is newer than {major}.{minor}, the newest release this tool's rules were \
             checked against; applying {major}.{minor}'s rules (see docs/rules.md)"
        ));
    }
    let bare = Report::default();
    // No table, or one the loader relocates nothing in: the kernel builds
    // no record, so there is nothing it could reject.
    let Some(callsite) = info.alloc_section(rule.section) else {
        return Ok(Analysis::nothing(None, format!("no {} section", rule.section)).with(rule, bare));
    };
    // Most modules have no dead entry, and the offset rule can say so as
    // the module is read, keeping nothing: then there is nothing more to
    // find, to report or to write.
    let all_kept = if opts.verbose { None } else { kept::all_kept(image, info, callsite, rule)? };
    if let Some(entries) = all_kept {
        let counts = Counts { entries, weak: 0, doubt: 0 };
        // The full decision (`-v` takes it) must find no dead entry and no
        // doubt either: every debug-build run checks it.
        debug_assert_eq!(
            decide_module(image, info, rule, &Options { verbose: true, ..opts.clone() }, &mut Vec::new())
                .ok()
                .and_then(|full| full.report.counts),
            Some(counts),
            "the answer while reading keeps what the full decision does not"
        );
        let report = Report { rule: Some(rule.clone()), counts: Some(counts), ..Report::default() };
        return Ok(Analysis::planned(Plan::default(), 0, report));
    }
    let mut extracted = match elf::extract(image, info, callsite, rule.shape, rule.mapping)? {
        Extraction::Table(x) => x,
        Extraction::NoRelocations(why) => {
            return Ok(Analysis::nothing(None, why).with(rule, bare));
        }
        Extraction::Unsupported(why) => {
            warnings.push(why.clone());
            return Ok(Analysis::nothing(Some(LeftAlone::NoRule), why).with(rule, bare));
        }
    };
    let entries = &extracted.callsite.entries;
    let stripped = extracted.local_functions == 0;
    // The index keeps the symbols: no copy of them.
    let symbols = SymbolIndex::from_vec(std::mem::take(&mut extracted.symbols), extracted.strings);
    let mut layout = Layout::for_rule(&info.sections, &symbols, rule);
    layout.stripped = stripped.then_some(Stripped::NoLocalFunctions);
    let decide_all = |layout: &Layout| {
        let mut findings = Vec::new();
        let decisions = decide::all(image, info, rule, entries, &symbols, layout, |_, entry, verdict| {
            if opts.verbose || *verdict != Verdict::Valid {
                findings.push(finding(info, rule, entry, verdict));
            }
        });
        (decisions, findings)
    };
    let (mut decisions, mut findings) = decide_all(&layout);
    // Under the containment rule a static function whose symbol
    // `--strip-unneeded` took looks just like an overridden weak body. Ask
    // whether the module looks stripped only when that rule found something
    // to take out: the question reads every relocation section. What the
    // kernel's own check finds needs no such guard: the kernel rejects
    // such a record whether or not it is zeroed.
    if layout.stripped.is_none()
        && decisions.contained > 0
        && elf::only_relocated_locals(image, info, &extracted.callsite)?
    {
        layout.stripped = Some(Stripped::OnlyRelocated);
        (decisions, findings) = decide_all(&layout);
    }
    let (dead, doubts) = (decisions.dead, decisions.doubt.len());
    let counts = Counts { entries: entries.len(), weak: dead.len(), doubt: doubts };
    let at_risk = if dead.is_empty() { Vec::new() } else { at_risk(image, info, rule, entries, &dead, &symbols) };
    // Processing neutralises every dead entry: no dead record is left for
    // any lookup to return, so nothing stays at risk.
    let mut report = Report { rule: Some(rule.clone()), counts: Some(counts), findings, at_risk, ..Report::default() };
    // Static functions without symbols look exactly like weak bodies to the
    // kernel. Only say so when it costs something: entries are zeroed.
    if stripped && !dead.is_empty() {
        warnings.push(
            "the symbol table has no local function symbols (stripped with --strip-unneeded?): the kernel \
             cannot name or trace this module's static functions, and their entries are zeroed as it rejects them"
                .into(),
        );
    }
    let plan = match removal_plan(image, info, rule, &extracted.callsite, &dead)? {
        Ok(plan) => plan,
        Err(why) => {
            warnings.push(why.clone());
            // Left as it is: what is at risk stays so.
            report.at_risk_after.clone_from(&report.at_risk);
            return Ok(Analysis::nothing(Some(LeftAlone::NoRule), why).with(rule, report));
        }
    };
    Ok(Analysis::planned(plan, dead.len(), report))
}

/// The functions at risk before processing ([`risk::at_risk`]). Only a
/// module with a dead entry gets here: for any other the report is empty,
/// and costs nothing.
fn at_risk(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    entries: &[Entry],
    dead: &[usize],
    symbols: &SymbolIndex<'_>,
) -> Vec<AtRisk> {
    let mut records = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        if let Input::Ips { section, ips, .. } = rule.input(image, info, entry) {
            let dead = dead.binary_search(&i).is_ok();
            records.push(Record { section, ip: ips[0], dead, table_offset: entry.word_offset });
        }
    }
    // arm64 and riscv 6.13+: the kernel's record is the patched instruction,
    // at least one instruction past the location (docs/at-risk.md).
    let lead = if rule.adjust == Adjust::PatchSite { 4 } else { 0 };
    let insn = rule.arch.mcount_insn_size();
    let module = risk::Module::new(symbols, &info.sections, |name| rule.region(name), insn, lead);
    let name = |s: u32| info.sections.get(s as usize).map_or_else(String::new, |s| s.name.clone());
    risk::at_risk(&module, &records)
        .into_iter()
        .map(|found| {
            let f = found.function;
            let own = found.own.filter(|r| r.section == f.section);
            let (patch_site, why) = own.map_or((None, None), |own| {
                let (site, why) = patch_site(image, info, rule, &f, own.ip);
                (Some(site), why)
            });
            AtRisk {
                function: String::from_utf8_lossy(symbols.name(&f)).into_owned(),
                section: name(f.section),
                function_addr: f.value,
                patch_site,
                covered_by_dead: found.covered_by_dead,
                dead_section: name(found.dead.section),
                dead_site: found.dead.ip,
                dead_table_offset: found.dead.table_offset,
                why,
            }
        })
        .collect()
}

/// F's patch site given its own record at `own`, and what the arch says
/// about a record not at its symbol: it explains the report, it never
/// decides it. Where the adjust moves the location to the patched
/// instruction (arm64, riscv 6.13+) the site is that instruction.
fn patch_site(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    f: &elf::LookupSymbol,
    own: u64,
) -> (u64, Option<&'static str>) {
    let first = elf::section_bytes(image, info, f.section, f.value, 4);
    match rule.arch.patch_site(rule.adjust) {
        _ if own == f.value && rule.adjust != Adjust::PatchSite => (own, None),
        PatchSite::AfterEndbr64 if first == Some(&arch::ENDBR64[..]) => (own, Some("after its endbr64")),
        PatchSite::LocalEntry => (own, Some("past its global entry's TOC setup")),
        PatchSite::ArmBl => {
            let bti = first.is_some_and(arch::is_arm64_bti);
            (f.value + if bti { 8 } else { 4 }, Some("the BL the kernel patches"))
        }
        PatchSite::SecondInsn => (f.value + 4, Some("past its AUIPC")),
        _ => (own, None),
    }
}

/// The plan that takes the dead entries out with the rule's neutraliser,
/// or, where a drop cannot be done safely, why the module stays as it is.
fn removal_plan(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    callsite: &Callsite,
    dead: &[usize],
) -> Result<Result<Plan, String>, Error> {
    if rule.neutraliser == Neutraliser::Zero || dead.is_empty() {
        return Plan::new(image, info, callsite, dead, plan::Removal::Zero).map(Ok);
    }
    let cs = &info.sections[callsite.section];
    let count = dead.len();
    // A kept relocation whose bytes reach into a dropped word (an unaligned
    // one, kept for doubt) would be cut in two by the move.
    let word = info.word_size();
    let mut dropped: Vec<u64> = dead.iter().map(|&e| callsite.entries[e].word_offset).collect();
    dropped.sort_unstable();
    for e in &callsite.entries {
        let at = dropped.partition_point(|&d| d + word <= e.word_offset);
        if dropped.get(at).is_some_and(|&d| d < e.word_offset + word && d != e.word_offset) {
            return Ok(Err(format!(
                "the relocation at {:#x} of {} reaches into a word to drop; left unchanged",
                e.word_offset, cs.name
            )));
        }
    }
    if cs.sh_type != object::elf::SHT_PROGBITS {
        // Shrinking a section of any other kind changes what it means to
        // every reader that knows that kind.
        return Ok(Err(format!("{} is not SHT_PROGBITS; a drop would shrink it; left unchanged", cs.name)));
    }
    if rule.empty_table_fails && count as u64 * word == cs.size {
        return Ok(Err(format!(
            "dropping all {count} entries would empty {}, and the {} loader fails a module whose table is empty; \
             left unchanged",
            cs.name, rule.arch
        )));
    }
    match elf::table_symbols(image, info, callsite)? {
        Ok(symbols) => Plan::new(image, info, callsite, dead, plan::Removal::Drop(&symbols)).map(Ok),
        Err(why) => Ok(Err(format!("{why}: a drop cannot move it; left unchanged"))),
    }
}

fn finding(info: &ElfInfo, rule: &Rule, entry: &Entry, verdict: &Verdict<'_>) -> Finding {
    let (section, offset) = match &entry.target {
        &Target::At { section, offset } => (info.sections[section as usize].name.clone(), offset),
        Target::Odd(_) => (rule.section.to_string(), entry.word_offset),
    };
    let location = Location { section, offset, table_offset: entry.word_offset };
    match verdict {
        Verdict::Dead { nearest, distance, by } => Finding::Weak {
            location,
            symbol: nearest.map(|name| String::from_utf8_lossy(name).into_owned()),
            distance: *distance,
            by: *by,
        },
        Verdict::Doubt(why) => Finding::Doubt { location, why: why.clone() },
        Verdict::Valid => Finding::Kept { location },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object, Relocation, Symbol, SymbolSection};
    use object::{
        Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
    };

    /// An s390 module whose one callsite lies in no function.
    fn s390_all_dead() -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::S390x, Endianness::Big);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![7u8; 0x100], 8);
        obj.add_symbol(Symbol {
            name: b"f".to_vec(),
            value: 0,
            size: 0x40,
            kind: SymbolKind::Text,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        let table = obj.add_section(Vec::new(), MCOUNT_LOC_NAME.to_vec(), SectionKind::ReadOnlyData);
        obj.set_section_data(table, vec![0u8; 8], 8);
        let symbol = obj.section_symbol(text);
        let flags = RelocationFlags::Elf { r_type: object::elf::R_390_64 };
        obj.add_relocation(table, Relocation { offset: 0, symbol, addend: 0x80, flags }).unwrap();
        let info = obj.add_section(Vec::new(), b".modinfo".to_vec(), SectionKind::ReadOnlyString);
        obj.set_section_data(info, b"vermagic=6.12.0 SMP mod_unload\0".to_vec(), 1);
        obj.write().unwrap()
    }

    const MCOUNT_LOC_NAME: &[u8] = b"__mcount_loc";

    #[test]
    fn an_s390_table_is_never_emptied() {
        let data = s390_all_dead();
        // s390 zeroes (its adjust is the identity): the table keeps its size.
        let a = analyze(&data, &Options::default()).unwrap();
        assert!(a.summary().starts_with("zeroed 1 of 1 entries"), "{}", a.summary());
        // Were it to drop, the one word would go and the loader would fail
        // the module (s390 `module_finalize()`): the module stays unchanged.
        let info = elf::parse_info(&data).unwrap();
        let Scope::Act(mut rule) = arch::rule_for(&data, &info, None, &Overrides::default()).unwrap() else {
            panic!("s390 6.12 is acted on")
        };
        assert!(rule.empty_table_fails);
        rule.neutraliser =
            Neutraliser::Drop { kernel: crate::rule::release(6, 12, 0), adjust: crate::rule::Adjust::Add(4) };
        let callsite = info.alloc_section(rule.section).unwrap();
        let x = elf::extract(&data, &info, callsite, rule.shape, rule.mapping).unwrap().table().unwrap();
        let why = removal_plan(&data, &info, &rule, &x.callsite, &[0]).unwrap().unwrap_err();
        assert!(why.contains("would empty __mcount_loc") && why.contains("s390"), "{why}");
        let mut warnings = Vec::new();
        let decided = decide_module(&data, &info, &rule, &Options::default(), &mut warnings).unwrap();
        assert!(decided.plan.is_empty() && matches!(decided.outcome, Outcome::Skipped(LeftAlone::NoRule, _)));
        assert_eq!(warnings, [why]);
        // Without that loader fact the same drop would go ahead.
        assert!(
            removal_plan(&data, &info, &Rule { empty_table_fails: false, ..rule }, &x.callsite, &[0]).unwrap().is_ok()
        );
    }
}

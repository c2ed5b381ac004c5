// SPDX-License-Identifier: GPL-2.0-only
//! One module's bytes, start to end: read, decide, plan. Writing them is
//! [`crate::file`]'s job, and happens only after the plan is complete.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(clippy::struct_excessive_bools, reason = "Options holds independent command-line switches")]

pub use crate::file::process_file;

use std::fmt::Write as _;

use crate::arch::{self, Overrides, Rule, Scope};
use crate::compress::Format;
use crate::decide::{self, Layout, SymbolIndex, Verdict};
use crate::elf::{self, ElfInfo, Entry, Extraction, Target};
use crate::error::Error;
use crate::kconfig::Kconfig;
use crate::mark::{self, Proof};
use crate::plan::Plan;
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
    /// Written (or, under `--check`, would be): entries zeroed, the
    /// `mcount=` tag flipped, a signature dropped.
    Changed { zeroed: usize, stripped: bool, marked: bool },
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
    NotChecked,
}

impl LeftAlone {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LeftAlone::Signed => "signed",
            LeftAlone::Compressed => "compressed",
            LeftAlone::NotChecked => "not checked by the kernel",
        }
    }
}

/// The result of looking at one module: what to write, and what to say.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub plan: Plan,
    pub outcome: Outcome,
    /// `--verbose` lines, without the program and file prefix.
    pub details: Vec<String>,
    pub warnings: Vec<String>,
    /// Things the user must act on that are not warnings, such as re-signing.
    pub notes: Vec<String>,
    /// One line on what happened, for `--verbose`.
    pub summary: String,
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
    let (decided, section) = match arch::rule_for(image, &info, opts.kconfig.as_ref(), &opts.overrides)? {
        Scope::Unchecked(why) => {
            (Decided::left(LeftAlone::NotChecked, why.to_string(), Proof::CannotJudge(why.to_string())), None)
        }
        Scope::Act(rule) => {
            let mut decided = decide_module(image, &info, &rule, opts, &mut warnings)?;
            if !rule.check.kernel_checks() {
                // No check in this kernel, so no tag for it to trust.
                decided.proof = Proof::CannotJudge(format!("{}: the kernel has no check for a tag to skip", rule.arch));
            }
            (decided, Some(rule.section))
        }
    };
    // Flip the `mcount=` tag when this run proves the module clean, and back
    // when it finds a doubt in a module marked clean.
    let counts = section.map(|name| mark::Counts::of(&info, name));
    let step = mark::step(&mark::find(image, &info), &decided.proof, counts)?;
    let analysis = decided.finish(step, image.len() as u64, warnings)?;
    match signed_len {
        Some(len) => signed(analysis, len as u64, opts.signed),
        None => Ok(analysis),
    }
}

/// Apply the signature policy to the analysis of a signed module's image.
/// A module that needs no write keeps its signature and is simply
/// unchanged, whatever the policy: nothing would invalidate it.
fn signed(mut analysis: Analysis, image_len: u64, policy: SignedPolicy) -> Result<Analysis, Error> {
    let Outcome::Changed { stripped, .. } = &mut analysis.outcome else {
        return Ok(analysis);
    };
    match policy {
        SignedPolicy::Refuse => Err(Error::Signed),
        SignedPolicy::Leave => {
            let why = "module is signed and needs changes; left unchanged (--signed=skip): process modules before \
                       signing";
            let mut warnings = analysis.warnings;
            warnings.push(why.to_string());
            Ok(Analysis::skipped(LeftAlone::Signed, why.to_string(), warnings))
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

/// What a run with this rule can say about the tag. Only a rule read from
/// the module's own configuration can prove anything: without it, x86
/// assumes IBT (max 4), and a module built without IBT may still hold
/// entries 1-4 bytes after a symbol that its kernel rejects.
fn proof(opts: &Options, rule: &Rule, doubts: usize) -> Proof {
    if doubts > 0 {
        Proof::Doubt(format!("{doubts} {} kept for doubt", if doubts == 1 { "entry was" } else { "entries were" }))
    } else if let Some(kernel) = rule.unchecked_release {
        Proof::CannotJudge(format!("kernel {kernel} is newer than the rules this tool was checked against"))
    } else if opts.kconfig.is_none() {
        Proof::CannotJudge("no --kconfig: the rule is assumed, not known".into())
    } else if opts.overrides.max_offset.is_some() {
        Proof::CannotJudge("--max-offset overrides the configuration".into())
    } else {
        Proof::Proven
    }
}

impl Analysis {
    #[must_use]
    pub fn skipped(kind: LeftAlone, reason: String, warnings: Vec<String>) -> Analysis {
        Analysis {
            plan: Plan::default(),
            summary: format!("nothing to do: {reason}"),
            outcome: Outcome::Skipped(kind, reason),
            details: Vec::new(),
            warnings,
            notes: Vec::new(),
        }
    }
}

/// What deciding the entries found, before the tag and the signature are
/// settled; [`Decided::finish`] builds the plan and the outcome from it once.
struct Decided {
    /// The writes that zero entries.
    plan: Plan,
    zeroed: usize,
    /// Left alone on purpose, and why.
    left: Option<(LeftAlone, String)>,
    proof: Proof,
    details: Vec<String>,
    summary: String,
}

impl Decided {
    fn unchanged(reason: &str, proof: Proof) -> Decided {
        let summary = format!("nothing to do: {reason}");
        Decided { plan: Plan::default(), zeroed: 0, left: None, proof, details: Vec::new(), summary }
    }

    fn left(kind: LeftAlone, reason: String, proof: Proof) -> Decided {
        let base = Decided::unchanged(&reason, proof);
        Decided { left: Some((kind, reason)), ..base }
    }

    /// Add the tag write, and say how it ended:
    /// any write makes the file changed, even one left alone otherwise.
    fn finish(self, step: mark::Step, image_len: u64, mut warnings: Vec<String>) -> Result<Analysis, Error> {
        let Decided { mut plan, zeroed, left, mut details, mut summary, proof: _ } = self;
        let mark::Step { write, change, detail, warning } = step;
        details.extend(detail);
        warnings.extend(warning);
        let marked = write.is_some();
        if let Some(write) = write {
            plan.add(write, image_len)?;
            let _ = write!(summary, "; {}", change.as_deref().unwrap_or("mcount= tag rewritten"));
        }
        let outcome = if zeroed > 0 || marked {
            Outcome::Changed { zeroed, stripped: false, marked }
        } else if let Some((kind, why)) = left {
            Outcome::Skipped(kind, why)
        } else {
            Outcome::Unchanged
        };
        Ok(Analysis { plan, outcome, details, warnings, notes: Vec::new(), summary })
    }
}

fn decide_module(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Decided, Error> {
    if let Some(kernel) = rule.unchecked_release {
        let (major, minor) = arch::CHECKED_THROUGH;
        warnings.push(format!(
            "kernel {kernel} is newer than {major}.{minor}, the newest release this tool's rules were \
             checked against; applying {major}.{minor}'s rules (see docs/rules.md)"
        ));
    }
    // No table, or one the loader relocates nothing in: the kernel builds
    // no record, so there is nothing it could reject.
    let Some(callsite) = info.alloc_section(rule.section) else {
        return Ok(Decided::unchanged(&format!("no {} section", rule.section), proof(opts, rule, 0)));
    };
    let extracted = match elf::extract(image, info, callsite, rule.shape, rule.mapping)? {
        Extraction::Table(x) => x,
        Extraction::NoRelocations(why) => {
            // Without relocations the loader leaves the words as they are;
            // only all-zero words are sure to give no record.
            let zero = info.sections[callsite].bytes(image).iter().all(|&byte| byte == 0);
            let proof = if zero { proof(opts, rule, 0) } else { Proof::Doubt(format!("{why}, but its words are not zero")) };
            return Ok(Decided::unchanged(&why, proof));
        }
        Extraction::Unsupported(why) => {
            warnings.push(why.clone());
            return Ok(Decided::left(LeftAlone::NotChecked, why.clone(), Proof::Doubt(why)));
        }
    };
    let entries = &extracted.callsite.entries;
    let stripped = extracted.stripped_locals();
    let symbols = SymbolIndex::new(&extracted.symbols, extracted.strings);
    let mut layout = Layout::for_rule(&info.sections, &symbols, rule);
    layout.stripped_locals = stripped;
    let mut details = Vec::new();
    let decisions = decide::all(image, info, rule, entries, &symbols, &layout, |_, entry, verdict| {
        if opts.verbose && *verdict != Verdict::Valid {
            details.push(describe(info, rule, entry, verdict));
        }
    });
    let (zero, doubts) = (decisions.zero, decisions.doubt.len());
    // Static functions without symbols look exactly like weak bodies to the
    // kernel. Only say so when it costs something: entries are zeroed.
    if stripped && !zero.is_empty() {
        warnings.push(
            "the symbol table has no local function symbols (stripped with --strip-unneeded?): the kernel \
             cannot name or trace this module's static functions, and their entries are zeroed as it rejects them"
                .into(),
        );
    }
    let plan = Plan::new(image, info, &extracted.callsite, &zero)?;
    let what = rule.describe();
    let mut summary = if zero.is_empty() {
        format!("nothing to zero in {} entries [{what}]", entries.len())
    } else {
        format!("zeroed {} of {} entries [{what}]", zero.len(), entries.len())
    };
    if doubts > 0 {
        let _ = write!(summary, ", {doubts} kept for doubt");
    }
    Ok(Decided { plan, zeroed: zero.len(), left: None, proof: proof(opts, rule, doubts), details, summary })
}

fn describe(info: &ElfInfo, rule: &Rule, entry: &Entry, verdict: &Verdict<'_>) -> String {
    let location = match &entry.target {
        &Target::At { section, offset } => format!("{}+{offset:#x}", info.sections[section as usize].name),
        Target::Odd(_) => format!("{}+{:#x}", rule.section, entry.word_offset),
    };
    match verdict {
        Verdict::Zero { nearest: Some(name), distance } => {
            format!("zero {location} (distance {distance} after {})", String::from_utf8_lossy(name))
        }
        Verdict::Zero { nearest: None, distance } => {
            format!("zero {location} (distance {distance}, no symbol before it)")
        }
        Verdict::Doubt(why) => format!("keep {location}: {why}"),
        Verdict::Valid => format!("valid {location}"),
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! Every word the tool says about a module, from the plain data of
//! [`crate::report`]: the human lines of `-v` and `--check`. Scripts read
//! `--format=json` instead, so rewording a line here breaks no harness.

use std::fmt::Write as _;
use std::path::Path;

use crate::decide::{Doubt, Found, Stripped};
use crate::error::Error;
use crate::process::{Analysis, COMPRESSED_ADVICE, LeftAlone, Outcome, Tally};
use crate::report::{Finding, Location, Report};
use crate::risk::{self, AtRisk};
use crate::rule::{Criterion, Neutraliser, Rule};

pub use crate::cli::NAME;

/// What the human output shows of a module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Human {
    pub check: bool,
    pub verbose: bool,
    /// Tree mode: a compressed module left alone is counted, not warned about.
    pub tree: bool,
}

/// The lines (for stderr) that report one file, `shown` being its name.
#[must_use]
pub fn human(shown: &str, result: &Result<Analysis, Error>, how: Human) -> Vec<String> {
    let a = match result {
        Ok(a) => a,
        Err(e) => return vec![format!("{NAME}: {shown}: error: {e}")],
    };
    let mut lines = Vec::new();
    let quiet_skip = how.tree && matches!(a.outcome, Outcome::Skipped(LeftAlone::Compressed, _));
    if !quiet_skip {
        lines.extend(a.warnings.iter().map(|w| format!("{NAME}: {shown}: warning: {w}")));
    }
    lines.extend(a.notes.iter().map(|n| format!("{NAME}: {shown}: note: {n}")));
    if how.verbose {
        lines.extend(details(&a.report).iter().map(|d| format!("{NAME}: {shown}: {d}")));
    }
    match (how.check, &a.outcome) {
        (true, Outcome::Changed { signed, .. }) => {
            let what = if *signed { "would change (signed)" } else { "would change" };
            lines.push(format!("{NAME}: {shown}: {what}: {}", summary(&a.report, true)));
            lines.extend(dead(&a.report, *signed, how, shown).iter().map(|l| format!("{NAME}: {shown}: {l}")));
        }
        (true, Outcome::Skipped(LeftAlone::Signed, _)) => {
            lines.extend(dead(&a.report, true, how, shown).iter().map(|l| format!("{NAME}: {shown}: {l}")));
        }
        _ if how.verbose => lines.push(format!("{NAME}: {shown}: {}", summary(&a.report, false))),
        _ => {}
    }
    lines
}

/// What `--check` says of a module with dead records, after its summary
/// line: the functions at risk by name (`-v` has listed each already),
/// then in one line what that means and, outside a tree (whose summary
/// says it once), what to do.
fn dead(report: &Report, signed: bool, how: Human, shown: &str) -> Vec<String> {
    let Some(weak) = report.counts.map(|c| c.weak).filter(|&n| n > 0) else {
        return Vec::new();
    };
    let functions: Vec<&str> = risk::by_function(&report.at_risk).map(|f| f[0].function.as_str()).collect();
    let mut lines = Vec::new();
    let n = functions.len();
    if n > 0 && !how.verbose {
        lines.push(format!("{n} {} at risk: {}", plural(n, "function"), bounded(&functions)));
    }
    let mut meaning = match n {
        0 => "no function at risk: ".to_string(),
        1 => format!("{PROBES} on it {MISSES}; "),
        _ => format!("{PROBES} on them {MISSES}; "),
    };
    // The kernel's check disables what it rejects; what only containment
    // finds (all of them where the kernel checks nothing) stays enabled,
    // named after the function before it.
    let enabled = report.findings.iter().filter(|f| matches!(f, Finding::Weak { by: Found::Containment, .. })).count();
    let (disabled, records) = (weak - enabled, plural(weak, "record"));
    let stay = if enabled == 1 { "stays" } else { "stay" };
    let listed = "listed under the previous function's name";
    let _ = match (disabled, enabled) {
        (_, 0) => write!(meaning, "the kernel disables its {weak} dead {records} (listed as {INVALID})"),
        (0, _) => write!(meaning, "its {weak} dead {records} {stay} enabled, {listed}"),
        _ => write!(
            meaning,
            "the kernel disables {disabled} of its {weak} dead records (listed as {INVALID}); {enabled} {stay} enabled, {listed}"
        ),
    };
    if !how.tree {
        let step = if signed { format!("{BEFORE_SIGNING}, {SERIES}") } else { format!("{NAME} {shown}") };
        let _ = write!(
            meaning,
            "; {}: {step}",
            match (n, weak) {
                (0, 1) => "to remove it",
                (0, _) => "to remove them",
                _ => "to fix",
            }
        );
    }
    lines.push(meaning);
    lines
}

/// How the kernel lists a record it disables.
const INVALID: &str = "__ftrace_invalid_address___N";
/// Who is hurt by a function at risk, and how.
const PROBES: &str = "an fprobe, BPF fentry program or livepatch";
const MISSES: &str = "can attach to a dead weak body and never run";

/// The next step for modules that are signed: where each kind of build
/// runs the tool before it signs.
const BEFORE_SIGNING: &str = "process modules where they are built, before they are signed (install-kbuild-hook \
                              for kernel, DKMS and M= builds; dh_zero_weak_mcount or brp-zero-weak-mcount when \
                              packaging)";
/// The fix that needs no processing.
const SERIES: &str = "or run a kernel with this project's ftrace series";

/// `a`, `a and b`, `a, b and c`; past five names, the first four and
/// `and N more`.
fn bounded(names: &[&str]) -> String {
    const SHOWN: usize = 4;
    if names.len() > SHOWN + 1 {
        return format!("{} and {} more", names[..SHOWN].join(", "), names.len() - SHOWN);
    }
    joined(names, "and")
}

/// `a`, `a WORD b`, `a, b WORD c`.
fn joined<S: std::borrow::Borrow<str>>(items: &[S], word: &str) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {word} {}", rest.join(", "), last.borrow()),
        _ => items.join(""),
    }
}

/// "1 module", "2 modules".
fn plural(n: usize, word: &str) -> String {
    if n == 1 { word.to_string() } else { format!("{word}s") }
}

/// What the tree summary calls modules left alone for this reason.
fn left_alone(kind: LeftAlone) -> &'static str {
    match kind {
        LeftAlone::Signed => "signed",
        LeftAlone::Compressed => "compressed",
        LeftAlone::NoRule => "not checked by the kernel",
    }
}

/// The tree mode lines after every module's: the compressed modules left
/// alone, if any, then the summary line; under `--check`, when a module
/// would change, the functions at risk and the next step, last.
#[must_use]
pub fn tree_summary(tally: &Tally, check: bool) -> Vec<String> {
    let Tally { modules, changed, unchanged, errors, skipped, signed, at_risk, at_risk_modules } = tally;
    let mut lines = Vec::new();
    if let Some(&n) = skipped.get(&LeftAlone::Compressed) {
        lines.push(format!(
            "{NAME}: warning: {n} compressed {} left unchanged: {COMPRESSED_ADVICE}",
            plural(n, "module")
        ));
    }
    let skips: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {}", left_alone(*k))).collect();
    let skipped_total: usize = skipped.values().sum();
    lines.push(format!(
        "{NAME}: {modules} {}: {changed} {}{}, {unchanged} unchanged, {skipped_total} skipped{}, {errors} {}",
        plural(*modules, "module"),
        if check { "would change" } else { "changed" },
        if check && *signed > 0 { format!(" ({signed} signed)") } else { String::new() },
        if skips.is_empty() { String::new() } else { format!(" ({})", skips.join(", ")) },
        plural(*errors, "error"),
    ));
    let unsigned = changed - signed;
    // The signed modules that need changes: reported, or left alone under
    // --signed=skip.
    let signed = signed + skipped.get(&LeftAlone::Signed).copied().unwrap_or(0);
    if !check || unsigned + signed == 0 {
        return lines;
    }
    let step = match (unsigned, signed) {
        (_, 0) => format!("run {NAME} again without --check"),
        (0, _) => format!("{BEFORE_SIGNING}, {SERIES}"),
        _ => format!(
            "run {NAME} again without --check for the {unsigned} unsigned (--signed=skip leaves the others alone); \
             for the {signed} signed, {BEFORE_SIGNING}, {SERIES}"
        ),
    };
    lines.push(match at_risk {
        0 => format!("{NAME}: no function at risk; to remove the dead records: {step}"),
        n => format!(
            "{NAME}: {n} {} at risk in {at_risk_modules} {}: {PROBES} on them {MISSES}; to fix: {step}",
            plural(*n, "function"),
            plural(*at_risk_modules, "module")
        ),
    });
    lines
}

/// The line of a run a signal stopped after `done` of `total` modules.
#[must_use]
pub fn interrupted(done: usize, total: usize, changed: usize, check: bool) -> String {
    let what = if check { "would change" } else { "changed" };
    format!("{NAME}: interrupted: {done} of {total} done ({changed} {what})")
}

/// The terminal progress line, drawn over itself (`\r`, erase to the end).
#[must_use]
pub fn progress(done: usize, total: usize) -> String {
    format!("\r{NAME}: {done}/{total}\x1b[K")
}

/// A usage error; `text` may end in a newline (clap's do).
#[must_use]
pub fn usage_error(text: &str) -> String {
    let text = text.strip_prefix("error: ").unwrap_or(text);
    if text.ends_with('\n') { format!("{NAME}: error: {text}") } else { format!("{NAME}: error: {text}\n") }
}

/// What the walk of a directory argument says.
#[derive(Debug, Clone, Copy)]
pub enum Walked<'a> {
    /// No module file below it.
    Empty,
    /// A symbolic link not followed (`-v`).
    Symlink,
    /// It could not be walked.
    Failed(&'a std::io::Error),
}

/// The warning of a directory argument without a module file; an error
/// under `--fatal-warnings`, as every warning is.
pub const NO_MODULES: &str = "no modules in this tree (*.ko, *.ko.xz, *.ko.zst, *.ko.gz)";

/// The line for a path met while walking a tree.
#[must_use]
pub fn walked(path: &Path, what: Walked<'_>) -> String {
    let path = path.display();
    match what {
        Walked::Empty => format!("{NAME}: {path}: warning: {NO_MODULES}"),
        Walked::Symlink => format!("{NAME}: {path}: skipped symlink"),
        Walked::Failed(e) => format!("{NAME}: {path}: error: cannot walk: {}", crate::error::plain(e)),
    }
}

/// The usage errors of the command line as a whole.
#[derive(Debug, Clone, Copy)]
pub enum Usage<'a> {
    /// `--format=json` with `-o -`.
    JsonAndStdout,
    /// `--output` with a tree or several files.
    OutputOfMany,
    /// `--tree` with a path that is not a directory.
    NotATree(&'a Path),
}

/// A usage error of the command line as a whole, as one line.
#[must_use]
pub fn usage(what: Usage<'_>) -> String {
    usage_error(&match what {
        Usage::JsonAndStdout => {
            "--format=json writes the reports to stdout: -o - cannot write the module there too".to_string()
        }
        Usage::OutputOfMany => "--output takes exactly one input file".to_string(),
        Usage::NotATree(path) => format!("--tree: {} is not a directory", path.display()),
    })
}

/// The `--verbose` lines of a module the rule was applied to, without the
/// program and file prefix: the neutraliser, then each weak or doubtful
/// entry. None for a module left alone.
#[must_use]
pub fn details(report: &Report) -> Vec<String> {
    let (Some(rule), Some(counts), None) = (&report.rule, &report.counts, &report.nothing) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if counts.weak > 0 {
        lines.push(format!("neutraliser {}", neutraliser(rule.neutraliser)));
    }
    lines.extend(report.findings.iter().filter_map(|f| finding(rule, f)));
    lines.extend(risk::by_function(&report.at_risk).map(|f| format!("at risk: {}", at_risk(f))));
    lines.extend(
        risk::by_function(&report.at_risk_after).map(|f| format!("still at risk once processed: {}", at_risk(f))),
    );
    lines
}

/// `F (patch site .text+0x..[, why]) can resolve to dead .text+0x..[, ...
/// or .text+0x..]`, or `F (no record)` for a function without one: a
/// function once, with every dead record its lookup can return.
fn at_risk(items: &[AtRisk]) -> String {
    let r = &items[0];
    let own = match (r.patch_site, r.why) {
        (None, _) => "no record".to_string(),
        (Some(at), None) => format!("patch site {}+{at:#x}", r.section),
        (Some(at), Some(why)) => format!("patch site {}+{at:#x}, {why}", r.section),
    };
    let dead: Vec<String> = items.iter().map(|d| format!("{}+{:#x}", d.dead_section, d.dead_site)).collect();
    format!("{} ({own}) can resolve to dead {}", r.function, joined(&dead, "or"))
}

/// Why a function is at risk, for the JSON report.
fn at_risk_reason(r: &AtRisk) -> String {
    let f = &r.function;
    let dead = if r.dead_section == r.section {
        offset(r.dead_site, r.function_addr)
    } else {
        format!("{}+{:#x}", r.dead_section, r.dead_site)
    };
    if r.covered_by_dead {
        return format!(
            "the dead record at {dead} covers {f} itself, and the exact lookup of ftrace_location() can return it"
        );
    }
    let own = match (r.patch_site, r.why) {
        (None, _) => format!("{f} has no record of its own (as a notrace function has none)"),
        (Some(at), why) => format!(
            "{f}'s own record is at {}{}, not at the symbol",
            offset(at, r.function_addr),
            why.map_or_else(String::new, |w| format!(" ({w})"))
        ),
    };
    format!(
        "{own}, so ftrace_location() searches its whole kallsyms extent, and the bsearch of lookup_rec() can \
         return the dead record at {dead}"
    )
}

/// `+0x..` or `-0x..`: where `at` lies from `base`.
fn offset(at: u64, base: u64) -> String {
    if at >= base { format!("+{:#x}", at - base) } else { format!("-{:#x}", base - at) }
}

fn json_at_risk(list: &[AtRisk]) -> String {
    let hex = |v: u64| Json::str(&format!("{v:#x}"));
    let items: Vec<String> = list
        .iter()
        .map(|r| {
            let mut o = Json::object();
            o.field("function", &Json::str(&r.function));
            o.field("section", &Json::str(&r.section));
            o.field("function_addr", &hex(r.function_addr));
            o.field("patch_site", &r.patch_site.map_or("null".into(), hex));
            o.field("dead_site", &hex(r.dead_site));
            // Only where the extent ran on into another text section.
            let other = (r.dead_section != r.section).then(|| Json::str(&r.dead_section));
            o.field("dead_section", &other.unwrap_or_else(|| "null".into()));
            o.field("reason", &Json::str(&at_risk_reason(r)));
            o.field("dead_table_offset", &hex(r.dead_table_offset));
            o.close()
        })
        .collect();
    Json::array(&items)
}

/// One line on what happened to a module; `would` words it as `--check`
/// does for a module that would change.
#[must_use]
pub fn summary(report: &Report, would: bool) -> String {
    if let Some(reason) = &report.nothing {
        return format!("nothing to do: {reason}");
    }
    let (Some(rule), Some(counts)) = (&report.rule, &report.counts) else {
        return "nothing to do".into();
    };
    let what = describe(rule);
    let entries = counts.entries;
    let verb = match (rule.neutraliser, would) {
        (Neutraliser::Zero, false) => "zeroed",
        (Neutraliser::Zero, true) => "would zero",
        (Neutraliser::Drop { .. }, false) => "dropped",
        (Neutraliser::Drop { .. }, true) => "would drop",
    };
    let mut line = match counts.weak {
        0 => format!("nothing to zero in {entries} entries [{what}]"),
        n => format!("{verb} {n} of {entries} entries [{what}]"),
    };
    if counts.doubt > 0 {
        let _ = write!(line, ", {} kept for doubt", counts.doubt);
    }
    line
}

/// The rule in one phrase, for the summary line.
#[must_use]
pub fn describe(rule: &Rule) -> String {
    match rule.criterion {
        Criterion::MaxOffset => {
            format!("{}, {}, max offset {} ({})", rule.arch, rule.section, rule.max_offset, rule.basis)
        }
        Criterion::Contains { before } => format!(
            "{}, {}, inside a function symbol, up to {before} bytes before it ({}; the kernel has no \
             FTRACE_MCOUNT_MAX_OFFSET here)",
            rule.arch, rule.section, rule.basis
        ),
    }
}

/// The neutraliser and why the rule chose it.
#[must_use]
pub fn neutraliser(n: Neutraliser) -> String {
    match n {
        Neutraliser::Zero => {
            "zero: the kernel skips a zero word (it tests for zero before adjusting, or its adjust maps 0 to 0)".into()
        }
        Neutraliser::Drop { kernel, adjust } => format!(
            "drop: kernel {kernel} adjusts a callsite word before testing it for zero, and its adjust \
             ({adjust:?}) would turn a zeroed word into a bogus record"
        ),
    }
}

/// The neutraliser's verb: "zero" or "drop".
#[must_use]
pub fn verb(n: Neutraliser) -> &'static str {
    match n {
        Neutraliser::Zero => "zero",
        Neutraliser::Drop { .. } => "drop",
    }
}

/// `.text+0x20`.
#[must_use]
pub fn location(l: &Location) -> String {
    format!("{}+{:#x}", l.section, l.offset)
}

/// The `--verbose` line of a weak or doubtful entry (none for a kept one).
fn finding(rule: &Rule, f: &Finding) -> Option<String> {
    let verb = verb(rule.neutraliser);
    Some(match f {
        Finding::Kept { .. } => return None,
        Finding::Weak { location: l, symbol, distance, by } => {
            let before = match symbol {
                Some(name) => format!("distance {distance} after {name}"),
                None => format!("distance {distance}, no symbol before it"),
            };
            // Where the kernel checks records, say which dead ones its
            // check keeps: they are the ones a processed module changes.
            let missed = if rule.criterion == Criterion::MaxOffset && *by == Found::Containment {
                "; in no function, which the kernel's check misses: stock keeps its record enabled"
            } else {
                ""
            };
            format!("{verb} {} ({before}{missed})", location(l))
        }
        Finding::Doubt { location: l, why } => format!("keep {}: {}", location(l), doubt(why, rule.max_offset)),
    })
}

/// Why an entry is kept although no symbol explains it, under a rule of
/// max offset `max`.
fn doubt(d: &Doubt, max: u64) -> String {
    match d {
        Doubt::Odd(odd) => odd.to_string(),
        Doubt::PastEnd { ip } => format!("record ip {ip:#x} lies past the end of its section"),
        Doubt::Preceded { by } => {
            format!("within {max} bytes of its section's start, and {by} precedes it in the same memory region")
        }
        Doubt::Overhang { symbol, section } => {
            format!("symbol {symbol} of {section} lies past that section's end and may land here")
        }
        Doubt::Unsized { symbol } => {
            format!("in no sized function, but the nearest symbol {symbol} has no function size")
        }
        Doubt::Stripped(Stripped::NoLocalFunctions) => {
            "in no sized function, but the module has no local function symbols to tell".into()
        }
        Doubt::Stripped(Stripped::OnlyRelocated) => "in no sized function, but every local symbol left is one a \
             relocation names (stripped with --strip-unneeded?): a static function may have lost its own"
            .into(),
        Doubt::RegionStart => format!(
            "within {max} bytes of its memory region's start, and this kernel's symbol lookup is not bounded by \
             the region"
        ),
    }
}

impl Analysis {
    /// The summary line, as `--verbose` prints it.
    #[must_use]
    pub fn summary(&self) -> String {
        summary(&self.report, false)
    }

    /// The `--verbose` lines, without the program and file prefix.
    #[must_use]
    pub fn details(&self) -> Vec<String> {
        details(&self.report)
    }
}

/// The `format_version` of every JSON object: raised when a key is removed
/// or its meaning changes, not when a key is added (docs/report-format.md).
pub const JSON_FORMAT_VERSION: u32 = 1;

/// The module's `--format=json` object, on one line (docs/report-format.md).
#[must_use]
pub fn json(shown: &str, result: &Result<Analysis, Error>, check: bool) -> String {
    // An error object has every key, each null or empty.
    let a = result.as_ref().ok();
    let r = a.map(|a| &a.report);
    let status = match a.map(|a| &a.outcome) {
        None => "error",
        Some(Outcome::Changed { .. }) if check => "would_change",
        Some(Outcome::Changed { .. }) => "changed",
        Some(Outcome::Unchanged) => "unchanged",
        Some(Outcome::Skipped(..)) => "skipped",
    };
    let mut o = Json::object();
    o.field("file", &Json::str(shown));
    o.field("status", &Json::str(status));
    o.field("signed", &r.map_or("null".into(), |r| r.signed.to_string()));
    o.field("error", &result.as_ref().err().map_or("null".into(), |e| Json::str(&e.to_string())));
    o.field("reason", &r.and_then(|r| r.nothing.as_deref()).map_or("null".into(), Json::str));
    let rule = r.and_then(|r| r.rule.as_ref());
    o.field("arch", &rule.map_or("null".into(), |x| Json::str(x.arch.name())));
    o.field("section", &rule.map_or("null".into(), |x| Json::str(x.section)));
    // The rule's name and its number: `FTRACE_MCOUNT_MAX_OFFSET`, or how
    // many bytes ahead of a function symbol still count as inside it (the
    // summary line's "up to N bytes before it").
    let (name, max_offset, before) = match rule.map(|x| (x.criterion, x.max_offset)) {
        None => ("null".into(), None, None),
        Some((Criterion::MaxOffset, max)) => (Json::str("max_offset"), Some(max), None),
        Some((Criterion::Contains { before }, _)) => (Json::str("in_function"), None, Some(before)),
    };
    o.field("rule", &name);
    o.field("max_offset", &max_offset.map_or("null".into(), |n| n.to_string()));
    o.field("in_function_before", &before.map_or("null".into(), |n| n.to_string()));
    o.field("neutraliser", &rule.map_or("null".into(), |x| Json::str(verb(x.neutraliser))));
    let counts = r.and_then(|r| r.counts);
    o.field("entries", &counts.map_or("null".into(), |c| c.entries.to_string()));
    o.field("weak", &counts.map_or("null".into(), |c| c.weak.to_string()));
    o.field("doubt", &counts.map_or("null".into(), |c| c.doubt.to_string()));
    let findings: Vec<String> = r.map_or(&[][..], |r| &r.findings).iter().map(|f| json_finding(rule, f)).collect();
    o.field("findings", &Json::array(&findings));
    o.field("at_risk", &json_at_risk(r.map_or(&[], |r| &r.at_risk)));
    o.field("at_risk_after", &json_at_risk(r.map_or(&[], |r| &r.at_risk_after)));
    let strings =
        |list: Option<&Vec<String>>| Json::array(&list.into_iter().flatten().map(|w| Json::str(w)).collect::<Vec<_>>());
    o.field("warnings", &strings(a.map(|a| &a.warnings)));
    o.field("notes", &strings(a.map(|a| &a.notes)));
    o.field("format_version", &JSON_FORMAT_VERSION.to_string());
    o.close()
}

fn json_finding(rule: Option<&Rule>, f: &Finding) -> String {
    let l = f.location();
    let mut o = Json::object();
    o.field("location", &Json::str(&location(l)));
    o.field("section", &Json::str(&l.section));
    o.field("offset", &Json::str(&format!("{:#x}", l.offset)));
    o.field("table_offset", &Json::str(&format!("{:#x}", l.table_offset)));
    let (verdict, neutraliser, distance, symbol, why) = match f {
        Finding::Kept { .. } => ("kept", None, None, None, None),
        Finding::Weak { symbol, distance, .. } => {
            ("weak", rule.map(|r| verb(r.neutraliser)), Some(*distance), symbol.as_deref(), None)
        }
        Finding::Doubt { why, .. } => ("doubt", None, None, None, Some(doubt(why, rule.map_or(0, |r| r.max_offset)))),
    };
    // Which rule found a dead entry, and what a kernel that loads the
    // module as it is does with its record.
    let (found_by, stock) = match f {
        Finding::Weak { by: Found::KernelCheck, .. } => (Some("max_offset"), Some("rejected")),
        Finding::Weak { by: Found::Containment, .. } => {
            let checks = rule.is_some_and(|r| r.criterion == Criterion::MaxOffset);
            (Some("in_function"), Some(if checks { "kept_enabled" } else { "kept_enabled_unchecked" }))
        }
        _ => (None, None),
    };
    o.field("verdict", &Json::str(verdict));
    o.field("neutraliser", &neutraliser.map_or("null".into(), Json::str));
    o.field("distance", &distance.map_or("null".into(), |d| d.to_string()));
    o.field("symbol", &symbol.map_or("null".into(), Json::str));
    o.field("doubt", &why.as_deref().map_or("null".into(), Json::str));
    o.field("found_by", &found_by.map_or("null".into(), Json::str));
    o.field("stock", &stock.map_or("null".into(), Json::str));
    o.close()
}

/// Just enough JSON writing for flat objects of strings, numbers and
/// arrays: a serializer crate would bring more code than it saves here.
struct Json(String);

impl Json {
    fn object() -> Json {
        Json(String::from("{"))
    }

    /// Add `"key": value`, `value` being JSON already.
    fn field(&mut self, key: &str, value: &str) {
        if self.0.len() > 1 {
            self.0.push_str(", ");
        }
        let _ = write!(self.0, "{}: {value}", Json::str(key));
    }

    fn close(mut self) -> String {
        self.0.push('}');
        self.0
    }

    fn array(items: &[String]) -> String {
        format!("[{}]", items.join(", "))
    }

    /// A JSON string: quotes, backslashes and control characters escaped
    /// (RFC 8259, section 7); everything else is UTF-8 as it is.
    fn str(s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn json_strings_escape_what_rfc_8259_requires() {
        assert_eq!(Json::str("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}

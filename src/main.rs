#![allow(clippy::struct_excessive_bools, reason = "Cli holds independent command-line switches")]

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use zero_weak_mcount::arch::Overrides;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{self, CompressedPolicy, LeftAlone, Options, Outcome, SignedPolicy};
use zero_weak_mcount::walk;

const NAME: &str = "zero-weak-mcount";

/// Zero the ftrace callsite entries of overridden weak functions in Linux
/// kernel modules, so the kernel never builds records for them.
///
/// Run it on each .ko right after it is linked, before it is signed,
/// stripped or compressed; or on a whole module tree (a DIR argument) when
/// packaging. All output goes to stderr.
#[derive(Parser, Debug)]
#[command(name = NAME, version)]
struct Cli {
    /// Module files (.ko), processed in place, or directories to walk
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Write nothing; exit 1 if any file would change
    #[arg(long)]
    check: bool,
    /// List each zeroed entry and each entry kept for doubt, and a summary per file
    #[arg(short, long)]
    verbose: bool,
    /// Write the result to PATH instead of in place (one input file only)
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Kernel .config or include/config/auto.conf the modules were built with
    #[arg(long, value_name = "FILE")]
    kconfig: Option<PathBuf>,
    /// Override `FTRACE_MCOUNT_MAX_OFFSET` (default: from --kconfig, else the widest the arch allows)
    #[arg(long, value_name = "N")]
    max_offset: Option<u64>,
    /// The callsite section the kernel reads (__`mcount_loc` or __`patchable_function_entries`)
    #[arg(long, value_name = "NAME")]
    section: Option<String>,
    /// What to do with a signed module
    #[arg(long, value_enum, default_value_t = SignedPolicy::Refuse, value_name = "POLICY")]
    signed: SignedPolicy,
    /// What to do with a compressed module (.ko.xz, .ko.zst, .ko.gz)
    #[arg(long, value_enum, default_value_t = CompressedPolicy::Leave, value_name = "POLICY")]
    compressed: CompressedPolicy,
    /// Treat warnings as errors (the file is left unchanged)
    #[arg(long)]
    fatal_warnings: bool,
    /// Write a temporary file, fsync it and rename it over the original
    #[arg(long)]
    atomic: bool,
    /// Every PATH is a module tree to walk (a directory PATH is walked anyway)
    #[arg(long)]
    tree: bool,
    /// Worker threads [default: $`RPM_BUILD_NCPUS`, else the available CPUs]
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
}

/// What one file produced: lines to print, and how to count it.
struct Done {
    lines: Vec<String>,
    outcome: Result<Outcome, ()>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let usage = |msg: &str| {
        eprintln!("{NAME}: error: {msg}");
        ExitCode::from(2)
    };
    let kconfig = match cli.kconfig.as_deref().map(Kconfig::load).transpose() {
        Ok(k) => k,
        Err(e) => return usage(&e.to_string()),
    };
    let Inputs { files, tree, walk_failed } = match inputs(&cli) {
        Ok(inputs) => inputs,
        Err(msg) => return usage(&msg),
    };

    let opts = Options {
        check: cli.check,
        verbose: cli.verbose,
        kconfig,
        overrides: Overrides { max_offset: cli.max_offset, section: cli.section },
        signed: cli.signed,
        compressed: cli.compressed,
        fatal_warnings: cli.fatal_warnings,
        atomic: cli.atomic,
        // Packagers' trees keep their timestamps; a Kbuild target must not.
        keep_mtime: tree,
    };
    let output = cli.output.as_deref();
    let jobs = cli.jobs.unwrap_or_else(walk::default_jobs);
    let progress = tree && std::io::stderr().is_terminal();
    let total = files.len();
    let results = walk::parallel(
        &files,
        jobs,
        |path| run(path, output, &opts, tree),
        |n| {
            if progress {
                eprint!("\r{NAME}: {n}/{total}\x1b[K");
            }
        },
    );
    if progress {
        eprint!("\r\x1b[K");
    }
    let failed = report(&results, tree, opts.check) || walk_failed;
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The module files to process.
struct Inputs {
    files: Vec<PathBuf>,
    /// A directory was given (or `--tree`): tree mode.
    tree: bool,
    /// A directory could not be walked (already reported).
    walk_failed: bool,
}

/// The files the command line names, directories walked; `Err` is a usage
/// error.
fn inputs(cli: &Cli) -> Result<Inputs, String> {
    let mut files = Vec::new();
    let mut tree = cli.tree;
    let mut walk_failed = false;
    for path in &cli.paths {
        if path.is_dir() {
            tree = true;
            match walk::modules(path) {
                Ok(found) => files.extend(found),
                Err(e) => {
                    eprintln!("{NAME}: {}: error: cannot walk: {e}", path.display());
                    walk_failed = true;
                }
            }
        } else if cli.tree {
            return Err(format!("--tree: {} is not a directory", path.display()));
        } else {
            files.push(path.clone());
        }
    }
    if cli.output.is_some() && (tree || files.len() != 1) {
        return Err("--output takes exactly one input file".into());
    }
    Ok(Inputs { files, tree, walk_failed })
}

/// Print every file's lines and, in tree mode, the summary; true if the
/// run failed (an error, or `--check` found a file to change).
fn report(results: &[Done], tree: bool, check: bool) -> bool {
    let mut changed = 0;
    let mut unchanged = 0;
    let mut errors = 0;
    let mut skipped: BTreeMap<LeftAlone, usize> = BTreeMap::new();
    for done in results {
        for line in &done.lines {
            eprintln!("{line}");
        }
        match &done.outcome {
            Ok(Outcome::Changed { .. }) => changed += 1,
            Ok(Outcome::Unchanged) => unchanged += 1,
            Ok(Outcome::Skipped(kind, _)) => *skipped.entry(*kind).or_default() += 1,
            Err(()) => errors += 1,
        }
    }
    if tree {
        if let Some(&n) = skipped.get(&LeftAlone::Compressed) {
            eprintln!(
                "{NAME}: warning: {n} compressed modules left unchanged (--compressed=recompress processes them)"
            );
        }
        let skips: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {}", k.name())).collect();
        let skipped_total: usize = skipped.values().sum();
        eprintln!(
            "{NAME}: {} modules: {changed} {}, {unchanged} unchanged, {skipped_total} skipped{}, {errors} errors",
            results.len(),
            if check { "would change" } else { "changed" },
            if skips.is_empty() { String::new() } else { format!(" ({})", skips.join(", ")) },
        );
    }
    errors > 0 || (check && changed > 0)
}

fn run(path: &Path, output: Option<&Path>, opts: &Options, tree: bool) -> Done {
    let shown = path.display();
    match process::process_file(path, output, opts) {
        Ok(a) => {
            let mut lines = Vec::new();
            let quiet_skip = tree && matches!(a.outcome, Outcome::Skipped(LeftAlone::Compressed, _));
            if !quiet_skip {
                lines.extend(a.warnings.iter().map(|w| format!("{NAME}: {shown}: warning: {w}")));
            }
            lines.extend(a.notes.iter().map(|n| format!("{NAME}: {shown}: note: {n}")));
            if opts.verbose {
                lines.extend(a.details.iter().map(|d| format!("{NAME}: {shown}: {d}")));
            }
            let changes = matches!(a.outcome, Outcome::Changed { .. });
            if opts.check && changes {
                let summary = match a.summary.strip_prefix("zeroed ") {
                    Some(rest) => format!("would zero {rest}"),
                    None => a.summary,
                };
                lines.push(format!("{NAME}: {shown}: would change: {summary}"));
            } else if opts.verbose {
                lines.push(format!("{NAME}: {shown}: {}", a.summary));
            }
            Done { lines, outcome: Ok(a.outcome) }
        }
        Err(e) => Done { lines: vec![format!("{NAME}: {shown}: error: {e}")], outcome: Err(()) },
    }
}

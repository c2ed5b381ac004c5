// SPDX-License-Identifier: GPL-2.0-only
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Parser;
use zero_weak_mcount::arch::Overrides;
use zero_weak_mcount::cli::{Cli, NAME};
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{LeftAlone, Options, Outcome};
use zero_weak_mcount::render::{self, Human};
use zero_weak_mcount::walk;

/// What one file produced: lines to print, and how to count it.
struct Done {
    lines: Vec<String>,
    outcome: Result<Outcome, ()>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
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
    let progress = (tree && std::io::stderr().is_terminal()).then(|| Progress::new(files.len()));
    let results = walk::parallel(
        &files,
        jobs,
        |path| run(path, output, &opts, tree),
        |n| {
            if let Some(p) = &progress {
                p.done(n);
            }
        },
    );
    if progress.is_some() {
        eprint!("\r\x1b[K");
    }
    let counts = report(&results, tree, opts.check);
    exit_status(opts.check, counts.changed, counts.errors + usize::from(walk_failed))
}

/// The exit status, as `cmp` and `diff` have it (SCHEMA.md): under
/// `--check` 0 nothing would change, 1 something would, 2 trouble (a
/// module that cannot be read or judged), trouble winning; otherwise 0 or
/// 1 when a module failed. Usage errors (2) never get this far.
fn exit_status(check: bool, changed: usize, errors: usize) -> ExitCode {
    match (check, errors > 0, changed > 0) {
        (true, true, _) => ExitCode::from(2),
        (true, false, true) | (false, true, _) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}

/// How many modules changed (or would) and how many failed.
struct Counts {
    changed: usize,
    errors: usize,
}

/// clap's messages, in the `zero-weak-mcount: error: ...` shape of every
/// other message; help and `--version` go to stdout as usual.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("{NAME}: error: {text}");
    ExitCode::from(2)
}

/// The terminal progress line. Workers finish out of order and call in
/// from several threads, so the count shown only ever grows, and it is
/// redrawn at most every `PROGRESS_EVERY`: a redraw per module would cost
/// more than a small module's processing.
struct Progress {
    total: usize,
    shown: Mutex<(usize, Instant)>,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Progress {
    fn new(total: usize) -> Progress {
        Progress { total, shown: Mutex::new((0, Instant::now())) }
    }

    fn done(&self, n: usize) {
        let mut shown = self.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if n > shown.0 && now.duration_since(shown.1) >= PROGRESS_EVERY {
            *shown = (n, now);
            // Drawn under the lock, so that two threads cannot swap lines.
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{NAME}: {n}/{}\x1b[K", self.total);
            let _ = err.flush();
        }
    }
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

/// Print every file's lines and, in tree mode, the summary.
fn report(results: &[Done], tree: bool, check: bool) -> Counts {
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
                "{NAME}: warning: {n} compressed modules left unchanged: {}",
                zero_weak_mcount::process::COMPRESSED_ADVICE
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
    Counts { changed, errors }
}

fn run(path: &Path, output: Option<&Path>, opts: &Options, tree: bool) -> Done {
    let result = zero_weak_mcount::file::process_file(path, output, opts);
    let how = Human { check: opts.check, verbose: opts.verbose, tree };
    let lines = render::human(&path.display().to_string(), &result, how);
    Done { lines, outcome: result.map(|a| a.outcome).map_err(|_| ()) }
}

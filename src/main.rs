// SPDX-License-Identifier: GPL-2.0-only
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use zero_weak_mcount::arch::Overrides;
use zero_weak_mcount::cli::{Cli, Format};
use zero_weak_mcount::error::Error;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Analysis, Options, Outcome, Tally};
use zero_weak_mcount::render::{self, Human, Usage, Walked};
use zero_weak_mcount::{risk, stop, walk};

/// What one file produced: lines to print, and how to count it.
struct Done {
    lines: Vec<String>,
    /// The module's `--format=json` line.
    json: Option<String>,
    outcome: Result<Outcome, ()>,
    /// The functions the module puts at risk, each once.
    at_risk: usize,
}

/// std's start keeps what the tool relies on before this runs: the
/// standard fds open (a closed one is reopened on /dev/null, so a closed
/// stdout never becomes the module we write), and SIGPIPE ignored (a
/// closed pipe is an `EPIPE`, which `stop` turns into a quiet end).
fn main() -> ExitCode {
    ExitCode::from(run())
}

fn run() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    stop::install();
    let usage = |line: &str| {
        eprint!("{line}");
        2
    };
    let kconfig = match cli.kconfig.as_deref().map(Kconfig::load).transpose() {
        Ok(k) => k,
        Err(e) => return usage(&render::usage_error(&e.to_string())),
    };
    let Inputs { files, tree, walk_failed } = match inputs(&cli) {
        Ok(inputs) => inputs,
        Err(msg) => return usage(&msg),
    };
    if cli.format == Format::Json && cli.output.as_deref() == Some(Path::new("-")) {
        return usage(&render::usage(Usage::JsonAndStdout));
    }

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
    // One file runs on this thread: asking how many CPUs there are reads
    // the cgroup's files, which costs more than a small module's work.
    let jobs = if files.len() > 1 { cli.jobs.unwrap_or_else(walk::default_jobs) } else { 1 };
    let total = files.len();
    let mut progress =
        (tree && std::io::stderr().is_terminal()).then(|| Progress { total, shown: (0, Instant::now()), drawn: false });
    let mut tally = Tally::default();
    let done = walk::parallel(
        &files,
        jobs,
        |path| run_one(path, output, &opts, tree, cli.format),
        |_, done, finished| {
            // Each module's lines as soon as it (and every one before it)
            // is done: an interrupted run has said what it changed.
            if let Some(p) = progress.as_mut().filter(|_| !done.lines.is_empty()) {
                p.clear();
            }
            print_done(&done);
            tally.add(done.outcome.as_ref().ok(), done.at_risk);
            if let Some(p) = &mut progress {
                p.done(finished);
            }
        },
        || stop::requested().is_some(),
    );
    if let Some(p) = &mut progress {
        p.clear();
    }
    match stop::requested() {
        Some(stop::PIPE) => closed_pipe(),
        Some(sig) => {
            say(&render::interrupted(done, total, tally.changed, opts.check));
            // 128 + the signal, as a shell reports a process it killed.
            u8::try_from(128 + sig).unwrap_or(1)
        }
        None => {
            if tree {
                for line in render::tree_summary(&tally, opts.check) {
                    say(&line);
                }
            }
            exit_status(opts.check, tally.changed, tally.errors + usize::from(walk_failed))
        }
    }
}

/// One line to stderr. A closed stderr ends the run quietly, as a closed
/// pipe does any filter's.
fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    if let Err(e) = writeln!(err, "{line}") {
        stop::on_write_error(&e);
    }
}

/// The reader of our output went away: stop as `cat` would, killed by
/// SIGPIPE, without a word (the modules started were finished first).
fn closed_pipe() -> u8 {
    // SAFETY: restoring the default action and raising the signal; nothing
    // else runs after this.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    141
}

/// The exit status, as `cmp` and `diff` have it (SCHEMA.md): under
/// `--check` 0 nothing would change, 1 something would, 2 trouble (a
/// module that cannot be read or judged), trouble winning; otherwise 0 or
/// 1 when a module failed. Usage errors (2) never get this far.
fn exit_status(check: bool, changed: usize, errors: usize) -> u8 {
    match (check, errors > 0, changed > 0) {
        (true, true, _) => 2,
        (true, false, true) | (false, true, _) => 1,
        _ => 0,
    }
}

/// clap's messages, in the `zero-weak-mcount: error: ...` shape of every
/// other message; help and `--version` go to stdout as usual.
fn usage_error(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return 0;
    }
    eprint!("{}", render::usage_error(&e.render().to_string()));
    2
}

/// The terminal progress line, redrawn at most every `PROGRESS_EVERY`: a
/// redraw per module would cost more than a small module's processing.
/// Only the reporter (one at a time) calls it.
struct Progress {
    total: usize,
    shown: (usize, Instant),
    /// The line is on the screen.
    drawn: bool,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Progress {
    fn done(&mut self, n: usize) {
        let now = Instant::now();
        if n > self.shown.0 && now.duration_since(self.shown.1) >= PROGRESS_EVERY {
            self.shown = (n, now);
            self.drawn = true;
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{}", render::progress(n, self.total));
            let _ = err.flush();
        }
    }

    /// Take the line off the screen, so that what follows starts a line.
    fn clear(&mut self) {
        if std::mem::take(&mut self.drawn) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// The module files to process.
struct Inputs {
    files: Vec<PathBuf>,
    /// A directory was given (or `--tree`): tree mode.
    tree: bool,
    /// A directory could not be walked, or held no module under
    /// `--fatal-warnings` (already reported).
    walk_failed: bool,
}

/// The files the command line names, directories walked; `Err` is a usage
/// error's line.
fn inputs(cli: &Cli) -> Result<Inputs, String> {
    let mut files = Vec::new();
    let mut tree = cli.tree;
    let mut walk_failed = false;
    for path in &cli.paths {
        if path.is_dir() {
            tree = true;
            match walk::tree(path) {
                Ok(found) => {
                    if found.modules.is_empty() && cli.fatal_warnings {
                        // An error like any module's, and in the JSON an
                        // error object: a mistyped path fails the step.
                        walk_failed = true;
                        let err = Err(Error::FatalWarning(render::NO_MODULES.into()));
                        let json = cli.format == Format::Json;
                        print_done(&done(&path.display().to_string(), err, Human::default(), json, cli.check));
                    } else if found.modules.is_empty() {
                        say(&render::walked(path, Walked::Empty));
                    }
                    if cli.verbose {
                        for link in &found.symlinks {
                            say(&render::walked(link, Walked::Symlink));
                        }
                    }
                    files.extend(found.modules);
                }
                Err(e) => {
                    say(&render::walked(path, Walked::Failed(&e)));
                    walk_failed = true;
                }
            }
        } else if cli.tree {
            return Err(render::usage(Usage::NotATree(path)));
        } else {
            files.push(path.clone());
        }
    }
    if cli.output.is_some() && (tree || files.len() != 1) {
        return Err(render::usage(Usage::OutputOfMany));
    }
    Ok(Inputs { files, tree, walk_failed })
}

/// Print a module's lines as it is reported.
fn print_done(done: &Done) {
    if stop::requested() == Some(stop::PIPE) {
        return;
    }
    for line in &done.lines {
        say(line);
    }
    if let Some(json) = &done.json {
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, "{json}").and_then(|()| out.flush()) {
            stop::on_write_error(&e);
        }
    }
}

fn run_one(path: &Path, output: Option<&Path>, opts: &Options, tree: bool, format: Format) -> Done {
    let result = zero_weak_mcount::file::process_file(path, output, opts);
    let json = format == Format::Json;
    // With JSON on stdout, stderr keeps the warnings, notes and errors.
    let how = Human { check: opts.check && !json, verbose: opts.verbose && !json, tree };
    done(&path.display().to_string(), result, how, json, opts.check)
}

/// What a file's result prints (its JSON line too, with `json`), and how
/// it counts.
fn done(shown: &str, result: Result<Analysis, Error>, how: Human, json: bool, check: bool) -> Done {
    let lines = render::human(shown, &result, how);
    let json = json.then(|| render::json(shown, &result, check));
    let at_risk = result.as_ref().map_or(0, |a| risk::by_function(&a.report.at_risk).count());
    Done { lines, json, outcome: result.map(|a| a.outcome).map_err(|_| ()), at_risk }
}

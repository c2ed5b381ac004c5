// SPDX-License-Identifier: GPL-2.0-only
//! The command line, as data: `main` parses it, and `examples/gen-docs.rs`
//! turns the same definition into the man page and the shell completions,
//! so that neither can drift from the options the binary accepts.

#![allow(clippy::struct_excessive_bools, reason = "Cli holds independent command-line switches")]

use std::path::PathBuf;

use clap::Parser;

use crate::process::{CompressedPolicy, SignedPolicy};

pub const NAME: &str = "zero-weak-mcount";

/// How the per-module report is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for people, on stderr.
    #[default]
    Human,
    /// JSON Lines on stdout, one object per module (report-format.md).
    Json,
}

/// The text after the options in --help: the exit statuses, as `cmp` and
/// `diff` use them (examples/gen-docs.rs makes the man page's EXIT STATUS
/// from the same lines).
pub const AFTER_HELP: &str = "Exit status (file and tree mode alike):
  0  success; under --check, nothing would change
  1  under --check, at least one module would change; otherwise a module failed (left unchanged)
  2  usage error; under --check also a module that cannot be read or judged (this wins over 1)
  130, 143  interrupted by SIGINT or SIGTERM: the modules started are finished, the rest left alone
Each module's lines are printed as soon as it and every module before it are done.";

/// The crate version and the build identity from build.rs: a `git
/// describe` of the sources, or a hash of them outside git. The Kbuild hook
/// records this line in a shell command, so a rebuilt tool reprocesses every
/// module; build.rs keeps it free of shell metacharacters.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " ", env!("ZWM_BUILD_ID"));

/// Zero the ftrace callsite entries of overridden weak functions in Linux
/// kernel modules, so the kernel never builds records for them.
///
/// Where it runs: after the module is linked, before it is signed and
/// before it is compressed. Whether it runs before or after stripping makes
/// no difference. Give it each .ko as Kbuild links it, or a whole module
/// tree (a DIR argument) when packaging.
///
/// A module tree keeps each file's modification time, as packagers want; a
/// file named on the command line gets a new one, as make wants of a target
/// it rebuilt. All output goes to stderr.
#[derive(Parser, Debug)]
#[command(name = NAME, version = VERSION, after_help = AFTER_HELP)]
#[allow(clippy::doc_markdown, reason = "these comments are the --help text and the man page, where backticks show")]
pub struct Cli {
    /// Module files (.ko, .ko.xz, .ko.zst, .ko.gz), processed in place, or directories to walk
    #[arg(required = true, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    /// Write nothing; exit 1 if any file would change (compressed and signed modules included)
    #[arg(long)]
    pub check: bool,
    /// List each zeroed entry and each entry kept for doubt, and a summary per file
    #[arg(short, long)]
    pub verbose: bool,
    /// Write the result to PATH instead of in place (one input file only; - is stdout)
    #[arg(short, long, value_name = "PATH", value_hint = clap::ValueHint::FilePath, conflicts_with = "check")]
    pub output: Option<PathBuf>,
    /// Kernel .config or include/config/auto.conf the modules were built with (another release warns, another arch fails)
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub kconfig: Option<PathBuf>,
    /// Override FTRACE_MCOUNT_MAX_OFFSET (default: from --kconfig, else the widest the arch allows)
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    pub max_offset: Option<u64>,
    /// The callsite section the kernel reads (__mcount_loc or __patchable_function_entries)
    #[arg(long, value_name = "NAME", value_parser = ["__mcount_loc", "__patchable_function_entries"])]
    pub section: Option<String>,
    /// What to do with a signed module that needs changes (one that needs none is left as it is)
    #[arg(long, value_enum, default_value_t = SignedPolicy::Refuse, value_name = "POLICY")]
    pub signed: SignedPolicy,
    /// What to do with a compressed module (.ko.xz, .ko.zst, .ko.gz); --check reads it in memory anyway
    #[arg(long, value_enum, default_value_t = CompressedPolicy::Leave, value_name = "POLICY")]
    pub compressed: CompressedPolicy,
    /// Treat warnings as errors (the file is left unchanged)
    #[arg(long)]
    pub fatal_warnings: bool,
    /// Write a temporary file, fsync it and rename it over the original
    #[arg(long)]
    pub atomic: bool,
    /// Every PATH is a module tree to walk (a directory PATH is walked anyway)
    #[arg(long)]
    pub tree: bool,
    /// Output format: human lines on stderr, or one JSON object per module on stdout
    ///
    /// The JSON report is described in report-format.md, in the package's documentation directory:
    /// /usr/share/doc/zero-weak-mcount (compressed, report-format.md.gz, from the .deb), or
    /// PREFIX/share/doc/zero-weak-mcount after make install (PREFIX: /usr/local unless set); in the
    /// sources, docs/report-format.md.
    #[arg(long, value_enum, default_value_t = Format::Human, value_name = "FORMAT")]
    pub format: Format,
    /// Worker threads, at least 1 [default: $RPM_BUILD_NCPUS, else the available CPUs]
    #[arg(short, long, value_name = "N", value_parser = jobs, value_hint = clap::ValueHint::Other)]
    pub jobs: Option<usize>,
}

/// `-j 0` is refused rather than read as "one per CPU" (as `xz -T0` does):
/// the default already is one per CPU, and a 0 computed by a script is a
/// bug better reported than guessed at.
fn jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("0 threads: give 1 or more (leave -j out for one per CPU)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

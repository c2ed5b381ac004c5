use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use zero_weak_mcount::arch::Overrides;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{self, Options, Outcome, SignedPolicy};

const NAME: &str = "zero-weak-mcount";

/// Zero the ftrace callsite entries of overridden weak functions in Linux
/// kernel modules, so the kernel never builds records for them.
///
/// Run it on each .ko right after it is linked, before it is signed,
/// stripped or compressed. All output goes to stderr.
#[derive(Parser, Debug)]
#[command(name = NAME, version)]
struct Cli {
    /// Module files (.ko), processed in place
    #[arg(required = true, value_name = "FILE")]
    paths: Vec<PathBuf>,
    /// Write nothing; exit 1 if any file would change
    #[arg(long)]
    check: bool,
    /// List each zeroed entry and each entry kept for doubt, and a summary per file
    #[arg(short, long)]
    verbose: bool,
    /// Write the result to PATH instead of in place (one input only)
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Kernel .config or include/config/auto.conf the modules were built with
    #[arg(long, value_name = "FILE")]
    kconfig: Option<PathBuf>,
    /// Override FTRACE_MCOUNT_MAX_OFFSET (default: from --kconfig, else the widest the arch allows)
    #[arg(long, value_name = "N")]
    max_offset: Option<u64>,
    /// The callsite section the kernel reads (__mcount_loc or __patchable_function_entries)
    #[arg(long, value_name = "NAME")]
    section: Option<String>,
    /// What to do with a signed module
    #[arg(long, value_enum, default_value_t = SignedPolicy::Refuse, value_name = "POLICY")]
    signed: SignedPolicy,
    /// Treat warnings as errors (the file is left unchanged)
    #[arg(long)]
    fatal_warnings: bool,
    /// Write a temporary file, fsync it and rename it over the original
    #[arg(long)]
    atomic: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.output.is_some() && cli.paths.len() != 1 {
        eprintln!("{NAME}: error: --output takes exactly one input file");
        return ExitCode::from(2);
    }
    let kconfig = match cli.kconfig.as_deref().map(Kconfig::load).transpose() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{NAME}: error: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        check: cli.check,
        verbose: cli.verbose,
        kconfig,
        overrides: Overrides { max_offset: cli.max_offset, section: cli.section },
        signed: cli.signed,
        fatal_warnings: cli.fatal_warnings,
        atomic: cli.atomic,
        keep_mtime: false,
    };
    let mut failed = false;
    for path in &cli.paths {
        let shown = path.display();
        match process::process_file(path, cli.output.as_deref(), &opts) {
            Ok(report) => {
                let a = &report.analysis;
                for w in &a.warnings {
                    eprintln!("{NAME}: {shown}: warning: {w}");
                }
                for n in &a.notes {
                    eprintln!("{NAME}: {shown}: note: {n}");
                }
                if opts.verbose {
                    for d in &a.details {
                        eprintln!("{NAME}: {shown}: {d}");
                    }
                }
                let changes = matches!(a.outcome, Outcome::Changed { .. });
                if opts.check && changes {
                    failed = true;
                    eprintln!("{NAME}: {shown}: would change: {}", a.summary.replacen("zeroed", "would zero", 1));
                } else if opts.verbose {
                    eprintln!("{NAME}: {shown}: {}", a.summary);
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{NAME}: {shown}: error: {e}");
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

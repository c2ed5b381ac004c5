// SPDX-License-Identifier: GPL-2.0-only
//! The man page and the shell completions of zero-weak-mcount, from the
//! same clap definition the binary parses (`src/cli.rs`), so that neither
//! can list an option the binary lacks or miss one it has.
//!
//!     cargo run --example gen-docs -- OUTDIR
//!
//! writes OUTDIR/zero-weak-mcount.1 and OUTDIR/completions/{bash,zsh,fish}
//! files named as each shell looks them up, for the tool and for the two
//! scripts that ship beside it (their options mirrored below, checked
//! against the scripts' own --help and POD by `tests/man_page.rs`). `make`
//! runs it.
//!
//! The page: NAME, SYNOPSIS with each option's argument, DESCRIPTION and
//! OPTIONS from clap; EXIT STATUS from the lines --help ends with
//! (`cli::AFTER_HELP`); EXAMPLES, ENVIRONMENT, FILES and SEE ALSO written
//! here, in roff.
//!
//! An example rather than build.rs: `clap_mangen` and `clap_complete` then stay
//! dev-dependencies that a plain `cargo build` or `cargo install` never
//! fetches, and the build script does not write outside `OUT_DIR`.

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use clap::CommandFactory as _;
use clap_complete::Shell;
use zero_weak_mcount::cli;

fn main() -> std::io::Result<()> {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: gen-docs OUTDIR");
        std::process::exit(2);
    };
    let cmd = cli::Cli::command();
    fs::create_dir_all(out.join("completions"))?;
    fs::write(out.join(format!("{}.1", cli::NAME)), page(&cmd)?)?;
    for mut cmd in [cmd, install_kbuild_hook(), dh_zero_weak_mcount()] {
        let name = cmd.get_name().to_string();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            clap_complete::generate_to(shell, &mut cmd, &name, out.join("completions"))?;
        }
    }
    Ok(())
}

fn flag(long: &'static str) -> clap::Arg {
    clap::Arg::new(long).long(long).action(clap::ArgAction::SetTrue)
}

fn value(long: &'static str, name: &'static str, hint: clap::ValueHint) -> clap::Arg {
    clap::Arg::new(long).long(long).value_name(name).value_hint(hint)
}

/// `dist/install-kbuild-hook`'s options, for its completions (the script
/// parses its own).
#[must_use]
pub fn install_kbuild_hook() -> clap::Command {
    use clap::ValueHint::{DirPath, ExecutablePath, FilePath, Other};
    clap::Command::new("install-kbuild-hook")
        .disable_version_flag(true)
        .args([value("kver", "KVER", Other), flag("all"), value("root", "DIR", DirPath)])
        .args([flag("uninstall"), flag("status"), flag("sweep")])
        .args([value("tool", "FILE", ExecutablePath), value("snippet", "FILE", FilePath)])
        .args([flag("dry-run").short('n'), flag("quiet").short('q'), flag("version")])
        .arg(clap::Arg::new("tree").value_name("TREE").num_args(0..).value_hint(DirPath))
}

/// `dist/dh_zero_weak_mcount`'s own options and the debhelper ones its POD
/// names, for its completions; after `--`, the tool's options.
#[must_use]
pub fn dh_zero_weak_mcount() -> clap::Command {
    use clap::ValueHint::{ExecutablePath, Other};
    clap::Command::new("dh_zero_weak_mcount")
        .disable_version_flag(true)
        .args([value("tool", "path", ExecutablePath), value("exclude", "item", Other).short('X')])
        .args([value("package", "package", Other).short('p'), value("no-package", "package", Other).short('N')])
        .args([flag("arch").short('a'), flag("indep").short('i'), flag("verbose").short('v'), flag("no-act")])
        .arg(clap::Arg::new("params").value_name("PARAMS").num_args(0..).last(true))
}

/// The whole page, in roff.
///
/// # Errors
///
/// Only if `clap_mangen` fails to write to memory.
pub fn page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    // The release alone in the footer and VERSION: the build identity of
    // --version (git:ID-dirty sources:HASH) overflowed the footer's line, and
    // would make the page differ between a git build and a source package's.
    let man = clap_mangen::Man::new(cmd.clone().version(env!("CARGO_PKG_VERSION")));
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    page.extend(synopsis(cmd).into_bytes());
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    page.extend(exit_status().into_bytes());
    page.extend(EXTRA.as_bytes());
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// Text for roff: backslashes and leading dots or quotes escaped, dashes as
/// the minus signs a reader types.
fn roff(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') { format!("\\&{text}") } else { text }
}

/// Every option with its argument, as `[--kconfig FILE]`, then the paths.
fn synopsis(cmd: &clap::Command) -> String {
    let mut s = format!(".SH SYNOPSIS\n.B {}\n", roff(cli::NAME));
    for arg in cmd.get_arguments().filter(|a| !a.is_positional() && !a.is_hide_set()) {
        let mut names = Vec::new();
        if let Some(c) = arg.get_short() {
            names.push(format!("\\fB\\-{c}\\fR"));
        }
        if let Some(l) = arg.get_long() {
            names.push(format!("\\fB\\-\\-{}\\fR", roff(l)));
        }
        let value = arg
            .get_value_names()
            .filter(|_| arg.get_action().takes_values())
            .map(|v| format!(" \\fI{}\\fR", roff(&v.join(" "))))
            .unwrap_or_default();
        let _ = writeln!(s, "[{}{value}]", names.join("|"));
    }
    for arg in cmd.get_positionals() {
        let name = arg.get_value_names().map_or_else(|| arg.get_id().to_string(), |v| v.join(" "));
        let _ = writeln!(s, "\\fI{}\\fR...", roff(&name));
    }
    s
}

/// EXIT STATUS from the `  N  text` lines of --help's closing text.
fn exit_status() -> String {
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for line in cli::AFTER_HELP.lines().skip(1) {
        let line = line.trim();
        match line.split_once("  ") {
            Some((code, text)) if code.starts_with(|c: char| c.is_ascii_digit()) => {
                let _ = writeln!(s, ".TP\n.B {}\n{}", roff(code), roff(text.trim()));
            }
            _ => {
                let _ = writeln!(s, ".PP\n{}", roff(line));
            }
        }
    }
    s
}

/// The sections clap knows nothing of.
const EXTRA: &str = r#".SH EXAMPLES
.TP
One module, right after it is linked, saying what it zeroes:
.nf
\fBzero\-weak\-mcount \-v \-\-kconfig include/config/auto.conf \e\fR
\fB    drivers/foo/foo.ko\fR
.fi
.TP
A module tree, before it is signed and compressed (a packaging step):
.nf
\fBzero\-weak\-mcount \-j 4 debian/linux\-image/lib/modules/7.2.13\fR
.fi
.TP
An audit of an installed tree, compressed and signed modules included; nothing is written, and the exit status is 1 if a module would change:
.nf
\fBzero\-weak\-mcount \-\-check \-\-kconfig /boot/config\-$(uname \-r) \e\fR
\fB    /lib/modules/$(uname \-r)\fR
.fi
.TP
Kbuild: hook the headers tree once; every module it links is then processed, M= builds included:
.nf
\fBinstall\-kbuild\-hook /lib/modules/$(uname \-r)/build\fR
\fBmake \-C /lib/modules/$(uname \-r)/build M=$PWD modules\fR
.fi
.TP
DKMS: DKMS builds through the same hooked Makefile.modfinal, so with every headers tree hooked its modules are processed before DKMS signs and compresses them:
.nf
\fBinstall\-kbuild\-hook \-\-all\fR
\fBdkms autoinstall \-k 7.2.13+deb14\-amd64\fR
.fi
.TP
rpm: the macros define \fB%__brp_zero_weak_mcount\fR; a kernel.spec calls it first in \fB%__modsign_install_post\fR, a kmod spec at the end of \fB%install\fR:
.nf
\fB%{?__brp_zero_weak_mcount}\fR
.fi
.TP
deb: one build dependency puts \fBdh_zero_weak_mcount\fR into the dh sequence, right after dh_strip:
.nf
\fBBuild\-Depends: debhelper\-compat (= 13),\fR
\fB dh\-sequence\-zero\-weak\-mcount\fR
.fi
.SH ENVIRONMENT
.TP
.B RPM_BUILD_NCPUS
The default number of worker threads (\fB\-j\fR) when set; otherwise the CPUs this process may use.
.TP
.B ZERO_WEAK_MCOUNT
Read by the Kbuild hook (Makefile.zero\-weak\-mcount) and dh_zero_weak_mcount: the tool to run. Empty turns the Kbuild step off.
.TP
.B ZERO_WEAK_MCOUNT_FLAGS
Read by the Kbuild hook: options appended to the ones it derives from the kernel configuration (\fB\-v\fR, for one).
.SH FILES
.TP
.I include/config/auto.conf\fR, \fI.config
The kernel configuration that \fB\-\-kconfig\fR reads; its header line names the kernel release it is for.
.TP
.I include/config/kernel.release
Beside auto.conf: the release of a configuration without a header line.
.TP
.I .NAME.zwm\-PID\-N.tmp
The temporary file of \fB\-\-atomic\fR and of compressed modules, beside the module; a run that rewrites the module removes any that a killed run left.
.TP
.I /usr/share/doc/zero\-weak\-mcount/report\-format.md
The format of the \fB\-\-format json\fR report (compressed, \fIreport\-format.md.gz\fR, from the .deb; under \fIPREFIX/share/doc/zero\-weak\-mcount\fR after make install).
.TP
.I scripts/Makefile.zero\-weak\-mcount\fR, \fI.zero\-weak\-mcount.ko.stamp
The Kbuild hook that install\-kbuild\-hook(8) wires into scripts/Makefile.modfinal, and the stamp beside modules.order that makes a new tool or new flags reprocess every module.
.SH "SEE ALSO"
.BR install\-kbuild\-hook (8),
.BR dh_zero_weak_mcount (1),
.BR dkms (8),
.BR rpmbuild (8),
.BR strip (1),
.BR modinfo (8),
.BR cmp (1)
.PP
The kernel's scripts/Makefile.modfinal, scripts/Makefile.modinst and kernel/trace/ftrace.c.
"#;

// SPDX-License-Identifier: GPL-2.0-only
//! zero-weak-mcount(1), as `make docs` writes it (examples/gen-docs.rs): the
//! sections of a good man page, a SYNOPSIS that keeps each option's
//! argument, the exit statuses of --help, and the examples the issue asks
//! for; rendered by groff without a warning.

#[allow(dead_code, reason = "the example's main is not called here")]
#[path = "../examples/gen-docs.rs"]
mod gen_docs;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

fn page() -> String {
    String::from_utf8(gen_docs::page(&<zero_weak_mcount::cli::Cli as clap::CommandFactory>::command()).unwrap())
        .unwrap()
}

/// The text of section `name`, up to the next `.SH`.
fn section(page: &str, name: &str) -> String {
    let head = if name.contains(' ') { format!(".SH \"{name}\"\n") } else { format!(".SH {name}\n") };
    let start = page.find(&head).unwrap_or_else(|| panic!("no {name} section in\n{page}")) + head.len();
    let rest = &page[start..];
    rest[..rest.find("\n.SH ").unwrap_or(rest.len())].to_string()
}

#[test]
fn the_man_page_has_the_sections_of_a_good_one_in_order() {
    let page = page();
    let names =
        ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "ENVIRONMENT", "FILES", "SEE ALSO"];
    let at: Vec<usize> = names
        .iter()
        .map(|n| {
            let head = if n.contains(' ') { format!(".SH \"{n}\"") } else { format!(".SH {n}\n") };
            page.find(&head).unwrap_or_else(|| panic!("no {n} in\n{page}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "sections out of order: {at:?}");
    for name in names {
        assert!(section(&page, name).trim().len() > 10, "{name} is empty");
    }
}

#[test]
fn the_synopsis_keeps_option_arguments() {
    let synopsis = section(&page(), "SYNOPSIS");
    for (option, arg) in [
        ("\\-o\\fR|\\fB\\-\\-output", "PATH"),
        ("\\-\\-kconfig", "FILE"),
        ("\\-\\-max\\-offset", "N"),
        ("\\-\\-section", "NAME"),
        ("\\-\\-signed", "POLICY"),
        ("\\-\\-compressed", "POLICY"),
        ("\\-\\-jobs", "N"),
    ] {
        assert!(synopsis.contains(&format!("{option}\\fR \\fI{arg}\\fR]")), "{option} {arg} in\n{synopsis}");
    }
    assert!(synopsis.contains("[\\fB\\-\\-check\\fR]") && synopsis.contains("\\fIPATH\\fR..."), "{synopsis}");
}

#[test]
fn exit_status_and_examples_say_what_the_tool_does() {
    let page = page();
    let status = section(&page, "EXIT STATUS");
    for code in ["0", "1", "2", "130, 143"] {
        assert!(status.contains(&format!(".TP\n.B {code}\n")), "no {code} in\n{status}");
    }
    assert!(status.contains("under \\-\\-check, at least one module would change"), "{status}");
    let examples = section(&page, "EXAMPLES");
    for what in [
        "drivers/foo/foo.ko",                   // one file
        "lib/modules/7.2.13\\fR",               // a tree
        "\\-\\-check \\-\\-kconfig /boot/",     // an audit of an installed tree
        "M=$PWD modules",                       // Kbuild
        "dkms autoinstall",                     // DKMS
        "%{?__brp_zero_weak_mcount}",           // rpm
        "dh\\-sequence\\-zero\\-weak\\-mcount", // deb
    ] {
        assert!(examples.contains(what), "no {what:?} in\n{examples}");
    }
    assert!(section(&page, "ENVIRONMENT").contains("RPM_BUILD_NCPUS"));
    assert!(section(&page, "SEE ALSO").contains("install\\-kbuild\\-hook (8)"));
}

/// Column 15 is where roff starts the body of a `.TP` in a section (7 + 7
/// ens), so an unfilled line there may hold 66 characters of an
/// 80-column terminal; `groff_renders_it_without_a_warning` renders it.
#[test]
fn the_examples_fit_80_columns() {
    let examples = section(&page(), "EXAMPLES");
    let mut lines = 0;
    let mut nf = false;
    for line in examples.lines() {
        match line {
            ".nf" => nf = true,
            ".fi" => nf = false,
            _ if nf => {
                lines += 1;
                let text = line.replace("\\fB", "").replace("\\fR", "").replace("\\-", "-").replace("\\e", "\\");
                assert!(14 + text.chars().count() <= 80, "{} columns: {text}", 14 + text.chars().count());
            }
            _ => {}
        }
    }
    assert!(lines >= 8, "{lines} example lines in\n{examples}");
}

/// --help, and so the man page, names report-format.md where the packages
/// and `make install` put it: the rpm's %doc and the .deb (compressed by
/// `dh_compress`) in /usr/share/doc/zero-weak-mcount, make install in
/// $(DOCDIR), PREFIX/share/doc/zero-weak-mcount.
#[test]
fn the_help_names_where_report_format_is_installed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    let makefile = read("Makefile");
    assert!(makefile.contains("\nDATADIR ?= $(PREFIX)/share\n"), "DATADIR");
    assert!(makefile.contains("\nDOCDIR ?= $(DATADIR)/doc/zero-weak-mcount\n"), "DOCDIR");
    assert!(read("debian/rules").contains("PREFIX=/usr"), "debian/rules");
    assert!(read("zero-weak-mcount.spec").contains("\n%doc README.md docs/report-format.md\n"), "the spec");
    let mut cmd = <zero_weak_mcount::cli::Cli as clap::CommandFactory>::command();
    let help = cmd.render_long_help().to_string();
    for what in [
        "report-format.md",
        "/usr/share/doc/zero-weak-mcount",
        "report-format.md.gz",
        "PREFIX/share/doc/zero-weak-mcount",
    ] {
        assert!(help.contains(what), "no {what:?} in\n{help}");
    }
    assert!(section(&page(), "FILES").contains(".I /usr/share/doc/zero\\-weak\\-mcount/report\\-format.md\n"));
}

/// The long and short names a clap command knows, `--help` included.
fn names(cmd: &clap::Command) -> BTreeSet<String> {
    let mut cmd = cmd.clone();
    cmd.build();
    let mut all = BTreeSet::new();
    for arg in cmd.get_arguments() {
        all.extend(arg.get_long().map(|l| format!("--{l}")));
        all.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    all
}

/// The completions of the two scripts come from mirrors of their options
/// (examples/gen-docs.rs): each mirror has exactly the options the
/// installer's --help lists, and every option `dh_zero_weak_mcount`'s POD
/// names.
#[test]
fn the_scripts_completions_know_their_options() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist");
    let out = Command::new(dist.join("install-kbuild-hook")).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let listed: BTreeSet<String> = help
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .flat_map(str::split_whitespace)
        .filter(|w| w.starts_with('-') && w.len() > 1)
        .map(|w| w.trim_end_matches([',', ':']).to_string())
        .collect();
    assert!(listed.len() > 12, "{listed:?} from\n{help}");
    assert_eq!(names(&gen_docs::install_kbuild_hook()), listed);
    let pod = std::fs::read_to_string(dist.join("dh_zero_weak_mcount")).unwrap();
    let named: BTreeSet<String> = pod
        .split("B<")
        .skip(1)
        .filter(|s| s.starts_with('-') && !s.starts_with("-->"))
        .map(|s| s[..s.find(['>', '=']).unwrap()].to_string())
        .collect();
    let dh = names(&gen_docs::dh_zero_weak_mcount());
    assert!(named.len() >= 7 && named.is_subset(&dh), "{named:?} vs {dh:?}");
}

/// The footer holds the release, not the build identity (`git:ID-dirty
/// sources:HASH` overflowed an 80-column footer), and neither does VERSION.
#[test]
fn the_footer_and_version_name_the_release_only() {
    let page = page();
    let title = format!(".TH zero-weak-mcount 1  \"zero-weak-mcount {}\"", env!("CARGO_PKG_VERSION"));
    assert!(page.lines().any(|l| l.trim_end() == title), "no {title} in\n{page}");
    assert!(!page.contains("git:") && !page.contains("sources:"), "{page}");
}

#[test]
#[ignore = "needs groff (groff-base), which the README's minimal setup does not install; make check runs it"]
fn groff_renders_it_without_a_warning() {
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff (apt-get install groff-base)");
    groff.stdin.take().unwrap().write_all(page().as_bytes()).unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warnings");
    // At 80 columns, as `MANWIDTH=80 man` renders it, no line is longer.
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-rLL=80n", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("groff");
    groff.stdin.take().unwrap().write_all(page().as_bytes()).unwrap();
    let text = String::from_utf8(groff.wait_with_output().unwrap().stdout).unwrap();
    let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(text.contains("dkms autoinstall") && long.is_empty(), "over 80 columns: {long:#?}");
}

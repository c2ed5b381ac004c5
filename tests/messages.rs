// SPDX-License-Identifier: GPL-2.0-only
//! The smaller items of issue 27: messages without "(os error N)", plurals,
//! `-o` errors naming the output, usage errors the parser catches, shell
//! completions, what a tree walk passes over, what --help promises, and
//! that stripping before or after the tool gives the same result.

mod common;

use common::{MODULE, Scratch, stderr, tool};

use std::fs;
use std::process::Command;

#[test]
fn io_errors_have_no_os_error_numbers_and_o_errors_name_the_output() {
    let dir = Scratch::new("msgs");
    let ko = dir.file("m.ko", &fs::read(MODULE).unwrap());
    let missing = dir.0.join("missing.ko");
    let out = tool(&[missing.to_str().unwrap()]);
    assert_eq!(stderr(&out), format!("zero-weak-mcount: {}: error: No such file or directory\n", missing.display()));

    let bad_out = dir.0.join("no/such/dir/out.ko");
    let out = tool(&["-o", bad_out.to_str().unwrap(), ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "zero-weak-mcount: {}: error: cannot create output {}: No such file or directory\n",
            ko.display(),
            bad_out.display()
        )
    );
    let out = tool(&["--kconfig", missing.to_str().unwrap(), ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("os error") && stderr(&out).contains("No such file"), "{}", stderr(&out));
}

#[test]
fn summaries_say_1_module_and_1_error() {
    let dir = Scratch::new("plural");
    fs::create_dir_all(dir.0.join("one")).unwrap();
    dir.file("one/m.ko", &fs::read(MODULE).unwrap());
    fs::create_dir_all(dir.0.join("bad")).unwrap();
    dir.file("bad/x.ko", b"garbage");
    dir.file("bad/y.ko", b"garbage");
    let last = |args: &[&str]| stderr(&tool(args)).lines().last().unwrap().to_string();
    let err = stderr(&tool(&["--check", dir.0.join("one").to_str().unwrap()]));
    let one: Vec<&str> = err.lines().rev().take(2).collect();
    assert_eq!(
        one,
        [
            "zero-weak-mcount: no function at risk; to remove the dead records: run zero-weak-mcount again without \
             --check",
            "zero-weak-mcount: 1 module: 1 would change, 0 unchanged, 0 skipped, 0 errors"
        ]
    );
    // The module's own line leaves the step to the summary.
    assert!(err.contains("m.ko: no function at risk: the kernel disables its 2 dead records (listed as"), "{err}");
    assert!(!err.contains("to remove them"), "{err}");
    // Written, nothing is left to do: the counts end the run.
    let written = last(&[dir.0.join("one").to_str().unwrap()]);
    assert_eq!(written, "zero-weak-mcount: 1 module: 1 changed, 0 unchanged, 0 skipped, 0 errors");
    let two = last(&["--check", dir.0.join("bad").to_str().unwrap()]);
    assert_eq!(two, "zero-weak-mcount: 2 modules: 0 would change, 0 unchanged, 0 skipped, 2 errors");
    fs::remove_file(dir.0.join("bad/y.ko")).unwrap();
    let single = last(&["--check", dir.0.join("bad").to_str().unwrap()]);
    assert_eq!(single, "zero-weak-mcount: 1 module: 0 would change, 0 unchanged, 0 skipped, 1 error");
    // scripts/tree-check no longer reads this line: it counts the tree from
    // the --format=json reports (docs/report-format.md).
}

#[test]
fn the_parser_refuses_check_with_output_and_an_unknown_section() {
    let dir = Scratch::new("usage");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let out = tool(&["--check", "-o", dir.0.join("o.ko").to_str().unwrap(), ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("'--check' cannot be used with '--output <PATH>'"), "{}", stderr(&out));
    assert_eq!(dir.names(), ["m.ko"]);
    let out = tool(&["--section", "foo", ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("[possible values: __mcount_loc, __patchable_function_entries]"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), original);
    assert!(tool(&["--section", "__mcount_loc", ko.to_str().unwrap()]).status.success());
}

#[test]
fn completions_offer_section_names_and_no_file_names_for_numbers() {
    let mut cmd = <zero_weak_mcount::cli::Cli as clap::CommandFactory>::command();
    let mut bash = Vec::new();
    clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "zero-weak-mcount", &mut bash);
    let bash = String::from_utf8(bash).unwrap();
    // Each option's case arm, up to the next.
    let arm = |opt: &str| {
        let start = bash.find(&format!("        {opt})")).unwrap_or_else(|| panic!("no {opt} arm in\n{bash}"));
        let rest = &bash[start..];
        rest[..rest.find(";;").unwrap()].to_string()
    };
    assert!(arm("--section").contains("__mcount_loc __patchable_function_entries"), "{}", arm("--section"));
    for opt in ["--jobs", "-j", "--max-offset"] {
        assert!(!arm(opt).contains("compgen -f"), "{opt} completes file names: {}", arm(opt));
    }
    assert!(arm("--kconfig").contains("compgen -f"), "{}", arm("--kconfig"));
}

#[test]
fn a_tree_walk_reports_symlinks_under_v_and_warns_when_empty() {
    let dir = Scratch::new("walk-msgs");
    let tree = dir.0.join("t");
    fs::create_dir_all(tree.join("sub")).unwrap();
    let out = tool(&[tree.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "zero-weak-mcount: {}: warning: no modules in this tree (*.ko, *.ko.xz, *.ko.zst, *.ko.gz)",
            tree.display()
        )),
        "{}",
        stderr(&out)
    );
    let real = dir.file("t/sub/m.ko", &fs::read(MODULE).unwrap());
    std::os::unix::fs::symlink(&real, tree.join("link.ko")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("elsewhere"), tree.join("dangling.ko")).unwrap();
    let out = tool(&["--check", tree.to_str().unwrap()]);
    assert!(!stderr(&out).contains("symlink") && !stderr(&out).contains("no modules"), "{}", stderr(&out));
    let out = tool(&["--check", "-v", tree.to_str().unwrap()]);
    let err = stderr(&out);
    for link in ["dangling.ko", "link.ko"] {
        assert!(err.contains(&format!("zero-weak-mcount: {}: skipped symlink\n", tree.join(link).display())), "{err}");
    }
    assert!(err.contains("\nzero-weak-mcount: 1 module: 1 would change, 0 unchanged, 0 skipped, 0 errors\n"), "{err}");
}

#[test]
fn help_gives_one_rule_for_where_the_step_runs_and_says_what_keeps_mtimes() {
    let help = String::from_utf8(tool(&["--help"]).stdout).unwrap();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for text in [
        "after the module is linked, before it is signed and before it is compressed",
        "before or after stripping makes no difference",
        "A module tree keeps each file's modification time",
        "a file named on the command line gets a new one",
    ] {
        assert!(flat.contains(text), "missing {text:?} in\n{help}");
    }
    assert!(!flat.contains("stripped or compressed"), "{help}");
}

/// `strip -g` before the tool or after it: the same entries neutralised,
/// and the same bytes in the callsite table and its relocations.
#[test]
fn strip_g_before_or_after_gives_the_same_entries_zeroed() {
    let dir = Scratch::new("strip");
    let original = fs::read(MODULE).unwrap();
    let after = dir.file("after.ko", &original);
    let before = dir.file("before.ko", &original);
    let strip = |p: &std::path::Path| {
        let st = Command::new("strip").arg("-g").arg(p).status().expect("strip (binutils)");
        assert!(st.success());
    };
    assert!(tool(&[after.to_str().unwrap()]).status.success());
    strip(&after);
    strip(&before);
    let stripped = fs::read(&before).unwrap();
    assert!(stripped.len() < original.len(), "strip -g removed nothing: the test would prove nothing");
    let out = tool(&["-v", before.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("zeroed 2 of 8 entries"), "{}", stderr(&out));
    let (a, b) = (fs::read(&after).unwrap(), fs::read(&before).unwrap());
    let left = common::entries(&a, "__mcount_loc", 0);
    assert_eq!(left.len(), 6);
    assert_eq!(left, common::entries(&b, "__mcount_loc", 0));
    assert_ne!(common::entries(&stripped, "__mcount_loc", 0), left, "stripping alone zeroes nothing");
    // Nothing left for the tool in either.
    for p in [&after, &before] {
        assert_eq!(tool(&["--check", p.to_str().unwrap()]).status.code(), Some(0));
    }
}

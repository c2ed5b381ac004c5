// SPDX-License-Identifier: GPL-2.0-only
//! Exit statuses as `cmp` and `diff` use them (SCHEMA.md, `--help`):
//! under `--check` 0 nothing would change, 1 something would, 2 trouble,
//! trouble winning; otherwise 0, or 1 when a module failed; 2 for a usage
//! error. File mode and tree mode give the same answers.

mod common;

use common::{MODULE, Scratch, stderr, tool};

use std::fs;
use std::path::PathBuf;

/// A set of modules, as files and as a tree holding the same files.
fn case(dir: &Scratch, name: &str, modules: &[(&str, &[u8])]) -> (Vec<PathBuf>, PathBuf) {
    let tree = dir.0.join(name);
    fs::create_dir_all(&tree).unwrap();
    let files = modules
        .iter()
        .map(|(n, bytes)| {
            let p = tree.join(n);
            fs::write(&p, bytes).unwrap();
            p
        })
        .collect();
    (files, tree)
}

/// (name, modules, --check status, write status)
type Case<'a> = (&'a str, &'a [(&'a str, &'a [u8])], i32, i32);

#[test]
fn check_and_write_statuses_agree_in_file_and_tree_mode() {
    let dir = Scratch::new("exit");
    let original = fs::read(MODULE).unwrap();
    let done = dir.processed_module();
    let garbage: &[u8] = b"not an ELF file";
    let cases: [Case; 5] = [
        ("clean", &[("a.ko", &done)], 0, 0),
        ("changes", &[("a.ko", &done), ("b.ko", &original)], 1, 0),
        ("trouble", &[("a.ko", &done), ("bad.ko", garbage)], 2, 1),
        ("both", &[("b.ko", &original), ("bad.ko", garbage)], 2, 1),
        ("both-reversed", &[("bad.ko", garbage), ("z.ko", &original)], 2, 1),
    ];
    for (name, modules, check, write) in cases {
        for mode in ["file", "tree"] {
            let (files, tree) = case(&dir, &format!("{name}-{mode}"), modules);
            let args = |check: bool| -> Vec<String> {
                let mut v: Vec<String> = if check { vec!["--check".into()] } else { Vec::new() };
                if mode == "tree" {
                    v.push(tree.to_str().unwrap().into());
                } else {
                    v.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
                }
                v
            };
            let out = tool(&args(true));
            assert_eq!(out.status.code(), Some(check), "{name} {mode} --check: {}", stderr(&out));
            let out = tool(&args(false));
            assert_eq!(out.status.code(), Some(write), "{name} {mode}: {}", stderr(&out));
            // After the real run only the trouble is left.
            let out = tool(&args(true));
            assert_eq!(
                out.status.code(),
                Some(if check == 2 { 2 } else { 0 }),
                "{name} {mode} again: {}",
                stderr(&out)
            );
        }
    }
    // A file that is not there is trouble under --check, a failure otherwise.
    let missing = dir.0.join("missing.ko");
    assert_eq!(tool(&["--check", missing.to_str().unwrap()]).status.code(), Some(2));
    assert_eq!(tool(&[missing.to_str().unwrap()]).status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2_under_check_too() {
    for args in [&["--check", "--bogus", MODULE][..], &["--check", "--signed=maybe", MODULE], &["--check"]] {
        let out = tool(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("zero-weak-mcount: error: "), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn help_documents_the_exit_statuses() {
    let out = tool(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Exit status (file and tree mode alike):"), "{help}");
    for line in [
        "  0  success; under --check, nothing would change",
        "  1  under --check, at least one module would change; otherwise a module failed",
        "  2  usage error; under --check also a module that cannot be read or judged (this wins over 1)",
    ] {
        assert!(help.contains(line), "missing {line:?} in\n{help}");
    }
}

/// `--fatal-warnings` makes every warning an error, "no modules" included:
/// an empty or mistyped tree fails the packaging step that names it, with
/// the statuses of a module that cannot be read (2 under `--check`, else
/// 1), and `--format=json` prints the error as the directory's object.
/// Without it the warning stays a warning: exit 0, and no JSON object,
/// as there is no module (JSON Lines of zero lines).
#[test]
fn fatal_warnings_fails_a_tree_without_modules() {
    let dir = Scratch::new("empty-tree");
    let empty = dir.0.join("empty");
    fs::create_dir_all(empty.join("kernel")).unwrap();
    fs::write(empty.join("kernel/README"), b"no module here").unwrap();
    let e = empty.to_str().unwrap();
    let error = format!(
        "zero-weak-mcount: {e}: error: warning treated as an error (--fatal-warnings): no modules in this tree"
    );
    for (args, code) in
        [(&["--check", "--fatal-warnings", e][..], 2), (&["--fatal-warnings", e], 1), (&["--check", e], 0), (&[e], 0)]
    {
        let out = tool(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).contains(&error), code != 0, "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = tool(&["--check", "--fatal-warnings", "--format=json", e]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with(&format!("{{\"file\": \"{e}\", \"status\": \"error\", \"signed\": null")), "{text}");
    assert!(lines[0].contains("(--fatal-warnings): no modules in this tree") && lines[0].ends_with(" 1}"), "{text}");
    let out = tool(&["--check", "--format=json", e]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0), "{}", stderr(&out));
    // Beside a tree with a module the empty one still fails the run.
    let (_, full) = case(&dir, "full", &[("a.ko", &dir.processed_module())]);
    assert_eq!(tool(&["--check", full.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(tool(&["--check", "--fatal-warnings", full.to_str().unwrap(), e]).status.code(), Some(2));
}

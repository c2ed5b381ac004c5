//! The shell scripts keep out `CMD | grep -q`: under `pipefail`, grep exits
//! at the first match, CMD may get SIGPIPE, and the pipeline then fails. A
//! check that must find a line then fails at random, and one that must not
//! find it passes vacuously. Run CMD to the end first (capture its output,
//! or use `has_line` from scripts/lib.sh).
#![allow(clippy::case_sensitive_file_extension_comparisons, reason = "the repository's file names are lower-case")]

use std::fs;
use std::path::{Path, PathBuf};

/// The lines (joined across `|` and `\` continuations) that pipe into a
/// quiet grep.
fn quiet_grep_pipes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut joined = String::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with('#') {
            continue;
        }
        joined.push_str(code);
        joined.push(' ');
        let end = code.trim_end();
        if end.ends_with('|') || end.ends_with('\\') || end.ends_with("&&") {
            continue;
        }
        if pipes_into_quiet_grep(&joined) {
            found.push(joined.trim().to_string());
        }
        joined.clear();
    }
    found
}

fn pipes_into_quiet_grep(line: &str) -> bool {
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices('|') {
        // `||` is not a pipe.
        if bytes.get(i + 1) == Some(&b'|') || (i > 0 && bytes[i - 1] == b'|') {
            continue;
        }
        let mut words = line[i + 1..].split_whitespace();
        if words.next() != Some("grep") {
            continue;
        }
        for w in words.take_while(|w| w.starts_with('-') && *w != "--") {
            if w == "--quiet" || w == "--silent" || (!w.starts_with("--") && w.contains('q')) {
                return true;
            }
        }
    }
    false
}

fn shell_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "__pycache__" {
                shell_files(&path, out);
            }
        } else if !name.ends_with(".py") && !name.ends_with(".pyc") && !name.ends_with(".c") {
            out.push(path);
        }
    }
}

#[test]
fn the_check_finds_the_pattern() {
    assert!(pipes_into_quiet_grep("busybox --list | grep -qx insmod || die"));
    assert!(pipes_into_quiet_grep("readelf -S -W \"$e\" | grep -q '\\.debug_info' && fail"));
    assert!(pipes_into_quiet_grep("a | grep '^[<>]' | grep -qvx '> X=y' && die"));
    assert!(pipes_into_quiet_grep("cmd 2>&1 | grep --quiet x"));
    assert_eq!(quiet_grep_pipes("diff a b |\n    grep -q x && die\n").len(), 1);
    assert!(!pipes_into_quiet_grep("grep -q x file || cmd | grep x"));
    assert!(!pipes_into_quiet_grep("grep -q x <<<\"$out\""));
    assert!(!pipes_into_quiet_grep("a || grep -q x file"));
    assert!(!pipes_into_quiet_grep("a | grep -c x"));
}

#[test]
fn no_script_pipes_into_a_quiet_grep() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("Makefile"), root.join("Makefile.snippet")];
    shell_files(&root.join("scripts"), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let Ok(text) = fs::read_to_string(f) else { continue };
        for line in quiet_grep_pipes(&text) {
            bad.push(format!("{}: {line}", f.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(
        bad.is_empty(),
        "`CMD | grep -q` under pipefail fails at random; capture CMD's output first:\n{}",
        bad.join("\n")
    );
}

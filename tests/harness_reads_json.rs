// SPDX-License-Identifier: GPL-2.0-only
//! The harness reads what the tool did from `--format=json`
//! (docs/report-format.md), never from its human lines, which
//! src/render.rs may reword at any time: a parser of those lines breaks
//! `make e2e` an hour after the rewording, where this fails at once.
//!
//! A human line is recognised by what only it says: the `-v` entry lines
//! (`: zero .text+0x20 (distance 16 after f)`) and the summary (`would
//! zero 2 of 8 entries [x86_64, __mcount_loc, max offset 0 ...]`, or
//! written: `: zeroed 2 of 8 entries [...]`), or a pattern written to match
//! them (`(?:zero|drop)`). Comment lines are not code and are skipped.
#![allow(clippy::case_sensitive_file_extension_comparisons, reason = "the repository's file names are lower-case")]

use std::fs;
use std::path::{Path, PathBuf};

mod common;

/// What a parser of the human lines contains, and what no reader of the
/// JSON report needs.
const HUMAN: &[&str] = &[
    ": zero ",
    ": drop ",
    ": zeroed ",
    ": dropped ",
    "(distance ",
    "would zero",
    "would drop",
    "zero|drop",
    "zero\\|drop",
    "inside a function symbol",
    "entries [",
];

/// Scripts that still parse the human lines, each with the helper that is
/// turning it to JSON this session. The list may only shrink: an entry
/// that no longer parses fails the test too, so that it is struck off.
const NOT_YET: &[&str] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The code lines of TEXT that look like a parser of the human lines.
fn human_parsing(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            let code = l.trim_start();
            !(code.starts_with('#') || code.starts_with("//") || code.starts_with("* "))
        })
        .filter(|l| HUMAN.iter().any(|h| l.contains(h)))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The harness of the tree at ROOT: what parses the human lines, by file.
fn offenders(root: &Path) -> Vec<(String, Vec<String>)> {
    let mut all = common::harness_files(root);
    all.retain(|p| p.extension().is_none_or(|e| e != "md"));
    assert!(all.len() > 30, "only {} harness files under {}: the wrong tree?", all.len(), root.display());
    all.into_iter()
        .filter_map(|p| {
            let text = String::from_utf8_lossy(&fs::read(&p).ok()?).into_owned();
            let lines = human_parsing(&text);
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (!lines.is_empty()).then_some((rel, lines))
        })
        .collect()
}

#[test]
fn no_harness_script_parses_the_human_report() {
    // ZWM_HARNESS_ROOT: check another tree (e.g. an old checkout).
    let root = std::env::var_os("ZWM_HARNESS_ROOT").map_or_else(root, PathBuf::from);
    let found = offenders(&root);
    let new: Vec<_> = found.iter().filter(|(f, _)| !NOT_YET.contains(&f.as_str())).collect();
    assert!(new.is_empty(), "scripts parse the tool's human lines; read --format=json instead: {new:#?}");
    if std::env::var_os("ZWM_HARNESS_ROOT").is_none() {
        let done: Vec<_> = NOT_YET.iter().filter(|f| !found.iter().any(|(g, _)| g == *f)).collect();
        assert!(done.is_empty(), "no longer parse the human lines: strike them off NOT_YET: {done:?}");
    }
}

/// The phrases are what the tool prints: a reworded renderer must reword
/// them too, or this test would stop seeing parsers of the new words.
#[test]
fn the_phrases_are_the_tools() {
    let dir = common::Scratch::new("harness");
    let module = dir.file("zwm_test.ko", &common::module());
    let human = common::tool(&["--check".as_ref(), "-v".as_ref(), module.as_os_str()]);
    let text = common::stderr(&human);
    for phrase in [": zero ", "(distance ", "would zero", "entries ["] {
        assert!(text.contains(phrase), "{phrase:?} not in the -v report:\n{text}");
    }
    let out = dir.0.join("out.ko");
    let written = common::tool(&["-v".as_ref(), "-o".as_ref(), out.as_os_str(), module.as_os_str()]);
    assert!(written.status.success(), "{}", common::stderr(&written));
    let text = common::stderr(&written);
    assert!(text.contains(": zeroed 2 of 8 entries ["), "\": zeroed \" not in the -v report of a write:\n{text}");
    let json = common::tool(&["--check".as_ref(), "--format=json".as_ref(), module.as_os_str()]);
    let json = String::from_utf8(json.stdout).unwrap();
    assert!(json.contains("\"verdict\": \"weak\"") && human_parsing(&json).is_empty(), "{json}");
}

/// A reader of the written summary (`: zeroed 2 of 8 entries [...]`) is
/// caught by its verb alone, without the `entries [` it may leave out, as
/// the shell and Python readers that once parsed it did.
#[test]
fn a_reader_of_the_written_summary_is_caught() {
    for line in [
        "grep -q ': zeroed 2 of [0-9]* entries' \"$work/run1.log\" || fail \"no summary\"",
        "m = re.search(r\": zeroed (\\d+) of (\\d+)\", err)",
        "n=$(sed -n 's/.*: dropped \\([0-9]*\\) of.*/\\1/p' \"$log\")",
    ] {
        assert_eq!(human_parsing(line), [line.trim()], "not caught: {line}");
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! The docs' claims that a machine can check stay true (`make lint` runs
//! this file): every link and every path to a file under docs/ resolves,
//! and a link's anchor names a heading; every section cited by title, in a
//! doc, the code or the harness, exists; every `make TARGET` a doc names is
//! a target of the Makefile (or one of Kbuild's, for the kernel builds the
//! guides describe); every command block marked as checked is read by the
//! script of the target its marker names; each doc under docs/ opens with
//! the question it answers; the README and docs/ keep to their sizes and
//! name no issue number. Each negative control breaks one claim of the
//! real docs and requires exactly that problem.
#![allow(clippy::case_sensitive_file_extension_comparisons, reason = "the repository's file names are lower-case")]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Kbuild's own targets, which the integration guides name when they say
/// what a kernel or module build runs.
const KBUILD_TARGETS: &[&str] =
    &["modules", "modules_install", "bindeb-pkg", "binrpm-pkg", "olddefconfig", "prepare", "vmlinux"];

/// The docs whose first line is not theirs to word: `make audit` writes
/// docs/audit.md whole. (`make bench` writes only docs/performance.md's
/// tables, under a title that is held to the rule.)
const GENERATED: &[&str] = &["docs/audit.md"];

/// What marks a checked command block: the marker line ends so, and names
/// the target that runs the indented command after it.
const CHECKED: &str = "runs the indented command below word for word";

/// The docs: README.md, kernel/README.md, docs/*.md and docs/runs/*.md, as
/// (path from the root, text).
fn load_docs(root: &Path) -> Vec<(PathBuf, String)> {
    let mut paths = vec![PathBuf::from("README.md"), PathBuf::from("kernel/README.md")];
    for dir in ["docs", "docs/runs"] {
        let mut names: Vec<PathBuf> = fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".md"))
            .map(|n| Path::new(dir).join(n))
            .collect();
        names.sort();
        paths.extend(names);
    }
    paths
        .into_iter()
        .filter(|p| root.join(p).is_file())
        .map(|p| (p.clone(), fs::read_to_string(root.join(&p)).unwrap()))
        .collect()
}

/// The Makefile's targets, with each one's recipe lines.
fn targets(makefile: &str) -> Vec<(String, Vec<String>)> {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for line in makefile.lines() {
        if line.starts_with('\t') {
            if let Some(last) = found.last_mut() {
                last.1.push(line.trim().to_string());
            }
            continue;
        }
        let Some((names, rest)) = line.split_once(':') else { continue };
        if line.starts_with('#') || names.contains(['=', '$', '?']) || rest.starts_with('=') || names.starts_with('.') {
            continue;
        }
        for name in names.split_whitespace() {
            found.push((name.to_string(), Vec::new()));
        }
    }
    found
}

/// The parts of TEXT that are code: inline spans and the lines of indented
/// or fenced blocks.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") || line.starts_with('\t') {
            spans.push(line);
            continue;
        }
        spans.extend(line.split('`').skip(1).step_by(2));
    }
    spans
}

/// The targets that `make` is asked for in CODE: the first word after a
/// `make` that is no option and no variable.
fn make_targets_named(code: &str) -> Vec<String> {
    let words: Vec<&str> = code.split_whitespace().collect();
    let mut named = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if *w != "make" {
            continue;
        }
        if let Some(next) = words.get(i + 1) {
            let next = next.trim_end_matches(['`', ')', ',', ';', '.', ':']);
            if !next.is_empty()
                && !next.starts_with(['-', '$', '(', '#', '\'', '"'])
                && !next.contains('=')
                && next != "&&"
            {
                named.push(next.to_string());
            }
        }
    }
    named
}

/// The relative targets of TEXT's Markdown links, each with its anchor
/// (empty for none).
fn links(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let (target, anchor) = rest[..end].trim().split_once('#').unwrap_or((rest[..end].trim(), ""));
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            found.push((target, anchor));
        }
    }
    found
}

/// The anchors a Markdown renderer gives TEXT's headings: lower case, the
/// spaces as hyphens, other punctuation dropped.
fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The paths under docs/ that TEXT names as plain words (`docs/rules.md`):
/// each is read from the repository's root.
fn doc_paths(text: &str) -> Vec<&str> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_.-/".contains(c);
    let mut found = Vec::new();
    for (i, _) in text.match_indices("docs/") {
        if text[..i].chars().next_back().is_some_and(path_char) {
            continue;
        }
        let len = text[i..].find(|c: char| !path_char(c)).unwrap_or(text.len() - i);
        let path = text[i..i + len].trim_end_matches(['.', '-']);
        if [".md", ".svg", ".pod", "/"].iter().any(|e| path.ends_with(e)) {
            found.push(path);
        }
    }
    found
}

/// Every claim of DOCS that does not hold in the checkout at ROOT.
fn problems(root: &Path, docs: &[(PathBuf, String)]) -> Vec<String> {
    let makefile = fs::read_to_string(root.join("Makefile")).unwrap();
    let targets = targets(&makefile);
    let is_target = |t: &str| targets.iter().any(|(n, _)| n == t) || KBUILD_TARGETS.contains(&t);
    let mut problems = Vec::new();
    for (path, text) in docs {
        let name = path.display();
        let dir = path.parent().unwrap();
        for (link, anchor) in links(text) {
            let file = root.join(dir).join(link);
            if !file.exists() {
                problems.push(format!("{name}: the link ({link}) leads nowhere"));
            } else if !anchor.is_empty()
                && !fs::read_to_string(&file).is_ok_and(|t| anchors(&t).iter().any(|a| a == anchor))
            {
                problems.push(format!("{name}: {link} has no heading #{anchor}"));
            }
        }
        for p in doc_paths(text) {
            if !root.join(p).exists() {
                problems.push(format!("{name}: {p} does not exist"));
            }
        }
        if path.starts_with("docs/runs") {
            continue; // a dated record names the targets of its day
        }
        let opens_with_a_question = text.lines().next().is_some_and(|l| l.starts_with("# ") && l.ends_with('?'));
        if path.starts_with("docs") && !GENERATED.iter().any(|g| path == Path::new(g)) && !opens_with_a_question {
            problems.push(format!("{name}: its title is not the question it answers"));
        }
        let named: BTreeSet<String> = code_spans(text).into_iter().flat_map(make_targets_named).collect();
        for t in named.iter().filter(|t| !is_target(t)) {
            problems.push(format!("{name}: `make {t}` is no target of the Makefile"));
        }
        problems.extend(checked_blocks(root, path, text, &targets));
    }
    problems
}

/// The checked command blocks of the doc at PATH: each marker names the
/// target that runs its command, that target's recipe runs a script which
/// reads this marker out of this doc, and a command follows the marker.
fn checked_blocks(root: &Path, path: &Path, text: &str, targets: &[(String, Vec<String>)]) -> Vec<String> {
    let name = path.display();
    let file = path.file_name().unwrap().to_string_lossy();
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate().filter(|(_, l)| l.starts_with("<!-- ") && l.contains(CHECKED)) {
        let marker = line.split(':').next().unwrap();
        let target = line.split("`make ").nth(1).and_then(|t| t.split('`').next()).unwrap_or("");
        let Some((_, recipe)) = targets.iter().find(|(n, _)| n == target) else {
            problems.push(format!("{name}:{}: the checked block names `make {target}`, no target", i + 1));
            continue;
        };
        let reads = recipe.iter().flat_map(|r| r.split_whitespace()).filter(|w| w.starts_with("scripts/")).any(|s| {
            fs::read_to_string(root.join(s))
                .is_ok_and(|script| script.contains(&format!("{marker}: ")) && script.contains(&*file))
        });
        if !reads {
            problems.push(format!("{name}:{}: no script of `make {target}` reads `{marker}:` out of {file}", i + 1));
        }
        if !lines[i + 1..].iter().find(|l| !l.is_empty()).is_some_and(|l| l.starts_with("    ")) {
            problems.push(format!("{name}:{}: no indented command follows the marker", i + 1));
        }
    }
    problems
}

/// The sections TEXT names by their title, in the docs, the code and the
/// harness (`docs/rules.md, "Dropping an entry"`): (doc, the title's
/// first line).
fn section_refs(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("docs/") {
        let rest = &text[i..];
        let Some(end) = rest.find(".md") else { continue };
        let doc = &rest[..end + 3];
        if doc.contains(|c: char| !(c.is_ascii_alphanumeric() || "/-_.".contains(c))) {
            continue;
        }
        let after = &rest[end + 3..];
        let Some(quoted) = [", \"", ", \\\"", "'s table (\""].iter().find_map(|p| after.strip_prefix(p)) else {
            continue;
        };
        let title = quoted.split(['"', '\\', '\n']).next().unwrap().trim();
        if !title.is_empty() {
            found.push((doc, title));
        }
    }
    found
}

/// The titles of TEXT's sections: its headings and the bold labels that
/// open a paragraph or an item.
fn section_titles(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start_matches("- ");
            l.strip_prefix("**").or_else(|| l.starts_with('#').then(|| l.trim_start_matches('#').trim()))
        })
        .collect()
}

/// The files of the code and the harness, which cite docs' sections.
fn code_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = vec![root.join("Makefile")];
    for dir in ["src", "scripts", "dist", "tests", "examples", "bench", "debian"] {
        walk(&root.join(dir), &mut files);
    }
    files.sort();
    files
}

/// Every section that the code, the harness or DOCS cite and that the
/// cited doc lacks.
fn missing_sections(root: &Path, docs: &[(PathBuf, String)]) -> Vec<String> {
    let mut texts: Vec<(String, String)> = docs
        .iter()
        .filter(|(p, _)| !p.starts_with("docs/runs"))
        .map(|(p, t)| (p.display().to_string(), t.clone()))
        .collect();
    for f in code_files(root) {
        if let Ok(t) = fs::read_to_string(&f) {
            texts.push((f.strip_prefix(root).unwrap().display().to_string(), t));
        }
    }
    let mut problems = Vec::new();
    for (name, text) in &texts {
        for (doc, title) in section_refs(text) {
            let cited = docs.iter().find(|(p, _)| p == Path::new(doc)).map(|(_, t)| t.as_str());
            if !cited.is_some_and(|t| section_titles(t).iter().any(|s| s.starts_with(title))) {
                problems.push(format!("{name}: {doc} has no section \"{title}\""));
            }
        }
    }
    problems
}

/// "issue 51", "issues 3", "issue-21": a number of the project's tracker,
/// which a reader of the docs does not have.
fn names_an_issue(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices("issue").any(|(i, _)| {
        let rest = lower[i + 5..].trim_start_matches('s');
        let rest = rest.strip_prefix([' ', '-', '#']).unwrap_or("");
        rest.trim_start_matches('#').starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The sizes the docs keep to, and no issue numbers: the README at most
/// 250 lines, docs/*.md (docs/audit.md aside, docs/runs/ not counted) at
/// most 4,000.
fn sizes_and_issues(docs: &[(PathBuf, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = |p: &Path| docs.iter().filter(|(d, _)| d == p).map(|(_, t)| t.lines().count()).sum::<usize>();
    let readme = lines(Path::new("README.md"));
    if readme > 250 {
        problems.push(format!("README.md: {readme} lines, more than 250"));
    }
    let in_docs: usize = docs
        .iter()
        .filter(|(p, _)| p.parent() == Some(Path::new("docs")) && !p.ends_with("audit.md"))
        .map(|(_, t)| t.lines().count())
        .sum();
    if in_docs > 4000 {
        problems.push(format!("docs/*.md: {in_docs} lines, more than 4,000"));
    }
    for (p, t) in docs {
        if (p.starts_with("docs") || p == Path::new("README.md")) && names_an_issue(t) {
            problems.push(format!("{}: names an issue number", p.display()));
        }
    }
    problems
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_claim_of_the_docs_holds() {
    let docs = load_docs(root());
    assert!(docs.len() > 10, "only {} docs", docs.len());
    let checked = docs.iter().flat_map(|(_, t)| t.lines()).filter(|l| l.contains(CHECKED)).count();
    assert_eq!(checked, 2, "the README's two checked commands");
    let mut problems = problems(root(), &docs);
    problems.extend(missing_sections(root(), &docs));
    problems.extend(sizes_and_issues(&docs));
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The real docs with TEXT appended to the README: the problems found.
fn with_readme_tail(text: &str) -> Vec<String> {
    let mut docs = load_docs(root());
    docs[0].1.push_str(text);
    problems(root(), &docs)
}

#[test]
fn a_broken_link_fails() {
    let p = with_readme_tail(
        "\nSee [the run](docs/runs/2000-01-01-none.md), [DKMS](docs/integration.md#dkmz) and docs/none.md.\n",
    );
    assert_eq!(
        p,
        [
            "README.md: the link (docs/runs/2000-01-01-none.md) leads nowhere",
            "README.md: docs/integration.md has no heading #dkmz",
            "README.md: docs/runs/2000-01-01-none.md does not exist",
            "README.md: docs/none.md does not exist"
        ]
    );
}

#[test]
fn a_section_that_is_gone_fails() {
    let mut docs = load_docs(root());
    assert_eq!(missing_sections(root(), &docs), Vec::<String>::new());
    let rules = docs.iter_mut().find(|(p, _)| p == Path::new("docs/rules.md")).unwrap();
    rules.1 = rules.1.replace("## Dropping an entry", "## Removing an entry");
    let p = missing_sections(root(), &docs);
    assert!(!p.is_empty() && p.iter().all(|l| l.contains("docs/rules.md has no section \"Dropping")), "{p:?}");
}

#[test]
fn a_long_readme_or_an_issue_number_fails() {
    let mut docs = load_docs(root());
    assert_eq!(sizes_and_issues(&docs), Vec::<String>::new());
    docs[0].1.push_str(&"line\n".repeat(251));
    let rules = docs.iter_mut().find(|(p, _)| p == Path::new("docs/rules.md")).unwrap();
    rules.1.push_str("As issue 49 asked.\n");
    let p = sizes_and_issues(&docs);
    assert!(p.len() == 2 && p[0].starts_with("README.md: ") && p[1] == "docs/rules.md: names an issue number", "{p:?}");
    assert!(!names_an_issue("the issues the kernel has, issue-free"));
    assert!(names_an_issue("Issue #7") && names_an_issue("issues 3 and 4") && names_an_issue("the issue-21 branch"));
}

#[test]
fn a_missing_make_target_fails() {
    assert_eq!(
        with_readme_tail("\nRun `make no-such-target`.\n"),
        ["README.md: `make no-such-target` is no target of the Makefile"]
    );
    assert_eq!(
        with_readme_tail("\n    sudo make no-such-target PREFIX=/usr\n"),
        ["README.md: `make no-such-target` is no target of the Makefile"]
    );
}

#[test]
fn a_doc_that_opens_with_no_question_fails() {
    let mut docs = load_docs(root());
    let rules = docs.iter_mut().find(|(p, _)| p == Path::new("docs/rules.md")).unwrap();
    rules.1 = rules.1.replacen('?', ".", 1);
    assert_eq!(problems(root(), &docs), ["docs/rules.md: its title is not the question it answers"]);
}

#[test]
fn a_checked_block_no_target_runs_fails() {
    let marker = |target: &str| format!("\n<!-- fresh-check: `make {target}` {CHECKED} -->\n\n    cargo test\n");
    let p = with_readme_tail(&marker("no-such-check"));
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[1].contains("names `make no-such-check`, no target"), "{p:?}");
    let p = with_readme_tail(&marker("lint"));
    assert!(p.len() == 1 && p[0].contains("no script of `make lint` reads `<!-- fresh-check:`"), "{p:?}");
}

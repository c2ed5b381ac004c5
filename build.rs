// SPDX-License-Identifier: GPL-2.0-only
//! The build identity behind `--version`: `git describe --always` of the
//! checkout, with `-dirty` and a hash of the sources added when one of the
//! inputs below differs from the commit (two different dirty builds must
//! not look alike), or that hash alone when there is no git, as in a release
//! tarball, or when `ZWM_NO_GIT` is set: package builds set it (debian/rules),
//! so that a package built from a git checkout and one built from the source
//! package report the same identity, whatever the build did to the tree.
//! The Kbuild hook records the `--version` line, so any rebuilt tool with
//! other sources reprocesses every module.
//!
//! Git here never writes the index (`git describe --dirty` and `git diff`
//! refresh it): a written index would make the other profile's build
//! script stale, and `make` after `cargo build --release` and `cargo test`
//! would compile the crate again. Changes to the inputs rerun this script
//! through their own rerun-if-changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What goes into the binary: a change to anything else (docs, scripts)
/// leaves the identity alone.
const INPUTS: [&str; 4] = ["src", "build.rs", "Cargo.toml", "Cargo.lock"];

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    for input in INPUTS {
        println!("cargo:rerun-if-changed={input}");
    }
    println!("cargo:rerun-if-env-changed=ZWM_NO_GIT");
    let hash = format!("{:016x}", sources_hash(&root));
    let git = if std::env::var_os("ZWM_NO_GIT").is_some() { None } else { git_describe(&root) };
    let id = match git {
        Some((d, true)) => format!("git:{}-dirty sources:{hash}", shell_safe(&d)),
        Some((d, false)) => format!("git:{}", shell_safe(&d)),
        None => format!("sources:{hash}"),
    };
    println!("cargo:rustc-env=ZWM_BUILD_ID={id}");
}

/// The Kbuild hook puts the `--version` line into a recorded shell command
/// (`: zero-weak-mcount TOOL VERSION FLAGS`), unquoted, so it must hold no
/// shell or make metacharacter: a tag name could.
fn shell_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._+-".contains(c) { c } else { '_' }).collect()
}

/// `git describe`, whether an input differs from the commit, and the files
/// whose change must rerun this script: the checked-out commit.
fn git_describe(root: &Path) -> Option<(String, bool)> {
    let git = |args: &[&str]| {
        // No optional lock: `git status` then leaves the index alone.
        let out = Command::new("git").arg("-C").arg(root).env("GIT_OPTIONAL_LOCKS", "0").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Only a checkout of this crate: a tarball unpacked inside some other
    // repository (a distribution's packaging repository) must not take its
    // identity from that repository.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if fs::canonicalize(&top).ok()? != fs::canonicalize(root).ok()? {
        return None;
    }
    if let Some(p) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    if let Some(p) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let describe = git(&["describe", "--always"]).filter(|d| !d.is_empty())?;
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(INPUTS);
    Some((describe, !git(&status)?.is_empty()))
}

/// FNV-1a over the inputs' relative paths and contents, in sorted order:
/// stable across machines and Rust releases, which std's hasher is not.
fn sources_hash(root: &Path) -> u64 {
    let mut files = Vec::new();
    for input in INPUTS {
        collect(&root.join(input), &mut files);
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f);
        feed(rel.to_string_lossy().as_bytes());
        feed(&[0]);
        feed(&fs::read(&f).unwrap_or_default());
        feed(&[0]);
    }
    h
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in fs::read_dir(path).into_iter().flatten().flatten() {
            collect(&entry.path(), out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

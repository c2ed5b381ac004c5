// SPDX-License-Identifier: GPL-2.0-only
//! The rpm buildroot step, `dist/brp-zero-weak-mcount`, run as rpm runs
//! it (`RPM_BUILD_ROOT` set) on a buildroot of real module bytes: it hands
//! the tool the `.ko` files by name, names each compressed module it leaves
//! alone once, and tells a usage error from a failed module. (The debhelper
//! step needs debhelper itself: `debian/tests/dh-step`, an autopkgtest.)

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{BIN, Scratch, module, signed};
use zero_weak_mcount::compress::{Format, compress, decompress};
use zero_weak_mcount::process::{Options, analyze};

const WARNING: &str = "compressed module left unchanged";

fn brp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/brp-zero-weak-mcount")
}

/// What the library makes of `data` with default options.
fn processed(data: &[u8]) -> Vec<u8> {
    analyze(data, &Options::default()).unwrap().plan.apply_to(data)
}

/// A buildroot with `files` (path under `usr/lib/modules/7.2.0/`, bytes).
fn buildroot(name: &str, files: &[(&str, &[u8])]) -> Scratch {
    let root = Scratch::new(name);
    for (path, data) in files {
        let p = root.0.join("usr/lib/modules/7.2.0").join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, data).unwrap();
    }
    root
}

fn read(root: &Scratch, path: &str) -> Vec<u8> {
    fs::read(root.0.join("usr/lib/modules/7.2.0").join(path)).unwrap()
}

/// Run the step on `root` with the tool and `opts`: exit code and stderr.
fn run_brp(root: &Scratch, opts: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(brp())
        .arg(BIN)
        .args(opts)
        .env("RPM_BUILD_ROOT", &root.0)
        .env("RPM_BUILD_NCPUS", "2")
        .env_remove("NO_BRP_ZERO_WEAK_MCOUNT")
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn brp_processes_modules_by_name_and_names_each_compressed_one_once() {
    let original = module();
    assert_ne!(processed(&original), original, "the bundled module needs changes");
    let xz = b"not read: left alone by name".to_vec();
    let gz = compress(Format::Gzip, &original).unwrap();
    let root = buildroot(
        "brp-names",
        &[("extra/a.ko", &original), ("extra dir/b.ko", &original), ("kernel/c.ko.xz", &xz), ("kernel/d.ko.gz", &gz)],
    );
    // A second name of a.ko's inode: edited once, both names see it.
    let a = root.0.join("usr/lib/modules/7.2.0/extra/a.ko");
    fs::hard_link(&a, root.0.join("usr/lib/modules/7.2.0/extra/a-link.ko")).unwrap();
    let (code, err) = run_brp(&root, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(read(&root, "extra/a.ko"), processed(&original));
    assert_eq!(read(&root, "extra dir/b.ko"), processed(&original));
    assert_eq!(fs::metadata(&a).unwrap().nlink(), 2, "the hard link was broken");
    assert_eq!(read(&root, "extra/a-link.ko"), processed(&original));
    // Each compressed module: one warning from the step, none from the
    // tool (which never saw them), and its bytes as they were.
    assert_eq!(err.matches(WARNING).count(), 2, "{err}");
    for name in ["kernel/c.ko.xz", "kernel/d.ko.gz"] {
        assert_eq!(err.matches(name).count(), 1, "{name}: {err}");
    }
    assert!(!err.lines().any(|l| l.starts_with("zero-weak-mcount: ")), "the tool spoke too: {err}");
    assert_eq!(read(&root, "kernel/c.ko.xz"), xz);
    assert_eq!(read(&root, "kernel/d.ko.gz"), gz);
}

#[test]
fn brp_recompress_processes_compressed_modules_without_a_warning() {
    let original = module();
    let gz = compress(Format::Gzip, &original).unwrap();
    for opts in [&["--compressed=recompress"][..], &["--compressed", "recompress"][..]] {
        let root = buildroot("brp-recompress", &[("extra/a.ko", &original), ("kernel/d.ko.gz", &gz)]);
        let (code, err) = run_brp(&root, opts);
        assert_eq!(code, Some(0), "{opts:?}: {err}");
        assert!(!err.contains(WARNING), "{opts:?}: {err}");
        assert_eq!(read(&root, "extra/a.ko"), processed(&original));
        assert_eq!(decompress(Format::Gzip, &read(&root, "kernel/d.ko.gz")).unwrap(), processed(&original));
    }
}

#[test]
fn a_usage_error_exits_2_and_is_not_blamed_on_modules() {
    let original = module();
    for opts in [&["--signed=bogus"][..], &["--kconfig", "/nonexistent/.config"][..], &["--no-such-option"][..]] {
        let root = buildroot("brp-usage", &[("extra/a.ko", &original)]);
        let (code, err) = run_brp(&root, opts);
        assert_eq!(code, Some(2), "{opts:?}: {err}");
        assert!(err.contains("brp-zero-weak-mcount: error:") && err.contains("usage error"), "{opts:?}: {err}");
        assert!(!err.contains("failed on some module"), "{opts:?}: {err}");
        assert_eq!(read(&root, "extra/a.ko"), original, "{opts:?}");
    }
}

#[test]
fn a_refused_module_exits_1_and_is_blamed_on_the_modules() {
    // The other side of the usage error: a signed module that needs
    // changes is refused (the step runs after signing) and stays as it is;
    // the unsigned one next to it is still processed.
    let original = module();
    let sig = signed(&original);
    let root = buildroot("brp-signed", &[("extra/a.ko", &original), ("extra/s.ko", &sig)]);
    let (code, err) = run_brp(&root, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("extra/s.ko: error:") && err.contains("failed on some module(s)"), "{err}");
    assert!(!err.contains("usage error"), "{err}");
    assert_eq!(read(&root, "extra/s.ko"), sig);
    assert_eq!(read(&root, "extra/a.ko"), processed(&original));
}

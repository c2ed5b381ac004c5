// SPDX-License-Identifier: GPL-2.0-only
//! `--check` as an audit of an installed module tree: compressed modules
//! are read in memory without any `--compressed` flag, signed ones that need
//! changes are reported "would change (signed)", and nothing is written.

mod common;

use common::{MODULE, Scratch, signed, stderr, tool};

use std::fs;
use std::os::unix::fs::MetadataExt as _;

use zero_weak_mcount::compress::{Format, compress};

#[test]
fn check_reads_compressed_and_signed_modules_without_writing() {
    let dir = Scratch::new("audit");
    let original = fs::read(MODULE).unwrap();
    let processed = dir.processed_module();
    assert_ne!(processed, original);
    let tree = dir.0.join("lib/modules/7.2.0/kernel");
    fs::create_dir_all(&tree).unwrap();
    let files = [
        ("needs.ko.xz", compress(Format::Xz, &signed(&original)).unwrap()),
        ("needs.ko.zst", compress(Format::Zstd, &original).unwrap()),
        ("needs.ko.gz", compress(Format::Gzip, &original).unwrap()),
        ("done.ko.xz", compress(Format::Xz, &signed(&processed)).unwrap()),
        ("done.ko.zst", compress(Format::Zstd, &processed).unwrap()),
    ];
    for (name, bytes) in &files {
        fs::write(tree.join(name), bytes).unwrap();
    }
    let before: Vec<_> = files.iter().map(|(n, _)| fs::metadata(tree.join(n)).unwrap()).collect();

    let out = tool(&["--check", dir.0.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let at = |name: &str| format!("zero-weak-mcount: {}: ", tree.join(name).display());
    assert!(err.contains(&format!("{}would change (signed): would zero 2 of 8 entries", at("needs.ko.xz"))), "{err}");
    for name in ["needs.ko.zst", "needs.ko.gz"] {
        assert!(err.contains(&format!("{}would change: would zero 2 of 8 entries", at(name))), "{err}");
    }
    assert!(!err.contains("done.ko"), "a module with nothing to do is not mentioned: {err}");
    assert!(!err.contains("compressed module left unchanged") && !err.contains(": error: "), "{err}");
    assert_eq!(
        err.lines().rev().nth(1).unwrap(),
        "zero-weak-mcount: 5 modules: 3 would change (1 signed), 2 unchanged, 0 skipped, 0 errors"
    );
    assert!(
        err.ends_with(
            "\nzero-weak-mcount: no function at risk; to remove the dead records: run zero-weak-mcount \
         again without --check for the 2 unsigned (--signed=skip leaves the others alone); for the 1 signed, process \
         modules where they are built, before they are signed (install-kbuild-hook for kernel, DKMS and M= builds; \
         dh_zero_weak_mcount or brp-zero-weak-mcount when packaging), or run a kernel with this project's ftrace \
         series\n"
        ),
        "{err}"
    );
    // Nothing written: the same bytes, inode and mtime, and no temporary file.
    for ((name, bytes), meta) in files.iter().zip(&before) {
        let now = fs::metadata(tree.join(name)).unwrap();
        assert_eq!(fs::read(tree.join(name)).unwrap(), *bytes, "{name}");
        assert_eq!((now.ino(), now.mtime(), now.mtime_nsec()), (meta.ino(), meta.mtime(), meta.mtime_nsec()), "{name}");
    }
    assert_eq!(fs::read_dir(&tree).unwrap().count(), files.len());

    // File mode alike; a processed compressed module passes.
    let out = tool(&["--check", tree.join("needs.ko.gz").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = tool(&["--check", tree.join("done.ko.xz").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // The real run without flags still leaves compressed modules alone.
    let out = tool(&[tree.join("needs.ko.zst").to_str().unwrap()]);
    assert!(out.status.success() && stderr(&out).contains("left unchanged"), "{}", stderr(&out));
    assert_eq!(fs::read(tree.join("needs.ko.zst")).unwrap(), files[1].1);
}

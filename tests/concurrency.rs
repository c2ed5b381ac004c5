// SPDX-License-Identifier: GPL-2.0-only
//! Concurrency: tools started on the same file at once serialise on the
//! file's flock. The file ends up processed exactly once: its bytes equal
//! the reference, every run exits 0, and exactly one run reports that it
//! zeroed entries (the others find nothing to do). Without the lock two
//! in-place runs would both write (the same bytes, so only the reports
//! tell), and without the inode re-check after the lock an `--atomic` run
//! would process the file it opened before another run renamed a new one
//! into place. A `--check` running alongside sees the file before or after,
//! never half-written.

mod common;

use common::{BIN, Scratch, big_module};

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use zero_weak_mcount::process::{Options, analyze};

const ROUNDS: usize = 25;

fn spawn(args: &[&str], path: &Path) -> Child {
    Command::new(BIN).arg("-v").args(args).arg(path).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Start one run per entry of `modes` on the same file at once, many
/// rounds over; check that exactly one of them zeroed anything.
fn race(name: &str, modes: &[&[&str]]) {
    let dir = Scratch::new(name);
    let original = big_module(8_000);
    let expected = analyze(&original, &Options::default()).unwrap().plan.apply_to(&original);
    let path = dir.0.join("m.ko");
    for round in 0..ROUNDS {
        fs::write(&path, &original).unwrap();
        let children: Vec<Child> = modes.iter().map(|args| spawn(args, &path)).collect();
        let mut zeroed = 0;
        for (child, args) in children.into_iter().zip(modes) {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name} round {round} {args:?}: {err}");
            if err.contains(": zeroed ") {
                zeroed += 1;
            } else {
                assert!(err.contains("nothing to zero"), "{name} round {round} {args:?}: {err}");
            }
        }
        assert_eq!(zeroed, 1, "{name} round {round}: {zeroed} runs zeroed entries");
        assert!(fs::read(&path).unwrap() == expected, "{name} round {round}: not the reference bytes");
        let names: Vec<_> = fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["m.ko"], "{name} round {round}: files left behind");
    }
    eprintln!("{name}: {ROUNDS} rounds of {} runs on one file", modes.len());
}

#[test]
fn two_in_place_runs_process_the_file_once() {
    race("in-place", &[&[], &[]]);
}

#[test]
fn two_atomic_runs_process_the_file_once() {
    race("atomic", &[&["--atomic"], &["--atomic"]]);
}

#[test]
fn four_runs_in_both_modes_process_the_file_once() {
    race("mixed", &[&[], &["--atomic"], &[], &["--atomic"]]);
}

/// `--check` takes a shared lock: next to a writer it reports the file as
/// it was before (would change, exit 1) or after (nothing to do, exit 0),
/// with the full counts either way, never an error or a partial count.
#[test]
fn check_next_to_a_writer_sees_before_or_after() {
    let dir = Scratch::new("check");
    let n = 8_000;
    let original = big_module(n);
    let zeroed = analyze(&original, &Options::default()).unwrap();
    let expected = zeroed.plan.apply_to(&original);
    let weak = (0..n).filter(|i| i % 7 == 3).count();
    let path = dir.0.join("m.ko");
    let (mut before, mut after) = (0, 0);
    for round in 0..ROUNDS {
        fs::write(&path, &original).unwrap();
        let mode: &[&str] = if round % 2 == 0 { &[] } else { &["--atomic"] };
        let writer = spawn(mode, &path);
        let checkers: Vec<Child> = (0..2).map(|_| spawn(&["--check"], &path)).collect();
        assert!(writer.wait_with_output().unwrap().status.success());
        for c in checkers {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(1) => {
                    assert!(err.contains(&format!("would zero {weak} of {n} entries")), "round {round}: {err}");
                    before += 1;
                }
                Some(0) => {
                    assert!(err.contains(&format!("nothing to zero in {} entries", n - weak)), "round {round}: {err}");
                    after += 1;
                }
                other => panic!("round {round}: --check exited {other:?}: {err}"),
            }
        }
        assert!(fs::read(&path).unwrap() == expected, "round {round}");
    }
    eprintln!("check next to a writer: {before} saw the file before, {after} after");
}

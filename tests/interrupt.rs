// SPDX-License-Identifier: GPL-2.0-only
//! Interruption: `--atomic` runs killed with SIGKILL at seeded random
//! moments, many times over, while they process many modules (the bundled
//! one and large synthetic ones). After every kill each module must be
//! either its original bytes or the fully processed bytes, never anything
//! in between. A kill can leave the run's temporary file
//! (`.NAME.zwm-PID-N.tmp`) behind; the test counts those, checks their names,
//! and checks that the next run that rewrites the module removes them.
#![allow(
    clippy::cast_possible_truncation,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]
#![allow(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the temporary names are the tool's own, lower-case"
)]

mod common;

use common::{BIN, MODULE, arm64_adjust_first, big_module};

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zero_weak_mcount::process::{Options, analyze};

/// `ZWM_INTERRUPT_KILLS` and `ZWM_INTERRUPT_BIG` (entries of the largest
/// module) make a longer run; the defaults keep `cargo test` quick.
fn knob(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
const SEED: u64 = 0x6b11_1ed0_0000_0006;

/// One module file of the test: its path and which kind of module it is.
struct Module {
    path: PathBuf,
    kind: usize,
}

#[test]
fn sigkill_during_atomic_runs_leaves_each_file_whole() {
    let dir = common::Scratch::new("interrupt");
    let _ = fs::remove_dir_all(&dir.0);
    fs::create_dir_all(&dir.0).unwrap();

    // The kinds of module: (original, processed).
    let kills = knob("ZWM_INTERRUPT_KILLS", 200);
    let big = knob("ZWM_INTERRUPT_BIG", 20_000);
    let kinds: Vec<(Vec<u8>, Vec<u8>)> =
        [fs::read(MODULE).unwrap(), big_module(big), big_module(big / 4), arm64_adjust_first()]
            .into_iter()
            .map(|o| {
                let p = analyze(&o, &Options::default()).unwrap().plan.apply_to(&o);
                assert_ne!(o, p);
                (o, p)
            })
            .collect();
    // Many files on one command line: the small modules (one zeroed, one
    // dropped) in between big ones.
    let layout = [1, 0, 3, 2, 0, 1, 0, 3, 2, 0, 0, 3];
    let modules: Vec<Module> = layout
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let path = dir.0.join(format!("m{i:02}.ko"));
            fs::write(&path, &kinds[k].0).unwrap();
            Module { path, kind: k }
        })
        .collect();
    let run = || {
        Command::new(BIN)
            .arg("--atomic")
            .args(modules.iter().map(|m| &m.path))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };

    // How long a whole run takes, from all originals: the kills are spread
    // over that time and a little past it.
    let start = Instant::now();
    assert!(run().wait().unwrap().success());
    let full = start.elapsed();
    for m in &modules {
        assert_eq!(fs::read(&m.path).unwrap(), kinds[m.kind].1);
        fs::write(&m.path, &kinds[m.kind].0).unwrap();
    }

    let mut rng = common::Rng::new(SEED);
    let span = (full.as_micros() as u64 * 11 / 10).max(1);
    let (mut original, mut processed, mut finished) = (0usize, 0usize, 0usize);
    let mut temps = std::collections::HashSet::new();
    for kill in 0..kills {
        let delay = Duration::from_micros(rng.next() % span);
        let mut child = run();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
        for entry in fs::read_dir(&dir.0).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                // `.mNN.ko.zwm-PID.tmp`: the killed run's unfinished copy.
                assert!(name.ends_with(".tmp") && name.contains(".ko.zwm-"), "kill {kill}: unexpected {name}");
                temps.insert(name);
            }
        }
        for m in &modules {
            let now = fs::read(&m.path).unwrap();
            let (o, p) = &kinds[m.kind];
            if now == *o {
                original += 1;
            } else if now == *p {
                processed += 1;
                // Put most processed files back, so later kills meet work.
                if rng.next() % 4 != 0 {
                    fs::write(&m.path, o).unwrap();
                }
            } else {
                panic!("kill {kill} after {delay:?}: {} is neither original nor processed", m.path.display());
            }
        }
    }
    eprintln!(
        "interrupt: {kills} SIGKILLs over {span} us (a full run of {} files, the largest with {big} entries, took {full:?}); files seen whole: \
         {original} original, {processed} processed; {} temporary files left by killed runs; \
         {finished} runs finished before the kill",
        modules.len(),
        temps.len()
    );
    assert!(original > 0 && processed > 0);

    // A run that rewrites a module removes what killed runs left beside it.
    for m in &modules {
        fs::write(&m.path, &kinds[m.kind].0).unwrap();
    }
    assert!(run().wait().unwrap().success());
    let left: Vec<String> = fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "stale temporary files survived a completed run: {left:?}");
}

/// A tree of `n` copies of one big module, and its bytes before and after.
fn big_tree(dir: &common::Scratch, n: usize) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let original = big_module(20_000);
    let processed = analyze(&original, &Options::default()).unwrap().plan.apply_to(&original);
    let tree = dir.0.join("tree");
    fs::create_dir_all(&tree).unwrap();
    for i in 0..n {
        fs::write(tree.join(format!("m{i:03}.ko")), &original).unwrap();
    }
    (tree, original, processed)
}

/// SIGINT and SIGTERM in tree mode, sent as soon as the first module has
/// been reported: the run reports as it goes, finishes the modules it
/// started, says how far it got after their reports, and exits 130 or 143;
/// every file is whole, and the ones reported are exactly the ones changed.
#[test]
fn sigint_and_sigterm_stop_a_tree_between_modules() {
    use std::io::BufRead as _;
    let dir = common::Scratch::new("sigint");
    let n = 40;
    let (tree, original, processed) = big_tree(&dir, n);
    for (sig, jobs) in [(libc::SIGINT, "1"), (libc::SIGTERM, "2"), (libc::SIGINT, "2")] {
        for i in 0..n {
            fs::write(tree.join(format!("m{i:03}.ko")), &original).unwrap();
        }
        let mut child = Command::new(BIN).args(["-v", "-j", jobs]).arg(&tree).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut text = Vec::new();
        // The first module's summary comes while the others are still to do.
        for line in lines.by_ref() {
            let line = line.unwrap();
            let first = line.contains(": zeroed ");
            text.push(line);
            if first {
                let pid = i32::try_from(child.id()).unwrap();
                // SAFETY: kill(2) on our own child.
                assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
                break;
            }
        }
        text.extend(lines.map(Result::unwrap));
        let status = child.wait().unwrap();
        let what = format!("signal {sig}, -j{jobs}:\n{}", text.join("\n"));
        assert_eq!(status.code(), Some(128 + sig), "{what}");
        let last = text.last().unwrap();
        let done: Vec<&str> = text.iter().filter(|l| l.contains(": zeroed ")).map(String::as_str).collect();
        assert_eq!(
            *last,
            format!("zero-weak-mcount: interrupted: {} of {n} done ({} changed)", done.len(), done.len()),
            "{what}"
        );
        assert!(!done.is_empty() && done.len() < n, "{what}");
        assert!(!text.iter().any(|l| l.contains(" modules: ")), "no summary after an interruption: {what}");
        // The reports name the first modules, in order, and exactly those
        // files changed; every other file is its original bytes.
        for i in 0..n {
            let path = tree.join(format!("m{i:03}.ko"));
            let now = fs::read(&path).unwrap();
            if i < done.len() {
                assert!(done[i].contains(&format!("{}: zeroed ", path.display())), "{what}");
                assert!(now == processed, "m{i:03}.ko reported but not processed: {what}");
            } else {
                assert!(now == original, "m{i:03}.ko changed but not reported: {what}");
            }
        }
    }
}

/// A reader that goes away: with `-o -`, and with stderr under `-v`. The
/// tool stops quietly as a filter does (killed by SIGPIPE), without an error
/// message, and leaves every file whole.
#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    let dir = common::Scratch::new("epipe");
    let (tree, original, processed) = big_tree(&dir, 30);
    assert!(original.len() > 1 << 20, "larger than a pipe's buffer");

    let one = tree.join("m000.ko");
    let mut child =
        Command::new(BIN).args(["-o", "-"]).arg(&one).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut byte = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut byte).unwrap();
    // The read end is closed now, with most of the module unwritten.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{out:?}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read(&one).unwrap(), original);

    // -v over the tree writes far more than a pipe holds; the reader
    // takes one line and leaves.
    let mut child = Command::new(BIN).args(["-v", "-j2"]).arg(&tree).stderr(Stdio::piped()).spawn().unwrap();
    child.stderr.take().unwrap().read_exact(&mut byte).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
    let (mut before, mut after) = (0, 0);
    for i in 0..30 {
        let now = fs::read(tree.join(format!("m{i:03}.ko"))).unwrap();
        if now == original {
            before += 1;
        } else {
            assert!(now == processed, "m{i:03}.ko is neither original nor processed");
            after += 1;
        }
    }
    assert!(before > 0, "the run went on after its reader left ({after} processed)");
}

/// On a terminal (a pty from `script`), SIGINT once the progress line is
/// drawn: the line is cleared before `interrupted: ...` is printed, so that
/// line starts at the left margin and nothing of the count is left after it.
#[test]
fn sigint_on_a_terminal_clears_the_progress_line() {
    use std::io::Read as _;
    let script = Command::new("script").arg("--version").output();
    assert!(
        script.is_ok_and(|o| o.status.success()),
        "this test needs script(1) from util-linux for a pseudo-terminal (apt-get install bsdutils)"
    );
    let dir = common::Scratch::new("sigint-tty");
    let n = 40;
    let (tree, _, _) = big_tree(&dir, n);
    // `exec` keeps the shell's pid, which it prints first.
    let cmd = format!("echo PID $$; exec {BIN} -j1 {}", tree.display());
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    let progress = "\rzero-weak-mcount: ";
    // Read until the pid and a first progress draw have come.
    while !(text.contains("PID ") && text.contains(progress)) {
        let got = out.read(&mut buf).unwrap();
        assert!(got > 0, "the run ended before a progress line: {text:?}");
        text.push_str(&String::from_utf8_lossy(&buf[..got]));
    }
    let pid: i32 = text.split("PID ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: kill(2) on the tool, our grandchild, still running: its
    // progress line was just drawn and `script` waits for it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    out.read_to_string(&mut text).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{text:?}");
    let at = text.find("zero-weak-mcount: interrupted: ").unwrap_or_else(|| panic!("{text:?}"));
    assert!(text[..at].ends_with("\r\x1b[K"), "the progress line was not cleared first: {text:?}");
    // The pty ends lines with "\r\n"; nothing else follows the count.
    let line = text[at..].strip_suffix("\r\n").unwrap_or_else(|| panic!("{text:?}"));
    let done = line.strip_prefix("zero-weak-mcount: interrupted: ").unwrap().split(' ').next().unwrap();
    assert_eq!(line, format!("zero-weak-mcount: interrupted: {done} of {n} done ({done} changed)"), "{text:?}");
    assert!(done.parse::<usize>().unwrap() < n, "{text:?}");
}

// SPDX-License-Identifier: GPL-2.0-only
//! Module trees, for packagers: find every module under a directory, and
//! process many files on a few threads with a result that does not depend
//! on how many.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const SUFFIXES: [&str; 4] = [".ko", ".ko.xz", ".ko.zst", ".ko.gz"];

fn is_module_name(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| SUFFIXES.iter().any(|s| n.ends_with(s)))
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Tree {
    /// The modules, sorted, each inode once.
    pub modules: Vec<PathBuf>,
    /// Symlinks passed over, sorted: those named like a module, and those
    /// to a directory (a tree the walk does not enter).
    pub symlinks: Vec<PathBuf>,
}

/// The modules under `root`, sorted by path, each inode once, following
/// no symlinks (a link into another tree must not make us edit that
/// tree), and the symlinks passed over.
pub fn tree(root: &Path) -> io::Result<Tree> {
    let mut found = Vec::new();
    let mut symlinks = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {}", dir.display(), crate::error::plain(&e))))?;
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() && is_module_name(&path) {
                found.push(path);
            } else if kind.is_symlink() && (is_module_name(&path) || path.is_dir()) {
                symlinks.push(path);
            }
        }
    }
    found.sort();
    symlinks.sort();
    let mut seen = HashSet::new();
    let mut unique = Vec::with_capacity(found.len());
    for path in found {
        let m = fs::symlink_metadata(&path)?;
        if seen.insert((m.dev(), m.ino())) {
            unique.push(path);
        }
    }
    Ok(Tree { modules: unique, symlinks })
}

/// Default worker count: rpm's `RPM_BUILD_NCPUS` when set, else the CPUs
/// this process may use.
#[must_use]
pub fn default_jobs() -> usize {
    std::env::var("RPM_BUILD_NCPUS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Apply `work` to every item on `jobs` threads, and hand each result to
/// `report` as soon as it and every item before it are done: in item order,
/// whatever the thread count, so the output never depends on it, and
/// without waiting for the end. `report` is called under a lock, never
/// twice at once, with the item's index and how many items have finished
/// (for progress). Once `stop` says so, no new item is started; items in
/// progress finish and are reported. Returns how many items were reported.
///
/// # Panics
///
/// If `work` panics on an item, or a thread cannot be started.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    report: impl FnMut(usize, R, usize) + Send,
    stop: impl Fn() -> bool + Sync,
) -> usize {
    if jobs <= 1 || items.len() <= 1 {
        // No thread to start for one file: Kbuild runs the tool once per
        // module, and starting a thread costs more than some modules take.
        let mut report = report;
        for (i, item) in items.iter().enumerate() {
            if stop() {
                return i;
            }
            report(i, work(item), i + 1);
        }
        return items.len();
    }
    let next = AtomicUsize::new(0);
    // Results waiting for an earlier item, the next index to report, how
    // many have finished, and the reporter.
    let state = Mutex::new(Ordered { waiting: (0..items.len()).map(|_| None).collect(), next: 0, finished: 0, report });
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    if stop() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = work(item);
                    let mut s = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    s.waiting[i] = Some(r);
                    s.finished += 1;
                    s.flush();
                }
            });
        }
    });
    // Items are taken in order and every one taken is finished, so what
    // was done is a prefix, all of it reported.
    state.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).next
}

struct Ordered<R, F> {
    waiting: Vec<Option<R>>,
    next: usize,
    finished: usize,
    report: F,
}

impl<R, F: FnMut(usize, R, usize)> Ordered<R, F> {
    fn flush(&mut self) {
        while let Some(r) = self.waiting.get_mut(self.next).and_then(Option::take) {
            (self.report)(self.next, r, self.finished);
            self.next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_item_order_whatever_the_thread_count() {
        let items: Vec<u64> = (0..1000).collect();
        let run = |jobs| {
            let mut seen = Vec::new();
            let n = parallel(&items, jobs, |&x| x * x, |i, r, _| seen.push((i, r)), || false);
            assert_eq!(n, items.len());
            seen
        };
        let one = run(1);
        assert_eq!(one, run(7));
        assert_eq!(one[999], (999, 999 * 999));
    }

    #[test]
    fn a_stop_starts_nothing_new_and_reports_every_finished_item() {
        let items: Vec<u64> = (0..1000).collect();
        for jobs in [1, 3] {
            let started = AtomicUsize::new(0);
            let mut seen = Vec::new();
            let n = parallel(
                &items,
                jobs,
                |&x| {
                    started.fetch_add(1, Ordering::SeqCst);
                    x
                },
                |i, r, _| seen.push((i, r)),
                || started.load(Ordering::SeqCst) >= 10,
            );
            // Every item started was finished and reported, in order.
            assert_eq!(n, started.load(Ordering::SeqCst), "jobs {jobs}");
            assert!((10..10 + jobs).contains(&n), "jobs {jobs}: {n}");
            assert_eq!(seen, items[..n].iter().map(|&i| (usize::try_from(i).unwrap(), i)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn walks_sorted_without_symlinks_or_duplicates() {
        let root = std::env::temp_dir().join(format!("zwm-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("b/c")).unwrap();
        fs::create_dir_all(root.join("outside")).unwrap();
        for f in ["b/c/z.ko", "a.ko", "b/m.ko.xz", "b/readme.txt", "outside/o.ko"] {
            fs::write(root.join(f), b"x").unwrap();
        }
        fs::hard_link(root.join("a.ko"), root.join("b/hard.ko")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("b/link")).unwrap();
        std::os::unix::fs::symlink(root.join("a.ko"), root.join("b/sym.ko")).unwrap();
        let found = tree(&root.join("b")).unwrap().modules;
        let names: Vec<_> =
            found.iter().map(|p| p.strip_prefix(&root).unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, ["b/c/z.ko", "b/hard.ko", "b/m.ko.xz"]);
        let links: Vec<_> = tree(&root.join("b")).unwrap().symlinks;
        assert_eq!(links, [root.join("b/link"), root.join("b/sym.ko")]);
        let all = tree(&root).unwrap().modules;
        assert!(all.contains(&root.join("a.ko")) && !all.contains(&root.join("b/hard.ko")), "{all:?}");
        fs::remove_dir_all(&root).unwrap();
    }
}

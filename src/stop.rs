// SPDX-License-Identifier: GPL-2.0-only
//! Stopping a run early and cleanly: SIGINT, SIGTERM, or an output pipe
//! whose reader went away. Each module in progress is finished (its file is
//! never left half written) and no new one is started.

use std::sync::atomic::{AtomicI32, Ordering};

/// 0 while running; the signal number once one arrived; [`PIPE`] after a
/// write to a closed pipe.
static STOP: AtomicI32 = AtomicI32::new(0);

/// The [`requested`] value after a write failed with `EPIPE`.
pub const PIPE: i32 = -1;

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT and SIGTERM. Without `SA_RESTART`, so that a wait for
/// another run's lock on a module returns (`EINTR`) and can give up.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the
        // handler only stores to an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(sig, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Why the run should stop, if it should: a signal number, or [`PIPE`].
#[must_use]
pub fn requested() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

/// A write failed: if its pipe was closed, the run stops as for a
/// signal, quietly.
pub fn on_write_error(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        let _ = STOP.compare_exchange(0, PIPE, Ordering::SeqCst, Ordering::SeqCst);
    }
}

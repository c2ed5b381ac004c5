// SPDX-License-Identifier: GPL-2.0-only
//! zero-weak-mcount: zero the ftrace callsite entries of overridden weak
//! functions in Linux kernel modules, at build time, as `scripts/sorttable`
//! does for vmlinux, so the kernel never builds records for them.
//!
//! The pieces, in the order a module goes through them:
//! - [`walk`]: the module files of a tree, and the worker threads;
//! - [`mod@file`]: one file on disk: read or mapped, locked, written back;
//! - [`compress`]: `.ko.xz`/`.ko.zst`/`.ko.gz`, unpacked and packed again;
//! - [`signature`]: an appended module signature, refused unless dropped;
//! - [`elf`]: the ELF view of the module, validated, as plain data;
//! - [`kconfig`]: the kernel `.config` the module was built with, if given;
//! - [`rule`]: the rule a module is judged by, as plain data;
//! - [`release`]: every kernel release at which a rule changes;
//! - [`arch`]: the per-arch facts and per-release rows that pick that rule;
//! - [`decide`]: the weak-entry decision, a pure function;
//! - [`kept`]: the offset rule's "every entry kept", answered as a module
//!   is read;
//! - [`plan`]: every byte to write, checked in full, then applied;
//! - [`process`]: one module's bytes, start to end;
//! - [`report`]: what the analysis found, as plain data;
//! - [`risk`]: the functions whose ftrace lookup can reach a dead record;
//! - [`render`]: every word said about it;
//! - [`error`]: every way it can fail, each with its remedy;
//! - [`stop`]: SIGINT, SIGTERM and a closed pipe end a run between modules.

pub mod arch;
pub mod cli;
pub mod compress;
pub mod decide;
pub mod elf;
pub mod error;
pub mod file;
pub mod kconfig;
pub mod kept;
pub mod plan;
pub mod process;
pub mod release;
pub mod render;
pub mod report;
pub mod risk;
pub mod rule;
pub mod signature;
pub mod stop;
pub mod walk;

pub use error::Error;

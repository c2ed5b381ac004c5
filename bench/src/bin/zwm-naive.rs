// SPDX-License-Identifier: GPL-2.0-only
//! Baseline "naive": the tool's flow (`--check`, nothing written) with the
//! kernel's O(entries x symbols) search in place of the sorted index.
//! Same parsing and planning code (the library's); only the search differs.
//!
//! usage: zwm-naive FILE...   (exit 1 if any file would change, like --check)

use std::path::Path;
use std::process::ExitCode;

use zwm_bench::{Res, image, map, naive_decide, tool_extract, tool_parse, tool_plan};

fn one(path: &Path) -> Res<bool> {
    let map = map(path)?;
    let image = image(&map)?;
    let Some((info, rule)) = tool_parse(image)? else { return Ok(false) };
    let Some(x) = tool_extract(image, &info, &rule)? else { return Ok(false) };
    let n = naive_decide(image, &info, &rule, &x, None)?;
    let plan = tool_plan(image, &info, &rule, &x, &n.zero)?;
    Ok(!plan.is_empty())
}

fn main() -> ExitCode {
    let mut changed = false;
    let mut failed = false;
    for arg in std::env::args_os().skip(1) {
        match one(Path::new(&arg)) {
            Ok(c) => changed |= c,
            Err(e) => {
                failed = true;
                eprintln!("zwm-naive: {}: error: {e}", Path::new(&arg).display());
            }
        }
    }
    if changed || failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

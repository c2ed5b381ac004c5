// SPDX-License-Identifier: GPL-2.0-only
//! The man page and the shell completions of zero-weak-mcount, from the
//! same clap definition the binary parses (`src/cli.rs`), so that neither
//! can list an option the binary lacks or miss one it has.
//!
//!     cargo run --example gen-docs -- OUTDIR
//!
//! writes OUTDIR/zero-weak-mcount.1 and OUTDIR/completions/{bash,zsh,fish}
//! files named as each shell looks them up. `make` runs it.
//!
//! An example rather than build.rs: `clap_mangen` and `clap_complete` then stay
//! dev-dependencies that a plain `cargo build` or `cargo install` never
//! fetches, and the build script does not write outside `OUT_DIR`.

use std::fs;
use std::path::PathBuf;

use clap_complete::Shell;
use zero_weak_mcount::cli;

fn main() -> std::io::Result<()> {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: gen-docs OUTDIR");
        std::process::exit(2);
    };
    let cmd = cli::command();
    fs::create_dir_all(out.join("completions"))?;
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    fs::write(out.join(format!("{}.1", cli::NAME)), page)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = cmd.clone();
        clap_complete::generate_to(shell, &mut cmd, cli::NAME, out.join("completions"))?;
    }
    Ok(())
}

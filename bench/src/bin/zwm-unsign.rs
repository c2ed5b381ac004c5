// SPDX-License-Identifier: GPL-2.0-only
//! Cut the appended module signature off each FILE, in place
//! (`[ELF][PKCS#7][12-byte struct module_signature][~Module signature appended~\n]`).
//! Files without a signature are left alone.

use std::fs::OpenOptions;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut failed = false;
    for arg in std::env::args_os().skip(1) {
        let result = (|| -> Result<(), Box<dyn std::error::Error>> {
            let data = std::fs::read(&arg)?;
            if let Some(len) = zero_weak_mcount::signature::elf_len(&data)? {
                OpenOptions::new().write(true).open(&arg)?.set_len(len as u64)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            failed = true;
            eprintln!("zwm-unsign: {}: {e}", std::path::Path::new(&arg).display());
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

// SPDX-License-Identifier: GPL-2.0-only
//! Errors, each phrased for a kernel or distribution engineer reading a
//! build log: what is wrong with the file, and what to do about it.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}", plain(.0))]
    Io(#[from] io::Error),
    #[error("{what}: {}", plain(.source))]
    IoAt { what: &'static str, source: io::Error },
    /// Writing `-o PATH`: the message names the output, not the input.
    #[error("{what} {}: {}", .path.display(), plain(.source))]
    Output { what: &'static str, path: std::path::PathBuf, source: io::Error },
    #[error("is a directory (give module files, or use --tree to walk a module tree)")]
    Directory,
    #[error("not a regular file")]
    NotRegular,
    #[error("empty file, not a kernel module")]
    Empty,
    #[error("not an ELF file")]
    NotElf,
    #[error("malformed ELF: {0}")]
    Malformed(String),
    /// A check of the tool's own reasoning failed: a bug, not the file's fault.
    #[error("internal check failed: {0}")]
    Internal(String),
    #[error("ELF type is {0}: kernel modules are relocatable objects (ET_REL)")]
    NotRelocatable(&'static str),
    #[error(
        "module is signed: editing it would invalidate the signature. Run zero-weak-mcount before signing \
         (it belongs right after the module is linked), or pass --signed=strip to drop the signature and re-sign afterwards"
    )]
    Signed,
    #[error("malformed module signature: {0}")]
    BadSignature(String),
    #[error("{0}-compressed module: decompress it first, or pass --compressed=recompress")]
    Compressed(&'static str),
    #[error("malformed compressed module: {0}")]
    Decompress(String),
    #[error("cannot compress: {0}")]
    Compress(String),
    #[error("built without the compression feature: cannot handle {0} modules")]
    NoCompression(&'static str),
    #[error("kernel config: {0}")]
    Config(String),
    /// `--section` names a table this module's kernel does not read.
    #[error("{0}")]
    Section(String),
    #[error(
        "has {0} hard links: renaming a new file over it would leave the other names with the old bytes \
         (process it without --atomic; compressed modules are always replaced, so unlink the extra names first)"
    )]
    HardLinks(u64),
    #[error("warning treated as an error (--fatal-warnings): {0}")]
    FatalWarning(String),
}

/// An I/O error as a sentence, without the "(os error N)" that the
/// standard library appends: the reason is in the words already.
#[must_use]
pub fn plain(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_os_error_numbers() {
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert!(e.to_string().ends_with("(os error 13)"), "{e}");
        assert_eq!(Error::IoAt { what: "cannot open", source: e }.to_string(), "cannot open: Permission denied");
        assert_eq!(plain(&io::Error::other("no number here")), "no number here");
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! A module file on disk: read or mapped, locked, and written back in
//! place, atomically, or to `-o`; compressed modules are unpacked and
//! packed again around the same analysis.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(clippy::cast_possible_truncation, reason = "a file read whole is at most READ_LIMIT bytes")]

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::compress::{self, Format};
use crate::error::Error;
use crate::process::{Analysis, COMPRESSED_ADVICE, CompressedPolicy, LeftAlone, Options, analyze};

/// A module's bytes: read into memory when small, mapped when large.
///
/// Mapping touches only the pages the tool needs, which matters for
/// amdgpu.ko; but every mmap and munmap takes the address space's lock, on
/// which the worker threads of a tree run would wait for each other. Most
/// modules are small enough that one `read()` is cheaper than a mapping.
enum Contents {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Contents {
    fn load(mut file: &File, len: u64) -> Result<Contents, Error> {
        use std::io::Read;
        if len <= READ_LIMIT {
            let mut buf = Vec::with_capacity(len as usize);
            file.read_to_end(&mut buf)?;
            return Ok(Contents::Read(buf));
        }
        // SAFETY: the file is locked against other instances of this tool; a
        // concurrent truncation by something else would fault, as it would for
        // sorttable and objtool, which map modules the same way.
        let map = unsafe { memmap2::Mmap::map(file) }.map_err(|e| Error::IoAt { what: "cannot map", source: e })?;
        Ok(Contents::Mapped(map))
    }
}

impl std::ops::Deref for Contents {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Contents::Read(v) => v,
            Contents::Mapped(m) => m,
        }
    }
}

/// Files up to this size are read; larger ones are mapped.
const READ_LIMIT: u64 = 1 << 20;

/// Process one module file according to `opts`, writing to `output` if
/// given, else in place.
pub fn process_file(path: &Path, output: Option<&Path>, opts: &Options) -> Result<Analysis, Error> {
    let meta = fs::metadata(path)?;
    if meta.is_dir() {
        return Err(Error::Directory);
    }
    if !meta.is_file() {
        return Err(Error::NotRegular);
    }
    if meta.len() == 0 {
        return Err(Error::Empty);
    }
    let file = lock_current(path, opts.check)?;
    let map = Contents::load(&file, meta.len())?;
    if let Some(format) = Format::detect(&map) {
        return compressed(path, output, opts, &file, &map, format);
    }
    let analysis = analyze(&map, opts)?;
    if opts.check || analysis.plan.is_empty() {
        copy_unchanged(output, opts, &map)?;
        return Ok(analysis);
    }
    if let Some(out) = output {
        write_output(out, &analysis.plan.apply_to(&map))?;
    } else if opts.atomic {
        replace_atomically(path, &analysis.plan.apply_to(&map), &file, opts.keep_mtime)?;
    } else {
        drop(map);
        let rw = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::IoAt { what: "cannot open for writing (file left unchanged)", source: e })?;
        analysis.plan.apply_file(&rw).map_err(|e| Error::IoAt { what: "write failed", source: e })?;
        if opts.keep_mtime {
            let times = fs::FileTimes::new().set_modified(meta.modified()?).set_accessed(meta.accessed()?);
            rw.set_times(times)?;
        }
    }
    Ok(analysis)
}

/// A compressed module: its payload goes through the same analysis and
/// signature policy, and the result is written whole, atomically.
fn compressed(
    path: &Path,
    output: Option<&Path>,
    opts: &Options,
    file: &File,
    data: &[u8],
    format: Format,
) -> Result<Analysis, Error> {
    match opts.compressed {
        CompressedPolicy::Error => return Err(Error::Compressed(format.name())),
        // --check reads the payload in memory whatever the policy: an audit
        // of an installed tree, where every module is compressed, must say
        // which would change. Nothing is written either way.
        CompressedPolicy::Leave if !opts.check => {
            let why = format!("{}-compressed module left unchanged: {COMPRESSED_ADVICE}", format.name());
            // The one warning that does not come from `analyze`, which
            // is where --fatal-warnings is applied otherwise.
            if opts.fatal_warnings {
                return Err(Error::FatalWarning(why));
            }
            copy_unchanged(output, opts, data)?;
            return Ok(Analysis::skipped(LeftAlone::Compressed, why.clone(), vec![why]));
        }
        CompressedPolicy::Leave | CompressedPolicy::Recompress => {}
    }
    let payload = compress::decompress(format, data)?;
    let analysis = analyze(&payload, opts)?;
    if opts.check || analysis.plan.is_empty() {
        copy_unchanged(output, opts, data)?;
        return Ok(analysis);
    }
    let packed = compress::compress_verified(format, &analysis.plan.apply_to(&payload))?;
    if let Some(out) = output {
        write_output(out, &packed)?;
        return Ok(analysis);
    }
    replace_atomically(path, &packed, file, opts.keep_mtime)?;
    Ok(analysis)
}

/// Open and lock `path`, making sure the lock is on the file that is there
/// now: a concurrent `--atomic` run may have renamed a new file into place
/// while we waited.
fn lock_current(path: &Path, shared: bool) -> Result<File, Error> {
    loop {
        let file = File::open(path)?;
        flock(&file, shared)?;
        let now = fs::metadata(path)?;
        let held = file.metadata()?;
        if now.ino() == held.ino() && now.dev() == held.dev() {
            return Ok(file);
        }
    }
}

/// Wait for flock(2) on `file`, as `File::lock`/`lock_shared` do from Rust
/// 1.89 on; the lock goes with the descriptor, so dropping `file` frees it.
fn flock(file: &File, shared: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let op = if shared { libc::LOCK_SH } else { libc::LOCK_EX };
    loop {
        // SAFETY: flock takes a descriptor and a flag, and `file` keeps the
        // descriptor open for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        // SIGINT or SIGTERM while another run holds the lock: give up
        // rather than wait on (the file is untouched).
        if err.kind() != std::io::ErrorKind::Interrupted || crate::stop::requested().is_some() {
            return Err(err);
        }
    }
}

/// Write `bytes` beside `path`, fsync, and rename over it: a kill at any
/// moment leaves the old or the new file. The caller holds the lock, and
/// only a lock holder writes a temporary file for this path, so any other
/// `.NAME.zwm-*.tmp` is what a killed run left behind: remove it.
fn replace_atomically(path: &Path, bytes: &[u8], like: &File, keep_mtime: bool) -> Result<(), Error> {
    let links = like.metadata()?.nlink();
    if links > 1 {
        return Err(Error::HardLinks(links));
    }
    // Through a symlink, the file it points to is replaced, not the link.
    // And only a file we may write, as in place: a writable directory must
    // not let us replace a read-only file.
    let dest = fs::canonicalize(path)?;
    OpenOptions::new()
        .write(true)
        .open(&dest)
        .map_err(|e| Error::IoAt { what: "cannot open for writing (file left unchanged)", source: e })?;
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stale = format!(".{name}.zwm-");
    if let Some(dir) = dest.parent().and_then(|d| fs::read_dir(d).ok()) {
        for entry in dir.flatten() {
            let n = entry.file_name();
            let n = n.to_string_lossy();
            if n.starts_with(&stale) && n.ends_with(".tmp") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    // Created exclusively (O_EXCL, which follows no symlink): whatever
    // appears at the name after the clean-up above, planted or left by a
    // writer that does not take the lock, is never opened, only avoided.
    let pid = std::process::id();
    let mut attempt = 0u32;
    let (tmp, out) = loop {
        let tmp = dest.with_file_name(format!("{stale}{pid}-{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(out) => break (tmp, out),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(Error::IoAt { what: "cannot create output", source: e }),
        }
    };
    let result = write_new(out, bytes, like, keep_mtime).and_then(|()| {
        fs::rename(&tmp, &dest).map_err(|e| Error::IoAt { what: "cannot rename into place", source: e })
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `-o` gets the result even when that is the input unchanged. Copied out
/// first: `-o` may name the input, and truncating it would pull the mapped
/// bytes away (SIGBUS).
fn copy_unchanged(output: Option<&Path>, opts: &Options, data: &[u8]) -> Result<(), Error> {
    match output {
        Some(out) if !opts.check => write_output(out, data),
        _ => Ok(()),
    }
}

/// Write `-o` output like `cp` would: a new file gets default permissions,
/// and a device or pipe (`-o /dev/stdout`) is written to, never chmod-ed.
/// `-o -` is standard output, as for most tools that take an output file.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let at = |what| move |e| Error::Output { what, path: path.to_path_buf(), source: e };
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush()).map_err(|e| {
            // A reader that went away (`| head -c`) ends the run quietly.
            crate::stop::on_write_error(&e);
            Error::Output { what: "cannot write", path: "standard output".into(), source: e }
        })?;
        return Ok(());
    }
    let mut out =
        OpenOptions::new().write(true).create(true).truncate(true).open(path).map_err(at("cannot create output"))?;
    out.write_all(bytes).map_err(at("cannot write output"))?;
    if out.metadata()?.is_file() {
        out.sync_all().map_err(at("cannot fsync output"))?;
    }
    Ok(())
}

/// Fill the new file `out` with `bytes`, the mode, owner and (if asked)
/// times of `like`, and fsync it.
fn write_new(mut out: File, bytes: &[u8], like: &File, keep_mtime: bool) -> Result<(), Error> {
    let meta = like.metadata()?;
    let io = |what| move |e| Error::IoAt { what, source: e };
    out.write_all(bytes).map_err(io("write failed"))?;
    out.set_permissions(meta.permissions()).map_err(io("cannot set mode"))?;
    if let Err(e) = std::os::unix::fs::fchown(&out, Some(meta.uid()), Some(meta.gid())) {
        // Only root may give files away; keeping our own ownership is fine then.
        if e.kind() != std::io::ErrorKind::PermissionDenied {
            return Err(Error::IoAt { what: "cannot set owner", source: e });
        }
    }
    if keep_mtime {
        let times = fs::FileTimes::new().set_modified(meta.modified()?).set_accessed(meta.accessed()?);
        out.set_times(times).map_err(io("cannot set times"))?;
    }
    out.sync_all().map_err(io("fsync failed"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Something the clean-up cannot remove (a directory) sits at the
    /// temporary name this process would use first: the write goes to
    /// another name instead of failing or opening it.
    #[test]
    fn a_taken_temporary_name_is_avoided() {
        let dir = std::env::temp_dir().join(format!("zwm-file-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.ko");
        fs::write(&path, b"old").unwrap();
        let taken = dir.join(format!(".m.ko.zwm-{}-0.tmp", std::process::id()));
        fs::create_dir(&taken).unwrap();
        let like = File::open(&path).unwrap();
        replace_atomically(&path, b"new", &like, false).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert!(taken.is_dir(), "the planted entry was opened or replaced");
        fs::remove_dir_all(&dir).unwrap();
    }
}

//! One module, start to end: read, decide, plan, then (and only then) write.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::arch::{self, Overrides, Rule, Scope};
use crate::compress::{self, Format};
use crate::decide::{self, Layout, SymbolIndex, Verdict};
use crate::elf::{self, ElfInfo, Entry, Extraction, Target};
use crate::error::Error;
use crate::kconfig::Kconfig;
use crate::mark::{self, Proof};
use crate::plan::Plan;
use crate::signature;

/// What to do with a signed module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SignedPolicy {
    /// Fail: the module must be processed before it is signed.
    #[default]
    Refuse,
    /// Leave it unchanged, with a warning.
    Skip,
    /// Drop the signature and process it; it must be re-signed.
    Strip,
}

/// What to do with a compressed module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressedPolicy {
    /// Leave it unchanged, with a warning.
    #[default]
    Skip,
    /// Fail.
    Error,
    /// Decompress, process, and compress again with the kernel's settings.
    Recompress,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub compressed: CompressedPolicy,
    pub check: bool,
    pub verbose: bool,
    pub kconfig: Option<Kconfig>,
    pub overrides: Overrides,
    pub signed: SignedPolicy,
    pub fatal_warnings: bool,
    /// Write a sibling temporary file, fsync it and rename it into place.
    pub atomic: bool,
    /// Keep the file's modification time (tree mode, for packagers).
    pub keep_mtime: bool,
}

/// How a file ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Written (or, under `--check`, would be): entries zeroed, the
    /// `mcount=` tag flipped, a signature dropped.
    Changed { zeroed: usize, total: usize, stripped: bool, marked: bool },
    /// Nothing to write.
    Unchanged,
    /// Left alone on purpose, for this reason.
    Skipped(Skip, String),
}

/// Why a module was left alone, for the tree summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// Signed, with `--signed=skip`.
    Signed,
    /// Compressed, with `--compressed=skip`.
    Compressed,
    /// The kernel does not check this module's callsites (architecture,
    /// kernel release or config), or we cannot tell whether it does.
    NotChecked,
}

impl Skip {
    pub fn name(self) -> &'static str {
        match self {
            Skip::Signed => "signed",
            Skip::Compressed => "compressed",
            Skip::NotChecked => "not checked by the kernel",
        }
    }
}

/// The result of looking at one module: what to write, and what to say.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub plan: Plan,
    pub outcome: Outcome,
    /// `--verbose` lines, without the program and file prefix.
    pub details: Vec<String>,
    pub warnings: Vec<String>,
    /// Things the user must act on that are not warnings, such as re-signing.
    pub notes: Vec<String>,
    /// One line on what happened, for `--verbose`.
    pub summary: String,
}

/// Decide what to do with a module's bytes. Pure: no I/O.
pub fn analyze(data: &[u8], opts: &Options) -> Result<Analysis, Error> {
    let analysis = analyze_module(data, opts)?;
    if opts.fatal_warnings
        && let Some(w) = analysis.warnings.first()
    {
        return Err(Error::FatalWarning(w.clone()));
    }
    Ok(analysis)
}

fn analyze_module(data: &[u8], opts: &Options) -> Result<Analysis, Error> {
    if data.is_empty() {
        return Err(Error::Empty);
    }
    if let Some(format) = Format::detect(data) {
        return Err(Error::Compressed(format.name()));
    }
    let mut warnings = Vec::new();
    let mut image = data;
    let mut truncate = None;
    if let Some(len) = signature::image_len(data)? {
        match opts.signed {
            // --check writes nothing, so it can say whether the image
            // under the signature still needs the tool: the question a
            // packager asks of an already signed tree.
            SignedPolicy::Refuse | SignedPolicy::Skip if opts.check => image = &data[..len],
            SignedPolicy::Refuse => return Err(Error::Signed),
            SignedPolicy::Skip => {
                let why = "module is signed; left unchanged (--signed=skip): process modules before signing";
                warnings.push(why.to_string());
                return Ok(Analysis::skipped(Skip::Signed, why.to_string(), warnings));
            }
            SignedPolicy::Strip => {
                image = &data[..len];
                truncate = Some(len as u64);
            }
        }
    }

    let info = elf::parse_info(image)?;
    let (mut analysis, proof) = match arch::rule_for(&info, opts.kconfig.as_ref(), &opts.overrides)? {
        Scope::Unchecked(why) => {
            (Analysis::skipped(Skip::NotChecked, why.to_string(), warnings), Proof::CannotJudge(why.to_string()))
        }
        Scope::Act(rule) => decide_module(image, &info, &rule, opts, warnings)?,
    };
    update_tag(image, &info, &proof, &mut analysis)?;
    if let Some(len) = truncate {
        analysis.plan.truncate = Some(len);
        analysis.notes.push("signature dropped: sign the module again".into());
        analysis.outcome = match analysis.outcome {
            Outcome::Changed { zeroed, total, marked, .. } => {
                Outcome::Changed { zeroed, total, stripped: true, marked }
            }
            _ => Outcome::Changed { zeroed: 0, total: 0, stripped: true, marked: false },
        };
    }
    Ok(analysis)
}

/// Flip the `mcount=` tag when this run proves the module clean, and back
/// when it finds a doubt in a module marked clean.
fn update_tag(image: &[u8], info: &ElfInfo, proof: &Proof, analysis: &mut Analysis) -> Result<(), Error> {
    let step = mark::step(&mark::find(image, info), proof)?;
    analysis.details.extend(step.detail);
    analysis.warnings.extend(step.warning);
    let Some(write) = step.write else {
        return Ok(());
    };
    analysis.plan.add(write, image.len() as u64)?;
    let _ = write!(analysis.summary, "; {}", step.change.unwrap_or("mcount= tag rewritten"));
    analysis.outcome = match analysis.outcome {
        Outcome::Changed { zeroed, total, stripped, .. } => Outcome::Changed { zeroed, total, stripped, marked: true },
        _ => Outcome::Changed { zeroed: 0, total: 0, stripped: false, marked: true },
    };
    Ok(())
}

/// What a run with this rule can say about the tag. Only a rule read from
/// the module's own configuration can prove anything: without it, x86
/// assumes IBT (max 4), and a module built without IBT may still hold
/// entries 1-4 bytes after a symbol that its kernel rejects.
fn proof(opts: &Options, doubts: usize) -> Proof {
    if doubts > 0 {
        Proof::Doubt(format!("{doubts} {} kept for doubt", if doubts == 1 { "entry was" } else { "entries were" }))
    } else if opts.kconfig.is_none() {
        Proof::CannotJudge("no --kconfig: the rule is assumed, not known".into())
    } else if opts.overrides.max_offset.is_some() {
        Proof::CannotJudge("--max-offset overrides the configuration".into())
    } else {
        Proof::Proven
    }
}

impl Analysis {
    pub fn skipped(kind: Skip, reason: String, warnings: Vec<String>) -> Analysis {
        Analysis { outcome: Outcome::Skipped(kind, reason.clone()), ..Analysis::unchanged(reason, warnings) }
    }

    fn unchanged(reason: String, warnings: Vec<String>) -> Analysis {
        Analysis {
            plan: Plan::default(),
            summary: format!("nothing to do: {reason}"),
            outcome: Outcome::Unchanged,
            details: Vec::new(),
            warnings,
            notes: Vec::new(),
        }
    }
}

fn decide_module(
    image: &[u8],
    info: &ElfInfo,
    rule: &Rule,
    opts: &Options,
    mut warnings: Vec<String>,
) -> Result<(Analysis, Proof), Error> {
    let verbose = opts.verbose;
    // No table, or one the loader relocates nothing in: the kernel builds
    // no record, so there is nothing it could reject.
    let Some(callsite) = info.alloc_section(rule.section) else {
        return Ok((Analysis::unchanged(format!("no {} section", rule.section), warnings), proof(opts, 0)));
    };
    let extracted = match elf::extract(image, info, callsite, rule.shape)? {
        Extraction::Table(x) => x,
        Extraction::NoRelocations(why) => {
            // Without relocations the loader leaves the words as they are;
            // only all-zero words are sure to give no record.
            let zero = info.sections[callsite].bytes(image).iter().all(|&byte| byte == 0);
            let proof = if zero { proof(opts, 0) } else { Proof::Doubt(format!("{why}, but its words are not zero")) };
            return Ok((Analysis::unchanged(why, warnings), proof));
        }
        Extraction::Unsupported(why) => {
            warnings.push(why.clone());
            return Ok((Analysis::skipped(Skip::NotChecked, why.clone(), warnings), Proof::Doubt(why)));
        }
    };
    let entries = &extracted.callsite.entries;
    let stripped = extracted.stripped_locals();
    let symbols = SymbolIndex::new(extracted.symbols, extracted.strings);
    let layout = Layout::new(&info.sections, &symbols, |name| rule.region(name));

    let mut details = Vec::new();
    let decisions = decide::all(image, info, rule, entries, &symbols, &layout, |_, entry, verdict| {
        if verbose && *verdict != Verdict::Valid {
            details.push(describe(info, rule, entry, verdict));
        }
    });
    let (zero, doubts) = (decisions.zero, decisions.doubt.len());
    // Static functions without symbols look exactly like weak bodies to the
    // kernel. Only say so when it costs something: entries are zeroed.
    if stripped && !zero.is_empty() {
        warnings.push(
            "the symbol table has no local function symbols (stripped with --strip-unneeded?): the kernel \
             cannot name or trace this module's static functions, and their entries are zeroed as it rejects them"
                .into(),
        );
    }
    let plan = Plan::new(image, info, &extracted.callsite, &zero)?;
    let what = format!("{}, {}, max offset {} ({})", rule.arch, rule.section, rule.max_offset, rule.basis);
    let mut summary = if zero.is_empty() {
        format!("nothing to zero in {} entries [{what}]", entries.len())
    } else {
        format!("zeroed {} of {} entries [{what}]", zero.len(), entries.len())
    };
    if doubts > 0 {
        let _ = write!(summary, ", {doubts} kept for doubt");
    }
    let outcome = if zero.is_empty() {
        Outcome::Unchanged
    } else {
        Outcome::Changed { zeroed: zero.len(), total: entries.len(), stripped: false, marked: false }
    };
    Ok((Analysis { plan, outcome, details, warnings, notes: Vec::new(), summary }, proof(opts, doubts)))
}

fn describe(info: &ElfInfo, rule: &Rule, entry: &Entry, verdict: &Verdict<'_>) -> String {
    let location = match &entry.target {
        &Target::At { section, offset } => format!("{}+{offset:#x}", info.sections[section as usize].name),
        Target::Odd(_) => format!("{}+{:#x}", rule.section, entry.word_offset),
    };
    match verdict {
        Verdict::Zero { nearest: Some(name), distance } => {
            format!("zero {location} (distance {distance} after {})", String::from_utf8_lossy(name))
        }
        Verdict::Zero { nearest: None, distance } => {
            format!("zero {location} (distance {distance}, no symbol before it)")
        }
        Verdict::Doubt(why) => format!("keep {location}: {why}"),
        Verdict::Valid => format!("valid {location}"),
    }
}

/// What happened to a file, for the caller to print.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub path: PathBuf,
    pub analysis: Analysis,
}

/// A module's bytes: read into memory when small, mapped when large.
///
/// Mapping touches only the pages the tool needs, which matters for
/// amdgpu.ko; but every mmap and munmap takes the address space's lock, and
/// with -j2 over Debian's 4,216 modules the two threads spent their time
/// waiting on it (two threads: 0.21 s, two processes: 0.13 s). Most modules
/// are small enough that one read() is cheaper than a mapping.
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
pub fn process_file(path: &Path, output: Option<&Path>, opts: &Options) -> Result<FileReport, Error> {
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
        return Ok(FileReport { path: path.to_path_buf(), analysis });
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
    Ok(FileReport { path: path.to_path_buf(), analysis })
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
) -> Result<FileReport, Error> {
    let report = |analysis| Ok(FileReport { path: path.to_path_buf(), analysis });
    match opts.compressed {
        CompressedPolicy::Error => return Err(Error::Compressed(format.name())),
        CompressedPolicy::Skip => {
            let why =
                format!("{}-compressed module left unchanged (--compressed=recompress processes it)", format.name());
            copy_unchanged(output, opts, data)?;
            return report(Analysis::skipped(Skip::Compressed, why.clone(), vec![why]));
        }
        CompressedPolicy::Recompress => {}
    }
    let payload = compress::decompress(format, data)?;
    let analysis = analyze(&payload, opts)?;
    if opts.check || analysis.plan.is_empty() {
        copy_unchanged(output, opts, data)?;
        return report(analysis);
    }
    let packed = compress::compress_checked(format, &analysis.plan.apply_to(&payload))?;
    if let Some(out) = output {
        write_output(out, &packed)?;
        return report(analysis);
    }
    replace_atomically(path, &packed, file, opts.keep_mtime)?;
    report(analysis)
}

/// Open and lock `path`, making sure the lock is on the file that is there
/// now: a concurrent `--atomic` run may have renamed a new file into place
/// while we waited.
fn lock_current(path: &Path, shared: bool) -> Result<File, Error> {
    loop {
        let file = File::open(path)?;
        if shared {
            file.lock_shared()?;
        } else {
            file.lock()?;
        }
        let now = fs::metadata(path)?;
        let held = file.metadata()?;
        if now.ino() == held.ino() && now.dev() == held.dev() {
            return Ok(file);
        }
    }
}

/// The file a rename into place must replace: through a symlink, the file
/// it points to, not the link. And only a file we may write, as in place:
/// a writable directory must not let us replace a read-only file.
fn replace_target(path: &Path) -> Result<PathBuf, Error> {
    let dest = fs::canonicalize(path)?;
    OpenOptions::new()
        .write(true)
        .open(&dest)
        .map_err(|e| Error::IoAt { what: "cannot open for writing (file left unchanged)", source: e })?;
    Ok(dest)
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
    let dest = replace_target(path)?;
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
    let tmp = dest.with_file_name(format!("{stale}{}.tmp", std::process::id()));
    let result = write_new(&tmp, bytes, like, keep_mtime).and_then(|()| {
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
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::IoAt { what: "cannot create output", source: e })?;
    out.write_all(bytes).map_err(|e| Error::IoAt { what: "write failed", source: e })?;
    if out.metadata()?.is_file() {
        out.sync_all().map_err(|e| Error::IoAt { what: "fsync failed", source: e })?;
    }
    Ok(())
}

/// Write `bytes` to a new file at `path` with the mode, owner and (if asked)
/// times of `like`, and fsync it.
fn write_new(path: &Path, bytes: &[u8], like: &File, keep_mtime: bool) -> Result<(), Error> {
    let meta = like.metadata()?;
    let io = |what| move |e| Error::IoAt { what, source: e };
    let mut out =
        OpenOptions::new().write(true).create(true).truncate(true).open(path).map_err(io("cannot create output"))?;
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

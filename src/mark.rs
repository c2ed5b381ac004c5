//! The `mcount=` modinfo tag: the kernel's per-module proof that this tool
//! ran on this exact file and left no doubt.
//!
//! A kernel with the series in `kernel/` (`CONFIG_FTRACE_MCOUNT_ZEROED_MODULES`)
//! gives every module `mcount=unchecked`, and skips its per-record kallsyms
//! check only for modules that say `mcount=zeroed`. Skipping it for a module
//! that still has a stale entry makes the kernel WARN, so the tag is flipped
//! only when every entry was decided with the configuration the module was
//! built for. The value is rewritten in place and padded with NULs: the
//! kernel's `module_next_tag_pair()` and kmod's modinfo reader skip NUL
//! runs, and no offset or size in the file moves.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use crate::elf::ElfInfo;
use crate::error::Error;
use crate::plan::Write;

const KEY: &[u8] = b"mcount=";
pub const UNCHECKED: &[u8] = b"unchecked";
pub const ZEROED: &[u8] = b"zeroed";

/// The tag as found in `.modinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// No tag: built without the series. Nothing to mark.
    Absent,
    /// `at`: file offset of the value.
    Unchecked { at: u64 },
    /// `room`: how many bytes from `at` may hold a value, keeping one NUL
    /// as its terminator (the padding a previous flip left).
    Zeroed { at: u64, room: u64 },
    /// Not ours to touch: an unknown value, or several tags.
    Unknown(String),
}

/// The first `mcount=` tag, read the way the kernel's `get_modinfo()` reads
/// `.modinfo`: NUL-terminated strings, runs of NULs skipped.
#[must_use]
pub fn find(image: &[u8], info: &ElfInfo) -> Tag {
    let Some(modinfo) = info.sections.iter().find(|s| s.name == ".modinfo") else {
        return Tag::Absent;
    };
    let (start, bytes) = (modinfo.offset, modinfo.bytes(image));
    let tags: Vec<(usize, usize)> = crate::elf::modinfo_strings(bytes)
        .filter(|(_, s)| s.starts_with(KEY))
        .map(|(pos, s)| (pos + KEY.len(), pos + s.len()))
        .collect();
    match tags.as_slice() {
        [] => Tag::Absent,
        &[(value, stop)] => {
            let at = start + value as u64;
            match &bytes[value..stop] {
                UNCHECKED => Tag::Unchecked { at },
                ZEROED => {
                    let nuls = bytes[stop..].iter().take_while(|&&b| b == 0).count() as u64;
                    Tag::Zeroed { at, room: ZEROED.len() as u64 + nuls - 1 }
                }
                other => Tag::Unknown(format!("mcount={}", String::from_utf8_lossy(other))),
            }
        }
        several => Tag::Unknown(format!("{} mcount= tags", several.len())),
    }
}

/// Whether this run can vouch that the module holds no entry the kernel
/// would reject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// Every entry was decided, with the module's own configuration.
    Proven,
    /// This run cannot tell (no configuration, or a module the kernel does
    /// not check): an earlier run's mark stands, and none is added.
    CannotJudge(String),
    /// Some entry was kept for doubt: the kernel must check this module.
    Doubt(String),
}

/// What the tag step writes and says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    pub write: Option<Write>,
    /// For the summary line: `mcount=unchecked -> zeroed` or back.
    pub change: Option<&'static str>,
    pub detail: Option<String>,
    pub warning: Option<String>,
}

/// Decide the tag's new value. Pure: the caller adds the write to the plan.
pub fn step(tag: &Tag, proof: &Proof) -> Result<Step, Error> {
    let padded = |value: &[u8], width: usize| {
        let mut bytes = value.to_vec();
        bytes.resize(width, 0);
        bytes
    };
    Ok(match (tag, proof) {
        (Tag::Absent, _) | (Tag::Zeroed { .. }, Proof::Proven) => Step::default(),
        (Tag::Unchecked { at }, Proof::Proven) => Step {
            write: Some(Write { offset: *at, bytes: padded(ZEROED, UNCHECKED.len()) }),
            change: Some("mcount=unchecked -> zeroed"),
            detail: Some("mark mcount=zeroed: no entry the kernel would reject is left".into()),
            warning: None,
        },
        (Tag::Unchecked { .. }, Proof::CannotJudge(why) | Proof::Doubt(why)) => {
            Step { detail: Some(format!("leave mcount=unchecked: {why}")), ..Step::default() }
        }
        (Tag::Zeroed { .. }, Proof::CannotJudge(why)) => Step {
            detail: Some(format!("keep mcount=zeroed from an earlier run: this run cannot judge it ({why})")),
            ..Step::default()
        },
        (Tag::Zeroed { at, room }, Proof::Doubt(why)) => {
            if *room < UNCHECKED.len() as u64 {
                return Err(Error::Malformed(format!(
                    ".modinfo says mcount=zeroed, but {why}, and there is no room to restore mcount=unchecked"
                )));
            }
            Step {
                write: Some(Write { offset: *at, bytes: UNCHECKED.to_vec() }),
                change: Some("mcount=zeroed -> unchecked"),
                detail: None,
                warning: Some(format!(
                    "module was marked mcount=zeroed, but {why}: restored mcount=unchecked so that the kernel checks it"
                )),
            }
        }
        (Tag::Unknown(what), _) => {
            Step { warning: Some(format!(".modinfo has {what}; left alone")), ..Step::default() }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doubt() -> Proof {
        Proof::Doubt("1 entry kept for doubt".into())
    }

    #[test]
    fn only_a_proven_run_marks_and_only_doubt_unmarks() {
        let unchecked = Tag::Unchecked { at: 100 };
        let marked = step(&unchecked, &Proof::Proven).unwrap();
        assert_eq!(marked.write, Some(Write { offset: 100, bytes: b"zeroed\0\0\0".to_vec() }));
        assert_eq!(step(&unchecked, &doubt()).unwrap().write, None);
        assert_eq!(step(&unchecked, &Proof::CannotJudge("no --kconfig".into())).unwrap().write, None);

        let zeroed = Tag::Zeroed { at: 100, room: 9 };
        assert_eq!(step(&zeroed, &Proof::Proven).unwrap(), Step::default());
        assert_eq!(step(&zeroed, &Proof::CannotJudge("no --kconfig".into())).unwrap().write, None);
        let restored = step(&zeroed, &doubt()).unwrap();
        assert_eq!(restored.write, Some(Write { offset: 100, bytes: b"unchecked".to_vec() }));
        assert!(restored.warning.is_some());
        assert!(step(&Tag::Zeroed { at: 100, room: 8 }, &doubt()).is_err());
        assert_eq!(step(&Tag::Unknown("mcount=x".into()), &Proof::Proven).unwrap().write, None);
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! The `mcount=` modinfo tag: the kernel's per-module proof that this tool
//! ran on this exact file and left no doubt.
//!
//! A kernel with the series in `kernel/` (`CONFIG_BUILDTIME_MCOUNT_ZERO`)
//! gives every module `mcount=unchecked:--------:--------` ([`PLACEHOLDER`],
//! whose dashes reserve the room). Once every entry is decided with the
//! configuration the module was built for, the value becomes
//! `zeroed:<callsites>:<symbols>`, two counts in eight hex digits (the
//! entries of the callsite table and of `.symtab`), padded with NULs.
//! The kernel (`find_module_sections()`) trusts the tag only while both
//! counts match the file, so stripping symbols or linking more objects in
//! after this tool ran makes it an untagged module again, which the kernel
//! handles at load time. The value is rewritten in place: the kernel's
//! `module_next_tag_pair()` and kmod's modinfo reader skip NUL runs, and
//! no offset or size in the file moves.
//!
//! The first version of the series had a 9-byte slot and a bare `zeroed`,
//! which the current kernel ignores. Such tags are read, restored to
//! `unchecked` on doubt, and otherwise left alone: the slot has no room for
//! the counts.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use crate::elf::ElfInfo;
use crate::error::Error;
use crate::plan::Write;

const KEY: &[u8] = b"mcount=";
pub const UNCHECKED: &[u8] = b"unchecked";
pub const ZEROED: &[u8] = b"zeroed";
/// The value `scripts/module-common.c` gives every module. The kernel's
/// `MODULE_INFO()` refuses embedded NULs, so visible dashes reserve the
/// room for the counts.
pub const PLACEHOLDER: &[u8] = b"unchecked:--------:--------";
/// The width of `zeroed:%08x:%08x`.
pub const WIDTH: u64 = 24;

/// The two counts the kernel compares: `num_ftrace_callsites` and the
/// entries of the one `SHT_SYMTAB` section, null symbol included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub callsites: u64,
    pub symbols: u64,
}

impl Counts {
    /// What the loader counts in this file when its callsite section is
    /// `section` (`FTRACE_CALLSITE_SECTION`; none in the file counts 0).
    #[must_use]
    pub fn of(info: &ElfInfo, section: &str) -> Counts {
        let callsites = info.alloc_section(section).map_or(0, |i| info.sections[i].size / info.word_size());
        let sym_size = if info.is_64 { 24 } else { 16 };
        let symbols =
            info.sections.iter().find(|s| s.sh_type == object::elf::SHT_SYMTAB).map_or(0, |s| s.size / sym_size);
        Counts { callsites, symbols }
    }

    /// The tag value the kernel accepts for these counts.
    #[must_use]
    pub fn value(self) -> String {
        format!("zeroed:{:08x}:{:08x}", self.callsites, self.symbols)
    }

    fn parse(value: &[u8]) -> Option<Counts> {
        let rest = value.strip_prefix(b"zeroed:")?;
        let (callsites, symbols) = (rest.get(..8)?, rest.get(8..)?.strip_prefix(b":")?);
        let hex = |b: &[u8]| {
            let text = std::str::from_utf8(b)
                .ok()
                .filter(|t| t.len() == 8 && t.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))?;
            u64::from_str_radix(text, 16).ok()
        };
        Some(Counts { callsites: hex(callsites)?, symbols: hex(symbols)? })
    }
}

/// The tag as found in `.modinfo`. `at` is the file offset of the value,
/// `room` how many bytes from `at` may hold a value, keeping one NUL as its
/// terminator (the placeholder's padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// No tag: built without the series. Nothing to mark.
    Absent,
    Unchecked {
        at: u64,
        room: u64,
    },
    /// `zeroed:<callsites>:<symbols>`, as written for the counts it holds.
    Zeroed {
        at: u64,
        room: u64,
        counts: Counts,
    },
    /// A bare `zeroed` from the first series, which had no counts.
    ZeroedUnbound {
        at: u64,
        room: u64,
    },
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
            let nuls = bytes[stop..].iter().take_while(|&&b| b == 0).count() as u64;
            let room = (stop - value) as u64 + nuls.saturating_sub(1);
            match &bytes[value..stop] {
                UNCHECKED | PLACEHOLDER => Tag::Unchecked { at, room },
                ZEROED => Tag::ZeroedUnbound { at, room },
                other => match Counts::parse(other) {
                    Some(counts) => Tag::Zeroed { at, room, counts },
                    None => Tag::Unknown(format!("mcount={}", String::from_utf8_lossy(other))),
                },
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
    /// For the summary line: `mcount=unchecked -> zeroed:...` or back.
    pub change: Option<String>,
    pub detail: Option<String>,
    pub warning: Option<String>,
}

/// `value`, NUL padded to `width` bytes (a tag's room: a few bytes).
fn padded(value: &[u8], width: u64) -> Vec<u8> {
    let mut bytes = value.to_vec();
    bytes.resize(usize::try_from(width).expect("a tag slot is a few bytes"), 0);
    bytes
}

/// Decide the tag's new value for a file with counts `now` (`None` where
/// no rule says which table the kernel reads: then nothing is proven).
/// Pure: the caller adds the write to the plan.
pub fn step(tag: &Tag, proof: &Proof, now: Option<Counts>) -> Result<Step, Error> {
    let (proof, now) = match (proof, now) {
        (Proof::Proven, None) => (&Proof::CannotJudge("no rule, so no callsite count".into()), None),
        (proof, now) => (proof, now),
    };
    let bound = now.map(Counts::value).unwrap_or_default();
    Ok(match (tag, proof) {
        (Tag::Absent, _) => Step::default(),
        (&Tag::Unchecked { at, room }, Proof::Proven) if room >= WIDTH => Step {
            write: Some(Write { offset: at, bytes: padded(bound.as_bytes(), room) }),
            change: Some(format!("mcount=unchecked -> {bound}")),
            detail: Some(format!("mark mcount={bound}: no entry the kernel would reject is left")),
            warning: None,
        },
        (Tag::Unchecked { room, .. }, Proof::Proven) => Step {
            detail: Some(format!(
                "leave mcount=unchecked: its slot holds {room} bytes, the counted tag needs {WIDTH} \
                 (a module built for the first version of the series)"
            )),
            ..Step::default()
        },
        (Tag::Unchecked { .. }, Proof::CannotJudge(why) | Proof::Doubt(why)) => {
            Step { detail: Some(format!("leave mcount=unchecked: {why}")), ..Step::default() }
        }
        (&Tag::Zeroed { counts, .. }, Proof::Proven) if Some(counts) == now => Step::default(),
        (&Tag::Zeroed { at, room, counts }, Proof::Proven) => Step {
            write: Some(Write { offset: at, bytes: padded(bound.as_bytes(), room) }),
            change: Some(format!("mcount={} -> {bound}", counts.value())),
            detail: Some(format!("mark mcount={bound}: the module changed since it was marked")),
            warning: None,
        },
        (&Tag::Zeroed { counts, .. }, Proof::CannotJudge(why)) => Step {
            detail: Some(if now.is_none_or(|n| n == counts) {
                format!("keep mcount={} from an earlier run: this run cannot judge it ({why})", counts.value())
            } else {
                format!(
                    "keep mcount={} from an earlier run: this run cannot judge it ({why}); its counts are not \
                     this module's ({bound}), so the kernel treats the module as untagged",
                    counts.value()
                )
            }),
            ..Step::default()
        },
        (Tag::ZeroedUnbound { .. }, Proof::Proven | Proof::CannotJudge(_)) => Step {
            detail: Some(
                "keep mcount=zeroed of the first series: its slot has no room for the counts, and the current \
                 kernel series ignores it"
                    .into(),
            ),
            ..Step::default()
        },
        (&Tag::Zeroed { at, room, .. } | &Tag::ZeroedUnbound { at, room }, Proof::Doubt(why)) => {
            restore(at, room, why)?
        }
        (Tag::Unknown(what), _) => {
            Step { warning: Some(format!(".modinfo has {what}; left alone")), ..Step::default() }
        }
    })
}

/// Back to the placeholder (or the first series' bare `unchecked` where it
/// does not fit), over the whole old value, when a marked module turns out
/// to hold an entry kept for doubt.
fn restore(at: u64, room: u64, why: &str) -> Result<Step, Error> {
    if room < UNCHECKED.len() as u64 {
        return Err(Error::Malformed(format!(
            ".modinfo says mcount=zeroed, but {why}, and there is no room to restore mcount=unchecked"
        )));
    }
    Ok(Step {
        write: Some(Write {
            offset: at,
            bytes: if room >= PLACEHOLDER.len() as u64 { padded(PLACEHOLDER, room) } else { padded(UNCHECKED, room) },
        }),
        change: Some("mcount=zeroed -> unchecked".into()),
        detail: None,
        warning: Some(format!(
            "module was marked mcount=zeroed, but {why}: restored mcount=unchecked so that the kernel checks it"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Counts = Counts { callsites: 0x61e, symbols: 0xa3c1 };

    fn doubt() -> Proof {
        Proof::Doubt("1 entry kept for doubt".into())
    }

    #[test]
    fn only_a_proven_run_marks_and_only_doubt_unmarks() {
        let unchecked = Tag::Unchecked { at: 100, room: 27 };
        let marked = step(&unchecked, &Proof::Proven, Some(NOW)).unwrap();
        assert_eq!(marked.write, Some(Write { offset: 100, bytes: b"zeroed:0000061e:0000a3c1\0\0\0".to_vec() }));
        assert_eq!(step(&unchecked, &doubt(), Some(NOW)).unwrap().write, None);
        assert_eq!(step(&unchecked, &Proof::CannotJudge("no --kconfig".into()), Some(NOW)).unwrap().write, None);

        let zeroed = Tag::Zeroed { at: 100, room: 27, counts: NOW };
        assert_eq!(step(&zeroed, &Proof::Proven, Some(NOW)).unwrap(), Step::default());
        assert_eq!(step(&zeroed, &Proof::CannotJudge("no --kconfig".into()), Some(NOW)).unwrap().write, None);
        let restored = step(&zeroed, &doubt(), Some(NOW)).unwrap();
        assert_eq!(restored.write, Some(Write { offset: 100, bytes: PLACEHOLDER.to_vec() }));
        assert!(restored.warning.is_some());
        assert_eq!(step(&Tag::Unknown("mcount=x".into()), &Proof::Proven, Some(NOW)).unwrap().write, None);
    }

    #[test]
    fn a_proven_run_rebinds_a_tag_whose_counts_changed() {
        let stale = Tag::Zeroed { at: 100, room: 27, counts: Counts { callsites: 0x61e, symbols: 0xb000 } };
        let s = step(&stale, &Proof::Proven, Some(NOW)).unwrap();
        assert_eq!(s.write, Some(Write { offset: 100, bytes: b"zeroed:0000061e:0000a3c1\0\0\0".to_vec() }));
        let kept = step(&stale, &Proof::CannotJudge("no --kconfig".into()), Some(NOW)).unwrap();
        assert_eq!(kept.write, None);
        assert!(kept.detail.unwrap().contains("the kernel treats the module as untagged"));
    }

    #[test]
    fn the_first_series_slot_is_read_but_never_given_counts() {
        let old = Tag::Unchecked { at: 100, room: 9 };
        assert_eq!(step(&old, &Proof::Proven, Some(NOW)).unwrap().write, None);
        let old_mark = Tag::ZeroedUnbound { at: 100, room: 9 };
        assert_eq!(step(&old_mark, &Proof::Proven, Some(NOW)).unwrap().write, None);
        let restored = step(&old_mark, &doubt(), Some(NOW)).unwrap();
        assert_eq!(restored.write, Some(Write { offset: 100, bytes: b"unchecked".to_vec() }));
        assert!(step(&Tag::ZeroedUnbound { at: 100, room: 8 }, &doubt(), Some(NOW)).is_err());
    }

    #[test]
    fn counts_parse_only_the_exact_form_the_kernel_prints() {
        assert_eq!(Counts::parse(b"zeroed:0000061e:0000a3c1"), Some(NOW));
        assert_eq!(NOW.value(), "zeroed:0000061e:0000a3c1");
        for bad in [
            &b"zeroed:61e:a3c1"[..],
            b"zeroed:0000061E:0000a3c1",
            b"zeroed:0000061e:0000a3c1x",
            b"zeroed:0000061e0000a3c1",
        ] {
            assert_eq!(Counts::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}

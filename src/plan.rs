// SPDX-License-Identifier: GPL-2.0-only
//! The patch plan: every byte we will write, computed and checked in full
//! before the first write.
//!
//! An entry is neutralised by removing its relocation (later relocations
//! shift down, `sh_size` shrinks, the freed tail is zeroed) and zeroing its
//! word, which on REL arches holds the addend. The loader then relocates
//! nothing there and `ftrace_process_locs()` skips the zero. This loads on
//! every arch and survives strip and objcopy; `R_*_NONE` would not (the
//! ppc and i386 loaders reject it). The file keeps its size and every other
//! section; only a dropped signature shortens it.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(
    clippy::cast_possible_truncation,
    reason = "every offset and length was checked against the image, a slice in memory"
)]

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::elf::{Callsite, ElfInfo};
use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Sorted by offset, non-overlapping, all inside the ELF image.
    pub writes: Vec<Write>,
    /// New file length, when a signature is dropped.
    pub truncate: Option<u64>,
}

impl Plan {
    /// Plan the removal of the entries at `zero` (indices into
    /// `callsite.entries`) from a module whose ELF image is `image`.
    ///
    /// # Panics
    ///
    /// Never: the one `expect` is on a list just checked to be non-empty.
    pub fn new(image: &[u8], info: &ElfInfo, callsite: &Callsite, zero: &[usize]) -> Result<Plan, Error> {
        let mut writes = Vec::new();
        if zero.is_empty() {
            return Ok(Plan { writes, truncate: None });
        }
        let cs = &info.sections[callsite.section];
        let rs = &info.sections[callsite.reloc_section];
        let word = info.word_size() as usize;
        let words = cs.bytes(image);
        let entsize = callsite.reloc_entsize as usize;

        for &e in zero {
            let entry = &callsite.entries[e];
            let at = usize::try_from(entry.word_offset)
                .map_err(|_| Error::Internal("an entry offset does not fit in memory".into()))?;
            let bytes =
                words.get(at..at + word).ok_or_else(|| Error::Internal("an entry lies outside its section".into()))?;
            if bytes.iter().any(|&b| b != 0) {
                writes.push(Write { offset: cs.offset + entry.word_offset, bytes: vec![0; word] });
            }
        }

        // Keep the remaining relocations in their order; rewrite only from
        // the first removed one on.
        let mut removed = vec![false; callsite.entries.len()];
        for &e in zero {
            removed[callsite.entries[e].reloc] = true;
        }
        let first = removed.iter().position(|&r| r).expect("zero is not empty");
        let old = rs.bytes(image);
        let mut tail = Vec::with_capacity(old.len() - first * entsize);
        for (i, rel) in old.chunks_exact(entsize).enumerate().skip(first) {
            if !removed[i] {
                tail.extend_from_slice(rel);
            }
        }
        let kept = removed.iter().filter(|&&r| !r).count() as u64;
        tail.resize(old.len() - first * entsize, 0);
        writes.push(Write { offset: rs.offset + (first * entsize) as u64, bytes: tail });

        let new_size = kept * callsite.reloc_entsize;
        let field = info.sh_size_field(callsite.reloc_section);
        writes.push(Write { offset: field, bytes: info.word_bytes(new_size) });

        writes.sort_by_key(|w| w.offset);
        let plan = Plan { writes, truncate: None };
        plan.check(image.len() as u64)?;
        Ok(plan)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.truncate.is_none()
    }

    /// Every write inside the image, none overlapping another.
    pub fn check(&self, image_len: u64) -> Result<(), Error> {
        let mut end = 0;
        for w in &self.writes {
            let stop = w.offset.checked_add(w.bytes.len() as u64);
            if w.offset < end || stop.is_none_or(|s| s > image_len) {
                return Err(Error::Internal(format!(
                    "a planned write at {:#x} overlaps another or leaves the image",
                    w.offset
                )));
            }
            end = stop.unwrap_or(u64::MAX);
        }
        Ok(())
    }

    /// The planned result as a new buffer.
    #[must_use]
    pub fn apply_to(&self, data: &[u8]) -> Vec<u8> {
        let len = self.truncate.map_or(data.len(), |t| t as usize);
        let mut out = data[..len].to_vec();
        for w in &self.writes {
            out[w.offset as usize..w.offset as usize + w.bytes.len()].copy_from_slice(&w.bytes);
        }
        out
    }

    /// Apply the plan to an open file in place.
    pub fn apply_file(&self, file: &File) -> io::Result<()> {
        for w in &self.writes {
            file.write_all_at(&w.bytes, w.offset)?;
        }
        if let Some(len) = self.truncate {
            file.set_len(len)?;
        }
        Ok(())
    }
}

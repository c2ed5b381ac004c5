// SPDX-License-Identifier: GPL-2.0-only
//! The patch plan: every byte we will write, computed and checked in full
//! before the first write.
//!
//! An entry is neutralised in one of two ways ([`Removal`]); both remove its
//! relocation (later relocations shift down, `sh_size` shrinks, the freed
//! tail is zeroed), never rewrite it to `R_*_NONE`, which the riscv loader
//! rejects (and the ppc and i386 ones), and which strip and objcopy keep:
//! - zero: the word is zeroed too (on REL arches it held the addend). The
//!   loader relocates nothing there and `ftrace_process_locs()` skips it.
//!   The table keeps its size.
//! - drop: the word goes, and every later word moves down one, with its
//!   relocation's offset (on REL arches the addend is the word, and moves
//!   with it) and the table's own symbols (arm64's `$d` at each entry).
//!   The freed tail is zeroed and the table's `sh_size` shrinks: the loader
//!   counts callsites by `sh_size` alone and sorts them, so no position
//!   matters.
//!
//! The file keeps its size and every other section; only a dropped
//! signature shortens it.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(
    clippy::cast_possible_truncation,
    reason = "every offset and length was checked against the image, a slice in memory"
)]

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::elf::{Callsite, ElfInfo, TableSymbol};
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

/// How the entries leave the table: see the module documentation.
#[derive(Debug, Clone, Copy)]
pub enum Removal<'a> {
    Zero,
    /// With the symbols defined in the table ([`crate::elf::table_symbols`]).
    Drop(&'a [TableSymbol]),
}

impl Plan {
    /// Plan the removal of the entries at `chosen` (indices into
    /// `callsite.entries`) from a module whose ELF image is `image`.
    pub fn new(
        image: &[u8],
        info: &ElfInfo,
        callsite: &Callsite,
        chosen: &[usize],
        how: Removal<'_>,
    ) -> Result<Plan, Error> {
        if chosen.is_empty() {
            return Ok(Plan::default());
        }
        let mut removed = vec![false; callsite.entries.len()];
        for &e in chosen {
            removed[callsite.entries[e].reloc] = true;
        }
        let mut writes = match how {
            Removal::Zero => {
                let mut writes = zero_words(image, info, callsite, chosen)?;
                writes.extend(relocations(image, info, callsite, &removed, |offset| offset)?);
                writes
            }
            Removal::Drop(symbols) => {
                let dropped = dropped_words(info, callsite, chosen)?;
                let word = info.word_size();
                let moved = |offset: u64| offset - word * dropped.partition_point(|&d| d < offset) as u64;
                let mut writes = drop_words(image, info, callsite, &dropped).to_vec();
                writes.extend(relocations(image, info, callsite, &removed, moved)?);
                for sym in symbols.iter().filter(|s| moved(s.value) != s.value) {
                    writes.push(Write { offset: sym.value_field, bytes: info.word_bytes(moved(sym.value)) });
                }
                writes
            }
        };
        writes.sort_by_key(|w| w.offset);
        let plan = Plan { writes, truncate: None };
        plan.validate(image.len() as u64)?;
        Ok(plan)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.truncate.is_none()
    }

    /// Every write inside the image, none overlapping another.
    pub fn validate(&self, image_len: u64) -> Result<(), Error> {
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

/// The words of the chosen entries, zeroed where they are not zero yet.
fn zero_words(image: &[u8], info: &ElfInfo, callsite: &Callsite, chosen: &[usize]) -> Result<Vec<Write>, Error> {
    let cs = &info.sections[callsite.section];
    let word = info.word_size() as usize;
    let words = cs.bytes(image);
    let mut writes = Vec::new();
    for &e in chosen {
        let at = usize::try_from(callsite.entries[e].word_offset)
            .map_err(|_| Error::Internal("an entry offset does not fit in memory".into()))?;
        let bytes =
            words.get(at..at + word).ok_or_else(|| Error::Internal("an entry lies outside its section".into()))?;
        if bytes.iter().any(|&b| b != 0) {
            writes.push(Write { offset: cs.offset + at as u64, bytes: vec![0; word] });
        }
    }
    Ok(writes)
}

/// The offsets of the words to drop, sorted: each a whole word of the
/// table, none twice (the decision only drops plain, one-relocation words).
fn dropped_words(info: &ElfInfo, callsite: &Callsite, chosen: &[usize]) -> Result<Vec<u64>, Error> {
    let word = info.word_size();
    let size = info.sections[callsite.section].size;
    let mut dropped: Vec<u64> = chosen.iter().map(|&e| callsite.entries[e].word_offset).collect();
    dropped.sort_unstable();
    let whole = dropped.iter().all(|&d| d % word == 0 && d + word <= size);
    if !whole || dropped.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Internal("a word to drop is not one whole word of the table".into()));
    }
    Ok(dropped)
}

/// The table without the dropped words, its freed tail zeroed, and its
/// smaller `sh_size`.
fn drop_words(image: &[u8], info: &ElfInfo, callsite: &Callsite, dropped: &[u64]) -> [Write; 2] {
    let cs = &info.sections[callsite.section];
    let word = info.word_size();
    let words = cs.bytes(image);
    let first = dropped[0];
    let mut tail = Vec::with_capacity(words.len() - first as usize);
    for (i, w) in words[first as usize..].chunks_exact(word as usize).enumerate() {
        if dropped.binary_search(&(first + i as u64 * word)).is_err() {
            tail.extend_from_slice(w);
        }
    }
    tail.resize(words.len() - first as usize, 0);
    let new_size = cs.size - word * dropped.len() as u64;
    [
        Write { offset: cs.offset + first, bytes: tail },
        Write { offset: info.sh_size_field(callsite.section), bytes: info.word_bytes(new_size) },
    ]
}

/// The relocation section without the `removed` relocations, the others in
/// their order with their offsets `moved`, rewritten only from the first
/// that changes; the freed tail zeroed, and its smaller `sh_size`.
fn relocations(
    image: &[u8],
    info: &ElfInfo,
    callsite: &Callsite,
    removed: &[bool],
    moved: impl Fn(u64) -> u64,
) -> Result<Vec<Write>, Error> {
    let rs = &info.sections[callsite.reloc_section];
    let entsize = callsite.reloc_entsize as usize;
    let word = info.word_size() as usize;
    let old = rs.bytes(image);
    let changes = |e: &crate::elf::Entry| removed[e.reloc] || moved(e.word_offset) != e.word_offset;
    let Some(first) = callsite.entries.iter().position(changes) else {
        return Err(Error::Internal("no relocation to remove".into()));
    };
    let mut tail = Vec::with_capacity(old.len() - first * entsize);
    for (entry, rel) in callsite.entries.iter().zip(old.chunks_exact(entsize)).skip(first) {
        if !removed[entry.reloc] {
            // r_offset is the first field, one word wide, of REL and RELA.
            tail.extend_from_slice(&info.word_bytes(moved(entry.word_offset)));
            tail.extend_from_slice(&rel[word..]);
        }
    }
    let kept = removed.iter().filter(|&&r| !r).count() as u64;
    tail.resize(old.len() - first * entsize, 0);
    Ok(vec![
        Write { offset: rs.offset + (first * entsize) as u64, bytes: tail },
        Write {
            offset: info.sh_size_field(callsite.reloc_section),
            bytes: info.word_bytes(kept * callsite.reloc_entsize),
        },
    ])
}

// SPDX-License-Identifier: GPL-2.0-only
//! The ELF view of a kernel module: just the parts the kernel's ftrace and
//! module loader look at, read with the `object` crate's endian-generic
//! `read::elf` traits and handed on as plain data.
//!
//! Everything here is validated before anything is written: a section we
//! read or will write must lie inside the file, tables must have the entry
//! size the kernel assumes, and indices must be in range. A file that fails
//! any of this is rejected as a whole (see `Error`), never half-processed.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]
#![allow(
    clippy::cast_possible_truncation,
    reason = "section indices come from 16- or 32-bit ELF fields, and offsets were checked against the file, a slice in memory"
)]

use object::elf::{self, FileHeader32, FileHeader64, Rel32, Rel64, Rela32, Rela64, Sym32, Sym64};
use object::read::StringTable;
use object::read::elf::{FileHeader, Rel, Rela, SectionHeader, SectionTable, Sym, SymbolTable};
use object::{BigEndian as Be, Endian as _, Endianness, LittleEndian as Le, ReadRef as _};

use std::ops::ControlFlow;

use crate::error::Error;

/// One section header, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub entsize: u64,
    /// `sh_addralign`: the module loader starts the section at a multiple
    /// of it within its memory region (docs/at-risk.md).
    pub align: u64,
}

impl Section {
    #[must_use]
    pub fn is_alloc(&self) -> bool {
        self.flags & u64::from(elf::SHF_ALLOC) != 0
    }

    /// Sections the module loader lays out in a text region
    /// (`__layout_sections()`: mask `SHF_EXECINSTR | SHF_ALLOC`).
    #[must_use]
    pub fn is_alloc_exec(&self) -> bool {
        let mask = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
        self.flags & mask == mask
    }

    /// A relocation section (`SHT_REL` or `SHT_RELA`).
    #[must_use]
    pub fn is_relocation(&self) -> bool {
        self.sh_type == elf::SHT_REL || self.sh_type == elf::SHT_RELA
    }

    /// The bytes this section occupies in the file, if any.
    #[must_use]
    pub fn file_range(&self) -> Option<(u64, u64)> {
        if self.sh_type == elf::SHT_NOBITS || self.size == 0 {
            None
        } else {
            // Saturating: parse_info calls this before it has checked the range.
            Some((self.offset, self.offset.saturating_add(self.size)))
        }
    }

    /// The section's bytes in `data`, the file it was read from: empty when
    /// it has none. `parse_info` has checked that every section with bytes
    /// lies inside the file, so this only cuts.
    #[must_use]
    pub fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        self.file_range()
            .and_then(|(a, b)| data.get(usize::try_from(a).ok()?..usize::try_from(b).ok()?))
            .unwrap_or_default()
    }
}

/// The facts about a module that are needed to pick the per-arch rule.
#[derive(Debug, Clone)]
pub struct ElfInfo {
    pub is_64: bool,
    pub big_endian: bool,
    pub machine: u16,
    pub e_flags: u32,
    /// File offset of the section header table and the size of one header.
    pub shoff: u64,
    pub shentsize: u64,
    pub sections: Vec<Section>,
    /// `vermagic=` from `.modinfo`: the kernel release and build options.
    pub vermagic: Option<String>,
}

impl ElfInfo {
    /// The first section with this name that the loader would allocate,
    /// which is what `find_sec()` returns for the callsite table.
    #[must_use]
    pub fn alloc_section(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.is_alloc() && s.name == name)
    }

    /// The relocation sections that apply to section `target` (their
    /// `sh_info`), with their indices: `apply_relocations()` in
    /// kernel/module/main.c applies each to the section its `sh_info` names.
    pub fn relocation_sections_for(&self, target: usize) -> impl Iterator<Item = (usize, &Section)> {
        self.sections.iter().enumerate().filter(move |(_, s)| s.is_relocation() && s.info as usize == target)
    }

    /// A little-endian 64-bit mips module, whose relocations' `r_info` is
    /// a 32-bit symbol index and then four one-byte fields, the type last
    /// (`Elf64_Mips_Rela`, arch/mips/include/asm/module.h), not the
    /// standard index above a 32-bit type. Read as a big-endian word that
    /// layout is the standard one.
    #[must_use]
    pub fn is_mips64el(&self) -> bool {
        self.machine == elf::EM_MIPS && self.is_64 && !self.big_endian
    }

    #[must_use]
    pub fn word_size(&self) -> u64 {
        if self.is_64 { 8 } else { 4 }
    }

    /// File offset of a section header's `sh_size` field.
    #[must_use]
    pub fn sh_size_field(&self, index: usize) -> u64 {
        let header = self.shoff + index as u64 * self.shentsize;
        // Elf32_Shdr: name, type, flags, addr, offset are 4 bytes each.
        // Elf64_Shdr: name, type are 4 bytes; flags, addr, offset are 8.
        header + if self.is_64 { 32 } else { 20 }
    }

    #[must_use]
    pub fn endian(&self) -> Endianness {
        if self.big_endian { Endianness::Big } else { Endianness::Little }
    }

    /// A word's bytes, in the module's byte order and width.
    #[must_use]
    pub fn word_bytes(&self, value: u64) -> Vec<u8> {
        let endian = self.endian();
        if self.is_64 {
            endian.write_u64_bytes(value).to_vec()
        } else {
            // The caller's value fits: a 32-bit module's sizes are 32 bits.
            endian.write_u32_bytes(value as u32).to_vec()
        }
    }

    /// A word read as a signed addend (REL), sign-extended from its width.
    #[must_use]
    pub fn signed_word(&self, value: u64) -> i64 {
        // from_ne_bytes reinterprets the bits, as cast_signed (Rust 1.87) would.
        if self.is_64 {
            i64::from_ne_bytes(value.to_ne_bytes())
        } else {
            i64::from(i32::from_ne_bytes((value as u32).to_ne_bytes()))
        }
    }
}

/// A symbol the kernel's `find_kallsyms_symbol()` may resolve an address to,
/// in a section of the module. The kernel filters by name, not by type:
/// section symbols drop out only because their name is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupSymbol {
    pub section: u32,
    pub value: u64,
    /// Offset of the name in the string table: names are only cut out of
    /// it when they are printed, which keeps a pass over 55,000 symbols
    /// from searching for 55,000 NULs.
    pub name: u32,
    /// `st_size` of a function symbol (`STT_FUNC`); 0 for any other symbol,
    /// and for a function whose extent the compiler did not record. Only the
    /// containment rule ([`crate::rule::Criterion::Contains`]) reads it.
    pub size: u64,
}

/// The NUL-terminated string at `offset` of a string table.
#[must_use]
pub fn string_at(strings: &[u8], offset: u32) -> &[u8] {
    let tail = strings.get(offset as usize..).unwrap_or_default();
    &tail[..tail.iter().position(|&c| c == 0).unwrap_or(tail.len())]
}

/// Which names kallsyms skips as mapping or local-label symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// 6.1's `is_arm_mapping_symbol()` (kernel/module/kallsyms.c): `.L*`,
    /// and `$a`, `$t`, `$x`, `$d`, alone or followed by a dot.
    Arm,
    /// 6.12 and 7.2's `is_mapping_symbol()` (`include/linux/module_symbol.h`):
    /// `.L*`, `L0*` and every `$*`.
    All,
}

impl Mapping {
    /// Whether kallsyms skips `name` (NUL-terminated, or the table's end).
    #[must_use]
    pub fn skips(self, name: &[u8]) -> bool {
        // Most names start with none of the three: one test says so.
        if !matches!(name.first(), Some(b'.' | b'L' | b'$')) {
            return false;
        }
        let at = |i: usize| name.get(i).copied().unwrap_or(0);
        match self {
            Mapping::Arm => {
                name.starts_with(b".L") || (at(0) == b'$' && b"axtd".contains(&at(1)) && matches!(at(2), 0 | b'.'))
            }
            Mapping::All => name.starts_with(b".L") || name.starts_with(b"L0") || name.starts_with(b"$"),
        }
    }
}

/// Where a callsite relocation points, or why we cannot trust it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A plain location: `offset` bytes into section `section`.
    At { section: u32, offset: u64 },
    /// Something the rule does not cover; the entry is kept, for this reason.
    /// Boxed: odd entries are rare, and this keeps every `Entry` small.
    Odd(Box<Odd>),
}

impl Target {
    #[must_use]
    pub fn odd(why: Odd) -> Target {
        Target::Odd(Box::new(why))
    }
}

/// Why a callsite relocation is not the plain shape the rule is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Odd {
    #[error("relocation at {offset:#x} is not word-aligned")]
    Unaligned { offset: u64 },
    #[error("relocation type {r_type} is not the absolute word type {abs_type}")]
    RelocType { r_type: u32, abs_type: u32 },
    /// The `x86_64` loader refuses to relocate a non-zero word.
    #[error("word is {value:#x}, not zero, under a RELA relocation")]
    NonZeroWord { value: u64 },
    #[error("relocation against the null symbol")]
    NullSymbol,
    #[error("symbol {symbol} is out of range")]
    SymbolOutOfRange { symbol: u32 },
    #[error("relocation against an undefined symbol")]
    Undefined,
    #[error("relocation against an absolute symbol")]
    Absolute,
    #[error("relocation against a common symbol")]
    Common,
    #[error("relocation against a weak symbol")]
    Weak,
    #[error("symbol {symbol} has no usable section index ({shndx})")]
    NoSectionIndex { symbol: u32, shndx: u16 },
    #[error("symbol {symbol} is in section {section}, which does not exist")]
    NoSuchSection { symbol: u32, section: usize },
    #[error("target section {section} is not allocated executable code")]
    NotCode { section: String },
    #[error("target section {section} has no bytes in the file (SHT_NOBITS)")]
    NoBits { section: String },
    #[error("target {section}{offset:+#x} lies outside its section")]
    Outside { section: String, offset: i128 },
    /// Two relocations on the word at `offset` of the table.
    #[error("two relocations hit the word at {offset:#x}")]
    SharedWord { offset: u64 },
}

/// One relocated word of the callsite table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Index of the relocation in its relocation section.
    pub reloc: usize,
    /// Byte offset of the word in the callsite section.
    pub word_offset: u64,
    pub target: Target,
}

/// What the per-arch rule tells the reader about the relocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelocShape {
    /// RELA (addend in the entry) or REL (addend in the word).
    pub rela: bool,
    /// The arch's absolute word relocation (`R_X86_64_64`, `R_386_32`, ...).
    pub abs_type: u32,
}

/// The callsite table of a module and its single relocation section.
#[derive(Debug, Clone)]
pub struct Callsite {
    pub section: usize,
    pub reloc_section: usize,
    pub reloc_entsize: u64,
    pub entries: Vec<Entry>,
}

/// Everything the decision needs, read from the module.
#[derive(Debug, Clone)]
pub struct Extracted<'a> {
    pub callsite: Callsite,
    pub symbols: Vec<LookupSymbol>,
    /// The string table the symbol names point into.
    pub strings: &'a [u8],
    /// Local function symbols: they vanish under `strip --strip-unneeded`,
    /// and with them the names of static functions.
    pub local_functions: usize,
}

/// What reading a callsite table found: by [`extract`], the table with
/// every symbol and entry ([`Extracted`]); by [`read`], what the visitor
/// was not handed ([`Read`]).
#[derive(Debug, Clone)]
pub enum Extraction<T> {
    /// The table, its relocations and the symbols they may resolve to.
    Table(T),
    /// No relocation section applies to the table: the loader relocates
    /// nothing in it.
    NoRelocations(String),
    /// A shape the rule is not about (several relocation sections, or the
    /// wrong kind); left alone.
    Unsupported(String),
}

impl<T> Extraction<T> {
    /// The table, if there is one to act on.
    #[must_use]
    pub fn table(self) -> Option<T> {
        match self {
            Extraction::Table(x) => Some(x),
            Extraction::NoRelocations(_) | Extraction::Unsupported(_) => None,
        }
    }

    /// The same answer, the table turned into `U`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Extraction<U> {
        match self {
            Extraction::Table(x) => Extraction::Table(f(x)),
            Extraction::NoRelocations(why) => Extraction::NoRelocations(why),
            Extraction::Unsupported(why) => Extraction::Unsupported(why),
        }
    }
}

/// What reading a callsite table feeds, item by item, as it reads them:
/// [`extract`] keeps every item; [`crate::kept::all_kept`] keeps none,
/// and ends the reading at the first entry it cannot settle. The items and
/// the checks made on the way are the same for both.
pub trait Visit {
    /// Before the first item: how many symbols the symbol table holds and
    /// how many relocations apply to the table (bounds on what follows).
    fn start(&mut self, symbols: usize, relocations: usize);
    /// A lookup symbol, in symbol table order. `Break` ends the reading.
    fn symbol(&mut self, symbol: LookupSymbol) -> ControlFlow<()>;
    /// Every symbol was read; the entries follow. `Break` ends the reading.
    fn symbols_read(&mut self) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A callsite entry, in relocation order, after every symbol.
    /// `Break` ends the reading.
    fn entry(&mut self, entry: Entry) -> ControlFlow<()>;
}

/// What [`read`] found besides the items it handed the visitor.
#[derive(Debug, Clone)]
pub struct Read<'a> {
    pub reloc_section: usize,
    pub reloc_entsize: u64,
    /// The string table the symbol names point into.
    pub strings: &'a [u8],
    /// As [`Extracted::local_functions`], once every symbol was read.
    pub local_functions: usize,
    /// Each relocation is on a later word than the one before it, so no
    /// two share a word. When not, [`extract`] looks for words that do.
    pub ascending: bool,
    /// The visitor ended the reading: what followed was neither read nor
    /// checked.
    pub stopped: bool,
}

/// [`extract`]'s visitor: every item, kept.
#[derive(Default)]
struct Collect {
    symbols: Vec<LookupSymbol>,
    entries: Vec<Entry>,
}

impl Visit for Collect {
    fn start(&mut self, symbols: usize, relocations: usize) {
        self.symbols.reserve_exact(symbols);
        self.entries.reserve_exact(relocations);
    }

    #[inline]
    fn symbol(&mut self, symbol: LookupSymbol) -> ControlFlow<()> {
        self.symbols.push(symbol);
        ControlFlow::Continue(())
    }

    #[inline]
    fn entry(&mut self, entry: Entry) -> ControlFlow<()> {
        self.entries.push(entry);
        ControlFlow::Continue(())
    }
}

/// An unsigned integer of 2, 4 or 8 bytes (else 0), in the given byte order.
#[must_use]
pub fn read_uint(bytes: &[u8], big_endian: bool) -> u64 {
    let endian = if big_endian { Endianness::Big } else { Endianness::Little };
    match bytes.len() {
        8 => bytes.try_into().map_or(0, |b| endian.read_u64_bytes(b)),
        4 => bytes.try_into().map_or(0, |b| u64::from(endian.read_u32_bytes(b))),
        2 => bytes.try_into().map_or(0, |b| u64::from(endian.read_u16_bytes(b))),
        _ => 0,
    }
}

const ELFMAG: &[u8; 4] = b"\x7fELF";

/// Read the ELF header and section table of a kernel module.
pub fn parse_info(data: &[u8]) -> Result<ElfInfo, Error> {
    if data.len() < 4 || &data[..4] != ELFMAG {
        return Err(Error::NotElf);
    }
    if data.len() < 16 {
        return Err(Error::Malformed("truncated ELF identification".into()));
    }
    match data[4] {
        // EI_CLASS
        elf::ELFCLASS32 => info_generic::<FileHeader32<Endianness>>(data),
        elf::ELFCLASS64 => info_generic::<FileHeader64<Endianness>>(data),
        c => Err(Error::Malformed(format!("unknown ELF class {c}"))),
    }
}

/// Read the callsite table (section `callsite`) and the lookup symbols of
/// the module `data` that `info` was parsed from.
pub fn extract<'a>(
    data: &'a [u8],
    info: &ElfInfo,
    callsite: usize,
    shape: RelocShape,
    mapping: Mapping,
) -> Result<Extraction<Extracted<'a>>, Error> {
    let mut all = Collect::default();
    let read = read(data, info, callsite, shape, mapping, &mut all)?;
    Ok(read.map(|read| {
        let mut entries = all.entries;
        if !read.ascending {
            mark_shared_words(&mut entries, info.word_size());
        }
        Extracted {
            callsite: Callsite {
                section: callsite,
                reloc_section: read.reloc_section,
                reloc_entsize: read.reloc_entsize,
                entries,
            },
            symbols: all.symbols,
            strings: read.strings,
            local_functions: read.local_functions,
        }
    }))
}

/// Read what [`extract`] reads, with the same checks in the same order,
/// handing each lookup symbol and then each entry to `visit` as it is read
/// instead of keeping them. Two relocations on one word are only known
/// from [`Read::ascending`]: the entries are handed over as read.
pub fn read<'a, V: Visit>(
    data: &'a [u8],
    info: &ElfInfo,
    callsite: usize,
    shape: RelocShape,
    mapping: Mapping,
    visit: &mut V,
) -> Result<Extraction<Read<'a>>, Error> {
    if info.is_64 {
        read_generic::<FileHeader64<Endianness>, V>(data, info, callsite, shape, mapping, visit)
    } else {
        read_generic::<FileHeader32<Endianness>, V>(data, info, callsite, shape, mapping, visit)
    }
}

fn malformed(what: impl std::fmt::Display) -> Error {
    Error::Malformed(what.to_string())
}

/// The section headers `parse_info` read and checked, as `object`'s table,
/// without parsing the ELF header and the section names again. Only the
/// symbol table lookup uses it, and that needs no section names.
fn section_table<'a, Elf: FileHeader<Endian = Endianness>>(
    data: &'a [u8],
    info: &ElfInfo,
) -> Result<SectionTable<'a, Elf>, Error> {
    let headers = data
        .read_slice_at::<Elf::SectionHeader>(info.shoff, info.sections.len())
        .map_err(|()| malformed("section header table runs past the end of the file"))?;
    Ok(SectionTable::new(headers, StringTable::default()))
}

fn info_generic<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<ElfInfo, Error> {
    let header = Elf::parse(data).map_err(|e| malformed(format!("ELF header: {e}")))?;
    let endian = header.endian().map_err(malformed)?;
    let e_type = header.e_type(endian);
    if e_type != elf::ET_REL {
        return Err(Error::NotRelocatable(match e_type {
            elf::ET_EXEC => "ET_EXEC (an executable such as vmlinux)",
            elf::ET_DYN => "ET_DYN (a shared object or PIE)",
            elf::ET_CORE => "ET_CORE (a core dump)",
            _ => "not ET_REL",
        }));
    }
    let shentsize = u64::from(header.e_shentsize(endian));
    if shentsize != std::mem::size_of::<Elf::SectionHeader>() as u64 {
        return Err(malformed(format!("e_shentsize is {shentsize}")));
    }
    let table = header.sections(endian, data).map_err(|e| malformed(format!("section headers: {e}")))?;
    if table.is_empty() {
        return Err(malformed("no section headers"));
    }
    let file_len = data.len() as u64;
    // The names are cut out of `.shstrtab` here, as `object`'s string table
    // would, with its error: that table finds a NUL with `memchr`, whose
    // first call probes the CPU's features (cpuid, which a hypervisor
    // traps) for a search over a few bytes.
    let names = match header.shstrndx(endian, data).map_err(malformed)? {
        0 => &[][..],
        i => table.section(object::SectionIndex(i as usize)).and_then(|s| s.data(endian, data)).map_err(malformed)?,
    };
    let mut out = Vec::with_capacity(table.len());
    for (index, sh) in table.enumerate() {
        let tail = names.get(sh.sh_name(endian) as usize..).unwrap_or_default();
        let end = next_nul(tail);
        let name = tail
            .get(..end)
            .filter(|_| end < tail.len())
            .ok_or_else(|| malformed(format!("name of section {}: Invalid ELF section name offset", index.0)))?;
        let s = Section {
            name: String::from_utf8_lossy(name).into_owned(),
            sh_type: sh.sh_type(endian),
            flags: sh.sh_flags(endian).into(),
            offset: sh.sh_offset(endian).into(),
            size: sh.sh_size(endian).into(),
            link: sh.sh_link(endian),
            info: sh.sh_info(endian),
            entsize: sh.sh_entsize(endian).into(),
            align: sh.sh_addralign(endian).into(),
        };
        if let Some((start, _)) = s.file_range().filter(|&(start, _)| start > file_len || s.size > file_len - start) {
            return Err(malformed(format!(
                "section {} ({}) at {start:#x}+{:#x} runs past the end of the file ({file_len:#x} bytes)",
                index.0, s.name, s.size
            )));
        }
        out.push(s);
    }
    Ok(ElfInfo {
        is_64: header.is_type_64(),
        big_endian: endian == Endianness::Big,
        machine: header.e_machine(endian),
        e_flags: header.e_flags(endian),
        shoff: header.e_shoff(endian).into(),
        shentsize,
        vermagic: vermagic(data, &out),
        sections: out,
    })
}

/// `.modinfo` holds NUL-separated `key=value` strings; modpost always adds
/// `vermagic=RELEASE SMP preempt mod_unload ...`.
fn vermagic(data: &[u8], sections: &[Section]) -> Option<String> {
    let s = sections.iter().find(|s| s.name == ".modinfo")?;
    vermagic_in(s.bytes(data))
}

fn vermagic_in(bytes: &[u8]) -> Option<String> {
    // The first string that starts with the key: at the start, or after a
    // NUL. amdgpu.ko's .modinfo is 48 KiB of PCI aliases.
    let mut start = 0;
    loop {
        let tail = &bytes[start..];
        let end = next_nul(tail);
        if let Some(v) = tail[..end].strip_prefix(b"vermagic=") {
            return Some(String::from_utf8_lossy(v).into_owned());
        }
        start += end + 1;
        if start > bytes.len() {
            return None;
        }
    }
}

/// Where the first NUL of `bytes` is (its length if it has none), eight
/// bytes a step: a word has a zero byte exactly when
/// `(w - 0x01..01) & !w & 0x80..80` is not 0.
fn next_nul(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let w = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
        if w.wrapping_sub(ONES) & !w & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    at + bytes[at..].iter().position(|&b| b == 0).unwrap_or(bytes.len() - at)
}

/// The index of the relocation section that applies to the callsite
/// table, validated against the rule's shape, or why there is none we
/// could act on, as the extraction's answer.
fn reloc_section<Elf: FileHeader<Endian = Endianness>, T>(
    info: &ElfInfo,
    callsite: usize,
    shape: RelocShape,
) -> Result<Result<usize, Extraction<T>>, Error> {
    let cs = &info.sections[callsite];
    let relsecs: Vec<usize> = info.relocation_sections_for(callsite).map(|(i, _)| i).collect();
    let index = match relsecs.as_slice() {
        [] => {
            return Ok(Err(Extraction::NoRelocations(format!(
                "{} has no relocation section: nothing the loader would relocate",
                cs.name
            ))));
        }
        [one] => *one,
        _ => {
            return Ok(Err(Extraction::Unsupported(format!(
                "{} relocation sections apply to {}; left alone",
                relsecs.len(),
                cs.name
            ))));
        }
    };
    let rs = &info.sections[index];
    let wanted = if shape.rela { elf::SHT_RELA } else { elf::SHT_REL };
    if rs.sh_type != wanted {
        return Ok(Err(Extraction::Unsupported(format!(
            "{} is {} but this architecture's modules use {}; left alone",
            rs.name,
            if rs.sh_type == elf::SHT_RELA { "SHT_RELA" } else { "SHT_REL" },
            if shape.rela { "SHT_RELA" } else { "SHT_REL" }
        ))));
    }
    let entsize = reloc_entsize::<Elf>(shape);
    if rs.entsize != entsize {
        return Err(malformed(format!("{} has sh_entsize {}, expected {entsize}", rs.name, rs.entsize)));
    }
    if rs.size % entsize != 0 {
        return Err(malformed(format!(
            "{} is {:#x} bytes, not a whole number of {entsize}-byte entries",
            rs.name, rs.size
        )));
    }
    Ok(Ok(index))
}

fn reloc_entsize<Elf: FileHeader>(shape: RelocShape) -> u64 {
    (if shape.rela { std::mem::size_of::<Elf::Rela>() } else { std::mem::size_of::<Elf::Rel>() }) as u64
}

/// The symbol table a relocation section links to, checked.
fn symbol_table<'a, 'i, Elf: FileHeader<Endian = Endianness>>(
    data: &'a [u8],
    info: &'i ElfInfo,
    table: &SectionTable<'a, Elf>,
    rs: &Section,
) -> Result<(SymbolTable<'a, Elf>, &'i Section), Error> {
    let symtab_index = rs.link as usize;
    let symsec = info
        .sections
        .get(symtab_index)
        .filter(|s| s.sh_type == elf::SHT_SYMTAB)
        .ok_or_else(|| malformed(format!("{} links to section {symtab_index}, not a symbol table", rs.name)))?;
    if symsec.entsize != std::mem::size_of::<Elf::Sym>() as u64 {
        return Err(malformed(format!(
            "{} has sh_entsize {}, expected {}",
            symsec.name,
            symsec.entsize,
            std::mem::size_of::<Elf::Sym>()
        )));
    }
    let symtab = table
        .symbol_table_by_index(info.endian(), data, object::SectionIndex(symtab_index))
        .map_err(|e| malformed(format!("{}: {e}", symsec.name)))?;
    Ok((symtab, symsec))
}

/// One relocation, whether REL or RELA; `addend` is `None` for REL.
struct RawReloc {
    offset: u64,
    r_type: u32,
    r_sym: u32,
    addend: Option<i64>,
}

fn read_generic<'a, Elf: FileHeader<Endian = Endianness>, V: Visit>(
    data: &'a [u8],
    info: &ElfInfo,
    callsite: usize,
    shape: RelocShape,
    mapping: Mapping,
    visit: &mut V,
) -> Result<Extraction<Read<'a>>, Error> {
    let cs = &info.sections[callsite];
    let word = info.word_size();
    if cs.sh_type == elf::SHT_NOBITS {
        return Err(malformed(format!("{} has no file data (SHT_NOBITS)", cs.name)));
    }
    if cs.size % word != 0 {
        return Err(malformed(format!("{} is {:#x} bytes, not a whole number of {word}-byte words", cs.name, cs.size)));
    }
    let table = section_table::<Elf>(data, info)?;
    let reloc_section = match reloc_section::<Elf, Read<'a>>(info, callsite, shape)? {
        Ok(index) => index,
        Err(none) => return Ok(none),
    };
    let rs = &info.sections[reloc_section];
    let (symtab, symsec) = symbol_table::<Elf>(data, info, &table, rs)?;
    validate_writable_ranges(info, data.len() as u64, &[callsite, reloc_section])?;
    let strings = string_table(data, info, symsec)?;
    let entsize = reloc_entsize::<Elf>(shape);
    // The relocation section lies in the file, a slice: its count fits.
    visit.start(symtab.len(), (rs.size / entsize) as usize);
    let (local_functions, stopped) = lookup_symbols::<Elf, V>(&symtab, info, strings, mapping, visit)?;
    let stopped = stopped || visit.symbols_read().is_break();
    let mut read = Read { reloc_section, reloc_entsize: entsize, strings, local_functions, ascending: true, stopped };
    if stopped {
        return Ok(Extraction::Table(read));
    }

    let endian = info.endian();
    let words = cs.bytes(data);
    let header = table.section(object::SectionIndex(reloc_section)).map_err(malformed)?;
    let bad = |e: object::read::Error| malformed(format!("{}: {e}", rs.name));
    // As for the symbols: the relocations read in a byte order fixed at
    // compile time, the same bytes cast.
    let cast = |()| malformed(format!("{}: relocations", rs.name));
    let site = Site { info, symtab: &symtab, rs, cs, words, abs_type: shape.abs_type };
    // `$mips64el` is a literal, so no other arch tests it per relocation.
    macro_rules! rela {
        ($t:ty, $e:expr, $mips64el:literal) => {{
            let relocs = header.rela(endian, data).map_err(bad)?.map_or(&[][..], |(r, _)| r);
            let relocs = object::pod::slice_from_all_bytes::<$t>(object::pod::bytes_of_slice(relocs)).map_err(cast)?;
            site.entries(
                $e,
                relocs.iter().map(|r| RawReloc {
                    offset: Rela::r_offset(r, $e).into(),
                    r_type: Rela::r_type(r, $e, $mips64el),
                    r_sym: Rela::r_sym(r, $e, $mips64el),
                    addend: Some(Rela::r_addend(r, $e).into()),
                }),
                visit,
            )?
        }};
    }
    macro_rules! rel {
        ($t:ty, $e:expr) => {{
            let relocs = header.rel(endian, data).map_err(bad)?.map_or(&[][..], |(r, _)| r);
            let relocs = object::pod::slice_from_all_bytes::<$t>(object::pod::bytes_of_slice(relocs)).map_err(cast)?;
            site.entries(
                $e,
                relocs.iter().map(|r| RawReloc {
                    offset: Rel::r_offset(r, $e).into(),
                    r_type: Rel::r_type(r, $e),
                    r_sym: Rel::r_sym(r, $e),
                    addend: None,
                }),
                visit,
            )?
        }};
    }
    (read.ascending, read.stopped) = match (shape.rela, info.is_64, info.big_endian) {
        (true, true, false) if info.is_mips64el() => rela!(Rela64<Le>, Le, true),
        (true, true, false) => rela!(Rela64<Le>, Le, false),
        (true, true, true) => rela!(Rela64<Be>, Be, false),
        (true, false, false) => rela!(Rela32<Le>, Le, false),
        (true, false, true) => rela!(Rela32<Be>, Be, false),
        // No mips64el module has REL relocations (its arch's shape is RELA,
        // which `reloc_section` holds the table's to).
        (false, true, false) => rel!(Rel64<Le>, Le),
        (false, true, true) => rel!(Rel64<Be>, Be),
        (false, false, false) => rel!(Rel32<Le>, Le),
        (false, false, true) => rel!(Rel32<Be>, Be),
    };
    Ok(Extraction::Table(read))
}

/// The callsite table, its relocation section and what reading its
/// entries needs.
struct Site<'s, 'd, Elf: FileHeader<Endian = Endianness>> {
    info: &'s ElfInfo,
    symtab: &'s SymbolTable<'d, Elf>,
    rs: &'s Section,
    cs: &'s Section,
    /// The callsite table's bytes.
    words: &'s [u8],
    abs_type: u32,
}

impl<Elf: FileHeader<Endian = Endianness>> Site<'_, '_, Elf> {
    /// The callsite entries, one per relocation, with where it points,
    /// each handed to `visit`; whether their words ascend, and whether
    /// `visit` ended the reading. `endian` is the module's byte order,
    /// fixed at compile time.
    fn entries<E: object::Endian, V: Visit>(
        &self,
        endian: E,
        relocs: impl ExactSizeIterator<Item = RawReloc>,
        visit: &mut V,
    ) -> Result<(bool, bool), Error> {
        let Site { info, symtab, rs, cs, words, abs_type } = *self;
        let word = info.word_size();
        // Compilers emit callsites in address order; only when they are not
        // does finding two relocations on one word need a sort.
        let mut ascending = true;
        let mut previous: Option<u64> = None;
        // The last relocation symbol resolved: callsite relocations name
        // the same few symbols (the section symbol of `.text`, mostly)
        // thousands of times, and what a symbol resolves to does not
        // depend on the addend.
        let mut last: Option<(u32, Base)> = None;
        for (i, r) in relocs.enumerate() {
            let r_offset = r.offset;
            if r_offset >= cs.size || cs.size - r_offset < word {
                return Err(malformed(format!(
                    "relocation {i} of {} writes at {r_offset:#x}, past the end of {} ({:#x} bytes)",
                    rs.name, cs.name, cs.size
                )));
            }
            if r.r_sym as usize >= symtab.len() {
                return Err(malformed(format!(
                    "relocation {i} of {} refers to symbol {}, but {} has {} symbols",
                    rs.name,
                    r.r_sym,
                    info.sections[rs.link as usize].name,
                    symtab.len()
                )));
            }
            let target = if r_offset & (word - 1) != 0 {
                Target::odd(Odd::Unaligned { offset: r_offset })
            } else if r.r_type != abs_type {
                Target::odd(Odd::RelocType { r_type: r.r_type, abs_type })
            } else {
                let at = usize::try_from(r_offset).map_err(malformed)?;
                let bytes = &words[at..at + word as usize];
                let word_value = match bytes.try_into() {
                    Ok(b) => endian.read_u64_bytes(b),
                    Err(_) => bytes.try_into().map_or(0, |b| u64::from(endian.read_u32_bytes(b))),
                };
                match r.addend {
                    // The x86_64 loader refuses to relocate a non-zero word; we
                    // do not guess what such a module means.
                    Some(_) if word_value != 0 => Target::odd(Odd::NonZeroWord { value: word_value }),
                    addend => {
                        if last.as_ref().is_none_or(|&(s, _)| s != r.r_sym) {
                            last = Some((r.r_sym, resolve_symbol(symtab, info, r.r_sym)));
                        }
                        let base = &last.as_ref().expect("just set").1;
                        // REL: the addend is the word itself, read as signed.
                        place(base, info, addend.unwrap_or_else(|| info.signed_word(word_value)))
                    }
                }
            };
            if let Some(prev) = previous {
                // word is 4 or 8: a shift, not a division.
                ascending &= prev >> word.trailing_zeros() < r_offset >> word.trailing_zeros();
            }
            previous = Some(r_offset);
            if visit.entry(Entry { reloc: i, word_offset: r_offset, target }).is_break() {
                return Ok((ascending, true));
            }
        }
        Ok((ascending, false))
    }
}

/// A relocation symbol's section (with that section's size, so that
/// placing a location needs no look at the section table) and value, or
/// why it cannot be a callsite's.
type Base = Result<(usize, u64, i64), Target>;

/// Where `symbol + addend` lands, given what the symbol resolved to.
// Called once per callsite, in the relocation walk, where a call's spills
// and reloads would outweigh its work; the compiler leaves it out of line
// unless told.
#[allow(clippy::inline_always, reason = "once per callsite in the relocation walk: see above")]
#[inline(always)]
fn place(base: &Base, info: &ElfInfo, addend: i64) -> Target {
    let &(section, size, value) = match base {
        Ok(at) => at,
        Err(odd) => return odd.clone(),
    };
    // Inside the section only if the sum is in 0..size, and size is
    // below 2^63 (the section lies in the file): where the i64 sum
    // overflows, the location is outside whatever its true value.
    match value.checked_add(addend).map(u64::try_from) {
        Some(Ok(offset)) if offset < size => Target::At { section: section as u32, offset },
        _ => Target::odd(Odd::Outside {
            section: info.sections[section].name.clone(),
            offset: i128::from(value) + i128::from(addend),
        }),
    }
}

/// Resolve a relocation's symbol to a section and value (signed, as the
/// addend is added to it), or say why it cannot be a callsite's.
fn resolve_symbol<Elf: FileHeader<Endian = Endianness>>(
    symtab: &SymbolTable<'_, Elf>,
    info: &ElfInfo,
    r_sym: u32,
) -> Base {
    let endian = info.endian();
    if r_sym == 0 {
        return Err(Target::odd(Odd::NullSymbol));
    }
    let index = object::SymbolIndex(r_sym as usize);
    let Ok(sym) = symtab.symbol(index) else {
        return Err(Target::odd(Odd::SymbolOutOfRange { symbol: r_sym }));
    };
    let shndx = sym.st_shndx(endian);
    match shndx {
        elf::SHN_UNDEF => return Err(Target::odd(Odd::Undefined)),
        elf::SHN_ABS => return Err(Target::odd(Odd::Absolute)),
        elf::SHN_COMMON => return Err(Target::odd(Odd::Common)),
        _ => {}
    }
    if sym.st_bind() == elf::STB_WEAK {
        return Err(Target::odd(Odd::Weak));
    }
    let section = match symtab.symbol_section(endian, sym, index) {
        Ok(Some(s)) => s.0,
        _ => return Err(Target::odd(Odd::NoSectionIndex { symbol: r_sym, shndx })),
    };
    let Some(target) = info.sections.get(section) else {
        return Err(Target::odd(Odd::NoSuchSection { symbol: r_sym, section }));
    };
    if !target.is_alloc_exec() {
        return Err(Target::odd(Odd::NotCode { section: target.name.clone() }));
    }
    // Code has bytes in the file; this also bounds offsets by the file size,
    // so the per-arch adjust cannot overflow.
    if target.sh_type == elf::SHT_NOBITS {
        return Err(Target::odd(Odd::NoBits { section: target.name.clone() }));
    }
    let value: u64 = sym.st_value(endian).into();
    Ok((section, target.size, i64::from_ne_bytes(value.to_ne_bytes())))
}

/// The symbols `find_kallsyms_symbol()` considers, restricted to those in
/// allocated executable sections (no other section is in a text region).
/// Each goes to `visit`; the count of local function symbols, and whether
/// `visit` ended the walk, come back.
fn lookup_symbols<Elf: FileHeader<Endian = Endianness>, V: Visit>(
    symtab: &SymbolTable<'_, Elf>,
    info: &ElfInfo,
    strings: &[u8],
    mapping: Mapping,
    visit: &mut V,
) -> Result<(usize, bool), Error> {
    // Symbols past SHN_LORESERVE name their section in SHT_SYMTAB_SHNDX.
    let xindex = |index: usize| {
        let sym = symtab.symbol(object::SymbolIndex(index)).ok()?;
        symtab.symbol_section(info.endian(), sym, object::SymbolIndex(index)).ok().flatten().map(|s| s.0)
    };
    let exec: Vec<bool> = info.sections.iter().map(Section::is_alloc_exec).collect();
    // The same bytes, read as symbols of a byte order known at compile
    // time: the walk then tests no byte order per field. Aligned as
    // `object` checked them, since the types differ in that order only.
    let bytes = object::pod::bytes_of_slice(symtab.symbols());
    let cast = |()| malformed("symbol table");
    macro_rules! walk {
        ($t:ty, $e:expr) => {{
            let symbols = object::pod::slice_from_all_bytes::<$t>(bytes).map_err(cast)?;
            walk_symbols(symbols, $e, &exec, strings, mapping, xindex, visit)
        }};
    }
    match (info.is_64, info.big_endian) {
        (true, false) => walk!(Sym64<Le>, Le),
        (true, true) => walk!(Sym64<Be>, Be),
        (false, false) => walk!(Sym32<Le>, Le),
        (false, true) => walk!(Sym32<Be>, Be),
    }
}

/// One pass over the symbol table for [`lookup_symbols`]; `exec` says by
/// section index which sections are allocated executable code.
fn walk_symbols<S: Sym, V: Visit>(
    symbols: &[S],
    endian: S::Endian,
    exec: &[bool],
    strings: &[u8],
    mapping: Mapping,
    xindex: impl Fn(usize) -> Option<usize>,
    visit: &mut V,
) -> Result<(usize, bool), Error> {
    let mut local_functions = 0;
    for (index, sym) in symbols.iter().enumerate().skip(1) {
        if sym.st_type() == elf::STT_FUNC && sym.st_bind() == elf::STB_LOCAL {
            local_functions += 1;
        }
        let shndx = sym.st_shndx(endian);
        if shndx == elf::SHN_UNDEF || (shndx >= elf::SHN_LORESERVE && shndx != elf::SHN_XINDEX) {
            continue;
        }
        let name = sym.st_name(endian);
        if name as usize >= strings.len() {
            return Err(malformed(format!("symbol {index} has a bad name offset")));
        }
        let section = if shndx == elf::SHN_XINDEX {
            match xindex(index) {
                Some(s) => s,
                None => continue,
            }
        } else {
            usize::from(shndx)
        };
        // Outside code: skipped whatever its name, which is not read.
        if exec.get(section) != Some(&true) {
            continue;
        }
        // The table ends with a NUL, so the first three bytes decide.
        let head = &strings[name as usize..];
        let head = &head[..head.len().min(3)];
        if head[0] != 0 && !mapping.skips(head) {
            let size = if sym.st_type() == elf::STT_FUNC { sym.st_size(endian).into() } else { 0 };
            let value = sym.st_value(endian).into();
            if visit.symbol(LookupSymbol { section: section as u32, value, name, size }).is_break() {
                return Ok((local_functions, true));
            }
        }
    }
    Ok((local_functions, false))
}

/// The symbol table's string table, which must end with a NUL so that
/// every name in it ends.
fn string_table<'a>(data: &'a [u8], info: &ElfInfo, symtab: &Section) -> Result<&'a [u8], Error> {
    let s = info
        .sections
        .get(symtab.link as usize)
        .filter(|s| s.sh_type == elf::SHT_STRTAB)
        .ok_or_else(|| malformed(format!("{} links to no string table", symtab.name)))?;
    let bytes = s.bytes(data);
    if bytes.last() != Some(&0) {
        return Err(malformed(format!("string table {} does not end with a NUL", s.name)));
    }
    Ok(bytes)
}

/// The sections we write must not share bytes with anything else: a write
/// into an overlapping symbol table or header would corrupt the module.
fn validate_writable_ranges(info: &ElfInfo, file_len: u64, written: &[usize]) -> Result<(), Error> {
    let ehsize = if info.is_64 { 64 } else { 52 };
    let shtab = (info.shoff, info.shoff + info.shentsize * info.sections.len() as u64);
    if shtab.1 > file_len {
        return Err(malformed("section header table runs past the end of the file"));
    }
    for &w in written {
        let s = &info.sections[w];
        let Some((a0, a1)) = s.file_range() else { continue };
        // `what` is a closure: the name is only written out for an error.
        let clash = |what: &dyn Fn() -> String, b0: u64, b1: u64| -> Result<(), Error> {
            if a0 < b1 && b0 < a1 { Err(malformed(format!("section {} overlaps {}", s.name, what()))) } else { Ok(()) }
        };
        clash(&|| "the ELF header".into(), 0, ehsize)?;
        clash(&|| "the section header table".into(), shtab.0, shtab.1)?;
        for (i, other) in info.sections.iter().enumerate() {
            // Section 0 has no data: with extended numbering (e_shnum == 0)
            // its sh_size is the section count, not a size.
            if i == w || i == 0 {
                continue;
            }
            if let Some((b0, b1)) = other.file_range() {
                clash(&|| format!("section {}", other.name), b0, b1)?;
            }
        }
    }
    Ok(())
}

/// Bytes of section `section` at `offset`, if they are in the file.
#[must_use]
pub fn section_bytes<'a>(data: &'a [u8], info: &ElfInfo, section: u32, offset: u64, len: u64) -> Option<&'a [u8]> {
    let bytes = info.sections.get(section as usize)?.bytes(data);
    let from = usize::try_from(offset).ok()?;
    bytes.get(from..from.checked_add(usize::try_from(len).ok()?)?)
}

/// Two relocations on one word: whatever the loader makes of that, it is
/// not the one-relocation-per-entry shape the rule is about.
fn mark_shared_words(entries: &mut [Entry], word: u64) {
    let mut by_word: Vec<(u64, usize)> = entries.iter().map(|e| (e.word_offset / word, e.reloc)).collect();
    by_word.sort_unstable();
    for pair in by_word.windows(2) {
        if pair[0].0 == pair[1].0 {
            for &(w, reloc) in pair {
                entries[reloc].target = Target::odd(Odd::SharedWord { offset: w * word });
            }
        }
    }
}

/// A symbol defined in the callsite table: arm64, riscv and arm put
/// mapping symbols (`$d`) at its words. A drop moves it down with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSymbol {
    /// File offset of its `st_value` field.
    pub value_field: u64,
    pub value: u64,
}

/// What a drop must move with the callsite table's words: the symbols
/// defined in the table, all local and unrelocated against, which move
/// down with their words; or why a drop could not keep what points into
/// the table right.
pub type TableSymbols = Result<Vec<TableSymbol>, String>;

/// The symbols defined in the callsite table, for a drop, or why a drop
/// could not keep what points into the table right: a symbol other modules
/// could see, or a relocation of another section against one of its symbols.
/// Nothing of the kind is known in a real module (docs/rules.md, "Dropping
/// an entry"), so such a module is left alone rather than guessed at.
pub fn table_symbols(data: &[u8], info: &ElfInfo, callsite: &Callsite) -> Result<TableSymbols, Error> {
    if info.is_64 {
        table_symbols_generic::<FileHeader64<Endianness>>(data, info, callsite)
    } else {
        table_symbols_generic::<FileHeader32<Endianness>>(data, info, callsite)
    }
}

fn table_symbols_generic<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
    info: &ElfInfo,
    callsite: &Callsite,
) -> Result<TableSymbols, Error> {
    let table = section_table::<Elf>(data, info)?;
    let rs = &info.sections[callsite.reloc_section];
    let cs = &info.sections[callsite.section];
    let (symtab, symsec) = symbol_table::<Elf>(data, info, &table, rs)?;
    let symtab_index = rs.link as usize;
    validate_writable_ranges(info, data.len() as u64, &[symtab_index])?;
    let endian = info.endian();
    // st_value follows st_name in Elf64_Sym (and st_info, st_other,
    // st_shndx); in Elf32_Sym it comes right after st_name.
    let value_at = if info.is_64 { 8 } else { 4 };
    let mut inside = vec![false; symtab.len()];
    let mut out = Vec::new();
    for (index, sym) in symtab.enumerate() {
        if !matches!(symtab.symbol_section(endian, sym, index), Ok(Some(s)) if s.0 == callsite.section) {
            continue;
        }
        if sym.st_bind() != elf::STB_LOCAL {
            return Ok(Err(format!("symbol {} is defined in {} and is not local", index.0, cs.name)));
        }
        inside[index.0] = true;
        let value_field = symsec.offset + index.0 as u64 * symsec.entsize + value_at;
        out.push(TableSymbol { value_field, value: sym.st_value(endian).into() });
    }
    for (i, s) in info.sections.iter().enumerate() {
        if i == callsite.reloc_section || !s.is_relocation() || s.link as usize != symtab_index {
            continue;
        }
        let hits = relocation_symbols(data, info, &table, i, s)?;
        if hits.iter().any(|&sym| inside.get(sym as usize) == Some(&true)) {
            return Ok(Err(format!("{} relocates against a symbol defined in {}", s.name, cs.name)));
        }
    }
    Ok(Ok(out))
}

/// The symbol index each relocation of section `i` (REL or RELA, `s`)
/// names. For the questions asked only when something is dead or dropped;
/// the callsite table's own relocations are read in [`extract`].
fn relocation_symbols<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
    info: &ElfInfo,
    table: &SectionTable<'_, Elf>,
    i: usize,
    s: &Section,
) -> Result<Vec<u32>, Error> {
    let header = table.section(object::SectionIndex(i)).map_err(malformed)?;
    let bad = |e: object::read::Error| malformed(format!("{}: {e}", s.name));
    let endian = info.endian();
    let mips64el = info.is_mips64el();
    Ok(if s.sh_type == elf::SHT_RELA {
        let relocs = header.rela(endian, data).map_err(bad)?.map_or(&[][..], |(r, _)| r);
        relocs.iter().map(|r| r.r_sym(endian, mips64el)).collect()
    } else if mips64el {
        // `object` knows the mips64el layout for RELA only; an `Elf64_Rel`
        // shares its `r_offset` and `r_info`.
        let relocs = header.rel(endian, data).map_err(bad)?.map_or(&[][..], |(r, _)| r);
        relocs
            .iter()
            .map(|r| {
                let info: u64 = object::read::elf::Rel::r_info(r, endian).into();
                // The symbol index is the first 32 bits in the file.
                (info & 0xffff_ffff) as u32
            })
            .collect()
    } else {
        let relocs = header.rel(endian, data).map_err(bad)?.map_or(&[][..], |(r, _)| r);
        relocs.iter().map(|r| r.r_sym(endian)).collect()
    })
}

/// Whether every local symbol of the callsite table's symbol table is one
/// that something names: a relocation of an allocated section, or a section
/// group as its signature. That is all `strip --strip-unneeded` keeps (GNU
/// strip and llvm-objcopy alike; it drops the debug sections and their
/// relocations), where a module as `ld -r` leaves it (or `strip
/// --strip-debug`) always has local symbols no such relocation names: the
/// `.modinfo` strings, notes, static functions only called from their own
/// section. Section and file symbols do not count, nor mapping symbols
/// (`$x`, `$d`, `.L`...), which GNU strip keeps on arm and arm64 whether
/// named or not.
///
/// Reads every relocation section, so it is asked only when the answer
/// would change something.
pub fn only_relocated_locals(data: &[u8], info: &ElfInfo, callsite: &Callsite) -> Result<bool, Error> {
    if info.is_64 {
        only_relocated_locals_generic::<FileHeader64<Endianness>>(data, info, callsite)
    } else {
        only_relocated_locals_generic::<FileHeader32<Endianness>>(data, info, callsite)
    }
}

fn only_relocated_locals_generic<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
    info: &ElfInfo,
    callsite: &Callsite,
) -> Result<bool, Error> {
    let table = section_table::<Elf>(data, info)?;
    let rs = &info.sections[callsite.reloc_section];
    let (symtab, symsec) = symbol_table::<Elf>(data, info, &table, rs)?;
    let strings = string_table(data, info, symsec)?;
    let symtab_index = rs.link as usize;
    let endian = info.endian();
    let mut named = vec![false; symtab.len()];
    let mut name = |index: u32| {
        if let Some(n) = named.get_mut(index as usize) {
            *n = true;
        }
    };
    for (i, s) in info.sections.iter().enumerate() {
        if s.link as usize != symtab_index {
            continue;
        }
        if s.sh_type == elf::SHT_GROUP {
            name(s.info);
            continue;
        }
        // Only the relocations the module loader applies: riscv's
        // assembler names local symbols themselves, not their sections, so
        // in a module with debug information `.rela.debug_info` names
        // every static function and variable.
        let applied = info.sections.get(s.info as usize).is_some_and(Section::is_alloc);
        if !s.is_relocation() || !applied {
            continue;
        }
        for sym in relocation_symbols(data, info, &table, i, s)? {
            name(sym);
        }
    }
    let unnamed = symtab.enumerate().skip(1).any(|(index, sym)| {
        let head = strings.get(sym.st_name(endian) as usize..).unwrap_or_default();
        sym.st_bind() == elf::STB_LOCAL
            && !matches!(sym.st_type(), elf::STT_SECTION | elf::STT_FILE)
            && !named[index.0]
            && head.first().is_some_and(|&c| c != 0)
            && !Mapping::All.skips(head)
    });
    Ok(!unnamed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vermagic_is_the_first_string_with_the_key_wherever_it_lies() {
        // The NUL-separated strings, as the kernel's `get_modinfo()` reads them.
        let reference = |bytes: &[u8]| {
            bytes
                .split(|&b| b == 0)
                .find_map(|kv| kv.strip_prefix(b"vermagic="))
                .map(|v| String::from_utf8_lossy(v).into_owned())
        };
        let mut found = 0;
        for pad in 0..20 {
            let lead = vec![b'a'; pad];
            for case in [
                [&lead[..], b"\0vermagic=7.2.0 SMP\0vermagic=6.1\0"].concat(),
                [&lead[..], b"xvermagic=no\0\0\0vermagic=yes"].concat(),
                [b"vermagic=first\0".as_slice(), &lead[..]].concat(),
                [&lead[..], b"\0vermagi\0c=\0alias=vermagic=\0"].concat(),
                [&lead[..], b"\0vermagic="].concat(),
                lead.clone(),
            ] {
                assert_eq!(vermagic_in(&case), reference(&case), "{case:?}");
                found += usize::from(reference(&case).is_some());
            }
        }
        assert!(found >= 60, "{found}");
    }
}

// SPDX-License-Identifier: GPL-2.0-only
//! Mutation campaign: hostile variants of real and synthetic modules.
//!
//! About 10,000 deterministic cases (fixed seeds, an inline xorshift PRNG):
//! flipped bytes, truncations, and deliberate corruption of the ELF header,
//! section headers (offsets, sizes, `sh_entsize`, `sh_link`/`sh_info`),
//! symbols (indices, string offsets), relocations, string tables and the
//! signature trailer. For every case, the library must not panic and must
//! either refuse the input or produce a result that parses again, whose
//! second run is a no-op, and that differs from the input only in the
//! callsite relocation section, its `sh_size` field and the callsite words.
//! A sample of the cases also runs the binary on a file: refused means the
//! file is byte-identical, accepted means it holds exactly the library's
//! output.
//!
//! The allowed ranges are computed from scratch, from the library's own
//! parse of the input (`elf::parse_info`), not from `common::changeable`
//! (which assumes a well-formed file).
#![allow(
    clippy::cast_possible_truncation,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]
#![allow(
    clippy::similar_names,
    clippy::manual_let_else,
    reason = "kept as written: renaming would only churn the campaign"
)]
#![allow(clippy::too_many_lines, reason = "one table of mutation kinds reads best in one place")]

mod common;

use common::ranges::allowed_ranges;
use common::{BIN, MODULE, Rng, Scratch, signed};

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;

use common::standard;
use object::{Architecture, Endianness, elf};
use zero_weak_mcount::elf::parse_info;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, SignedPolicy, analyze};
use zero_weak_mcount::signature;

/// Cases per run. Every `CLI_EVERY`th case also runs the binary.
const CASES: usize = 10_000;
const CLI_EVERY: usize = 50;
const SEED: u64 = 0x5eed_0006_2bad_f00d;

// ---------------------------------------------------------------------------
// The inputs, and where their fields are.

/// The field layout of one (valid) base module, read once.
struct Base {
    name: String,
    data: Vec<u8>,
    /// Length of the ELF image (the file without a signature).
    image_len: usize,
    is_64: bool,
    big: bool,
    shoff: usize,
    shentsize: usize,
    sections: Vec<Sec>,
    /// Extra options to try besides the default and `--signed=strip`.
    extra: Option<Options>,
}

struct Sec {
    name: String,
    sh_type: u32,
    header: usize,
    offset: usize,
    size: usize,
    entsize: usize,
}

impl Base {
    fn new(name: &str, data: Vec<u8>, extra: Option<Options>) -> Base {
        let image_len = signature::elf_len(&data).unwrap().unwrap_or(data.len());
        let info = parse_info(&data[..image_len]).unwrap();
        let sections = info
            .sections
            .iter()
            .enumerate()
            .map(|(i, s)| Sec {
                name: s.name.clone(),
                sh_type: s.sh_type,
                header: info.shoff as usize + i * info.shentsize as usize,
                offset: s.offset as usize,
                size: s.size as usize,
                entsize: s.entsize as usize,
            })
            .collect();
        Base {
            name: name.into(),
            data,
            image_len,
            is_64: info.is_64,
            big: info.big_endian,
            shoff: info.shoff as usize,
            shentsize: info.shentsize as usize,
            sections,
            extra,
        }
    }

    fn word(&self) -> usize {
        if self.is_64 { 8 } else { 4 }
    }

    fn find(&self, pred: impl Fn(&Sec) -> bool) -> Vec<usize> {
        self.sections.iter().enumerate().filter(|(_, s)| pred(s)).map(|(i, _)| i).collect()
    }
}

fn bases() -> Vec<Base> {
    let real = fs::read(MODULE).unwrap();
    let ppc64_cfg = Options {
        kconfig: Some(Kconfig::parse(
            "CONFIG_PPC64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
             CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y\n",
        )),
        ..Options::default()
    };
    let x86_noibt =
        Options { kconfig: Some(Kconfig::parse("CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n")), ..Options::default() };
    let f = |arch, endian, e_flags, cs, abs, adjust, max| standard(arch, endian, e_flags, cs, abs, adjust, max).build();
    vec![
        Base::new("zwm_test.ko", real.clone(), Some(x86_noibt.clone())),
        Base::new("zwm_test.ko+sig", signed(&real), None),
        Base::new(
            "x86_64",
            f(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4),
            Some(x86_noibt),
        ),
        Base::new("i386", f(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0), None),
        Base::new(
            "ppc64le",
            f(
                Architecture::PowerPc64,
                Endianness::Little,
                2,
                "__patchable_function_entries",
                elf::R_PPC64_ADDR64,
                0,
                16,
            ),
            Some(ppc64_cfg.clone()),
        ),
        Base::new(
            "ppc64be",
            f(Architecture::PowerPc64, Endianness::Big, 2, "__patchable_function_entries", elf::R_PPC64_ADDR64, 0, 16),
            Some(ppc64_cfg),
        ),
        Base::new(
            "ppc32-pfe",
            f(Architecture::PowerPc, Endianness::Big, 0, "__patchable_function_entries", elf::R_PPC_ADDR32, 8, 16),
            None,
        ),
        Base::new(
            "ppc32-pg",
            f(Architecture::PowerPc, Endianness::Big, 0, "__mcount_loc", elf::R_PPC_ADDR32, 0, 8),
            None,
        ),
        Base::new(
            "ppc64-elfv1",
            f(Architecture::PowerPc64, Endianness::Big, 1, "__mcount_loc", elf::R_PPC64_ADDR64, 0, 16),
            None,
        ),
        // A module built by the earlier version of the series, with its
        // mcount= modinfo tag: no kernel reads it now, and the run leaves
        // .modinfo as it is.
        Base::new(
            "x86_64+mcount-tag",
            {
                let mut t =
                    standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
                t.modinfo = vec!["mcount=unchecked:--------:--------"];
                t.texts[1].ips.retain(|&ip| ip != 0);
                t.build()
            },
            Some(Options {
                kconfig: Some(Kconfig::parse("CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_X86_KERNEL_IBT=y\n")),
                ..Options::default()
            }),
        ),
        Base::new(
            "aarch64",
            f(Architecture::Aarch64, Endianness::Little, 0, "__patchable_function_entries", elf::R_AARCH64_ABS64, 0, 4),
            None,
        ),
        // An adjust-first kernel: the dead entries are dropped, not zeroed.
        Base::new("aarch64-drop", common::arm64_adjust_first(), None),
    ]
}

// ---------------------------------------------------------------------------
// Mutations.

fn get(data: &[u8], at: usize, width: usize, big: bool) -> u64 {
    let Some(b) = data.get(at..at + width) else { return 0 };
    zero_weak_mcount::elf::read_uint(b, big)
}

/// Write `value` as a `width`-byte field at `at`, if it is inside the file.
fn put(data: &mut [u8], at: usize, width: usize, value: u64, big: bool) {
    let Some(b) = data.get_mut(at..at + width) else { return };
    for (i, byte) in b.iter_mut().enumerate() {
        let shift = if big { 8 * (width - 1 - i) } else { 8 * i };
        *byte = (value >> shift) as u8;
    }
}

/// A value worth trying in a field that now holds `orig`.
fn interesting(rng: &mut Rng, orig: u64, file_len: usize, word: usize) -> u64 {
    let len = file_len as u64;
    match rng.below(24) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => u64::MAX - 7,
        4 => 1 << 60,
        5 => 1 << 63,
        6 => 0x7fff_ffff,
        7 => 0x8000_0000,
        8 => 0xffff_ffff,
        9 => 0xffff,
        10 => 0xff00,
        11 => len,
        12 => len.wrapping_sub(1),
        13 => len.wrapping_sub(word as u64),
        14 => orig.wrapping_add(1),
        15 => orig.wrapping_sub(1),
        16 => orig.wrapping_add(word as u64),
        17 => orig.wrapping_sub(word as u64),
        18 => orig.wrapping_mul(2),
        19 => orig / 2,
        20 => rng.next() % (len + 1),
        21 => rng.next() % 64,
        22 => orig ^ (1 << rng.below(64)),
        _ => rng.next(),
    }
}

/// Section-header fields: (name, offset in the header, width) for 64/32-bit.
fn sh_field(rng: &mut Rng, is_64: bool) -> (&'static str, usize, usize) {
    const F64: [(&str, usize, usize); 10] = [
        ("sh_name", 0, 4),
        ("sh_type", 4, 4),
        ("sh_flags", 8, 8),
        ("sh_addr", 16, 8),
        ("sh_offset", 24, 8),
        ("sh_size", 32, 8),
        ("sh_link", 40, 4),
        ("sh_info", 44, 4),
        ("sh_addralign", 48, 8),
        ("sh_entsize", 56, 8),
    ];
    const F32: [(&str, usize, usize); 10] = [
        ("sh_name", 0, 4),
        ("sh_type", 4, 4),
        ("sh_flags", 8, 4),
        ("sh_addr", 12, 4),
        ("sh_offset", 16, 4),
        ("sh_size", 20, 4),
        ("sh_link", 24, 4),
        ("sh_info", 28, 4),
        ("sh_addralign", 32, 4),
        ("sh_entsize", 36, 4),
    ];
    // The fields the brief names get twice the weight.
    let pick = [4, 5, 9, 6, 7, 4, 5, 9, 6, 7, 0, 1, 2, 3, 8];
    let i = pick[rng.below(pick.len())];
    if is_64 { F64[i] } else { F32[i] }
}

fn eh_field(rng: &mut Rng, is_64: bool) -> (&'static str, usize, usize) {
    const F64: [(&str, usize, usize); 11] = [
        ("EI_CLASS", 4, 1),
        ("EI_DATA", 5, 1),
        ("e_type", 16, 2),
        ("e_machine", 18, 2),
        ("e_shoff", 40, 8),
        ("e_flags", 48, 4),
        ("e_ehsize", 52, 2),
        ("e_shentsize", 58, 2),
        ("e_shnum", 60, 2),
        ("e_shstrndx", 62, 2),
        ("e_phnum", 56, 2),
    ];
    const F32: [(&str, usize, usize); 11] = [
        ("EI_CLASS", 4, 1),
        ("EI_DATA", 5, 1),
        ("e_type", 16, 2),
        ("e_machine", 18, 2),
        ("e_shoff", 32, 4),
        ("e_flags", 36, 4),
        ("e_ehsize", 40, 2),
        ("e_shentsize", 46, 2),
        ("e_shnum", 48, 2),
        ("e_shstrndx", 50, 2),
        ("e_phnum", 44, 2),
    ];
    let i = rng.below(11);
    if is_64 { F64[i] } else { F32[i] }
}

/// Pick a section, favouring the ones the tool reads or writes.
fn pick_section(rng: &mut Rng, b: &Base) -> usize {
    let favoured = match rng.below(8) {
        0 | 1 => b.find(|s| s.name == "__mcount_loc" || s.name == "__patchable_function_entries"),
        2 | 3 => b.find(|s| s.sh_type == elf::SHT_RELA || s.sh_type == elf::SHT_REL),
        4 => b.find(|s| s.sh_type == elf::SHT_SYMTAB),
        5 => b.find(|s| s.sh_type == elf::SHT_STRTAB),
        6 => b.find(|s| s.name == ".modinfo" || s.name.starts_with(".text") || s.name.contains("init")),
        _ => Vec::new(),
    };
    if favoured.is_empty() { rng.below(b.sections.len()) } else { favoured[rng.below(favoured.len())] }
}

/// One mutation of `data` (a copy of `b.data`, possibly already mutated),
/// described in `log`.
fn mutate_once(rng: &mut Rng, b: &Base, data: &mut Vec<u8>, log: &mut Vec<String>) {
    let len = data.len();
    let word = b.word();
    let big = b.big;
    match rng.below(20) {
        // Random bytes anywhere.
        0 | 1 => {
            for _ in 0..=rng.below(8) {
                let at = rng.below(len.max(1));
                if let Some(x) = data.get_mut(at) {
                    let v = if rng.chance(50) { 1u8 << rng.below(8) } else { rng.next() as u8 };
                    *x ^= v.max(1);
                    log.push(format!("byte {at:#x} ^= {v:#x}"));
                }
            }
        }
        // Random bytes inside the ELF header or the section header table.
        2 => {
            let (lo, hi) = if rng.chance(30) { (0, 64) } else { (b.shoff, b.shoff + b.shentsize * b.sections.len()) };
            let at = lo + rng.below(hi - lo);
            if let Some(x) = data.get_mut(at) {
                let v = (rng.next() as u8).max(1);
                *x ^= v;
                log.push(format!("header byte {at:#x} ^= {v:#x}"));
            }
        }
        // Truncation: anywhere, or at a section or table boundary.
        3 => {
            let to = match rng.below(3) {
                0 => rng.below(len),
                1 => {
                    let s = &b.sections[rng.below(b.sections.len())];
                    (if rng.chance(50) { s.offset } else { s.offset + s.size }).saturating_sub(rng.below(3)).min(len)
                }
                _ => (b.shoff + rng.below(b.shentsize * b.sections.len() + 1)).min(len),
            };
            data.truncate(to);
            log.push(format!("truncate to {to:#x}"));
        }
        // ELF header fields.
        4 | 5 => {
            let (name, at, width) = eh_field(rng, b.is_64);
            let orig = get(data, at, width, big);
            let v = interesting(rng, orig, len, word);
            put(data, at, width, v, big);
            log.push(format!("{name} = {v:#x}"));
        }
        // Section header fields.
        6..=10 => {
            let s = pick_section(rng, b);
            let (name, off, width) = sh_field(rng, b.is_64);
            let at = b.sections[s].header + off;
            let orig = get(data, at, width, big);
            let v = match name {
                // Point at another (real) section index.
                "sh_link" | "sh_info" if rng.chance(50) => rng.below(b.sections.len() + 2) as u64,
                "sh_type" if rng.chance(60) => u64::from(
                    [
                        elf::SHT_NULL,
                        elf::SHT_PROGBITS,
                        elf::SHT_SYMTAB,
                        elf::SHT_STRTAB,
                        elf::SHT_RELA,
                        elf::SHT_REL,
                        elf::SHT_NOBITS,
                        elf::SHT_DYNSYM,
                        elf::SHT_SYMTAB_SHNDX,
                    ][rng.below(9)],
                ),
                "sh_flags" if rng.chance(60) => {
                    orig ^ u64::from(
                        [elf::SHF_ALLOC, elf::SHF_EXECINSTR, elf::SHF_WRITE, elf::SHF_ALLOC | elf::SHF_EXECINSTR]
                            [rng.below(4)],
                    )
                }
                // Overlap another section.
                "sh_offset" if rng.chance(40) => {
                    let o = &b.sections[rng.below(b.sections.len())];
                    (o.offset + rng.below(o.size.max(1))) as u64
                }
                _ => interesting(rng, orig, len, word),
            };
            put(data, at, width, v, big);
            log.push(format!("section {s} ({}) {name} = {v:#x}", b.sections[s].name));
        }
        // An empty section placed anywhere, even past the end of the file.
        11 => {
            let s = pick_section(rng, b);
            let h = b.sections[s].header;
            let (off, size, width) = if b.is_64 { (24, 32, 8) } else { (16, 20, 4) };
            let where_ = interesting(rng, b.sections[s].offset as u64, len, word);
            put(data, h + size, width, 0, big);
            put(data, h + off, width, where_, big);
            log.push(format!("section {s} ({}) emptied, sh_offset = {where_:#x}", b.sections[s].name));
        }
        // Symbol fields: string offsets, section indices, values, types.
        12 | 13 => {
            let tabs = b.find(|s| s.sh_type == elf::SHT_SYMTAB && s.entsize > 0);
            let Some(&t) = tabs.first() else { return };
            let tab = &b.sections[t];
            let count = tab.size / tab.entsize;
            let i = if rng.chance(20) { rng.below(3.min(count)) } else { rng.below(count) };
            let sym = tab.offset + i * tab.entsize;
            // (field, offset, width) for 64- and 32-bit symbols.
            let fields: [(&str, usize, usize); 5] = if b.is_64 {
                [("st_name", 0, 4), ("st_info", 4, 1), ("st_shndx", 6, 2), ("st_value", 8, 8), ("st_size", 16, 8)]
            } else {
                [("st_name", 0, 4), ("st_info", 12, 1), ("st_shndx", 14, 2), ("st_value", 4, 4), ("st_size", 8, 4)]
            };
            let (name, off, width) = fields[[0, 0, 1, 2, 2, 3, 3, 4][rng.below(8)]];
            let orig = get(data, sym + off, width, big);
            let v = match name {
                "st_shndx" if rng.chance(60) => [
                    0,
                    rng.below(b.sections.len() + 2) as u64,
                    u64::from(elf::SHN_ABS),
                    u64::from(elf::SHN_COMMON),
                    u64::from(elf::SHN_XINDEX),
                    u64::from(elf::SHN_LORESERVE),
                ][rng.below(6)],
                "st_info" if rng.chance(60) => {
                    let bind = [elf::STB_LOCAL, elf::STB_GLOBAL, elf::STB_WEAK][rng.below(3)];
                    let ty = [elf::STT_NOTYPE, elf::STT_FUNC, elf::STT_SECTION, elf::STT_FILE, elf::STT_OBJECT]
                        [rng.below(5)];
                    u64::from(bind << 4 | ty)
                }
                // A string offset at, near or past the end of the string table.
                "st_name" if rng.chance(60) => {
                    let strtab = b.sections.get(tab_link(b, t)).map_or(0, |s| s.size as u64);
                    [strtab, strtab - 1, strtab + 1, strtab.saturating_sub(2), orig + 1][rng.below(5)]
                }
                _ => interesting(rng, orig, len, word),
            };
            put(data, sym + off, width, v, big);
            log.push(format!("symbol {i} {name} = {v:#x}"));
        }
        // Relocation fields: r_offset, symbol index, type, addend.
        14..=16 => {
            let rels = b.find(|s| (s.sh_type == elf::SHT_RELA || s.sh_type == elf::SHT_REL) && s.entsize > 0);
            if rels.is_empty() {
                return;
            }
            let r = rels[rng.below(rels.len())];
            let sec = &b.sections[r];
            let count = sec.size / sec.entsize;
            if count == 0 {
                return;
            }
            let i = rng.below(count);
            let at = sec.offset + i * sec.entsize;
            let rela = sec.sh_type == elf::SHT_RELA;
            match rng.below(4) {
                0 => {
                    let orig = get(data, at, word, big);
                    let v = interesting(rng, orig, len, word);
                    put(data, at, word, v, big);
                    log.push(format!("reloc {i} of {} r_offset = {v:#x}", sec.name));
                }
                1 | 2 => {
                    let info = get(data, at + word, word, big);
                    let to_sym = rng.chance(60);
                    let v = if rng.chance(50) { rng.below(64) as u64 } else { interesting(rng, 0, len, word) };
                    let new = match (b.is_64, to_sym) {
                        (true, true) => (info & 0xffff_ffff) | (v << 32),
                        (true, false) => (info & !0xffff_ffff) | (v & 0xffff_ffff),
                        (false, true) => (info & 0xff) | (v << 8),
                        (false, false) => (info & !0xff) | (v & 0xff),
                    };
                    put(data, at + word, word, new, big);
                    log.push(format!("reloc {i} of {} {} = {v:#x}", sec.name, if to_sym { "r_sym" } else { "r_type" }));
                }
                _ => {
                    let at = if rela { at + 2 * word } else { at };
                    let orig = get(data, at, word, big);
                    let v = interesting(rng, orig, len, word);
                    put(data, at, word, v, big);
                    log.push(format!(
                        "reloc {i} of {} {} = {v:#x}",
                        sec.name,
                        if rela { "r_addend" } else { "r_offset" }
                    ));
                }
            }
        }
        // String tables: no final NUL, or garbage where names are.
        17 => {
            let tabs = b.find(|s| s.sh_type == elf::SHT_STRTAB && s.size > 0);
            let Some(&t) = tabs.get(rng.below(tabs.len())) else { return };
            let s = &b.sections[t];
            let at = if rng.chance(50) { s.offset + s.size - 1 } else { s.offset + rng.below(s.size) };
            if let Some(x) = data.get_mut(at) {
                *x = if rng.chance(70) { b'A' } else { 0 };
                log.push(format!("{} byte {:#x} = {:#x}", s.name, at - s.offset, *x));
            }
        }
        // Callsite words: non-zero under RELA, other addends under REL.
        18 => {
            let cs = b.find(|s| s.name == "__mcount_loc" || s.name == "__patchable_function_entries");
            let Some(&c) = cs.first() else { return };
            let s = &b.sections[c];
            if s.size < word {
                return;
            }
            let at = s.offset + rng.below(s.size / word) * word;
            let v = interesting(rng, get(data, at, word, big), len, word);
            put(data, at, word, v, big);
            log.push(format!("callsite word at {:#x} = {v:#x}", at - s.offset));
        }
        // The signature trailer, where there is one.
        _ => {
            if b.image_len == b.data.len() || data.len() != b.data.len() {
                // No signature: append a marker after a random prefix.
                let mut tail = signature::MARKER.to_vec();
                if rng.chance(50) {
                    tail.splice(0..0, [0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, rng.next() as u8]);
                }
                data.extend_from_slice(&tail);
                log.push(format!("appended {} bytes of signature trailer", tail.len()));
            } else if rng.chance(25) {
                // Signed twice: a second signature, well-formed or not.
                let id_type = if rng.chance(50) { 2 } else { rng.next() as u8 };
                let sig_len = if rng.chance(70) { 6 } else { rng.below(64) as u32 };
                data.extend_from_slice(&[0x30, 0x82, 0x01, 0x02, 0xaa, 0xbb]);
                data.extend_from_slice(&[0, 0, id_type, 0, 0, 0, 0, 0]);
                data.extend_from_slice(&sig_len.to_be_bytes());
                data.extend_from_slice(signature::MARKER);
                log.push(format!("second signature, type {id_type}, length {sig_len}"));
            } else {
                let info = data.len() - signature::MARKER.len() - 12;
                match rng.below(3) {
                    0 => {
                        let v = interesting(rng, get(data, info + 8, 4, true), len, 4) as u32;
                        data[info + 8..info + 12].copy_from_slice(&v.to_be_bytes());
                        log.push(format!("sig_len = {v:#x}"));
                    }
                    1 => {
                        data[info + 2] = rng.next() as u8;
                        log.push(format!("id_type = {:#x}", data[info + 2]));
                    }
                    _ => {
                        let at = data.len() - 1 - rng.below(signature::MARKER.len());
                        data[at] ^= 0x20;
                        log.push(format!("marker byte {at:#x} flipped"));
                    }
                }
            }
        }
    }
}

fn tab_link(b: &Base, symtab: usize) -> usize {
    let link_off = if b.is_64 { 40 } else { 24 };
    get(&b.data, b.sections[symtab].header + link_off, 4, b.big) as usize
}

// ---------------------------------------------------------------------------
// The checks.

/// What the library said about one case, for the CLI sample.
enum Verdict {
    Refused,
    Output(Vec<u8>),
}

/// Run the library on `data`; `Err` describes a broken promise.
fn check_case(data: &[u8], opts: &Options) -> Result<Verdict, String> {
    let result = catch_unwind(AssertUnwindSafe(|| analyze(data, opts)))
        .map_err(|p| format!("analyze panicked: {}", panic_text(&p)))?;
    let analysis = match result {
        Err(_) => return Ok(Verdict::Refused),
        Ok(a) => a,
    };
    let out = catch_unwind(AssertUnwindSafe(|| analysis.plan.apply_to(data)))
        .map_err(|p| format!("apply_to panicked: {}", panic_text(&p)))?;
    if analysis.plan.is_empty() {
        return if out == data { Ok(Verdict::Output(out)) } else { Err("an empty plan changed the bytes".into()) };
    }
    // The image the library edited: the file, less a dropped signature.
    let image_len = match analysis.plan.truncate {
        Some(t) => {
            if opts.signed != SignedPolicy::Strip {
                return Err("truncated without --signed=strip".into());
            }
            let sig = signature::image_len(data).ok().flatten();
            if sig != Some(t as usize) {
                return Err(format!("truncated to {t:#x}, but the signatures end at {sig:?}"));
            }
            t as usize
        }
        None => data.len(),
    };
    if out.len() != image_len {
        return Err(format!("output is {:#x} bytes, expected {image_len:#x}", out.len()));
    }
    let image = &data[..image_len];
    let ranges = catch_unwind(AssertUnwindSafe(|| allowed_ranges(image)))
        .map_err(|p| format!("parse_info of an accepted input failed: {}", panic_text(&p)))?;
    for (i, (x, y)) in image.iter().zip(&out).enumerate() {
        if x != y && !ranges.iter().any(|&(s, e)| (s..e).contains(&(i as u64))) {
            return Err(format!(
                "byte {i:#x} changed outside the callsite table, its relocations, sh_size and the tag"
            ));
        }
    }
    if parse_info(&out).is_err() {
        return Err("the output does not parse".into());
    }
    if let (Ok(_), Err(e)) = (object::File::parse(image), object::File::parse(&*out)) {
        return Err(format!("object parsed the input but not the output: {e}"));
    }
    let again = catch_unwind(AssertUnwindSafe(|| analyze(&out, opts)))
        .map_err(|p| format!("second analyze panicked: {}", panic_text(&p)))?;
    match again {
        Ok(a) if a.plan.is_empty() => Ok(Verdict::Output(out)),
        Ok(a) => Err(format!("second run is not a no-op: {:?}", a.plan)),
        Err(e) => Err(format!("second run refused the output: {e}")),
    }
}

/// The length of `data` without every appended signature, if it has one.
fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(std::string::ToString::to_string))
        .unwrap_or_else(|| "?".into())
}

/// One example of each kind of failure (the text up to "; mutations",
/// less the case header and digits), with its count.
fn by_kind(failures: &[String]) -> String {
    let mut kinds: Vec<(String, usize, &String)> = Vec::new();
    for f in failures {
        let what = f.split_once("): ").map_or(f.as_str(), |x| x.1);
        let what = what.split("; mutations").next().unwrap_or(what);
        let key: String = what.chars().filter(|c| !c.is_ascii_hexdigit()).collect();
        match kinds.iter_mut().find(|k| k.0 == key) {
            Some(k) => k.1 += 1,
            None => kinds.push((key, 1, f)),
        }
    }
    kinds.iter().map(|(_, n, f)| format!("{n:6} x {f}")).collect::<Vec<_>>().join("\n")
}

/// The binary on a file holding `data`: refused leaves it byte-identical,
/// accepted leaves exactly the library's output.
fn check_cli(dir: &Scratch, case: usize, data: &[u8], strip: bool, expected: &Verdict) -> Result<(), String> {
    let path = dir.0.join(format!("case{case}.ko"));
    fs::write(&path, data).unwrap();
    let mut cmd = Command::new(BIN);
    // As analyze does: a compressed file (a mutated magic) is an error.
    cmd.arg("--compressed=error");
    if strip {
        cmd.arg("--signed=strip");
    }
    let out = cmd.arg(&path).output().unwrap();
    let after = fs::read(&path).unwrap();
    fs::remove_file(&path).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    match expected {
        Verdict::Refused => {
            if out.status.code() != Some(1) || !err.contains(": error: ") {
                return Err(format!("CLI: expected a refusal, got {:?}: {err}", out.status));
            }
            if after != data {
                return Err("CLI: a refused file was changed".into());
            }
        }
        Verdict::Output(bytes) => {
            if !out.status.success() {
                return Err(format!("CLI: expected success, got {:?}: {err}", out.status));
            }
            if after != *bytes {
                return Err("CLI: the file differs from the library's output".into());
            }
        }
    }
    Ok(())
}

#[test]
fn mutation_campaign() {
    let bases = bases();
    let dir = Scratch::new("cli");
    let mut rng = Rng::new(SEED);
    let default = Options::default();
    let strip = Options { signed: SignedPolicy::Strip, ..Options::default() };
    let (mut refused, mut accepted, mut changed, mut cli_runs) = (0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for case in 0..CASES {
        let b = &bases[case % bases.len()];
        let mut data = b.data.clone();
        let mut log = Vec::new();
        let n = match rng.below(10) {
            0..=5 => 1,
            6..=8 => 2,
            _ => 3 + rng.below(3),
        };
        for _ in 0..n {
            mutate_once(&mut rng, b, &mut data, &mut log);
        }
        let mut options: Vec<(&str, &Options)> = vec![("default", &default), ("strip", &strip)];
        if let Some(extra) = &b.extra {
            options.push(("kconfig", extra));
        }
        for (label, opts) in &options {
            match check_case(&data, opts) {
                Err(why) => {
                    failures.push(format!("case {case} ({}, {label}): {why}; mutations: {}", b.name, log.join("; ")));
                }
                Ok(v) => {
                    match &v {
                        Verdict::Refused => refused += 1,
                        Verdict::Output(o) => {
                            accepted += 1;
                            if *o != data {
                                changed += 1;
                            }
                        }
                    }
                    let is_strip = *label == "strip";
                    let sample =
                        case % CLI_EVERY == 0 && (*label == "default" || (is_strip && case % (2 * CLI_EVERY) == 0));
                    if sample {
                        cli_runs += 1;
                        if let Err(why) = check_cli(&dir, case, &data, is_strip, &v) {
                            failures.push(format!(
                                "case {case} ({}, {label}): {why}; mutations: {}",
                                b.name,
                                log.join("; ")
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "mutation campaign: {CASES} cases over {} bases, {} library runs: {refused} refused, {accepted} accepted \
         ({changed} of them changed the bytes); {cli_runs} CLI runs",
        bases.len(),
        refused + accepted + failures.len()
    );
    assert!(failures.is_empty(), "{} failures; one of each kind:\n{}", failures.len(), by_kind(&failures));
    // The campaign must exercise both outcomes, not just refusals.
    assert!(refused > CASES / 10 && changed > CASES / 10, "refused {refused}, changed {changed}");
}

// ---------------------------------------------------------------------------
// Regression tests: each a defect the campaign, a review or a fuzz target found.

/// Set field `off` (width `width`) of section `name`'s header.
fn set_section_field(data: &mut [u8], name: &str, off64: usize, off32: usize, value: u64) {
    let info = parse_info(data).unwrap();
    let i = info.sections.iter().position(|s| s.name == name).unwrap();
    let header = info.shoff as usize + i * info.shentsize as usize;
    let (off, width) = if info.is_64 { (off64, 8) } else { (off32, 4) };
    put(data, header + off, width, value, info.big_endian);
}

fn set_offset(data: &mut [u8], name: &str, value: u64) {
    set_section_field(data, name, 24, 16, value);
}

fn set_size(data: &mut [u8], name: &str, value: u64) {
    set_section_field(data, name, 32, 20, value);
}

fn no_panic(data: &[u8], opts: &Options) -> Result<(), String> {
    check_case(data, opts).map(|_| ())
}

/// Found by the campaign: an empty callsite or relocation section whose
/// `sh_offset` lies past the end of the file made `extract` slice out of
/// bounds (`parse_info` only checks sections that have bytes).
#[test]
fn an_empty_callsite_or_relocation_section_past_the_end_of_the_file() {
    let x86 = || standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4).build();
    let i386 = || standard(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0).build();
    for (build, rel) in [(&x86 as &dyn Fn() -> Vec<u8>, ".rela__mcount_loc"), (&i386, ".rel__mcount_loc")] {
        for section in ["__mcount_loc", rel] {
            for offset in [u64::MAX, u64::MAX - 7, 1 << 60, 0x7fff_ffff, 0xffff] {
                let mut data = build();
                set_size(&mut data, section, 0);
                set_offset(&mut data, section, offset);
                no_panic(&data, &Options::default()).unwrap_or_else(|e| panic!("{section} at {offset:#x}: {e}"));
            }
        }
    }
}

/// Found by the campaign: `sh_offset + sh_size` overflowed (a debug-build
/// panic in `Section::file_range`) before `parse_info` checked the range.
#[test]
fn a_section_offset_near_the_top_of_the_address_space() {
    for section in ["__mcount_loc", ".rela__mcount_loc", ".text", ".symtab"] {
        for offset in [u64::MAX, u64::MAX - 7, u64::MAX - 0x100] {
            let mut data = fs::read(MODULE).unwrap();
            set_offset(&mut data, section, offset);
            let e = analyze(&data, &Options::default())
                .err()
                .unwrap_or_else(|| panic!("{section} at {offset:#x} accepted"));
            assert!(e.to_string().contains("runs past the end of the file"), "{section}: {e}");
        }
    }
}

/// Found while reviewing what the campaign cannot reach (four coordinated
/// mutations): a callsite into an executable `SHT_NOBITS` section of size
/// near 2^64, with a symbol value and addend that add up to just below
/// 2^64, made the ppc64 adjust (`+8` with `DYNAMIC_FTRACE_WITH_CALL_OPS`)
/// overflow: a panic in debug builds, a wrapped record ip in release.
/// Such targets are now kept as doubtful: code has bytes in the file.
#[test]
fn a_callsite_into_a_huge_nobits_text_section() {
    let mut data = standard(
        Architecture::PowerPc64,
        Endianness::Little,
        2,
        "__patchable_function_entries",
        elf::R_PPC64_ADDR64,
        0,
        16,
    )
    .build();
    let info = parse_info(&data).unwrap();
    let text = info.sections.iter().position(|s| s.name == ".text").unwrap();
    set_section_field(&mut data, ".text", 32, 20, u64::MAX); // sh_size
    put(&mut data, info.shoff as usize + text * 64 + 4, 4, elf::SHT_NOBITS.into(), false); // sh_type
    // The .text section symbol (what the relocations refer to) moves to 2^63-1 ...
    let symtab = info.sections.iter().find(|s| s.sh_type == elf::SHT_SYMTAB).unwrap();
    for sym in (symtab.offset..symtab.offset + symtab.size).step_by(24) {
        let sym = sym as usize;
        if get(&data, sym + 6, 2, false) == text as u64 && data[sym + 4] & 0xf == elf::STT_SECTION {
            put(&mut data, sym + 8, 8, i64::MAX as u64, false);
        }
    }
    // ... and the first relocation's addend is 2^63-1 too: offset 2^64-2.
    let rela = info.sections.iter().find(|s| s.name == ".rela__patchable_function_entries").unwrap();
    put(&mut data, rela.offset as usize + 16, 8, i64::MAX as u64, false);
    let opts = Options {
        verbose: true,
        kconfig: Some(Kconfig::parse(
            "CONFIG_PPC64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
             CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y\n",
        )),
        ..Options::default()
    };
    no_panic(&data, &opts).unwrap();
    let a = analyze(&data, &opts).unwrap();
    assert!(a.details().iter().any(|d| d.contains("has no bytes in the file (SHT_NOBITS)")), "{:#?}", a.details());
}

/// Found by the `apply` fuzz target (fuzz/artifacts/apply/crash-6837c87d…,
/// after about 1.15 million runs): a module with two appended signatures.
/// `--signed=strip` dropped only the outer one, so the output still ended
/// in a signature: the second run was not a no-op (it dropped the stale
/// inner one) or, with a malformed inner one, refused the output. Now
/// every signature is dropped, and a malformed inner one is refused.
#[test]
fn a_module_signed_twice() {
    let elf = standard(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0).build();
    let expected = analyze(&elf, &Options::default()).unwrap().plan.apply_to(&elf);
    let strip = Options { signed: SignedPolicy::Strip, ..Options::default() };
    let twice = signed(&signed(&elf));
    let a = analyze(&twice, &strip).unwrap();
    let out = a.plan.apply_to(&twice);
    assert_eq!(out, expected, "both signatures dropped, the module processed");
    assert!(analyze(&out, &strip).unwrap().plan.is_empty());
    no_panic(&twice, &strip).unwrap();
    assert!(matches!(analyze(&twice, &Options::default()), Err(zero_weak_mcount::Error::Signed)));

    // The inner signature malformed (type 0, as in the fuzz crash): refused.
    let mut bad = signed(&elf);
    let info = bad.len() - signature::MARKER.len() - 12;
    bad[info + 2] = 0;
    let bad = signed(&bad);
    let e = analyze(&bad, &strip).expect_err("a malformed inner signature is refused");
    assert!(e.to_string().contains("not PKCS#7"), "{e}");
    no_panic(&bad, &strip).unwrap();
}

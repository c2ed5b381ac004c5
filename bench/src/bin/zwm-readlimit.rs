// SPDX-License-Identifier: GPL-2.0-only
//! Baseline "read limit": touch exactly the bytes zero-weak-mcount must read
//! to decide a module, and nothing else: the ELF header, the section header
//! table, `.shstrtab`, the symbol table and its string table, the callsite
//! section (`__mcount_loc`) and its relocation section, `.modinfo`, and the
//! last 40 bytes (signature trailer check). ELF64 little-endian only.
//!
//! usage: zwm-readlimit [-v] [--pread] [--text] FILE...
//!   default   mmap the file and read one byte per 4 KiB page of each range
//!   --pread   read the ranges with pread(2) into a buffer instead
//!   --text    also touch the page of every callsite's target in its text
//!             section (what reading the code at every callsite would add)
//!   -v        print, per file, the bytes and pages of the ranges
#![allow(
    clippy::cast_possible_truncation,
    reason = "a baseline kept minimal: offsets within the file it mapped, on a 64-bit host"
)]

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;

const PAGE: u64 = 4096;

fn u16le(d: &[u8], o: u64) -> u64 {
    u64::from(u16::from_le_bytes(d[o as usize..o as usize + 2].try_into().unwrap()))
}
fn u32le(d: &[u8], o: u64) -> u64 {
    u64::from(u32::from_le_bytes(d[o as usize..o as usize + 4].try_into().unwrap()))
}
fn u64le(d: &[u8], o: u64) -> u64 {
    u64::from_le_bytes(d[o as usize..o as usize + 8].try_into().unwrap())
}

struct Sh {
    name: u64,
    ty: u64,
    flags: u64,
    offset: u64,
    size: u64,
    link: u64,
    info: u64,
}

/// A reader over either the mapping (touching pages) or the file (pread).
trait Src<'a> {
    /// Bytes that are parsed: borrowed from the mapping, or read.
    fn get(&mut self, a: u64, b: u64) -> Cow<'a, [u8]>;
    /// Bytes the tool reads in bulk: one byte per page touched, or read.
    fn touch(&mut self, a: u64, b: u64);
}

struct Mapped<'a>(&'a [u8], u64);
impl<'a> Src<'a> for Mapped<'a> {
    fn get(&mut self, a: u64, b: u64) -> Cow<'a, [u8]> {
        Cow::Borrowed(&self.0[a as usize..b as usize])
    }
    fn touch(&mut self, a: u64, b: u64) {
        let mut p = a;
        while p < b {
            // SAFETY: p < b <= len.
            self.1 =
                self.1.wrapping_add(u64::from(unsafe { std::ptr::read_volatile(self.0.as_ptr().add(p as usize)) }));
            p = (p / PAGE + 1) * PAGE;
        }
    }
}

struct Preader<'f>(&'f File, Vec<u8>);
impl<'a> Src<'a> for Preader<'_> {
    fn get(&mut self, a: u64, b: u64) -> Cow<'a, [u8]> {
        let mut v = vec![0; (b - a) as usize];
        self.0.read_exact_at(&mut v, a).expect("pread");
        Cow::Owned(v)
    }
    fn touch(&mut self, a: u64, b: u64) {
        self.1.resize((b - a) as usize, 0);
        self.0.read_exact_at(&mut self.1, a).expect("pread");
    }
}

/// Returns (bytes, pages) of the ranges read.
fn run(src: &mut dyn Src<'_>, len: u64, text: bool) -> Result<(u64, u64), String> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let add = |r: &mut Vec<(u64, u64)>, a: u64, b: u64| r.push((a, b.min(len)));
    let eh = src.get(0, 64);
    if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return Err("not ELF64 LE".into());
    }
    add(&mut ranges, 0, 64);
    let tail = len.saturating_sub(40);
    src.touch(tail, len);
    add(&mut ranges, tail, len);
    let shoff = u64le(&eh, 0x28);
    let shnum = u16le(&eh, 0x3c);
    let shstrndx = u16le(&eh, 0x3e);
    let sht = src.get(shoff, shoff + shnum * 64);
    add(&mut ranges, shoff, shoff + shnum * 64);
    let sh: Vec<Sh> = (0..shnum)
        .map(|i| {
            let o = i * 64;
            Sh {
                name: u32le(&sht, o),
                ty: u32le(&sht, o + 4),
                flags: u64le(&sht, o + 8),
                offset: u64le(&sht, o + 24),
                size: u64le(&sht, o + 32),
                link: u32le(&sht, o + 40),
                info: u32le(&sht, o + 44),
            }
        })
        .collect();
    let range = |s: &Sh| (s.offset, s.offset + if s.ty == 8 { 0 } else { s.size });
    let (a, b) = range(&sh[shstrndx as usize]);
    let shstr = src.get(a, b);
    add(&mut ranges, a, b);
    let name = |s: &Sh| {
        let n = &shstr[s.name as usize..];
        &n[..n.iter().position(|&c| c == 0).unwrap_or(n.len())]
    };
    let find = |pred: &dyn Fn(usize, &Sh) -> bool| sh.iter().enumerate().position(|(i, s)| pred(i, s));
    let mcount = find(&|_, s| s.flags & 2 != 0 && name(s) == b"__mcount_loc");
    let modinfo = find(&|_, s| name(s) == b".modinfo");
    if let Some(m) = modinfo {
        let (a, b) = range(&sh[m]);
        src.touch(a, b);
        add(&mut ranges, a, b);
    }
    if let Some(m) = mcount {
        let (a, b) = range(&sh[m]);
        src.touch(a, b);
        add(&mut ranges, a, b);
        if let Some(r) = find(&|_, s| (s.ty == 4 || s.ty == 9) && s.info as usize == m) {
            let (a, b) = range(&sh[r]);
            src.touch(a, b);
            add(&mut ranges, a, b);
            let st = &sh[sh[r].link as usize];
            let (sa, sb) = range(st);
            src.touch(sa, sb);
            add(&mut ranges, sa, sb);
            let (ta, tb) = range(&sh[st.link as usize]);
            src.touch(ta, tb);
            add(&mut ranges, ta, tb);
            if text {
                let rela = src.get(a, b);
                let symtab = src.get(sa, sb);
                // The 8 bytes at each callsite's target, as the tool reads
                // them today (arch::Rule::input).
                for rel in rela.chunks_exact(24) {
                    let info = u64le(rel, 8);
                    let addend = u64le(rel, 16);
                    let sym = (info >> 32) * 24;
                    if sym as usize + 24 > symtab.len() {
                        continue;
                    }
                    let shndx = u16le(&symtab, sym + 6) as usize;
                    let value = u64le(&symtab, sym + 8);
                    if let Some(t) = sh.get(shndx) {
                        let at = t.offset.wrapping_add(value).wrapping_add(addend);
                        if at + 8 <= len {
                            src.touch(at, at + 8);
                            add(&mut ranges, at, at + 8);
                        }
                    }
                }
            }
        }
    }
    let bytes = ranges.iter().map(|(a, b)| b - a).sum();
    let mut pages: Vec<u64> = ranges.iter().flat_map(|&(a, b)| (a / PAGE)..=((b.max(a + 1) - 1) / PAGE)).collect();
    pages.sort_unstable();
    pages.dedup();
    Ok((bytes, pages.len() as u64))
}

fn main() -> ExitCode {
    let mut verbose = false;
    let mut pread = false;
    let mut text = false;
    let mut failed = false;
    let mut sink = 0u64;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "-v" => verbose = true,
            "--pread" => pread = true,
            "--text" => text = true,
            path => {
                let result = (|| -> Result<(u64, u64), String> {
                    let file = File::open(path).map_err(|e| e.to_string())?;
                    let len = file.metadata().map_err(|e| e.to_string())?.len();
                    if pread {
                        run(&mut Preader(&file, Vec::new()), len, text)
                    } else {
                        // SAFETY: private scratch copies, never truncated while mapped.
                        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
                        let mut m = Mapped(&map, 0);
                        let r = run(&mut m, len, text);
                        sink = sink.wrapping_add(m.1);
                        r
                    }
                })();
                match result {
                    Ok((bytes, pages)) if verbose => println!("{path}\t{bytes}\t{pages}"),
                    Ok(_) => {}
                    Err(e) => {
                        failed = true;
                        eprintln!("zwm-readlimit: {path}: {e}");
                    }
                }
            }
        }
    }
    std::hint::black_box(sink);
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

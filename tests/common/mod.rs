// SPDX-License-Identifier: GPL-2.0-only
//! Synthetic kernel modules written with `object::write`, and an independent
//! reader (object's generic `read` API, not our ELF layer) to check results.
#![allow(dead_code)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use object::write::{Object, Relocation, SectionId, Symbol, SymbolId, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, FileFlags, Object as _, ObjectSection as _, ObjectSymbol as _,
    RelocationFlags, RelocationTarget, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

pub mod ranges;

/// The tool under test. (`fuzz/examples/seeds.rs` includes this file too,
/// from a crate that has no such binary.)
pub const BIN: &str = match option_env!("CARGO_BIN_EXE_zero-weak-mcount") {
    Some(bin) => bin,
    None => "zero-weak-mcount",
};
/// A real module built by `scripts/build-testdata.sh`.
pub const MODULE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/zwm_test.ko");

pub fn module() -> Vec<u8> {
    fs::read(MODULE).unwrap()
}

/// Run the tool with `args`, waiting for it.
pub fn tool<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under DIR, Python's bytecode caches left out.
pub fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_none_or(|n| n != "__pycache__") {
                files_under(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

/// The harness's files in the tree at ROOT (scripts/, dist/,
/// bench/kernel-pass/ and the autopkgtests, those it has), sorted: what
/// the scans of `tests/scripts.rs` and `tests/harness_reads_json.rs` read.
pub fn harness_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["scripts", "dist", "bench/kernel-pass", "debian/tests"] {
        if root.join(dir).is_dir() {
            files_under(&root.join(dir), &mut files);
        }
    }
    files.sort();
    files
}

pub const VERMAGIC: &str = "7.2.0 SMP preempt mod_unload modversions";
/// A powerpc kernel built with patchable entries says so in every module's
/// vermagic (arch/powerpc/include/asm/vermagic.h).
pub const VERMAGIC_PPC_PATCHABLE: &str = "7.2.0 SMP preempt mod_unload modversions patchable-function-entry";

/// One text section of a fixture: its size, its named symbols and the
/// record ips of its callsite entries (the location is `ip - adjust`).
pub struct Text {
    pub name: &'static str,
    pub size: u64,
    pub symbols: Vec<(&'static str, u64)>,
    pub ips: Vec<u64>,
}

pub struct Fixture {
    pub arch: Architecture,
    pub endian: Endianness,
    pub e_flags: u32,
    pub callsite: &'static str,
    pub abs_type: u32,
    /// What `ftrace_call_adjust()` adds on this arch and config.
    pub adjust: u64,
    pub vermagic: &'static str,
    /// More `.modinfo` strings after `vermagic=`.
    pub modinfo: Vec<&'static str>,
    pub texts: Vec<Text>,
    /// `st_size` of every function symbol: long enough that a record at
    /// most the max offset past a symbol is inside its function.
    pub function_size: u64,
}

impl Fixture {
    pub fn word(&self) -> u64 {
        if self.arch.address_size().unwrap().bytes() == 8 { 8 } else { 4 }
    }

    pub fn build(&self) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, self.arch, self.endian);
        obj.flags = FileFlags::Elf { os_abi: 0, abi_version: 0, e_flags: self.e_flags };
        obj.add_file_symbol(b"fixture.c".to_vec());
        let mut texts: Vec<SectionId> = Vec::new();
        for t in &self.texts {
            let id = obj.add_section(Vec::new(), t.name.as_bytes().to_vec(), SectionKind::Text);
            // A recognisable, non-zero filler (ppc nop) so no accidental
            // instruction pattern appears. x86_64 fixtures are IBT builds,
            // as distributions' x86_64 kernels are: their code holds endbr64,
            // which is what the tool reads IBT from without a config.
            let pattern: [u8; 4] =
                if self.arch == Architecture::X86_64 { [0xf3, 0x0f, 0x1e, 0xfa] } else { [0x60, 0, 0, 0] };
            let filler: Vec<u8> = pattern.iter().copied().cycle().take(t.size as usize).collect();
            obj.set_section_data(id, filler, 16);
            for &(name, value) in &t.symbols {
                add_function(&mut obj, id, name.as_bytes(), value, self.function_size, SymbolScope::Compilation);
            }
            texts.push(id);
        }
        let word = self.word();
        let count: usize = self.texts.iter().map(|t| t.ips.len()).sum();
        let cs = obj.add_section(Vec::new(), self.callsite.as_bytes().to_vec(), SectionKind::ReadOnlyData);
        obj.set_section_data(cs, vec![0u8; count * word as usize], 1);
        let mut slot = 0u64;
        for (t, &id) in self.texts.iter().zip(&texts) {
            let sym = obj.section_symbol(id);
            add_callsites(
                &mut obj,
                cs,
                slot,
                word,
                sym,
                self.abs_type,
                t.ips.iter().map(|&ip| (ip - self.adjust) as i64),
            );
            slot += t.ips.len() as u64;
        }
        add_modinfo(&mut obj, self.vermagic, &self.modinfo);
        obj.write().unwrap()
    }
}

/// Relocate the words of callsite table `table`, from word `first` on, to
/// `symbol + addend` for each addend (RELA, so the words stay zero).
pub fn add_callsites(
    obj: &mut Object<'_>,
    table: SectionId,
    first: u64,
    word: u64,
    symbol: SymbolId,
    r_type: u32,
    addends: impl IntoIterator<Item = i64>,
) {
    for (i, addend) in addends.into_iter().enumerate() {
        let offset = (first + i as u64) * word;
        let flags = RelocationFlags::Elf { r_type };
        obj.add_relocation(table, Relocation { offset, symbol, addend, flags }).unwrap();
    }
}

/// `.modinfo` as modpost leaves it: `license=GPL`, `vermagic=`, then `extra`.
pub fn add_modinfo(obj: &mut Object<'_>, vermagic: &str, extra: &[&str]) -> SectionId {
    let id = obj.add_section(Vec::new(), b".modinfo".to_vec(), SectionKind::ReadOnlyData);
    let mut info = format!("license=GPL\0vermagic={vermagic}\0");
    for tag in extra {
        info.push_str(tag);
        info.push('\0');
    }
    obj.set_section_data(id, info.into_bytes(), 1);
    id
}

/// Define a function symbol `name` at `value` in text section `section`.
pub fn add_function(obj: &mut Object<'_>, section: SectionId, name: &[u8], value: u64, size: u64, scope: SymbolScope) {
    obj.add_symbol(Symbol {
        name: name.to_vec(),
        value,
        size,
        kind: SymbolKind::Text,
        scope,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    });
}

/// The fixture layout shared by every arch: what is weak, valid and doubtful
/// depends only on `max` and the arch's adjust.
pub fn standard(
    arch: Architecture,
    endian: Endianness,
    e_flags: u32,
    callsite: &'static str,
    abs_type: u32,
    adjust: u64,
    max: u64,
) -> Fixture {
    Fixture {
        arch,
        endian,
        e_flags,
        callsite,
        abs_type,
        adjust,
        vermagic: if matches!(arch, Architecture::PowerPc | Architecture::PowerPc64)
            && callsite == "__patchable_function_entries"
        {
            VERMAGIC_PPC_PATCHABLE
        } else {
            VERMAGIC
        },
        modinfo: Vec::new(),
        // Where the kernel checks records, a record up to `max` past a
        // symbol is its function's; elsewhere the short functions are what
        // the containment tests are written around.
        function_size: if matches!(
            arch,
            Architecture::X86_64 | Architecture::I386 | Architecture::PowerPc | Architecture::PowerPc64
        ) {
            (max + 1).max(4)
        } else {
            4
        },
        texts: vec![
            Text {
                name: ".text",
                size: 0x200,
                symbols: vec![("a", 0x40), ("b", 0x100)],
                // no symbol before 0x20; a itself; a+max; a+max+1; b; b+0x80
                ips: vec![0x20, 0x40, 0x40 + max, 0x41 + max, 0x100, 0x180],
            },
            Text {
                name: ".noinstr.text",
                size: 0x40,
                symbols: vec![("n", 0x10)],
                // At the section's start (a symbol at the end of .text could
                // explain it), and n itself.
                ips: vec![adjust, 0x10],
            },
            Text { name: ".init.text", size: 0x40, symbols: vec![("init_fn", 0x10)], ips: vec![0x10] },
        ],
    }
}

/// `(section name, record ip)` of every relocated callsite entry, read
/// with object's generic API.
pub fn entries(data: &[u8], callsite: &str, adjust: u64) -> Vec<(String, u64)> {
    let file = object::File::parse(data).unwrap();
    let cs = file.section_by_name(callsite).unwrap();
    let words = cs.data().unwrap();
    let big = file.endianness() == Endianness::Big;
    let word = if file.is_64() { 8 } else { 4 };
    let mut out = Vec::new();
    for (offset, rel) in cs.relocations() {
        let RelocationTarget::Symbol(index) = rel.target() else { panic!("not a symbol target") };
        let sym = file.symbol_by_index(index).unwrap();
        let section = file.section_by_index(sym.section_index().unwrap()).unwrap();
        let addend = if rel.has_implicit_addend() {
            let w = &words[offset as usize..offset as usize + word];
            let v = if big {
                w.iter().fold(0u64, |v, &b| v << 8 | u64::from(b))
            } else {
                w.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b))
            };
            v as i64
        } else {
            rel.addend()
        };
        out.push((section.name().unwrap().to_string(), (sym.address() as i64 + addend) as u64 + adjust));
    }
    out.sort();
    out
}

/// Byte ranges of the file that may legitimately change: the callsite
/// relocation section, the `sh_size` fields of both (a drop shrinks the
/// table too), and the callsite words.
pub fn changeable(data: &[u8], callsite: &str) -> Vec<(usize, usize)> {
    let file = object::read::elf::ElfFile64::<Endianness>::parse(data).is_ok();
    let parsed = object::File::parse(data).unwrap();
    let mut ranges = Vec::new();
    let is_64 = file;
    let (shoff, shentsize) = {
        let e = parsed.endianness();
        let rd = |at: usize, n: usize| -> u64 {
            let b = &data[at..at + n];
            if e == Endianness::Big {
                b.iter().fold(0, |v, &x| v << 8 | u64::from(x))
            } else {
                b.iter().rev().fold(0, |v, &x| v << 8 | u64::from(x))
            }
        };
        if is_64 { (rd(0x28, 8), rd(0x3a, 2)) } else { (rd(0x20, 4), rd(0x2e, 2)) }
    };
    for s in parsed.sections() {
        let name = s.name().unwrap();
        let is_reloc_of_cs = name == format!(".rela{callsite}") || name == format!(".rel{callsite}");
        if name == callsite || is_reloc_of_cs {
            let (off, size) = s.file_range().unwrap();
            ranges.push((off as usize, (off + size) as usize));
        }
        if name == callsite || is_reloc_of_cs {
            let field = shoff + s.index().0 as u64 * shentsize + if is_64 { 32 } else { 20 };
            ranges.push((field as usize, field as usize + if is_64 { 8 } else { 4 }));
        }
    }
    ranges
}

/// Panics unless `a` and `b` differ only inside `ranges`.
pub fn assert_differs_only_in(a: &[u8], b: &[u8], ranges: &[(usize, usize)]) {
    assert_eq!(a.len(), b.len(), "file size changed");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            assert!(
                ranges.iter().any(|&(s, e)| (s..e).contains(&i)),
                "byte {i:#x} changed outside the callsite table and its relocations"
            );
        }
    }
}

/// A scratch directory, unique per call (tests run in parallel and reuse
/// names), removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zwm-test-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Write `data` to `name` in the directory.
    pub fn file(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        fs::write(&p, data).unwrap();
        p
    }

    /// The bundled module as the tool writes it, processed here in a file
    /// of its own (removed again), asserting that the run succeeds.
    pub fn processed_module(&self) -> Vec<u8> {
        let p = self.file("processed.ko", &fs::read(MODULE).unwrap());
        assert!(tool(&[p.to_str().unwrap()]).status.success());
        let bytes = fs::read(&p).unwrap();
        fs::remove_file(p).unwrap();
        bytes
    }

    /// Names in the directory, sorted (to spot leftover temporary files).
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A test may have made the directory read-only.
        let _ = fs::set_permissions(&self.0, std::os::unix::fs::PermissionsExt::from_mode(0o755));
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `data` with an appended module signature, as `scripts/sign-file` writes
/// it: PKCS#7 blob, `struct module_signature`, marker.
pub fn signed(data: &[u8]) -> Vec<u8> {
    let sig = [0x30, 0x82, 0x01, 0x02, 0xaa, 0xbb];
    let mut v = data.to_vec();
    v.extend_from_slice(&sig);
    v.extend_from_slice(&[0, 0, 2, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&(sig.len() as u32).to_be_bytes());
    v.extend_from_slice(b"~Module signature appended~\n");
    v
}

/// A small deterministic PRNG (xorshift*), so seeded tests repeat exactly.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// An `x86_64` module with `n` functions of 16 bytes, each with a callsite
/// entry; every 7th has lost its symbol (an overridden weak body), so its
/// entry is zeroed. `n` = 100,000 gives a file of about 7 MB.
pub fn big_module(n: usize) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    obj.add_file_symbol(b"big.c".to_vec());
    let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    obj.set_section_data(text, vec![0x90u8; n * 16], 16);
    for i in 0..n {
        if i % 7 == 3 {
            continue;
        }
        let scope = if i % 2 == 0 { SymbolScope::Compilation } else { SymbolScope::Linkage };
        add_function(&mut obj, text, format!("f{i}").as_bytes(), i as u64 * 16, 16, scope);
    }
    let cs = obj.add_section(Vec::new(), b"__mcount_loc".to_vec(), SectionKind::ReadOnlyData);
    obj.set_section_data(cs, vec![0u8; n * 8], 8);
    let sym = obj.section_symbol(text);
    // 4 bytes in: past the symbol, within the widest max offset.
    add_callsites(&mut obj, cs, 0, 8, sym, object::elf::R_X86_64_64, (0..n).map(|i| i as i64 * 16 + 4));
    add_modinfo(&mut obj, VERMAGIC, &[]);
    obj.write().unwrap()
}

/// The standard arm64 fixture for a kernel that adjusts a callsite word
/// before testing it for zero (6.12.94): its dead entries are dropped.
#[allow(dead_code, reason = "not every test file uses every fixture")]
pub fn arm64_adjust_first() -> Vec<u8> {
    let mut f = standard(
        Architecture::Aarch64,
        Endianness::Little,
        0,
        "__patchable_function_entries",
        object::elf::R_AARCH64_ABS64,
        0,
        4,
    );
    f.vermagic = "6.12.94+deb12-arm64 SMP preempt mod_unload aarch64";
    f.build()
}

// SPDX-License-Identifier: GPL-2.0-only
//! Edge cases of the file system and of the ELF format, each a test: what
//! is refused is refused clearly and left byte-identical; what is valid,
//! however unusual, is processed correctly; nothing blocks or allocates
//! from an unvalidated size.
#![allow(
    clippy::cast_possible_truncation,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]

mod common;

use common::{BIN, Scratch, module, signed, stderr};

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::standard;
use object::write::Object;
use object::{
    Architecture, BinaryFormat, Endianness, Object as _, ObjectSection as _, SectionFlags, SectionKind, SymbolScope,
    elf,
};
use zero_weak_mcount::elf::parse_info;
use zero_weak_mcount::error::Error;
use zero_weak_mcount::file::process_file;
use zero_weak_mcount::process::{Options, analyze};

/// Run a command, failing the test if it takes longer than `limit`.
fn run_for(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{cmd:?} still running after {limit:?} (blocked?): {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Run the tool with `args`, killing it if it takes more than 30 s.
fn tool(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(BIN);
    for a in args {
        cmd.arg(a);
    }
    run_for(&mut cmd, Duration::from_secs(30))
}

fn euid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// What the library makes of `data` with default options.
fn processed(data: &[u8]) -> Vec<u8> {
    analyze(data, &Options::default()).unwrap().plan.apply_to(data)
}

fn x86_fixture() -> Vec<u8> {
    standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4).build()
}

/// Assert the CLI refuses `data` (exit 1, an error naming the file, whose
/// text contains `expect`) and leaves the file byte-identical.
fn refused(name: &str, data: &[u8], expect: &str) {
    let dir = Scratch::new(name);
    let path = dir.file("m.ko", data);
    for args in [&[][..], &["--atomic"][..]] {
        let mut cmd = Command::new(BIN);
        cmd.args(args).arg(&path);
        let out = run_for(&mut cmd, Duration::from_secs(30));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name} {args:?}: {err}");
        assert!(
            err.contains(&format!("{}: error: ", path.display())) && err.contains(expect),
            "{name} {args:?}: {err}"
        );
        assert_eq!(fs::read(&path).unwrap(), data, "{name} {args:?}: file changed");
        assert_eq!(dir.names(), ["m.ko"], "{name} {args:?}: files left behind");
    }
}

// --- Field access ----------------------------------------------------------

fn put(data: &mut [u8], at: usize, width: usize, value: u64, big: bool) {
    let b = &mut data[at..at + width];
    for (i, byte) in b.iter_mut().enumerate() {
        let shift = if big { 8 * (width - 1 - i) } else { 8 * i };
        *byte = (value >> shift) as u8;
    }
}

/// Offsets of the fields we corrupt, for 64- and 32-bit files.
#[derive(Clone, Copy)]
enum F {
    Shnum,
    Shstrndx,
    Shoff,
    Offset,
    Size,
    Link,
    Entsize,
}

/// File offset and width of field `f`, in the ELF header or in the header
/// of section `section`.
fn field(data: &[u8], f: F, section: usize) -> (usize, usize) {
    let info = parse_info(data).unwrap();
    let sh = info.shoff as usize + section * info.shentsize as usize;
    match (f, info.is_64) {
        (F::Shnum, true) => (60, 2),
        (F::Shnum, false) => (48, 2),
        (F::Shstrndx, true) => (62, 2),
        (F::Shstrndx, false) => (50, 2),
        (F::Shoff, true) => (40, 8),
        (F::Shoff, false) => (32, 4),
        (F::Offset, true) => (sh + 24, 8),
        (F::Offset, false) => (sh + 16, 4),
        (F::Size, true) => (sh + 32, 8),
        (F::Size, false) => (sh + 20, 4),
        (F::Link, true) => (sh + 40, 4),
        (F::Link, false) => (sh + 24, 4),
        (F::Entsize, true) => (sh + 56, 8),
        (F::Entsize, false) => (sh + 36, 4),
    }
}

fn set(data: &mut [u8], f: F, section: usize, value: u64) {
    let big = parse_info(data).unwrap().big_endian;
    let (at, width) = field(data, f, section);
    put(data, at, width, value, big);
}

fn index_of(data: &[u8], name: &str) -> usize {
    parse_info(data).unwrap().sections.iter().position(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"))
}

fn section(data: &[u8], name: &str) -> zero_weak_mcount::elf::Section {
    parse_info(data).unwrap().sections[index_of(data, name)].clone()
}

// --- Files that are not modules -----------------------------------------------

#[test]
fn a_zero_length_file_is_refused_and_stays_empty() {
    refused("empty", b"", "empty file");
}

#[test]
fn a_directory_is_refused_by_the_library_and_walked_by_the_cli() {
    let dir = Scratch::new("dir");
    assert!(matches!(process_file(&dir.0, None, &Options::default()), Err(Error::Directory)));
    // The CLI walks a directory argument as a module tree; with no module
    // inside, that is nothing to do.
    let out = tool(&[&dir.0]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.names().is_empty());
}

#[test]
fn a_fifo_is_refused_without_opening_it() {
    let dir = Scratch::new("fifo");
    let fifo = dir.0.join("m.ko");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo (coreutils)");
    assert!(st.success());
    // Nothing ever writes to the FIFO: opening it for reading would block
    // forever, and run_for would fail the test.
    for args in [&[][..], &["--atomic"][..], &["--check"][..], &["--signed=strip"][..]] {
        let mut cmd = Command::new(BIN);
        cmd.args(args).arg(&fifo);
        let out = run_for(&mut cmd, Duration::from_secs(20));
        // Under --check, trouble: 2.
        let expected = if args == ["--check"] { 2 } else { 1 };
        assert_eq!(out.status.code(), Some(expected), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("not a regular file"), "{args:?}: {}", stderr(&out));
    }
    assert!(matches!(process_file(&fifo, None, &Options::default()), Err(Error::NotRegular)));
    // In a tree, a FIFO named like a module is passed over; the real module
    // next to it is processed.
    let real = dir.file("real.ko", &module());
    let out = run_for(Command::new(BIN).arg(&dir.0), Duration::from_secs(20));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(&real).unwrap(), processed(&module()));
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_symlink_is_followed_and_stays_a_link() {
    let original = module();
    let expected = processed(&original);
    for args in [&[][..], &["--atomic"][..]] {
        let dir = Scratch::new(&format!("symlink{}", args.len()));
        fs::create_dir(dir.0.join("real")).unwrap();
        fs::create_dir(dir.0.join("links")).unwrap();
        let real = dir.0.join("real/m.ko");
        fs::write(&real, &original).unwrap();
        let link = dir.0.join("links/m.ko");
        std::os::unix::fs::symlink("../real/m.ko", &link).unwrap();

        let mut cmd = Command::new(BIN);
        cmd.args(args).arg(&link);
        let out = run_for(&mut cmd, Duration::from_secs(30));
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{args:?}: the link was replaced");
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("../real/m.ko"), "{args:?}");
        assert_eq!(fs::read(&real).unwrap(), expected, "{args:?}: the target was not processed");
        let leftovers: Vec<_> = ["real", "links"]
            .iter()
            .flat_map(|d| fs::read_dir(dir.0.join(d)).unwrap())
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "m.ko")
            .collect();
        assert!(leftovers.is_empty(), "{args:?}: {leftovers:?}");
    }
}

#[cfg(feature = "compression")]
#[test]
fn a_symlink_to_a_compressed_module_stays_a_link() {
    use zero_weak_mcount::compress::{Format, compress, decompress};
    let dir = Scratch::new("symlink-gz");
    let real = dir.file("m.ko.gz", &compress(Format::Gzip, &module()).unwrap());
    let link = dir.0.join("link.ko.gz");
    std::os::unix::fs::symlink("m.ko.gz", &link).unwrap();
    let out = tool(&[&"--compressed=recompress", &link]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(decompress(Format::Gzip, &fs::read(&real).unwrap()).unwrap(), processed(&module()));
    assert_eq!(dir.names(), ["link.ko.gz", "m.ko.gz"]);
}

/// Run the binary as nobody (root ignores file modes).
fn as_nobody(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    if euid() != 0 {
        return tool(args);
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
    for a in args {
        cmd.arg(a);
    }
    run_for(&mut cmd, Duration::from_secs(30))
}

#[test]
fn a_read_only_file_is_refused_in_every_mode() {
    // A read-only file in a directory nobody may write to, and one in a
    // directory they may (where --atomic could create its temporary file
    // and rename it over the read-only one, as `sed -i` would).
    let original = module();
    for writable_dir in [false, true] {
        let dir = Scratch::new(&format!("readonly{}", u8::from(writable_dir)));
        let path = dir.file("m.ko", &original);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
        if writable_dir && euid() == 0 {
            // Give the directory and the file to nobody.
            let st = Command::new("chown").arg("-R").arg("65534:65534").arg(&dir.0).status().unwrap();
            assert!(st.success());
        }
        // 0o555, not 0o755: when the tests run as an ordinary user, the tool
        // runs as the directory's owner.
        fs::set_permissions(&dir.0, fs::Permissions::from_mode(if writable_dir { 0o777 } else { 0o555 })).unwrap();
        for args in [&[][..], &["--atomic"][..]] {
            let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|a| a as _).collect();
            all.push(&path);
            let out = as_nobody(&all);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "dir writable {writable_dir}, {args:?}: {err}");
            assert!(err.contains("Permission denied") && err.contains("file left unchanged"), "{args:?}: {err}");
            assert_eq!(fs::read(&path).unwrap(), original);
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o444);
            assert_eq!(dir.names(), ["m.ko"], "{args:?}: files left behind");
        }
    }
    // A writable file in a directory nobody may write to: in place works,
    // --atomic cannot create its temporary file and leaves nothing behind.
    let dir = Scratch::new("readonly-dir");
    let path = dir.file("m.ko", &original);
    if euid() == 0 {
        assert!(Command::new("chown").arg("65534:65534").arg(&path).status().unwrap().success());
    }
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o555)).unwrap();
    let out = as_nobody(&[&"--atomic", &path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot create output: Permission denied"), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(dir.names(), ["m.ko"]);
    let out = as_nobody(&[&path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), processed(&original));
}

/// Ignored by default: a chroot refuses `unshare` even to root, and a
/// default container refuses mount namespaces, so plain `cargo test` (the
/// README's, and the Debian build's) lists it as ignored. `make test` runs
/// it with `--include-ignored`; there, unable to mount is a failure.
#[test]
#[ignore = "needs a mount namespace (unshare -m), which chroots and containers refuse; make check runs it as root"]
fn a_file_on_a_read_only_mount_is_refused() {
    // A read-only bind mount in a private mount namespace: unshare -m as
    // root, else unshare -rm, which needs no privilege where user
    // namespaces are on.
    let dir = Scratch::new("romount");
    let original = module();
    let path = dir.file("m.ko", &original);
    let d = dir.0.display();
    let script = format!(
        "mount --bind '{d}' '{d}' && mount -o remount,bind,ro '{d}' || exit 77; \
         '{BIN}' '{p}'; echo in-place=$?; '{BIN}' --atomic '{p}'; echo atomic=$?",
        p = path.display()
    );
    let mounted = |out: &Output| out.status.code() != Some(77) && !out.stdout.is_empty();
    let mut out = run_for(Command::new("unshare").args(["-m", "sh", "-c", &script]), Duration::from_secs(30));
    if !mounted(&out) {
        out = run_for(Command::new("unshare").args(["-rm", "sh", "-c", &script]), Duration::from_secs(30));
    }
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(mounted(&out), "cannot make a read-only bind mount here (neither unshare -m nor -rm): {err}");
    assert!(text.contains("in-place=1") && text.contains("atomic=1"), "{text}{err}");
    assert_eq!(err.matches("Read-only file system").count(), 2, "{err}");
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(dir.names(), ["m.ko"]);
}

// --- ELF edge cases ---------------------------------------------------------------

/// `e_shnum == 0` and `e_shstrndx == SHN_XINDEX`, the real values in
/// section 0's `sh_size` and `sh_link`: valid ELF, processed as if the
/// counts were in the header.
#[test]
fn extended_section_numbering_in_section_zero() {
    for original in [module(), x86_fixture()] {
        let info = parse_info(&original).unwrap();
        let shstrndx =
            info.sections.iter().position(|s| s.sh_type == elf::SHT_STRTAB && s.name == ".shstrtab").unwrap();
        let extend = |data: &[u8]| {
            let mut d = data.to_vec();
            set(&mut d, F::Size, 0, info.sections.len() as u64);
            set(&mut d, F::Link, 0, shstrndx as u64);
            set(&mut d, F::Shnum, 0, 0);
            set(&mut d, F::Shstrndx, 0, u64::from(elf::SHN_XINDEX));
            d
        };
        let extended = extend(&original);
        assert_eq!(parse_info(&extended).unwrap().sections.len(), info.sections.len());
        let out = processed(&extended);
        assert_ne!(out, extended);
        assert_eq!(out, extend(&processed(&original)));
        // And through the binary.
        let dir = Scratch::new("xindex");
        let path = dir.file("m.ko", &extended);
        let o = tool(&[&path]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(fs::read(&path).unwrap(), out);
        assert!(analyze(&out, &Options::default()).unwrap().plan.is_empty());
    }
}

/// The real thing: more than 0xff00 sections, written by object, with the
/// text sections (and so the symbols the relocations use) past `SHN_LORESERVE`
/// (symbols then use `SHN_XINDEX` and `.symtab_shndx`), and the callsite table
/// near the start of the file, below section 0's `sh_size` (the count).
#[test]
fn a_module_with_more_than_0xff00_sections() {
    let build = |extra: usize| {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let cs = obj.add_section(Vec::new(), b"__mcount_loc".to_vec(), SectionKind::ReadOnlyData);
        for i in 0..extra {
            let id = obj.add_section(Vec::new(), format!(".data.pad{i}").into_bytes(), SectionKind::Data);
            obj.set_section_data(id, vec![0u8; 0], 1);
        }
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0x90u8; 0x200], 16);
        common::add_function(&mut obj, text, b"a", 0x40, 4, SymbolScope::Compilation);
        // Entries at a (valid) and at 0x20 and 0x100 (weak: no symbol or too far).
        obj.set_section_data(cs, vec![0u8; 24], 8);
        let sym = obj.section_symbol(text);
        common::add_callsites(&mut obj, cs, 0, 8, sym, elf::R_X86_64_64, [0x40, 0x20, 0x100]);
        common::add_modinfo(&mut obj, common::VERMAGIC, &[]);
        obj.write().unwrap()
    };
    let data = build(0xff10);
    let info = parse_info(&data).unwrap();
    assert!(info.sections.len() > 0xff00);
    assert_eq!(u16::from_le_bytes([data[60], data[61]]), 0, "object did not use extended numbering");
    let text = info.sections.iter().position(|s| s.name == ".text").unwrap();
    assert!(text >= usize::from(elf::SHN_LORESERVE));
    assert!(info.sections[index_of(&data, "__mcount_loc")].offset < info.sections.len() as u64);

    let a = analyze(&data, &Options::default()).unwrap_or_else(|e| panic!("refused: {e}"));
    let out = a.plan.apply_to(&data);
    // The same module with few sections gives the same decisions.
    let small = build(0);
    assert_eq!(common::entries(&out, "__mcount_loc", 0), common::entries(&processed(&small), "__mcount_loc", 0));
    assert_eq!(common::entries(&out, "__mcount_loc", 0), [(".text".to_string(), 0x40)]);
    common::assert_differs_only_in(&data, &out, &common::changeable(&data, "__mcount_loc"));
    assert!(analyze(&out, &Options::default()).unwrap().plan.is_empty());
}

#[test]
fn overlapping_sections_are_refused() {
    let original = module();
    let sym = section(&original, ".symtab");
    let strtab = section(&original, ".strtab");
    let cs = section(&original, "__mcount_loc");
    let rela = index_of(&original, ".rela__mcount_loc");
    let info = parse_info(&original).unwrap();
    let cases: [(&str, usize, u64); 5] = [
        ("rela-over-symtab", rela, sym.offset + 24),
        ("rela-over-strtab", rela, strtab.offset),
        ("rela-over-callsite", rela, cs.offset),
        ("rela-over-section-headers", rela, info.shoff + 64),
        ("callsite-over-elf-header", index_of(&original, "__mcount_loc"), 8),
    ];
    for (name, s, offset) in cases {
        let mut data = original.clone();
        set(&mut data, F::Offset, s, offset);
        refused(name, &data, "overlaps");
    }
}

#[test]
fn string_tables_without_a_final_nul_are_refused() {
    for data in [module(), x86_fixture()] {
        for name in [".strtab", ".shstrtab"] {
            let mut d = data.clone();
            let s = section(&d, name);
            d[(s.offset + s.size - 1) as usize] = b'A';
            assert!(analyze(&d, &Options::default()).is_err(), "{name} accepted");
            refused(&format!("nonul{name}"), &d, "malformed ELF");
        }
    }
}

#[test]
fn relocation_sections_that_are_not_whole_entries_are_refused() {
    let builds: [(&str, Vec<u8>); 3] = [
        (".rela__mcount_loc", x86_fixture()),
        (
            ".rel__mcount_loc",
            standard(Architecture::I386, Endianness::Little, 0, "__mcount_loc", elf::R_386_32, 0, 0).build(),
        ),
        (
            ".rela__mcount_loc",
            standard(Architecture::PowerPc, Endianness::Big, 0, "__mcount_loc", elf::R_PPC_ADDR32, 0, 8).build(),
        ),
    ];
    for (rel, data) in builds {
        let s = section(&data, rel);
        for cut in [1, s.entsize - 1, s.entsize + 1] {
            let mut d = data.clone();
            set(&mut d, F::Size, index_of(&data, rel), s.size - cut);
            refused(&format!("partial{cut}"), &d, "not a whole number");
        }
    }
    // The callsite table itself must be whole words.
    let mut d = x86_fixture();
    let s = section(&d, "__mcount_loc");
    let i = index_of(&d, "__mcount_loc");
    set(&mut d, F::Size, i, s.size - 3);
    refused("partial-callsite", &d, "not a whole number");
}

/// Two callsite sections with one name. The kernel's `find_sec()` takes the
/// first with `SHF_ALLOC`; the other one, and its relocations, stay as they are.
#[test]
fn of_two_callsite_sections_with_one_name_the_first_allocated_one_is_used() {
    // (first is allocated, second is allocated): the first is used.
    // (first is not allocated, second is): the second is used.
    for first_alloc in [true, false] {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.set_section_data(text, vec![0x90u8; 0x200], 16);
        common::add_function(&mut obj, text, b"a", 0x40, 4, SymbolScope::Compilation);
        let sym = obj.section_symbol(text);
        let mut tables = Vec::new();
        for (n, alloc) in [(0, first_alloc), (1, true)] {
            let id = obj.add_section(Vec::new(), b"__mcount_loc".to_vec(), SectionKind::ReadOnlyData);
            obj.set_section_data(id, vec![0u8; 16], 8);
            if !alloc {
                obj.section_mut(id).flags = SectionFlags::Elf { sh_flags: 0 };
            }
            // Table 0: a and a weak 0x100 + n; table 1 the same, shifted.
            common::add_callsites(&mut obj, id, 0, 8, sym, elf::R_X86_64_64, [0x40, 0x100 + n]);
            tables.push(id);
        }
        common::add_modinfo(&mut obj, common::VERMAGIC, &[]);
        let data = obj.write().unwrap();

        let out = processed(&data);
        let file = object::File::parse(&*out).unwrap();
        let counts: Vec<usize> =
            file.sections().filter(|s| s.name() == Ok("__mcount_loc")).map(|s| s.relocations().count()).collect();
        let used = usize::from(!first_alloc);
        let mut expected = vec![2, 2];
        expected[used] = 1;
        assert_eq!(counts, expected, "first allocated: {first_alloc}");
        // Nothing of the other table or its relocations changed.
        let info = parse_info(&data).unwrap();
        let idx: Vec<usize> =
            info.sections.iter().enumerate().filter(|(_, s)| s.name == "__mcount_loc").map(|(i, _)| i).collect();
        let mut allowed = Vec::new();
        let cs = idx[used];
        let (a, b) = info.sections[cs].file_range().unwrap();
        allowed.push((a as usize, b as usize));
        for (i, s) in info.sections.iter().enumerate() {
            if s.sh_type == elf::SHT_RELA && s.info as usize == cs {
                let (a, b) = s.file_range().unwrap();
                allowed.push((a as usize, b as usize));
                let f = info.sh_size_field(i) as usize;
                allowed.push((f, f + 8));
            }
        }
        common::assert_differs_only_in(&data, &out, &allowed);
    }
}

/// Declared sizes and counts far beyond the file: refused at once, with no
/// allocation sized from them. The binary runs with a 256 MiB address-space
/// limit, so such an allocation would abort it (a signal, not exit 1).
#[test]
fn huge_declared_counts_and_sizes_are_refused_quickly() {
    let original = module();
    let n = |name: &str| index_of(&original, name);
    let cases: Vec<(&str, F, usize, u64)> = vec![
        ("e_shnum-ffff", F::Shnum, 0, 0xffff),
        ("e_shnum-0-size-2^60", F::Shnum, 0, 0),
        ("e_shoff-huge", F::Shoff, 0, 1 << 60),
        ("e_shstrndx-ffff", F::Shstrndx, 0, 0xffff),
        ("symtab-size", F::Size, n(".symtab"), 1 << 60),
        ("symtab-size-u64max", F::Size, n(".symtab"), u64::MAX),
        ("strtab-size", F::Size, n(".strtab"), 1 << 60),
        ("rela-size", F::Size, n(".rela__mcount_loc"), 1 << 60),
        ("rela-size-u64max-aligned", F::Size, n(".rela__mcount_loc"), u64::MAX / 24 * 24),
        ("callsite-size", F::Size, n("__mcount_loc"), 1 << 60),
        ("symtab-entsize", F::Entsize, n(".symtab"), 1 << 60),
        ("rela-entsize", F::Entsize, n(".rela__mcount_loc"), 1 << 60),
        ("section0-size", F::Size, 0, 1 << 60),
    ];
    let dir = Scratch::new("huge");
    let put_field = |data: &mut Vec<u8>, f: F, s: usize, value: u64| {
        let (at, width) = field(&original, f, s);
        put(data, at, width, value, false);
    };
    for (name, f, s, value) in cases {
        let mut data = original.clone();
        put_field(&mut data, f, s, value);
        if name == "e_shnum-0-size-2^60" {
            put_field(&mut data, F::Size, 0, 1 << 60);
        }
        let start = Instant::now();
        assert!(analyze(&data, &Options::default()).is_err(), "{name} accepted");
        assert!(start.elapsed() < Duration::from_secs(2), "{name}: {:?}", start.elapsed());

        let path = dir.file("m.ko", &data);
        let mut cmd = Command::new("prlimit");
        cmd.arg("--as=268435456").arg(BIN).arg(&path);
        let out = run_for(&mut cmd, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(1), "{name}: {:?} {}", out.status, stderr(&out));
        assert!(stderr(&out).contains("error: "), "{name}: {}", stderr(&out));
        assert_eq!(fs::read(&path).unwrap(), data, "{name}");
    }
}

// --- Signatures and -o ----------------------------------------------------------

/// Run `args` + the file on a copy of `data` named `name`; the file must
/// be byte-identical afterwards, `-o` (if given, as `OUT`) absent or an
/// identical copy, and no other file may appear. Returns the exit code.
fn leaves_signed_alone(name: &str, data: &[u8], args: &[&str]) -> Option<i32> {
    let dir = Scratch::new("signed");
    let path = dir.file(name, data);
    let out_path = dir.0.join("OUT");
    let mut cmd = Command::new(BIN);
    for a in args {
        if *a == "OUT" {
            cmd.arg(&out_path)
        } else {
            cmd.arg(a)
        };
    }
    let out = run_for(cmd.arg(&path), Duration::from_secs(30));
    assert_eq!(fs::read(&path).unwrap(), data, "{name} {args:?}: the signed module was written");
    if let Ok(copy) = fs::read(&out_path) {
        assert_eq!(copy, data, "{name} {args:?}: -o holds a modified signed module");
    }
    let mut names = dir.names();
    names.retain(|n| n != "OUT");
    assert_eq!(names, [name], "{name} {args:?}");
    out.status.code()
}

/// No path writes a signed module unless `--signed=strip` asks for it.
#[test]
fn a_signed_module_is_never_written_without_signed_strip() {
    let data = signed(&module());
    let cases: [(&[&str], i32); 11] = [
        (&[], 1),
        (&["--signed=refuse"], 1),
        (&["--check"], 1),
        (&["--check", "--signed=strip"], 1),
        (&["--signed=skip"], 0),
        (&["--signed=skip", "--fatal-warnings"], 1),
        (&["-o", "OUT"], 1),
        (&["-o", "OUT", "--signed=skip"], 0),
        (&["--atomic"], 1),
        (&["--atomic", "--signed=skip"], 0),
        (&["--atomic", "--check"], 1),
    ];
    for (args, code) in cases {
        assert_eq!(leaves_signed_alone("m.ko", &data, args), Some(code), "{args:?}");
    }
    // Tree mode, both policies that keep the signature.
    for (policy, code) in [("--signed=refuse", 1), ("--signed=skip", 0)] {
        let dir = Scratch::new("signed-tree");
        let path = dir.file("m.ko", &data);
        let out = tool(&[&policy, &dir.0]);
        assert_eq!(out.status.code(), Some(code), "{policy}: {}", stderr(&out));
        assert_eq!(fs::read(&path).unwrap(), data, "tree {policy}");
        assert_eq!(dir.names(), ["m.ko"]);
    }
    // The control: --signed=strip does write it.
    let dir = Scratch::new("signed-strip");
    let path = dir.file("m.ko", &data);
    assert!(tool(&[&"--signed=strip", &path]).status.success());
    assert_eq!(fs::read(&path).unwrap(), processed(&module()));
}

/// The same for a signed module inside a compressed file (signed, then
/// compressed, as `make modules_install` does).
#[cfg(feature = "compression")]
#[test]
fn a_signed_compressed_module_is_never_written_without_signed_strip() {
    use zero_weak_mcount::compress::{Format, compress, decompress};
    let payload = signed(&module());
    for (format, name) in [(Format::Xz, "m.ko.xz"), (Format::Zstd, "m.ko.zst"), (Format::Gzip, "m.ko.gz")] {
        let data = compress(format, &payload).unwrap();
        let cases: [(&[&str], i32); 9] = [
            (&[], 0), // --compressed=skip is the default
            (&["--compressed=error"], 1),
            (&["--compressed=recompress"], 1),
            (&["--compressed=recompress", "--atomic"], 1),
            (&["--compressed=recompress", "--check"], 1),
            (&["--compressed=recompress", "--check", "--signed=strip"], 1),
            (&["--compressed=recompress", "--signed=skip"], 0),
            (&["--compressed=recompress", "-o", "OUT"], 1),
            (&["--compressed=recompress", "-o", "OUT", "--signed=skip"], 0),
        ];
        for (args, code) in cases {
            assert_eq!(leaves_signed_alone(name, &data, args), Some(code), "{name} {args:?}");
        }
        let dir = Scratch::new("signed-strip-compressed");
        let path = dir.file(name, &data);
        let out = tool(&[&"--compressed=recompress", &"--signed=strip", &path]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(decompress(format, &fs::read(&path).unwrap()).unwrap(), processed(&module()), "{name}");
    }
}

/// Found while testing -o on signed modules: when there was nothing to
/// change (already processed, an arch the kernel does not check,
/// `--signed=skip`, `--compressed=skip`), `-o PATH` exited 0 without
/// creating PATH. It now gets the input unchanged, also when it names the
/// input itself.
#[test]
fn output_is_written_even_when_nothing_changes() {
    let mut old_aarch64 = standard(
        Architecture::Aarch64,
        Endianness::Little,
        0,
        "__patchable_function_entries",
        elf::R_AARCH64_ABS64,
        0,
        4,
    );
    // A kernel older than every arm64 row: left alone.
    old_aarch64.vermagic = "5.4.0-150-generic SMP preempt mod_unload modversions aarch64";
    let aarch64 = old_aarch64.build();
    let inputs: [(&str, Vec<u8>, &[&str]); 3] = [
        ("processed", processed(&module()), &[]),
        ("aarch64", aarch64, &[]),
        ("signed", signed(&module()), &["--signed=skip"]),
    ];
    for (name, data, args) in inputs {
        let dir = Scratch::new("output-unchanged");
        let path = dir.file("in.ko", &data);
        let out_path = dir.0.join("out.ko");
        let mut cmd = Command::new(BIN);
        let o = run_for(cmd.args(args).arg("-o").arg(&out_path).arg(&path), Duration::from_secs(30));
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(fs::read(&out_path).ok().as_deref(), Some(&data[..]), "{name}: -o output");
        assert_eq!(fs::read(&path).unwrap(), data);
        // -o naming the input itself.
        let mut cmd = Command::new(BIN);
        let o = run_for(cmd.args(args).arg("-o").arg(&path).arg(&path), Duration::from_secs(30));
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(fs::read(&path).unwrap(), data, "{name}: -o onto the input");
    }
    #[cfg(feature = "compression")]
    {
        use zero_weak_mcount::compress::{Format, compress};
        let data = compress(Format::Gzip, &module()).unwrap();
        for args in [&["--compressed=skip"][..], &["--compressed=recompress"][..]] {
            let dir = Scratch::new("output-unchanged-gz");
            let input = if args[0].ends_with("skip") {
                data.clone()
            } else {
                compress(Format::Gzip, &processed(&module())).unwrap()
            };
            let path = dir.file("in.ko.gz", &input);
            let out_path = dir.0.join("out.ko.gz");
            let mut cmd = Command::new(BIN);
            let o = run_for(cmd.args(args).arg("-o").arg(&out_path).arg(&path), Duration::from_secs(30));
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            assert_eq!(fs::read(&out_path).ok().as_deref(), Some(&input[..]), "{args:?}: -o output");
        }
    }
}

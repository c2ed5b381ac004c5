// SPDX-License-Identifier: GPL-2.0-only
//! Bad input gets a clear error naming the file and the reason, and the
//! file is left byte-for-byte unchanged.
#![allow(
    clippy::cast_possible_truncation,
    reason = "test fixtures: offsets, sizes and field values are small numbers the test itself wrote"
)]

mod common;

use common::{BIN, module};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use object::read::elf::{FileHeader, SectionHeader};
use object::{Endianness, elf::FileHeader64};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zwm-bad-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run the tool on `data` (in a file) and return its stderr, asserting exit
/// 1, that the message names the file, and that the file is unchanged.
fn refused(name: &str, data: &[u8]) -> String {
    let dir = scratch(name);
    let path = dir.join("m.ko");
    fs::write(&path, data).unwrap();
    let out = Command::new(BIN).arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains(&format!("{}: error: ", path.display())), "{name}: {err}");
    assert_eq!(fs::read(&path).unwrap(), data, "{name}: file changed");
    fs::remove_dir_all(&dir).unwrap();
    err
}

/// File offset of section `name`'s header, and of its data.
fn section(data: &[u8], name: &str) -> (usize, usize) {
    let h = FileHeader64::<Endianness>::parse(data).unwrap();
    let e = h.endian().unwrap();
    let table = h.sections(e, data).unwrap();
    let (i, s) = table.enumerate().find(|(_, s)| table.section_name(e, s).unwrap() == name.as_bytes()).unwrap();
    (h.e_shoff(e) as usize + i.0 * 64, s.sh_offset(e) as usize)
}

#[test]
fn truncated_files_at_many_lengths() {
    let data = module();
    for len in [1, 3, 15, 40, 63, 64, 1000, data.len() / 2, data.len() - 1] {
        let err = refused(&format!("trunc{len}"), &data[..len]);
        assert!(err.contains("ELF") || err.contains("past the end"), "len {len}: {err}");
    }
}

#[test]
fn garbage_and_empty_files() {
    assert!(refused("garbage", b"this is not a kernel module\n").contains("not an ELF file"));
    assert!(refused("empty", b"").contains("empty file"));
}

#[test]
fn vmlinux_like_executables_are_refused() {
    let mut data = module();
    data[16] = 2; // e_type = ET_EXEC
    assert!(refused("exec", &data).contains("ET_EXEC"));
}

#[test]
fn a_section_pointing_past_the_end_of_the_file() {
    let mut data = module();
    let (hdr, _) = section(&data, ".rela__mcount_loc");
    let past = data.len() as u64 - 8;
    data[hdr + 24..hdr + 32].copy_from_slice(&past.to_le_bytes()); // sh_offset
    assert!(refused("past-end", &data).contains("runs past the end of the file"));
}

#[test]
fn a_bad_sh_entsize() {
    let mut data = module();
    let (hdr, _) = section(&data, ".rela__mcount_loc");
    data[hdr + 56..hdr + 64].copy_from_slice(&16u64.to_le_bytes());
    assert!(refused("entsize", &data).contains("sh_entsize 16, expected 24"));
}

#[test]
fn a_relocation_section_that_is_not_whole_entries() {
    let mut data = module();
    let (hdr, _) = section(&data, ".rela__mcount_loc");
    let size = u64::from_le_bytes(data[hdr + 32..hdr + 40].try_into().unwrap());
    data[hdr + 32..hdr + 40].copy_from_slice(&(size - 5).to_le_bytes());
    assert!(refused("partial", &data).contains("not a whole number"));
}

#[test]
fn a_symbol_index_out_of_range() {
    let mut data = module();
    let (_, rela) = section(&data, ".rela__mcount_loc");
    // r_info of the first relocation: symbol in the high 32 bits.
    data[rela + 12..rela + 16].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    assert!(refused("symidx", &data).contains("refers to symbol 16777215"));
}

#[test]
fn a_relocation_past_the_end_of_the_callsite_table() {
    let mut data = module();
    let (_, rela) = section(&data, ".rela__mcount_loc");
    data[rela..rela + 8].copy_from_slice(&0x1000u64.to_le_bytes());
    assert!(refused("roffset", &data).contains("past the end of __mcount_loc"));
}

#[test]
fn a_file_we_may_not_write_is_left_unchanged() {
    let dir = scratch("readonly");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("m.ko");
    let data = module();
    fs::write(&path, &data).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    // Root ignores file modes, so drop to an unprivileged user to test them.
    let out = if unsafe_geteuid() == 0 {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .arg(&path)
            .output()
            .expect("setpriv (util-linux) is needed to test permissions as root")
    } else {
        Command::new(BIN).arg(&path).output().unwrap()
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot open for writing (file left unchanged): Permission denied"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), data);
    fs::remove_dir_all(&dir).unwrap();
}

fn unsafe_geteuid() -> u32 {
    // No libc dependency: /proc tells us.
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

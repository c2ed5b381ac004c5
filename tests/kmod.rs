// SPDX-License-Identifier: GPL-2.0-only
//! The marked module as kmod's `modinfo` reads it. This target needs kmod,
//! so it is not part of `cargo test` (whose README promise is "nothing
//! beyond Rust"): `test = false` in Cargo.toml, and `make test` runs it
//! with `cargo test --test kmod`, where a missing modinfo fails the run.

mod common;

use std::fs;
use std::process::Command;

use common::{Scratch, standard, tool};
use object::{Architecture, Endianness, Object as _, ObjectSection as _, elf};

const IBT: &str = "CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_X86_KERNEL_IBT=y\n";
const PLACEHOLDER: &str = "unchecked:--------:--------";

/// The tag the kernel accepts for this file, counted independently of the
/// tool: `__mcount_loc` words and `.symtab` entries, in eight hex digits.
fn bound(data: &[u8]) -> String {
    let file = object::File::parse(data).unwrap();
    let size = |name: &str| file.section_by_name(name).unwrap().size();
    format!("zeroed:{:08x}:{:08x}", size("__mcount_loc") / 8, size(".symtab") / 24)
}

/// kmod's `modinfo` must read the flipped tag, and nothing else may move:
/// it walks `.modinfo` on its own, and must skip the NUL padding as the
/// kernel does.
#[test]
fn kmod_modinfo_reads_the_mark_and_every_other_field_unchanged() {
    let modinfo_bin = ["/usr/sbin/modinfo", "/sbin/modinfo"]
        .into_iter()
        .find(|p| fs::metadata(p).is_ok())
        .expect("kmod's modinfo is needed (apt-get install kmod)");
    let dir = Scratch::new("kmod");
    let mut f = standard(Architecture::X86_64, Endianness::Little, 0, "__mcount_loc", elf::R_X86_64_64, 0, 4);
    f.modinfo = vec!["mcount=unchecked:--------:--------", "name=fixture"];
    // Without its one doubtful entry, so that the run proves the module clean.
    f.texts[1].ips.retain(|&ip| ip != 0);
    let before = f.build();
    let ko = dir.file("fixture.ko", &before);
    let config = dir.file("config", IBT.as_bytes());
    let show = || {
        let out = Command::new(modinfo_bin).arg(&ko).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let field = || {
        let out = Command::new(modinfo_bin).args(["-F", "mcount"]).arg(&ko).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let old = show();
    assert_eq!(field(), format!("{PLACEHOLDER}\n"));
    let run = tool(&[ko.as_os_str(), "--kconfig".as_ref(), config.as_os_str()]);
    assert!(run.status.success(), "{}", common::stderr(&run));
    let tag = bound(&before);
    assert_eq!(field(), format!("{tag}\n"));
    let new = show();
    assert_eq!(old.replace(PLACEHOLDER, &tag), new);
    assert!(new.lines().any(|l| l.starts_with("vermagic:")), "{new}");
    assert_eq!(new.lines().count(), old.lines().count());
}

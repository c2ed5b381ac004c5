// SPDX-License-Identifier: GPL-2.0-only
//! The shell scripts keep out `CMD | grep -q`: under `pipefail`, grep exits
//! at the first match, CMD may get SIGPIPE, and the pipeline then fails. A
//! check that must find a line then fails at random, and one that must not
//! find it passes vacuously. Run CMD to the end first (capture its output,
//! or use `has_line` from scripts/lib.sh). And the guests' KTAP has one
//! reader, scripts/kernel-selftests/report.py.
#![allow(clippy::case_sensitive_file_extension_comparisons, reason = "the repository's file names are lower-case")]

use std::fs;
use std::path::{Path, PathBuf};

mod common;

/// The lines (joined across `|` and `\` continuations) that pipe into a
/// quiet grep.
fn quiet_grep_pipes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut joined = String::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with('#') {
            continue;
        }
        joined.push_str(code);
        joined.push(' ');
        let end = code.trim_end();
        if end.ends_with('|') || end.ends_with('\\') || end.ends_with("&&") {
            continue;
        }
        if pipes_into_quiet_grep(&joined) {
            found.push(joined.trim().to_string());
        }
        joined.clear();
    }
    found
}

fn pipes_into_quiet_grep(line: &str) -> bool {
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices('|') {
        // `||` is not a pipe.
        if bytes.get(i + 1) == Some(&b'|') || (i > 0 && bytes[i - 1] == b'|') {
            continue;
        }
        let mut words = line[i + 1..].split_whitespace();
        if words.next() != Some("grep") {
            continue;
        }
        for w in words.take_while(|w| w.starts_with('-') && *w != "--") {
            if w == "--quiet" || w == "--silent" || (!w.starts_with("--") && w.contains('q')) {
                return true;
            }
        }
    }
    false
}

fn shell_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut all = Vec::new();
    common::files_under(dir, &mut all);
    out.extend(all.into_iter().filter(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.ends_with(".py") && !name.ends_with(".pyc") && !name.ends_with(".c")
    }));
}

#[test]
fn the_check_finds_the_pattern() {
    assert!(pipes_into_quiet_grep("busybox --list | grep -qx insmod || die"));
    assert!(pipes_into_quiet_grep("readelf -S -W \"$e\" | grep -q '\\.debug_info' && fail"));
    assert!(pipes_into_quiet_grep("a | grep '^[<>]' | grep -qvx '> X=y' && die"));
    assert!(pipes_into_quiet_grep("cmd 2>&1 | grep --quiet x"));
    assert_eq!(quiet_grep_pipes("diff a b |\n    grep -q x && die\n").len(), 1);
    assert!(!pipes_into_quiet_grep("grep -q x file || cmd | grep x"));
    assert!(!pipes_into_quiet_grep("grep -q x <<<\"$out\""));
    assert!(!pipes_into_quiet_grep("a || grep -q x file"));
    assert!(!pipes_into_quiet_grep("a | grep -c x"));
}

#[test]
fn no_script_pipes_into_a_quiet_grep() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("Makefile")];
    shell_files(&root.join("scripts"), &mut files);
    shell_files(&root.join("dist"), &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let Ok(text) = fs::read_to_string(f) else { continue };
        for line in quiet_grep_pipes(&text) {
            bad.push(format!("{}: {line}", f.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(
        bad.is_empty(),
        "`CMD | grep -q` under pipefail fails at random; capture CMD's output first:\n{}",
        bad.join("\n")
    );
}

/// Every source file and script carries its licence: `git ls-files`, less
/// what is not code (docs, data, kernel patches) and, until they merge,
/// the files of branches that are editing them right now.
#[test]
fn every_source_and_script_has_an_spdx_line() {
    const PENDING_MERGE: [&str; 0] = [];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("git").arg("-C").arg(root).args(["ls-files", "-z"]).output();
    let out = out.expect("this test needs git (apt-get install git)");
    assert!(out.status.success(), "git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut missing = Vec::new();
    let mut checked = 0;
    for name in String::from_utf8(out.stdout).unwrap().split('\0').filter(|n| !n.is_empty()) {
        let data = ["kernel/", "testdata/", "docs/"].iter().any(|d| name.starts_with(d))
            || [".md", ".svg", ".lock", ".toml", ".patch", ".gitignore", "changelog", "format", "copyright", "COPYING"]
                .iter()
                .any(|s| name.ends_with(s));
        if data || PENDING_MERGE.contains(&name) {
            continue;
        }
        checked += 1;
        let text = fs::read_to_string(root.join(name)).unwrap_or_default();
        let head: Vec<&str> = text.lines().take(3).collect();
        if !head.iter().any(|l| l.contains("SPDX-License-Identifier: GPL-2.0")) {
            missing.push(name.to_string());
        }
    }
    assert!(checked > 50, "only {checked} files checked: is this a git checkout?");
    assert!(missing.is_empty(), "no SPDX-License-Identifier line in the first 3 lines of: {missing:?}");
}

/// A shipped script, as it sits in the source tree (dist/).
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dist").join(name)
}

fn run(cmd: &mut std::process::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn brp_help_prints_its_usage_outside_a_build() {
    for arg in ["--help", "-h"] {
        let (code, text) =
            run(std::process::Command::new(script("brp-zero-weak-mcount")).arg(arg).env_remove("RPM_BUILD_ROOT"));
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains("Usage") && text.contains("brp-zero-weak-mcount [TOOL [TOOL-OPTION...]]"), "{text}");
    }
}

/// A kernel tree as the installer sees it, inside a chroot-like root: the
/// arch headers' `build` link is absolute, as on Debian.
struct FakeRoot {
    root: PathBuf,
    modfinal: PathBuf,
    original: Vec<u8>,
}

impl FakeRoot {
    fn new(name: &str) -> FakeRoot {
        let root = std::env::temp_dir().join(format!("zwm-hook-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let kver = "9.9.9-zwm-test";
        let headers = root.join(format!("usr/src/linux-headers-{kver}/scripts"));
        fs::create_dir_all(&headers).unwrap();
        fs::create_dir_all(root.join(format!("lib/modules/{kver}"))).unwrap();
        std::os::unix::fs::symlink(
            format!("/usr/src/linux-headers-{kver}"),
            root.join(format!("lib/modules/{kver}/build")),
        )
        .unwrap();
        let original = b"cmd_ld_ko_o = $(LD) -r -o $@ $(filter %.o, $^)\n\n%.ko: %.o %.mod.o FORCE\n\t+$(call if_changed,ld_ko_o)\n".to_vec();
        let modfinal = headers.join("Makefile.modfinal");
        fs::write(&modfinal, &original).unwrap();
        FakeRoot { root, modfinal, original }
    }

    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut dirs = vec![self.root.clone()];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_symlink() {
                    out.push((p.clone(), fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes()));
                } else if p.is_dir() {
                    dirs.push(p);
                } else {
                    out.push((p.clone(), fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }
}

impl Drop for FakeRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn install_kbuild_hook_dry_run_says_would_and_changes_nothing() {
    let t = FakeRoot::new("dry");
    let before = t.files();
    let tree = t.modfinal.parent().unwrap().parent().unwrap();
    let (code, text) = run(std::process::Command::new(script("install-kbuild-hook")).arg("--dry-run").arg(tree));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("would copy") && text.contains("would hook"), "{text}");
    // In a checkout the installer (dist/) finds the snippet at the top level.
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().unwrap().join("Makefile.snippet");
    assert!(text.contains(&format!("would copy {} to ", top.display())), "{text}");
    assert!(!text.contains("copied") && !text.contains(": hooked"), "a dry run claims to have acted: {text}");
    assert_eq!(t.files(), before);
}

/// `--root DIR --kver KVER` finds the headers inside DIR, through DIR's own
/// absolute `build` link, never the host's; and the installer works from an
/// installed layout (`make install`: sbin/ and share/zero-weak-mcount/).
#[test]
fn install_kbuild_hook_works_on_a_root_by_kver_from_an_installed_layout() {
    let t = FakeRoot::new("root");
    let prefix = t.root.join("opt/zwm");
    fs::create_dir_all(prefix.join("sbin")).unwrap();
    fs::create_dir_all(prefix.join("share/zero-weak-mcount")).unwrap();
    let installed = prefix.join("sbin/install-kbuild-hook");
    fs::copy(script("install-kbuild-hook"), &installed).unwrap();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("Makefile.snippet"),
        prefix.join("share/zero-weak-mcount/Makefile.snippet"),
    )
    .unwrap();
    let hook = |args: &[&str]| run(std::process::Command::new(&installed).arg("--root").arg(&t.root).args(args));
    let (code, text) = hook(&["--kver", "9.9.9-zwm-test"]);
    assert_eq!(code, Some(0), "{text}");
    // The snippet's path as the installed layout has it, no "sbin/..".
    let share = prefix.canonicalize().unwrap().join("share/zero-weak-mcount/Makefile.snippet");
    assert!(text.contains(&format!("copied {} to ", share.display())) && !text.contains("/../"), "{text}");
    let hooked = fs::read_to_string(&t.modfinal).unwrap();
    assert!(hooked.contains("include $(srctree)/scripts/Makefile.zero-weak-mcount\n"), "{text}\n{hooked}");
    assert!(hooked.contains("\n\t+$(zero-weak-mcount-ko)\n"), "{hooked}");
    assert!(t.modfinal.with_file_name("Makefile.zero-weak-mcount").is_file());
    assert_eq!(hook(&["--status", "--kver", "9.9.9-zwm-test"]).0, Some(0));
    let (code, text) = hook(&["--uninstall", "--kver", "9.9.9-zwm-test"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(fs::read(&t.modfinal).unwrap(), t.original);
    assert!(!t.modfinal.with_file_name("Makefile.zero-weak-mcount").exists());
    assert_eq!(hook(&["--status", "--kver", "9.9.9-zwm-test"]).0, Some(1));
    // Without --root the same KVER is the host's, which has no such headers.
    let (code, text) = run(std::process::Command::new(&installed).args(["--kver", "9.9.9-zwm-test"]));
    assert_eq!(code, Some(1), "{text}");
}

#[test]
fn install_kbuild_hook_help_has_no_licence_line_and_a_version() {
    let (code, text) = run(std::process::Command::new(script("install-kbuild-hook")).arg("--help"));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("install-kbuild-hook: "), "{text}");
    assert!(!text.contains("SPDX") && text.contains("--sweep") && text.contains("--version"), "{text}");
    let (code, text) = run(std::process::Command::new(script("install-kbuild-hook")).arg("--version"));
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text, format!("install-kbuild-hook {}\n", env!("CARGO_PKG_VERSION")));
}

/// Debian's layout since trixie: one `linux-kbuild-ABI` package per ABI,
/// its `scripts/` shared by the ABI's headers trees through absolute links.
struct AbiRoot {
    root: PathBuf,
}

const MODFINAL: &[u8] =
    b"cmd_ld_ko_o = $(LD) -r -o $@ $(filter %.o, $^)\n\n%.ko: %.o %.mod.o FORCE\n\t+$(call if_changed,ld_ko_o)\n";

impl AbiRoot {
    fn new(name: &str, abis: &[&str]) -> AbiRoot {
        let root = std::env::temp_dir().join(format!("zwm-abi-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let t = AbiRoot { root };
        for abi in abis {
            fs::create_dir_all(t.kbuild(abi)).unwrap();
            fs::write(t.kbuild(abi).join("Makefile.modfinal"), MODFINAL).unwrap();
            let headers = t.root.join(format!("usr/src/linux-headers-{abi}-amd64"));
            fs::create_dir_all(&headers).unwrap();
            std::os::unix::fs::symlink(format!("/usr/lib/linux-kbuild-{abi}/scripts"), headers.join("scripts"))
                .unwrap();
            let modules = t.root.join(format!("lib/modules/{abi}-amd64"));
            fs::create_dir_all(&modules).unwrap();
            std::os::unix::fs::symlink(format!("/usr/src/linux-headers-{abi}-amd64"), modules.join("build")).unwrap();
        }
        t
    }

    fn kbuild(&self, abi: &str) -> PathBuf {
        self.root.join(format!("usr/lib/linux-kbuild-{abi}/scripts"))
    }

    fn hook(&self, args: &[&str]) -> (Option<i32>, String) {
        run(std::process::Command::new(script("install-kbuild-hook")).arg("--root").arg(&self.root).args(args))
    }

    /// What removing the headers package of ABI leaves (the kbuild
    /// package stays, or goes too with `kbuild_too`).
    fn remove_headers(&self, abi: &str, kbuild_too: bool) {
        fs::remove_dir_all(self.root.join(format!("usr/src/linux-headers-{abi}-amd64"))).unwrap();
        fs::remove_dir_all(self.root.join(format!("lib/modules/{abi}-amd64"))).unwrap();
        if kbuild_too {
            fs::remove_file(self.kbuild(abi).join("Makefile.modfinal")).unwrap();
        }
    }
}

impl Drop for AbiRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// `--status` alone lists every headers tree, hooked or not; `--all` hooks
/// each ABI's own Makefile.modfinal.
#[test]
fn install_kbuild_hook_status_lists_every_abi_and_all_hooks_each() {
    let t = AbiRoot::new("status", &["9.8.1+t1", "9.9.2+t1"]);
    assert_eq!(t.hook(&["-q", "--kver", "9.8.1+t1-amd64"]).0, Some(0));
    let (code, text) = t.hook(&["--status"]);
    assert_eq!(code, Some(1), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.contains("tool")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("linux-kbuild-9.8.1+t1/") && lines[0].ends_with(": hooked"), "{text}");
    assert!(lines[1].contains("linux-kbuild-9.9.2+t1/") && lines[1].ends_with(": clean"), "{text}");
    let (code, text) = t.hook(&["-q", "--all"]);
    assert_eq!((code, text.as_str()), (Some(0), ""));
    let (code, text) = t.hook(&["--status"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with(": hooked")).count(), 2, "{text}");
    for abi in ["9.8.1+t1", "9.9.2+t1"] {
        assert!(fs::read_to_string(t.kbuild(abi).join("Makefile.modfinal")).unwrap().contains("zero-weak-mcount-ko"));
    }
    let (code, text) = t.hook(&["-q", "--uninstall", "--all"]);
    assert_eq!((code, text.as_str()), (Some(0), ""));
    for abi in ["9.8.1+t1", "9.9.2+t1"] {
        assert_eq!(fs::read(t.kbuild(abi).join("Makefile.modfinal")).unwrap(), MODFINAL);
        assert!(!t.kbuild(abi).join("Makefile.zero-weak-mcount").exists());
    }
}

/// `--uninstall --kver KVER` after the headers are gone: with the kbuild
/// package still there it restores the file; with it gone it removes the
/// snippet and the emptied directories; then there is nothing left to do.
#[test]
fn install_kbuild_hook_uninstalls_a_kver_whose_headers_are_gone() {
    let t = AbiRoot::new("gone", &["9.8.1+t1", "9.9.2+t1"]);
    assert_eq!(t.hook(&["-q", "--all"]).0, Some(0));
    t.remove_headers("9.8.1+t1", false);
    t.remove_headers("9.9.2+t1", true);
    let (code, text) = t.hook(&["--uninstall", "--kver", "9.8.1+t1-amd64"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("hook removed"), "{text}");
    assert_eq!(fs::read(t.kbuild("9.8.1+t1").join("Makefile.modfinal")).unwrap(), MODFINAL);
    assert!(!t.kbuild("9.8.1+t1").join("Makefile.zero-weak-mcount").exists());
    // The other ABI's kbuild is untouched by that.
    assert!(t.kbuild("9.9.2+t1").join("Makefile.zero-weak-mcount").exists());
    let (code, text) = t.hook(&["--uninstall", "--kver", "9.9.2+t1-amd64"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("removed") && text.contains("Makefile.zero-weak-mcount"), "{text}");
    assert!(!t.root.join("usr/lib/linux-kbuild-9.9.2+t1").exists(), "{text}");
    for kver in ["9.8.1+t1-amd64", "9.9.2+t1-amd64"] {
        let (code, text) = t.hook(&["--uninstall", "--kver", kver]);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains("nothing to remove"), "{text}");
    }
    // Control: without --uninstall, a KVER with no headers is an error.
    assert_eq!(t.hook(&["-q", "--kver", "9.9.2+t1-amd64"]).0, Some(1));
}

/// `--sweep` removes a snippet copy whose Makefile.modfinal went with its
/// package (no dpkg here: the part that needs no diversion).
#[test]
fn install_kbuild_hook_sweep_removes_what_a_removed_package_left() {
    let t = AbiRoot::new("sweep", &["9.8.1+t1", "9.9.2+t1"]);
    assert_eq!(t.hook(&["-q", "--all"]).0, Some(0));
    t.remove_headers("9.9.2+t1", true);
    let before = fs::read(t.kbuild("9.8.1+t1").join("Makefile.modfinal")).unwrap();
    let (code, text) = t.hook(&["--sweep"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!t.root.join("usr/lib/linux-kbuild-9.9.2+t1").exists(), "{text}");
    assert_eq!(fs::read(t.kbuild("9.8.1+t1").join("Makefile.modfinal")).unwrap(), before, "{text}");
    assert!(t.kbuild("9.8.1+t1").join("Makefile.zero-weak-mcount").exists());
    let (code, text) = t.hook(&["--sweep"]);
    assert_eq!((code, text.as_str()), (Some(0), ""));
    assert_eq!(t.hook(&["--sweep", "--all"]).0, Some(2));
}

/// apt's Pre-Install-Pkgs hook (`--apt-hook`, debian/apt.conf), with the
/// real dpkg-divert and dpkg-query on a dpkg database in the root: told in
/// apt's protocol 3 that a kbuild package is about to go, it unhooks that
/// package's file before dpkg runs, so that its directories hold only the
/// package's own file (dpkg then removes them without "not empty"); the
/// other ABI stays hooked. Control: the same package upgraded, not removed,
/// changes nothing, and its directory still holds the hook's files. Then
/// `--sweep` unhooks a kbuild file whose headers went first.
#[test]
fn install_kbuild_hook_apt_hook_unhooks_what_apt_is_about_to_remove() {
    use std::io::Write;
    let (a, b) = ("9.8.1+t1", "9.9.2+t1");
    let t = AbiRoot::new("apt-hook", &[a, b]);
    let db = t.root.join("var/lib/dpkg");
    fs::create_dir_all(db.join("info")).unwrap();
    fs::create_dir_all(db.join("updates")).unwrap();
    let mut status = String::new();
    for abi in [a, b] {
        let (pkg, dir) = (format!("linux-kbuild-{abi}"), format!("/usr/lib/linux-kbuild-{abi}"));
        status.push_str(
            &["Package: ", &pkg, "\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\n"].concat(),
        );
        status.push_str("Maintainer: t <t@t>\nDescription: t\n\n");
        let list = format!("{dir}\n{dir}/scripts\n{dir}/scripts/Makefile.modfinal\n");
        fs::write(db.join(format!("info/{pkg}.list")), list).unwrap();
    }
    fs::write(db.join("status"), status).unwrap();
    let diversions = || {
        let root = format!("--root={}", t.root.display());
        run(std::process::Command::new("dpkg-divert")
            .args([root.as_str(), "--list"])
            .stderr(std::process::Stdio::null()))
        .1
    };
    assert_eq!(t.hook(&["-q", "--all"]), (Some(0), String::new()));
    assert_eq!(diversions().lines().count(), 2, "{}", diversions());
    let apt = |packages: &str| {
        let mut child = std::process::Command::new(script("install-kbuild-hook"))
            .arg("--root")
            .arg(&t.root)
            .arg("--apt-hook")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(packages.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    // apt's header: the protocol, its configuration up to an empty line.
    let v3 = "VERSION 3\nAPT::Architecture=amd64\nDir=/\n\n";
    let kbuild_a = format!("linux-kbuild-{a} 1 amd64 none");
    let before = snapshot(&t.root);
    let upgrade = format!("{kbuild_a} < 2 amd64 none /var/cache/apt/archives/linux-kbuild-{a}_2_amd64.deb\n");
    let (code, text) = apt(&format!("{v3}{upgrade}dkms 3.2 amd64 foreign = 3.2 amd64 foreign **CONFIGURE**\n"));
    assert_eq!((code, text.as_str()), (Some(0), ""), "control");
    assert_eq!(snapshot(&t.root), before, "control: an upgrade changed the root");
    let mut left: Vec<_> = fs::read_dir(t.kbuild(a)).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["Makefile.modfinal", "Makefile.modfinal.zwm-orig", "Makefile.zero-weak-mcount"], "control");
    let (code, text) = apt(&format!(
        "{v3}{kbuild_a} > - - none **REMOVE**\nlinux-headers-{a}-amd64 1 amd64 none > - - none **REMOVE**\n"
    ));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("hook removed") && text.contains(&format!("linux-kbuild-{a}/")), "{text}");
    assert!(!text.contains(b), "{text}");
    assert_eq!(fs::read_dir(t.kbuild(a)).unwrap().count(), 1, "{text}");
    assert_eq!(fs::read(t.kbuild(a).join("Makefile.modfinal")).unwrap(), MODFINAL);
    assert!(!diversions().contains(a) && diversions().contains(b), "{}", diversions());
    assert_eq!(t.hook(&["-q", "--status", "--kver", &format!("{b}-amd64")]).0, Some(0));
    // Protocol 1 (bare .deb names) says nothing of removals: refused.
    let (code, text) = apt("/var/cache/apt/archives/dkms_3.2_all.deb\n");
    assert!(code == Some(1) && text.contains("protocol 2 or 3"), "{text}");
    // B's headers removed first, its kbuild package kept: the trigger's
    // --sweep puts the package's file back and drops the diversion.
    t.remove_headers(b, false);
    let (code, text) = t.hook(&["--sweep"]);
    assert!(code == Some(0) && text.contains("no headers tree uses it"), "{text}");
    assert_eq!(fs::read_dir(t.kbuild(b)).unwrap().count(), 1, "{text}");
    assert_eq!(fs::read(t.kbuild(b).join("Makefile.modfinal")).unwrap(), MODFINAL);
    assert_eq!(diversions(), "");
}

/// The /etc/kernel hook as `make install` writes it: it hooks the headers
/// of its KVER (and says so once), and is silent for a KVER without
/// headers, for headers hooked already, and once the installer is gone (its
/// conffile outlives the package until purge).
#[test]
fn kernel_hook_hooks_its_kver_and_is_silent_otherwise() {
    let t = AbiRoot::new("kernel-hook", &["9.8.1+t1"]);
    let text = fs::read_to_string(script("kernel-header-hook")).unwrap();
    let installed = t.root.join("kernel-hook");
    let write = |sbindir: &Path| {
        fs::write(&installed, text.replace("@SBINDIR@", sbindir.to_str().unwrap())).unwrap();
    };
    let hook = |kver: &str| run(std::process::Command::new("sh").arg(&installed).arg(kver).env("DPKG_ROOT", &t.root));
    let modfinal = t.kbuild("9.8.1+t1").join("Makefile.modfinal");
    write(&t.root.join("nowhere"));
    assert_eq!(hook("9.8.1+t1-amd64"), (Some(0), String::new()));
    assert_eq!(fs::read(&modfinal).unwrap(), MODFINAL);
    write(script("install-kbuild-hook").parent().unwrap());
    assert_eq!(hook("9.7.0+t1-amd64"), (Some(0), String::new()));
    assert_eq!(fs::read(&modfinal).unwrap(), MODFINAL);
    let (code, out) = hook("9.8.1+t1-amd64");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("hooked the Kbuild of 9.8.1+t1-amd64"), "{out}");
    assert!(fs::read_to_string(&modfinal).unwrap().contains("zero-weak-mcount-ko"));
    // The image's postinst runs it again: hooked already, nothing to say.
    assert_eq!(hook("9.8.1+t1-amd64"), (Some(0), String::new()));
}

/// The README's map of src/ names every file there: a new module is not
/// left out of it unseen.
#[test]
fn the_readme_maps_every_source_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let mut names: Vec<String> = fs::read_dir(root.join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rs"))
        .collect();
    names.sort();
    assert!(names.len() > 10, "only {names:?} in src/");
    let missing: Vec<&String> =
        names.iter().filter(|n| !readme.lines().any(|l| l.starts_with(&format!("    src/{n} ")))).collect();
    assert!(missing.is_empty(), "README.md's map of src/ lacks {missing:?}");
}

/// The code lines of TEXT that match KTAP result lines (`ok N NAME`, `not
/// ok N NAME`): a pattern written for them, such as `(not )?ok` or
/// `(ok|not ok)`.
fn ktap_readers(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter(|l| ["(not )?ok", "(ok|not ok)", "(not ok|ok)"].iter().any(|p| l.contains(p)))
        .map(|l| l.trim().to_string())
        .collect()
}

/// One reader of the guests' KTAP: scripts/kernel-selftests/report.py
/// judges every boot of scripts/kernel-selftests.sh, the --weak cases too,
/// so that a verdict is read one way everywhere.
#[test]
fn only_the_selftests_report_reads_ktap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = common::harness_files(root);
    let report = root.join("scripts/kernel-selftests/report.py");
    assert!(files.contains(&report), "report.py not among {} files", files.len());
    let mut readers = Vec::new();
    for f in &files {
        let lines = ktap_readers(&String::from_utf8_lossy(&fs::read(f).unwrap()));
        if !lines.is_empty() {
            readers.push((f.strip_prefix(root).unwrap().to_string_lossy().into_owned(), lines));
        }
    }
    let names: Vec<&str> = readers.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["scripts/kernel-selftests/report.py"], "KTAP read outside report.py: {readers:#?}");
}

/// The README says how many tests plain `cargo test` lists as ignored: as
/// many as are marked `#[ignore]` (make fresh-check compares the names).
#[test]
fn the_readme_counts_the_ignored_tests() {
    fn marked(dir: &Path) -> usize {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| match p.extension() {
                _ if p.is_dir() => marked(&p),
                Some(e) if e == "rs" => {
                    fs::read_to_string(&p).unwrap().lines().filter(|l| l.trim_start().starts_with("#[ignore")).count()
                }
                _ => 0,
            })
            .sum()
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let n = marked(&root.join("src")) + marked(&root.join("tests"));
    let said = ["no tests", "one test", "two tests", "three tests", "four tests"][n];
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains(&format!("It lists {said} as ignored")), "{n} marked #[ignore]; the README says otherwise");
}

/// Every file, symlink and directory under `root` (relative), with a
/// file's bytes or a link's target: what a tree looks like to a user.
fn snapshot(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_symlink() {
                out.push((rel, Some(fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes())));
            } else if p.is_dir() {
                out.push((rel, None));
                dirs.push(p);
            } else {
                out.push((rel, Some(fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("this test needs git (apt-get install git)");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A kernel git tree: hooking edits its tracked scripts/Makefile.modfinal,
/// and scripts/setlocalversion appends "-dirty" to the kernel release (so
/// to vermagic and the /lib/modules folder) when either of its two checks
/// lists a change: `git --no-optional-locks status -uno --porcelain`, or, on
/// a git without that option, `git diff-index --name-only HEAD` (its
/// `scm_version`, which reads nothing else for "-dirty"). This runs those two
/// commands themselves rather than a copy of the kernel's script: hooked,
/// neither lists anything; a plain edit of the file is listed by both (the
/// control); unhooked, the file is git's again.
#[test]
fn install_kbuild_hook_on_a_git_tree_leaves_the_kernel_release_clean() {
    let t = FakeRoot::new("git");
    let tree = t.root.join("src/linux");
    fs::create_dir_all(tree.join("scripts")).unwrap();
    fs::write(tree.join("scripts/Makefile.modfinal"), MODFINAL).unwrap();
    fs::write(tree.join("Makefile"), "VERSION = 7\n").unwrap();
    git(&tree, &["init", "-q"]);
    git(&tree, &["add", "."]);
    git(&tree, &["commit", "-qm", "v7.2"]);
    let dirty = |why: &str| {
        for check in
            [&["--no-optional-locks", "status", "-uno", "--porcelain"][..], &["diff-index", "--name-only", "HEAD"]]
        {
            if check[0] == "diff-index" {
                // As the kernel's comment says, diff-index does not refresh
                // the index itself: a file rewritten with the same bytes
                // would be listed, hooked or not.
                let _ = std::process::Command::new("git")
                    .arg("-C")
                    .arg(&tree)
                    .args(["update-index", "-q", "--refresh"])
                    .output();
            }
            let out = git(&tree, check);
            assert_eq!(out.is_empty(), why.is_empty(), "{why}: git {check:?} printed {out:?}");
        }
    };
    let hook = |args: &[&str]| {
        run(std::process::Command::new(script("install-kbuild-hook")).arg("--root").arg(&t.root).args(args))
    };
    dirty("");
    fs::write(tree.join("scripts/Makefile.modfinal"), [MODFINAL, b"# edited\n"].concat()).unwrap();
    dirty("control: a plain edit");
    git(&tree, &["checkout", "-q", "--", "scripts/Makefile.modfinal"]);
    let (code, text) = hook(&["/src/linux"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("marked skip-worktree"), "{text}");
    assert!(fs::read_to_string(tree.join("scripts/Makefile.modfinal")).unwrap().contains("zero-weak-mcount-ko"));
    dirty("");
    assert_eq!(hook(&["--status", "/src/linux"]).0, Some(0));
    let (code, text) = hook(&["--uninstall", "/src/linux"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(fs::read(tree.join("scripts/Makefile.modfinal")).unwrap(), MODFINAL);
    assert_eq!(git(&tree, &["ls-files", "-t", "scripts/Makefile.modfinal"]), "H scripts/Makefile.modfinal\n");
    dirty("");
    // A tree dirty before the hook stays dirty: its release said so.
    fs::write(tree.join("scripts/Makefile.modfinal"), [MODFINAL, b"# edited\n"].concat()).unwrap();
    let (code, text) = hook(&["/src/linux"]);
    assert!(code == Some(0) && !text.contains("skip-worktree"), "{text}");
    dirty("edited before the hook");
}

/// `make uninstall` after the installed hook hooked trees: it unhooks each
/// (a headers tree `--all` finds, and one only the installer's list of
/// hooked files names), then removes what it installed and the directories
/// it created; the root is then as it was before `make install`. When the
/// installer cannot unhook a tree, make uninstall stops before removing
/// anything and names the command to run.
#[test]
fn make_uninstall_unhooks_every_tree_and_leaves_the_root_as_it_was() {
    let t = AbiRoot::new("make-uninstall", &["9.8.1+t1"]);
    let mine = t.root.join("home/me/linux/scripts");
    fs::create_dir_all(&mine).unwrap();
    fs::write(mine.join("Makefile.modfinal"), MODFINAL).unwrap();
    for d in ["usr/local/bin", "var/lib"] {
        fs::create_dir_all(t.root.join(d)).unwrap();
    }
    // What `make` builds, as stand-ins: make install copies them.
    let built = t.root.with_extension("built");
    for f in ["zero-weak-mcount", "docs/zero-weak-mcount.1", "docs/dh_zero_weak_mcount.1", "docs/install-kbuild-hook.8"]
    {
        fs::create_dir_all(built.join(f).parent().unwrap()).unwrap();
        fs::write(built.join(f), f).unwrap();
    }
    for n in ["zero-weak-mcount", "install-kbuild-hook", "dh_zero_weak_mcount"] {
        for f in [format!("{n}.bash"), format!("_{n}"), format!("{n}.fish")] {
            fs::create_dir_all(built.join("docs/completions")).unwrap();
            fs::write(built.join("docs/completions").join(f), n).unwrap();
        }
    }
    let before = snapshot(&t.root);
    let make = |target: &str, path: &str| {
        run(std::process::Command::new("make")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .args(["-s", target, "PREFIX=/usr/local", "KERNELHOOKDIR=/etc/kernel"])
            .arg(format!("DESTDIR={}", t.root.display()))
            .arg(format!("BIN={}", built.join("zero-weak-mcount").display()))
            .arg(format!("DOCS={}", built.join("docs").display()))
            .env("PATH", path))
    };
    let path = std::env::var("PATH").unwrap();
    let (code, text) = make("install", &path);
    assert_eq!(code, Some(0), "{text}");
    let installed = t.root.join("usr/local/sbin/install-kbuild-hook");
    let hook = |args: &[&str]| run(std::process::Command::new(&installed).arg("--root").arg(&t.root).args(args));
    assert_eq!(hook(&["-q", "--all"]), (Some(0), String::new()));
    assert_eq!(hook(&["-q", "/home/me/linux"]), (Some(0), String::new()));
    let hooked = [t.kbuild("9.8.1+t1").join("Makefile.modfinal"), mine.join("Makefile.modfinal")];
    for f in &hooked {
        assert!(fs::read_to_string(f).unwrap().contains("zero-weak-mcount-ko"), "{}", f.display());
    }
    // The refusal: a dpkg-divert that says another package diverts the files.
    let fake = built.join("fake-bin");
    fs::create_dir_all(&fake).unwrap();
    fs::write(
        fake.join("dpkg-divert"),
        "#!/bin/sh\ncase \" $* \" in *' --listpackage '*) echo other-package ;; esac\n",
    )
    .unwrap();
    fs::set_permissions(fake.join("dpkg-divert"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let with_fake = format!("{}:{path}", fake.display());
    let mid = snapshot(&t.root);
    let (code, text) = make("uninstall", &with_fake);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("diverted by the package other-package") && text.contains("--uninstall --all"), "{text}");
    assert_eq!(snapshot(&t.root), mid, "a refused make uninstall changed the root: {text}");
    let (code, text) = make("uninstall", &path);
    assert_eq!(code, Some(0), "{text}");
    for f in &hooked {
        assert_eq!(fs::read(f).unwrap(), MODFINAL, "{}", f.display());
    }
    let after = snapshot(&t.root);
    let diff: Vec<_> =
        after.iter().filter(|e| !before.contains(e)).chain(before.iter().filter(|e| !after.contains(e))).collect();
    assert!(
        diff.is_empty(),
        "the root differs from before make install in: {:?}",
        diff.iter().map(|e| &e.0).collect::<Vec<_>>()
    );
    let _ = fs::remove_dir_all(&built);
}

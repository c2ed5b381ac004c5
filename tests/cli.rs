// SPDX-License-Identifier: GPL-2.0-only
//! The binary on real files: the bundled module built by Kbuild, exit
//! codes, --check, --output, signatures and bad input.

mod common;

use common::{MODULE, Scratch, signed, stderr, tool};

use std::fs;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn bundled_module_loses_exactly_its_two_weak_entries() {
    let dir = Scratch::new("bundled");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("zwm_test.ko", &original);
    let before = common::entries(&original, "__mcount_loc", 0);
    assert_eq!(before.len(), 8);

    let out = tool(&["-v", s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "stdout must stay empty for make -s");
    let err = stderr(&out);
    assert!(err.contains(": zero .text+0x0 (distance 0, no symbol before it)"), "{err}");
    assert!(err.contains(": zero .text+0x20 (distance 16 after zwm_arch_kept)"), "{err}");
    assert!(err.contains("zeroed 2 of 8 entries"), "{err}");

    let after = fs::read(&ko).unwrap();
    let mut expected = before.clone();
    expected.retain(|e| *e != (".text".into(), 0x0) && *e != (".text".into(), 0x20));
    assert_eq!(common::entries(&after, "__mcount_loc", 0), expected);
    common::assert_differs_only_in(&original, &after, &common::changeable(&original, "__mcount_loc"));

    // Second run: nothing to do, bytes identical.
    let out = tool(&["-v", s(&ko)]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("nothing to zero in 6 entries"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), after);
}

#[test]
fn the_kernels_own_config_gives_the_same_answer_for_the_bundled_module() {
    // Debian bookworm's 6.1 build has IBT off: max offset 0.
    let dir = Scratch::new("kconfig");
    let ko = dir.file("m.ko", &fs::read(MODULE).unwrap());
    let cfg = dir.file("config", b"CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n# CONFIG_X86_KERNEL_IBT is not set\n");
    let out = tool(&["-v", "--kconfig", s(&cfg), s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("zeroed 2 of 8 entries [x86_64, __mcount_loc, max offset 0"), "{}", stderr(&out));
}

#[test]
fn check_writes_nothing_and_reports_a_change_with_exit_1() {
    let dir = Scratch::new("check");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let out = tool(&["--check", s(&ko)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("would zero 2 of 8"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), original);
    assert!(tool(&[s(&ko)]).status.success());
    assert_eq!(tool(&["--check", s(&ko)]).status.code(), Some(0));
}

#[test]
fn output_leaves_the_input_alone() {
    let dir = Scratch::new("output");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let out_path = dir.0.join("out.ko");
    let out = tool(&["-o", s(&out_path), s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), original);
    let inplace = dir.file("inplace.ko", &original);
    assert!(tool(&[s(&inplace)]).status.success());
    assert_eq!(fs::read(&out_path).unwrap(), fs::read(&inplace).unwrap());
    // A pipe or device is written to, not chmod-ed or fsynced.
    let piped = tool(&["-o", "/dev/stdout", s(&ko)]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert_eq!(piped.stdout, fs::read(&inplace).unwrap());
    // -o takes one input.
    assert_eq!(tool(&["-o", s(&out_path), s(&ko), s(&inplace)]).status.code(), Some(2));
}

#[test]
fn signed_modules_are_refused_unless_the_signature_is_dropped() {
    let dir = Scratch::new("signed");
    let original = fs::read(MODULE).unwrap();
    let data = signed(&original);
    let ko = dir.file("m.ko", &data);

    let out = tool(&[s(&ko)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: module is signed"), "{}", stderr(&out));
    assert!(stderr(&out).contains("before signing"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), data);

    // --check reports what the module needs, and that it is signed.
    let out = tool(&["--check", s(&ko)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(": would change (signed): would zero 2 of 8"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), data);

    let out = tool(&["--signed=skip", s(&ko)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("warning: module is signed and needs changes"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), data);

    let out = tool(&["--signed=strip", s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("sign the module again"), "{}", stderr(&out));
    let plain = dir.file("plain.ko", &original);
    assert!(tool(&[s(&plain)]).status.success());
    assert_eq!(fs::read(&ko).unwrap(), fs::read(&plain).unwrap());
}

fn xz(data: &[u8]) -> Vec<u8> {
    zero_weak_mcount::compress::compress(zero_weak_mcount::compress::Format::Xz, data).unwrap()
}

#[test]
fn compressed_modules_are_skipped_refused_or_recompressed() {
    let dir = Scratch::new("xz");
    let original = fs::read(MODULE).unwrap();
    let packed = xz(&original);
    let ko = dir.file("m.ko.xz", &packed);

    let out = tool(&[s(&ko)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: xz-compressed module left unchanged"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), packed);

    let out = tool(&["--compressed=error", s(&ko)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: xz-compressed module"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), packed);

    let out = tool(&["--compressed=recompress", "--check", s(&ko)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), packed);

    let out = tool(&["--compressed=recompress", "-v", s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("zeroed 2 of 8"), "{}", stderr(&out));
    let plain = dir.file("plain.ko", &original);
    assert!(tool(&[s(&plain)]).status.success());
    let recompressed = fs::read(&ko).unwrap();
    assert_eq!(recompressed, xz(&fs::read(&plain).unwrap()), "same bytes as compressing the processed module");
    // Second run: nothing to do, the file is not rewritten.
    assert!(tool(&["--compressed=recompress", s(&ko)]).status.success());
    assert_eq!(fs::read(&ko).unwrap(), recompressed);
}

#[test]
fn signed_compressed_payloads_follow_the_signature_policy() {
    let dir = Scratch::new("xzsigned");
    let packed = xz(&signed(&fs::read(MODULE).unwrap()));
    let ko = dir.file("m.ko.xz", &packed);
    let out = tool(&["--compressed=recompress", s(&ko)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("module is signed"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), packed);
}

#[test]
fn tree_mode_walks_sorted_keeps_metadata_and_does_not_depend_on_jobs() {
    use std::os::unix::fs::MetadataExt;
    let original = fs::read(MODULE).unwrap();
    let build = |name: &str| {
        let dir = Scratch::new(name);
        fs::create_dir_all(dir.0.join("kernel/drivers")).unwrap();
        for i in 0..12 {
            dir.file(&format!("kernel/drivers/m{i:02}.ko"), &original);
        }
        dir.file("kernel/packed.ko.xz", &xz(&original));
        dir.file("kernel/signed.ko", &signed(&original));
        dir.file("kernel/garbage.ko", b"garbage");
        std::os::unix::fs::symlink(dir.0.join("kernel/drivers/m00.ko"), dir.0.join("kernel/link.ko")).unwrap();
        let m = dir.0.join("kernel/drivers/m03.ko");
        fs::set_permissions(&m, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        fs::File::options().write(true).open(&m).unwrap().set_modified(old).unwrap();
        dir
    };
    let one = build("tree1");
    let two = build("tree2");
    let out1 = tool(&["-j1", "--signed=skip", s(&one.0)]);
    let out2 = tool(&["-j2", "--signed=skip", s(&two.0)]);
    assert_eq!(out1.status.code(), Some(1), "garbage.ko is an error: {}", stderr(&out1));
    let summary = stderr(&out1).lines().last().unwrap().to_string();
    assert_eq!(
        summary,
        "zero-weak-mcount: 15 modules: 12 changed, 0 unchanged, 2 skipped (1 signed, 1 compressed), 1 error"
    );
    assert_eq!(stderr(&out1).replace(s(&one.0), "T"), stderr(&out2).replace(s(&two.0), "T"));
    for f in ["kernel/drivers/m00.ko", "kernel/drivers/m11.ko", "kernel/packed.ko.xz", "kernel/signed.ko"] {
        assert_eq!(fs::read(one.0.join(f)).unwrap(), fs::read(two.0.join(f)).unwrap(), "{f}");
    }
    assert_ne!(fs::read(one.0.join("kernel/drivers/m00.ko")).unwrap(), original);
    assert!(fs::symlink_metadata(one.0.join("kernel/link.ko")).unwrap().file_type().is_symlink());
    let m = fs::metadata(one.0.join("kernel/drivers/m03.ko")).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600);
    assert_eq!(m.mtime(), 1_000_000_000, "tree mode keeps mtimes");
    assert_eq!(tool(&["--check", s(&one.0)]).status.code(), Some(2), "garbage.ko is trouble, and trouble wins");
}

#[test]
fn tree_mode_atomic_gives_the_same_bytes() {
    let original = fs::read(MODULE).unwrap();
    let dir = Scratch::new("atomic");
    fs::create_dir_all(dir.0.join("k")).unwrap();
    let a = dir.file("k/a.ko", &original);
    let b = dir.file("plain.ko", &original);
    let out = tool(&["--atomic", "--tree", s(&dir.0.join("k"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tool(&[s(&b)]).status.success());
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
    let leftovers: Vec<_> = fs::read_dir(dir.0.join("k")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn atomic_refuses_to_split_hard_links() {
    let original = fs::read(MODULE).unwrap();
    let dir = Scratch::new("hardlinks");
    let a = dir.file("a.ko", &original);
    fs::hard_link(&a, dir.0.join("b.ko")).unwrap();
    let out = tool(&["--atomic", s(&a)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has 2 hard links"), "{}", stderr(&out));
    assert_eq!(fs::read(&a).unwrap(), original);
    // In place, both names see the result.
    assert!(tool(&[s(&a)]).status.success());
    assert_eq!(fs::read(dir.0.join("b.ko")).unwrap(), fs::read(&a).unwrap());
    assert_ne!(fs::read(&a).unwrap(), original);
}

#[test]
fn errors_name_the_file_and_other_files_still_get_processed() {
    let dir = Scratch::new("many");
    let good = dir.file("good.ko", &fs::read(MODULE).unwrap());
    let bad = dir.file("bad.ko", b"not an elf file at all");
    let out = tool(&[s(&bad), s(&good)]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("zero-weak-mcount: {}: error: not an ELF file", s(&bad))), "{err}");
    assert_eq!(tool(&["--check", s(&good)]).status.code(), Some(0), "good.ko was not processed");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(tool::<&str>(&[]).status.code(), Some(2));
    assert_eq!(tool(&["--signed=maybe", MODULE]).status.code(), Some(2));
    assert_eq!(tool(&["--kconfig", "/nonexistent/config", MODULE]).status.code(), Some(2));
    assert_eq!(tool(&["--tree", MODULE]).status.code(), Some(2));
}

/// `--check` predicts the real run on signed modules, for every policy: the
/// same exit status, and a signed module that needs no change is simply
/// unchanged (not refused, not stripped).
#[test]
fn check_predicts_the_real_run_on_signed_modules() {
    let dir = Scratch::new("signed-check");
    let original = fs::read(MODULE).unwrap();
    let processed = dir.file("p.ko", &original);
    assert!(tool(&[s(&processed)]).status.success());
    let needs = signed(&original);
    let done = signed(&fs::read(&processed).unwrap());
    for (name, data, changes) in [("needs.ko", &needs, true), ("done.ko", &done, false)] {
        for policy in ["--signed=refuse", "--signed=skip", "--signed=strip"] {
            let ko = dir.file(name, data);
            let check = tool(&["--check", policy, s(&ko)]);
            assert_eq!(fs::read(&ko).unwrap(), *data, "--check wrote");
            let real = tool(&[policy, s(&ko)]);
            let written = fs::read(&ko).unwrap() != *data;
            let what = format!("{name} {policy}:\ncheck: {}\nreal: {}", stderr(&check), stderr(&real));
            assert_eq!(written, changes && policy == "--signed=strip", "{what}");
            // --check exits 1 exactly when the real run writes or fails.
            let real_fails = real.status.code() == Some(1);
            assert_eq!(check.status.code() == Some(1), written || real_fails, "{what}");
            if !changes {
                assert!(real.status.success() && stderr(&real).is_empty(), "{what}");
                assert!(check.status.success() && stderr(&check).is_empty(), "{what}");
            }
        }
    }
}

#[test]
fn fatal_warnings_covers_a_compressed_module_left_alone() {
    let dir = Scratch::new("gz-fatal");
    let packed =
        zero_weak_mcount::compress::compress(zero_weak_mcount::compress::Format::Gzip, &fs::read(MODULE).unwrap())
            .unwrap();
    let ko = dir.file("m.ko.gz", &packed);
    let out = tool(&[s(&ko)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = tool(&["--fatal-warnings", s(&ko)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("error: warning treated as an error (--fatal-warnings): gzip-compressed module left unchanged"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&ko).unwrap(), packed);
    // In a tree too.
    let out = tool(&["--fatal-warnings", s(&dir.0)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn output_dash_is_standard_output() {
    let dir = Scratch::new("dash");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let out = std::process::Command::new(common::BIN).current_dir(&dir.0).args(["-o", "-", "m.ko"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(dir.names(), ["m.ko"], "-o - created a file");
    assert_eq!(fs::read(&ko).unwrap(), original, "-o - changed the input");
    assert!(tool(&[s(&ko)]).status.success());
    assert_eq!(out.stdout, fs::read(&ko).unwrap(), "stdout holds the processed module");
}

#[test]
fn jobs_zero_is_refused() {
    let dir = Scratch::new("j0");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let out = tool(&["-j", "0", s(&ko)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("0 threads: give 1 or more"), "{}", stderr(&out));
    assert_eq!(fs::read(&ko).unwrap(), original);
    assert!(tool(&["-j", "1", s(&ko)]).status.success());
}

#[test]
fn usage_errors_carry_the_program_name_like_every_other_message() {
    for args in [&[][..], &["--bogus", MODULE][..], &["--signed=maybe", MODULE][..], &["-j", "x", MODULE][..]] {
        let out = tool(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("zero-weak-mcount: error: "), "{args:?}: {err}");
        assert!(!err.contains("\nerror:"), "{args:?}: {err}");
    }
    // Help and version are not errors, and go to stdout.
    let out = tool(&["--help"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Usage:"));
    let out = tool(&["--version"]);
    assert!(out.status.success());
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(version.starts_with(concat!("zero-weak-mcount ", env!("CARGO_PKG_VERSION"), " ")), "{version}");
    assert!(version.contains(" git:") || version.contains(" sources:"), "no build identity: {version}");
    // Our own builds keep the line plain.  (Makefile.snippet only ever writes
    // it into its stamp file, so a distribution's "1.2 (Debian 1.2-1)" is
    // fine too: scripts/integration/kbuild*.sh and make kbuild-btf prove it.)
    let unsafe_chars: Vec<char> =
        version.trim_end().chars().filter(|c| !c.is_ascii_alphanumeric() && !" ._+:-".contains(*c)).collect();
    assert!(unsafe_chars.is_empty(), "shell metacharacters {unsafe_chars:?} in {version}");
}

/// The progress line on a terminal (a pty from `script`): the count only
/// grows, and it is redrawn at most every 100 ms, not once per module.
#[test]
fn progress_counts_up_and_is_throttled() {
    let dir = Scratch::new("progress");
    let original = fs::read(MODULE).unwrap();
    fs::create_dir(dir.0.join("t")).unwrap();
    let n = 400;
    for i in 0..n {
        dir.file(&format!("t/m{i:03}.ko"), &original);
    }
    let script = std::process::Command::new("script").arg("--version").output();
    assert!(
        script.is_ok_and(|o| o.status.success()),
        "this test needs script(1) from util-linux for a pseudo-terminal (apt-get install bsdutils)"
    );
    let cmd = format!("{} -j 2 --check {}", common::BIN, s(&dir.0.join("t")));
    let start = std::time::Instant::now();
    let out = std::process::Command::new("script").args(["-q", "-e", "-c", &cmd, "/dev/null"]).output().unwrap();
    let elapsed = start.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("{n} modules: {n} would change")), "{text}");
    let counts: Vec<usize> = text
        .split('\r')
        .filter_map(|p| p.strip_prefix("zero-weak-mcount: "))
        .filter_map(|p| p.split('/').next()?.parse().ok())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "the count went backwards or repeated: {counts:?}");
    let allowed = usize::try_from(elapsed.as_millis() / 100).unwrap() + 1;
    assert!(counts.len() <= allowed, "{} redraws in {elapsed:?}: {counts:?}", counts.len());
}

/// `--format=json`: one object per module on stdout, with the real values
/// of the bundled module (docs/report-format.md), and nothing else there.
#[test]
fn json_reports_the_bundled_modules_entries() {
    let out = tool(&["--check", "--format=json", MODULE]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let o = lines[0];
    assert!(
        o.starts_with(&format!("{{\"file\": \"{MODULE}\", \"status\": \"would_change\", \"signed\": false")),
        "{o}"
    );
    for field in [
        "\"error\": null",
        "\"reason\": null",
        "\"arch\": \"x86_64\"",
        "\"section\": \"__mcount_loc\"",
        "\"rule\": \"max_offset\"",
        "\"max_offset\": 0",
        "\"in_function_before\": null",
        "\"neutraliser\": \"zero\"",
        "\"entries\": 8",
        "\"weak\": 2",
        "\"doubt\": 0",
        "\"at_risk\": []",
        "\"at_risk_after\": []",
        "\"warnings\": []",
    ] {
        assert!(o.contains(field), "{field} missing: {o}");
    }
    assert!(o.ends_with(", \"format_version\": 1}"), "{o}");
    // Without -v only the weak entries, in table order.
    assert!(
        o.contains(
            "\"findings\": [{\"location\": \".text+0x0\", \"section\": \".text\", \"offset\": \"0x0\", \
             \"table_offset\": \"0x0\", \"verdict\": \"weak\", \"neutraliser\": \"zero\", \"distance\": 0, \
             \"symbol\": null, \"doubt\": null, \"found_by\": \"max_offset\", \"stock\": \"rejected\"}, \
             {\"location\": \".text+0x20\", \"section\": \".text\", \"offset\": \"0x20\", \"table_offset\": \"0x10\", \
             \"verdict\": \"weak\", \"neutraliser\": \"zero\", \"distance\": 16, \"symbol\": \"zwm_arch_kept\", \
             \"doubt\": null, \"found_by\": \"max_offset\", \"stock\": \"rejected\"}]"
        ),
        "{o}"
    );
    // With -v the six kept entries too: eight findings, two of them weak.
    let out = tool(&["--check", "-v", "--format=json", MODULE]);
    let o = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(o.matches("\"verdict\": ").count(), 8, "{o}");
    assert_eq!(o.matches("\"verdict\": \"weak\"").count(), 2, "{o}");
    assert_eq!(o.matches("\"verdict\": \"kept\"").count(), 6, "{o}");
    assert!(out.stderr.is_empty(), "-v lines go to JSON, not stderr: {}", stderr(&out));
    // The reports own stdout: a module written there too is refused.
    let out = tool(&["--format=json", "-o", "-", MODULE]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(out.stdout.is_empty() && stderr(&out).contains("-o - cannot"), "{}", stderr(&out));
}

/// `in_function_before`: the bytes ahead of a function symbol that the
/// `in_function` rule counts as inside it, `null` under `max_offset`. The
/// bundled module's own bytes judged as a 5.10 module (its vermagic the only
/// change; x86 had no `FTRACE_MCOUNT_MAX_OFFSET` before 6.0) give 0, and
/// arm64, whose patchable entries sit 8 bytes ahead of the function, 8.
#[test]
fn json_reports_the_in_function_window() {
    let dir = Scratch::new("json-window");
    let bundled = fs::read(MODULE).unwrap();
    let (from, to): (&[u8], &[u8]) = (b"vermagic=6.1.0-57-amd64 ", b"vermagic=5.10.0-5-amd64 ");
    let at = bundled.windows(from.len()).position(|w| w == from).expect("the bundled module's vermagic");
    let mut old = bundled.clone();
    old[at..at + to.len()].copy_from_slice(to);
    let old = dir.file("old.ko", &old);
    let arm64 = dir.file("arm64.ko", &common::arm64_adjust_first());
    for (ko, rule, window, weak) in [
        (Path::new(MODULE), "max_offset", "null", 2),
        (old.as_path(), "in_function", "0", 2),
        (arm64.as_path(), "in_function", "8", 5),
    ] {
        let out = tool(&["--check", "--format=json", s(ko)]);
        let o = String::from_utf8(out.stdout).unwrap();
        let max_offset = if rule == "max_offset" { "0" } else { "null" };
        let want = format!(
            "\"rule\": \"{rule}\", \"max_offset\": {max_offset}, \"in_function_before\": {window}, \"neutraliser\": "
        );
        assert!(o.contains(&want), "{want} missing: {o}");
        assert!(o.contains(&format!("\"weak\": {weak}, ")), "{o}");
    }
}

/// After the write the same module is unchanged, and a file that cannot be
/// read is an "error" object with the message, among the others.
#[test]
fn json_reports_changes_and_errors_per_file() {
    let dir = Scratch::new("json");
    let ko = dir.file("m.ko", &fs::read(MODULE).unwrap());
    let bad = dir.file("bad.ko", b"not an ELF file");
    let out = tool(&["--format=json", s(&ko)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let o = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(o.contains("\"status\": \"changed\"") && o.contains("\"weak\": 2"), "{o}");
    let out = tool(&["--check", "--format=json", s(&ko), s(&bad)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("\"status\": \"unchanged\"") && lines[0].contains("\"weak\": 0"), "{}", lines[0]);
    let err = stderr(&out);
    let message = err.trim_end().rsplit(": error: ").next().unwrap();
    assert!(lines[1].starts_with(&format!("{{\"file\": \"{}\", \"status\": \"error\"", s(&bad))), "{}", lines[1]);
    assert!(lines[1].contains(&format!("\"error\": \"{message}\"")), "{} vs {err}", lines[1]);
    assert!(lines[1].contains("\"findings\": []"), "{}", lines[1]);
    assert!(lines.iter().all(|l| l.ends_with(", \"format_version\": 1}")), "{text}");
}

/// Started with its standard fds closed (a hook run by a daemon), the tool
/// must never let a module it has open become fd 1 or 2: a line printed
/// for one module while another is being written would land in that one.
/// std's start-up opens each closed fd on /dev/null before `main` runs.
/// Two jobs over a tree, JSON on stdout, `-v` on stderr.
#[test]
fn closed_standard_fds_are_never_a_module() {
    use std::os::unix::process::CommandExt as _;
    let dir = Scratch::new("closed-fds");
    let processed = dir.processed_module();
    let tree = dir.0.join("tree");
    fs::create_dir(&tree).unwrap();
    let original = fs::read(MODULE).unwrap();
    for i in 0..40 {
        fs::write(tree.join(format!("m{i:02}.ko")), &original).unwrap();
    }
    let mut cmd = std::process::Command::new(common::BIN);
    cmd.args(["-v", "-j2", "--format=json", s(&tree)]);
    // SAFETY: close(2), async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for fd in 0..3 {
                libc::close(fd);
            }
            Ok(())
        });
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "{status:?}");
    for i in 0..40 {
        assert!(
            fs::read(tree.join(format!("m{i:02}.ko"))).unwrap() == processed,
            "m{i:02}.ko is not the processed bytes"
        );
    }
}

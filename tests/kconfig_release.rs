// SPDX-License-Identifier: GPL-2.0-only
//! `--kconfig` from another kernel: a release whose major.minor differs from
//! the module's vermagic is a warning naming both (an error under
//! `--fatal-warnings`); a config from another arch is an error naming both.
//! The bundled module's vermagic is `6.1.0-57-amd64`.

mod common;

use common::{MODULE, Scratch, stderr, tool};

use std::fs;

const BODY: &str = "CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n# CONFIG_X86_KERNEL_IBT is not set\n";

fn header(arch: &str, release: &str) -> String {
    format!("#\n# Automatically generated file; DO NOT EDIT.\n# Linux/{arch} {release} Kernel Configuration\n#\n{BODY}")
}

#[test]
fn a_config_from_another_release_warns_naming_both() {
    let dir = Scratch::new("kconfig-release");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let ko = ko.to_str().unwrap();
    let expected = "warning: --kconfig is for kernel 7.2.13 (from its header), this module for 6.1.0-57-amd64 \
                    (its vermagic)";

    let cfg = dir.file("config-7.2", header("x86", "7.2.13").as_bytes());
    let out = tool(&["--check", "--kconfig", cfg.to_str().unwrap(), ko]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));

    // Under --fatal-warnings, an error and the module left as it is.
    let out = tool(&["--fatal-warnings", "--kconfig", cfg.to_str().unwrap(), ko]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error: warning treated as an error (--fatal-warnings): --kconfig is for kernel 7.2.13")
    );
    assert_eq!(fs::read(ko).unwrap(), original);
    let out = tool(&["--check", "--fatal-warnings", "--kconfig", cfg.to_str().unwrap(), ko]);
    assert_eq!(out.status.code(), Some(2), "trouble under --check: {}", stderr(&out));

    // The same release, whatever its patch level and ARCH alias: no warning.
    for (arch, release) in [("x86", "6.1.0"), ("x86_64", "6.1.192")] {
        let cfg = dir.file("config-6.1", header(arch, release).as_bytes());
        let out = tool(&["--check", "--kconfig", cfg.to_str().unwrap(), ko]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(!stderr(&out).contains("warning"), "{arch} {release}: {}", stderr(&out));
    }

    // No header: include/config/kernel.release beside auto.conf, as in a
    // headers tree.
    fs::create_dir_all(dir.0.join("include/config")).unwrap();
    let auto = dir.file("include/config/auto.conf", BODY.as_bytes());
    dir.file("include/config/kernel.release", b"7.2.13+deb14-amd64\n");
    let out = tool(&["--kconfig", auto.to_str().unwrap(), ko]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "warning: --kconfig is for kernel 7.2.13+deb14-amd64 (from include/config/kernel.release), this module \
             for 6.1.0-57-amd64"
        ),
        "{}",
        stderr(&out)
    );
    assert_ne!(fs::read(ko).unwrap(), original, "a warning alone does not stop the write");
    // Neither a header nor kernel.release: nothing to compare, no warning.
    fs::remove_file(dir.0.join("include/config/kernel.release")).unwrap();
    fs::write(ko, &original).unwrap();
    let out = tool(&["--kconfig", auto.to_str().unwrap(), ko]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn a_config_from_another_arch_is_an_error_naming_both() {
    let dir = Scratch::new("kconfig-arch");
    let original = fs::read(MODULE).unwrap();
    let ko = dir.file("m.ko", &original);
    let cfg = dir
        .file("config-arm64", b"# Linux/arm64 6.1.0 Kernel Configuration\nCONFIG_ARM64=y\nCONFIG_DYNAMIC_FTRACE=y\n");
    let out = tool(&["--kconfig", cfg.to_str().unwrap(), ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "error: kernel config: the config is not for x86_64, this module's arch (CONFIG_X86_64 is not set; it is \
             a Linux/arm64 6.1.0 config)"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&ko).unwrap(), original);
    // A config whose symbols say x86_64 but whose header names another arch.
    let odd = dir.file("config-odd", format!("# Linux/powerpc 6.1.0 Kernel Configuration\n{BODY}").as_bytes());
    let out = tool(&["--check", "--kconfig", odd.to_str().unwrap(), ko.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the config is for powerpc (its header), this module for x86_64 (arch/x86)"),
        "{}",
        stderr(&out)
    );
}

// SPDX-License-Identifier: GPL-2.0-only
//! Kernel configuration: a `.config` or `include/config/auto.conf`.
//!
//! Only the answers matter here, so the file is read as `CONFIG_X=value`
//! lines; `# CONFIG_X is not set` and absent options are both "off", which
//! is what they mean to the preprocessor that builds the kernel.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use std::collections::HashMap;
use std::path::Path;

use crate::error::Error;

#[derive(Debug, Clone, Default)]
pub struct Kconfig {
    values: HashMap<String, String>,
    /// The kernel release the config is for, and where that was read.
    pub release: Option<(String, &'static str)>,
    /// The `SRCARCH` of the header line (`x86`, `arm64`, `powerpc`, ...).
    pub arch: Option<String>,
}

/// Where [`Kconfig::load`] found the config's release.
pub const FROM_HEADER: &str = "its header";
pub const FROM_KERNEL_RELEASE: &str = "include/config/kernel.release";

impl Kconfig {
    pub fn load(path: &Path) -> Result<Kconfig, Error> {
        let text = std::fs::read(path)
            .map_err(|e| Error::Config(format!("{}: {}", path.display(), crate::error::plain(&e))))?;
        let text = String::from_utf8_lossy(&text);
        let mut config = Kconfig::parse(&text);
        if config.release.is_none() {
            config.release = kernel_release(path).map(|r| (r, FROM_KERNEL_RELEASE));
        }
        if config.values.is_empty() {
            return Err(Error::Config(format!(
                "{}: no CONFIG_ lines: not a kernel .config or auto.conf",
                path.display()
            )));
        }
        Ok(config)
    }

    #[must_use]
    pub fn parse(text: &str) -> Kconfig {
        let values = text
            .lines()
            .filter_map(|line| {
                let (key, value) = line.trim().split_once('=')?;
                let key = key.strip_prefix("CONFIG_")?;
                Some((key.to_string(), value.trim_matches('"').to_string()))
            })
            .collect();
        let (arch, release) = header(text).map_or((None, None), |(a, r)| (Some(a), Some((r, FROM_HEADER))));
        Kconfig { values, release, arch }
    }

    /// Whether `CONFIG_<name>` is `y` or `m`.
    pub fn enabled(&self, name: &str) -> bool {
        matches!(self.values.get(name).map(String::as_str), Some("y" | "m"))
    }
}

/// `# Linux/x86 6.1.0 Kernel Configuration`, the line Kconfig writes near
/// the top of `.config` and `auto.conf` (scripts/kconfig/confdata.c):
/// the arch and the release.
fn header(text: &str) -> Option<(String, String)> {
    text.lines().take(10).find_map(|line| {
        let rest = line.strip_prefix("# Linux/")?.strip_suffix(" Kernel Configuration")?;
        let (arch, release) = rest.split_once(' ')?;
        Some((arch.to_string(), release.trim().to_string()))
    })
}

/// The release Kbuild wrote beside the config: `include/config/kernel.release`
/// next to `include/config/auto.conf`, or under the tree a `.config` heads.
fn kernel_release(config: &Path) -> Option<String> {
    let dir = config.parent()?;
    [dir.join("kernel.release"), dir.join("include/config/kernel.release")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dot_config_and_auto_conf_alike() {
        let c = Kconfig::parse(
            "# Linux/x86 6.1.0 Kernel Configuration\nCONFIG_X86_64=y\n# CONFIG_X86_KERNEL_IBT is not set\n\
             CONFIG_KVM=m\nCONFIG_LOCALVERSION=\"-amd64\"\n",
        );
        assert!(c.enabled("X86_64"));
        assert!(c.enabled("KVM"));
        assert!(!c.enabled("X86_KERNEL_IBT"));
        assert!(!c.enabled("ABSENT"));
        assert_eq!(c.values.get("LOCALVERSION").map(String::as_str), Some("-amd64"));
        assert_eq!(c.arch.as_deref(), Some("x86"));
        assert_eq!(c.release, Some(("6.1.0".to_string(), FROM_HEADER)));
    }
}

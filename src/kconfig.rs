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
}

impl Kconfig {
    pub fn load(path: &Path) -> Result<Kconfig, Error> {
        let text = std::fs::read(path).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        let text = String::from_utf8_lossy(&text);
        let config = Kconfig::parse(&text);
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
        Kconfig { values }
    }

    /// Whether `CONFIG_<name>` is `y` or `m`.
    pub fn enabled(&self, name: &str) -> bool {
        matches!(self.values.get(name).map(String::as_str), Some("y" | "m"))
    }
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
    }
}

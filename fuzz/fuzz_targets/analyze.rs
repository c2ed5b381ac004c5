// SPDX-License-Identifier: GPL-2.0-only
//! Parse and plan: `analyze` on arbitrary bytes must return, never panic,
//! under every signature policy and with a config that selects the
//! ppc64 `+8` adjust and the `x86_64` no-IBT rule. Without `-v` and with
//! it, the analysis must be the same but for the kept entries `-v` lists:
//! `-v` always takes the full decision, and without it a module may be
//! answered while it is read (src/kept.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, SignedPolicy, analyze};
use zero_weak_mcount::report::Finding;

fuzz_target!(|data: &[u8]| {
    let quick = analyze(data, &Options::default());
    let full = analyze(data, &Options { verbose: true, ..Options::default() }).map(|mut a| {
        a.report.findings.retain(|f| !matches!(f, Finding::Kept { .. }));
        a
    });
    assert_eq!(format!("{quick:?}"), format!("{full:?}"), "-v and not");
    for opts in options() {
        let _ = analyze(data, opts);
    }
});

fn options() -> &'static [Options] {
    static OPTIONS: std::sync::OnceLock<Vec<Options>> = std::sync::OnceLock::new();
    OPTIONS.get_or_init(|| {
        let cfg = |text: &str| Options { kconfig: Some(Kconfig::parse(text)), ..Options::default() };
        vec![
            Options { signed: SignedPolicy::Strip, ..Options::default() },
            Options { signed: SignedPolicy::Leave, ..Options::default() },
            cfg("CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n"),
            cfg("CONFIG_PPC64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
                 CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y\n"),
            cfg("CONFIG_PPC32=y\nCONFIG_DYNAMIC_FTRACE=y\n"),
        ]
    })
}

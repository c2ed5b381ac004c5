// SPDX-License-Identifier: GPL-2.0-only
//! Apply: whatever `analyze` accepts, its plan applies without panicking,
//! the output parses again, a second run is a no-op, and nothing outside
//! the callsite table, its relocation section, their `sh_size` fields and
//! the values of the table's own symbols (which a drop moves) changed
//! (a dropped signature may shorten the file).
#![no_main]
#![allow(clippy::cast_possible_truncation, reason = "lengths and indices of in-memory inputs, as in tests/")]

use libfuzzer_sys::fuzz_target;
use zero_weak_mcount::elf::parse_info;
use zero_weak_mcount::kconfig::Kconfig;
use zero_weak_mcount::process::{Options, SignedPolicy, analyze};
use zero_weak_mcount::signature;

#[path = "../../tests/common/ranges.rs"]
mod ranges;
use ranges::allowed_ranges;

fuzz_target!(|data: &[u8]| {
    for opts in options() {
        let Ok(a) = analyze(data, opts) else { continue };
        let out = a.plan.apply_to(data);
        if a.plan.is_empty() {
            assert_eq!(out, data, "an empty plan changed the bytes");
            continue;
        }
        let image_len = match a.plan.truncate {
            Some(t) => {
                assert_eq!(opts.signed, SignedPolicy::Strip, "truncated without --signed=strip");
                // Every appended signature is dropped (a module may be signed twice).
                let len = signature::image_len(data).unwrap().unwrap();
                assert_eq!(len, t as usize, "truncated elsewhere than before the signatures");
                t as usize
            }
            None => data.len(),
        };
        assert_eq!(out.len(), image_len);
        let image = &data[..image_len];
        let ranges = allowed_ranges(image);
        for (i, (x, y)) in image.iter().zip(&out).enumerate() {
            if x != y {
                assert!(
                    ranges.iter().any(|&(s, e)| (s..e).contains(&(i as u64))),
                    "byte {i:#x} changed outside the callsite table and its relocations"
                );
            }
        }
        parse_info(&out).expect("the output parses");
        let again = analyze(&out, opts).expect("the output is accepted again");
        assert!(again.plan.is_empty(), "second run is not a no-op: {:?}", again.plan);
    }
});

fn options() -> &'static [Options] {
    static OPTIONS: std::sync::OnceLock<Vec<Options>> = std::sync::OnceLock::new();
    OPTIONS.get_or_init(|| {
        let cfg = |text: &str| Options { kconfig: Some(Kconfig::parse(text)), ..Options::default() };
        vec![
            Options::default(),
            Options { signed: SignedPolicy::Strip, ..Options::default() },
            cfg("CONFIG_X86_64=y\nCONFIG_DYNAMIC_FTRACE=y\n"),
            cfg("CONFIG_PPC64=y\nCONFIG_DYNAMIC_FTRACE=y\nCONFIG_ARCH_USING_PATCHABLE_FUNCTION_ENTRY=y\n\
                 CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y\n"),
        ]
    })
}

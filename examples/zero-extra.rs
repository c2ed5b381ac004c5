// SPDX-License-Identifier: GPL-2.0-only
//! A deliberately broken tool, for the end-to-end test's negative control:
//! it zeroes (or, where the tool drops, drops) what zero-weak-mcount does,
//! plus the first VALID entry. A
//! test that cannot tell this from the real tool proves nothing. It runs
//! the same per-entry pipeline (`decide::all`), so it follows every rule:
//! the max offset on x86 and powerpc, containment on arm64, riscv, s390,
//! loongarch and arm.
//!
//!     cargo run --release --example zero-extra -- IN OUT

use zero_weak_mcount::arch::{self, Overrides, Scope};
use zero_weak_mcount::decide::{self, Layout, SymbolIndex, Verdict};
use zero_weak_mcount::elf;
use zero_weak_mcount::plan::{Plan, Removal};
use zero_weak_mcount::rule::Neutraliser;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = &args[..] else {
        eprintln!("usage: zero-extra IN OUT");
        std::process::exit(2);
    };
    let data = std::fs::read(input).unwrap();
    let info = elf::parse_info(&data).unwrap();
    let Scope::Act(rule) = arch::rule_for(&data, &info, None, &Overrides::default()).unwrap() else {
        panic!("the kernel does not check this module");
    };
    let callsite = info.alloc_section(rule.section).expect("no callsite table");
    let x = elf::extract(&data, &info, callsite, rule.shape, rule.mapping)
        .unwrap()
        .table()
        .expect("no callsite relocations");
    let symbols = SymbolIndex::from_vec(x.symbols.clone(), x.strings);
    let layout = Layout::for_rule(&info.sections, &symbols, &rule);
    let mut extra = None;
    let decisions = decide::all(&data, &info, &rule, &x.callsite.entries, &symbols, &layout, |i, _, verdict| {
        if extra.is_none() && *verdict == Verdict::Valid {
            extra = Some(i);
        }
    });
    let mut zero = decisions.dead;
    let extra = extra.expect("no valid entry to break");
    zero.push(extra);
    zero.sort_unstable();
    let (verb, table_symbols) = match rule.neutraliser {
        Neutraliser::Zero => ("zeroed", None),
        Neutraliser::Drop { .. } => ("dropped", Some(elf::table_symbols(&data, &info, &x.callsite).unwrap().unwrap())),
    };
    let removal = table_symbols.as_deref().map_or(Removal::Zero, Removal::Drop);
    let plan = Plan::new(&data, &info, &x.callsite, &zero, removal).unwrap();
    std::fs::write(output, plan.apply_to(&data)).unwrap();
    eprintln!("zero-extra: {verb} {} entries, including valid entry {extra}", zero.len());
}

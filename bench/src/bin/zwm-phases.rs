// SPDX-License-Identifier: GPL-2.0-only
//! In-process phase timings of the tool's analysis (the library's own
//! functions, called as `process::analyze` calls them), and of the naive
//! kernel-style search on the same parsed data.
//!
//! usage: zwm-phases [--reps N] [--naive-budget SECS] [--no-naive] FILE...
//!        zwm-phases --walk DIR    time the tree walk alone (`walk::tree`),
//!                                 the serial part of tree mode
//!
//! Prints one tab-separated row per file: counts, then the median over N
//! passes of each phase in microseconds, then the naive decide time (one
//! pass; if it exceeds the budget it is stopped and extrapolated linearly
//! from the entries done, marked by `naive_extrapolated=1`), and whether
//! naive and tool agree on every entry the tool does not keep for doubt;
//! last, `read_us`: the median time of what the tool does instead of the
//! phases when every entry is kept (parse, then `kept::all_kept`), "-"
//! where it hands the module to them.

use std::path::Path;
use std::time::Duration;

use zwm_bench::{
    Phases, Res, image, map, median, naive_decide, tool_all_kept, tool_extract, tool_parse, tool_pass, us,
};

fn main() -> Res<()> {
    let mut reps = 5usize;
    let mut budget = Some(Duration::from_secs(20));
    let mut naive = true;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => reps = args.next().ok_or("--reps N")?.parse()?,
            "--naive-budget" => budget = Some(Duration::from_secs_f64(args.next().ok_or("--naive-budget S")?.parse()?)),
            "--no-naive" => naive = false,
            "--walk" => {
                let dir = args.next().ok_or("--walk DIR")?;
                let mut t = Vec::new();
                let mut n = 0;
                for _ in 0..reps.max(1) {
                    let s = std::time::Instant::now();
                    n = zero_weak_mcount::walk::tree(Path::new(&dir))?.modules.len();
                    t.push(s.elapsed());
                }
                println!("walk\t{dir}\t{n} modules\t{:.0} us (median of {reps})", us(median(t)));
                return Ok(());
            }
            _ => files.push(a),
        }
    }
    println!(
        "file\tsymtab\tlookup_syms\tentries\tzeroed\tdoubts\tparse_us\textract_us\tsort_us\tlayout_us\tdecide_us\tplan_us\ttotal_us\tnaive_decide_us\tnaive_extrapolated\tnaive_total_us\tagree\tread_us"
    );
    for f in &files {
        let map = map(Path::new(f))?;
        let image = image(&map)?;
        let mut runs = Vec::new();
        let mut last = None;
        for _ in 0..reps.max(1) {
            match tool_pass(image)? {
                Some((p, shape, zero, doubt)) => {
                    runs.push(p);
                    last = Some((shape, zero, doubt));
                }
                None => break,
            }
        }
        let Some((shape, zero, doubt)) = last else {
            eprintln!("zwm-phases: {f}: nothing to do (no callsite table or not a checked arch)");
            continue;
        };
        let med = |g: fn(&Phases) -> Duration| median(runs.iter().map(g).collect());
        let p = Phases {
            parse: med(|p| p.parse),
            extract: med(|p| p.extract),
            sort: med(|p| p.sort),
            layout: med(|p| p.layout),
            decide: med(|p| p.decide),
            plan: med(|p| p.plan),
        };
        let total = median(runs.iter().map(Phases::total).collect());
        let (mut nd, mut extrap, mut agree) = (f64::NAN, 0, "-".to_string());
        if naive {
            let (info, rule) = tool_parse(image)?.expect("parsed above");
            let x = tool_extract(image, &info, &rule)?.expect("extracted above");
            let n = naive_decide(image, &info, &rule, &x, budget)?;
            nd = us(n.elapsed);
            if n.done < shape.entries {
                extrap = 1;
                #[allow(clippy::cast_precision_loss, reason = "entry counts, far below 2^52")]
                let scale = shape.entries as f64 / n.done.max(1) as f64;
                nd *= scale;
            }
            // Compare on the entries naive decided, leaving out the tool's doubts.
            let tool_zero: std::collections::HashSet<usize> = zero.iter().copied().collect();
            let naive_zero: std::collections::HashSet<usize> = n.zero.iter().copied().collect();
            let diff = (0..n.done).filter(|&i| !doubt[i] && tool_zero.contains(&i) != naive_zero.contains(&i)).count();
            agree = if diff == 0 { "yes".into() } else { format!("NO({diff})") };
        }
        let read = read_us(image, reps)?;
        // Naive total: the same parse/extract/plan, naive search instead of sort+layout+decide.
        let naive_total = us(p.parse + p.extract + p.plan) + nd;
        println!(
            "{f}\t{}\t{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.0}\t{extrap}\t{:.0}\t{agree}\t{read}",
            shape.symtab,
            shape.lookup_symbols,
            shape.entries,
            shape.zeroed,
            shape.doubts,
            us(p.parse),
            us(p.extract),
            us(p.sort),
            us(p.layout),
            us(p.decide),
            us(p.plan),
            us(total),
            nd,
            naive_total,
        );
    }
    Ok(())
}

/// The median time, over `reps` passes, of parsing `image` and answering
/// it while it is read (`kept::all_kept`), in µs; "-" where that hands
/// the module to the phases.
fn read_us(image: &[u8], reps: usize) -> Res<String> {
    let mut passes = Vec::new();
    for _ in 0..reps.max(1) {
        let start = std::time::Instant::now();
        let (info, rule) = tool_parse(image)?.expect("parsed above");
        if tool_all_kept(image, &info, &rule)?.is_none() {
            return Ok("-".into());
        }
        passes.push(start.elapsed());
    }
    Ok(format!("{:.1}", us(median(passes))))
}

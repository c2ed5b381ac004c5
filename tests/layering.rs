// SPDX-License-Identifier: GPL-2.0-only
//! The modules of src/ import each other without a circle: the shared
//! plain data (src/rule.rs, src/elf.rs) sits below the code that picks a
//! rule (src/arch.rs) and the code that applies it (src/decide.rs), and
//! the decision never reads the module itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

/// `use crate::NAME` and `crate::NAME::` in code (not in comments), by file.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in
        fs::read_dir(std::env::var("ZWM_SRC").unwrap_or(concat!(env!("CARGO_MANIFEST_DIR"), "/src").into())).unwrap()
    {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "rs") || name == "main" || name == "lib" {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        // Tests may reach anywhere; only the module's own code counts.
        let code = text.split("#[cfg(test)]").next().unwrap();
        let mut uses = BTreeSet::new();
        for line in code.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
            for part in line.split("crate::").skip(1) {
                let module: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if module != name && !module.is_empty() {
                    uses.insert(module);
                }
            }
        }
        graph.insert(name, uses);
    }
    graph
}

/// The items a module's code (not its tests) names from `crate::elf`.
fn elf_items(name: &str) -> BTreeSet<String> {
    let src = std::env::var("ZWM_SRC").unwrap_or(concat!(env!("CARGO_MANIFEST_DIR"), "/src").into());
    let text = fs::read_to_string(format!("{src}/{name}.rs")).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap();
    let ident = |s: &str| s.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut items = BTreeSet::new();
    for line in code.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        if let Some(list) = line.strip_prefix("use crate::elf::{") {
            items.extend(list.split('}').next().unwrap().split(',').map(ident));
        }
        let parts: Vec<&str> = line.split("elf::").collect();
        for (before, after) in parts.iter().zip(&parts[1..]) {
            // `elf::` itself, not the end of `Self::`.
            if !before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                items.insert(ident(after));
            }
        }
    }
    items.retain(|i| !i.is_empty() && i != "self");
    items
}

/// Depth-first search for a circle through `m`.
fn visit<'a>(
    m: &'a str,
    graph: &'a BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<&'a str>,
    done: &mut BTreeSet<&'a str>,
) {
    if let Some(at) = path.iter().position(|p| *p == m) {
        panic!("import circle: {} -> {m}", path[at..].join(" -> "));
    }
    if !done.insert(m) {
        return;
    }
    path.push(m);
    for next in graph.get(m).into_iter().flatten() {
        visit(next, graph, path, done);
    }
    path.pop();
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = imports();
    assert!(graph.contains_key("rule") && graph.contains_key("arch") && graph.contains_key("decide"));
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
    // The decision is a function of plain data: reading the module is the
    // ELF reader's, and answering while it reads is src/kept.rs's.
    let reader = ["read", "Read", "Visit", "extract", "Extraction", "Extracted"];
    let used = elf_items("decide");
    assert!(used.contains("LookupSymbol"), "the scan finds what decide uses: {used:?}");
    assert!(reader.iter().all(|r| !used.contains(*r)), "decide uses the ELF reader: {used:?}");
    for plain in ["rule", "elf"] {
        for above in ["arch", "decide", "plan", "process"] {
            assert!(!graph[plain].contains(above), "{plain} imports {above}");
        }
    }
}

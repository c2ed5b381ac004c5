// SPDX-License-Identifier: GPL-2.0-only
//! The modules of src/ import each other without a circle: the shared
//! plain data (src/rule.rs, src/elf.rs) sits below the code that picks a
//! rule (src/arch.rs) and the code that applies it (src/decide.rs).

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
    for plain in ["rule", "elf"] {
        for above in ["arch", "decide", "plan", "process"] {
            assert!(!graph[plain].contains(above), "{plain} imports {above}");
        }
    }
}

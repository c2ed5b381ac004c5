// SPDX-License-Identifier: GPL-2.0-only
//! The edits of a module that the end-to-end test makes and the tool never
//! would, on the crate's own validated reader (`elf::parse_info` checks that
//! every section lies inside the file), for either ELF class and byte order:
//!
//!     hostile-edit strip IN OUT          drop every appended signature
//!     hostile-edit noinit IN OUT         init_module/cleanup_module relocations
//!                                        of .gnu.linkonce.this_module become
//!                                        R_*_NONE: the loader calls no init
//!                                        (s390x kvm.ko under TCG, no SIE)
//!     hostile-edit empty-table IN OUT    __mcount_loc and its relocations get
//!                                        sh_size 0 (every entry dropped: what
//!                                        the tool never writes on s390)
//!     hostile-edit neutralise IN OUT N   relocation N of the callsite table
//!                                        becomes R_*_NONE, its word 0 (what the
//!                                        tool would write, on a kernel it
//!                                        refuses: scripts/adjust-first-demo.sh)
//!
//! IN may be signed; OUT never is. Each prints what it did on stderr and
//! fails (status 1, OUT not written) when the module lacks what it edits.

#![allow(
    clippy::cast_possible_truncation,
    reason = "word sizes are 4 or 8 and string offsets 32-bit, all checked by parse_info against a file in memory"
)]

use object::elf;
use zero_weak_mcount::elf::{ElfInfo, Section, parse_info, read_uint, string_at};
use zero_weak_mcount::signature;

type Result<T> = std::result::Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("hostile-edit: {e}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<()> {
    let (verb, input, output, rest) = match args {
        [verb, input, output, rest @ ..] => (verb.as_str(), input, output, rest),
        _ => return Err("usage: hostile-edit strip|noinit|empty-table|neutralise IN OUT [N]".into()),
    };
    let raw = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let len = signature::image_len(&raw).map_err(|e| format!("{input}: {e}"))?.unwrap_or(raw.len());
    let mut data = raw[..len].to_vec();
    let info = parse_info(&data).map_err(|e| format!("{input}: {e}"))?;
    let done = match (verb, rest) {
        ("strip", []) => format!("{} signature bytes dropped", raw.len() - len),
        ("noinit", []) => noinit(&mut data, &info)?,
        ("empty-table", []) => empty_table(&mut data, &info, "__mcount_loc")?,
        ("neutralise", [n]) => neutralise(&mut data, &info, n.parse().map_err(|_| format!("bad index {n}"))?)?,
        _ => return Err(format!("unknown edit {verb} (or wrong arguments)")),
    };
    std::fs::write(output, &data).map_err(|e| format!("{output}: {e}"))?;
    eprintln!("hostile-edit: {input} -> {output}: {done}");
    Ok(())
}

fn section<'a>(info: &'a ElfInfo, name: &str) -> Result<(usize, &'a Section)> {
    info.sections.iter().enumerate().find(|(_, s)| s.name == name).ok_or(format!("no section {name}"))
}

/// The relocation section that applies to section `target`.
fn relocs_for(info: &ElfInfo, target: usize) -> Result<(usize, &Section)> {
    let mut it = info.relocation_sections_for(target);
    match (it.next(), it.next()) {
        (Some(r), None) => Ok(r),
        _ => Err(format!("section {} has not exactly one relocation section", info.sections[target].name)),
    }
}

/// One relocation: where its `r_info` lies in the file, its symbol and the
/// whole entry's range.
struct Reloc {
    info_at: usize,
    symbol: u64,
    offset: u64,
    entry: std::ops::Range<usize>,
}

fn relocs(data: &[u8], info: &ElfInfo, rs: &Section) -> Result<Vec<Reloc>> {
    let w = if info.is_64 { 8 } else { 4 };
    let ent = if rs.sh_type == elf::SHT_RELA { 3 * w } else { 2 * w };
    if rs.entsize != ent as u64 {
        return Err(format!("{}: entry size {} is not {ent}", rs.name, rs.entsize));
    }
    let start = usize::try_from(rs.offset).map_err(|e| e.to_string())?;
    let bytes = rs.bytes(data);
    Ok((0..bytes.len() / ent)
        .map(|i| {
            let at = start + i * ent;
            let r_info = read_uint(&data[at + w..at + 2 * w], info.big_endian);
            // ELF64_R_SYM is the high 32 bits, ELF32_R_SYM the high 24.
            let symbol = if info.is_64 { r_info >> 32 } else { r_info >> 8 };
            Reloc {
                info_at: at + w,
                symbol,
                offset: read_uint(&data[at..at + w], info.big_endian),
                entry: at..at + ent,
            }
        })
        .collect())
}

fn symbol_name<'a>(data: &'a [u8], info: &ElfInfo, symtab: &Section, index: u64) -> Result<&'a [u8]> {
    let strings = info.sections.get(symtab.link as usize).ok_or("symbol table without strings")?.bytes(data);
    let at = usize::try_from(index * symtab.entsize).map_err(|e| e.to_string())?;
    // st_name is the first 4 bytes of Elf32_Sym and of Elf64_Sym.
    let name = symtab.bytes(data).get(at..at + 4).ok_or(format!("symbol {index} outside its table"))?;
    Ok(string_at(strings, read_uint(name, info.big_endian) as u32))
}

fn noinit(data: &mut [u8], info: &ElfInfo) -> Result<String> {
    let (this, _) = section(info, ".gnu.linkonce.this_module")?;
    let (_, rs) = relocs_for(info, this)?;
    let symtab = info.sections.get(rs.link as usize).ok_or("relocations without symbols")?;
    let mut hits = Vec::new();
    for r in relocs(data, info, rs)? {
        let name = String::from_utf8_lossy(symbol_name(data, info, symtab, r.symbol)?).into_owned();
        if name == "init_module" || name == "cleanup_module" {
            // Keep the symbol, make the type 0: R_*_NONE on every arch.
            let none = if info.is_64 { r.symbol << 32 } else { r.symbol << 8 };
            data[r.info_at..r.info_at + info.word_size() as usize].copy_from_slice(&info.word_bytes(none));
            hits.push(name);
        }
    }
    if hits.iter().filter(|h| *h == "init_module").count() != 1 {
        return Err(format!("{} relocations against init_module, expected 1", hits.len()));
    }
    Ok(format!("relocations of {} made R_*_NONE", hits.join(", ")))
}

fn empty_table(data: &mut [u8], info: &ElfInfo, table: &str) -> Result<String> {
    let (t, _) = section(info, table)?;
    let (r, _) = relocs_for(info, t)?;
    for i in [t, r] {
        let at = usize::try_from(info.sh_size_field(i)).map_err(|e| e.to_string())?;
        data[at..at + info.word_size() as usize].copy_from_slice(&info.word_bytes(0));
    }
    Ok(format!("{table} and its relocations emptied"))
}

fn neutralise(data: &mut [u8], info: &ElfInfo, n: usize) -> Result<String> {
    let (t, ts) = ["__mcount_loc", "__patchable_function_entries"]
        .iter()
        .find_map(|name| section(info, name).ok())
        .ok_or("no callsite table")?;
    let (_, rs) = relocs_for(info, t)?;
    let r = relocs(data, info, rs)?.into_iter().nth(n).ok_or(format!("no relocation {n}"))?;
    let w = info.word_size();
    let word = ts.offset.checked_add(r.offset).filter(|_| r.offset + w <= ts.size).ok_or("word outside the table")?;
    let word = usize::try_from(word).map_err(|e| e.to_string())?;
    // r_info (and r_addend) become 0: R_*_NONE against no symbol.
    data[r.entry.start + w as usize..r.entry.end].fill(0);
    data[word..word + w as usize].fill(0);
    Ok(format!("entry {n} of {} (word {:#x}) made R_*_NONE, word 0", ts.name, r.offset))
}

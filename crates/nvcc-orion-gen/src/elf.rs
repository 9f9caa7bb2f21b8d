//! Cubins as the toolkit prints them: `cuobjdump -elf` (sections, their dumped contents,
//! symbols, `.nv.info` records), `cuobjdump -res-usage`, `nvdisasm -hex -c`. Symbol indices
//! such as `(0x12)` are dropped everywhere: they are positions in a table, not meaning.

use std::collections::BTreeMap;
use std::path::Path;

use crate::tools::{Tools, run};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub size: String,
    pub ty: String,
    pub flags: String,
    pub align: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Symbol {
    pub name: String,
    pub value: String,
    pub size: String,
    pub ty: String,
    pub bind: String,
    pub other: String,
    /// The section's name (`-` for none).
    pub section: String,
}

/// One cubin, read through `cuobjdump -elf` and `-res-usage`.
#[derive(Debug, Clone, Default)]
pub struct Elf {
    pub headers: BTreeMap<String, Header>,
    /// Dumped contents per section (lines, indices stripped).
    pub blocks: BTreeMap<String, Vec<String>>,
    pub symbols: Vec<Symbol>,
    /// `.nv.info` records: (function named, the record's lines).
    pub info: Vec<(String, String)>,
    /// `-res-usage` line per function.
    pub res: BTreeMap<String, String>,
}

pub fn read(tools: &Tools, cubin: &Path) -> Result<Elf, String> {
    let dir = cubin.parent().unwrap_or(Path::new("."));
    let arg = cubin.to_string_lossy();
    let dump = run(dir, &tools.cuobjdump, &["-elf", &arg], &[]);
    if !dump.ok {
        return Err(format!("cuobjdump -elf {arg}: {}", dump.stderr));
    }
    let res = run(dir, &tools.cuobjdump, &["-res-usage", &arg], &[]);
    if !res.ok {
        return Err(format!("cuobjdump -res-usage {arg}: {}", res.stderr));
    }
    let mut e = parse_elf(&dump.stdout);
    e.res = parse_res(&res.stdout);
    Ok(e)
}

/// `foo(0x1a)` → `foo`.
pub fn strip_indices(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("(0x") {
        let tail = &rest[i + 3..];
        let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && tail[hex..].starts_with(')') {
            out.push_str(&rest[..i]);
            rest = &tail[hex + 1..];
        } else {
            out.push_str(&rest[..i + 3]);
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

fn parse_elf(text: &str) -> Elf {
    let mut e = Elf::default();
    let mut index_name: BTreeMap<u64, String> = BTreeMap::new();
    let mut lines = text.lines().peekable();
    // The section table.
    for l in lines.by_ref() {
        if l.starts_with("Index Offset") {
            break;
        }
    }
    while let Some(l) = lines.peek() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 10 || u64::from_str_radix(f[0], 16).is_err() {
            break;
        }
        let n = f.len();
        let name = f[n - 1].to_string();
        index_name.insert(u64::from_str_radix(f[0], 16).unwrap(), name.clone());
        e.headers.insert(
            name,
            Header {
                size: f[2].into(),
                ty: f[5..n - 4].join(" "),
                flags: f[n - 4].into(),
                align: f[4].into(),
            },
        );
        lines.next();
    }
    // Then one block per section: a header line, its contents up to the next header.
    let mut current: Option<String> = None;
    let mut by_num: BTreeMap<u64, String> = BTreeMap::new();
    for l in lines {
        if let Some(name) = block_header(l, &e.headers) {
            e.blocks.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some(cur) = &current else { continue };
        if l.trim().is_empty() {
            continue;
        }
        if cur == ".symtab" {
            if let Some((num, s)) = symbol(l, &index_name) {
                by_num.insert(num, s.name.clone());
                e.symbols.push(s);
            }
            continue;
        }
        e.blocks.get_mut(cur).unwrap().push(strip_indices(l));
    }
    for (name, block) in e.blocks.iter_mut() {
        if name.starts_with(".nv.info.") {
            name_param_cbank(block, &by_num);
        }
    }
    e.info = info_records(e.blocks.get(".nv.info").map_or(&[][..], |v| v));
    e
}

/// `EIATTR_PARAM_CBANK` holds a raw symbol index (the kernel's bank-0 section symbol): name it.
fn name_param_cbank(block: &mut [String], by_num: &BTreeMap<u64, String>) {
    let mut in_cbank = false;
    for l in block.iter_mut() {
        if l.contains("Attribute:") {
            in_cbank = l.contains("EIATTR_PARAM_CBANK");
        } else if in_cbank && let Some(v) = l.trim().strip_prefix("Value:") {
            let mut words = v.split_whitespace();
            if let Some(name) = words
                .next()
                .and_then(|i| u64::from_str_radix(i.trim_start_matches("0x"), 16).ok())
                .and_then(|i| by_num.get(&i))
            {
                *l = format!(
                    "\tValue:\tsymbol {name} {}",
                    words.collect::<Vec<_>>().join(" ")
                );
            }
        }
    }
}

/// The section a block header line opens: `.section NAME[\tTYPE]` or a bare `NAME`.
fn block_header(l: &str, headers: &BTreeMap<String, Header>) -> Option<String> {
    let name = match l.strip_prefix(".section ") {
        Some(rest) => rest.split_whitespace().next()?,
        None => l.trim_end(),
    };
    headers.contains_key(name).then(|| name.to_string())
}

fn symbol(l: &str, index_name: &BTreeMap<u64, String>) -> Option<(u64, Symbol)> {
    let f: Vec<&str> = l.split_whitespace().collect();
    if f.len() < 9 || f[0] == "Num" {
        return None;
    }
    let n = f.len();
    let ndx = u64::from_str_radix(f[n - 2].trim_start_matches("0x"), 16).ok()?;
    let num = u64::from_str_radix(f[0].trim_start_matches("0x"), 16).ok()?;
    Some((
        num,
        Symbol {
            name: f[n - 1].into(),
            value: f[1].into(),
            size: f[2].into(),
            ty: f[3].into(),
            bind: f[4].into(),
            other: f[6..n - 2].join(" "),
            section: index_name.get(&ndx).cloned().unwrap_or_else(|| "-".into()),
        },
    ))
}

/// `.nv.info`'s records (`<0xN>` then its lines), each with the function it names.
fn info_records(lines: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for l in lines {
        if l.trim_start().starts_with("<0x") {
            out.push((String::new(), String::new()));
            continue;
        }
        let Some(last) = out.last_mut() else { continue };
        if let Some(f) = l.split("function: ").nth(1) {
            last.0 = f.split_whitespace().next().unwrap_or("").to_string();
        }
        last.1.push_str(l.trim());
        last.1.push('\n');
    }
    out
}

fn parse_res(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(f) = l.trim().strip_prefix("Function ") {
            let name = f.trim_end_matches(':').to_string();
            out.insert(name, lines.next().unwrap_or("").trim().to_string());
        }
    }
    out
}

/// `nvdisasm -hex -c`, per `.text.*` section: the lines of its listing.
pub fn listing(tools: &Tools, cubin: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let dir = cubin.parent().unwrap_or(Path::new("."));
    let arg = cubin.to_string_lossy();
    let r = run(dir, &tools.nvdisasm, &["-hex", "-c", &arg], &[]);
    if !r.ok {
        return Err(format!("nvdisasm -hex -c {arg}: {}", r.stderr));
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for l in r.stdout.lines() {
        if let Some(rest) = l.strip_prefix("//---------------------") {
            cur = rest.split_whitespace().next().map(str::to_string);
            continue;
        }
        if let Some(c) = &cur
            && !l.trim().is_empty()
        {
            out.entry(c.clone()).or_default().push(l.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_go() {
        assert_eq!(
            strip_indices("function: _Z1kv(0x1a)\tframe size: 0x8"),
            "function: _Z1kv\tframe size: 0x8"
        );
        assert_eq!(strip_indices("x (0xzz) (0x1"), "x (0xzz) (0x1");
    }
}

//! `cuobjdump -elf`, read once into a typed view: the section table, the symbols, every
//! relocation list, every `.nv.info` record as text, the call graph and the bytes of each
//! section that has them. Only what cuobjdump prints is used; nothing here reads ELF bytes.

use std::collections::BTreeMap;

/// One row of cuobjdump's section table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub(crate) index: usize,
    pub(crate) size: u64,
    pub(crate) kind: String,
    pub(crate) flags: u64,
    pub(crate) align: u64,
    pub(crate) info: u64,
    pub(crate) name: String,
}

/// One row of the symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub(crate) value: u64,
    pub(crate) size: u64,
    pub(crate) kind: String,
    pub(crate) bind: String,
    pub(crate) other: String,
    /// Index of the section it is defined in (0: undefined).
    pub(crate) section: usize,
    pub(crate) name: String,
}

/// One relocation: where, against which symbol, of which type, with which addend (`REL`
/// lists have none).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Reloc {
    pub(crate) offset: u64,
    pub(crate) symbol: String,
    pub(crate) kind: String,
    pub(crate) addend: Option<String>,
}

/// One `.nv.info` record: its attribute and the rest of what cuobjdump printed, symbol
/// indices (`name(0x12)`) removed so that records compare by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Record {
    pub(crate) attribute: String,
    pub(crate) text: String,
}

/// Everything cuobjdump printed of one cubin.
#[derive(Debug, Default)]
pub(crate) struct Dump {
    pub(crate) sm: u32,
    pub(crate) relocatable: bool,
    pub(crate) sections: Vec<Section>,
    pub(crate) symbols: Vec<Symbol>,
    /// Relocations by the name of the section they apply to.
    pub(crate) relocs: BTreeMap<String, Vec<Reloc>>,
    /// Records by the name of their `.nv.info*` section.
    pub(crate) records: BTreeMap<String, Vec<Record>>,
    /// Call edges, caller → callee, by symbol name: the first list of `.nv.callgraph`
    /// (after `<0,-1>`; the lists after `<0,-2>` .. `<0,-4>` name functions reached by
    /// pointer or launched from device code, and prototypes, not calls).
    pub(crate) calls: Vec<(String, String)>,
    /// The other lists' rows: (list 2..4, function, symbol name in list 4 or the prototype
    /// number in lists 2 and 3).
    pub(crate) graph_rows: Vec<(i64, String, String)>,
    /// Bytes of each section cuobjdump printed as words, cut to its size.
    pub(crate) data: BTreeMap<String, Vec<u8>>,
    /// Position in `sections`, by name.
    by_name: BTreeMap<String, usize>,
}

/// What cuobjdump printed could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cuobjdump -elf, line {line}: {what}")]
pub(crate) struct DumpError {
    line: usize,
    what: String,
}

/// The block a line of the listing belongs to.
enum Block {
    None,
    Sections,
    Symbols,
    Relocs(String),
    Info(String),
    Calls,
    Data(String),
}

impl Dump {
    /// Read cuobjdump's `-elf` listing of one cubin.
    pub(crate) fn parse(text: &str) -> Result<Dump, DumpError> {
        let mut d = Dump::default();
        let mut block = Block::None;
        let mut raw_calls: Vec<(i64, i64)> = Vec::new();
        let mut raw_rows: Vec<(i64, i64, i64)> = Vec::new();
        // The callgraph list the rows below belong to (pairs before any sentinel: calls).
        let mut list = 1;
        let mut record: Option<(String, Vec<String>)> = None;
        for (n, line) in text.lines().enumerate() {
            let err = |what: &str| DumpError {
                line: n + 1,
                what: format!("{what}: `{line}`"),
            };
            if let Some(rest) = line.strip_prefix("64-bit ELF: ") {
                d.header(rest);
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            if let Some(next) = d.block_start(line) {
                d.end_record(&block, record.take());
                block = next;
                continue;
            }
            match &block {
                Block::Sections if line.trim_start().starts_with("Index") => {}
                Block::Sections => {
                    let s = section_row(line).ok_or_else(|| err("section row"))?;
                    d.by_name.insert(s.name.clone(), d.sections.len());
                    d.sections.push(s);
                }
                Block::Symbols if line.trim_start().starts_with("Num") => {}
                Block::Symbols => d
                    .symbols
                    .push(symbol_row(line).ok_or_else(|| err("symbol row"))?),
                Block::Relocs(target) => {
                    let r = reloc_row(line).ok_or_else(|| err("relocation row"))?;
                    d.relocs.entry(target.clone()).or_default().push(r);
                }
                Block::Info(_) => record_line(line, &mut record, |r| d.end_record(&block, Some(r))),
                Block::Calls => match call_row(line).ok_or_else(|| err("call edge"))? {
                    (0, sentinel) if sentinel < 0 => list = -sentinel,
                    row if list <= 1 => raw_calls.push(row),
                    (a, b) => raw_rows.push((list, a, b)),
                },
                Block::Data(name) => {
                    let bytes = d.data.entry(name.clone()).or_default();
                    data_row(line, bytes);
                }
                Block::None => {}
            }
        }
        d.end_record(&block, record.take());
        d.cut_data();
        d.calls = d.named_calls(&raw_calls);
        d.graph_rows = d.named_rows(&raw_rows);
        Ok(d)
    }

    /// `type=ET_EXEC, ABI=8, sm=90, toolkit=13.5, flags=0x...`.
    fn header(&mut self, rest: &str) {
        for field in rest.split(", ") {
            match field.split_once('=') {
                Some(("type", t)) => self.relocatable = t == "ET_REL",
                Some(("sm", s)) => self.sm = s.parse().unwrap_or(0),
                _ => {}
            }
        }
    }

    /// The block `line` opens, if it opens one.
    fn block_start(&self, line: &str) -> Option<Block> {
        if line == "Sections:" {
            return Some(Block::Sections);
        }
        if let Some(rest) = line.strip_prefix(".section ") {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or("");
            let target = |prefix: &str| name.strip_prefix(prefix).map(str::to_string);
            return Some(match (name, parts.next()) {
                (".symtab", _) => Block::Symbols,
                (_, Some("REL" | "RELA")) => target(".rela")
                    .or_else(|| target(".rel"))
                    .map_or(Block::None, Block::Relocs),
                _ => Block::None,
            });
        }
        let s = &self.sections[*self.by_name.get(line.trim_end())?];
        Some(match s.kind.as_str() {
            "CUDA_INFO" | "CUDA_COMPAT_INFO" => Block::Info(s.name.clone()),
            "CUDA_CALLGRAPH" => Block::Calls,
            _ => Block::Data(s.name.clone()),
        })
    }

    fn end_record(&mut self, block: &Block, record: Option<(String, Vec<String>)>) {
        if let (Block::Info(section), Some((attribute, lines))) = (block, record) {
            let text = without_symbol_indices(&lines.join(" "));
            let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if attribute == "EIATTR_PARAM_CBANK" {
                text = self.first_value_named(&text);
            }
            self.records
                .entry(section.clone())
                .or_default()
                .push(Record { attribute, text });
        }
    }

    /// `... Value: 0x19 0x200210` → `... Value: .nv.constant0.k 0x200210`: records that hold
    /// a bare symbol index first (the parameter bank's section symbol).
    fn first_value_named(&self, text: &str) -> String {
        let Some((head, values)) = text.split_once("Value: ") else {
            return text.to_string();
        };
        let (first, rest) = values.split_once(' ').unwrap_or((values, ""));
        let name = hex(first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.symbols.get(i))
            .map_or(first, |s| s.name.as_str());
        format!("{head}Value: {name} {rest}").trim_end().to_string()
    }

    fn cut_data(&mut self) {
        for s in &self.sections {
            if let Some(d) = self.data.get_mut(&s.name) {
                d.truncate(usize::try_from(s.size).unwrap_or(usize::MAX));
            }
        }
    }

    fn named_calls(&self, raw: &[(i64, i64)]) -> Vec<(String, String)> {
        let name = |i: i64| {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.symbols.get(i))
                .map(|s| s.name.clone())
        };
        raw.iter()
            .filter_map(|&(a, b)| Some((name(a)?, name(b)?)))
            .filter(|(a, _)| !a.is_empty() && a != "(null)")
            .collect()
    }

    /// Rows of the callgraph's other lists by name; only list 4's second number is a symbol.
    fn named_rows(&self, raw: &[(i64, i64, i64)]) -> Vec<(i64, String, String)> {
        let name = |i: i64| {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.symbols.get(i))
                .map(|s| s.name.clone())
        };
        raw.iter()
            .filter_map(|&(list, a, b)| {
                let second = match list {
                    4 => name(b)?,
                    _ => b.to_string(),
                };
                Some((list, name(a)?, second))
            })
            .collect()
    }

    /// The section named `name`.
    pub(crate) fn section(&self, name: &str) -> Option<&Section> {
        self.by_name.get(name).map(|&i| &self.sections[i])
    }

    /// The section at `index`.
    pub(crate) fn section_at(&self, index: usize) -> Option<&Section> {
        self.sections.iter().find(|s| s.index == index)
    }

    /// Defined functions, by name.
    pub(crate) fn function(&self, name: &str) -> Option<&Symbol> {
        self.symbols
            .iter()
            .find(|s| s.kind == "FUNC" && s.name == name && s.section != 0)
    }

    /// Kernels (`ENTRY` functions), in symbol order.
    pub(crate) fn kernels(&self) -> Vec<&Symbol> {
        self.symbols
            .iter()
            .filter(|s| s.kind == "FUNC" && s.other.contains("ENTRY") && s.section != 0)
            .collect()
    }

    /// Symbols defined in section `index` (section symbols aside).
    pub(crate) fn defined_in(&self, index: usize) -> Vec<&Symbol> {
        self.symbols
            .iter()
            .filter(|s| s.section == index && s.kind != "SECTION")
            .collect()
    }

    /// The `.nv.info` records that name function `f` (`function: f` in their text).
    pub(crate) fn global_records(&self, f: &str) -> Vec<Record> {
        let tag = format!("function: {f} ");
        let mut v: Vec<Record> = self
            .records
            .get(".nv.info")
            .into_iter()
            .flatten()
            .filter(|r| format!("{} ", r.text).contains(&tag))
            .cloned()
            .collect();
        v.sort();
        v
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `Index Offset Size ES Align Type Flags Link Info Name`; the type may hold a space
/// (`UNKNOWN: 133`).
fn section_row(line: &str) -> Option<Section> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() < 10 {
        return None;
    }
    let n = t.len();
    Some(Section {
        index: usize::from_str_radix(t[0], 16).ok()?,
        size: hex(t[2])?,
        align: hex(t[4])?,
        kind: t[5..n - 4].join(" "),
        flags: hex(t[n - 4])?,
        info: hex(t[n - 2])?,
        name: t[n - 1].to_string(),
    })
}

/// `Num Value Size Type Bind Vis Other Ndx Name`.
fn symbol_row(line: &str) -> Option<Symbol> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() < 9 {
        return None;
    }
    Some(Symbol {
        value: hex(t[1])?,
        size: hex(t[2])?,
        kind: t[3].to_string(),
        bind: t[4].to_string(),
        other: t[6].to_string(),
        section: usize::try_from(hex(t[7])?).ok()?,
        name: t[8..].join(" "),
    })
}

/// `offset symbol type [addend]`; the type may hold spaces (`UNKNOWN REL TYPE`).
fn reloc_row(line: &str) -> Option<Reloc> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() < 3 {
        return None;
    }
    let numeric = |s: &str| s.starts_with("0x") || s.starts_with("-0x");
    let (kind_end, addend) = match t.last() {
        Some(a) if t.len() > 3 && numeric(a) => (t.len() - 1, Some(a.to_string())),
        _ => (t.len(), None),
    };
    Some(Reloc {
        offset: hex(t[0])?,
        symbol: t[1].to_string(),
        kind: t[2..kind_end].join(" "),
        addend,
    })
}

/// ` <caller,callee>` (symbol indices; negative ones are markers).
fn call_row(line: &str) -> Option<(i64, i64)> {
    let inner = line.trim().strip_prefix('<')?.strip_suffix('>')?;
    let (a, b) = inner.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// A row of little-endian 32-bit words (`0xff017b82 0x00000a00 ...`); other lines of the
/// block (`lmem=0 smem=0`, "No data to be dumped.") hold none.
fn data_row(line: &str, bytes: &mut Vec<u8>) {
    for w in line.split_whitespace() {
        if let Some(v) = w
            .strip_prefix("0x")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
        {
            bytes.extend_from_slice(&v.to_le_bytes());
        } else {
            return;
        }
    }
}

/// One line of an info section: a new record (`<0x3>`), its attribute, or more of its value.
fn record_line(
    line: &str,
    record: &mut Option<(String, Vec<String>)>,
    mut done: impl FnMut((String, Vec<String>)),
) {
    let t = line.trim();
    if t.starts_with("<0x") && t.ends_with('>') {
        if let Some(r) = record.take() {
            done(r);
        }
        *record = Some((String::new(), Vec::new()));
    } else if let Some(a) = t.strip_prefix("Attribute:") {
        if let Some(r) = record.as_mut() {
            r.0 = a.trim().to_string();
        }
    } else if !t.is_empty()
        && let Some(r) = record.as_mut()
    {
        r.1.push(t.to_string());
    }
}

/// `f(0x14)` → `f`: cuobjdump prints a symbol's index after its name.
fn without_symbol_indices(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("(0x") {
        let after = &rest[at + 3..];
        let digits = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        let named = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| !c.is_whitespace() && c != ':');
        if named && digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..at + 3]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "
64-bit ELF: type=ET_EXEC, ABI=8, sm=90, toolkit=13.5, flags=0x6005a04
Sections:
Index Offset   Size ES Align                      Type    Flags Link     Info Name
    1     40    182  0  1                       STRTAB        0    0        0 .shstrtab
    3    338    240 18  8                       SYMTAB        0    2       18 .symtab
    7    70c     48  0  4                    CUDA_INFO        0    3        0 .nv.info
    b    ba4     30  8  4               CUDA_CALLGRAPH        0    3        0 .nv.callgraph
    c    bd8     c0 18  8                         RELA       40    3        e .rela.nv.constant4
    e    cc8      c  0  8                     PROGBITS        2    0        0 .nv.constant4
   16   2b78    210 18  8                 UNKNOWN: 133 10000000    2       10 .nv.merc.symtab

.section .symtab
   Num            Value             Size  Type          Bind    Vis        Other                                Ndx  Name
     0                0                0  NOTYPE        LOCAL   DEFAULT    -                                      0  (null)
   0x1                0              0x4  OBJECT        LOCAL   DEFAULT    -                                   0x13  counter
   0x2                0           0x1c80  FUNC          GLOBAL  DEFAULT    ENTRY                                0xf  _Z1kv
   0x3                0                0  FUNC          GLOBAL  DEFAULT    -                                      0  vprintf

.nv.constant4
0x00000000 0x00000000 0x00000001


.section .rela.nv.constant4	RELA
0x8    vprintf    R_CUDA_64    0x0
0x0    counter    R_CUDA_64    0x0

.nv.info
	<0x1>
	Attribute:	EIATTR_REGCOUNT
	Format:	EIFMT_SVAL
	Value:	function: _Z1kv(0x2)	register count: 24

.nv.callgraph
 <0,-1>
 <2,3>
 <0,-2>
 <2,0>
 <0,-3>
 <0,-4>
 <2,2>
";

    #[test]
    fn reads_every_block() {
        let d = Dump::parse(SAMPLE).unwrap();
        assert_eq!((d.sm, d.relocatable), (90, false));
        assert_eq!(d.sections.len(), 7);
        assert_eq!(d.sections[6].kind, "UNKNOWN: 133");
        assert_eq!(d.sections[6].index, 0x16);
        assert_eq!(d.symbols.len(), 4);
        assert_eq!(d.kernels()[0].name, "_Z1kv");
        assert_eq!(d.relocs[".nv.constant4"].len(), 2);
        assert_eq!(d.relocs[".nv.constant4"][0].symbol, "vprintf");
        assert_eq!(
            d.data[".nv.constant4"],
            [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
        );
        assert_eq!(
            d.global_records("_Z1kv"),
            [Record {
                attribute: "EIATTR_REGCOUNT".into(),
                text: "Format: EIFMT_SVAL Value: function: _Z1kv register count: 24".into()
            }]
        );
        assert_eq!(d.calls, [("_Z1kv".to_string(), "vprintf".to_string())]);
        // A kernel listed as launchable (prototype 0) calls nothing: no call to symbol 0.
        assert_eq!(
            d.graph_rows,
            [
                (2, "_Z1kv".to_string(), "0".to_string()),
                (4, "_Z1kv".to_string(), "_Z1kv".to_string())
            ]
        );
    }

    #[test]
    fn symbol_indices_go_but_other_numbers_stay() {
        assert_eq!(
            without_symbol_indices("f(0x14) g (0x2) h(0xzz)"),
            "f g (0x2) h(0xzz)"
        );
        assert_eq!(
            without_symbol_indices("externs: a(0x12)\tb(0x3)"),
            "externs: a\tb"
        );
    }
}

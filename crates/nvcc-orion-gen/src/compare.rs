//! Kernel-by-kernel comparison of two cubins read by the toolkit ([`crate::elf`]): exactly
//! (same module layout), or symbolically (module-level constant banks named by the symbol
//! their relocation or symbol table gives, for cubins whose bank 4 is laid out differently).

use std::collections::BTreeMap;

use crate::elf::{Elf, Symbol};

/// One difference: what differs (a short kind, the key of reduction) and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub kind: String,
    pub detail: String,
}

fn diff(kind: &str, detail: String) -> Diff {
    Diff {
        kind: kind.to_string(),
        detail,
    }
}

/// Whether `section` is one of kernel `k`'s own (`.text.k`, `.nv.info.k`, `.rela.text.k`, ...).
pub fn section_of(section: &str, k: &str) -> bool {
    section.len() > k.len() + 1 && section.ends_with(k) && {
        let b = section.as_bytes()[section.len() - k.len() - 1];
        b == b'.'
    }
}

/// Whether function `f` is kernel `k` or one of its sub-functions (`$k$callee`).
pub fn function_of(f: &str, k: &str) -> bool {
    f == k
        || f.strip_prefix('$')
            .is_some_and(|r| r.starts_with(k) && r[k.len()..].starts_with('$'))
}

fn kind_of(section: &str) -> &'static str {
    if section.starts_with(".text.") {
        "text"
    } else if section.starts_with(".rel") {
        "relocations"
    } else if section.starts_with(".nv.info.") {
        "nv.info attributes"
    } else if section.starts_with(".nv.constant") {
        "constant bank"
    } else {
        "section"
    }
}

/// The first line where `a` and `b` differ, shown side by side.
pub fn first_difference(a: &[String], b: &[String]) -> String {
    let n = a.len().max(b.len());
    for i in 0..n {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            return format!(
                "line {i}: shipped `{}` / reference `{}`",
                x.map_or("<end>", |s| s.trim()),
                y.map_or("<end>", |s| s.trim())
            );
        }
    }
    "equal".into()
}

fn symbols_where(e: &Elf, f: impl Fn(&Symbol) -> bool) -> Vec<&Symbol> {
    let mut v: Vec<&Symbol> = e.symbols.iter().filter(|s| f(s)).collect();
    v.sort();
    v
}

fn records_where(e: &Elf, f: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = e
        .info
        .iter()
        .filter(|(func, _)| f(func))
        .map(|(_, r)| r.clone())
        .collect();
    v.sort();
    v
}

/// Kernel `k` of `ship` against kernel `k` of `refe`, byte for byte as dumped.
pub fn kernel_exact(ship: &Elf, refe: &Elf, k: &str) -> Vec<Diff> {
    let mut out = Vec::new();
    let mine = |e: &Elf| -> Vec<String> {
        e.headers
            .keys()
            .filter(|s| section_of(s, k))
            .cloned()
            .collect()
    };
    let (sa, sb) = (mine(ship), mine(refe));
    if sa != sb {
        out.push(diff(
            "sections",
            format!("shipped {sa:?} / reference {sb:?}"),
        ));
    }
    for s in sa.iter().filter(|s| sb.contains(s)) {
        if ship.headers[s] != refe.headers[s] {
            out.push(diff(
                kind_of(s),
                format!(
                    "{s} header: shipped {:?} / reference {:?}",
                    ship.headers[s], refe.headers[s]
                ),
            ));
        }
        let (x, y) = (ship.blocks.get(s), refe.blocks.get(s));
        if x != y {
            let e = Vec::new();
            out.push(diff(
                kind_of(s),
                format!(
                    "{s}: {}",
                    first_difference(x.unwrap_or(&e), y.unwrap_or(&e))
                ),
            ));
        }
    }
    let owned =
        |s: &Symbol| function_of(&s.name, k) || section_of(&s.section, k) || section_of(&s.name, k);
    let (x, y) = (symbols_where(ship, owned), symbols_where(refe, owned));
    if x != y {
        out.push(diff("symbols", format!("shipped {x:?} / reference {y:?}")));
    }
    let (x, y) = (
        records_where(ship, |f| function_of(f, k)),
        records_where(refe, |f| function_of(f, k)),
    );
    if x != y {
        out.push(diff(
            ".nv.info records",
            format!("shipped {x:?} / reference {y:?}"),
        ));
    }
    if ship.res.get(k) != refe.res.get(k) {
        out.push(diff(
            "res-usage",
            format!(
                "shipped {:?} / reference {:?}",
                ship.res.get(k),
                refe.res.get(k)
            ),
        ));
    }
    out
}

/// Sections no comparison reads: tables of names and indices, call-graph indices, unwinding.
const NOT_COMPARED: &[&str] = &[
    ".symtab",
    ".strtab",
    ".shstrtab",
    ".nv.info",
    ".nv.callgraph",
    ".debug_frame",
    ".rela.debug_frame",
    ".rel.debug_frame",
    ".nv.merc.symtab",
    ".nv.merc.debug_frame",
    ".nv.merc.rela.debug_frame",
    ".nv.merc.nv.info",
    ".nv.merc.nv.callgraph",
];

/// Everything of the module outside its kernels' own sections (`kernels`: every kernel of
/// either cubin): bank 4 and its relocations, bank 3, globals, shared functions' sections, the
/// symbols and `.nv.info` records of non-kernel functions and objects. The records of the
/// functions in a `rewritten` kernel's section (the compiler's helper subroutines it calls)
/// are left out like the kernel's own: a proved spill2smem rewrite lowers their frame
/// sizes with the kernel's, and the checker's proof and the assembly check vouch for them.
pub fn module_exact(ship: &Elf, refe: &Elf, kernels: &[String], rewritten: &[String]) -> Vec<Diff> {
    let outside = |s: &str| !NOT_COMPARED.contains(&s) && !kernels.iter().any(|k| section_of(s, k));
    let names =
        |e: &Elf| -> Vec<String> { e.headers.keys().filter(|s| outside(s)).cloned().collect() };
    let mut out = Vec::new();
    let (sa, sb) = (names(ship), names(refe));
    if sa != sb {
        out.push(diff(
            "module sections",
            format!("shipped {sa:?} / reference {sb:?}"),
        ));
    }
    for s in sa.iter().filter(|s| sb.contains(s)) {
        let kind = if s.contains("constant4") {
            "bank 4 table"
        } else if s.contains("constant3") {
            "bank 3"
        } else if s.starts_with(".nv.global") {
            "globals"
        } else {
            "module section"
        };
        if ship.headers[s] != refe.headers[s] {
            out.push(diff(
                kind,
                format!(
                    "{s} header: shipped {:?} / reference {:?}",
                    ship.headers[s], refe.headers[s]
                ),
            ));
        }
        let e = Vec::new();
        let (x, y) = (
            ship.blocks.get(s).unwrap_or(&e),
            refe.blocks.get(s).unwrap_or(&e),
        );
        if x != y {
            out.push(diff(kind, format!("{s}: {}", first_difference(x, y))));
        }
    }
    let in_kernel = |s: &Symbol| {
        kernels
            .iter()
            .any(|k| function_of(&s.name, k) || section_of(&s.section, k) || section_of(&s.name, k))
    };
    let (x, y) = (
        symbols_where(ship, |s| !in_kernel(s)),
        symbols_where(refe, |s| !in_kernel(s)),
    );
    if x != y {
        let only = |a: &[&Symbol], b: &[&Symbol]| -> Vec<String> {
            a.iter()
                .filter(|s| !b.contains(s))
                .map(|s| format!("{} @{} size {} in {}", s.name, s.value, s.size, s.section))
                .collect()
        };
        out.push(diff(
            "module symbols",
            format!(
                "only shipped {:?} / only reference {:?}",
                only(&x, &y),
                only(&y, &x)
            ),
        ));
    }
    let outside_f = |e: &Elf, f: &str| {
        !kernels.iter().any(|k| function_of(f, k))
            && !e
                .symbols
                .iter()
                .any(|s| s.name == f && rewritten.iter().any(|k| section_of(&s.section, k)))
    };
    let (x, y) = (
        records_where(ship, |f| outside_f(ship, f)),
        records_where(refe, |f| outside_f(refe, f)),
    );
    if x != y {
        out.push(diff(
            "module .nv.info records",
            format!("shipped {x:?} / reference {y:?}"),
        ));
    }
    out
}

/// How a cubin's module-level constant banks map to symbols: bank 4 entries (offset → symbol
/// and addend, from its relocations) and bank 3 objects (offset range → symbol).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Banks {
    bank4: BTreeMap<u64, String>,
    bank3: Vec<(u64, u64, String)>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

impl Banks {
    pub fn of(e: &Elf) -> Banks {
        let mut b = Banks::default();
        for s in [".rela.nv.constant4", ".rel.nv.constant4"] {
            for l in e.blocks.get(s).into_iter().flatten() {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() >= 3
                    && let Some(off) = hex(f[0])
                {
                    let name = match f.get(3).copied().filter(|a| hex(a) != Some(0)) {
                        Some(a) => format!("{}+{a}", f[1]),
                        None => f[1].to_string(),
                    };
                    b.bank4.insert(off, name);
                }
            }
        }
        for s in e.symbols.iter().filter(|s| s.section == ".nv.constant3") {
            if let (Some(v), Some(z)) = (hex(&s.value), hex(&s.size))
                && s.ty == "OBJECT"
            {
                b.bank3.push((v, v + z.max(1), s.name.clone()));
            }
        }
        b
    }

    /// The symbolic name of `c[bank][off]`, if the bank is module-level.
    fn name(&self, bank: u64, off: u64) -> Option<String> {
        match bank {
            4 => {
                let (base, sym) = self.bank4.range(..=off).next_back()?;
                (off - base < 8).then(|| format!("{sym}+{}", off - base))
            }
            3 => self
                .bank3
                .iter()
                .find(|(lo, hi, _)| (*lo..*hi).contains(&off))
                .map(|(lo, _, s)| format!("{s}+{}", off - lo)),
            _ => None,
        }
    }

    /// `text` with every module-level `c[0xB][0xO]` replaced by its symbol; whether any was.
    fn symbolise(&self, text: &str) -> (String, bool) {
        let mut out = String::new();
        let mut rest = text;
        let mut any = false;
        while let Some(i) = rest.find("c[0x") {
            out.push_str(&rest[..i]);
            let t = &rest[i..];
            let parsed = (|| {
                let close1 = t.find(']')?;
                let bank = hex(&t[2..close1])?;
                let t2 = t[close1 + 1..].strip_prefix("[0x")?;
                let close2 = t2.find(']')?;
                let off = hex(&t2[..close2])?;
                Some((bank, off, close1 + 1 + 3 + close2 + 1))
            })();
            match parsed.and_then(|(bank, off, len)| Some((self.name(bank, off)?, bank, len))) {
                Some((name, bank, len)) => {
                    out.push_str(&format!("c[0x{bank:x}][{name}]"));
                    any = true;
                    rest = &t[len..];
                }
                None => {
                    out.push_str("c[0x");
                    rest = &t[4..];
                }
            }
        }
        out.push_str(rest);
        (out, any)
    }
}

/// A function's listing (`nvdisasm -hex -c`, one section) made comparable across modules:
/// `rename` applied, labels numbered from 0 in order of appearance, module-level bank operands
/// named; an instruction keeps both encoding words unless it reads such an operand, whose
/// offset is in the low word: then only the high word (control bits) is kept.
pub fn normalise_listing(
    lines: &[String],
    banks: &Banks,
    rename: &[(String, String)],
) -> Vec<String> {
    let mut labels: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<(String, bool, String)> = None;
    for raw in lines {
        let mut l = raw.clone();
        for (from, to) in rename {
            l = l.replace(from.as_str(), to);
        }
        let l = renumber_labels(&l, &mut labels);
        let l = unnumber_locals(&l);
        // Column padding follows the longest line of the listing: not meaning.
        let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
        let trimmed = l.trim();
        if let Some((text, sym, low)) = pending.take() {
            let high = trimmed.to_string();
            out.push(if sym {
                format!("{text} | {high}")
            } else {
                format!("{text} | {low} {high}")
            });
            continue;
        }
        if trimmed.starts_with("/*")
            && trimmed.len() > 8
            && trimmed[2..].contains("*/")
            && !trimmed.starts_with("/* 0x")
        {
            let (text, low) = match trimmed.rfind("/* 0x") {
                Some(i) => (trimmed[..i].trim(), trimmed[i..].to_string()),
                None => (trimmed, String::new()),
            };
            let (text, sym) = banks.symbolise(text);
            pending = Some((text, sym, low));
            continue;
        }
        out.push(trimmed.to_string());
    }
    out
}

/// `` `($___ZZ2k0PfPKfjE2sh__536) `` → `` `($___ZZ2k0PfPKfjE2sh__N) ``: ptxas numbers a
/// function-local symbol (a static `__shared__` array) per module, so each entry copy's has
/// another number.
fn unnumber_locals(l: &str) -> String {
    let mut out = String::new();
    let mut rest = l;
    while let Some(i) = rest.find("`($") {
        let t = &rest[i..];
        let Some(close) = t.find(')') else { break };
        let sym = &t[..close];
        let digits = sym.len() - sym.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..i]);
        if digits > 0 && sym[..sym.len() - digits].ends_with("__") {
            out.push_str(&sym[..sym.len() - digits]);
            out.push('N');
        } else {
            out.push_str(sym);
        }
        rest = &t[close..];
    }
    out.push_str(rest);
    out
}

fn renumber_labels(l: &str, labels: &mut BTreeMap<String, usize>) -> String {
    let mut out = String::new();
    let mut rest = l;
    while let Some(i) = rest.find(".L_x_") {
        out.push_str(&rest[..i]);
        let t = &rest[i + 5..];
        let n = t.bytes().take_while(u8::is_ascii_digit).count();
        let next = labels.len();
        let id = *labels.entry(t[..n].to_string()).or_insert(next);
        out.push_str(&format!(".L_x_{id}"));
        rest = &t[n..];
    }
    out.push_str(rest);
    out
}

/// Whether `ship`'s function `ship_k` and `refe`'s `ref_k` are printed from the same things:
/// the section's header and bytes, its relocations and symbols (`ship_k` read as `ref_k`), and
/// module banks that name the same symbols at the same offsets. Their `nvdisasm` listings are
/// then equal once normalised, so they need not be read (nvdisasm costs ~0.4 s a call).
pub fn text_identical(ship: &Elf, refe: &Elf, ship_k: &str, ref_k: &str) -> bool {
    let renamed = |v: Option<&Vec<String>>| -> Option<Vec<String>> {
        v.map(|v| v.iter().map(|l| l.replace(ship_k, ref_k)).collect())
    };
    let (ts, tr) = (format!(".text.{ship_k}"), format!(".text.{ref_k}"));
    let own = |e: &Elf, sect: &str| -> Vec<Symbol> {
        let mut v: Vec<Symbol> = e
            .symbols
            .iter()
            .filter(|s| s.section == sect)
            .map(|s| Symbol {
                name: s.name.replace(ship_k, ref_k),
                section: s.section.replace(ship_k, ref_k),
                ..s.clone()
            })
            .collect();
        v.sort();
        v
    };
    ship.headers.contains_key(&ts)
        && ship.headers.get(&ts) == refe.headers.get(&tr)
        && ship.blocks.get(&ts) == refe.blocks.get(&tr)
        && [".rel.text.", ".rela.text."].iter().all(|r| {
            renamed(ship.blocks.get(&format!("{r}{ship_k}")))
                == refe.blocks.get(&format!("{r}{ref_k}")).cloned()
        })
        && own(ship, &ts) == own(refe, &tr)
        && Banks::of(ship) == Banks::of(refe)
}

/// `ship`'s function `ship_k` against `refe`'s kernel `ref_k`: its section's listing with
/// module-level bank operands named (their offsets may differ between modules).
pub fn text_symbolic(
    ship: (&Elf, &BTreeMap<String, Vec<String>>),
    refe: (&Elf, &BTreeMap<String, Vec<String>>),
    ship_k: &str,
    ref_k: &str,
) -> Vec<Diff> {
    let rename = if ship_k == ref_k {
        Vec::new()
    } else {
        vec![(ship_k.to_string(), ref_k.to_string())]
    };
    let (bs, br) = (Banks::of(ship.0), Banks::of(refe.0));
    let e = Vec::new();
    let text = |k: &str| format!(".text.{k}");
    let a = normalise_listing(ship.1.get(&text(ship_k)).unwrap_or(&e), &bs, &rename);
    let b = normalise_listing(refe.1.get(&text(ref_k)).unwrap_or(&e), &br, &[]);
    if a.is_empty() {
        vec![diff("text", format!("no section .text.{ship_k} shipped"))]
    } else if a != b {
        vec![diff(
            "text",
            format!(".text.{ship_k}: {}", first_difference(&a, &b)),
        )]
    } else {
        Vec::new()
    }
}

/// `ship`'s function `ship_k` against `refe`'s kernel `ref_k` outside its code: its
/// `.nv.info` attributes and records, its resource usage.
pub fn attributes_symbolic(ship: &Elf, refe: &Elf, ship_k: &str, ref_k: &str) -> Vec<Diff> {
    let mut out = Vec::new();
    let e = Vec::new();
    let map = |v: Option<&Vec<String>>| -> Vec<String> {
        without_externs(v.unwrap_or(&e))
            .iter()
            .map(|l| l.replace(ship_k, ref_k))
            .collect()
    };
    let (x, y) = (
        map(ship.blocks.get(&format!(".nv.info.{ship_k}"))),
        without_externs(refe.blocks.get(&format!(".nv.info.{ref_k}")).unwrap_or(&e)),
    );
    if x != y {
        out.push(diff(
            "nv.info attributes",
            format!(".nv.info.{ship_k}: {}", first_difference(&x, &y)),
        ));
    }
    // ...but what it lists must still be the kernel's own externals.
    let externs = |v: Option<&Vec<String>>| -> Vec<String> {
        v.unwrap_or(&e)
            .iter()
            .filter_map(|l| l.split("externs:").nth(1))
            .flat_map(|x| x.split_whitespace().map(str::to_string))
            .collect()
    };
    let theirs = externs(refe.blocks.get(&format!(".nv.info.{ref_k}")));
    let stray: Vec<String> = externs(ship.blocks.get(&format!(".nv.info.{ship_k}")))
        .into_iter()
        .filter(|x| !theirs.contains(x))
        .collect();
    if !stray.is_empty() {
        out.push(diff(
            "nv.info attributes",
            format!(".nv.info.{ship_k}: EIATTR_EXTERNS names {stray:?}, reference {theirs:?}"),
        ));
    }
    let (x, y) = (
        records_where(ship, |f| function_of(f, ship_k))
            .iter()
            .map(|r| r.replace(ship_k, ref_k))
            .collect::<Vec<_>>(),
        records_where(refe, |f| function_of(f, ref_k)),
    );
    let mut x = x;
    x.sort();
    if x != y {
        out.push(diff(
            ".nv.info records",
            format!("shipped {x:?} / reference {y:?}"),
        ));
    }
    if ship.res.get(ship_k) != refe.res.get(ref_k) {
        out.push(diff(
            "res-usage",
            format!(
                "shipped {:?} / reference {:?}",
                ship.res.get(ship_k),
                refe.res.get(ref_k)
            ),
        ));
    }
    out
}

/// A kernel's attributes without `EIATTR_EXTERNS` and the record numbers: in a module with
/// entry copies ptxas lists an external function called by several copies in one of them only
/// (checked with ptxas 13.5 on a hand-made copy), so that record depends on the module, not
/// on the kernel's code.
fn without_externs(block: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rec: Vec<String> = Vec::new();
    let flush = |rec: &mut Vec<String>, out: &mut Vec<String>| {
        if !rec.iter().any(|l| l.contains("EIATTR_EXTERNS")) {
            out.append(rec);
        }
        rec.clear();
    };
    for l in block {
        if l.trim_start().starts_with("<0x") {
            flush(&mut rec, &mut out);
        } else {
            rec.push(l.clone());
        }
    }
    flush(&mut rec, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership() {
        assert!(section_of(".text._Z1kv", "_Z1kv"));
        assert!(section_of(".rela.nv.constant2._Z1kv", "_Z1kv"));
        assert!(!section_of(".text._Z1kv__orion_v1", "_Z1kv"));
        assert!(!section_of(".text.x_Z1kv", "_Z1kv"));
        assert!(function_of("$_Z1kv$_Z1fv", "_Z1kv"));
        assert!(!function_of("$_Z1kv__orion_v1$_Z1fv", "_Z1kv"));
    }

    /// A kernel `k` and its copy `k__orion_v1` with the same code and relocations, in a
    /// module whose bank 4 holds `g` at 0x8.
    fn copy_pair() -> (Elf, Elf) {
        let mut e = Elf::default();
        let header = crate::elf::Header {
            size: "20".into(),
            ty: "PROGBITS".into(),
            flags: "6".into(),
            align: "80".into(),
        };
        for k in ["k", "k__orion_v1"] {
            e.headers.insert(format!(".text.{k}"), header.clone());
            e.blocks.insert(
                format!(".text.{k}"),
                vec!["0xff017b82 0x00000a00 0x00000800 0x000e2200".into()],
            );
            e.blocks.insert(
                format!(".rela.text.{k}"),
                vec![format!("0x10 R_CUDA_ABS32_LO_32 $k$f1 0x0 ({k})")],
            );
            e.symbols.push(Symbol {
                name: k.into(),
                value: "0".into(),
                size: "20".into(),
                ty: "FUNC".into(),
                bind: "GLOBAL".into(),
                other: "STO_CUDA_ENTRY".into(),
                section: format!(".text.{k}"),
            });
        }
        e.blocks.insert(
            ".rela.nv.constant4".into(),
            vec!["0x8 g R_CUDA_64 0x0".into()],
        );
        (e.clone(), e)
    }

    #[test]
    fn equal_bytes_under_another_name_are_identical_text() {
        let (ship, refe) = copy_pair();
        assert!(text_identical(&ship, &refe, "k__orion_v1", "k"));
        assert!(text_identical(&ship, &refe, "k", "k"));
        assert!(!text_identical(&ship, &refe, "missing", "k"));
        // One instruction word changed.
        let (mut ship, refe) = copy_pair();
        ship.blocks.get_mut(".text.k__orion_v1").unwrap()[0] =
            "0xff017b82 0x00000a00 0x00000800 0x000e2201".into();
        assert!(!text_identical(&ship, &refe, "k__orion_v1", "k"));
        // Another relocation target.
        let (mut ship, refe) = copy_pair();
        ship.blocks.get_mut(".rela.text.k__orion_v1").unwrap()[0] =
            "0x10 R_CUDA_ABS32_LO_32 $k$f2 0x0 (k__orion_v1)".into();
        assert!(!text_identical(&ship, &refe, "k__orion_v1", "k"));
        // Bank 4 laid out otherwise: the same bytes read another symbol.
        let (mut ship, refe) = copy_pair();
        ship.blocks.get_mut(".rela.nv.constant4").unwrap()[0] = "0x10 g R_CUDA_64 0x0".into();
        assert!(!text_identical(&ship, &refe, "k__orion_v1", "k"));
        // Another register count in the header's flags.
        let (mut ship, refe) = copy_pair();
        ship.headers.get_mut(".text.k__orion_v1").unwrap().flags = "20000006".into();
        assert!(!text_identical(&ship, &refe, "k__orion_v1", "k"));
        // A sub-function's symbol moved.
        let (mut ship, refe) = copy_pair();
        ship.symbols[1].size = "10".into();
        assert!(!text_identical(&ship, &refe, "k__orion_v1", "k"));
    }

    /// A helper subroutine in kernel `k`'s section whose frame a rewrite of `k` lowered: a
    /// module difference unless `k` is a rewritten kernel.
    #[test]
    fn a_rewritten_kernels_helper_records_are_the_kernels() {
        let (mut ship, mut refe) = copy_pair();
        for (e, frame) in [(&mut ship, "0x0"), (&mut refe, "0x68")] {
            e.symbols.push(Symbol {
                name: "$__internal_2_$__cuda_sm20_div_rn_f64_full".into(),
                value: "10".into(),
                size: "10".into(),
                ty: "FUNC".into(),
                bind: "LOCAL".into(),
                other: "STV_DEFAULT".into(),
                section: ".text.k".into(),
            });
            e.info.push((
                "$__internal_2_$__cuda_sm20_div_rn_f64_full".into(),
                format!("EIATTR_FRAME_SIZE frame size: {frame}"),
            ));
        }
        let kernels = vec!["k".to_string(), "k__orion_v1".to_string()];
        let found = module_exact(&ship, &refe, &kernels, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, "module .nv.info records");
        assert!(module_exact(&ship, &refe, &kernels, &["k".to_string()]).is_empty());
        // Rewriting another kernel does not excuse k's helper.
        assert_eq!(
            module_exact(&ship, &refe, &kernels, &["k__orion_v1".to_string()]).len(),
            1
        );
    }

    #[test]
    fn banks_are_named() {
        let mut b = Banks::default();
        b.bank4.insert(0x10, "g0".into());
        b.bank3.push((0, 32, "c0".into()));
        let (s, any) = b.symbolise("LDC.64 R2, c[0x4][0x14] ; LDC R3, c[0x3][0x8] ; c[0x0][0x28]");
        assert!(any);
        assert_eq!(
            s,
            "LDC.64 R2, c[0x4][g0+4] ; LDC R3, c[0x3][c0+8] ; c[0x0][0x28]"
        );
        let mut labels = BTreeMap::new();
        assert_eq!(
            renumber_labels("BRA `(.L_x_14) .L_x_9 .L_x_14", &mut labels),
            "BRA `(.L_x_0) .L_x_1 .L_x_0"
        );
    }
}

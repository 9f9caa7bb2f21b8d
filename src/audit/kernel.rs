//! One function's section in the shipped cubin against the cubin its code came from: the
//! code, the symbols in it, its relocations, attributes, per-kernel sections and the calls it
//! makes must all say the same, with module-level bank offsets read through each cubin's
//! own tables.

use std::collections::{BTreeMap, BTreeSet};

use super::Difference;
use super::banks;
use super::dump::{Dump, Reloc};
use super::listing::{Function, Instr};

/// The two sides of one comparison: the shipped cubin and the origin, with the function's
/// name in each (an adapt variant `k__orion_v1` came from `k`).
pub(crate) struct Pair<'a> {
    pub(crate) shipped: &'a Dump,
    pub(crate) origin: &'a Dump,
    pub(crate) ks: &'a str,
    pub(crate) kr: &'a str,
    /// The compiler's helper subroutines of the shipped section by the names the origin's
    /// section gives them ([`helpers`]): only those whose names differ.
    helpers: BTreeMap<String, String>,
}

/// What the byte-level comparison left to the disassembly.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Code {
    /// The code is the same bytes and every module bank the origin has reads the same.
    Same,
    /// Read both listings and compare instruction by instruction ([`compare_listings`]).
    Disassemble,
}

impl<'a> Pair<'a> {
    /// Function `ks` of `shipped` against `kr` of `origin`, the helper subroutines in their
    /// sections matched by role ([`helpers`]).
    pub(crate) fn new(shipped: &'a Dump, origin: &'a Dump, ks: &'a str, kr: &'a str) -> Pair<'a> {
        let helpers = match (text(shipped, ks), text(origin, kr)) {
            (Ok(ts), Ok(tr)) => helpers(shipped, ts, origin, tr),
            _ => BTreeMap::new(),
        };
        Pair {
            shipped,
            origin,
            ks,
            kr,
            helpers,
        }
    }
}

impl Pair<'_> {
    /// A name of the shipped side as the origin spells it (a name, or a record's or an
    /// operand's text that holds names).
    pub(crate) fn map(&self, name: &str) -> String {
        let named = self.map_kernel(name);
        match self.helpers.is_empty() {
            true => named,
            false => rename_tokens(&named, &self.helpers),
        }
    }

    /// The kernel's own name and its sub-functions' (`$k$...`).
    fn map_kernel(&self, name: &str) -> String {
        if name == self.ks {
            return self.kr.to_string();
        }
        match name.strip_prefix(&format!("${}$", self.ks)) {
            Some(rest) => format!("${}${rest}", self.kr),
            None if self.ks != self.kr => name.replace(self.ks, self.kr),
            None => name.to_string(),
        }
    }

    /// Everything but the instructions' meaning; `Ok(Code::Disassemble)` when the code bytes
    /// (or the banks they read) differ and only the listings can tell.
    pub(crate) fn compare(&self) -> Result<Code, Difference> {
        let ts = text(self.shipped, self.ks)?;
        let tr = text(self.origin, self.kr)?;
        self.headers(ts, tr)?;
        self.symbols(ts, tr)?;
        self.relocations()?;
        self.records(ts, tr)?;
        self.own_sections()?;
        self.calls(ts, tr)?;
        let same_bytes = self.shipped.data.get(&format!(".text.{}", self.ks))
            == self.origin.data.get(&format!(".text.{}", self.kr));
        let banks_agree = banks::banks(self.origin)
            .into_iter()
            .all(|b| banks::agrees(self.origin, self.shipped, b).is_ok());
        Ok(if same_bytes && banks_agree {
            Code::Same
        } else {
            Code::Disassemble
        })
    }

    /// The text section's header: size, alignment, flags and the register count sm_75-89
    /// keep in `sh_info[31:24]`.
    fn headers(&self, ts: usize, tr: usize) -> Result<(), Difference> {
        let (a, b) = (section(self.shipped, ts)?, section(self.origin, tr)?);
        let key =
            |s: &super::dump::Section| (s.size, s.align, s.flags, s.info >> 24, s.kind.clone());
        if key(a) != key(b) {
            return Err(Difference::CodeSection {
                size: a.size,
                origin_size: b.size,
                registers: a.info >> 24,
                origin_registers: b.info >> 24,
            });
        }
        Ok(())
    }

    /// The functions and labels defined in the code section, at the same offsets.
    fn symbols(&self, ts: usize, tr: usize) -> Result<(), Difference> {
        self.same_symbols(ts, tr, |s| {
            (
                s.value,
                s.size,
                s.kind.clone(),
                s.bind.clone(),
                s.other.clone(),
            )
        })
    }

    /// Whether the symbols defined in the shipped code section `ts` and the origin's `tr` are
    /// the same, each named as the origin names it and read as `row` reads it.
    pub(super) fn same_symbols<R: Ord>(
        &self,
        ts: usize,
        tr: usize,
        row: impl Fn(&super::dump::Symbol) -> R,
    ) -> Result<(), Difference> {
        let a: BTreeSet<_> = self
            .shipped
            .defined_in(ts)
            .into_iter()
            .map(|s| (self.map(&s.name), row(s)))
            .collect();
        let b: BTreeSet<_> = self
            .origin
            .defined_in(tr)
            .into_iter()
            .map(|s| (s.name.clone(), row(s)))
            .collect();
        match a.symmetric_difference(&b).next() {
            Some(d) => Err(Difference::Symbol(d.0.clone())),
            None => Ok(()),
        }
    }

    /// The code's own relocations, by symbol name.
    fn relocations(&self) -> Result<(), Difference> {
        let a = self.mapped_relocs(&format!(".text.{}", self.ks));
        let b = sorted(self.origin.relocs.get(&format!(".text.{}", self.kr)));
        if a != b {
            return Err(first_difference("relocation of its code", &a, &b));
        }
        Ok(())
    }

    pub(crate) fn mapped_relocs(&self, target: &str) -> Vec<Reloc> {
        let mut v: Vec<Reloc> = self
            .shipped
            .relocs
            .get(target)
            .into_iter()
            .flatten()
            .map(|r| Reloc {
                symbol: self.map(&r.symbol),
                ..r.clone()
            })
            .collect();
        v.sort();
        v
    }

    /// `.nv.info.<k>` in order, and the `.nv.info` records of each function in the section.
    fn records(&self, ts: usize, tr: usize) -> Result<(), Difference> {
        let map_text = |t: &str| self.map(t);
        let a: Vec<(String, String)> = self
            .shipped
            .records
            .get(&format!(".nv.info.{}", self.ks))
            .into_iter()
            .flatten()
            .map(|r| (r.attribute.clone(), map_text(&r.text)))
            .collect();
        let b: Vec<(String, String)> = self
            .origin
            .records
            .get(&format!(".nv.info.{}", self.kr))
            .into_iter()
            .flatten()
            .map(|r| (r.attribute.clone(), r.text.clone()))
            .collect();
        if a != b {
            return Err(first_difference("attribute", &a, &b));
        }
        for f in self.shipped.defined_in(ts) {
            if f.kind != "FUNC" {
                continue;
            }
            let a: Vec<_> = self
                .shipped
                .global_records(&f.name)
                .into_iter()
                .map(|r| (r.attribute, map_text(&r.text)))
                .collect();
            let b: Vec<_> = self
                .origin
                .global_records(&self.map(&f.name))
                .into_iter()
                .map(|r| (r.attribute, r.text))
                .collect();
            if a != b {
                return Err(first_difference(&format!("{} record", f.name), &a, &b));
            }
        }
        let _ = tr;
        Ok(())
    }

    /// Every other section named after the function (parameter bank, jump tables, shared
    /// and local memory, the sm_100+ copy of the code): the same type, size and bytes.
    fn own_sections(&self) -> Result<(), Difference> {
        self.own_sections_but("")
    }

    /// [`Pair::own_sections`] but for those whose prefix is `skip` (none when empty).
    pub(crate) fn own_sections_but(&self, skip: &str) -> Result<(), Difference> {
        let own = |d: &Dump, k: &str| -> Vec<(String, super::dump::Section)> {
            let suffix = format!(".{k}");
            d.sections
                .iter()
                .filter(|s| s.name.ends_with(&suffix) && !matches!(s.kind.as_str(), "REL" | "RELA"))
                .filter(|s| skip.is_empty() || s.name != format!("{skip}{suffix}"))
                .filter(|s| s.name != format!(".text.{k}") && s.name != format!(".nv.info.{k}"))
                .map(|s| (s.name[..s.name.len() - suffix.len()].to_string(), s.clone()))
                .collect()
        };
        let a = own(self.shipped, self.ks);
        let b = own(self.origin, self.kr);
        let names = |v: &[(String, super::dump::Section)]| -> BTreeSet<String> {
            v.iter().map(|(p, _)| p.clone()).collect()
        };
        if names(&a) != names(&b) {
            return Err(Difference::OwnSections {
                shipped: names(&a),
                origin: names(&b),
            });
        }
        for (prefix, s) in &a {
            let Some((_, o)) = b.iter().find(|(p, _)| p == prefix) else {
                continue;
            };
            let what = format!("{prefix}.{}", self.ks);
            if (s.size, &s.kind, s.flags) != (o.size, &o.kind, o.flags) {
                return Err(Difference::SectionShape {
                    section: what,
                    size: s.size,
                    origin_size: o.size,
                });
            }
            if self.shipped.data.get(&s.name) != self.origin.data.get(&o.name) {
                return Err(Difference::SectionBytes(what));
            }
            let ra = self.mapped_relocs(&s.name);
            let rb = sorted(self.origin.relocs.get(&o.name));
            if ra != rb {
                return Err(first_difference(&format!("relocation of {what}"), &ra, &rb));
            }
        }
        Ok(())
    }

    /// The call edges out of the section, by name; a callee with a section of its own must
    /// be the same code on both sides.
    pub(crate) fn calls(&self, ts: usize, tr: usize) -> Result<(), Difference> {
        let edges =
            |d: &Dump, t: usize, map: &dyn Fn(&str) -> String| -> BTreeSet<(String, String)> {
                let inside: BTreeSet<String> = d
                    .defined_in(t)
                    .into_iter()
                    .map(|s| s.name.clone())
                    .collect();
                d.calls
                    .iter()
                    .filter(|(a, _)| inside.contains(a))
                    .map(|(a, b)| (map(a), map(b)))
                    .collect()
            };
        let a = edges(self.shipped, ts, &|n| self.map(n));
        let b = edges(self.origin, tr, &|n| n.to_string());
        if let Some((from, to)) = a.symmetric_difference(&b).next() {
            return Err(Difference::CallOneSide {
                from: from.clone(),
                to: to.clone(),
            });
        }
        let rows = graph_rows(self.shipped, ts, &|n| self.map(n));
        if let Some((list, from, to)) = rows
            .symmetric_difference(&graph_rows(self.origin, tr, &|n| n.to_string()))
            .next()
        {
            return Err(Difference::CallgraphRow {
                list: *list,
                from: from.clone(),
                to: to.clone(),
            });
        }
        for (_, callee) in &a {
            let (Some(x), Some(y)) = (self.shipped.function(callee), self.origin.function(callee))
            else {
                continue;
            };
            if x.section == ts || y.section == tr {
                continue;
            }
            let (sx, sy) = (
                section(self.shipped, x.section)?,
                section(self.origin, y.section)?,
            );
            if self.shipped.data.get(&sx.name) != self.origin.data.get(&sy.name)
                || sx.info >> 24 != sy.info >> 24
            {
                return Err(Difference::CalleeCode(callee.clone()));
            }
        }
        Ok(())
    }
}

/// ptxas numbers the compiler's helper subroutines per module (`$__internal_<n>_$` before
/// the helper's own name, such as `__cuda_sm20_sqrt_rn_f32_slowpath`), in an order that
/// depends on every kernel of the module: an `--entry` build, or a module with variants
/// copied in, numbers the same kernel's helpers differently. Those are the only names the
/// numbering changes, so a helper defined in the shipped section `ts` is named as the
/// origin's section `tr` names the one helper there of the same role, where each side has
/// exactly one of that role (any other is left alone and shows as a symbol one side has).
/// The match is a claim the rest of the comparison proves: the renamed helper must start at
/// the same offset with the same size, bytes, records and call edges as its namesake.
fn helpers(shipped: &Dump, ts: usize, origin: &Dump, tr: usize) -> BTreeMap<String, String> {
    let roles = |d: &Dump, t: usize| -> BTreeMap<String, Vec<String>> {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in d.defined_in(t).into_iter().filter(|s| s.kind == "FUNC") {
            if let Some(role) = helper_role(&s.name) {
                m.entry(role.to_string()).or_default().push(s.name.clone());
            }
        }
        m
    };
    let theirs = roles(origin, tr);
    roles(shipped, ts)
        .into_iter()
        .filter_map(
            |(role, ours)| match (&ours[..], theirs.get(&role).map(|v| &v[..])) {
                ([a], Some([b])) if a != b => Some((a.clone(), b.clone())),
                _ => None,
            },
        )
        .collect()
}

/// `$__internal_12_$__cuda_sm20_rcp_rn_f64`: the helper's own name after ptxas's number.
fn helper_role(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("$__internal_")?;
    let (number, role) = rest.split_once("_$")?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) && !role.is_empty())
        .then_some(role)
}

/// `text` with every whole name (a run of letters, digits, `_` and `$`) that `names` has
/// replaced by its value: every name at once, so two helpers that swap numbers stay apart.
fn rename_tokens(text: &str, names: &BTreeMap<String, String>) -> String {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| is_name(c) != rest.starts_with(is_name))
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        out.push_str(names.get(run).map_or(run, String::as_str));
        rest = tail;
    }
    out
}

/// The index of function `k`'s code section.
pub(crate) fn text(d: &Dump, k: &str) -> Result<usize, Difference> {
    d.section(&format!(".text.{k}"))
        .map(|s| s.index)
        .ok_or_else(|| Difference::NoCodeSection(k.to_string()))
}

pub(crate) fn section(d: &Dump, index: usize) -> Result<&super::dump::Section, Difference> {
    d.section_at(index).ok_or(Difference::NoSection(index))
}

fn sorted(v: Option<&Vec<Reloc>>) -> Vec<Reloc> {
    let mut v = v.cloned().unwrap_or_default();
    v.sort();
    v
}

pub(crate) fn first_difference<T: std::fmt::Debug + PartialEq>(
    what: &str,
    a: &[T],
    b: &[T],
) -> Difference {
    let i = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    Difference::List {
        what: what.to_string(),
        shipped: format!("{:?}", a.get(i)),
        origin: format!("{:?}", b.get(i)),
    }
}

/// The instructions of the two listings of the section, one by one: the same guard, opcode
/// and operands once each module-bank operand is read through its cubin's tables, and the
/// same bytes except for the bank offsets that legitimately differ.
pub(crate) fn compare_listings(
    p: &Pair<'_>,
    shipped: &[Function],
    origin: &[Function],
) -> Result<(), Difference> {
    let find = |l: &'_ [Function], name: &str| -> Result<Function, Difference> {
        l.iter()
            .find(|f| f.name == name)
            .cloned()
            .ok_or_else(|| Difference::NotListed(name.to_string()))
    };
    let a = find(shipped, p.ks)?;
    let b = find(origin, p.kr)?;
    if a.instrs.len() != b.instrs.len() {
        return Err(Difference::InstructionCount {
            shipped: a.instrs.len(),
            origin: b.instrs.len(),
        });
    }
    let bytes_a = p
        .shipped
        .data
        .get(&format!(".text.{}", p.ks))
        .cloned()
        .unwrap_or_default();
    let bytes_b = p
        .origin
        .data
        .get(&format!(".text.{}", p.kr))
        .cloned()
        .unwrap_or_default();
    for (i, (x, y)) in a.instrs.iter().zip(&b.instrs).enumerate() {
        let at = a.start + 16 * i as u64;
        let word = |bytes: &[u8], start: u64| word_at(bytes, start + 16 * i as u64);
        let (wa, wb) = (word(&bytes_a, a.start), word(&bytes_b, b.start));
        same_instruction(p, x, y, wa, wb).map_err(|what| Difference::At {
            at,
            what: Box::new(what),
        })?;
    }
    Ok(())
}

fn word_at(bytes: &[u8], at: u64) -> u128 {
    let at = usize::try_from(at).unwrap_or(usize::MAX);
    bytes
        .get(at..at.saturating_add(16))
        .and_then(|b| <[u8; 16]>::try_from(b).ok())
        .map_or(0, u128::from_le_bytes)
}

/// One instruction pair (see [`compare_listings`]).
fn same_instruction(
    p: &Pair<'_>,
    x: &Instr,
    y: &Instr,
    wa: u128,
    wb: u128,
) -> Result<(), Difference> {
    let show = |i: &Instr| {
        format!("{} {} {}", i.guard, i.opcode, i.operands)
            .trim()
            .to_string()
    };
    let different = || Difference::Instruction {
        shipped: show(x),
        origin: show(y),
    };
    if (&x.guard, &x.opcode) != (&y.guard, &y.opcode) {
        return Err(different());
    }
    let ops_a = operands(&x.operands);
    let ops_b = operands(&y.operands);
    if ops_a.len() != ops_b.len() {
        return Err(different());
    }
    let mut moved: Option<(u64, u64)> = None;
    for (oa, ob) in ops_a.iter().zip(&ops_b) {
        if p.map(oa) == *ob {
            if let Some(bank) = indexed_module_bank(p, oa) {
                both_ways(p, bank)?;
            }
            continue;
        }
        match (bank_operand(p.shipped, oa), bank_operand(p.origin, ob)) {
            (Some((ba, offa)), Some((bb, offb))) if ba == bb => {
                let (ra, rb) = (
                    banks::resolve(p.shipped, ba, offa),
                    banks::resolve(p.origin, bb, offb),
                );
                if ra != rb {
                    return Err(Difference::BankRead {
                        instruction: show(x),
                        shipped: ra,
                        origin: rb,
                    });
                }
                if moved.replace((offa, offb)).is_some() {
                    return Err(Difference::TwoBankOperands(show(x)));
                }
            }
            _ => return Err(different()),
        }
    }
    let diff = wa ^ wb;
    let explained = match moved {
        None => diff == 0,
        Some((a, b)) => shifted_copy(diff, u128::from(a ^ b)),
    };
    if !explained {
        return Err(Difference::Encoding {
            instruction: show(x),
            shipped: wa,
            origin: wb,
        });
    }
    Ok(())
}

/// Whether `diff` is `value` at one bit position: the encodings differ only in the field
/// that holds the bank offset, wherever the architecture keeps it.
fn shifted_copy(diff: u128, value: u128) -> bool {
    value != 0
        && (0..128)
            .filter_map(|s| value.checked_shl(s).filter(|v| v >> s == value))
            .any(|v| v == diff)
}

/// The operands of nvdisasm's operand text, split at the commas outside brackets.
fn operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `c[0x4][0x28]` (with any prefix such as `-` or `|`) in a module-level bank: (bank, offset).
fn bank_operand(d: &Dump, op: &str) -> Option<(u32, u64)> {
    let (bank, index) = constant_operand(op)?;
    let off = u64::from_str_radix(index.strip_prefix("0x")?, 16).ok()?;
    d.section(&format!(".nv.constant{bank}"))?;
    Some((bank, off))
}

/// A module-level bank read through a register (`c[0x4][R2]`, `c[0x3][R0+0x10]`).
fn indexed_module_bank(p: &Pair<'_>, op: &str) -> Option<u32> {
    let (bank, index) = constant_operand(op)?;
    let through_register = index.starts_with('R') || index.starts_with("UR");
    (through_register && p.shipped.section(&format!(".nv.constant{bank}")).is_some())
        .then_some(bank)
}

/// `c[0xB][INDEX]` anywhere in an operand: (B, INDEX).
fn constant_operand(op: &str) -> Option<(u32, &str)> {
    let at = op.find("c[0x")?;
    let rest = &op[at + 4..];
    let close = rest.find(']')?;
    let bank = u32::from_str_radix(&rest[..close], 16).ok()?;
    let index = rest[close + 1..].strip_prefix('[')?;
    let index = &index[..index.find(']')?];
    Some((bank, index))
}

/// A bank read through a register may reach any offset: it must read the same everywhere.
fn both_ways(p: &Pair<'_>, bank: u32) -> Result<(), Difference> {
    banks::agrees(p.origin, p.shipped, bank)
        .and_then(|()| banks::agrees(p.shipped, p.origin, bank))
        .map_err(|e| Difference::IndexedBank {
            bank,
            what: Box::new(e),
        })
}

/// The rows of the callgraph's lists 2..4 ([`Dump::graph_rows`]) of the functions in section
/// `t`, by name (`map`: shipped names to the origin's).
fn graph_rows(d: &Dump, t: usize, map: &dyn Fn(&str) -> String) -> BTreeSet<(i64, String, String)> {
    let inside: BTreeSet<String> = d
        .defined_in(t)
        .into_iter()
        .map(|s| s.name.clone())
        .collect();
    d.graph_rows
        .iter()
        .filter(|(_, a, _)| inside.contains(a))
        .map(|(l, a, b)| {
            let second = match (*l, b.as_str()) {
                (4, _) => map(b),
                // A prototype is an offset into the module's strings, which differ between
                // an `--entry` run and the whole module; only "a kernel" (0) is compared.
                (_, "0") => "a kernel".to_string(),
                _ => "a prototype".to_string(),
            };
            (*l, map(a), second)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_splitting_and_banks() {
        assert_eq!(operands("R2,c[0x4][R2]"), ["R2", "c[0x4][R2]"]);
        assert_eq!(operands("desc[UR4][R2.64],R3"), ["desc[UR4][R2.64]", "R3"]);
        assert_eq!(constant_operand("-c[0x3][0x10]"), Some((3, "0x10")));
        assert_eq!(constant_operand("c[0x4][R2+0x8]"), Some((4, "R2+0x8")));
        assert_eq!(constant_operand("R2"), None);
    }

    #[test]
    fn helpers_are_renamed_by_role_as_whole_names_only() {
        let names = BTreeMap::from([
            (
                "$__internal_2_$__cuda_sm20_rcp_rn_f64".to_string(),
                "$__internal_0_$__cuda_sm20_rcp_rn_f64".to_string(),
            ),
            (
                "$__internal_0_$__cuda_sm20_div_rn_f64_full".to_string(),
                "$__internal_2_$__cuda_sm20_div_rn_f64_full".to_string(),
            ),
        ]);
        // Swapped numbers each take the other's, once; a longer name is not a match.
        assert_eq!(
            rename_tokens(
                "`($__internal_2_$__cuda_sm20_rcp_rn_f64)`, $__internal_0_$__cuda_sm20_div_rn_f64_full",
                &names
            ),
            "`($__internal_0_$__cuda_sm20_rcp_rn_f64)`, $__internal_2_$__cuda_sm20_div_rn_f64_full"
        );
        assert_eq!(
            rename_tokens(
                "function: $__internal_2_$__cuda_sm20_rcp_rn_f64x frame",
                &names
            ),
            "function: $__internal_2_$__cuda_sm20_rcp_rn_f64x frame"
        );
        assert_eq!(
            helper_role("$__internal_12_$__cuda_sm20_sqrt_rn_f32_slowpath"),
            Some("__cuda_sm20_sqrt_rn_f32_slowpath")
        );
        assert_eq!(helper_role("$_Z1kPf$__internal_1"), None);
        assert_eq!(helper_role("$__internal_x_$f"), None);
        assert_eq!(helper_role("$__internal_1_$"), None);
    }

    #[test]
    fn a_moved_offset_explains_only_its_own_bits() {
        let off = u128::from(0x28u64 ^ 0x10);
        assert!(shifted_copy(off << 38, off));
        assert!(!shifted_copy((off << 38) | 1 << 110, off));
        assert!(!shifted_copy(0, off));
    }
}

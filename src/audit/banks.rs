//! Module-level constant banks (`.nv.constant<N>` with no kernel after the number): bank 4
//! holds the addresses of globals, strings and external functions, in the order ptxas met
//! them; bank 3 the `__constant__` data. An offset into one means what its relocation, the
//! object placed there or its bytes say, in that cubin's own tables.

use super::Difference;
use super::dump::Dump;

/// The bank number of a module-level bank section's name.
pub(crate) fn module_bank(name: &str) -> Option<u32> {
    let n = name.strip_prefix(".nv.constant")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok())
        .flatten()
}

fn section_name(bank: u32) -> String {
    format!(".nv.constant{bank}")
}

/// Bytes a relocation of this type writes.
fn width(kind: &str) -> u64 {
    if kind.ends_with("_64") { 8 } else { 4 }
}

/// What offset `at` of `bank` means in `d`: the symbol a relocation writes there, else the
/// object placed there, else its bytes.
pub(crate) fn resolve(d: &Dump, bank: u32, at: u64) -> String {
    let name = section_name(bank);
    let Some(sec) = d.section(&name) else {
        return format!("no bank {bank}");
    };
    if let Some(r) = d
        .relocs
        .get(&name)
        .into_iter()
        .flatten()
        .find(|r| r.offset <= at && at < r.offset + width(&r.kind))
    {
        let addend = r.addend.as_deref().filter(|a| *a != "0x0").unwrap_or("");
        return format!("{}{addend}@+{}", r.symbol, at - r.offset);
    }
    if let Some(o) = d
        .defined_in(sec.index)
        .into_iter()
        .find(|o| o.value <= at && at < o.value + o.size.max(1))
    {
        return format!("{}@+{}", o.name, at - o.value);
    }
    let bytes = d.data.get(&name).map_or(&[][..], Vec::as_slice);
    let at = usize::try_from(at).unwrap_or(usize::MAX);
    match bytes.get(at..at.saturating_add(4).min(bytes.len())) {
        Some(b) if !b.is_empty() => format!("bytes {b:02x?}"),
        _ => format!("past the end of bank {bank}"),
    }
}

/// Every offset `origin`'s `bank` gives meaning to reads the same in `shipped`: its
/// relocations, its objects and its bytes. (A bank `origin` lacks is read by no code of it.)
pub(crate) fn agrees(origin: &Dump, shipped: &Dump, bank: u32) -> Result<(), Difference> {
    let name = section_name(bank);
    let Some(sec) = origin.section(&name) else {
        return Ok(());
    };
    let mine = origin.data.get(&name).map_or(&[][..], Vec::as_slice);
    let theirs = shipped.data.get(&name).map_or(&[][..], Vec::as_slice);
    if theirs.get(..mine.len()) != Some(mine) {
        return Err(Difference::SectionBytes(name));
    }
    let shipped_relocs = shipped.relocs.get(&name).cloned().unwrap_or_default();
    for r in origin.relocs.get(&name).into_iter().flatten() {
        if !shipped_relocs.contains(r) {
            return Err(Difference::BankRelocation {
                bank: name,
                offset: r.offset,
                symbol: r.symbol.clone(),
                shipped: resolve(shipped, bank, r.offset),
            });
        }
    }
    let shipped_sec = shipped.section(&name).map(|s| s.index);
    for o in origin.defined_in(sec.index) {
        let same = shipped.symbols.iter().any(|t| {
            t.name == o.name
                && (t.value, t.size) == (o.value, o.size)
                && Some(t.section) == shipped_sec
        });
        if !same {
            return Err(Difference::BankObject {
                bank: name,
                object: o.name.clone(),
            });
        }
    }
    Ok(())
}

/// The module-level banks of `d`.
pub(crate) fn banks(d: &Dump) -> Vec<u32> {
    d.sections
        .iter()
        .filter_map(|s| module_bank(&s.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_names() {
        assert_eq!(module_bank(".nv.constant4"), Some(4));
        assert_eq!(module_bank(".nv.constant0._Z1kv"), None);
        assert_eq!(module_bank(".nv.constant"), None);
    }
}

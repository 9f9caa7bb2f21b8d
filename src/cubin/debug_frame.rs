//! `.debug_frame`: DWARF call frame information, 64-bit format in cubins (`ff ff ff ff`, then
//! a u64 length). Each function has an FDE whose `initial_location` is relocated against a
//! symbol of its text section and whose `address_range` is its byte size; when code moves,
//! the range follows the offset map (the location is fixed through its relocation).

use super::Cubin;
use super::elf::{SHT_REL, SHT_RELA, rd_u32, rd_u64, wr_u64};
use super::error::CubinError;
use super::offset_map::OffsetMap;
use super::symbols::{Symbol, parse_relocs};

/// One FDE: where its `initial_location` and `address_range` fields are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fde {
    /// Offset of the record in the section.
    pub(crate) offset: usize,
    pub(crate) location_at: usize,
    pub range_at: usize,
}

/// The FDEs of a `.debug_frame` (CIEs skipped). Stops at the first malformed record; at
/// most `data.len() / 12` iterations.
pub fn fdes(data: &[u8]) -> Vec<Fde> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let Some(first) = rd_u32(data, at) else { break };
        let (len, body, id, id_size, cie_id) = if first == 0xffff_ffff {
            let Some(len) = rd_u64(data, at + 4) else {
                break;
            };
            let Some(id) = rd_u64(data, at + 12) else {
                break;
            };
            (len, at + 12, id, 8usize, u64::MAX)
        } else {
            let Some(id) = rd_u32(data, at + 4) else {
                break;
            };
            (first as u64, at + 4, id as u64, 4usize, 0xffff_ffff)
        };
        let Some(end) = usize::try_from(len).ok().and_then(|l| body.checked_add(l)) else {
            break;
        };
        if end > data.len() || len == 0 {
            break;
        }
        if id != cie_id {
            let location_at = body + id_size;
            let range_at = location_at + 8;
            if range_at + 8 <= end {
                out.push(Fde {
                    offset: at,
                    location_at,
                    range_at,
                });
            }
        }
        at = end;
    }
    out
}

/// `(section, field offset, new value)` writes.
pub(crate) type RangeUpdates = Vec<(usize, usize, u64)>;

/// New `address_range`s for the FDEs of functions in text section `text` under `map`
/// (computed from the file before any change; `old_symbols` is the symbol table then).
pub(crate) fn plan_range_updates(
    cubin: &Cubin,
    text: usize,
    map: &OffsetMap,
    old_symbols: &[Symbol],
) -> Result<RangeUpdates, CubinError> {
    let mut out = Vec::new();
    let sections = &cubin.elf.sections;
    let old_size = sections.get(text).map(|s| s.data.len() as u64).unwrap_or(0);
    for (ri, rs) in sections.iter().enumerate() {
        if !(rs.sh_type == SHT_REL || rs.sh_type == SHT_RELA) || ri == 0 {
            continue;
        }
        let df = rs.sh_info as usize;
        let Some(dsec) = sections.get(df) else {
            continue;
        };
        if dsec.name != ".debug_frame" {
            continue;
        }
        let Some(rel) = parse_relocs(&rs.data, rs.sh_type == SHT_RELA) else {
            continue;
        };
        for f in fdes(&dsec.data) {
            let Some(r) = rel.iter().find(|r| r.r_offset == f.location_at as u64) else {
                continue;
            };
            let Some(sym) = old_symbols.get(r.sym as usize) else {
                continue;
            };
            if sym.st_shndx as usize != text {
                continue;
            }
            let addend = match r.addend {
                Some(a) => a as u64,
                None => rd_u64(&dsec.data, f.location_at).unwrap_or(0),
            };
            let start = sym.st_value.wrapping_add(addend);
            let Some(range) = rd_u64(&dsec.data, f.range_at) else {
                continue;
            };
            let what = format!(".debug_frame FDE at {:#x}", f.offset);
            let new_start = map.map(start).ok_or(CubinError::Unmapped {
                what: what.clone(),
                offset: start,
            })?;
            let end = start.saturating_add(range);
            let new_end = map
                .map(end)
                .ok_or(CubinError::Unmapped { what, offset: end })?;
            let _ = old_size;
            out.push((df, f.range_at, new_end.saturating_sub(new_start)));
        }
    }
    Ok(out)
}

pub(crate) fn apply_range_updates(cubin: &mut Cubin, updates: &RangeUpdates) {
    for &(sec, at, v) in updates {
        if let Some(s) = cubin.elf.sections.get_mut(sec) {
            let _ = wr_u64(&mut s.data, at, v);
        }
    }
}

//! `.symtab` entries and relocation entries (REL on sm_75-89, RELA on sm_90+).

use super::elf::{cstr, rd_u32, rd_u64};

pub(crate) const SYM_SIZE: usize = 24;
pub(crate) const STT_FUNC: u8 = 2;
pub(crate) const STT_SECTION: u8 = 3;
pub(crate) const STB_LOCAL: u8 = 0;
/// `st_other` bit of a kernel (cuobjdump: `ENTRY`).
pub(crate) const STO_CUDA_ENTRY: u8 = 0x10;

/// A mangled name shortened for menus and progress lines: `_Z13walk_featuresPKi...` →
/// `walk_features` (the identifier of a plain `_Z<len><name>` mangling; others unchanged).
pub(crate) fn short_name(name: &str) -> String {
    let Some(rest) = name.strip_prefix("_Z") else {
        return name.to_string();
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<usize>() {
        Ok(n) if rest.len() >= digits.len() + n => rest[digits.len()..digits.len() + n].to_string(),
        _ => name.to_string(),
    }
}

/// One symbol, fields verbatim, plus its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub(crate) st_name: u32,
    pub(crate) st_info: u8,
    pub(crate) st_other: u8,
    pub(crate) st_shndx: u16,
    pub(crate) st_value: u64,
    pub(crate) st_size: u64,
}

impl Symbol {
    pub(crate) fn kind(&self) -> u8 {
        self.st_info & 0xf
    }
    pub fn bind(&self) -> u8 {
        self.st_info >> 4
    }
    pub(crate) fn is_kernel(&self) -> bool {
        self.kind() == STT_FUNC && self.st_other & STO_CUDA_ENTRY != 0
    }
}

/// Parse a symbol table's bytes (whole entries only; a trailing partial entry is an error
/// for the caller to report).
pub(crate) fn parse_symbols(data: &[u8], strtab: &[u8]) -> Option<Vec<Symbol>> {
    if !data.len().is_multiple_of(SYM_SIZE) {
        return None;
    }
    data.chunks_exact(SYM_SIZE)
        .map(|c| {
            let st_name = rd_u32(c, 0)?;
            Some(Symbol {
                name: cstr(strtab, st_name as usize).unwrap_or_default(),
                st_name,
                st_info: c[4],
                st_other: c[5],
                st_shndx: u16::from_le_bytes([c[6], c[7]]),
                st_value: rd_u64(c, 8)?,
                st_size: rd_u64(c, 16)?,
            })
        })
        .collect()
}

pub(crate) fn encode_symbols(syms: &[Symbol]) -> Vec<u8> {
    let mut out = Vec::with_capacity(syms.len() * SYM_SIZE);
    for s in syms {
        out.extend_from_slice(&s.st_name.to_le_bytes());
        out.push(s.st_info);
        out.push(s.st_other);
        out.extend_from_slice(&s.st_shndx.to_le_bytes());
        out.extend_from_slice(&s.st_value.to_le_bytes());
        out.extend_from_slice(&s.st_size.to_le_bytes());
    }
    out
}

/// One relocation; `addend` is `Some` for RELA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reloc {
    pub(crate) r_offset: u64,
    pub(crate) sym: u32,
    pub(crate) r_type: u32,
    pub(crate) addend: Option<i64>,
}

/// Parse REL (`rela == false`, 16-byte) or RELA (24-byte) entries.
pub(crate) fn parse_relocs(data: &[u8], rela: bool) -> Option<Vec<Reloc>> {
    let size = if rela { 24 } else { 16 };
    if !data.len().is_multiple_of(size) {
        return None;
    }
    data.chunks_exact(size)
        .map(|c| {
            let info = rd_u64(c, 8)?;
            Some(Reloc {
                r_offset: rd_u64(c, 0)?,
                sym: (info >> 32) as u32,
                r_type: info as u32,
                addend: if rela {
                    Some(rd_u64(c, 16)? as i64)
                } else {
                    None
                },
            })
        })
        .collect()
}

pub(crate) fn encode_relocs(relocs: &[Reloc]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in relocs {
        out.extend_from_slice(&r.r_offset.to_le_bytes());
        out.extend_from_slice(&(((r.sym as u64) << 32) | r.r_type as u64).to_le_bytes());
        if let Some(a) = r.addend {
            out.extend_from_slice(&a.to_le_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_name("_Z13walk_featuresPKiPKfPfii"), "walk_features");
        assert_eq!(short_name("plain"), "plain");
        assert_eq!(short_name("_Z99x"), "_Z99x");
    }
}

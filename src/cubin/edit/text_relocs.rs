//! The relocations that move with a kernel's code ([`Cubin::replace_text`]): offsets in the
//! section's own relocation sections, and addends of relocations elsewhere whose symbol
//! lives in the section (in the entry, or inline in the relocated bytes).

use crate::cubin::Cubin;
use crate::cubin::elf::{SHT_REL, SHT_RELA, rd_u32, rd_u64, wr_u32, wr_u64};
use crate::cubin::error::CubinError;
use crate::cubin::offset_map::OffsetMap;
use crate::cubin::symbols::{Reloc, Symbol, encode_relocs, parse_relocs};

/// The relocation changes of one code move.
#[derive(Default)]
pub(super) struct RelocEdit {
    /// Re-encoded relocation sections: (section, data).
    sections: Vec<(usize, Vec<u8>)>,
    /// Inline addends to write.
    inline: Vec<InlinePatch>,
}

/// An inline addend: `value`, `width` bytes (4 or 8), at `offset` of `section`.
struct InlinePatch {
    section: usize,
    offset: u64,
    value: u64,
    width: u32,
}

/// One code move as the relocations see it.
struct Move<'a> {
    cubin: &'a Cubin,
    kernel: &'a str,
    /// The moved section.
    text: usize,
    map: &'a OffsetMap,
    /// The symbol table after the move (the cubin's is the one before).
    symbols: &'a [Symbol],
}

/// A relocation section being moved.
struct RelSection<'a> {
    index: usize,
    name: &'a str,
    /// The section its offsets point into (`sh_info`).
    target: usize,
}

impl Cubin {
    /// The relocation changes of moving section `text`'s code through `map` (`symbols`:
    /// the symbol table after the move).
    pub(super) fn moved_relocations(
        &self,
        kernel: &str,
        text: usize,
        map: &OffsetMap,
        symbols: &[Symbol],
    ) -> Result<RelocEdit, CubinError> {
        let mv = Move {
            cubin: self,
            kernel,
            text,
            map,
            symbols,
        };
        let mut edit = RelocEdit::default();
        for (i, s) in self.elf.sections.iter().enumerate() {
            if !(s.sh_type == SHT_REL || s.sh_type == SHT_RELA)
                || s.sh_link as usize != self.symtab
                || i == 0
            {
                continue;
            }
            let rela = s.sh_type == SHT_RELA;
            let mut rel: Vec<Reloc> = parse_relocs(&s.data, rela)
                .ok_or_else(|| CubinError::section(i, &s.name, "partial relocation entry"))?;
            let sec = RelSection {
                index: i,
                name: &s.name,
                target: s.sh_info as usize,
            };
            let mut changed = false;
            for r in rel.iter_mut() {
                changed |= mv.relocation(&sec, r, &mut edit.inline)?;
            }
            if changed {
                edit.sections.push((i, encode_relocs(&rel)));
            }
        }
        Ok(edit)
    }

    /// Write the relocation sections and inline addends of `edit`.
    pub(super) fn apply_relocations(&mut self, edit: RelocEdit) -> Result<(), CubinError> {
        for (i, d) in edit.sections {
            self.elf.sections[i].data = d;
        }
        for p in edit.inline {
            let data = &mut self.elf.sections[p.section].data;
            let at = usize::try_from(p.offset).unwrap_or(usize::MAX);
            let ok = if p.width == 8 {
                wr_u64(data, at, p.value)
            } else {
                wr_u32(data, at, p.value as u32)
            };
            ok.ok_or_else(|| CubinError::Range(format!("relocation target at {:#x}", p.offset)))?;
        }
        Ok(())
    }
}

impl Move<'_> {
    /// Move relocation `r` of `sec`: its offset where it points into the moved code, its
    /// addend where its symbol lives there (inline addends go to `inline`). Whether the
    /// entry changed.
    fn relocation(
        &self,
        sec: &RelSection,
        r: &mut Reloc,
        inline: &mut Vec<InlinePatch>,
    ) -> Result<bool, CubinError> {
        let mut changed = false;
        if sec.target == self.text {
            r.r_offset = self
                .map
                .map_or_err(r.r_offset, &format!("relocation in {}", sec.name))?;
            changed = true;
        }
        let Some(os) = self.cubin.symbols.get(r.sym as usize) else {
            return Ok(changed);
        };
        if os.st_shndx as usize != self.text {
            return Ok(changed);
        }
        let ns = &self.symbols[r.sym as usize];
        let what = format!("relocation in {} at {:#x}", sec.name, r.r_offset);
        if let Some(a) = r.addend {
            let old = os.st_value.wrapping_add(a as u64);
            let new = self.map.map_or_err(old, &what)?;
            r.addend = Some(new.wrapping_sub(ns.st_value) as i64);
            return Ok(true);
        }
        let width = match r.r_type {
            1 => 4,
            2 => 8,
            // R_CUDA_UNUSED_CLEAR32/64: the field is cleared, no address.
            0x48 | 0x49 => return Ok(changed),
            // R_CUDA_ABS47_34 (`CALL.ABS.NOINC `(f)` of -G code on sm_75-89): the addend is
            // the 47-bit field at bit 34 of the instruction.
            0x3a => {
                inline.extend(self.abs47_34(sec, r, os, ns, &what)?);
                return Ok(changed);
            }
            t => {
                // An inline addend inside an instruction field: this layer does not know
                // where it sits, so moving the code would leave the target stale.
                return Err(CubinError::Function {
                    name: self.kernel.to_string(),
                    what: format!(
                        "{what}: REL type {t:#x} into the moved section has an inline addend this layer cannot rewrite"
                    ),
                });
            }
        };
        let tsec = self.cubin.elf.sections.get(sec.target).ok_or_else(|| {
            CubinError::section(sec.index, sec.name, "relocates a missing section")
        })?;
        let at = usize::try_from(r.r_offset).unwrap_or(usize::MAX);
        let old_inline = if width == 8 {
            rd_u64(&tsec.data, at)
        } else {
            rd_u32(&tsec.data, at).map(u64::from)
        }
        .ok_or_else(|| CubinError::Range(what.clone()))?;
        let old = os.st_value.wrapping_add(old_inline);
        let new = self.map.map_or_err(old, &what)?;
        inline.push(InlinePatch {
            section: sec.target,
            offset: r.r_offset,
            value: new.wrapping_sub(ns.st_value),
            width,
        });
        Ok(changed)
    }

    /// The new instruction for an `R_CUDA_ABS47_34` relocation (old symbol `os`, new `ns`),
    /// as two 8-byte halves; none when its addend stays.
    fn abs47_34(
        &self,
        sec: &RelSection,
        r: &Reloc,
        os: &Symbol,
        ns: &Symbol,
        what: &str,
    ) -> Result<Vec<InlinePatch>, CubinError> {
        let tsec = self.cubin.elf.sections.get(sec.target).ok_or_else(|| {
            CubinError::section(sec.index, sec.name, "relocates a missing section")
        })?;
        let at = usize::try_from(r.r_offset).unwrap_or(usize::MAX);
        let word = tsec
            .data
            .get(at..at.saturating_add(16))
            .and_then(|b| <[u8; 16]>::try_from(b).ok())
            .map(u128::from_le_bytes)
            .ok_or_else(|| CubinError::Range(what.to_string()))?;
        let inline = ((word >> 34) & ((1u128 << 47) - 1)) as u64;
        let old = os.st_value.wrapping_add(inline);
        let new = self.map.map_or_err(old, what)?;
        let new_inline = new.wrapping_sub(ns.st_value);
        if new_inline == inline {
            return Ok(Vec::new());
        }
        if sec.target == self.text || new_inline >> 47 != 0 {
            return Err(CubinError::Function {
                name: self.kernel.to_string(),
                what: format!(
                    "{what}: R_CUDA_ABS47_34 addend {inline:#x} would become {new_inline:#x}, which this layer cannot write"
                ),
            });
        }
        let m = ((1u128 << 47) - 1) << 34;
        let word = (word & !m) | (u128::from(new_inline) << 34);
        let half = |offset: u64, value: u64| InlinePatch {
            section: sec.target,
            offset,
            value,
            width: 8,
        };
        Ok(vec![
            half(r.r_offset, word as u64),
            half(r.r_offset + 8, (word >> 64) as u64),
        ])
    }
}

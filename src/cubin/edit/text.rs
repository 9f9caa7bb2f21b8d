//! Replacing a kernel's code: every offset into the section that the cubin holds elsewhere
//! (attributes, symbols, relocations, `.debug_frame`, jump tables) moves with it.

use super::super::debug_frame::{self, RangeUpdates};
use super::text_relocs::RelocEdit;
use super::{NOP, TEXT_UNIT, remap_offsets};
use crate::cubin::Cubin;
use crate::cubin::eiattr::Attr;
use crate::cubin::elf::{rd_u32, wr_u32};
use crate::cubin::error::CubinError;
use crate::cubin::nvinfo::{EIFMT_SVAL, Record};
use crate::cubin::offset_map::OffsetMap;
use crate::cubin::symbols::{STT_SECTION, Symbol};

/// Everything moving the code changes, built and checked before the first change.
struct TextEdit {
    /// `.nv.info.<k>` with its offsets remapped.
    info: Option<(usize, Vec<Record>)>,
    /// The symbol table with the section's symbols moved.
    symbols: Vec<Symbol>,
    relocs: RelocEdit,
    fde: RangeUpdates,
    /// `.nv.constant2.<k>` with its jump-table entries remapped.
    const2: Option<(usize, Vec<u8>)>,
}

impl Cubin {
    /// Replace the code of `kernel` (which must own its `.text` section) with `code`
    /// (padded with NOPs to a multiple of 128 bytes). `map` takes every old instruction
    /// offset to its new place; through it the edit moves the offsets in `.nv.info.<k>`
    /// ([`remap_offsets`]), the symbols inside the section (sub-functions), relocation
    /// offsets in `.rel(a).text.<k>`, relocations pointing into the section (addends),
    /// `.nv.constant2.<k>` jump-table entries, and `.debug_frame` FDE ranges. Branch
    /// immediates inside `code` are the caller's business. On sm_100+ the "merc" copy of the
    /// code (`.nv.capmerc.text.<k>`) is left as it was; DWARF line programs are not updated.
    /// Everything is checked before the first change (an error leaves the cubin as it was,
    /// short of an arithmetic overflow in the final relayout).
    pub fn replace_text(
        &mut self,
        kernel: &str,
        code: Vec<u8>,
        map: &OffsetMap,
    ) -> Result<(), CubinError> {
        let (sym, text) = self.owned_text(kernel, code.len())?;
        let old_size = self.elf.sections[text].data.len() as u64;
        let code = pad_text(code);
        let new_size = code.len() as u64;

        let info = self.remapped_info(text, map, kernel)?;
        // Jump-table targets (from INDIRECT_BRANCH_TARGETS) before the remap.
        let targets = self.jump_targets(text);
        let symbols = self.moved_symbols(sym, text, map, old_size, new_size)?;
        let relocs = self.moved_relocations(kernel, text, map, &symbols)?;
        let fde = debug_frame::plan_range_updates(self, text, map, &self.symbols)?;
        let const2 = self.moved_jump_tables(text, &targets, map)?;

        self.apply_text_edit(
            text,
            code,
            TextEdit {
                info,
                symbols,
                relocs,
                fde,
                const2,
            },
        )
    }

    /// The symbol of `kernel` and its text section, which it must own; `len`: the new
    /// code's size, whole instructions.
    fn owned_text(&self, kernel: &str, len: usize) -> Result<(usize, usize), CubinError> {
        let sym = self.function_or_err(kernel)?;
        if !self.owns_section(sym) {
            return Err(CubinError::Function {
                name: kernel.to_string(),
                what: "does not own its text section".to_string(),
            });
        }
        if !len.is_multiple_of(16) {
            return Err(CubinError::Function {
                name: kernel.to_string(),
                what: format!("new code is {len} bytes, not a multiple of 16"),
            });
        }
        Ok((sym, self.symbols[sym].st_shndx as usize))
    }

    /// The attributes of `.nv.info.<k>` with every instruction offset moved through `map`.
    fn remapped_info(
        &self,
        text: usize,
        map: &OffsetMap,
        kernel: &str,
    ) -> Result<Option<(usize, Vec<Record>)>, CubinError> {
        let Some(k) = self.function_info_section(text) else {
            return Ok(None);
        };
        let mut recs = self.records(k);
        remap_offsets(&mut recs, map, kernel)?;
        Ok(Some((k, recs)))
    }

    /// The targets `INDIRECT_BRANCH_TARGETS` lists for the section (old offsets).
    fn jump_targets(&self, text: usize) -> Vec<u32> {
        self.function_info_section(text)
            .map(|k| self.records(k))
            .unwrap_or_default()
            .iter()
            .filter(|r| r.attr == Attr::IndirectBranchTargets && r.format == EIFMT_SVAL)
            .flat_map(|r| {
                let w: Vec<u32> = r.words().collect();
                let mut out = Vec::new();
                let mut i = 0;
                while i + 3 <= w.len() {
                    let n = w[i + 2] as usize;
                    let end = (i + 3).saturating_add(n).min(w.len());
                    out.extend_from_slice(&w[i + 3..end]);
                    i = end.max(i + 3);
                }
                out
            })
            .collect()
    }

    /// The symbol table with the symbols inside the section moved (`sym`, the kernel's,
    /// spans the new code).
    fn moved_symbols(
        &self,
        sym: usize,
        text: usize,
        map: &OffsetMap,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<Symbol>, CubinError> {
        let mut symbols = self.symbols.clone();
        for (j, s) in symbols.iter_mut().enumerate() {
            if s.st_shndx as usize != text || s.kind() == STT_SECTION {
                continue;
            }
            if j == sym {
                s.st_size = new_size;
                continue;
            }
            let what = format!("symbol `{}`", s.name);
            let v = map.map_or_err(s.st_value, &what)?;
            if s.st_size > 0 {
                let end = s
                    .st_value
                    .checked_add(s.st_size)
                    .ok_or_else(|| CubinError::Range(what.clone()))?;
                // A function that ended at the section's end still does, padding included
                // (as ptxas lays them out; nvdisasm -plr rejects code after the last
                // function as falling through).
                let e = if end >= old_size {
                    new_size.max(v)
                } else {
                    map.map_or_err(end, &what)?
                };
                s.st_size = e.saturating_sub(v);
            }
            s.st_value = v;
        }
        Ok(symbols)
    }

    /// `.nv.constant2.<k>` with the words that hold a jump-table target (`targets`) moved;
    /// `None` when there are no targets or no such section.
    fn moved_jump_tables(
        &self,
        text: usize,
        targets: &[u32],
        map: &OffsetMap,
    ) -> Result<Option<(usize, Vec<u8>)>, CubinError> {
        if targets.is_empty() {
            return Ok(None);
        }
        let Some(c) = self
            .elf
            .sections
            .iter()
            .position(|s| s.name.starts_with(".nv.constant2.") && s.sh_info as usize == text)
        else {
            return Ok(None);
        };
        let mut data = self.elf.sections[c].data.clone();
        for w in 0..data.len() / 4 {
            if let Some(v) = rd_u32(&data, w * 4)
                && targets.contains(&v)
            {
                wr_u32(&mut data, w * 4, map.map_u32(v, "jump table")?);
            }
        }
        Ok(Some((c, data)))
    }

    /// Everything checked: write `edit` and the new `code` of section `text`.
    fn apply_text_edit(
        &mut self,
        text: usize,
        code: Vec<u8>,
        edit: TextEdit,
    ) -> Result<(), CubinError> {
        if let Some((k, recs)) = edit.info {
            self.set_records(k, &recs)?;
        }
        self.symbols = edit.symbols;
        self.store_symbols();
        self.apply_relocations(edit.relocs)?;
        debug_frame::apply_range_updates(self, &edit.fde);
        if let Some((c, d)) = edit.const2 {
            self.elf.sections[c].data = d;
        }
        self.elf.sections[text].data = code;
        self.finish()
    }
}

/// `code` padded with NOPs to a whole number of text units.
fn pad_text(mut code: Vec<u8>) -> Vec<u8> {
    while !code.len().is_multiple_of(TEXT_UNIT) {
        code.extend_from_slice(&NOP);
    }
    code
}

//! Edits: register count, static shared size, text replacement, symbol ranges. Each edit
//! leaves every cross-reference consistent (attributes, symbols, relocations, `.debug_frame`,
//! program headers) and relays the file out.

mod text;
mod text_relocs;

use super::Cubin;
use super::eiattr::{Attr, OffsetLayout};
use super::elf::{
    SHF_ALLOC, SHF_INFO_LINK, SHF_WRITE, SHT_CUDA_SHARED, SHT_NOBITS, SHT_REL, SHT_RELA, Section,
    rd_u32, wr_u32,
};
use super::error::CubinError;
use super::nvinfo::{EIFMT_SVAL, Record, encode_records, parse_records};
use super::offset_map::OffsetMap;
use super::refusal::Refusal;
use super::symbols::{STB_LOCAL, STT_SECTION, Symbol, encode_relocs, parse_relocs};
use crate::arch::Sm;

/// The 16-byte NOP ptxas pads text sections with (`NOP` with no wait, no scoreboard).
pub const NOP: [u8; 16] = {
    let lo = 0x0000_0000_0000_7918u64.to_le_bytes();
    let hi = 0x000f_c000_0000_0000u64.to_le_bytes();
    let mut b = [0u8; 16];
    let mut i = 0;
    while i < 8 {
        b[i] = lo[i];
        b[i + 8] = hi[i];
        i += 1;
    }
    b
};

/// Text sections are a multiple of this many bytes.
pub(crate) const TEXT_UNIT: usize = 128;

/// Rewrite every instruction offset held by `records` (one function's `.nv.info.<k>`)
/// through `map`. The one place that knows which attributes hold offsets and how (§4.3):
/// u32 lists, `INDIRECT_BRANCH_TARGETS` (branch offset and targets), `MBARRIER_INSTR_OFFSETS`
/// (16-byte records, offset first) and `ANNOTATIONS` (`{kind, offset}` pairs). Refuses
/// attributes whose offsets are in an unknown layout.
pub(crate) fn remap_offsets(
    records: &mut [Record],
    map: &OffsetMap,
    func: &str,
) -> Result<(), CubinError> {
    for r in records.iter_mut() {
        let layout = r.attr.offset_layout();
        if layout == OffsetLayout::None {
            continue;
        }
        let what = format!("function `{func}`: {}", r.attr.name());
        if layout == OffsetLayout::Unknown {
            return Err(CubinError::UnknownOffsetLayout {
                name: func.to_string(),
                attr: r.attr.name(),
                code: r.attr.code(),
            });
        }
        if r.format != EIFMT_SVAL {
            continue;
        }
        let n = r.data.len() / 4;
        let bad = |at: usize| CubinError::Range(format!("{what}: malformed value at word {at}"));
        match layout {
            OffsetLayout::List => {
                for i in 0..n {
                    let v = r.word(i).ok_or_else(|| bad(i))?;
                    r.set_word(i, map.map_u32(v, &what)?)
                        .ok_or_else(|| bad(i))?;
                }
            }
            OffsetLayout::Stride16 => {
                for i in (0..n).step_by(4) {
                    let v = r.word(i).ok_or_else(|| bad(i))?;
                    r.set_word(i, map.map_u32(v, &what)?)
                        .ok_or_else(|| bad(i))?;
                }
            }
            OffsetLayout::KindOffsetPairs => {
                for i in (1..n).step_by(2) {
                    let v = r.word(i).ok_or_else(|| bad(i))?;
                    r.set_word(i, map.map_u32(v, &what)?)
                        .ok_or_else(|| bad(i))?;
                }
            }
            OffsetLayout::BranchTargets => {
                let mut i = 0;
                // Each step consumes at least 3 words, so this ends.
                while i < n {
                    let brx = r.word(i).ok_or_else(|| bad(i))?;
                    r.set_word(i, map.map_u32(brx, &what)?)
                        .ok_or_else(|| bad(i))?;
                    let count = r.word(i + 2).ok_or_else(|| bad(i + 2))? as usize;
                    let first = i + 3;
                    let end = first
                        .checked_add(count)
                        .filter(|&e| e <= n)
                        .ok_or_else(|| bad(i + 2))?;
                    for t in first..end {
                        let v = r.word(t).ok_or_else(|| bad(t))?;
                        r.set_word(t, map.map_u32(v, &what)?)
                            .ok_or_else(|| bad(t))?;
                    }
                    i = end;
                }
            }
            OffsetLayout::None | OffsetLayout::Unknown => {}
        }
    }
    Ok(())
}

/// Attributes of the global `.nv.info` whose first word is a symbol index.
/// Attributes whose first word is a symbol index (`EXTERNS` holds nothing but them).
pub(crate) fn sym_first_word(attr: Attr) -> bool {
    matches!(
        attr,
        Attr::Regcount
            | Attr::FrameSize
            | Attr::MinStackSize
            | Attr::MaxStackSize
            | Attr::ParamCbank
    )
}

impl Cubin {
    fn function_or_err(&self, name: &str) -> Result<usize, CubinError> {
        self.function_symbol(name)
            .ok_or_else(|| CubinError::NoFunction(name.to_string()))
    }

    fn set_records(&mut self, index: usize, records: &[Record]) -> Result<(), CubinError> {
        let sec = &self.elf.sections[index];
        let bytes = encode_records(records).map_err(|e| CubinError::Record {
            index,
            name: sec.name.clone(),
            offset: e.offset,
            what: e.what,
        })?;
        self.elf.sections[index].data = bytes;
        Ok(())
    }

    /// Sizes changed: sync `sh_size`, move what follows, rebuild program headers.
    fn finish(&mut self) -> Result<(), CubinError> {
        self.elf.relayout()
    }

    /// Set the register count of `kernel`: `EIATTR_REGCOUNT` in `.nv.info` (added when
    /// missing) and, on sm_75-89, `sh_info[31:24]` of its `.text` section.
    pub fn set_register_count(&mut self, kernel: &str, regs: u32) -> Result<(), CubinError> {
        let sym = self.function_or_err(kernel)?;
        if regs > 255 {
            return Err(CubinError::Range(format!(
                "function `{kernel}`: {regs} registers"
            )));
        }
        let g = self.global_info().ok_or_else(|| CubinError::Function {
            name: kernel.to_string(),
            what: "the cubin has no .nv.info".to_string(),
        })?;
        let mut recs = parse_records(&self.elf.sections[g].data).unwrap_or_default();
        let mut found = false;
        for r in recs.iter_mut() {
            if r.attr == Attr::Regcount && r.format == EIFMT_SVAL && r.word(0) == Some(sym as u32) {
                r.set_word(1, regs);
                found = true;
            }
        }
        if !found {
            let mut data = Vec::with_capacity(8);
            data.extend_from_slice(&(sym as u32).to_le_bytes());
            data.extend_from_slice(&regs.to_le_bytes());
            recs.push(Record {
                format: EIFMT_SVAL,
                attr: Attr::Regcount,
                short: 8,
                data,
            });
        }
        self.set_records(g, &recs)?;
        if Sm::of(self.arch()).model().text_sh_info_regs && self.owns_section(sym) {
            let text = self.symbols[sym].st_shndx as usize;
            let s = &mut self.elf.sections[text];
            s.sh_info = (s.sh_info & 0x00ff_ffff) | (regs << 24);
        }
        self.finish()
    }

    /// Set the local frame and stack sizes of `function` (`EIATTR_FRAME_SIZE`,
    /// `MIN_STACK_SIZE` and `MAX_STACK_SIZE` in `.nv.info`, where present): what the driver
    /// reserves per thread. Records that say "unknown" (recursion) are left alone.
    pub(crate) fn set_stack_size(&mut self, function: &str, bytes: u32) -> Result<(), CubinError> {
        let sym = self.function_or_err(function)?;
        let Some(g) = self.global_info() else {
            return Ok(());
        };
        let mut recs = parse_records(&self.elf.sections[g].data).unwrap_or_default();
        let mut changed = false;
        for r in recs.iter_mut() {
            if matches!(
                r.attr,
                Attr::FrameSize | Attr::MinStackSize | Attr::MaxStackSize
            ) && r.format == EIFMT_SVAL
                && r.word(0) == Some(sym as u32)
                && r.word(1).is_some_and(|v| v != 0xffff_ffff && v != bytes)
            {
                r.set_word(1, bytes);
                changed = true;
            }
        }
        if changed {
            self.set_records(g, &recs)?;
            self.finish()?;
        }
        Ok(())
    }

    /// Raise `EIATTR_MAXREG_COUNT` of `kernel` to at least `regs` (the register limit ptxas
    /// compiled under, kept in `.nv.info.<k>`); nothing when absent or "no limit".
    pub(crate) fn raise_maxreg_count(&mut self, kernel: &str, regs: u32) -> Result<(), CubinError> {
        let sym = self.function_or_err(kernel)?;
        let text = self.symbols[sym].st_shndx as usize;
        let Some(k) = self.function_info_section(text) else {
            return Ok(());
        };
        let mut recs = self.records(k);
        let regs = u16::try_from(regs.min(0xfe)).unwrap_or(0xfe);
        let mut changed = false;
        for r in recs.iter_mut() {
            if r.attr == Attr::MaxregCount
                && r.format != EIFMT_SVAL
                && r.short != 0xff
                && r.short < regs
            {
                r.short = regs;
                changed = true;
            }
        }
        if changed {
            self.set_records(k, &recs)?;
            self.finish()?;
        }
        Ok(())
    }

    /// Drop the SpillRefill annotations (`EIATTR_ANNOTATIONS` kind 1) of `kernel`'s section
    /// that name one of `offsets`: the instructions there no longer touch local memory.
    pub(crate) fn drop_spill_annotations(
        &mut self,
        kernel: &str,
        offsets: &[u64],
    ) -> Result<(), CubinError> {
        let sym = self.function_or_err(kernel)?;
        let text = self.symbols[sym].st_shndx as usize;
        let Some(k) = self.function_info_section(text) else {
            return Ok(());
        };
        let mut recs = self.records(k);
        for r in recs.iter_mut() {
            if r.attr != Attr::Annotations || r.format != EIFMT_SVAL {
                continue;
            }
            let words: Vec<u32> = r.words().collect();
            let kept: Vec<u32> = words
                .chunks(2)
                .filter(|p| !(p.len() == 2 && p[0] == 1 && offsets.contains(&u64::from(p[1]))))
                .flatten()
                .copied()
                .collect();
            if kept.len() != words.len() {
                r.data = kept.iter().flat_map(|w| w.to_le_bytes()).collect();
            }
        }
        recs.retain(|r| !(r.attr == Attr::Annotations && r.data.is_empty()));
        self.set_records(k, &recs)?;
        self.finish()
    }

    /// Bound `kernel`'s launches to `threads` threads per block: `EIATTR_MAX_THREADS`
    /// `{threads, 1, 1}` in `.nv.info.<k>`, the form ptxas emits for `__launch_bounds__(N)`
    /// (an SVAL of three `u32`, after the other records), replacing any the kernel has. The
    /// driver refuses a launch of more threads (their product) than that.
    pub(crate) fn set_max_threads(&mut self, kernel: &str, threads: u32) -> Result<(), CubinError> {
        let sym = self.function_or_err(kernel)?;
        let text = self.symbols[sym].st_shndx as usize;
        let k = self
            .function_info_section(text)
            .ok_or_else(|| CubinError::Function {
                name: kernel.to_string(),
                what: "has no .nv.info section for its launch bound".to_string(),
            })?;
        let mut recs = self.records(k);
        recs.retain(|r| r.attr != Attr::MaxThreads);
        let data = [threads, 1, 1]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        recs.push(Record {
            format: EIFMT_SVAL,
            attr: Attr::MaxThreads,
            short: 12,
            data,
        });
        self.set_records(k, &recs)?;
        self.finish()
    }

    /// Set the static shared memory of `kernel` (the `sh_size` of `.nv.shared.<k>`, which on
    /// sm_90+ includes the 1 KiB reserved area). Creates the section (and its section symbol,
    /// and the module's first shared memory segment) as ptxas would when the kernel has none,
    /// or refuses.
    pub fn set_shared_size(&mut self, kernel: &str, bytes: u64) -> Result<(), CubinError> {
        let sym = self.function_or_err(kernel)?;
        if !self.owns_section(sym) {
            return Err(CubinError::Function {
                name: kernel.to_string(),
                what: "does not own its text section".to_string(),
            });
        }
        let text = self.symbols[sym].st_shndx as usize;
        match self.shared_section(text) {
            Some(i) => self.elf.sections[i].sh_size = bytes,
            None => self.create_shared_section(text, bytes)?,
        }
        self.finish()
    }

    /// Give the kernel whose code is section `text` a `.nv.shared.<k>` of `bytes`, with its
    /// section symbol, laid out as ptxas lays out a kernel's static shared memory
    /// (`shared_splice::add_section`): among the NOBITS sections in its code's order, the
    /// writable segment grown over it or, for a module's first shared memory, added. A
    /// layout it cannot reproduce is refused (`CubinError::SharedLayout`), `self` unchanged.
    fn create_shared_section(&mut self, text: usize, bytes: u64) -> Result<(), CubinError> {
        let tname = self.elf.sections[text].name.clone();
        let base = tname.strip_prefix(".text.").unwrap_or(&tname).to_string();
        let name = format!(".nv.shared.{base}");
        // The type of the module's other shared sections; ptxas gives a relocatable cubin's
        // a CUDA type of its own.
        let sh_type = self
            .elf
            .sections
            .iter()
            .find(|s| s.name.starts_with(".nv.shared.") && s.name != ".nv.shared.reserved.0")
            .map(|s| s.sh_type)
            .unwrap_or(if self.is_relocatable() {
                SHT_CUDA_SHARED
            } else {
                SHT_NOBITS
            });
        let section = Section {
            name: name.clone(),
            sh_name: 0,
            sh_type,
            sh_flags: SHF_WRITE | SHF_ALLOC | SHF_INFO_LINK,
            sh_addr: 0,
            sh_offset: 0,
            sh_size: bytes,
            sh_link: 0,
            sh_info: text as u32,
            sh_addralign: 16,
            sh_entsize: 0,
            data: Vec::new(),
        };
        let symbol = Symbol {
            name,
            st_name: 0,
            st_info: (STB_LOCAL << 4) | STT_SECTION,
            st_other: 0,
            st_shndx: 0,
            st_value: 0,
            st_size: 0,
        };
        // On a copy: a refusal half way leaves `self` as it was.
        let mut out = self.clone();
        super::shared_splice::add_section(&mut out, text, section, &symbol, true).map_err(
            |why| match why {
                Refusal::Cubin(e) => e,
                why => CubinError::SharedLayout {
                    name: base,
                    why: why.to_string(),
                },
            },
        )?;
        *self = out;
        Ok(())
    }

    /// Add a LOCAL symbol. ELF wants locals first (`.symtab` `sh_info` = first global), so
    /// it goes at that index and every later symbol is renumbered (see
    /// [`Cubin::renumber_symbols`]); at the end when there are no globals.
    pub(crate) fn insert_local_symbol(&mut self, symbol: Symbol) -> Result<u32, CubinError> {
        let first_global =
            (self.elf.sections[self.symtab].sh_info as usize).min(self.symbols.len());
        if first_global >= self.symbols.len() {
            self.symbols.push(symbol);
            let n = self.symbols.len() as u32;
            self.elf.sections[self.symtab].sh_info = n;
            self.store_symbols();
            return Ok(n - 1);
        }
        let at = first_global as u32;
        self.make_room_for_symbol(at)?;
        self.symbols.insert(first_global, symbol);
        self.elf.sections[self.symtab].sh_info = at + 1;
        self.store_symbols();
        Ok(at)
    }

    /// Every symbol reference at or past index `at` moved up one, for a symbol the caller
    /// inserts there. An index past the table (a damaged file) stays past it, never wrapping.
    pub(crate) fn make_room_for_symbol(&mut self, at: u32) -> Result<(), CubinError> {
        self.renumber_symbols(&|old| {
            if old >= at {
                old.saturating_add(1)
            } else {
                old
            }
        })
    }

    /// The one place that renumbers symbol references: `.nv.info` symbol fields
    /// (REGCOUNT, FRAME_SIZE, MIN/MAX_STACK_SIZE, PARAM_CBANK, EXTERNS), `.nv.callgraph`,
    /// relocation `r_info`s, and `.text` `sh_info[23:0]`. The symbol list itself is not
    /// touched (the caller inserts). Refuses files with sections that hold symbol indices in
    /// layouts it does not know (`.nv.prototype`).
    pub(crate) fn renumber_symbols(&mut self, f: &dyn Fn(u32) -> u32) -> Result<(), CubinError> {
        let symtab = self.symtab;
        for (i, s) in self.elf.sections.iter().enumerate() {
            if s.sh_type == 0x7000_0002 && s.sh_link as usize == symtab {
                return Err(CubinError::section(
                    i,
                    &s.name,
                    "holds symbol indices in an unknown layout; cannot renumber symbols",
                ));
            }
        }
        for i in 0..self.elf.sections.len() {
            let s = &self.elf.sections[i];
            if s.sh_link as usize != symtab || i == 0 {
                continue;
            }
            let (t, name) = (s.sh_type, s.name.clone());
            if t == super::elf::SHT_CUDA_INFO {
                let mut recs = parse_records(&s.data).map_err(|e| CubinError::Record {
                    index: i,
                    name: name.clone(),
                    offset: e.offset,
                    what: e.what,
                })?;
                for r in recs.iter_mut().filter(|r| r.format == EIFMT_SVAL) {
                    if sym_first_word(r.attr) {
                        if let Some(v) = r.word(0) {
                            r.set_word(0, f(v));
                        }
                    } else if r.attr == Attr::Externs {
                        for w in 0..r.data.len() / 4 {
                            if let Some(v) = r.word(w) {
                                r.set_word(w, f(v));
                            }
                        }
                    }
                }
                self.set_records(i, &recs)?;
            } else if t == super::elf::SHT_CUDA_CALLGRAPH {
                // Symbols only: the prototypes of its second and third lists stay (a section
                // in a layout not known keeps the old rule, every positive word).
                if let Ok(mut g) = super::callgraph::CallGraph::parse(&s.data)
                    && g.encode() == s.data
                {
                    g.map_symbols(&mut |v| if v > 0 { f(v as u32) as i32 } else { v });
                    self.elf.sections[i].data = g.encode();
                    continue;
                }
                let data = &mut self.elf.sections[i].data;
                for w in 0..data.len() / 4 {
                    if let Some(v) = rd_u32(data, w * 4)
                        && (v as i32) > 0
                    {
                        wr_u32(data, w * 4, f(v));
                    }
                }
            } else if t == SHT_REL || t == SHT_RELA {
                let mut rel = parse_relocs(&s.data, t == SHT_RELA)
                    .ok_or_else(|| CubinError::section(i, &name, "partial relocation entry"))?;
                for r in rel.iter_mut() {
                    r.sym = f(r.sym);
                }
                self.elf.sections[i].data = encode_relocs(&rel);
            } else if s.sh_flags & 0x4 != 0 {
                let info = s.sh_info;
                self.elf.sections[i].sh_info =
                    (info & 0xff00_0000) | (f(info & 0x00ff_ffff) & 0x00ff_ffff);
            }
        }
        Ok(())
    }

    /// Set a symbol's value and size.
    pub fn set_symbol_range(&mut self, sym: &str, value: u64, size: u64) -> Result<(), CubinError> {
        let i = self
            .symbols
            .iter()
            .position(|s| s.name == sym)
            .ok_or_else(|| CubinError::NoFunction(sym.to_string()))?;
        self.symbols[i].st_value = value;
        self.symbols[i].st_size = size;
        self.store_symbols();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(attr: u8, words: &[u32]) -> Record {
        Record {
            format: EIFMT_SVAL,
            attr: Attr::from_code(attr),
            short: (words.len() * 4) as u16,
            data: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }

    #[test]
    fn remap_offsets_knows_every_layout() {
        let m = OffsetMap::shift_from(0x20, 0x80);
        let mut recs = vec![
            rec(0x1c, &[0x10, 0x100]),                              // EXIT offsets
            rec(0x34, &[0x30, 0, 2, 0x10, 0x40, 0x50, 0, 1, 0x60]), // branch targets
            rec(0x39, &[0x40, 0xff, 0, 7]),                         // mbarrier
            rec(0x55, &[1, 0x20, 1, 0x10]),                         // annotations
            rec(0x2f, &[0x30, 24]),                                 // not an offset
        ];
        remap_offsets(&mut recs, &m, "k").unwrap();
        let w = |r: &Record| r.words().collect::<Vec<_>>();
        assert_eq!(w(&recs[0]), [0x10, 0x180]);
        assert_eq!(w(&recs[1]), [0xb0, 0, 2, 0x10, 0xc0, 0xd0, 0, 1, 0xe0]);
        assert_eq!(w(&recs[2]), [0xc0, 0xff, 0, 7]);
        assert_eq!(w(&recs[3]), [1, 0xa0, 1, 0x10]);
        assert_eq!(w(&recs[4]), [0x30, 24]);
    }

    #[test]
    fn unknown_offset_layouts_and_bad_values_are_refused() {
        let m = OffsetMap::shift_from(0, 16);
        for code in [0x2e, 0x40, 0x4b, 0x4f, 0x6a] {
            let err = remap_offsets(&mut [rec(code, &[0x10])], &m, "k").unwrap_err();
            assert!(
                matches!(err, CubinError::UnknownOffsetLayout { .. }),
                "{err}"
            );
            assert!(err.to_string().contains("refusing"));
        }
        // A branch-target record whose count runs past the end.
        let err = remap_offsets(&mut [rec(0x34, &[0x10, 0, 9, 0x20])], &m, "k").unwrap_err();
        assert!(matches!(err, CubinError::Range(_)));
        // An offset pushed past u32.
        let big = OffsetMap::shift_from(0, u32::MAX as i64);
        assert!(remap_offsets(&mut [rec(0x1c, &[0x10])], &big, "k").is_err());
    }

    #[test]
    fn nop_is_the_padding_ptxas_uses() {
        assert_eq!(&NOP[..8], &0x7918u64.to_le_bytes());
        assert_eq!(&NOP[8..], &0x000f_c000_0000_0000u64.to_le_bytes());
    }
}

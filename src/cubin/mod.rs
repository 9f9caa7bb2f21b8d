//! The CUDA device ELF (cubin): sections, symbols, relocations, `.nv.info` attributes,
//! shared-memory sections and program headers; read, edit, write.
//!
//! * [`elf`]: the raw ELF model; every byte is kept, so an unedited cubin is written back
//!   byte-identical; relayout after size changes.
//! * [`nvinfo`] / [`eiattr`]: `.nv.info` records and attribute codes.
//! * [`symbols`]: symbols and relocations.
//! * [`query`]: [`FunctionInfo`] (registers, shared, stack, spills, launch bounds, callees).
//! * [`edit`]: register count, shared size, text replacement with an [`OffsetMap`]
//!   ([`offset_map`]).
//! * [`splice`] / [`entry`]: a kernel's code from another ptxas run of the module, in place of
//!   its own / added under a new name; `frame_splice`: the splice's `.debug_frame`, re-laid
//!   out around the donor's frame records.
//! * [`refusal`]: why a splice or an entry copy was refused, one variant per reason.
//! * [`debug_frame`]: the 64-bit DWARF CFI FDEs of `.debug_frame`.
//!
//! # Facts the code relies on (CUDA 13.5, checked on the fixture matrix)
//!
//! * Layout: ELF header, sections in index order, section headers, program headers last.
//!   The header tables sit at 2- or 4-byte-aligned offsets; NOBITS sections share the offset
//!   of what follows. sm_100+ cubins have sections that alias others' bytes
//!   (`.nv.merc.nv.constant.pic` = `.nv.constant4`, `.nv.merc.nv.global.init` =
//!   `.nv.global.init`). ET_REL cubins use CUDA section types without file bytes: 0x70000007
//!   (`.nv.global`, overlapping `.nv.constant0.*`), 0x7000000a (`.nv.shared.*`); sm_100+ has
//!   0x70000015 (reserved shared). [`elf::Elf::relayout`] reproduces every toolkit layout
//!   byte for byte (tested), including `p_memsz` of the writable LOAD segment: its file size
//!   plus every allocated NOBITS section laid out in index order with its alignment.
//! * Symbols: sm_75-89 keep locals first (`.symtab` `sh_info` = first global); sm_90+ ET_EXEC
//!   interleave globals and locals and set `sh_info` to the symbol count. A new local goes
//!   before the first global in the first case (renumbering every reference through
//!   `renumber_symbols`) and at the end in the second; a kernel's new shared section's
//!   symbol goes right after its code section's, where ptxas puts it (`shared_splice`).
//! * Registers: kernels' `EIATTR_REGCOUNT` is what `cuobjdump -res-usage` prints. For device
//!   functions in their own section it prints the `.text` `sh_info[31:24]` (0 on sm_90+, even
//!   where `.nv.info` has a REGCOUNT for them, e.g. 38 for `__internal_trig_reduction_slowpathd`
//!   under `-G`). Under `-G` on sm_75 a kernel's REGCOUNT (32) and `sh_info[31:24]` (24)
//!   differ; res-usage follows REGCOUNT.
//! * `-G` cubins on sm_90+ relocate call return addresses (`R_CUDA_ABS32_LO_32/HI_32` against
//!   the function, RELA addend = return offset); text replacement moves those addends.
//! * One entry's parts (ET_EXEC, sm_75-90): `.text.K` (`sh_info` = its symbol and registers),
//!   `.nv.info.K`, `.rel(a).text.K`, `.nv.constant0.K`, `.nv.shared.K` when it has static
//!   shared memory (the `SHF_INFO_LINK` ones name `.text.K` in `sh_info`); section symbols for
//!   the code, bank and shared memory; its records in the global `.nv.info` and
//!   `.nv.callgraph`; a CIE and FDE in `.debug_frame`. One writable LOAD segment covers all
//!   shared memory (`p_memsz` only), one the code, one the parameter banks, so an entry added
//!   after the last section of each kind needs no new segment ([`entry`]). Before sm_90 a
//!   module with no shared memory or `__device__` data has no writable segment: a kernel's
//!   first `.nv.shared.K` brings one (`shared_segment`). The NOBITS sections are one run
//!   after the code: the kernels' own in code order, the module's (`.nv.global`,
//!   `.nv.shared.reserved.0`) right after the first kernel's (`shared_splice`).
//! * Bank 4 of an `--entry` run has a slot for every string of the module, not only the
//!   entry's, laid out in another order than the whole module's when other kernels call
//!   `printf` or `assert`; with only globals the layouts agree.
//! * Not updated by text replacement: the sm_100+ "merc" copy (`.nv.capmerc.text.*`,
//!   `.nv.merc.*`), DWARF line programs (`.debug_line`, `.nv_debug_line_sass`) and
//!   `.debug_info` ranges beyond relocated addresses. Branch immediates inside the code are
//!   the SASS layer's job. The splice and the entry copy refuse a module with any of these
//!   ([`Cubin::debug_info_section`]): a line program describes the code ptxas compiled with
//!   it, and a kernel taken from another run would keep the old code's lines (issue 48).

pub mod callgraph;
pub mod debug_frame;
pub mod edit;
pub mod eiattr;
pub mod elf;
pub mod entry;
mod entry_locals;
pub(crate) mod error;
mod frame_splice;
pub(crate) mod nvinfo;
pub(crate) mod offset_map;
pub(crate) mod query;
pub mod refusal;
mod shared_segment;
mod shared_splice;
pub mod splice;
pub(crate) mod symbols;

pub use eiattr::Attr;
pub(crate) use error::CubinError;
pub use nvinfo::{Record, RecordError, encode_records, parse_records};
pub use offset_map::OffsetMap;
pub(crate) use query::FunctionInfo;

use elf::{Elf, SHT_CUDA_INFO, SHT_SYMTAB};
use symbols::Symbol;

/// What kind of program a cubin holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EntryKind {
    /// `ET_EXEC`: a whole program (what fatbins carry to the driver).
    Executable,
    /// `ET_REL`: relocatable device code (`-rdc`), input to nvlink.
    Relocatable,
    /// Any other `e_type`.
    Other(u16),
}

/// A parsed cubin: the ELF model plus its symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cubin {
    pub(crate) elf: Elf,
    /// Index of `.symtab` (0 when none).
    pub(crate) symtab: usize,
    pub(crate) symbols: Vec<Symbol>,
}

impl Cubin {
    /// Parse a cubin. Checks the ELF structure, the symbol table and every `.nv.info` record
    /// list; never panics.
    pub fn parse(bytes: &[u8]) -> Result<Cubin, CubinError> {
        let elf = Elf::parse(bytes)?;
        if elf.header.e_machine != 190 {
            return Err(CubinError::Header(format!(
                "e_machine {} is not EM_CUDA (190)",
                elf.header.e_machine
            )));
        }
        let symtab = elf
            .sections
            .iter()
            .position(|s| s.sh_type == SHT_SYMTAB)
            .unwrap_or(0);
        let mut symbols = Vec::new();
        if symtab != 0 {
            let st = &elf.sections[symtab];
            let strtab = elf
                .sections
                .get(st.sh_link as usize)
                .map(|s| s.data.as_slice())
                .unwrap_or(&[]);
            symbols = symbols::parse_symbols(&st.data, strtab).ok_or_else(|| {
                CubinError::section(symtab, &st.name, "size is not a multiple of 24")
            })?;
        }
        for (i, s) in elf.sections.iter().enumerate() {
            if s.sh_type == SHT_CUDA_INFO {
                parse_records(&s.data).map_err(|e| CubinError::Record {
                    index: i,
                    name: s.name.clone(),
                    offset: e.offset,
                    what: e.what,
                })?;
            }
        }
        Ok(Cubin {
            elf,
            symtab,
            symbols,
        })
    }

    /// Serialise. An unedited cubin comes back byte-identical.
    pub fn write(&self) -> Result<Vec<u8>, CubinError> {
        self.elf.write()
    }

    /// The SM number (`e_flags` bits 8-15): 90 for sm_90.
    pub fn arch(&self) -> u32 {
        (self.elf.header.e_flags >> 8) & 0xff
    }

    /// `ET_REL` (`-rdc` device code).
    pub fn is_relocatable(&self) -> bool {
        self.elf.header.e_type == elf::ET_REL
    }

    /// The first section of `-G` or `-lineinfo` debug information that describes the code by
    /// its addresses (`.debug_line`, `.nv_debug_line_sass`, `.debug_info`, ...), if any:
    /// nothing that edits or moves code here updates those, so where one exists only ptxas
    /// may make the code (`.debug_frame` is not one: the splice and the copy carry its FDEs).
    pub fn debug_info_section(&self) -> Option<&str> {
        self.elf.sections.iter().map(|s| s.name.as_str()).find(|n| {
            (n.starts_with(".debug_") && *n != ".debug_frame") || n.starts_with(".nv_debug")
        })
    }

    /// The ELF model (read-only).
    pub fn elf(&self) -> &Elf {
        &self.elf
    }

    /// The symbol table, in index order.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// Records of section `index` (empty when it is not an info section or does not parse).
    pub fn records(&self, index: usize) -> Vec<Record> {
        self.elf
            .sections
            .get(index)
            .and_then(|s| parse_records(&s.data).ok())
            .unwrap_or_default()
    }

    /// Index of the global `.nv.info` (an info section not tied to a text section).
    pub(crate) fn global_info(&self) -> Option<usize> {
        self.elf
            .sections
            .iter()
            .position(|s| s.sh_type == SHT_CUDA_INFO && s.name == ".nv.info")
    }

    /// Index of the `.nv.info.<k>` of text section `text`.
    pub(crate) fn function_info_section(&self, text: usize) -> Option<usize> {
        self.elf.sections.iter().position(|s| {
            s.sh_type == SHT_CUDA_INFO && s.name != ".nv.info" && s.sh_info as usize == text
        })
    }

    /// Insert section `s` at index `at` ([`elf::Elf::insert_section`]), and move the symbols
    /// of the sections after it along.
    pub(crate) fn insert_section(&mut self, at: usize, s: elf::Section) -> Result<(), CubinError> {
        self.elf.insert_section(at, s)?;
        for sym in &mut self.symbols {
            let i = sym.st_shndx as usize;
            if i >= at && i < 0xff00 {
                sym.st_shndx += 1;
            }
        }
        if self.symtab >= at {
            self.symtab += 1;
        }
        self.store_symbols();
        Ok(())
    }

    /// Write the symbol list back into `.symtab`.
    pub(crate) fn store_symbols(&mut self) {
        if self.symtab != 0 {
            self.elf.sections[self.symtab].data = symbols::encode_symbols(&self.symbols);
        }
    }
}

impl Cubin {
    /// Recompute every offset and the program headers as after an edit (a no-op on the bytes
    /// of an unedited toolkit cubin; used to test the layout).
    pub fn force_relayout(&mut self) -> Result<(), CubinError> {
        self.elf.relayout()
    }
}

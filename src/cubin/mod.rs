//! The CUDA device ELF (cubin): sections, symbols, relocations, `.nv.info` attributes,
//! shared-memory sections and program headers; read, edit, write.
//!
//! * [`elf`]: the raw ELF model; every byte is kept, so an unedited cubin is written back
//!   byte-identical; relayout after size changes.
//! * [`nvinfo`] / [`eiattr`]: `.nv.info` records and attribute codes.
//! * [`symbols`]: symbols and relocations.
//! * [`query`]: [`FunctionInfo`] (registers, shared, stack, spills, launch bounds, callees).
//! * [`edit`]: register count, shared size, text replacement with an [`OffsetMap`].
//! * [`debug_frame`]: the 64-bit DWARF CFI FDEs of `.debug_frame`.

pub mod debug_frame;
pub mod edit;
pub mod eiattr;
pub mod elf;
pub mod error;
pub mod nvinfo;
pub mod query;
pub mod symbols;

pub use edit::OffsetMap;
pub use eiattr::Attr;
pub use error::CubinError;
pub use nvinfo::{Record, RecordError, encode_records, parse_records};
pub use query::FunctionInfo;

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

    /// `e_flags`, verbatim.
    pub fn e_flags(&self) -> u32 {
        self.elf.header.e_flags
    }

    /// `ET_REL` (`-rdc` device code).
    pub fn is_relocatable(&self) -> bool {
        self.elf.header.e_type == elf::ET_REL
    }

    pub fn entry_kind(&self) -> EntryKind {
        match self.elf.header.e_type {
            1 => EntryKind::Relocatable,
            2 => EntryKind::Executable,
            t => EntryKind::Other(t),
        }
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

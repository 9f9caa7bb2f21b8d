//! `.debug_frame`, read on its own (issue 47): each function's call frame information
//! (its FDEs, each with its CIE) as a debugger unwinding through it reads it, compared with
//! the same function's in the cubin its code came from.
//!
//! The splice re-lays `.debug_frame` out where a kernel's records change length, and
//! cuobjdump prints no contents of `.debug_*`, so this reading shares nothing with the
//! assembler's: the ELF through the `object` crate's reader (section bytes, symbols, the
//! relocations into the section), the DWARF encoding through `gimli`'s (LEB128 numbers,
//! the `DW_CFA_*` names). gimli's own CFI parser cannot be used: it holds a register number
//! in 16 bits, and every CIE ptxas writes names return-address register 0xffffffff (and its
//! programs registers such as 0x5000_0081), which that parser refuses as unsupported.
//!
//! An FDE belongs to the function whose symbol its initial location is relocated against
//! (ptxas writes one for each function of a text section: the kernel's symbol plus the
//! sub-function's offset). Every relocated address (a location, a `DW_CFA_set_loc`, an
//! address inside an expression) is read as that symbol plus the addend, the function's own
//! symbol written `self`, so records compare across cubins whatever their symbol numbers and
//! wherever they sit in the section. The bytes under a RELA relocation are not read (ptxas
//! leaves other values there); under a REL one they are the addend.

use std::collections::BTreeMap;

use gimli::constants::DwCfa;
use gimli::{EndianSlice, LittleEndian, Reader as _};
use object::LittleEndian as LE;
use object::elf::{FileHeader64, SHT_REL, SHT_RELA, SHT_SYMTAB};
use object::read::elf::{FileHeader as _, SectionHeader as _, Sym as _};

/// Why a cubin's `.debug_frame` cannot be read, or how a function's call frame information
/// differs from its origin's. Each is one line, as the assembly check's warnings show it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("ELF: {0}")]
    Elf(object::Error),
    #[error("symbols: {0}")]
    Symbols(object::Error),
    /// A symbol (or its name) a relocation or the symbol table names.
    #[error("{0}")]
    Symbol(object::Error),
    #[error(".debug_frame: {0}")]
    Section(object::Error),
    #[error("relocations of .debug_frame: {0}")]
    Relocations(object::Error),
    #[error("a relocation at {offset:#x}, past .debug_frame")]
    RelocationPastSection { offset: u64 },
    /// A relocation of another type than `R_CUDA_64` outside an FDE's range field.
    #[error("relocation type {kind} at {at:#x} of .debug_frame")]
    RelocationType { kind: u32, at: u64 },
    #[error("a 32-bit record at {at:#x}")]
    Record32 { at: usize },
    #[error("the record at {at:#x} runs past the section")]
    RecordPastSection { at: usize },
    #[error("the CIE pointer {at:#x} names an FDE")]
    CiePointsToFde { at: usize },
    #[error("the instruction at {at:#x} runs past its record")]
    InstructionPastRecord { at: usize },
    #[error("offset {at:#x} past the section")]
    OffsetPastSection { at: usize },
    /// The record at `at` ends inside a field, or holds what DWARF does not define.
    #[error("the record at {at:#x}: {error}")]
    Record { at: usize, error: gimli::Error },
    /// FDE `index` of the function differs (each side as printed for debugging).
    #[error("FDE {index} differs: {shipped} where the code was compiled has {origin}")]
    FdeDiffers {
        index: usize,
        shipped: String,
        origin: String,
    },
    #[error("no FDE covers {end:#x} (the next starts at {next:#x})")]
    Uncovered { end: u64, next: u64 },
    #[error("its FDEs end at {end:#x}, the function at {size:#x}")]
    EndsBeforeFunction { end: u64, size: u64 },
    /// The origin's `.debug_frame` could not be read.
    #[error("where the code was compiled: {0}")]
    Origin(Box<FrameError>),
}

/// ptxas's relocation type for a 64-bit address (`R_CUDA_64`), the one it writes into
/// `.debug_frame`'s address fields. A relocatable (`-rdc`) cubin also relocates each FDE's
/// range against its function (type 73 on sm_90, the field holding the size as well): any
/// other type is kept as read and compared, and allowed only on a range field.
const R_CUDA_64: u32 = 2;

/// The `.debug_frame` of one cubin, by function.
#[derive(Debug, Default)]
pub(super) struct Frames {
    /// Each function's FDEs in section order (by the symbol their location is relocated
    /// against; unrelocated ones under "").
    by_function: BTreeMap<String, Vec<Fde>>,
    /// Function symbols' sizes.
    sizes: BTreeMap<String, u64>,
    /// Whether the cubin has a `.debug_frame`.
    present: bool,
}

/// One FDE as read, its CIE included; addresses rendered relative to the owner's symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fde {
    /// Offset of the code it describes from its function's symbol.
    start: u64,
    range: u64,
    /// The range field's relocation, other than `R_CUDA_64` (`-rdc`): its type and target,
    /// rendered relative to the owner.
    range_relocation: Option<String>,
    cie: String,
    program: Vec<String>,
}

/// A relocation into `.debug_frame`: the symbol's name and the addend.
#[derive(Debug, Clone)]
struct Target {
    symbol: String,
    addend: u64,
}

/// An address field as read: relocated, or a plain value.
#[derive(Debug, Clone)]
enum Address {
    Relocated(Target),
    Plain(u64),
}

impl Address {
    /// As written in a rendered record, `self` for the owner's own symbol.
    fn render(&self, owner: &str) -> String {
        match self {
            Address::Relocated(t) if t.symbol == owner => format!("self+{:#x}", t.addend),
            Address::Relocated(t) => format!("{}+{:#x}", t.symbol, t.addend),
            Address::Plain(v) => format!("{v:#x}"),
        }
    }
}

type R<'a> = EndianSlice<'a, LittleEndian>;

/// `.debug_frame` with what is needed to read it: its bytes and the relocations into it, by
/// offset.
struct Section<'a> {
    data: &'a [u8],
    relocations: BTreeMap<u64, Target>,
    /// Relocations of another type than `R_CUDA_64`, by offset: the type and target.
    others: BTreeMap<u64, (u32, Target)>,
}

impl Frames {
    /// Read `bytes`' `.debug_frame` (an empty reading without one).
    pub(super) fn read(bytes: &[u8]) -> Result<Frames, FrameError> {
        let (section, sizes) = elf(bytes)?;
        let Some(section) = section else {
            return Ok(Frames {
                sizes,
                ..Frames::default()
            });
        };
        let mut by_function: BTreeMap<String, Vec<Fde>> = BTreeMap::new();
        for (owner, fde) in records(&section)? {
            by_function.entry(owner).or_default().push(fde);
        }
        Ok(Frames {
            by_function,
            sizes,
            present: true,
        })
    }

    /// Whether the cubin has a `.debug_frame`.
    pub(super) fn present(&self) -> bool {
        self.present
    }

    /// The functions that own FDEs.
    #[cfg(fuzzing)]
    pub(super) fn functions(&self) -> impl Iterator<Item = &str> {
        self.by_function.keys().map(String::as_str)
    }
}

/// `.debug_frame` of the ELF `bytes` with its relocations (`None` without one), and every
/// function symbol's size.
fn elf(bytes: &[u8]) -> Result<(Option<Section<'_>>, BTreeMap<String, u64>), FrameError> {
    let e = LE;
    let header = FileHeader64::<LE>::parse(bytes).map_err(FrameError::Elf)?;
    let sections = header.sections(e, bytes).map_err(FrameError::Elf)?;
    let symbols = sections
        .symbols(e, bytes, SHT_SYMTAB)
        .map_err(FrameError::Symbols)?;
    let name = |i: usize| -> Result<String, FrameError> {
        let s = symbols
            .symbol(object::SymbolIndex(i))
            .map_err(FrameError::Symbol)?;
        let n = s.name(e, symbols.strings()).map_err(FrameError::Symbol)?;
        Ok(String::from_utf8_lossy(n).into_owned())
    };
    let mut sizes = BTreeMap::new();
    for (i, s) in symbols.iter().enumerate() {
        if s.st_type() == object::elf::STT_FUNC {
            sizes.insert(name(i)?, s.st_size(e));
        }
    }
    let Some((index, frame)) = sections.iter().enumerate().find(|(_, s)| {
        sections
            .section_name(e, s)
            .is_ok_and(|n| n == b".debug_frame")
    }) else {
        return Ok((None, sizes));
    };
    let data = frame.data(e, bytes).map_err(FrameError::Section)?;
    let mut relocations = BTreeMap::new();
    let mut others = BTreeMap::new();
    for s in sections.iter() {
        if s.sh_info(e) as usize != index || !matches!(s.sh_type(e), SHT_REL | SHT_RELA) {
            continue;
        }
        let entries: Vec<(u64, u32, usize, Option<i64>)> = match s.sh_type(e) {
            SHT_RELA => s
                .data_as_array::<object::elf::Rela64<LE>, _>(e, bytes)
                .map_err(FrameError::Relocations)?
                .iter()
                .map(|r| {
                    let (sym, ty) = (r.r_sym(e, false), r.r_type(e, false).0);
                    (r.r_offset.get(e), ty, sym as usize, Some(r.r_addend.get(e)))
                })
                .collect(),
            _ => s
                .data_as_array::<object::elf::Rel64<LE>, _>(e, bytes)
                .map_err(FrameError::Relocations)?
                .iter()
                .map(|r| {
                    let (sym, ty) = (r.r_sym(e), r.r_type(e).0);
                    (r.r_offset.get(e), ty, sym as usize, None)
                })
                .collect(),
        };
        for (offset, ty, sym, addend) in entries {
            let field = usize::try_from(offset)
                .ok()
                .and_then(|at| data.get(at..at.checked_add(8)?));
            let Some(field) = field else {
                return Err(FrameError::RelocationPastSection { offset });
            };
            let addend = addend
                .unwrap_or_else(|| i64::from_le_bytes(field.try_into().expect("eight bytes")));
            let target = Target {
                symbol: name(sym)?,
                addend: addend as u64,
            };
            match ty {
                R_CUDA_64 => relocations.insert(offset, target),
                _ => others.insert(offset, (ty, target)).map(|(_, t)| t),
            };
        }
    }
    let section = Section {
        data,
        relocations,
        others,
    };
    Ok((Some(section), sizes))
}

/// Every FDE of `section` with its owner's name, in section order.
fn records(section: &Section<'_>) -> Result<Vec<(String, Fde)>, FrameError> {
    let mut out = Vec::new();
    let mut ranges = Vec::new();
    let mut at = 0usize;
    while at < section.data.len() {
        let (body, next) = record_at(section, at)?;
        let id = read_u64(section, body)?;
        if id != u64::MAX {
            out.push(fde(section, body, id as usize)?);
            ranges.push(body as u64 + 16);
        }
        at = next;
    }
    match section.others.iter().find(|(at, _)| !ranges.contains(at)) {
        Some((&at, &(kind, _))) => Err(FrameError::RelocationType { kind, at }),
        None => Ok(out),
    }
}

/// The record at `at`: where its body (after the length) starts and where the next record
/// starts. 64-bit DWARF only (`ff ff ff ff`, then a u64 length), as ptxas writes it.
fn record_at(section: &Section<'_>, at: usize) -> Result<(usize, usize), FrameError> {
    let mut r = reader(section, at)?;
    let escape = r.read_u32().map_err(|e| short(at, e))?;
    if escape != u32::MAX {
        return Err(FrameError::Record32 { at });
    }
    let length = r.read_u64().map_err(|e| short(at, e))? as usize;
    let end = (at + 12)
        .checked_add(length)
        .filter(|&e| e <= section.data.len());
    let end = end.ok_or(FrameError::RecordPastSection { at })?;
    Ok((at + 12, end))
}

/// The FDE whose body starts at `body`, pointing to the CIE at `cie`: its owner and reading.
fn fde(section: &Section<'_>, body: usize, cie: usize) -> Result<(String, Fde), FrameError> {
    let (_, end) = record_at(section, body - 12)?;
    let location = address(section, body + 8)?;
    let owner = match &location {
        Address::Relocated(t) => t.symbol.clone(),
        Address::Plain(_) => String::new(),
    };
    let start = match &location {
        Address::Relocated(t) => t.addend,
        Address::Plain(v) => *v,
    };
    let range = read_u64(section, body + 16)?;
    let range_relocation = section.others.get(&(body as u64 + 16)).map(|(ty, t)| {
        let target = Address::Relocated(t.clone()).render(&owner);
        format!("type {ty} {target}")
    });
    let cie = cie_at(section, cie, &owner)?;
    let program = program(section, body + 24..end, &owner)?;
    let fde = Fde {
        start,
        range,
        range_relocation,
        cie,
        program,
    };
    Ok((owner, fde))
}

/// The CIE at `at` rendered for `owner`: its version, augmentation, alignment factors,
/// return-address register and initial instructions.
fn cie_at(section: &Section<'_>, at: usize, owner: &str) -> Result<String, FrameError> {
    let (body, end) = record_at(section, at)?;
    if read_u64(section, body)? != u64::MAX {
        return Err(FrameError::CiePointsToFde { at });
    }
    let mut r = reader(section, body + 8)?;
    let fail = |e| short(at, e);
    let version = r.read_u8().map_err(fail)?;
    let augmentation = r.read_null_terminated_slice().map_err(fail)?;
    let code = r.read_uleb128().map_err(fail)?;
    let data = r.read_sleb128().map_err(fail)?;
    let ra = r.read_uleb128().map_err(fail)?;
    let instructions = section.data.len() - r.len();
    let program = program(section, instructions..end, owner)?;
    let augmentation = augmentation.to_string_lossy();
    Ok(format!(
        "CIE v{version} {augmentation:?} code×{code} data×{data} ra {ra:#x}: {}",
        program.join("; ")
    ))
}

/// The call frame instructions in `span`, one rendered string each.
fn program(
    section: &Section<'_>,
    span: std::ops::Range<usize>,
    owner: &str,
) -> Result<Vec<String>, FrameError> {
    let mut out = Vec::new();
    let mut at = span.start;
    while at < span.end {
        let (text, next) = instruction(section, at, span.end, owner)?;
        out.push(text);
        at = next;
    }
    Ok(out)
}

/// One call frame instruction at `at` (before `end`): its rendering and where the next
/// starts. The primary opcodes carry an operand in their low six bits.
fn instruction(
    section: &Section<'_>,
    at: usize,
    end: usize,
    owner: &str,
) -> Result<(String, usize), FrameError> {
    let mut r = reader(section, at)?;
    let fail = |e| short(at, e);
    let op = r.read_u8().map_err(fail)?;
    let low = u64::from(op & 0x3f);
    let mut operands: Vec<String> = Vec::new();
    let name = match op & 0xc0 {
        0x40 => {
            operands.push(format!("{low:#x}"));
            DwCfa(0x40)
        }
        0x80 => {
            operands.push(format!("{low:#x}"));
            operands.push(format!("{:#x}", r.read_uleb128().map_err(fail)?));
            DwCfa(0x80)
        }
        0xc0 => {
            operands.push(format!("{low:#x}"));
            DwCfa(0xc0)
        }
        _ => {
            let name = DwCfa(op);
            extended_operands(section, &mut r, name, owner, &mut operands).map_err(fail)?;
            name
        }
    };
    let next = section.data.len() - r.len();
    if next > end {
        return Err(FrameError::InstructionPastRecord { at });
    }
    let name = name
        .static_string()
        .map_or(format!("DW_CFA_{op:#x}"), str::to_string);
    Ok((format!("{name} {}", operands.join(" ")), next))
}

/// The operands of extended opcode `op` (read from `r`), rendered into `out`.
fn extended_operands(
    section: &Section<'_>,
    r: &mut R<'_>,
    op: DwCfa,
    owner: &str,
    out: &mut Vec<String>,
) -> gimli::Result<()> {
    use gimli::constants as c;
    let at = section.data.len() - r.len();
    let uleb = |r: &mut R<'_>| r.read_uleb128().map(|v| format!("{v:#x}"));
    let sleb = |r: &mut R<'_>| r.read_sleb128().map(|v| v.to_string());
    match op {
        c::DW_CFA_nop | c::DW_CFA_remember_state | c::DW_CFA_restore_state => {}
        c::DW_CFA_set_loc => {
            r.skip(8)?;
            let field = address(section, at);
            out.push(field.map_or_else(|e| e.to_string(), |a| a.render(owner)));
        }
        c::DW_CFA_advance_loc1 => out.push(r.read_u8()?.to_string()),
        c::DW_CFA_advance_loc2 => out.push(r.read_u16()?.to_string()),
        c::DW_CFA_advance_loc4 => out.push(r.read_u32()?.to_string()),
        c::DW_CFA_restore_extended
        | c::DW_CFA_undefined
        | c::DW_CFA_same_value
        | c::DW_CFA_def_cfa_register
        | c::DW_CFA_def_cfa_offset => out.push(uleb(r)?),
        c::DW_CFA_offset_extended
        | c::DW_CFA_register
        | c::DW_CFA_def_cfa
        | c::DW_CFA_val_offset => {
            out.push(uleb(r)?);
            out.push(uleb(r)?);
        }
        c::DW_CFA_offset_extended_sf | c::DW_CFA_def_cfa_sf | c::DW_CFA_val_offset_sf => {
            out.push(uleb(r)?);
            out.push(sleb(r)?);
        }
        c::DW_CFA_def_cfa_offset_sf => out.push(sleb(r)?),
        c::DW_CFA_def_cfa_expression => out.push(block(section, r, owner)?),
        c::DW_CFA_expression | c::DW_CFA_val_expression => {
            out.push(uleb(r)?);
            out.push(block(section, r, owner)?);
        }
        _ => return Err(gimli::Error::UnknownCallFrameInstruction(op)),
    }
    Ok(())
}

/// A ULEB128-sized block (a DWARF expression) rendered as its bytes, each relocated address
/// in it as its symbol and addend.
fn block(section: &Section<'_>, r: &mut R<'_>, owner: &str) -> gimli::Result<String> {
    let length = r.read_uleb128()? as usize;
    let start = section.data.len() - r.len();
    r.skip(length)?;
    let mut out = String::from("[");
    let mut i = start;
    while i < start + length {
        match section.relocations.get(&(i as u64)) {
            Some(t) => {
                out.push_str(&format!(
                    " <{}>",
                    Address::Relocated(t.clone()).render(owner)
                ));
                i += 8;
            }
            None => {
                out.push_str(&format!(" {:02x}", section.data[i]));
                i += 1;
            }
        }
    }
    out.push_str(" ]");
    Ok(out)
}

/// The 64-bit address field at `at`: its relocation, or its plain value.
fn address(section: &Section<'_>, at: usize) -> Result<Address, FrameError> {
    match section.relocations.get(&(at as u64)) {
        Some(t) => Ok(Address::Relocated(t.clone())),
        None => read_u64(section, at).map(Address::Plain),
    }
}

fn read_u64(section: &Section<'_>, at: usize) -> Result<u64, FrameError> {
    reader(section, at)?.read_u64().map_err(|e| short(at, e))
}

/// A reader of `section` from `at`.
fn reader<'a>(section: &Section<'a>, at: usize) -> Result<R<'a>, FrameError> {
    let rest = section
        .data
        .get(at..)
        .ok_or(FrameError::OffsetPastSection { at })?;
    Ok(EndianSlice::new(rest, LittleEndian))
}

fn short(at: usize, error: gimli::Error) -> FrameError {
    FrameError::Record { at, error }
}

/// Function `f` of `ours` against function `name` of `theirs` (where its code came from):
/// the same FDEs in the same order, each with the same CIE, offset, range and program; and,
/// in `ours`, the FDEs cover the function's symbol exactly, one after the other from its
/// start (each sub-function's range ends where the next begins), wherever the origin's do.
pub(super) fn compare(
    ours: &Frames,
    f: &str,
    theirs: &Frames,
    name: &str,
) -> Result<(), FrameError> {
    let empty = Vec::new();
    let a = ours.by_function.get(f).unwrap_or(&empty);
    let b = theirs.by_function.get(name).unwrap_or(&empty);
    for i in 0..a.len().max(b.len()) {
        if a.get(i) != b.get(i) {
            let show = |x: Option<&Fde>| x.map_or("no FDE".to_string(), |x| format!("{x:?}"));
            return Err(FrameError::FdeDiffers {
                index: i,
                shipped: show(a.get(i)),
                origin: show(b.get(i)),
            });
        }
    }
    // Where the origin's own FDEs leave part of its function uncovered (a SASS rewrite's
    // prologue, checked as a plain tune cubin's original under adapt), the same FDEs here
    // inherit that: only a gap the origin does not have is the assembly's.
    match covers(a, ours.sizes.get(f).copied()) {
        Err(why) if covers(b, theirs.sizes.get(name).copied()).is_ok() => Err(why),
        _ => Ok(()),
    }
}

/// `fdes` (section order) lay end to end from the function's start to its `size`.
fn covers(fdes: &[Fde], size: Option<u64>) -> Result<(), FrameError> {
    let (Some(size), false) = (size, fdes.is_empty()) else {
        return Ok(());
    };
    let mut spans: Vec<(u64, u64)> = fdes.iter().map(|f| (f.start, f.range)).collect();
    spans.sort_unstable();
    let mut end = 0;
    for (start, range) in spans {
        if start != end {
            return Err(FrameError::Uncovered { end, next: start });
        }
        end = start.saturating_add(range);
    }
    match end == size {
        true => Ok(()),
        false => Err(FrameError::EndsBeforeFunction { end, size }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object, Relocation, Symbol, SymbolSection};
    use object::{
        Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags,
        SymbolKind, SymbolScope,
    };

    /// An ELF with function `k` and a `.debug_frame` of 64 zero bytes, relocated
    /// (`R_CUDA_64`'s number) against `k` at `offset`.
    fn relocated_at(offset: u64) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text.k".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0; 16], 16);
        let k = obj.add_symbol(Symbol {
            name: b"k".to_vec(),
            value: 0,
            size: 16,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        let frame = obj.add_section(Vec::new(), b".debug_frame".to_vec(), SectionKind::Debug);
        obj.append_section_data(frame, &[0; 64], 8);
        let r_type = object::elf::RelocationType(R_CUDA_64);
        let flags = RelocationFlags::Elf { r_type };
        let relocation = Relocation {
            offset,
            symbol: k,
            addend: 0,
            flags,
        };
        obj.add_relocation(frame, relocation).unwrap();
        obj.write().unwrap()
    }

    /// A relocation's offset at the end of `u64` (found by the `audit` fuzz target: the end
    /// of its field overflowed) is past the section, as one just past it is.
    #[test]
    fn a_relocation_past_the_section_is_an_error() {
        for offset in [57, u64::MAX - 7, u64::MAX] {
            let e = Frames::read(&relocated_at(offset)).unwrap_err();
            assert_eq!(
                e,
                FrameError::RelocationPastSection { offset },
                "{offset:#x}"
            );
        }
        let inside = Frames::read(&relocated_at(56));
        assert!(
            !matches!(inside, Err(FrameError::RelocationPastSection { .. })),
            "{inside:?}"
        );
    }
}

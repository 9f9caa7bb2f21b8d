//! The one part the splice ([`super::splice`]) adds rather than replaces (issue 47): a
//! kernel's static shared memory `.nv.shared.<k>` where the donor has one and the module's
//! copy of the kernel has none. ptxas's shared-memory spilling (the `enable_smem_spilling`
//! candidate) gives the spilled registers such a section, so the held-out file's kernels
//! tuned that way were assembled by a whole-module ptxas run. A SASS rewrite that gives a
//! kernel its first shared memory (spill2smem, regdem: the cubin edit `set_shared_size`)
//! adds its section the same way, through [`add_section`].
//!
//! Added where a whole-module run at those budgets puts it (`tests/tuning/tune_entry.rs`
//! compares the bytes; `tests/assembly/rewrite_segments.rs` a rewrite's layout):
//! * the section among the NOBITS sections, which ptxas writes in one run after the code
//!   (and `.nv.global.init`): the kernels' own in their code's order, the module's
//!   (`.nv.shared.reserved.0`, `.nv.global`) right after the first code section's slot (read
//!   with `readelf -S` from ptxas 13.5 on sm_75, 80, 86 and 90, modules with and without
//!   `__shared__` and `__device__` data, first and later kernels spilled);
//! * its section symbol right after the kernel's code section symbol;
//! * each name at its place in `.shstrtab` and `.strtab`, which ptxas writes in section and
//!   symbol order, every later name's offset moved by it, unless it is there already (before
//!   sm_90 ptxas lists `.nv.shared.<k>` for every kernel whether or not the section exists);
//! * the writable segment over it: `shared_segment`.
//!
//! A cubin with the sm_100+ copy of the code (`.nv.merc.*`) is refused: that copy keeps
//! section indices of its own (`.nv.merc.symtab`), which a section inserted before them would
//! leave stale.

use super::Cubin;
use super::elf::{SHF_ALLOC, Section};
use super::refusal::Refusal;
use super::symbols::{STT_SECTION, Symbol};

/// The donor's `.nv.shared.<kernel>` (its index) when the module has no section of that name.
pub(super) fn missing_shared(out: &Cubin, donor: &Cubin, kernel: &str) -> Option<usize> {
    let name = format!(".nv.shared.{kernel}");
    let d = donor.elf.section_index_by_name(&name)?;
    let absent = out.elf.section_index_by_name(&name).is_none();
    (absent && donor.elf.sections[d].is_nobits()).then_some(d)
}

/// Add the donor's shared section `d` for the kernel whose code is section `tb` of `out`,
/// with its section symbol; the parts that name it (the kernel's records) come with the
/// rest of the splice.
pub(super) fn add_shared(
    out: &mut Cubin,
    tb: usize,
    donor: &Cubin,
    d: usize,
) -> Result<(), Refusal> {
    let symbol = donor
        .symbols
        .iter()
        .find(|s| s.kind() == STT_SECTION && s.st_shndx as usize == d)
        .ok_or(Refusal::SectionSymbolMissing)?;
    let named = symbol.st_name != 0;
    add_section(out, tb, donor.elf.sections[d].clone(), symbol, named).map(|_| ())
}

/// Add shared section `section` (its name, type, flags, size and alignment are kept) for the
/// kernel whose code is section `tb` of `out`, with section symbol `symbol` (its name in
/// `.strtab` where `named`), where ptxas puts them, the writable segment over it
/// (`shared_segment`). The index it got. Also what a SASS rewrite adds for a kernel with no
/// shared memory yet ([`super::edit`]), so its cubin is laid out as ptxas's would be.
pub(super) fn add_section(
    out: &mut Cubin,
    tb: usize,
    section: Section,
    symbol: &Symbol,
    named: bool,
) -> Result<usize, Refusal> {
    if let Some(s) = out
        .elf
        .sections
        .iter()
        .find(|s| s.name.starts_with(".nv.merc.") || s.name.starts_with(".nv.capmerc."))
    {
        return Err(Refusal::Merc {
            section: s.name.clone(),
        });
    }
    let at = place(out, tb)?;
    let table = out.elf.header.e_shstrndx as usize;
    let sh_name = name_in(out, table, &section.name, |out| {
        insert_section_name(out, at, &section.name)
    })?;
    out.insert_section(
        at,
        Section {
            sh_name,
            sh_link: 0,
            sh_info: tb as u32,
            sh_offset: 0,
            data: Vec::new(),
            ..section
        },
    )?;
    insert_section_symbol(out, tb, at, symbol, named)?;
    super::shared_segment::cover(out, at)?;
    Ok(at)
}

/// The offset of `name` in string table `table`: the one already there, else where
/// `insert` puts it.
fn name_in(
    out: &mut Cubin,
    table: usize,
    name: &str,
    insert: impl FnOnce(&mut Cubin) -> Result<u32, Refusal>,
) -> Result<u32, Refusal> {
    match super::shared_segment::existing_name(out, table, name) {
        Ok(off) => Ok(off),
        Err(_) => insert(out),
    }
}

/// Where ptxas puts the shared section of the kernel whose code is section `tb` (see the
/// module docs): the first code section's before the module's NOBITS sections; another's
/// before the first kernel's own whose code comes after it, else after every NOBITS section;
/// in a module with none, last, after the code and `.nv.global.init`. NOBITS sections
/// elsewhere than in one run are not a layout this knows.
fn place(out: &Cubin, tb: usize) -> Result<usize, Refusal> {
    let sections = &out.elf.sections;
    let refuse = || Refusal::NoPlaceFor(".nv.shared.");
    let nobits = |s: &Section| s.is_nobits() && s.sh_flags & SHF_ALLOC != 0;
    let own = |s: &Section| {
        nobits(s) && s.name.starts_with(".nv.shared.") && !s.name.starts_with(".nv.shared.reserved")
    };
    let first_code = sections
        .iter()
        .position(|s| s.name.starts_with(".text."))
        .ok_or_else(refuse)?;
    let at = match sections.iter().position(nobits) {
        None => {
            let last = sections.last().map_or("", |s| s.name.as_str());
            if !(last.starts_with(".text.") || last == ".nv.global.init") {
                return Err(refuse());
            }
            sections.len()
        }
        Some(start) => {
            let end = start + sections[start..].iter().take_while(|s| nobits(s)).count();
            if sections[end..].iter().any(nobits) {
                return Err(refuse());
            }
            match sections[start..end]
                .iter()
                .position(|s| own(s) && s.sh_info as usize > tb)
            {
                _ if tb == first_code => start,
                Some(i) => start + i,
                None => end,
            }
        }
    };
    if at <= tb {
        return Err(refuse());
    }
    Ok(at)
}

/// Put `name` in `.shstrtab` where the section now at `at` has its name (the table is in
/// section order), moving the later names; its offset.
fn insert_section_name(out: &mut Cubin, at: usize, name: &str) -> Result<u32, Refusal> {
    let table = out.elf.header.e_shstrndx as usize;
    let end = table_len(out, table)?;
    let off = out.elf.sections.get(at).map_or(end, |s| s.sh_name);
    insert_name(out, table, off, name)?;
    let names = out.elf.sections.iter_mut().map(|s| &mut s.sh_name);
    shift_names(names, off, end, name)?;
    Ok(off)
}

/// Insert section symbol `symbol` for section `at` right after the section symbol of the
/// kernel's code `tb`, every later symbol renumbered; where `named`, its name from `.strtab`
/// ([`name_in`]), inserted at its place (the table is in symbol order) where missing.
fn insert_section_symbol(
    out: &mut Cubin,
    tb: usize,
    at: usize,
    symbol: &Symbol,
    named: bool,
) -> Result<(), Refusal> {
    let p = 1 + out
        .symbols
        .iter()
        .position(|s| s.kind() == STT_SECTION && s.st_shndx as usize == tb)
        .ok_or(Refusal::SectionSymbolMissing)?;
    let first_global = out.elf.sections[out.symtab].sh_info as usize;
    if p > first_global {
        return Err(Refusal::SectionSymbolMissing);
    }
    let name = out.elf.sections[at].name.clone();
    let table = out.elf.sections[out.symtab].sh_link as usize;
    let st_name = match named {
        false => 0,
        true => name_in(out, table, &name, |out| {
            let end = table_len(out, table)?;
            let off = out.symbols[p..]
                .iter()
                .find(|s| s.st_name != 0)
                .map_or(end, |s| s.st_name);
            insert_name(out, table, off, &name)?;
            let names = out.symbols.iter_mut().map(|s| &mut s.st_name);
            shift_names(names, off, end, &name)?;
            Ok(off)
        })?,
    };
    out.make_room_for_symbol(p as u32)?;
    out.symbols.insert(
        p,
        Symbol {
            name,
            st_name,
            st_shndx: at as u16,
            ..symbol.clone()
        },
    );
    out.elf.sections[out.symtab].sh_info += 1;
    out.store_symbols();
    Ok(())
}

/// The length of string table section `table`; an error where it is not one this can edit
/// (missing, or shared by section and symbol names).
fn table_len(out: &Cubin, table: usize) -> Result<u32, Refusal> {
    let shared =
        out.elf.sections[out.symtab].sh_link as usize == out.elf.header.e_shstrndx as usize;
    let sec = out
        .elf
        .sections
        .get(table)
        .filter(|_| table != 0 && !shared)
        .ok_or(Refusal::NoStrtab)?;
    u32::try_from(sec.data.len()).map_err(|_| Refusal::StrtabTooLarge)
}

/// `name` and its terminator inserted into string table `table` at byte `off`, which is in
/// the table or its end (an offset past it, taken from a name no table holds, is refused).
fn insert_name(out: &mut Cubin, table: usize, off: u32, name: &str) -> Result<(), Refusal> {
    let data = &mut out.elf.sections[table].data;
    let at = off as usize;
    if at > data.len() {
        return Err(Refusal::NameOutOfRange(off));
    }
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    data.splice(at..at, bytes);
    u32::try_from(data.len()).map_err(|_| Refusal::StrtabTooLarge)?;
    Ok(())
}

/// The name offsets `names` after `name` went in at `off` of a table that ended at `end`:
/// those at or past `off` move past it. One at or past `end` names nothing in the table
/// (a damaged file) and is refused, so every moved offset stays inside the grown table,
/// whose length [`insert_name`] checked fits a `u32`.
fn shift_names<'a>(
    names: impl Iterator<Item = &'a mut u32>,
    off: u32,
    end: u32,
    name: &str,
) -> Result<(), Refusal> {
    let moved = name.len() as u32 + 1;
    for n in names.filter(|n| **n >= off) {
        if *n >= end {
            return Err(Refusal::NameOutOfRange(*n));
        }
        *n += moved;
    }
    Ok(())
}

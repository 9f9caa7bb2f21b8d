//! The one part the splice ([`super::splice`]) adds rather than replaces (issue 47): a
//! kernel's static shared memory `.nv.shared.<k>` where the donor has one and the module's
//! copy of the kernel has none. ptxas's shared-memory spilling (the `enable_smem_spilling`
//! candidate) gives the spilled registers such a section, so the held-out file's kernels
//! tuned that way were assembled by a whole-module ptxas run.
//!
//! Added where a whole-module run at those budgets puts it (`tests/tuning/tune_entry.rs`
//! compares the bytes): the section after the module's other shared sections, among the
//! kernels' own in their code's order; its section symbol right after the kernel's code
//! section symbol; each name at its place in `.shstrtab` and `.strtab`, which ptxas writes in
//! section and symbol order, every later name's offset moved by it. A module with no shared
//! memory at all (before sm_90) also gets a program header for it: `shared_segment`.

use super::Cubin;
use super::elf::Section;
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
    let first = super::shared_segment::is_first(out);
    let at = if first {
        super::shared_segment::place(out)?
    } else {
        place(out, tb)?
    };
    let from = &donor.elf.sections[d];
    let sh_name = if first {
        let table = out.elf.header.e_shstrndx as usize;
        super::shared_segment::existing_name(out, table, &from.name)?
    } else {
        insert_section_name(out, at, &from.name)?
    };
    out.insert_section(
        at,
        Section {
            name: from.name.clone(),
            sh_name,
            sh_link: 0,
            sh_info: tb as u32,
            sh_offset: 0,
            data: Vec::new(),
            ..from.clone()
        },
    )?;
    let symbol = donor
        .symbols
        .iter()
        .find(|s| s.kind() == STT_SECTION && s.st_shndx as usize == d)
        .ok_or(Refusal::SectionSymbolMissing)?;
    insert_section_symbol(out, tb, at, symbol, first)?;
    if first {
        super::shared_segment::add_segment(out, at)?;
    }
    Ok(())
}

/// Where ptxas puts a kernel's shared section: before the first kernel's shared section
/// whose code comes after this kernel's, else after the module's last shared section. A
/// module with none is `shared_segment`'s; a place before the code is not a layout this
/// knows.
fn place(out: &Cubin, tb: usize) -> Result<usize, Refusal> {
    let sections = &out.elf.sections;
    let shared = |s: &Section| s.name.starts_with(".nv.shared.") && s.is_nobits();
    let own = |s: &Section| shared(s) && !s.name.starts_with(".nv.shared.reserved");
    let at = match sections
        .iter()
        .position(|s| own(s) && s.sh_info as usize > tb)
    {
        Some(i) => i,
        None => {
            sections
                .iter()
                .rposition(shared)
                .ok_or(Refusal::NoPlaceFor(".nv.shared."))?
                + 1
        }
    };
    if at <= tb {
        return Err(Refusal::NoPlaceFor(".nv.shared."));
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
    let moved = name.len() as u32 + 1;
    for s in out.elf.sections.iter_mut().filter(|s| s.sh_name >= off) {
        s.sh_name += moved;
    }
    Ok(off)
}

/// Insert the donor's section `symbol` for section `at` right after the section symbol of
/// the kernel's code `tb`, every later symbol renumbered; its name at its place in
/// `.strtab`, or, for the module's `first` shared section, the name already there.
fn insert_section_symbol(
    out: &mut Cubin,
    tb: usize,
    at: usize,
    symbol: &Symbol,
    first: bool,
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
    let st_name = match symbol.st_name {
        0 => 0,
        _ if first => {
            let table = out.elf.sections[out.symtab].sh_link as usize;
            super::shared_segment::existing_name(out, table, &name)?
        }
        _ => {
            let table = out.elf.sections[out.symtab].sh_link as usize;
            let end = table_len(out, table)?;
            let off = out.symbols[p..]
                .iter()
                .find(|s| s.st_name != 0)
                .map_or(end, |s| s.st_name);
            insert_name(out, table, off, &name)?;
            let moved = name.len() as u32 + 1;
            for s in out.symbols.iter_mut().filter(|s| s.st_name >= off) {
                s.st_name += moved;
            }
            off
        }
    };
    let p32 = p as u32;
    out.renumber_symbols(&|old| if old >= p32 { old + 1 } else { old })?;
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

/// `name` and its terminator inserted into string table `table` at byte `off`.
fn insert_name(out: &mut Cubin, table: usize, off: u32, name: &str) -> Result<(), Refusal> {
    let data = &mut out.elf.sections[table].data;
    let at = (off as usize).min(data.len());
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    data.splice(at..at, bytes);
    u32::try_from(data.len()).map_err(|_| Refusal::StrtabTooLarge)?;
    Ok(())
}

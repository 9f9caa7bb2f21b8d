//! The writable segment over a module's shared memory (issue 47), for a kernel's
//! `.nv.shared.<k>` that [`super::shared_splice`] adds (a splice, or a SASS rewrite through
//! [`super::edit`]'s `set_shared_size`).
//!
//! Before sm_90 a module without `__shared__` data or `__device__` variables has no NOBITS
//! section and no writable segment at all (sm_90+ always has `.nv.shared.reserved.0` and its
//! segment). When one kernel of such a module is compiled with shared-memory spilling, a
//! whole-module ptxas run (13.5, sm_75, sm_80 and sm_86 read with `readelf -lS`) writes:
//! * the kernel's `.nv.shared.<k>` as the last section, after the last code section;
//! * a fourth program header, `PT_LOAD` with flags `RW` (6), alignment 8, file size 0, at the
//!   section's offset, its memory size the shared sections' sizes laid out in section order,
//!   between the code's `LOAD` and the `LOAD` of the program header table (which comes last);
//! * no new names: ptxas puts `.nv.shared.<k>` for every kernel in `.shstrtab` and `.strtab`
//!   whether or not the section exists, so the section and its symbol name the string there.
//!
//! A module with a writable segment already (shared memory, `.nv.global.init`, `.nv.global`)
//! gets no other: ptxas's segment covers the new section too, its memory size the NOBITS
//! sections laid out after its file bytes, which the cubin model keeps so at each relayout.
//! A relocatable cubin (`-rdc`, `ET_REL`) has no program headers at all (nvlink writes them),
//! so there the section is all that is added, as ptxas does for `__shared__` data.
//!
//! Any other layout (NOBITS sections without a writable segment, more than one, one whose
//! size is not that layout, the table's `LOAD` not last) is refused: the splice compiles the
//! module instead, and a SASS rewrite leaves the kernel as it was.

use super::Cubin;
use super::elf::{ET_REL, PF_W, PHDR_SIZE, PT_LOAD, ProgramHeader};
use super::refusal::Refusal;

/// `PF_R | PF_W`: the flags ptxas gives the shared memory segment.
const PF_RW: u32 = 0x4 | PF_W;

/// The offset of `name` as a whole string in string table section `table` of `out`.
pub(super) fn existing_name(out: &Cubin, table: usize, name: &str) -> Result<u32, Refusal> {
    let data = &out
        .elf
        .sections
        .get(table)
        .filter(|_| table != 0)
        .ok_or(Refusal::NoStrtab)?
        .data;
    let mut at = 0;
    for piece in data.split(|&b| b == 0) {
        if piece == name.as_bytes() {
            return u32::try_from(at).map_err(|_| Refusal::StrtabTooLarge);
        }
        at += piece.len() + 1;
    }
    Err(Refusal::NoSharedSegment(
        "the name is not in the string table",
    ))
}

/// Make the program headers cover the shared section just added at index `at` as ptxas
/// does: the module's writable segment grows with it, or, where there is none, the segment
/// ptxas adds for a module's first shared memory.
pub(super) fn cover(out: &mut Cubin, at: usize) -> Result<(), Refusal> {
    let elf = &out.elf;
    if elf.phdrs.is_empty() {
        return match elf.header.e_type {
            ET_REL => Ok(()),
            _ => Err(Refusal::NoSharedSegment("no program headers")),
        };
    }
    match elf.writable_tracks_nobits() {
        Some(true) => Ok(()),
        Some(false) => Err(Refusal::NoSharedSegment(
            "the writable segment is not the NOBITS sections' layout",
        )),
        None => add_segment(out, at),
    }
}

/// Add the writable segment for the shared section at index `at`, the module's only NOBITS
/// section, just before the program header table's own `LOAD`, the last header.
fn add_segment(out: &mut Cubin, at: usize) -> Result<(), Refusal> {
    let elf = &out.elf;
    let nobits = elf.sections.iter().filter(|s| s.is_nobits()).count();
    if nobits != 1 {
        return Err(Refusal::NoSharedSegment(
            "NOBITS sections without a writable segment",
        ));
    }
    let table_size = elf.phdrs.len() as u64 * PHDR_SIZE as u64;
    let last_is_table = elf.phdrs.last().is_some_and(|p| {
        p.p_type == PT_LOAD && p.p_offset == elf.header.e_phoff && p.p_filesz == table_size
    });
    if !last_is_table {
        return Err(Refusal::NoSharedSegment(
            "the last program header is not the table's LOAD",
        ));
    }
    let section = &elf.sections[at];
    let segment = ProgramHeader {
        p_type: PT_LOAD,
        p_flags: PF_RW,
        p_offset: section.sh_offset,
        p_vaddr: 0,
        p_paddr: 0,
        p_filesz: 0,
        p_memsz: section.sh_size,
        p_align: 8,
    };
    let before = elf.phdrs.len() - 1;
    out.elf
        .insert_nobits_segment(before, segment)
        .map_err(|_| Refusal::NoSharedSegment("the program header does not fit"))
}

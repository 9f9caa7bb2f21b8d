//! A module's first shared memory (issue 47): what [`super::shared_splice`] adds where the
//! module has no NOBITS section at all, the layout ptxas writes before sm_90 for a module
//! without `__shared__` data (sm_90+ always has `.nv.shared.reserved.0` and its segment).
//!
//! When one kernel of such a module is compiled with shared-memory spilling, a whole-module
//! ptxas run (13.5, sm_80 and sm_86 read with `readelf -lS`) writes:
//! * the kernel's `.nv.shared.<k>` as the last section, after the last code section;
//! * a fourth program header, `PT_LOAD` with flags `RW` (6), alignment 8, file size 0, at the
//!   section's offset, its memory size the shared sections' sizes laid out in section order,
//!   between the code's `LOAD` and the `LOAD` of the program header table (which comes last);
//! * no new names: ptxas puts `.nv.shared.<k>` for every kernel in `.shstrtab` and `.strtab`
//!   whether or not the section exists, so the section and its symbol name the string there.
//!
//! Any other layout (a NOBITS section already, a writable segment already, the table's
//! `LOAD` not last, a name missing) is refused: the caller compiles the module instead.

use super::Cubin;
use super::elf::{PF_W, PHDR_SIZE, PT_LOAD, ProgramHeader, Section};
use super::refusal::Refusal;

/// `PF_R | PF_W`: the flags ptxas gives the shared memory segment.
const PF_RW: u32 = 0x4 | PF_W;

/// Whether `out` has no shared memory (nor any other NOBITS section) yet.
pub(super) fn is_first(out: &Cubin) -> bool {
    !out.elf.sections.iter().any(Section::is_nobits)
}

/// Where the first shared section goes: after the last section, which must be code.
pub(super) fn place(out: &Cubin) -> Result<usize, Refusal> {
    let last = out.elf.sections.last().map(|s| s.name.as_str());
    if !last.is_some_and(|n| n.starts_with(".text.")) {
        return Err(Refusal::NoSharedSegment("the last section is not code"));
    }
    Ok(out.elf.sections.len())
}

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

/// Add the writable segment for the shared section now at index `at`, just before the
/// program header table's own `LOAD`, the last header.
pub(super) fn add_segment(out: &mut Cubin, at: usize) -> Result<(), Refusal> {
    let elf = &out.elf;
    if elf
        .phdrs
        .iter()
        .any(|p| p.p_type == PT_LOAD && p.p_flags & PF_W != 0)
    {
        return Err(Refusal::NoSharedSegment("a writable segment exists"));
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

//! The splice's part of `.debug_frame` ([`super::splice`]): a kernel's frame records (the
//! CIEs and FDEs of the functions in its text section) replaced by the donor's, which may
//! have other lengths and another count, the way a whole-module ptxas run at the donor's
//! budget lays them out.
//!
//! ptxas writes one run of records per text section: for each function a CIE and right
//! after it the function's FDE, whose location is relocated against the kernel's symbol
//! (plus the function's offset); a CIE may hold a relocation too (a sub-function's, whose
//! program sets a location). At a lower register budget a function saves other registers
//! around its calls, so its frame programs, and the record lengths, change (issue 47).
//! The donor's run goes in place of the base's; the records after it move by the difference,
//! so every CIE pointer (a plain section offset in the 64-bit format) past the run and every
//! relocation into the section past it moves with them. The donor's relocations into its run
//! take the place of the base's in the relocation list, in the donor's order: ptxas lists a
//! run's relocations together, runs in reverse order of the records.

use std::ops::Range;

use super::Cubin;
use super::elf::{SHT_REL, SHT_RELA, rd_u32, rd_u64};
use super::refusal::Refusal;
use super::symbols::{Reloc, encode_relocs, parse_relocs};

/// One record: its bytes' span and, for an FDE, the offset of the CIE it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    span: Range<usize>,
    cie: Option<usize>,
}

/// Where the CIE pointer and the location sit in a 64-bit record (after the `ff ff ff ff`
/// escape and the u64 length).
const CIE_POINTER_AT: usize = 12;
const LOCATION_AT: usize = 20;

/// `.debug_frame` and its relocations on one side of the splice.
struct Side<'a> {
    section: usize,
    data: &'a [u8],
    relocs: Vec<Reloc>,
    rela: bool,
}

impl<'a> Side<'a> {
    /// The side's `.debug_frame` with its relocations (none without a relocation section:
    /// then an FDE is refused for want of its location's); `None` when it has no
    /// `.debug_frame`.
    fn of(c: &'a Cubin) -> Result<Option<Side<'a>>, Refusal> {
        let Some(section) = c.elf.sections.iter().position(|s| s.name == ".debug_frame") else {
            return Ok(None);
        };
        let (relocs, rela) = match relocations_of(c, section) {
            Some(rel) => {
                let rela = c.elf.sections[rel].sh_type == SHT_RELA;
                let data = &c.elf.sections[rel].data;
                (
                    parse_relocs(data, rela).ok_or(Refusal::BadRelocations)?,
                    rela,
                )
            }
            None => (Vec::new(), false),
        };
        let data = &c.elf.sections[section].data[..];
        Ok(Some(Side {
            section,
            data,
            relocs,
            rela,
        }))
    }

    /// The span of the records of text section `text`'s functions: `None` where it has none.
    fn run_of(&self, c: &Cubin, text: usize) -> Result<Option<Range<usize>>, Refusal> {
        let records = records(self.data).ok_or(Refusal::ShortDebugFrame)?;
        let owned = |r: &Record| -> Result<bool, Refusal> {
            let Some(at) = r.cie.map(|_| r.span.start + LOCATION_AT) else {
                return Ok(false);
            };
            let reloc = self
                .relocs
                .iter()
                .find(|x| x.r_offset as usize == at)
                .ok_or(Refusal::FdeLocation)?;
            let sym = c
                .symbols
                .get(reloc.sym as usize)
                .ok_or(Refusal::RelocationSymbol)?;
            Ok(sym.st_shndx as usize == text)
        };
        let mut ours = vec![false; records.len()];
        for (i, r) in records.iter().enumerate() {
            if owned(r)? {
                ours[i] = true;
                let cie = records.iter().position(|x| Some(x.span.start) == r.cie);
                ours[cie.ok_or(Refusal::FdeUnknownShape)?] = true;
            }
        }
        one_run(&records, &ours)
    }
}

/// Every record of a 64-bit `.debug_frame`, or `None` where the section is not a sequence
/// of such records to its end (the splice then refuses; ptxas writes only this format).
fn records(data: &[u8]) -> Option<Vec<Record>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        if rd_u32(data, at)? != 0xffff_ffff {
            return None;
        }
        let len = usize::try_from(rd_u64(data, at + 4)?).ok()?;
        let end = at.checked_add(12)?.checked_add(len)?;
        let id = rd_u64(data, at + CIE_POINTER_AT)?;
        let cie = match id {
            u64::MAX => None,
            p => Some(usize::try_from(p).ok()?),
        };
        // An FDE holds its location and range (8 bytes each) after the pointer.
        let least = at
            + if cie.is_some() {
                LOCATION_AT + 16
            } else {
                LOCATION_AT
            };
        if end > data.len() || end < least {
            return None;
        }
        out.push(Record { span: at..end, cie });
        at = end;
    }
    Some(out)
}

/// The span of the records marked `ours`, which must be one unbroken run that no other
/// record points into; `None` where none is marked.
fn one_run(records: &[Record], ours: &[bool]) -> Result<Option<Range<usize>>, Refusal> {
    let (Some(first), Some(last)) = (ours.iter().position(|&o| o), ours.iter().rposition(|&o| o))
    else {
        return Ok(None);
    };
    let run = records[first].span.start..records[last].span.end;
    let inside = |at: usize| run.contains(&at);
    let broken = (first..=last).any(|i| !ours[i]);
    let shared = records
        .iter()
        .enumerate()
        .any(|(i, r)| !ours[i] && r.cie.is_some_and(inside));
    let leaves = records[first..=last]
        .iter()
        .any(|r| r.cie.is_some_and(|c| !inside(c)));
    if broken || shared || leaves {
        return Err(Refusal::FrameRun);
    }
    Ok(Some(run))
}

/// Text section `tb`'s frame records in `out` replaced by text section `td`'s in `donor`,
/// the donor's relocation symbols mapped by `map_sym` (see the module docs).
pub(super) fn splice_frames(
    out: &mut Cubin,
    tb: usize,
    donor: &Cubin,
    td: usize,
    map_sym: &dyn Fn(u32) -> Result<u32, Refusal>,
) -> Result<(), Refusal> {
    let (base, from) = match (Side::of(out)?, Side::of(donor)?) {
        (Some(b), Some(d)) => (b, d),
        (None, None) => return Ok(()),
        (Some(b), None) => return none_of_kernel(&b, out, tb),
        (None, Some(d)) => return none_of_kernel(&d, donor, td),
    };
    let (old, new) = match (base.run_of(out, tb)?, from.run_of(donor, td)?) {
        (Some(o), Some(n)) => (o, n),
        (None, None) => return Ok(()),
        _ => return Err(Refusal::OneSided(".debug_frame records")),
    };
    // Both runs hold FDEs with relocated locations: both sides have relocation sections.
    if base.rela != from.rela {
        return Err(Refusal::RelocationKinds);
    }
    let data = relaid(base.data, &old, from.data, &new)?;
    let relocs = relaid_relocs(&base.relocs, &old, &from.relocs, &new, map_sym)?;
    let section = base.section;
    let rel = relocations_of(out, section).ok_or(Refusal::FrameRelocations)?;
    out.elf.sections[section].data = data;
    out.elf.sections[rel].data = encode_relocs(&relocs);
    Ok(())
}

/// The relocation section that applies to section `target` of `c`.
fn relocations_of(c: &Cubin, target: usize) -> Option<usize> {
    c.elf.sections.iter().position(|s| {
        (s.sh_type == SHT_REL || s.sh_type == SHT_RELA) && s.sh_info as usize == target
    })
}

/// One side has no `.debug_frame`: fine only where the other has no records of the kernel.
fn none_of_kernel(side: &Side<'_>, c: &Cubin, text: usize) -> Result<(), Refusal> {
    match side.run_of(c, text)? {
        None => Ok(()),
        Some(_) => Err(Refusal::OneSided(".debug_frame")),
    }
}

/// Where a base offset lands once `old` holds `new`'s bytes: before the run it stays, past
/// it it moves by the difference in length. `None` inside the run (replaced).
fn moved(at: usize, old: &Range<usize>, new: &Range<usize>) -> Option<usize> {
    if at < old.start {
        Some(at)
    } else if at >= old.end {
        Some(at - old.len() + new.len())
    } else {
        None
    }
}

/// The section's new bytes: the base before the run, the donor's run with its CIE pointers
/// rebased, the base after the run with its CIE pointers moved.
fn relaid(
    base: &[u8],
    old: &Range<usize>,
    donor: &[u8],
    new: &Range<usize>,
) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::with_capacity(base.len() - old.len() + new.len());
    out.extend_from_slice(&base[..old.start]);
    let donor_records = records(&donor[new.clone()]).ok_or(Refusal::ShortDebugFrame)?;
    let mut run = donor[new.clone()].to_vec();
    for r in &donor_records {
        // Pointers inside the run (checked in `one_run`), as offsets in the donor's section.
        if let Some(c) = r.cie {
            let at = old.start + c.checked_sub(new.start).ok_or(Refusal::FrameRun)?;
            write_pointer(&mut run, r.span.start, at);
        }
    }
    out.extend_from_slice(&run);
    let tail_start = out.len();
    out.extend_from_slice(&base[old.end..]);
    let tail = records(&base[old.end..]).ok_or(Refusal::ShortDebugFrame)?;
    for r in &tail {
        if let Some(c) = r.cie {
            let at = moved(c, old, new).ok_or(Refusal::FrameRun)?;
            write_pointer(&mut out[tail_start..], r.span.start, at);
        }
    }
    Ok(out)
}

fn write_pointer(records: &mut [u8], record: usize, cie: usize) {
    let at = record + CIE_POINTER_AT;
    records[at..at + 8].copy_from_slice(&(cie as u64).to_le_bytes());
}

/// The section's new relocations: the base's, those past the run moved, those in it
/// replaced (where the first of them was) by the donor's into its run, rebased and their
/// symbols mapped.
fn relaid_relocs(
    base: &[Reloc],
    old: &Range<usize>,
    donor: &[Reloc],
    new: &Range<usize>,
    map_sym: &dyn Fn(u32) -> Result<u32, Refusal>,
) -> Result<Vec<Reloc>, Refusal> {
    let mut theirs = Vec::new();
    for r in donor
        .iter()
        .filter(|r| new.contains(&(r.r_offset as usize)))
    {
        theirs.push(Reloc {
            r_offset: (r.r_offset as usize - new.start + old.start) as u64,
            sym: map_sym(r.sym)?,
            ..*r
        });
    }
    let mut out = Vec::with_capacity(base.len() + theirs.len());
    let mut pending = Some(theirs);
    for r in base {
        match moved(r.r_offset as usize, old, new) {
            Some(at) => out.push(Reloc {
                r_offset: at as u64,
                ..*r
            }),
            None => out.extend(pending.take().into_iter().flatten()),
        }
    }
    // A run without relocations of its own in the base (never seen): the donor's go last.
    out.extend(pending.into_iter().flatten());
    Ok(out)
}

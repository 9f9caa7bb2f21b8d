//! The shipped cubin's writable segment, the one program header an assembly changes beyond
//! moving offsets (issue 47): ptxas writes a `PT_LOAD` over the module's `__device__` data
//! with initial values (`.nv.global.init`, file bytes) and its NOBITS sections (shared
//! memory, `.nv.global`), its memory size the file bytes and then those sections laid out in
//! section order; and it adds one, flags `RW`, alignment 8, file size 0, just before the
//! program header table's own `LOAD`, when a module that had none gets its first
//! `.nv.shared.<k>` (before sm_90; tests/tuning/tune_entry.rs compares such a splice with
//! ptxas's bytes, tests/assembly/rewrite_segments.rs such a SASS rewrite's headers).
//!
//! `cuobjdump -elf` prints no program headers, so they are read here with a few lines of our
//! own from the ELF64 headers, as the rest of the check imports nothing from `crate::cubin`.
//! Where the module's own writable segment is not of that shape (another start, where it has
//! no file bytes, or size than its sections give) the rule is not known and nothing is said.
//! A segment with file bytes starts where they do, which move with the code: its start is
//! not compared (the bytes are, as a section).

use super::Difference;

const PT_LOAD: u32 = 1;
const PF_W: u32 = 2;
/// `PF_R | PF_W`, as ptxas writes the segment it adds.
const PF_RW: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHF_ALLOC: u64 = 2;

/// One program header: type, flags, offset, file size, memory size, alignment (the
/// addresses are 0 in every cubin and are compared with the rest through `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    kind: u32,
    flags: u32,
    offset: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
    other: (u64, u64),
}

/// What is compared of a program header: type, flags, alignment, the writable segment's
/// offset and sizes (zeros for the others), the addresses.
type Shape = (u32, u32, u64, [u64; 3], (u64, u64));

/// A section header's offset, size and alignment, for the NOBITS sections in memory.
struct Nobits {
    offset: u64,
    size: u64,
    align: u64,
}

/// What ptxas would write as the shipped cubin's writable segment, against what it holds.
pub(crate) fn compare(shipped: &[u8], module: &[u8]) -> Result<(), Difference> {
    let bad = |why: &str| Difference::ProgramHeaders(why.to_string());
    let (Some(ours), Some(theirs)) = (segments(shipped), segments(module)) else {
        return Err(bad("unreadable"));
    };
    let (Some(our_nobits), Some(their_nobits)) = (nobits(shipped), nobits(module)) else {
        return Err(bad("unreadable section headers"));
    };
    let writable = |v: &[Segment]| -> Vec<usize> {
        (0..v.len())
            .filter(|&i| v[i].kind == PT_LOAD && v[i].flags & PF_W != 0)
            .collect()
    };
    let expected = match writable(&theirs)[..] {
        [] if their_nobits.is_empty() => added(&theirs, &our_nobits),
        [i] if Some(theirs[i]) == expected_at(&theirs[i], &their_nobits) => {
            let mut v = theirs.clone();
            v[i] = expected_at(&theirs[i], &our_nobits).ok_or_else(|| bad("no NOBITS section"))?;
            Some(v)
        }
        _ => None,
    };
    let Some(expected) = expected else {
        return Ok(());
    };
    // Only the writable segment's place and sizes: the others move with the sections, and
    // so does its start where it has file bytes.
    let shape = |v: &[Segment]| -> Vec<Shape> {
        v.iter()
            .map(|s| {
                let writable = s.kind == PT_LOAD && s.flags & PF_W != 0;
                let start = if s.filesz == 0 { s.offset } else { 0 };
                let place = if writable {
                    [start, s.filesz, s.memsz]
                } else {
                    [0; 3]
                };
                (s.kind, s.flags, s.align, place, s.other)
            })
            .collect()
    };
    if shape(&ours) != shape(&expected) {
        return Err(bad(&format!(
            "{} where ptxas writes {}",
            describe(&ours),
            describe(&expected)
        )));
    }
    Ok(())
}

/// The module's program headers with the segment ptxas adds for a first NOBITS section
/// (none where the shipped cubin has none either).
fn added(theirs: &[Segment], our_nobits: &[Nobits]) -> Option<Vec<Segment>> {
    let mut v = theirs.to_vec();
    if our_nobits.is_empty() || v.is_empty() {
        return Some(v);
    }
    let at = v.len() - 1;
    let template = Segment {
        kind: PT_LOAD,
        flags: PF_RW,
        offset: 0,
        filesz: 0,
        memsz: 0,
        align: 8,
        other: (0, 0),
    };
    v.insert(at, expected_at(&template, our_nobits)?);
    Some(v)
}

/// Segment `s` as it covers `nobits`: its file bytes, then theirs laid out in section order
/// with their alignments; from the first of them where it has no file bytes (`None` where it
/// has neither).
fn expected_at(s: &Segment, nobits: &[Nobits]) -> Option<Segment> {
    let offset = match s.filesz {
        0 => nobits.first()?.offset,
        _ => s.offset,
    };
    let mut end = s.filesz;
    for n in nobits {
        end = end
            .checked_next_multiple_of(n.align.max(1))?
            .checked_add(n.size)?;
    }
    Some(Segment {
        offset,
        memsz: end,
        ..*s
    })
}

/// The program headers as the file holds them.
fn segments(b: &[u8]) -> Option<Vec<Segment>> {
    let phoff = u64_at(b, 0x20)? as usize;
    let phnum = u16_at(b, 0x38)? as usize;
    (0..phnum)
        .map(|i| {
            let p = header(b, phoff, 56, i)?;
            Some(Segment {
                kind: u32_at(p, 0)?,
                flags: u32_at(p, 4)?,
                offset: u64_at(p, 8)?,
                other: (u64_at(p, 16)?, u64_at(p, 24)?),
                filesz: u64_at(p, 32)?,
                memsz: u64_at(p, 40)?,
                align: u64_at(p, 48)?,
            })
        })
        .collect()
}

/// The allocated NOBITS sections, in section order.
fn nobits(b: &[u8]) -> Option<Vec<Nobits>> {
    let shoff = u64_at(b, 0x28)? as usize;
    let shnum = u16_at(b, 0x3c)? as usize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let h = header(b, shoff, 64, i)?;
        if u32_at(h, 4)? == SHT_NOBITS && u64_at(h, 8)? & SHF_ALLOC != 0 {
            out.push(Nobits {
                offset: u64_at(h, 24)?,
                size: u64_at(h, 32)?,
                align: u64_at(h, 48)?,
            });
        }
    }
    Some(out)
}

/// The headers in a line: type, flags, and where a writable one starts and how large.
fn describe(v: &[Segment]) -> String {
    let one = |s: &Segment| {
        if s.kind == PT_LOAD && s.flags & PF_W != 0 {
            format!("{}/{:#x}@{:#x}+{:#x}", s.kind, s.flags, s.offset, s.memsz)
        } else {
            format!("{}/{:#x}", s.kind, s.flags)
        }
    };
    let all: Vec<String> = v.iter().map(one).collect();
    format!("[{}]", all.join(" "))
}

/// Entry `i` of the table of `size`-byte entries at `table` (`None` past the file).
fn header(b: &[u8], table: usize, size: usize, i: usize) -> Option<&[u8]> {
    let at = table.checked_add(size.checked_mul(i)?)?;
    b.get(at..at.checked_add(size)?)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 header alone, with the given section header table (offset, count) and no
    /// program headers.
    fn header_with_sections(shoff: u64, shnum: u16) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&shnum.to_le_bytes());
        b
    }

    /// A section header table at the end of `u64` (a field's offset overflowed, a panic with
    /// overflow checks) or past the file cannot be read, and says so.
    #[test]
    fn a_table_past_the_file_is_unreadable() {
        let unreadable = Err(Difference::ProgramHeaders(
            "unreadable section headers".to_string(),
        ));
        for shoff in [64, u64::MAX - 1, u64::MAX - 63] {
            let b = header_with_sections(shoff, 1);
            assert_eq!(compare(&b, &b), unreadable, "{shoff:#x}");
        }
        let none = header_with_sections(0, 0);
        assert_eq!(compare(&none, &none), Ok(()));
    }
}

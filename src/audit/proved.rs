//! A kernel whose text section a SASS rewrite changed (spill2smem, regdem),
//! against the unrewritten section it was made from.
//!
//! The two checks compose: the translation checker proved the rewritten section (the kernel
//! and every sub-function in it, the compiler's helper subroutines such as the `sqrt` and
//! double-division slow paths included) computes what the unrewritten one computes, and the
//! unrewritten one is whole-module ptxas output the rest of the check compares as usual. So
//! the code itself, and where each function of the section starts, are the proof's; here
//! everything else about the section must be the unrewritten one's, except the edits a
//! rewrite makes to go with its code, each bounded:
//! * the section's size and the functions' offsets and sizes in it (code was inserted);
//! * relocations at other offsets (the same symbols, types and addends);
//! * the records that hold code offsets (exit and other instruction offsets, unused load
//!   bytes, spill annotations, branch targets), present on both sides alike;
//! * the register count: the code may use no register at or above the count it records,
//!   and `sh_info` and `.nv.info` must say the same;
//! * the launch bound, only added or lowered, and the register limit beside the count;
//! * the frame and stack sizes, only lowered, and only where the code no longer touches
//!   local memory (no `LDL`/`STL`, no read of the stack pointer but its own updates, no
//!   call out of the section);
//! * the kernel's static shared memory, only grown (the spill area the checker's base proof
//!   covers).

use std::collections::BTreeSet;

use super::Difference;
use super::dump::{Dump, Record, Section};
use super::kernel::Pair;
use super::listing::Function;

/// Records whose values hold code offsets or the resources a rewrite sets (compared below,
/// one by one, not as text).
const EDITED: &[&str] = &[
    "EIATTR_ANNOTATIONS",
    "EIATTR_INDIRECT_BRANCH_TARGETS",
    "EIATTR_MAX_THREADS",
    "EIATTR_MAXREG_COUNT",
    "EIATTR_REGCOUNT",
    "EIATTR_FRAME_SIZE",
    "EIATTR_MIN_STACK_SIZE",
    "EIATTR_MAX_STACK_SIZE",
    "EIATTR_CRS_STACK_SIZE",
];

fn edited(attribute: &str) -> bool {
    EDITED.contains(&attribute) || code_offsets(attribute)
}

/// Records that list code offsets (with a mask beside each, for the unused load bytes):
/// the re-laid-out code moves them.
fn code_offsets(attribute: &str) -> bool {
    attribute.ends_with("_INSTR_OFFSETS") || attribute == "EIATTR_UNUSED_LOAD_BYTE_OFFSET"
}

/// The records that hold stack or frame sizes.
fn stack_attribute(attribute: &str) -> bool {
    matches!(
        attribute,
        "EIATTR_FRAME_SIZE"
            | "EIATTR_MIN_STACK_SIZE"
            | "EIATTR_MAX_STACK_SIZE"
            | "EIATTR_CRS_STACK_SIZE"
    )
}

/// The proved section of `p.ks` against its unrewritten origin (see the module docs), with
/// the shipped listing (`shipped`) for what only the code can tell.
pub(crate) fn compare(p: &Pair<'_>, shipped: &[Function]) -> Result<(), Difference> {
    let ts = super::kernel::text(p.shipped, p.ks)?;
    let tr = super::kernel::text(p.origin, p.kr)?;
    let (a, b) = (
        super::kernel::section(p.shipped, ts)?,
        super::kernel::section(p.origin, tr)?,
    );
    if (a.align, a.flags, &a.kind) != (b.align, b.flags, &b.kind) {
        return Err(Difference::CodeSectionShape);
    }
    symbols(p, ts, tr)?;
    relocations(p)?;
    let code = shipped
        .iter()
        .find(|f| f.name == p.ks)
        .ok_or_else(|| Difference::NotListed(p.ks.to_string()))?;
    let kernel_records = records(
        p,
        &format!(".nv.info.{}", p.ks),
        &format!(".nv.info.{}", p.kr),
    )?;
    let mut shrunk = kernel_records.shrunk;
    for f in p
        .shipped
        .defined_in(ts)
        .into_iter()
        .filter(|f| f.kind == "FUNC")
    {
        let x: Vec<Record> = p
            .shipped
            .global_records(&f.name)
            .into_iter()
            .map(|r| Record {
                text: p.map(&r.text),
                ..r
            })
            .collect();
        let y = p.origin.global_records(&p.map(&f.name));
        shrunk |= records_of(&x, &y, &f.name)?.shrunk;
    }
    registers(p, a, code)?;
    if shrunk {
        frame_unused(p, ts, code)?;
    }
    own_sections(p)?;
    p.calls(ts, tr)
}

/// The same functions and labels (name, type, binding, visibility); their places are the
/// proof's. The kernel itself still starts the section.
fn symbols(p: &Pair<'_>, ts: usize, tr: usize) -> Result<(), Difference> {
    p.same_symbols(ts, tr, |s| {
        let start = (s.other.contains("ENTRY")).then_some(s.value);
        (s.kind.clone(), s.bind.clone(), s.other.clone(), start)
    })
}

/// The code's relocations: the same symbols, types and addends, wherever the code now is.
fn relocations(p: &Pair<'_>) -> Result<(), Difference> {
    let strip = |v: Vec<super::dump::Reloc>| -> Vec<(String, String, Option<String>)> {
        let mut v: Vec<_> = v
            .into_iter()
            .map(|r| (r.symbol, r.kind, r.addend))
            .collect();
        v.sort();
        v
    };
    let a = strip(p.mapped_relocs(&format!(".text.{}", p.ks)));
    let b = strip(
        p.origin
            .relocs
            .get(&format!(".text.{}", p.kr))
            .cloned()
            .unwrap_or_default(),
    );
    if a != b {
        return Err(super::kernel::first_difference(
            "relocation of its code",
            &a,
            &b,
        ));
    }
    Ok(())
}

/// What the records allowed to differ did.
#[derive(Default)]
struct Edits {
    /// A frame or stack size went down.
    shrunk: bool,
}

fn records(p: &Pair<'_>, shipped: &str, origin: &str) -> Result<Edits, Difference> {
    let get = |d: &Dump, s: &str| d.records.get(s).cloned().unwrap_or_default();
    let x: Vec<Record> = get(p.shipped, shipped)
        .into_iter()
        .map(|r| Record {
            text: p.map(&r.text),
            ..r
        })
        .collect();
    records_of(&x, &get(p.origin, origin), p.ks)
}

/// `shipped`'s records against `origin`'s: the same in order but for [`EDITED`], which are
/// bounded one by one.
fn records_of(shipped: &[Record], origin: &[Record], what: &str) -> Result<Edits, Difference> {
    let kept = |v: &[Record]| -> Vec<Record> {
        v.iter()
            .filter(|r| !edited(&r.attribute))
            .cloned()
            .collect()
    };
    let (a, b) = (kept(shipped), kept(origin));
    if a != b {
        return Err(super::kernel::first_difference(
            &format!("{what}: attribute"),
            &a,
            &b,
        ));
    }
    let mut edits = Edits::default();
    let of = |v: &[Record], attr: &str| -> Option<Record> {
        v.iter().find(|r| r.attribute == attr).cloned()
    };
    for attr in EDITED {
        let (x, y) = (of(shipped, attr), of(origin, attr));
        match (*attr, &x, &y) {
            (_, None, None) => {}
            // Spill annotations go with the spills the rewrite moved.
            ("EIATTR_ANNOTATIONS", _, _) => {}
            ("EIATTR_MAX_THREADS", Some(x), y) => {
                let bound = y.as_ref().map_or(u64::MAX, |y| threads(&y.text));
                if threads(&x.text) > bound {
                    return Err(Difference::LaunchBoundRaised {
                        function: what.to_string(),
                    });
                }
            }
            ("EIATTR_MAXREG_COUNT" | "EIATTR_REGCOUNT", Some(_), Some(_)) => {}
            (a, Some(x), Some(y)) if stack_attribute(a) => {
                let (s, o) = (last_number(&x.text), last_number(&y.text));
                if s > o {
                    return Err(Difference::StackRaised {
                        function: what.to_string(),
                        attribute: a.to_string(),
                        shipped: s,
                        origin: o,
                    });
                }
                edits.shrunk |= s < o;
            }
            ("EIATTR_INDIRECT_BRANCH_TARGETS", Some(_), Some(_)) => {}
            _ => {
                return Err(Difference::AttributeOneSide {
                    function: what.to_string(),
                    attribute: attr.to_string(),
                });
            }
        }
    }
    // The offset lists (not in EDITED): present on both sides alike.
    let lists = |v: &[Record]| -> BTreeSet<String> {
        v.iter()
            .filter(|r| code_offsets(&r.attribute))
            .map(|r| r.attribute.clone())
            .collect()
    };
    if lists(shipped) != lists(origin) {
        return Err(Difference::OffsetRecords {
            function: what.to_string(),
        });
    }
    Ok(edits)
}

/// `0x80 0x1 0x1`: the threads of a launch bound.
fn threads(text: &str) -> u64 {
    text.split_whitespace()
        .filter_map(|w| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok())
        .product()
}

/// The last hexadecimal number of a record's text (`frame size: 0x20`, `0x20`).
fn last_number(text: &str) -> u64 {
    text.split(|c: char| c.is_whitespace() || c == ':')
        .filter_map(|w| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok())
        .next_back()
        .unwrap_or(0)
}

/// The register count: `sh_info` (sm_75-89) and `.nv.info` agree, and no instruction of the
/// section names a register at or above it.
fn registers(p: &Pair<'_>, text: &Section, code: &Function) -> Result<(), Difference> {
    let Some(count) = p
        .shipped
        .global_records(p.ks)
        .into_iter()
        .find(|r| r.attribute == "EIATTR_REGCOUNT")
        .map(|r| last_number_dec(&r.text))
    else {
        return Err(Difference::NoRegisterCount);
    };
    let in_header = text.info >> 24;
    if in_header != 0 && in_header != count {
        return Err(Difference::RegisterCounts {
            header: in_header,
            attributes: count,
        });
    }
    let highest = code
        .instrs
        .iter()
        .flat_map(|i| tokens(&i.operands))
        .filter_map(|t| t.strip_prefix('R')?.parse::<u64>().ok())
        .max();
    if let Some(h) = highest
        && h >= count
    {
        return Err(Difference::RegisterAboveCount { highest: h, count });
    }
    Ok(())
}

/// `register count: 33`: the count is printed in decimal.
fn last_number_dec(text: &str) -> u64 {
    text.split(|c: char| c.is_whitespace() || c == ':')
        .filter_map(|w| w.parse().ok())
        .next_back()
        .unwrap_or(0)
}

/// The operand text split into names (`[R1+0x10]` → `R1`, `0x10`).
fn tokens(operands: &str) -> impl Iterator<Item = &str> {
    operands
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
}

/// A smaller frame is only right where nothing uses local memory any more: no `LDL`/`STL`
/// or other local access, no read of the stack pointer `R1` but its own updates, no call
/// that leaves the section.
fn frame_unused(p: &Pair<'_>, ts: usize, code: &Function) -> Result<(), Difference> {
    for (i, x) in code.instrs.iter().enumerate() {
        let at = code.start + 16 * i as u64;
        let local = x.opcode.starts_with("LDL")
            || x.opcode.starts_with("STL")
            || x.opcode.contains(".LOCAL");
        let ops: Vec<&str> = x.operands.split(',').map(str::trim).collect();
        let sp_read = ops
            .iter()
            .enumerate()
            .any(|(k, o)| tokens(o).any(|t| t == "R1") && !(k == 0 && *o == "R1"));
        let own_update = ops.first() == Some(&"R1")
            && ops
                .iter()
                .skip(1)
                .all(|o| tokens(o).all(|t| t == "R1" || t == "RZ" || t.starts_with("0x")));
        if local || (sp_read && !own_update) {
            return Err(Difference::FrameStillUsed {
                instruction: format!("{} {}", x.opcode, x.operands),
                at,
            });
        }
    }
    let inside: BTreeSet<&str> = p
        .shipped
        .defined_in(ts)
        .into_iter()
        .map(|s| s.name.as_str())
        .collect();
    let leaves = p
        .shipped
        .calls
        .iter()
        .find(|(a, b)| inside.contains(a.as_str()) && !inside.contains(b.as_str()));
    if let Some((a, b)) = leaves {
        return Err(Difference::FrameLeftByCall {
            caller: a.clone(),
            callee: b.clone(),
        });
    }
    Ok(())
}

/// The other sections named after the kernel as the origin has them, but the static shared
/// memory, which may appear or grow (never shrink, never hold bytes).
fn own_sections(p: &Pair<'_>) -> Result<(), Difference> {
    let shared = format!(".nv.shared.{}", p.ks);
    let (x, y) = (
        p.shipped.section(&shared),
        p.origin.section(&format!(".nv.shared.{}", p.kr)),
    );
    if let Some(x) = x {
        let below = y.map_or(0, |y| y.size);
        if x.kind != "NOBITS" || x.size < below {
            return Err(Difference::SharedShrank(shared));
        }
    } else if y.is_some() {
        return Err(Difference::SectionMissing(shared));
    }
    p.own_sections_but(".nv.shared")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(a: &str, t: &str) -> Record {
        Record {
            attribute: a.into(),
            text: t.into(),
        }
    }

    #[test]
    fn frames_may_only_shrink_and_bounds_only_fall() {
        let o = [
            rec("EIATTR_FRAME_SIZE", "0x20"),
            rec("EIATTR_PARAM_CBANK", "x"),
        ];
        let lower = [
            rec("EIATTR_FRAME_SIZE", "0x0"),
            rec("EIATTR_PARAM_CBANK", "x"),
        ];
        assert!(records_of(&lower, &o, "k").unwrap().shrunk);
        let higher = [
            rec("EIATTR_FRAME_SIZE", "0x40"),
            rec("EIATTR_PARAM_CBANK", "x"),
        ];
        assert!(records_of(&higher, &o, "k").is_err());
        let other = [
            rec("EIATTR_FRAME_SIZE", "0x20"),
            rec("EIATTR_PARAM_CBANK", "y"),
        ];
        assert!(records_of(&other, &o, "k").is_err());
        let bounded = [
            rec("EIATTR_FRAME_SIZE", "0x20"),
            rec("EIATTR_PARAM_CBANK", "x"),
            rec("EIATTR_MAX_THREADS", "0x80 0x1 0x1"),
        ];
        assert!(!records_of(&bounded, &o, "k").unwrap().shrunk);
        let was = [rec("EIATTR_MAX_THREADS", "0x40 0x1 0x1")];
        assert!(records_of(&[rec("EIATTR_MAX_THREADS", "0x80 0x1 0x1")], &was, "k").is_err());
        // Code offsets move with the code; the list itself must stay.
        let listed = [rec("EIATTR_UNUSED_LOAD_BYTE_OFFSET", "0x890 0xfff")];
        let moved = [rec("EIATTR_UNUSED_LOAD_BYTE_OFFSET", "0x940 0x11bf")];
        assert!(records_of(&moved, &listed, "k").is_ok());
        assert!(records_of(&[], &listed, "k").is_err());
        assert_eq!(last_number("function: f frame size: 0xc0"), 0xc0);
        assert_eq!(last_number_dec("function: f register count: 33"), 33);
    }
}

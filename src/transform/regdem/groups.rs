//! Register groups (RegDem §3.3, docs/papers.md §RegDem): a register and every tuple it
//! belongs to form an aligned block of 1, 2 or 4 registers (64/128-bit operands are aligned
//! to their size, so overlapping tuples nest). A group is demoted, moved and given value
//! registers as a whole, which keeps every alias of a 64/128-bit tuple intact.

use std::collections::{BTreeMap, BTreeSet};

use super::fields::RegFields;
use super::refusal::Refusal;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};

/// A register group: `start..start+size`, `start` a multiple of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Group {
    pub(crate) start: u8,
    pub(crate) size: u8,
}

impl Group {
    pub(crate) fn regs(self) -> impl Iterator<Item = u8> {
        self.start..self.start + self.size
    }
}

/// The general registers `ins` names: (base, width, read, written).
pub(super) fn regs_of(ins: &Instr) -> Vec<(u8, u8, bool, bool)> {
    let mut out = Vec::new();
    for o in &ins.operands {
        match &o.kind {
            OperandKind::Reg(r) if *r != RZ => {
                out.push((*r, o.width.max(1), o.role.reads(), o.role.writes()))
            }
            OperandKind::Addr {
                reg: Some(r),
                reg_width,
                ..
            } if *r != RZ => out.push((*r, (*reg_width).max(1), true, false)),
            OperandKind::Const { reg: Some(r), .. } if *r != RZ => out.push((*r, 1, true, false)),
            _ => {}
        }
    }
    out
}

/// The groups of the section: the largest aligned block containing each register, over the
/// kernel `f` and its sub-functions. Refused: a tuple that is not aligned to its size.
pub(super) fn groups(
    f: &Function,
    callees: &Callees,
) -> Result<(Vec<Option<Group>>, Vec<Group>), Refusal> {
    Ok(form(&widest_tuples(f, callees)?))
}

/// Per register: the width of the widest tuple containing it (0 when unused).
fn widest_tuples(f: &Function, callees: &Callees) -> Result<[u8; 256], Refusal> {
    let mut size = [0u8; 256];
    for ins in f
        .instrs
        .iter()
        .chain(callees.code.iter().flat_map(|(c, _)| c.instrs.iter()))
    {
        for (b, w, _, _) in regs_of(ins) {
            let w = w.next_power_of_two();
            if w > 4 || b % w != 0 || u32::from(b) + u32::from(w) > u32::from(RZ) {
                return Err(Refusal::MisalignedTuple {
                    opcode: ins.opcode.clone(),
                    at: ins.offset,
                    width: w,
                    reg: b,
                });
            }
            for r in b..b + w {
                size[r as usize] = size[r as usize].max(w);
            }
        }
    }
    Ok(size)
}

/// The group of every register (by number) and the groups in order, from the tuple widths.
fn form(size: &[u8; 256]) -> (Vec<Option<Group>>, Vec<Group>) {
    let mut group_of = vec![None; 256];
    let mut groups = Vec::new();
    let mut r = 0usize;
    while r < 255 {
        if size[r] == 0 {
            r += 1;
            continue;
        }
        // The largest block size among the registers of the aligned block at r.
        let mut s = size[r];
        loop {
            let start = r - r % s as usize;
            let s2 = (start..start + s as usize)
                .map(|k| size[k])
                .max()
                .unwrap_or(s);
            if s2 == s {
                break;
            }
            s = s2;
        }
        let start = r - r % s as usize;
        let g = Group {
            start: start as u8,
            size: s,
        };
        for x in &mut group_of[start..start + s as usize] {
            *x = Some(g);
        }
        if groups.last() != Some(&g) {
            groups.push(g);
        }
        r = start + s as usize;
    }
    (group_of, groups)
}

/// The groups `ins` names (sorted, distinct).
pub(super) fn named_by(ins: &Instr, group_of: &[Option<Group>]) -> BTreeSet<Group> {
    regs_of(ins)
        .iter()
        .flat_map(|&(b, w, _, _)| (b..b + w).filter_map(|r| group_of[r as usize]))
        .collect()
}

/// The kernel's sub-functions as the selection sees them: their registers are renumbered
/// with the kernel's (one numbering for the section, so calls keep meeting their callees'
/// registers) but never demoted (nothing is inserted into them).
#[derive(Default)]
pub(crate) struct Callees<'a> {
    /// Each sub-function with the register fields of its instructions.
    pub(crate) code: Vec<(&'a Function, Vec<RegFields>)>,
    /// Per kernel instruction index of a call: the registers the callee may read before
    /// writing them, and those it writes on every path.
    pub(crate) calls: BTreeMap<usize, (BTreeSet<u8>, BTreeSet<u8>)>,
}

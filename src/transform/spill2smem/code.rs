//! The new code: each moved spill's shared access, and the instructions inserted around
//! the original ones (the base register's prologue, the extra words of split wide accesses,
//! the stack's moves around calls).

use std::collections::BTreeSet;

use super::liveness::Calls;
use super::place::{Placement, Registers};
use super::scan::{Section, Spills};
use super::words::{Access, drain, move_templates, move_word, shared_word};
use crate::sass::Op;
use crate::sass::encode;
use crate::transform::area::Options;
use crate::transform::prologue::{self, Shape};
use crate::transform::stack;
use crate::transform::{TransformError, not_applicable};

/// Instructions to insert: `(original offset, words)`, each run before the instruction at
/// that offset.
pub(super) type Insertion = (u64, Vec<[u8; 16]>);

/// The spill accesses that move to shared memory, and what stays in local memory.
pub(super) struct Moved {
    pub(super) accesses: Vec<Access>,
    /// Spill instructions left in local memory.
    pub(super) kept_local: usize,
    /// Bytes those instructions move.
    pub(super) kept_local_bytes: u64,
}

/// The inserted code in order, the prologue first.
pub(super) struct Insertions {
    pub(super) list: Vec<Insertion>,
    /// Words of the prologue (the base is set after its last).
    pub(super) prologue: usize,
}

/// The accesses of the words with slots (those of words carrying values between
/// functions, or left out of a partial move, stay local).
pub(super) fn accesses(spills: &Spills, placed: &Placement) -> Result<Moved, TransformError> {
    let accesses: Vec<Access> = spills
        .list
        .iter()
        .filter_map(|&(fi, ins, imm, width)| {
            Some(Access {
                offset: ins.offset,
                raw: ins.raw,
                load: ins.op() == Op::Ldl,
                imms: (0..i64::from(width))
                    .map(|k| Some(placed.area.imm(placed.plan.slot(fi, imm / 4 + k)?)))
                    .collect::<Option<Vec<u32>>>()?,
            })
        })
        .collect();
    let kept_local = spills.list.len() - accesses.len();
    let moved: BTreeSet<u64> = accesses.iter().map(|a| a.offset).collect();
    let kept_local_bytes = spills
        .list
        .iter()
        .filter(|s| !moved.contains(&s.1.offset))
        .map(|s| 4 * u64::from(s.3))
        .sum();
    if accesses.is_empty() {
        return Err(not_applicable(
            "every spill carries a value between functions (kept in local memory)",
        ));
    }
    Ok(Moved {
        accesses,
        kept_local,
        kept_local_bytes,
    })
}

/// The prologue at the kernel's entry, and the words after the first of each split access.
pub(super) fn prologue_and_splits(
    sm: u32,
    opts: &Options,
    regs: &Registers,
    accesses: &[Access],
) -> Insertions {
    let pro = prologue::spill_base(
        Shape {
            sm,
            one_d: opts.one_d,
        },
        regs.base,
        regs.t0,
        regs.t1,
    );
    let prologue = pro.words.len();
    let mut list: Vec<Insertion> = vec![(0, pro.words)];
    for a in accesses {
        if a.imms.len() > 1 {
            let extra = (1..a.imms.len())
                .map(|k| encode::to_bytes(shared_word(a, k, regs.base)))
                .collect();
            list.push((a.offset + 16, extra));
        }
    }
    Insertions { list, prologue }
}

/// Compressible stack: live variables in a callee's way move below its base around the
/// call (a load and a store through the scratch register before, and back after).
pub(super) fn stack_moves(
    sec: &Section,
    spills: &Spills,
    calls: &Calls,
    placed: &Placement,
    base: u8,
) -> Result<Vec<Insertion>, TransformError> {
    let (lay, area) = (&placed.plan.lay, &placed.area);
    let c0 = placed.plan.passed_slot.len() as u32;
    let scratch = base + 1;
    let templates = move_templates(&spills.list);
    let mut list = Vec::new();
    for (fi, f) in sec.funcs.iter().enumerate() {
        for (k, c) in calls.live.calls[fi].iter().enumerate() {
            let ms = &lay.moves[fi][k];
            if ms.is_empty() {
                continue;
            }
            let (ld, st) =
                templates.ok_or_else(|| not_applicable("no spill load and store to copy"))?;
            let call = &f.instrs[c.at];
            if sec
                .funcs
                .iter()
                .flat_map(|g| g.instrs.iter())
                .any(|i| i.target == Some(call.offset))
            {
                return Err(not_applicable(format!(
                    "the call at {:#x} is a branch target: moves before it would be skipped",
                    call.offset
                )));
            }
            let home = |m: &stack::Move| area.imm(c0 + lay.base[fi] + lay.pos[fi][m.var]);
            let away = |m: &stack::Move| area.imm(c0 + lay.base[fi] + m.to);
            let copy = |from: u32, to: u32| {
                [
                    encode::to_bytes(move_word(ld, scratch, base, from, true)),
                    encode::to_bytes(move_word(st, scratch, base, to, false)),
                ]
            };
            // Each run of moves ends in a NOP that waits for the last store to have read
            // `scratch`: a callee (or the code after) may write it at once.
            let before = ms
                .iter()
                .flat_map(|m| copy(home(m), away(m)))
                .chain([drain()])
                .collect();
            let after = ms
                .iter()
                .flat_map(|m| copy(away(m), home(m)))
                .chain([drain()])
                .collect();
            list.push((call.offset, before));
            list.push((call.offset + 16, after));
        }
    }
    Ok(list)
}

//! The step of an original instruction's image that is not a spill move (module doc, "Every
//! other original instruction"): same opcode, guard and operands up to register numbers;
//! what the original reads must hold its symbols in the image's locations, and what it
//! writes moves there.

use super::claim::{Check, Rejection, reject};
use super::section::Section;
use super::semantics::{
    access_bytes, addr_of, as_move, code_operands, guard_loc, is_nop, may_store_local, op_reads,
    op_writes, parse_hex, r1_imm, reads_writes, shape, sp_adjust, sub_word, words,
};
use super::state::{Loc, Sym};
use super::transfer::{Op, Step};
use crate::sass::Op as Mnemonic;
use crate::sass::ir::{Instr, OperandKind};

impl<'a> Section<'a> {
    /// The step of image `r` of original instruction `k` of function `fk`.
    pub(super) fn image_step(&self, fk: usize, k: usize, r: &Instr) -> Result<Step, Rejection> {
        let a = &self.orig[fk].instrs[k];
        let name = &self.rew[fk].name;
        if let Some(m) = as_move(a) {
            return self.move_step(fk, name, a, &m, r);
        }
        // Same instruction up to register numbers.
        same_opcode(name, a, r)?;
        let mut ops = Vec::new();
        let guarded_step = guard_ops(name, a, r, "the original", &mut ops)?;
        let (mut wpairs, mut rew_writes) = self.operand_ops(fk, name, a, r, &mut ops)?;
        let guarded = false;
        let frame_ops = self.local_ops(fk, a, &mut ops, &mut wpairs, &mut rew_writes);
        // A store of whole words (same data, checked) makes them equal in both programs; a
        // sub-word or misaligned one keeps the rest of the word as it was.
        let partial_local = a.op() == Mnemonic::Stl
            && (sub_word(a) || addr_of(a).and_then(r1_imm).is_none_or(|imm| imm % 4 != 0));
        if a.is_call() {
            self.call_ops(fk, a, r, guarded, &mut ops)?;
        } else {
            ops.push(Op::Write {
                clear: rew_writes,
                defs: wpairs,
                keep_if_held: partial_local,
            });
        }
        ops.extend(frame_ops);
        // R1 updates.
        let (_, wa) = reads_writes(a);
        if !a.is_call() && wa.contains(&Loc::R(1)) {
            match sp_adjust(a) {
                Some(d) => ops.push(Op::ShiftFrame(d)),
                None => ops.push(Op::ResetFrame),
            }
        }
        // RET: what the original writes must be right.
        if a.op() == Mnemonic::Ret {
            self.return_needs(fk, &mut ops);
        }
        Ok(Step {
            ops,
            guarded: guarded_step,
            is_call: a.is_call(),
            ..Step::default()
        })
    }

    /// Operands pair up (same kind, role, width and text up to register numbers;
    /// immediates equal but for control targets and return addresses): each location the
    /// original reads must hold its symbol in the image's; the written pairs (original,
    /// image) and the image's written locations.
    #[allow(clippy::type_complexity)]
    fn operand_ops(
        &self,
        fk: usize,
        name: &str,
        a: &Instr,
        r: &Instr,
        ops: &mut Vec<Op>,
    ) -> Result<(Vec<(Loc, Option<Loc>)>, Vec<Loc>), Rejection> {
        if a.operands.len() != r.operands.len() {
            return reject(
                Check::Image,
                name,
                r.offset,
                format!(
                    "`{}` has {} operands, the original {}",
                    r.opcode,
                    r.operands.len(),
                    a.operands.len()
                ),
            );
        }
        let control = code_operands(a);
        let mut wpairs: Vec<(Loc, Option<Loc>)> = Vec::new();
        let mut rew_writes: Vec<Loc> = Vec::new();
        for (n, (oa, or)) in a.operands.iter().zip(&r.operands).enumerate() {
            let differs = || {
                reject(
                    Check::Image,
                    name,
                    r.offset,
                    format!(
                        "operand {} is `{}`, the original's `{}`",
                        n + 1,
                        or.text,
                        oa.text
                    ),
                )
            };
            if std::mem::discriminant(&oa.kind) != std::mem::discriminant(&or.kind)
                || oa.role != or.role
                || oa.width != or.width
            {
                return differs();
            }
            let same_shape = shape(&oa.text) == shape(&or.text);
            let imm_ok = match (&oa.kind, &or.kind) {
                (OperandKind::Imm(x), OperandKind::Imm(y)) if x != y => {
                    control || self.return_address(fk, x, y)
                }
                (OperandKind::Label(x), OperandKind::Label(y)) if x != y => control,
                _ => same_shape,
            };
            if !imm_ok
                || (!same_shape && !matches!(oa.kind, OperandKind::Imm(_) | OperandKind::Label(_)))
            {
                return differs();
            }
            // RZ/PT stay themselves.
            let ra = op_reads(oa, a.unknown);
            let rr = op_reads(or, a.unknown);
            let wa = op_writes(oa, a.unknown);
            let wr = op_writes(or, a.unknown);
            if ra.len() != rr.len() || wa.len() != wr.len() {
                return differs();
            }
            for (la, lr) in ra.iter().zip(&rr) {
                ops.push(Op::Need {
                    loc: *lr,
                    sym: Sym::Orig(*la),
                    what: format!("operand {} (`{}`)", n + 1, oa.text),
                });
            }
            for (la, lr) in wa.iter().zip(&wr) {
                wpairs.push((*la, Some(*lr)));
                rew_writes.push(*lr);
            }
        }
        Ok((wpairs, rew_writes))
    }

    /// Local words through `[R1+imm]` that are not spill moves (sub-word, odd offsets): a
    /// load needs them to hold their own value, a store writes them in place; an indexed
    /// access needs or clobbers the whole frame, as does any store that may reach an escaped
    /// frame. The frame ops that follow the step's write.
    fn local_ops(
        &self,
        fk: usize,
        a: &Instr,
        ops: &mut Vec<Op>,
        wpairs: &mut Vec<(Loc, Option<Loc>)>,
        rew_writes: &mut Vec<Loc>,
    ) -> Vec<Op> {
        let mut frame_ops = Vec::new();
        if matches!(a.op(), Mnemonic::Ldl | Mnemonic::Stl)
            && let Some(oa) = addr_of(a)
        {
            match r1_imm(oa) {
                Some(imm) => {
                    for w in words(imm, access_bytes(a)) {
                        if a.op() == Mnemonic::Ldl {
                            ops.push(Op::Need {
                                loc: Loc::Local(w),
                                sym: Sym::Orig(Loc::Local(w)),
                                what: "the local word it loads".into(),
                            });
                        } else {
                            wpairs.push((Loc::Local(w), Some(Loc::Local(w))));
                            rew_writes.push(Loc::Local(w));
                        }
                    }
                }
                None => {
                    if matches!(oa.kind, OperandKind::Addr { reg: Some(1), .. }) {
                        if a.op() == Mnemonic::Ldl {
                            ops.push(Op::NeedFrame);
                        } else {
                            frame_ops.push(Op::ClobberFrame);
                        }
                    }
                }
            }
        }
        if may_store_local(a)
            && self.escapes[fk]
            && !frame_ops.iter().any(|o| matches!(o, Op::ClobberFrame))
        {
            frame_ops.push(Op::ClobberFrame);
        }
        frame_ops
    }

    /// At a `RET`: each location the original writes holds its symbol where the caller
    /// looks, and so does each caller's frame word it hands back; an exported function
    /// returns everything the rewrite writes unchanged.
    fn return_needs(&self, fk: usize, ops: &mut Vec<Op>) {
        for l in self.summaries[fk].orig_writes.iter() {
            ops.push(Op::Need {
                loc: self.at_boundary(l),
                sym: Sym::Orig(l),
                what: "a location the function writes, at its return".into(),
            });
        }
        if self.orig[fk].start > 0 {
            for (w, at) in self.returned_words(&self.summaries[fk]) {
                ops.push(Op::Need {
                    loc: at,
                    sym: Sym::Orig(Loc::Local(w)),
                    what: "a word of its caller's frame the function writes, at its return".into(),
                });
            }
        }
        if self.orig[fk].start == 0 {
            for l in self.summaries[fk].rew_writes.iter() {
                ops.push(Op::Need {
                    loc: l,
                    sym: Sym::Orig(l),
                    what: "a location the rewrite writes, at the return of an exported function"
                        .into(),
                });
            }
        }
    }

    /// An immediate that differs: allowed if it is a return address or `LEPC` offset of
    /// the section, mapped. The address may lie in another function: ptxas materialises
    /// the return address of a function with one call site inside the callee itself.
    pub(super) fn return_address(&self, fk: usize, x: &str, y: &str) -> bool {
        let (Some(x), Some(y)) = (parse_hex(x), parse_hex(y)) else {
            return false;
        };
        let Some((f, i)) = std::iter::once(&self.orig[fk])
            .chain(self.orig.iter())
            .find_map(|f| Some((f, f.index_of(x)?)))
        else {
            return false;
        };
        if f.instrs[i].op() == Mnemonic::Lepc {
            return self.map(x) == Some(y);
        }
        // A return lands right after the call's image (on inserted code, if any).
        i > 0
            && f.instrs[i - 1].is_call()
            && self.map(x - 16).and_then(|m| m.checked_add(16)) == Some(y)
    }
}

/// Same opcode; an instruction the operand tables do not know must be bit-identical and
/// have parsed operands.
fn same_opcode(name: &str, a: &Instr, r: &Instr) -> Result<(), Rejection> {
    if a.unknown {
        if a.raw != r.raw {
            return reject(
                Check::Image,
                name,
                r.offset,
                format!(
                    "`{}` is not in the operand tables, so its image must be bit-identical",
                    a.opcode
                ),
            );
        }
        if a.operands.is_empty() && !is_nop(a) {
            return reject(
                Check::Image,
                name,
                r.offset,
                format!("`{}`: operands not parsed, effects unknown", a.opcode),
            );
        }
    }
    if a.opcode != r.opcode {
        return reject(
            Check::Image,
            name,
            r.offset,
            format!(
                "the original `{}` at {:#x} became `{}`",
                a.opcode, a.offset, r.opcode
            ),
        );
    }
    Ok(())
}

/// The image keeps the guard's sense (`what`: the original, for the message), and its
/// predicate must hold the original's; whether the original is guarded.
pub(super) fn guard_ops(
    name: &str,
    a: &Instr,
    r: &Instr,
    what: &str,
    ops: &mut Vec<Op>,
) -> Result<bool, Rejection> {
    let ga = a.predicate.filter(|p| !p.is_true());
    let gr = r.predicate.filter(|p| !p.is_true());
    match (ga, gr) {
        (None, None) => {}
        (Some(p), Some(q))
            if p.negated == q.negated
                && p.uniform == q.uniform
                && (p.index >= 7) == (q.index >= 7) => {}
        _ => {
            return reject(
                Check::Image,
                name,
                r.offset,
                format!("guard of {what} at {:#x} changed", a.offset),
            );
        }
    }
    if let (Some(la), Some(lr)) = (guard_loc(a), guard_loc(r)) {
        ops.push(Op::Need {
            loc: lr,
            sym: Sym::Orig(la),
            what: "the guard".into(),
        });
    }
    Ok(ga.is_some())
}

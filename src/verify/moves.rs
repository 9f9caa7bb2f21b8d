//! The step of an original spill move's image (module doc, "Spill moves"): an `STL/LDL`
//! through `R1` or an `STS/LDS` on a spill slot that copies the words the original moves,
//! followed by the original move's renaming of symbols.

use super::claim::{Check, Rejection, reject};
use super::image::guard_ops;
use super::section::Section;
use super::semantics::{Move, access_bytes, addr_of, data_of, operands_text, r1_imm, sub_word};
use super::state::{Loc, Sym};
use super::transfer::{Op, Step};
use crate::sass::Op as Mnemonic;
use crate::sass::ir::{Instr, OperandKind, RZ};

impl<'a> Section<'a> {
    /// The step of image `r` of the original spill move `a` (`m`) of function `fk`.
    pub(super) fn move_step(
        &self,
        fk: usize,
        name: &str,
        a: &Instr,
        m: &Move,
        r: &Instr,
    ) -> Result<Step, Rejection> {
        let mut ops = Vec::new();
        let want = if m.store {
            [Mnemonic::Stl, Mnemonic::Sts]
        } else {
            [Mnemonic::Ldl, Mnemonic::Lds]
        };
        if !want.contains(&r.op()) {
            return reject(
                Check::Moves,
                name,
                r.offset,
                format!(
                    "the spill move `{} {}` at {:#x} became `{} {}`",
                    a.opcode,
                    operands_text(a),
                    a.offset,
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        let guarded_step = guard_ops(name, a, r, "the spill move", &mut ops)?;
        let guarded = false;
        let Some(OperandKind::Reg(rd)) = data_of(r).map(|o| &o.kind) else {
            return reject(
                Check::Moves,
                name,
                r.offset,
                "the spill move's image has no data register",
            );
        };
        let rd = *rd;
        let rw = (access_bytes(r) / 4).max(1);
        // A zero store (module doc, "Spill moves"): every word of the image copies RZ.
        let zero = rd == RZ && m.reg == RZ;
        if (rd == RZ && !zero) || sub_word(r) || rw > i64::from(m.width) || r.operands.len() != 2 {
            return reject(
                Check::Moves,
                name,
                r.offset,
                format!(
                    "the spill move's image `{} {}` does not move the original's words",
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        let shared = matches!(r.op(), Mnemonic::Sts | Mnemonic::Lds);
        let addr_words = if shared {
            self.slot_words(name, r, &mut ops)?
        } else {
            self.frame_words(fk, name, m, r, rw, &mut ops)?
        };
        let pairs: Vec<(Loc, Loc)> = addr_words
            .iter()
            .enumerate()
            .map(|(w, &mem)| {
                let reg = Loc::R(rd.saturating_add(w as u8));
                if m.store { (mem, reg) } else { (reg, mem) }
            })
            .collect();
        if pairs
            .iter()
            .any(|(d, s)| *d == Loc::R(RZ) || (*s == Loc::R(RZ) && !zero))
        {
            return reject(Check::Moves, name, r.offset, "register pair runs past R254");
        }
        ops.push(Op::Copy { pairs, guarded });
        // The original's symbol effect.
        let sym_pairs: Vec<(Loc, Loc)> = (0..m.width)
            .map(|w| {
                let reg = Loc::R(if m.reg == RZ { RZ } else { m.reg + w });
                let mem = Loc::Local(m.imm.wrapping_add(4 * i64::from(w)));
                if m.store { (mem, reg) } else { (reg, mem) }
            })
            .collect();
        ops.push(Op::Rename {
            pairs: sym_pairs,
            guarded,
        });
        Ok(Step {
            ops,
            guarded: guarded_step,
            is_move: true,
            shared_move: shared,
            ..Step::default()
        })
    }

    /// The spill word an image `LDS/STS` moves: a slot of the claimed area, through the base
    /// register, which must hold `SBase`.
    fn slot_words(&self, name: &str, r: &Instr, ops: &mut Vec<Op>) -> Result<Vec<Loc>, Rejection> {
        let Some(slot) = self.base_slot(r) else {
            return reject(
                Check::Moves,
                name,
                r.offset,
                format!(
                    "`{} {}`: {}",
                    r.opcode,
                    operands_text(r),
                    self.slot_problem(r)
                ),
            );
        };
        let b = self.claim.base.as_ref().map_or(0, |b| b.reg);
        ops.push(Op::Need {
            loc: Loc::R(b),
            sym: Sym::SBase,
            what: "the spill area's base register".into(),
        });
        Ok(vec![Loc::Shared(slot)])
    }

    /// The frame words an image `LDL/STL [R1+imm]` moves (`rw` of them): the original's, or
    /// others the original function uses itself in a frame whose address does not escape;
    /// `R1` must hold its own value.
    fn frame_words(
        &self,
        fk: usize,
        name: &str,
        m: &Move,
        r: &Instr,
        rw: i64,
        ops: &mut Vec<Op>,
    ) -> Result<Vec<Loc>, Rejection> {
        let Some(imm) = addr_of(r).and_then(r1_imm) else {
            return reject(
                Check::Moves,
                name,
                r.offset,
                format!(
                    "the spill move's image `{} {}` is not an [R1+imm] access",
                    r.opcode,
                    operands_text(r)
                ),
            );
        };
        // Another frame word: only one the original function uses itself (never
        // outside the frame).
        if imm != m.imm && (self.escapes[fk] || !self.frame_words_ok(fk, imm, access_bytes(r))) {
            return reject(
                Check::Moves,
                name,
                r.offset,
                format!(
                    "the spill move's image `{} {}` moves to another frame word (one the original never uses, or in a frame whose address escapes)",
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        ops.push(Op::Need {
            loc: Loc::R(1),
            sym: Sym::Orig(Loc::R(1)),
            what: "the stack pointer of a local spill access".into(),
        });
        Ok((0..rw)
            .map(|w| Loc::Local(imm.wrapping_add(4 * w)))
            .collect())
    }
}

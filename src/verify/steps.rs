//! The step of every rewritten instruction of a function, and the steps of inserted
//! instructions (module doc, "Inserted instructions"): register copies, spill-slot and
//! frame moves; every other write empties its destinations.

use super::claim::{Proof, Rejection};
use super::mapping::Origin;
use super::section::Section;
use super::semantics::{
    access_bytes, addr_of, data_of, guard_loc, r1_imm, reads_writes, sp_adjust, stack_init, stores,
    sub_word, transfers_control, words,
};
use super::state::Loc;
use super::transfer::{Op, Step};
use crate::analysis::Cfg;
use crate::sass::Op as Mnemonic;
use crate::sass::ir::{Instr, OperandKind, RZ};

impl<'a> Section<'a> {
    pub(super) fn steps(&self, fk: usize, proof: &mut Proof) -> Result<Vec<Step>, Rejection> {
        let b = &self.rew[fk];
        let mut out = Vec::with_capacity(b.instrs.len());
        for (i, r) in b.instrs.iter().enumerate() {
            let mut step = match self.origins[fk][i] {
                Origin::Padding => Step::default(),
                Origin::Inserted => self.inserted_step(fk, r),
                Origin::Image(k) => self.image_step(fk, k, r)?,
            };
            if step.guarded {
                step.guard = guard_loc(r).zip(r.predicate.map(|p| p.negated));
            }
            // A call may write any predicate: it ends a run too.
            step.writes_guard = step
                .guard
                .is_some_and(|(g, _)| r.is_call() || reads_writes(r).1.contains(&g));
            out.push(step);
        }
        if let Some(end) = self.frame_setup_end(fk) {
            out[end].ops.push(Op::FreshFrame(self.fresh_passed()));
        }
        let _ = proof;
        Ok(out)
    }

    /// In a kernel, the rewritten index after which its frame is new: the last stack-pointer
    /// write of the leading run of its entry block (which nothing branches to) that stores
    /// nothing, calls nothing and transfers no control, provided that run loads the stack
    /// pointer from the constant bank (as an image of the original's load).
    pub(super) fn frame_setup_end(&self, fk: usize) -> Option<usize> {
        let (o, r) = (&self.orig[fk], &self.rew[fk]);
        if !(o.kernel && o.start == 0) || r.instrs.is_empty() {
            return None;
        }
        let cfg = Cfg::build(r);
        if cfg
            .graph
            .neighbors_directed(cfg.entry, petgraph::Direction::Incoming)
            .next()
            .is_some()
        {
            return None;
        }
        let mut init = false;
        let mut end = None;
        for (i, ins) in r.instrs.iter().enumerate() {
            if cfg.block_of[i] != cfg.entry
                || ins.unknown
                || ins.is_call()
                || transfers_control(ins)
                || stores(ins)
            {
                break;
            }
            let (reads, writes) = reads_writes(ins);
            if !writes.contains(&Loc::R(1)) {
                if reads.contains(&Loc::R(1)) {
                    break;
                }
                continue;
            }
            let image = matches!(self.origins[fk][i], Origin::Image(_));
            if image && stack_init(ins) {
                init = true;
            } else if !(init && image && sp_adjust(ins).is_some()) {
                break;
            }
            end = Some(i);
        }
        end.filter(|_| init)
    }

    /// The claim's passed words, each with a spill word of its own and in one spill word only
    /// (a spill word shared by two words could not start out equal to both, nor could two
    /// spill words, each arbitrary, both equal one word).
    pub(super) fn fresh_passed(&self) -> Vec<(i64, i64)> {
        let p = &self.claim.passed;
        p.iter()
            .filter(|(k, imm)| p.iter().all(|(k2, i2)| (i2 == imm) == (k2 == k)))
            .copied()
            .collect()
    }

    pub(super) fn inserted_step(&self, fk: usize, r: &Instr) -> Step {
        let guarded = false;
        let mut ops = Vec::new();
        let base = self.claim.base.as_ref();
        let (_, writes) = reads_writes(r);
        let regs: Vec<u8> = r
            .operands
            .iter()
            .filter_map(|o| match o.kind {
                OperandKind::Reg(x) => Some(x),
                _ => None,
            })
            .collect();
        let mods: Vec<&str> = r.modifiers().collect();
        let copy = match (r.op(), mods.as_slice(), regs.as_slice(), r.operands.len()) {
            (Mnemonic::Mov, [], [d, s], 2) if *d != RZ && *s != RZ => Some((*d, *s)),
            (Mnemonic::Imad, ["MOV", "U32"], [d, RZ, RZ, s], 4) if *d != RZ && *s != RZ => {
                Some((*d, *s))
            }
            _ => None,
        };
        if let Some((d, s)) = copy {
            ops.push(Op::Copy {
                pairs: vec![(Loc::R(d), Loc::R(s))],
                guarded,
            });
        } else if matches!(r.op(), Mnemonic::Lds | Mnemonic::Sts)
            && let Some(slot) = self.base_slot(r)
            && let Some(OperandKind::Reg(d)) = data_of(r).map(|o| &o.kind)
            && (*d != RZ || r.op() == Mnemonic::Sts)
        {
            // `STS [slot], RZ` (half of a split wide zero spill) stores RZ's zero.
            let store = r.op() == Mnemonic::Sts;
            let (dst, src) = if store {
                (Loc::Shared(slot), Loc::R(*d))
            } else {
                (Loc::R(*d), Loc::Shared(slot))
            };
            ops.push(Op::BaseCopy {
                base: Loc::R(base.map_or(0, |b| b.reg)),
                pairs: vec![(dst, src)],
                guarded,
                store,
            });
        } else if r.op() == Mnemonic::Sts {
            // Structurally checked: an STS that is not a slot access was rejected; one
            // without a register operand to a slot empties it.
            if let Some(slot) = self.base_slot(r) {
                ops.push(Op::BaseCopy {
                    base: Loc::R(base.map_or(0, |b| b.reg)),
                    pairs: vec![],
                    guarded,
                    store: true,
                });
                ops.push(Op::Write {
                    clear: vec![Loc::Shared(slot)],
                    defs: vec![],
                    keep_if_held: false,
                });
            }
        } else if matches!(r.op(), Mnemonic::Ldl | Mnemonic::Stl)
            && let Some(imm) = addr_of(r).and_then(r1_imm)
            && let Some(OperandKind::Reg(d)) = data_of(r).map(|o| &o.kind)
            && (*d != RZ || r.op() == Mnemonic::Stl)
            && !sub_word(r)
            && (*d == RZ || i64::from(*d) + (access_bytes(r) / 4).max(1) <= i64::from(RZ))
        {
            let store = r.op() == Mnemonic::Stl;
            let n = (access_bytes(r) / 4).max(1);
            let pairs = (0..n)
                .map(|w| {
                    // RZ stores zero in every word; a tuple's words are its registers
                    // (one reaching RZ is not followed: its words are emptied below).
                    let reg = Loc::R(if *d == RZ { RZ } else { *d + w as u8 });
                    let word = Loc::Local(imm.wrapping_add(4 * w));
                    if store { (word, reg) } else { (reg, word) }
                })
                .collect();
            ops.push(Op::FrameCopy {
                pairs,
                guarded,
                store,
            });
        } else {
            let mut clear = writes;
            if r.op() == Mnemonic::Stl
                && let Some(imm) = addr_of(r).and_then(r1_imm)
            {
                clear.extend(words(imm, access_bytes(r)).into_iter().map(Loc::Local));
            }
            ops.push(Op::Write {
                clear,
                defs: vec![],
                keep_if_held: false,
            });
        }
        if let Some(b) = base
            && b.defined_at == r.offset
        {
            let (_, ws) = reads_writes(r);
            ops.push(Op::Write {
                clear: ws,
                defs: vec![],
                keep_if_held: false,
            });
            ops.push(Op::SetBase(Loc::R(b.reg)));
        }
        let _ = fk;
        Step {
            ops,
            guarded: !r.always(),
            ..Step::default()
        }
    }
}

//! Correspondence (module doc, item 1): where each original instruction went in the
//! rewrite, and the structural checks on it: the rewritten code runs the original
//! instructions in the original order, control flow goes to the images of the original
//! targets, and inserted instructions are straight-line code that stores only to spill slots.

use std::collections::BTreeSet;

use super::claim::{Check, Rejection, reject};
use super::mapping::Origin;
use super::section::Section;
use super::semantics::writes_memory;
use super::semantics::{
    CallKind, access_bytes, addr_of, call_kind, hexo, no_fall_through, operands_text, r1_imm,
    sub_word, transfers_control, words,
};
use crate::sass::Op;
use crate::sass::ir::{Instr, OperandKind};

impl<'a> Section<'a> {
    /// A `BRA`/`JMP` whose rewritten target is inserted code that runs straight into the
    /// image of the original target (code inserted to run on every path into a branch
    /// target): the inserted instructions are straight-line moves, analysed on the rewritten
    /// CFG like any other path, so entering them first changes nothing the values check does
    /// not see. Other kinds of targets (`BSSY` reconvergence points, calls) must be images.
    pub(super) fn enters_before_image(&self, fk: usize, ins: &Instr, target: Option<u64>) -> bool {
        if !matches!(ins.op(), Op::Bra | Op::Jmp) {
            return false;
        }
        let (Some(t), Some(ot)) = (target, ins.target) else {
            return false;
        };
        let (Some(i), Some(k)) = (self.rew[fk].index_of(t), self.orig[fk].index_of(ot)) else {
            return false;
        };
        if !matches!(self.origins[fk][i], Origin::Inserted) {
            return false;
        }
        // Straight-line inserted instructions (no control transfer) up to the image.
        let mut j = i;
        while let Some(Origin::Inserted) = self.origins[fk].get(j) {
            if self.rew[fk].instrs[j].is_branch() || self.rew[fk].instrs[j].is_exit() {
                return false;
            }
            j += 1;
        }
        matches!(self.origins[fk].get(j), Some(Origin::Image(kk)) if *kk == k)
    }

    /// The next rewritten index at or after `i` that is not inserted or padding.
    pub(super) fn next_image(&self, fk: usize, mut i: usize) -> Option<(usize, usize)> {
        let org = &self.origins[fk];
        while i < org.len() {
            if let Origin::Image(k) = org[i] {
                return Some((i, k));
            }
            i += 1;
        }
        None
    }

    /// Structural correspondence of one function (see the module doc, "Correspondence").
    pub(super) fn correspondence(&self, fk: usize) -> Result<(), Rejection> {
        let a = &self.orig[fk];
        if a.instrs.is_empty() {
            return Ok(());
        }
        self.check_entry(fk)?;
        for (k, ins) in a.instrs.iter().enumerate() {
            let Some(i) = self.images[fk][k] else {
                continue;
            };
            self.check_fall_through(fk, k, i)?;
            self.check_targets(fk, ins, &self.rew[fk].instrs[i])?;
        }
        for (i, r) in self.rew[fk].instrs.iter().enumerate() {
            if self.origins[fk][i] == Origin::Inserted {
                self.check_inserted(fk, r)?;
            }
        }
        Ok(())
    }

    /// The first instruction that is not inserted is the image of the original's first.
    fn check_entry(&self, fk: usize) -> Result<(), Rejection> {
        let (a, b) = (&self.orig[fk], &self.rew[fk]);
        let name = &a.name;
        match self.next_image(fk, 0) {
            Some((_, 0)) => {}
            Some((i, k)) => {
                return reject(
                    Check::Correspondence,
                    name,
                    b.instrs[i].offset,
                    format!(
                        "the function now starts at the image of the original at {:#x}",
                        a.instrs[k].offset
                    ),
                );
            }
            None => {
                return reject(
                    Check::Correspondence,
                    name,
                    b.start,
                    "no image of the original entry",
                );
            }
        }
        Ok(())
    }

    /// After the image of original `k` (at rewritten `i`), when it can fall through, the
    /// next instruction that is not inserted is the image of its successor.
    fn check_fall_through(&self, fk: usize, k: usize, i: usize) -> Result<(), Rejection> {
        let (a, b) = (&self.orig[fk], &self.rew[fk]);
        let name = &a.name;
        let (ins, r) = (&a.instrs[k], &b.instrs[i]);
        // Fall-through.
        if !no_fall_through(ins) && k + 1 < a.instrs.len() && self.images[fk][k + 1].is_some() {
            match self.next_image(fk, i + 1) {
                Some((_, kk)) if kk == k + 1 => {}
                Some((j, kk)) => {
                    return reject(
                        Check::Correspondence,
                        name,
                        b.instrs[j].offset,
                        format!(
                            "after the image of {:#x} comes the image of {:#x}, not of {:#x}",
                            ins.offset,
                            a.instrs[kk].offset,
                            a.instrs[k + 1].offset
                        ),
                    );
                }
                None => {
                    return reject(
                        Check::Correspondence,
                        name,
                        r.offset,
                        format!("the image of {:#x} falls off the function", ins.offset),
                    );
                }
            }
        }
        Ok(())
    }

    /// Branch, `BSSY`, jump-table and call-jump targets of image `r` are the images of the
    /// original `ins`'s targets; a call names the same callee.
    fn check_targets(&self, fk: usize, ins: &Instr, r: &Instr) -> Result<(), Rejection> {
        let a = &self.orig[fk];
        let name = &a.name;
        // Targets.
        let op = ins.op();
        let direct = matches!(op, Op::Bra | Op::Bssy | Op::Jmp)
            || (op == Op::Call
                && matches!(
                    call_kind(ins, a, &self.names),
                    CallKind::Jump(_) | CallKind::Unknown
                )
                && ins.callee.is_none());
        if direct && ins.target != r.target {
            let want = ins.target.and_then(|t| self.map(t));
            if ins.target.is_none()
                || (r.target != want && !self.enters_before_image(fk, ins, r.target))
            {
                return reject(
                    Check::Correspondence,
                    name,
                    r.offset,
                    format!(
                        "`{}` goes to {} but the original's target {} maps to {}",
                        r.opcode,
                        hexo(r.target),
                        hexo(ins.target),
                        hexo(want)
                    ),
                );
            }
        }
        if matches!(op, Op::Bra | Op::Jmp) && ins.target.is_none_or(|t| a.index_of(t).is_none()) {
            return reject(
                Check::Correspondence,
                name,
                r.offset,
                format!("`{}` has no target inside the function", ins.opcode),
            );
        }
        if matches!(op, Op::Brx | Op::Jmx) {
            if ins.targets.is_empty() {
                return reject(
                    Check::Correspondence,
                    name,
                    r.offset,
                    "jump table with no known targets",
                );
            }
            let want: Vec<Option<u64>> = ins.targets.iter().map(|&t| self.map(t)).collect();
            let got: Vec<Option<u64>> = r.targets.iter().map(|&t| Some(t)).collect();
            if want != got {
                return reject(
                    Check::Correspondence,
                    name,
                    r.offset,
                    "jump-table targets are not the images of the original targets",
                );
            }
            if ins.targets.iter().any(|&t| a.index_of(t).is_none()) {
                return reject(
                    Check::Correspondence,
                    name,
                    r.offset,
                    "jump-table target outside the function",
                );
            }
        }
        if ins.callee != r.callee {
            return reject(
                Check::Correspondence,
                name,
                r.offset,
                format!(
                    "calls `{}` instead of `{}`",
                    r.callee.as_deref().unwrap_or("?"),
                    ins.callee.as_deref().unwrap_or("?")
                ),
            );
        }
        Ok(())
    }

    /// An inserted instruction is known to the operand tables, transfers no control and
    /// stores only to a spill slot.
    fn check_inserted(&self, fk: usize, r: &Instr) -> Result<(), Rejection> {
        let name = &self.orig[fk].name;
        let op = r.op();
        if r.unknown {
            return reject(
                Check::Correspondence,
                name,
                r.offset,
                format!("inserted `{}` is not in the operand tables", r.opcode),
            );
        }
        if transfers_control(r) {
            return reject(
                Check::Correspondence,
                name,
                r.offset,
                format!("inserted `{}` transfers control or synchronises", r.opcode),
            );
        }
        let store_ok = match op {
            Op::Sts => self.base_slot(r).is_some(),
            Op::Stl => self.inserted_local_ok(fk, r),
            _ => true,
        };
        let stores = writes_memory(r);
        if stores && !(store_ok && matches!(op, Op::Sts | Op::Stl)) {
            return reject(
                Check::Correspondence,
                name,
                r.offset,
                format!(
                    "inserted `{} {}` stores to memory that is not a spill slot",
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        Ok(())
    }

    /// `[base.reg + imm]`, 32-bit, `imm` a slot: the slot's offset.
    pub(super) fn base_slot(&self, r: &Instr) -> Option<i64> {
        let b = self.claim.base.as_ref()?;
        let a = addr_of(r)?;
        let OperandKind::Addr {
            reg: Some(reg),
            reg_width: 1,
            ureg: None,
            ureg_width: _,
            desc: None,
            imm,
        } = a.kind
        else {
            return None;
        };
        let stride = i64::from(b.stride);
        let ok = reg == b.reg
            && !a.text.contains(".X")
            && access_bytes(r) == 4
            && !sub_word(r)
            && imm >= i64::from(b.area)
            && (imm - i64::from(b.area)) % stride == 0
            && imm - i64::from(b.area) < stride * i64::from(b.slots)
            && r.operands.len() == 2;
        ok.then_some(imm)
    }

    /// Why a `[base.reg + ...]` access is not a slot access, for messages.
    pub(super) fn slot_problem(&self, r: &Instr) -> String {
        let Some(b) = self.claim.base.as_ref() else {
            return "no spill area is claimed".into();
        };
        let Some(a) = addr_of(r) else {
            return "no address".into();
        };
        match a.kind {
            OperandKind::Addr { reg, imm, .. } if reg == Some(b.reg) => {
                if access_bytes(r) != 4 {
                    format!(
                        "a {}-byte access to the per-thread spill words",
                        access_bytes(r)
                    )
                } else {
                    format!(
                        "offset {imm:#x} is not a slot (stride {:#x}, {} slots)",
                        b.stride, b.slots
                    )
                }
            }
            _ => format!("address `{}` is not based on R{}", a.text, b.reg),
        }
    }

    /// An inserted `STL [R1+imm]` may only write words the original function uses itself,
    /// in a function whose frame address does not escape.
    pub(super) fn inserted_local_ok(&self, fk: usize, r: &Instr) -> bool {
        let Some(imm) = addr_of(r).and_then(r1_imm) else {
            return false;
        };
        !self.escapes[fk] && !sub_word(r) && self.frame_words_ok(fk, imm, access_bytes(r))
    }

    /// Every word of `[R1+imm]`, `bytes` wide, is one the original function itself
    /// accesses through `[R1+imm]`.
    pub(super) fn frame_words_ok(&self, fk: usize, imm: i64, bytes: i64) -> bool {
        let used: BTreeSet<i64> = self.orig[fk]
            .instrs
            .iter()
            .filter(|i| matches!(i.op(), Op::Ldl | Op::Stl))
            .filter_map(|i| {
                let imm = addr_of(i).and_then(r1_imm)?;
                Some(words(imm, access_bytes(i)))
            })
            .flatten()
            .collect();
        words(imm, bytes).iter().all(|w| used.contains(w))
    }
}

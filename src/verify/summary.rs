//! Callee summaries, computed callees first (recursion is rejected): the locations the
//! original and the rewritten function may write, its live-in (`liveness.rs`), the
//! registers it writes on every path to its returns, and the caller's frame words it reads
//! and writes. A call site is checked against its callee's summary, and the callee's own
//! check at each `RET` licenses it.

use std::collections::{BTreeMap, BTreeSet};

use super::claim::{Check, Rejection, reject};
use super::regset::{RegLocs, SharedWrites};
use super::section::{Section, Summary};
use super::semantics::{CallKind, access_bytes, addr_of, call_kind, r1_imm, reads_writes, words};
use super::state::Loc;
use crate::analysis::Cfg;
use crate::sass::Op;
use crate::sass::ir::{Instr, OperandKind};

impl<'a> Section<'a> {
    pub(super) fn summarize(&mut self) -> Result<(), Rejection> {
        let n = self.orig.len();
        // Callees first; recursion rejected.
        let mut order = Vec::new();
        let mut mark = vec![0u8; n];
        for k in 0..n {
            self.visit(k, &mut mark, &mut order)?;
        }
        let subs: Vec<usize> = (0..n).filter(|&k| self.orig[k].start > 0).collect();
        let has_indirect = self.orig.iter().enumerate().any(|(k, f)| {
            f.instrs.iter().any(|i| {
                i.is_call() && call_kind(i, &self.orig[k], &self.names) == CallKind::Indirect
            })
        });
        self.has_indirect = has_indirect;
        if !self.claim.renamed.is_empty() {
            if has_indirect {
                return reject(
                    Check::Summary,
                    &self.orig[0].name,
                    0,
                    "registers renumbered across functions in a section with indirect calls",
                );
            }
            // A function called from outside the section sees its callers' numbering.
            if let Some(f) = self.orig.iter().find(|f| f.start == 0 && !f.kernel) {
                return reject(
                    Check::Summary,
                    &f.name,
                    0,
                    "registers renumbered in a function that is not a kernel",
                );
            }
        }
        for &k in &order {
            let s = self.summary_of(k, has_indirect.then_some(&subs[..]));
            self.summaries[k] = s;
        }
        // An indirect call may enter any sub-function: each must write no register its
        // original does not (so the caller's other registers survive).
        if has_indirect {
            for &k in &subs {
                let s = &self.summaries[k];
                let mut extra = s.rew_writes;
                for l in s.orig_writes.iter() {
                    if let Some(i) = RegLocs::index(l) {
                        extra.0[i / 64] &= !(1 << (i % 64));
                    }
                }
                if let Some(l) = extra.iter().next() {
                    return reject(
                        Check::Summary,
                        &self.orig[k].name,
                        0,
                        format!(
                            "may be called indirectly, and its rewrite writes {l}, which the original does not"
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    pub(super) fn visit(
        &self,
        k: usize,
        mark: &mut [u8],
        order: &mut Vec<usize>,
    ) -> Result<(), Rejection> {
        match mark[k] {
            2 => return Ok(()),
            1 => {
                return reject(
                    Check::Summary,
                    &self.orig[k].name,
                    0,
                    "recursion (the function reaches a call to itself) is not supported",
                );
            }
            _ => {}
        }
        mark[k] = 1;
        for f in [&self.orig[k], &self.rew[k]] {
            for ins in &f.instrs {
                if ins.is_call()
                    && let CallKind::Direct(c) = call_kind(ins, f, &self.names)
                {
                    if mark[c] == 1 {
                        return reject(
                            Check::Summary,
                            &f.name,
                            ins.offset,
                            format!("recursive call of `{}` is not supported", self.orig[c].name),
                        );
                    }
                    self.visit(c, mark, order)?;
                }
            }
        }
        mark[k] = 2;
        order.push(k);
        Ok(())
    }

    /// Summaries of function `k` (its callees' are done). `subs`: the sub-functions an
    /// indirect call may enter, when the section has indirect calls.
    pub(super) fn summary_of(&self, k: usize, subs: Option<&[usize]>) -> Summary {
        let unknown_writes = RegLocs::below(self.count[k]);
        let mut s = Summary::default();
        // Writes.
        for (f, rew) in [(&self.orig[k], false), (&self.rew[k], true)] {
            let mut w = RegLocs::default();
            let mut sh = SharedWrites::default();
            for ins in &f.instrs {
                let (_, ws) = reads_writes(ins);
                for l in ws {
                    w.insert(l);
                }
                if rew
                    && ins.op() == Op::Sts
                    && let Some(imm) = self.sts_word(ins)
                {
                    sh.words.insert(imm);
                }
                if ins.is_call() {
                    match call_kind(ins, f, &self.names) {
                        CallKind::Direct(c) => {
                            let cs = &self.summaries[c];
                            w.union_with(if rew { &cs.rew_writes } else { &cs.orig_writes });
                            sh.union_with(&cs.rew_shared);
                        }
                        CallKind::Jump(_) => {}
                        CallKind::Indirect | CallKind::Unknown => {
                            w.union_with(&unknown_writes);
                            if rew {
                                // Registers above the count may be written by a rewritten
                                // sub-function entered indirectly.
                                for &g in subs.unwrap_or(&[]) {
                                    if g != k {
                                        w.union_with(&self.summaries[g].rew_writes);
                                    }
                                }
                            }
                            sh.all = true;
                        }
                    }
                }
            }
            if rew {
                s.rew_writes = w;
                s.rew_shared = sh;
            } else {
                s.orig_writes = w;
            }
        }
        s.must_writes = self.must_writes(k);
        s.live_in = self.live_in(k, &s.orig_writes, subs);
        s.orig_local_writes = self.local_writes(k, false);
        s.rew_local_writes = self.local_writes(k, true);
        let returned: BTreeSet<i64> = self
            .returned_words(&s)
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        s.live_in_local = self.live_in_local(k, Some(&returned));
        s
    }

    /// [`Summary::orig_local_writes`] / `rew_local_writes` of function `k` (callees'
    /// summaries done). Whether it keeps its own frame is the original's structure (the ABI
    /// assumption): a rewrite that writes `R1` where the original does not gets no pass for
    /// the frame words it stores.
    pub(super) fn local_writes(&self, k: usize, rew: bool) -> Option<BTreeSet<i64>> {
        if self.orig[k]
            .instrs
            .iter()
            .any(|i| !i.is_call() && reads_writes(i).1.contains(&Loc::R(1)))
        {
            return Some(BTreeSet::new());
        }
        let f = if rew { &self.rew[k] } else { &self.orig[k] };
        let mut out = BTreeSet::new();
        for ins in &f.instrs {
            if ins.op() == Op::Stl {
                let a = addr_of(ins)?;
                if let OperandKind::Addr { reg: Some(1), .. } = a.kind {
                    out.extend(words(r1_imm(a)?, access_bytes(ins)));
                }
            }
            if ins.is_call() {
                match call_kind(ins, f, &self.names) {
                    CallKind::Direct(c) => {
                        let s = &self.summaries[c];
                        out.extend(
                            if rew {
                                &s.rew_local_writes
                            } else {
                                &s.orig_local_writes
                            }
                            .clone()?,
                        );
                    }
                    CallKind::Indirect => return None,
                    CallKind::Jump(_) | CallKind::Unknown => {}
                }
            }
        }
        Some(out)
    }

    /// Where the rewrite keeps the caller's frame word `w` at a function boundary: its spill
    /// word when the claim passes it there, else the word itself.
    pub(super) fn passed_loc(&self, w: i64) -> Loc {
        self.claim
            .passed
            .iter()
            .find(|p| p.0 == w)
            .map_or(Loc::Local(w), |p| Loc::Shared(p.1))
    }

    /// The caller's frame words a function hands back, with where: those it may write that
    /// the claim passes in a spill word, or that the rewrite still writes in the frame. (A
    /// word the rewrite moved elsewhere is the function's own: its new value is claimed
    /// nowhere after a call.)
    pub(super) fn returned_words(&self, s: &Summary) -> Vec<(i64, Loc)> {
        let (Some(o), Some(r)) = (&s.orig_local_writes, &s.rew_local_writes) else {
            return Vec::new();
        };
        o.iter()
            .filter_map(|&w| {
                let at = self.passed_loc(w);
                (at != Loc::Local(w) || r.contains(&w)).then_some((w, at))
            })
            .collect()
    }

    /// The word an `STS [reg+imm]` writes when `reg` is the claimed base (any offset; for
    /// summaries).
    pub(super) fn sts_word(&self, ins: &Instr) -> Option<i64> {
        let b = self.claim.base.as_ref()?;
        match addr_of(ins)?.kind {
            OperandKind::Addr {
                reg: Some(r), imm, ..
            } if r == b.reg => Some(imm),
            _ => None,
        }
    }

    /// General registers original function `k` writes on every path to its returns
    /// (through its direct callees' too); none without a return.
    pub(super) fn must_writes(&self, k: usize) -> BTreeSet<u8> {
        let f = &self.orig[k];
        let cfg = Cfg::build(f);
        let call_defs: BTreeMap<usize, BTreeSet<u8>> = f
            .instrs
            .iter()
            .enumerate()
            .filter_map(|(i, ins)| match call_kind(ins, f, &self.names) {
                CallKind::Direct(c) if ins.is_call() => {
                    Some((i, self.summaries[c].must_writes.clone()))
                }
                _ => None,
            })
            .collect();
        let defined = crate::analysis::must_defined(f, &cfg, &call_defs);
        let mut out: Option<BTreeSet<u8>> = None;
        for (i, ins) in f.instrs.iter().enumerate() {
            if ins.op() == Op::Ret {
                out = Some(match out {
                    None => defined[i].clone(),
                    Some(o) => o.intersection(&defined[i]).copied().collect(),
                });
            }
        }
        out.unwrap_or_default()
    }
}

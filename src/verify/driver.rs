//! The driver: for each rewritten function, the entry state, the fixed point over its CFG
//! (block states joined by [`State::meet`]), then one checking pass in address order.

use std::collections::BTreeSet;

use petgraph::graph::NodeIndex;

use super::claim::{Check, Proof, Rejection, reject};
use super::section::Section;
use super::state::{Loc, Set, State, Sym};
use super::transfer::GuardRun;
use crate::analysis::Cfg;

impl<'a> Section<'a> {
    pub(super) fn run(&self) -> Result<Proof, Rejection> {
        let mut proof = Proof {
            inserted: self.inserted.len(),
            ..Proof::default()
        };
        for fk in 0..self.rew.len() {
            self.run_function(fk, &mut proof)?;
            proof.functions += 1;
        }
        Ok(proof)
    }

    pub(super) fn entry_state(&self, fk: usize) -> State {
        let mut s = State::entry();
        if !self.claim.renamed.is_empty() {
            // A sub-function's live-in arrives renumbered (each call site checked it); a
            // kernel's registers hold arbitrary values at entry, so any numbering of them
            // is one the original could have started with.
            let touched: BTreeSet<u8> = self
                .claim
                .renamed
                .iter()
                .flat_map(|(&a, &b)| [a, b])
                .collect();
            for &x in &touched {
                s.set(Loc::R(x), Set::new());
            }
            for &x in &touched {
                s.add(self.at_boundary(Loc::R(x)), Sym::Orig(Loc::R(x)));
            }
        }
        if let Some(b) = &self.claim.base
            && self.orig[fk].start > 0
        {
            s.add(Loc::R(b.reg), Sym::SBase);
            // What every direct call of this function checked it receives (indirect calls
            // check nothing of the kind, so a section with them gets nothing here).
            if !self.has_indirect
                && let Some(ws) = &self.summaries[fk].live_in_local
            {
                for (k, imm) in self.fresh_passed() {
                    if ws.contains(&k) {
                        s.add(Loc::Shared(imm), Sym::Orig(Loc::Local(k)));
                    }
                }
            }
        }
        s
    }

    pub(super) fn run_function(&self, fk: usize, proof: &mut Proof) -> Result<(), Rejection> {
        let f = &self.rew[fk];
        if f.instrs.is_empty() {
            return Ok(());
        }
        let steps = self.steps(fk, proof)?;
        let cfg = Cfg::build(f);
        let nb = cfg.graph.node_count();
        let mut ins: Vec<Option<State>> = vec![None; nb];
        ins[cfg.entry.index()] = Some(self.entry_state(fk));
        let mut work: BTreeSet<usize> = BTreeSet::from([cfg.entry.index()]);
        let mut visits = 0usize;
        while let Some(bi) = work.pop_first() {
            visits += 1;
            let id = NodeIndex::new(bi);
            let Some(mut st) = ins[bi].clone() else {
                continue;
            };
            let block = cfg.graph[id];
            let mut out: Vec<(usize, State)> = Vec::new();
            let mut run = GuardRun::default();
            for step in &steps[block.first..block.end] {
                let jumps = run.apply(step, &mut st, false).unwrap_or_default();
                for j in jumps {
                    out.push((cfg.block_of[j].index(), st.clone()));
                }
            }
            run.end(&mut st);
            for s in cfg.successors(id) {
                out.push((s.index(), st.clone()));
            }
            for (to, s) in out {
                let changed = match &mut ins[to] {
                    slot @ None => {
                        *slot = Some(s);
                        true
                    }
                    Some(cur) => cur.meet(&s),
                };
                if changed {
                    work.insert(to);
                }
            }
        }
        proof.iterations += visits;
        // The checking pass, in address order.
        let mut order: Vec<(usize, NodeIndex)> =
            cfg.blocks().map(|(id, b)| (b.first, id)).collect();
        order.sort();
        for (_, id) in order {
            let Some(mut st) = ins[id.index()].clone() else {
                continue;
            };
            let block = cfg.graph[id];
            let mut run = GuardRun::default();
            for (step, ins) in steps[block.first..block.end]
                .iter()
                .zip(&f.instrs[block.first..block.end])
            {
                if let Err(reason) = run.apply(step, &mut st, true) {
                    return reject(Check::Values, &f.name, ins.offset, reason);
                }
                proof.instructions += 1;
                proof.moves += usize::from(step.is_move);
                proof.shared_moves += usize::from(step.shared_move);
                proof.calls += usize::from(step.is_call);
            }
        }
        Ok(())
    }
}

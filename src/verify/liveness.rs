//! Backward liveness over an original function's CFG, for its summary: the registers and
//! the frame words live into it (what a call of it must hand over unchanged).

use std::collections::BTreeSet;

use super::regset::RegLocs;
use super::section::Section;
use super::semantics::{
    CallKind, access_bytes, addr_of, call_kind, r1_imm, reads_writes, sub_word, words,
};
use super::state::Loc;
use crate::analysis::Cfg;
use crate::sass::Op;
use crate::sass::ir::OperandKind;

impl<'a> Section<'a> {
    /// Frame words live into original function `k` (backward over its CFG: `LDL [R1+imm]`
    /// reads its words, an unguarded whole-word `STL [R1+imm]` writes them, a direct call
    /// reads its callee's). `None` if `k` writes `R1`, accesses the frame through `R1` with
    /// an index, or calls a function whose words are unknown.
    pub(super) fn live_in_local(
        &self,
        k: usize,
        ret_reads: Option<&BTreeSet<i64>>,
    ) -> Option<BTreeSet<i64>> {
        let f = &self.orig[k];
        if f.instrs.is_empty() {
            return Some(BTreeSet::new());
        }
        type UseDef = (BTreeSet<i64>, BTreeSet<i64>, Option<usize>);
        let mut ud: Vec<UseDef> = Vec::with_capacity(f.instrs.len());
        for ins in &f.instrs {
            let (_, ws) = reads_writes(ins);
            if ws.contains(&Loc::R(1)) {
                return None;
            }
            let mut uses = BTreeSet::new();
            let mut defs = BTreeSet::new();
            let mut jump = None;
            if matches!(ins.op(), Op::Ldl | Op::Stl) {
                let a = addr_of(ins)?;
                if let OperandKind::Addr { reg: Some(1), .. } = a.kind {
                    let imm = r1_imm(a)?;
                    let ws = words(imm, access_bytes(ins));
                    if ins.op() == Op::Ldl {
                        uses.extend(ws);
                    } else if ins.always() && !sub_word(ins) {
                        defs.extend(ws);
                    }
                }
            }
            if ins.is_call() {
                match call_kind(ins, f, &self.names) {
                    CallKind::Direct(c) => uses.extend(self.summaries[c].live_in_local.clone()?),
                    CallKind::Jump(t) => jump = f.index_of(t),
                    CallKind::Indirect | CallKind::Unknown => {}
                }
            }
            // A return hands back the caller's words the function may write: on a path
            // that does not write one, it must still hold what it held at entry.
            if ins.op() == Op::Ret {
                uses.extend(ret_reads.into_iter().flatten().copied());
            }
            ud.push((uses, defs, jump));
        }
        let cfg = Cfg::build(f);
        let mut live_in: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); f.instrs.len()];
        let blocks: Vec<_> = cfg.blocks().collect();
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let mut live = BTreeSet::new();
                for s in cfg.successors(id) {
                    live.extend(live_in[cfg.graph[s].first].iter().copied());
                }
                for i in (b.first..b.end).rev() {
                    let (u, d, j) = &ud[i];
                    if let Some(j) = j {
                        live.extend(live_in[*j].iter().copied());
                    }
                    for w in d {
                        live.remove(w);
                    }
                    live.extend(u.iter().copied());
                    if live != live_in[i] {
                        live_in[i] = live.clone();
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Some(live_in.swap_remove(0))
    }

    /// Registers live into original function `k` (backward, over its CFG; a `RET` reads
    /// `orig_writes`; calls read their callee's live-in, unknown calls everything below the
    /// count; guarded writes kill nothing, an unguarded direct call what its callee writes
    /// on every path).
    pub(super) fn live_in(
        &self,
        k: usize,
        orig_writes: &RegLocs,
        subs: Option<&[usize]>,
    ) -> RegLocs {
        let f = &self.orig[k];
        if f.instrs.is_empty() {
            return RegLocs::default();
        }
        let cfg = Cfg::build(f);
        let n = f.instrs.len();
        let ud: Vec<(RegLocs, RegLocs, Option<usize>)> = f
            .instrs
            .iter()
            .map(|ins| {
                let (r, w) = reads_writes(ins);
                let mut uses = RegLocs::default();
                for l in r {
                    uses.insert(l);
                }
                let mut defs = RegLocs::default();
                let mut jump = None;
                if ins.is_call() {
                    match call_kind(ins, f, &self.names) {
                        CallKind::Direct(c) => {
                            uses.union_with(&self.summaries[c].live_in);
                            if ins.always() {
                                for &r in &self.summaries[c].must_writes {
                                    defs.insert(Loc::R(r));
                                }
                            }
                        }
                        CallKind::Jump(t) => jump = f.index_of(t),
                        CallKind::Indirect => {
                            uses.union_with(&RegLocs::below(self.count[k]));
                            for &g in subs.unwrap_or(&[]) {
                                if g != k {
                                    uses.union_with(&self.summaries[g].live_in);
                                }
                            }
                        }
                        CallKind::Unknown => {
                            uses.union_with(&RegLocs::below(self.count[k]));
                        }
                    }
                } else {
                    if ins.op() == Op::Ret {
                        uses.union_with(orig_writes);
                    }
                    if ins.always() {
                        for l in w {
                            defs.insert(l);
                        }
                    }
                }
                (uses, defs, jump)
            })
            .collect();
        let mut live_in = vec![RegLocs::default(); n];
        let blocks: Vec<_> = cfg.blocks().collect();
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let mut live = RegLocs::default();
                for s in cfg.successors(id) {
                    let first = cfg.graph[s].first;
                    live.union_with(&live_in[first]);
                }
                for i in (b.first..b.end).rev() {
                    let (u, d, j) = &ud[i];
                    if let Some(j) = j {
                        let t = live_in[*j];
                        live.union_with(&t);
                    }
                    for l in d.iter() {
                        if let Some(x) = RegLocs::index(l) {
                            live.0[x / 64] &= !(1 << (x % 64));
                        }
                    }
                    live.union_with(u);
                    if live != live_in[i] {
                        live_in[i] = live;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        live_in[0]
    }
}

//! Liveness of the general registers in one function of a kernel's section, as register
//! demotion needs it: a call reads its callee's live-in and kills what the callee writes on
//! every path; a return reads what the function may write (as the checker's summaries do); a
//! `CALL` to a label of the function itself (ptxas' loop-exit idiom, a jump [`Cfg`] has no
//! edge for) carries its target's live registers; guarded writes kill nothing. [`Effect`] (what
//! a call does to its caller's registers) is defined here and computed by [`super::calls`].
//!
//! This is a conservative view, not nvdisasm's (`analysis::liveness`, docs/sass.md): where
//! nvdisasm ends a register at a guarded write or at a call's ABI clobbers, it stays live
//! here; a call follows its callee's code, where nvdisasm's ABI has it read R0 and keep
//! R2, R16-R31, R36-R39, ... (ptxas's own sub-functions return values there). So every
//! register `nvdisasm -plr` has live into an instruction is live before it here, R1 aside
//! and, in kernels with calls, R0 and those ABI-preserved registers
//! (tests/oracles/liveness_oracle.rs, through [`super::kernel_liveness`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::Cfg;
use crate::sass::Op;
use crate::sass::ir::Function;

/// One function's effect on the caller's registers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Effect {
    /// Registers it may read before writing them.
    pub(crate) reads: BTreeSet<u8>,
    /// Registers it may write.
    pub(crate) may_write: BTreeSet<u8>,
    /// Registers written on every path from its entry to each of its returns.
    pub(crate) writes: BTreeSet<u8>,
}

/// Live registers before and after each instruction.
#[derive(Debug, Clone, Default)]
pub(crate) struct Live {
    pub(crate) before: Vec<BTreeSet<u8>>,
    pub(crate) after: Vec<BTreeSet<u8>>,
}

/// Liveness of `f`; `called`: the effect of the function each call instruction calls;
/// `ret_reads`: what a `RET` reads.
pub fn liveness(
    f: &Function,
    cfg: &Cfg,
    called: &BTreeMap<usize, &Effect>,
    ret_reads: &BTreeSet<u8>,
) -> Live {
    let n = f.instrs.len();
    let ud: Vec<(BTreeSet<u8>, BTreeSet<u8>, Option<usize>)> = f
        .instrs
        .iter()
        .enumerate()
        .map(|(k, ins)| {
            let mut uses: BTreeSet<u8> = ins.gpr_reads().into_iter().collect();
            let mut defs = BTreeSet::new();
            let mut jump = None;
            if let Some(e) = called.get(&k) {
                uses.extend(e.reads.iter().copied());
                if ins.always() {
                    defs.extend(e.writes.iter().copied());
                }
            } else if ins.is_call() {
                if ins.callee.is_none() {
                    jump = ins.target.and_then(|t| f.index_of(t));
                }
            } else if ins.op() == Op::Ret {
                uses.extend(ret_reads.iter().copied());
            } else if ins.always() {
                defs.extend(ins.gpr_writes());
            }
            (uses, defs, jump)
        })
        .collect();
    let mut live = Live {
        before: vec![BTreeSet::new(); n],
        after: vec![BTreeSet::new(); n],
    };
    let blocks: Vec<_> = cfg.blocks().collect();
    loop {
        let mut changed = false;
        for &(id, b) in blocks.iter().rev() {
            let mut out = BTreeSet::new();
            for s in cfg.successors(id) {
                out.extend(live.before[cfg.graph[s].first].iter().copied());
            }
            for i in (b.first..b.end).rev() {
                let (u, d, j) = &ud[i];
                if let Some(j) = j {
                    out.extend(live.before[*j].iter().copied());
                }
                if out != live.after[i] {
                    live.after[i] = out.clone();
                    changed = true;
                }
                out.retain(|r| !d.contains(r));
                out.extend(u.iter().copied());
                if out != live.before[i] {
                    live.before[i] = out.clone();
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    live
}

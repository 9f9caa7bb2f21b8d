//! What a kernel's calls do to its registers, as the selection needs it: for each function
//! of the section, the registers it may read before writing them (its live-in, through its
//! own calls too; a return counts as reading every register the function may write, as the
//! checker's summaries do) and the registers it writes on every path to its returns (which
//! a call of it kills, in the checker's liveness too).
//!
//! The selection uses these at each `CALL` of the kernel: the live-in as registers the call
//! reads, the sure writes as registers it defines, so a register read after a call that
//! defined it is not taken for one read undefined.

use std::collections::{BTreeMap, BTreeSet};

use super::live::{Effect, liveness};
use crate::analysis::{Cfg, must_defined};
use crate::sass::Op;
use crate::sass::ir::Function;

/// Effects of `funcs` (indexed like it), computed callees first along `order` (callers
/// before callees, as `section::call_order` gives it; functions not in it get none).
pub(crate) fn effects(funcs: &[&Function], order: &[usize]) -> Vec<Effect> {
    let mut out = vec![Effect::default(); funcs.len()];
    for &k in order.iter().rev() {
        let f = funcs[k];
        let called = called(f, funcs, &out);
        let mut may_write: BTreeSet<u8> = BTreeSet::new();
        for (n, ins) in f.instrs.iter().enumerate() {
            may_write.extend(ins.gpr_writes());
            if let Some(e) = called.get(&n) {
                may_write.extend(e.may_write.iter().copied());
            }
        }
        let cfg = Cfg::build(f);
        let call_defs: BTreeMap<usize, BTreeSet<u8>> =
            called.iter().map(|(&n, e)| (n, e.writes.clone())).collect();
        let defined = must_defined(f, &cfg, &call_defs);
        let mut writes: Option<BTreeSet<u8>> = None;
        for (n, ins) in f.instrs.iter().enumerate() {
            if ins.op() == Op::Ret {
                writes = Some(match writes {
                    None => defined[n].clone(),
                    Some(w) => w.intersection(&defined[n]).copied().collect(),
                });
            }
        }
        let reads = liveness(f, &cfg, &called, &may_write)
            .before
            .first()
            .cloned()
            .unwrap_or_default();
        out[k] = Effect {
            reads,
            writes: writes.unwrap_or_default(),
            may_write,
        };
    }
    out
}

/// Per instruction index of `f` that calls a function of `funcs`: that function's effect
/// (from `effects`, indexed like `funcs`).
pub(crate) fn called<'a>(
    f: &Function,
    funcs: &[&Function],
    effects: &'a [Effect],
) -> BTreeMap<usize, &'a Effect> {
    f.instrs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.is_call())
        .filter_map(|(n, i)| {
            let c = i.callee.as_deref()?;
            let at = funcs.iter().position(|g| g.name == c)?;
            Some((n, effects.get(at)?))
        })
        .collect()
}

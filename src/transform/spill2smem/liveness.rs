//! Spill-word liveness across the section's calls: which words each function reads before
//! writing, which are live when a call returns, and which carry values between functions.

use std::collections::{BTreeMap, BTreeSet};

use super::Spill;
use super::scan::{Section, Spills, r1_access};
use crate::analysis::Cfg;
use crate::sass::Op;
use crate::sass::ir::{Function, Instr};
use crate::transform::section::call_order;
use crate::transform::{TransformError, not_applicable};

/// The section's calls as the slots need them.
pub(super) struct Calls {
    /// Functions reached from the kernel, callers first (the kernel first).
    pub(super) order: Vec<usize>,
    pub(super) live: WordLiveness,
    /// Words carrying values between functions ([`cross_words`]).
    pub(super) cross: BTreeSet<i64>,
}

/// The call tree and the liveness of the spill words along it. Refused where a function
/// spills but the kernel does not call it (or the tree is not one: recursion).
pub(super) fn calls(sec: &Section, spills: &Spills) -> Result<Calls, TransformError> {
    let funcs = &sec.funcs;
    let (order, callees) = call_order(funcs, sec.entry)?;
    if let Some(i) =
        (0..funcs.len()).find(|&i| !order.contains(&i) && !spills.words_of[i].is_empty())
    {
        return Err(not_applicable(format!(
            "`{}` spills but is not called from the kernel",
            funcs[i].name
        )));
    }
    let index: BTreeMap<&str, usize> = funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let live = word_liveness(funcs, &order, &index, &spills.offsets);
    let cross = cross_words(
        funcs,
        &order,
        &callees,
        &live,
        &spills.words_of,
        &spills.list,
    );
    Ok(Calls { order, live, cross })
}

/// A call of an in-section function and the spill words live right after it.
pub(super) struct CallSite {
    /// Index of the `CALL` in its function.
    pub(super) at: usize,
    pub(super) callee: usize,
    pub(super) live_out: BTreeSet<i64>,
}

/// Spill-word liveness: the words each function reads before writing (through its callees
/// too) and, per call, the words live when it returns.
pub(super) struct WordLiveness {
    pub(super) live_in: Vec<BTreeSet<i64>>,
    pub(super) calls: Vec<Vec<CallSite>>,
}

/// Backward liveness of the frame's spill words in every function, callees first (a call
/// reads what its callee's live-in names). Only the annotated spill accesses count: the
/// words of other local accesses are kept apart from them.
fn word_liveness(
    funcs: &[&Function],
    order: &[usize],
    index: &BTreeMap<&str, usize>,
    spills: &[u64],
) -> WordLiveness {
    let n = funcs.len();
    let mut live_in = vec![BTreeSet::new(); n];
    let mut calls: Vec<Vec<CallSite>> = (0..n).map(|_| Vec::new()).collect();
    // Transfer of one instruction, backwards.
    let step = |ins: &Instr, live: &mut BTreeSet<i64>, live_in: &[BTreeSet<i64>]| {
        if spills.contains(&ins.offset)
            && let Some((imm, width)) = r1_access(ins)
        {
            let words = (0..i64::from(width)).map(|k| imm / 4 + k);
            if ins.op() == Op::Ldl {
                live.extend(words);
            } else if ins.always() {
                for w in words {
                    live.remove(&w);
                }
            }
        }
        if let Some(c) = ins.callee.as_deref().and_then(|c| index.get(c)) {
            live.extend(live_in[*c].iter().copied());
        }
    };
    for &fi in order.iter().rev() {
        let f = funcs[fi];
        let cfg = Cfg::build(f);
        let blocks: Vec<_> = cfg.graph.node_indices().collect();
        let mut block_in: BTreeMap<_, BTreeSet<i64>> =
            blocks.iter().map(|&b| (b, BTreeSet::new())).collect();
        let block_out = |b, block_in: &BTreeMap<_, BTreeSet<i64>>| {
            cfg.successors(b)
                .flat_map(|s| block_in[&s].iter().copied())
                .collect::<BTreeSet<i64>>()
        };
        loop {
            let mut changed = false;
            for &b in blocks.iter().rev() {
                let mut live = block_out(b, &block_in);
                let blk = cfg.graph[b];
                for ins in f.instrs[blk.first..blk.end].iter().rev() {
                    step(ins, &mut live, &live_in);
                }
                if block_in[&b] != live {
                    block_in.insert(b, live);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        live_in[fi] = block_in[&cfg.entry].clone();
        let mut sites = Vec::new();
        for &b in &blocks {
            let mut live = block_out(b, &block_in);
            let blk = cfg.graph[b];
            for (i, ins) in f.instrs[blk.first..blk.end].iter().enumerate().rev() {
                if let Some(&c) = ins.callee.as_deref().and_then(|c| index.get(c)) {
                    sites.push(CallSite {
                        at: blk.first + i,
                        callee: c,
                        live_out: live.clone(),
                    });
                }
                step(ins, &mut live, &live_in);
            }
        }
        sites.sort_by_key(|c| c.at);
        calls[fi] = sites;
    }
    WordLiveness { live_in, calls }
}

/// Words that carry a value from one function to another: read by a callee before it
/// writes them (a return address the caller spilled), or live across a call whose callees
/// touch them; and words the kernel reads before any write. Each gets a slot of its own,
/// the same in every function; so do the other words of any access that touches one.
fn cross_words(
    funcs: &[&Function],
    order: &[usize],
    callees: &[BTreeSet<usize>],
    live: &WordLiveness,
    words_of: &[BTreeSet<i64>],
    spills: &[Spill],
) -> BTreeSet<i64> {
    // The kernel's own live-in too: a word read before any write (the never-stored half of
    // a wide reload) holds an arbitrary value, which the checker lets start in its slot.
    let mut cross: BTreeSet<i64> = order
        .iter()
        .flat_map(|&f| live.live_in[f].iter().copied())
        .collect();
    // Words each function and its callees touch (callees first).
    let mut touched: Vec<BTreeSet<i64>> = words_of.to_vec();
    for &f in order.iter().rev() {
        let below: Vec<i64> = callees[f]
            .iter()
            .flat_map(|&c| touched[c].iter().copied())
            .collect();
        touched[f].extend(below);
    }
    for f in 0..funcs.len() {
        for c in &live.calls[f] {
            cross.extend(c.live_out.intersection(&touched[c.callee]).copied());
        }
    }
    loop {
        let before = cross.len();
        for &(_, _, imm, width) in spills {
            let ws: Vec<i64> = (0..i64::from(width)).map(|k| imm / 4 + k).collect();
            if ws.iter().any(|w| cross.contains(w)) {
                cross.extend(ws);
            }
        }
        if cross.len() == before {
            return cross;
        }
    }
}

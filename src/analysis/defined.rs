//! Must-defined general registers: the registers written on every path to each
//! instruction. `regdem` uses it to find registers read where they may hold their
//! entry value, and both it and the checker to know what a call always writes.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::Direction;

use super::Cfg;
use crate::sass::ir::Function;

/// Registers written on every path to each instruction (guarded writes do not count).
/// `call_defs`: per instruction index of a call, what its callee writes on every path. A
/// `CALL` to a label of the function itself (ptxas' loop-exit idiom) is a jump, which
/// [`Cfg`] has no edge for: its state flows to the target here.
pub(crate) fn must_defined(
    f: &Function,
    cfg: &Cfg,
    call_defs: &BTreeMap<usize, BTreeSet<u8>>,
) -> Vec<BTreeSet<u8>> {
    let n = f.instrs.len();
    let all: BTreeSet<u8> = (0..=254).collect();
    let blocks: Vec<_> = cfg.blocks().collect();
    let reachable = cfg.reachable();
    let defs = |k: usize, s: &mut BTreeSet<u8>| {
        let ins = &f.instrs[k];
        if ins.always() {
            s.extend(ins.gpr_writes());
            if let Some(d) = call_defs.get(&k) {
                s.extend(d.iter().copied());
            }
        }
    };
    // (source index, target index) of the call-jumps.
    let jumps: Vec<(usize, usize)> = f
        .instrs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.is_call() && i.callee.is_none())
        .filter_map(|(k, i)| Some((k, f.index_of(i.target?)?)))
        .collect();
    let mut out: BTreeMap<usize, BTreeSet<u8>> = BTreeMap::new();
    for (b, _) in &blocks {
        out.insert(b.index(), all.clone());
    }
    let mut at_jump: BTreeMap<usize, BTreeSet<u8>> =
        jumps.iter().map(|&(k, _)| (k, all.clone())).collect();
    let input = |b: petgraph::graph::NodeIndex,
                 out: &BTreeMap<usize, BTreeSet<u8>>,
                 at_jump: &BTreeMap<usize, BTreeSet<u8>>| {
        if b == cfg.entry {
            return BTreeSet::new();
        }
        let mut acc: Option<BTreeSet<u8>> = None;
        let mut meet = |o: &BTreeSet<u8>| {
            acc = Some(match acc.take() {
                None => o.clone(),
                Some(a) => a.intersection(o).copied().collect(),
            });
        };
        for p in cfg.graph.neighbors_directed(b, Direction::Incoming) {
            if reachable[p.index()] {
                meet(&out[&p.index()]);
            }
        }
        for &(k, t) in &jumps {
            if cfg.block_of[t] == b && cfg.graph[b].first == t && reachable[cfg.block_of[k].index()]
            {
                meet(&at_jump[&k]);
            }
        }
        acc.unwrap_or_default()
    };
    loop {
        let mut changed = false;
        for (b, blk) in &blocks {
            let mut s = input(*b, &out, &at_jump);
            for k in blk.first..blk.end {
                if let Some(j) = at_jump.get_mut(&k)
                    && *j != s
                {
                    *j = s.clone();
                    changed = true;
                }
                defs(k, &mut s);
            }
            if out[&b.index()] != s {
                out.insert(b.index(), s);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut before = vec![BTreeSet::new(); n];
    for (b, blk) in &blocks {
        let mut s = input(*b, &out, &at_jump);
        for (k, slot) in before.iter_mut().enumerate().take(blk.end).skip(blk.first) {
            *slot = s.clone();
            defs(k, &mut s);
        }
    }
    before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Family;
    use crate::sass::control::Control;
    use crate::sass::ir::{Instr, Pred};
    use crate::sass::operands;

    fn ins(k: usize, guard: Option<u8>, opcode: &str, ops: &str) -> Instr {
        let mut i = Instr {
            offset: 16 * k as u64,
            raw: 0,
            opcode: opcode.into(),
            predicate: guard.map(|index| Pred {
                uniform: false,
                index,
                negated: false,
            }),
            operands: operands::parse(ops).expect("parses"),
            ctrl: Control::default(),
            target: None,
            targets: Vec::new(),
            callee: None,
            unknown: false,
        };
        i.unknown = !operands::apply(Family::Turing, &mut i);
        i
    }

    fn function(instrs: Vec<Instr>) -> Function {
        Function {
            name: "k".into(),
            section: 1,
            start: 0,
            instrs,
            kernel: true,
            regs: Some(16),
            abi_regs: None,
            abi_files: None,
            marked: Default::default(),
        }
    }

    #[test]
    fn guarded_writes_and_calls_and_call_jumps() {
        // 0: MOV R2      1: @P0 MOV R3     2: CALL $f (always writes R4)
        // 3: @P0 CALL.REL.NOINC 6 (a jump, taken before R5 is written)
        // 4: MOV R5      5: BRA 6          6: EXIT (reached with and without R5)
        let mut f = function(vec![
            ins(0, None, "MOV", "R2, 0x1"),
            ins(1, Some(0), "MOV", "R3, 0x1"),
            ins(2, None, "CALL.REL.NOINC", ""),
            ins(3, Some(0), "CALL.REL.NOINC", ""),
            ins(4, None, "MOV", "R5, 0x1"),
            ins(5, None, "BRA", ""),
            ins(6, None, "EXIT", ""),
        ]);
        f.instrs[2].callee = Some("$k$f".into());
        f.instrs[2].target = Some(0x100);
        f.instrs[3].target = Some(0x60);
        f.instrs[5].target = Some(0x60);
        let cfg = Cfg::build(&f);
        let calls = BTreeMap::from([(2, BTreeSet::from([4u8]))]);
        let d = must_defined(&f, &cfg, &calls);
        assert_eq!(d[1], BTreeSet::from([2]));
        // The guarded write does not count; the call's sure write does.
        assert_eq!(d[3], BTreeSet::from([2, 4]));
        assert_eq!(d[5], BTreeSet::from([2, 4, 5]));
        // The call-jump's path joins at the target without R5.
        assert_eq!(d[6], BTreeSet::from([2, 4]));
        // Without the call's effect, R4 is not defined.
        let d = must_defined(&f, &cfg, &BTreeMap::new());
        assert_eq!(d[6], BTreeSet::from([2]));
    }
}

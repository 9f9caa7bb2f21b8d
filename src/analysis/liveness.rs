//! Liveness of the general registers (R0 to R254; `RZ` is not a register) per instruction,
//! and the live count `nvdisasm -plr` prints in its GPR `#` column.
//!
//! The count at an instruction is the number of registers live into it or written by it.
//! `R1` (the stack pointer) counts everywhere: nvdisasm treats it as live out of every exit.
//! A guarded write (`@P0 MOV R2, ...`) does not end the register's earlier value.

use crate::sass::ir::{Function, Instr, OperandKind, Pred};

use super::cfg::{Cfg, Edge};

/// A set of general registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RegSet([u64; 4]);

impl RegSet {
    pub fn insert(&mut self, r: u8) {
        self.0[(r / 64) as usize] |= 1 << (r % 64);
    }
    pub fn remove(&mut self, r: u8) {
        self.0[(r / 64) as usize] &= !(1 << (r % 64));
    }
    pub fn contains(&self, r: u8) -> bool {
        self.0[(r / 64) as usize] & (1 << (r % 64)) != 0
    }
    pub fn union(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
    pub fn intersect(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
    pub fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=254u8).filter(|&r| self.contains(r))
    }
    pub fn from_regs(rs: impl IntoIterator<Item = u8>) -> RegSet {
        let mut s = RegSet::default();
        for r in rs {
            s.insert(r);
        }
        s
    }
}

/// Whether a write under the guard of the block's closing branch ends the old value on the
/// taken path. nvdisasm does so in some blocks and not in others (see tests/sass_decode.rs);
/// off, every guarded write keeps the old value, which matches more of its counts.
const PREDICATE_AWARE: bool = false;

/// The stack pointer.
pub const SP: u8 = 1;

/// Per-instruction liveness of one function.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Registers live into each instruction.
    pub live_in: Vec<RegSet>,
    /// Registers live out of each instruction.
    pub live_out: Vec<RegSet>,
    /// Registers each instruction writes.
    pub defs: Vec<RegSet>,
    /// Registers written on some path from the function's entry to each instruction.
    pub defined_in: Vec<RegSet>,
}

/// What an instruction reads and writes, for liveness, in a function of `regs` registers.
///
/// Calls follow nvdisasm's ABI model (checked on the call kernels of tests/sass_decode.rs): a
/// `CALL` reads R0 and R1 and writes R0 and R3 to R15 (those below the register count); R2
/// and R16 up are kept by the callee, so a `RET` reads R2 and R16 to R31.
pub fn use_def(ins: &Instr, regs: u32) -> (RegSet, RegSet, bool) {
    let mut uses = RegSet::from_regs(ins.gpr_reads());
    let mut defs = RegSet::from_regs(ins.gpr_writes());
    let below = |r: u8| u32::from(r) < regs;
    if ins.is_call() {
        uses.insert(0);
        uses.insert(SP);
        for r in std::iter::once(0).chain(3..=15).filter(|&r| below(r)) {
            defs.insert(r);
        }
        return (uses, defs, true);
    }
    if ins.base() == "RET" {
        for r in std::iter::once(2).chain(16..=31).filter(|&r| below(r)) {
            uses.insert(r);
        }
    }
    (uses, defs, ins.always())
}

impl Liveness {
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        let n = f.instrs.len();
        let regs = f.regs.unwrap_or(255);
        let ud: Vec<(RegSet, RegSet, bool)> = f.instrs.iter().map(|i| use_def(i, regs)).collect();
        let mut exit_live = RegSet::default();
        exit_live.insert(SP);
        let nb = cfg.graph.node_count();
        let mut block_in = vec![RegSet::default(); nb];
        let mut live_in = vec![RegSet::default(); n];
        let mut live_out = vec![RegSet::default(); n];
        let blocks: Vec<_> = cfg.blocks().collect();
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let live = block_pass(
                    f,
                    cfg,
                    &ud,
                    id,
                    b,
                    &block_in,
                    exit_live,
                    &mut live_in,
                    &mut live_out,
                );
                if live != block_in[id.index()] {
                    block_in[id.index()] = live;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Registers some path from the entry has written (forward, union at joins).
        let mut block_def = vec![RegSet::default(); nb];
        let mut defined_in = vec![RegSet::default(); n];
        loop {
            let mut changed = false;
            for &(id, b) in &blocks {
                let mut d = RegSet::default();
                for p in cfg
                    .graph
                    .neighbors_directed(id, petgraph::Direction::Incoming)
                {
                    d = d.union(&block_def[p.index()]);
                }
                for i in b.first..b.end {
                    defined_in[i] = d;
                    d = d.union(&ud[i].1);
                }
                if d != block_def[id.index()] {
                    block_def[id.index()] = d;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Liveness {
            live_in,
            live_out,
            defined_in,
            defs: ud.into_iter().map(|(_, d, _)| d).collect(),
        }
    }

    /// Registers live into instruction `i` or written by it (what `nvdisasm -plr` counts).
    pub fn occupied(&self, i: usize) -> RegSet {
        self.live_in[i].union(&self.defs[i])
    }

    /// The count `nvdisasm -plr` prints at instruction `i`.
    pub fn count(&self, i: usize) -> u32 {
        self.occupied(i).len()
    }

    /// The largest count over the function.
    pub fn max_live(&self) -> u32 {
        (0..self.live_in.len())
            .map(|i| self.count(i))
            .max()
            .unwrap_or(0)
    }
}

fn apply(live: &mut RegSet, (u, d, kills): &(RegSet, RegSet, bool), kill: bool) {
    if *kills || kill {
        for r in d.iter() {
            live.remove(r);
        }
    }
    *live = live.union(u);
}

/// The predicate register an instruction writes, as (uniform, index).
fn writes_pred(ins: &Instr, p: Pred) -> bool {
    ins.unknown
        || ins.operands.iter().any(|o| {
            o.role.writes()
                && match o.kind {
                    OperandKind::Pred { index, .. } => !p.uniform && index == p.index,
                    OperandKind::UPred { index, .. } => p.uniform && index == p.index,
                    OperandKind::SpecialReg(ref s) => s == "PR",
                    _ => false,
                }
        })
}

/// One backward pass over block `b`; returns the live-in of the block.
///
/// A block that ends in a guarded `BRA`/`EXIT` (`@!P1 BRA`) is walked along its two paths
/// separately back to the last write of the guard: an instruction under the same guard runs
/// only on the taken path (and there its write ends the earlier value). An instruction under
/// the opposite guard counts on both paths, its write ending nothing, as nvdisasm has it. nvdisasm's liveness does the same (a `@!P1 IMAD R6`
/// before `@!P1 BRA` does not make R6 live above it when the fall-through path rewrites R6).
#[allow(clippy::too_many_arguments)]
fn block_pass(
    f: &Function,
    cfg: &Cfg,
    ud: &[(RegSet, RegSet, bool)],
    id: petgraph::graph::NodeIndex,
    b: super::cfg::Block,
    block_in: &[RegSet],
    exit_live: RegSet,
    live_in: &mut [RegSet],
    live_out: &mut [RegSet],
) -> RegSet {
    let last = &f.instrs[b.end - 1];
    let guard = last
        .predicate
        .filter(|p| !p.is_true() && matches!(last.base(), "BRA" | "EXIT"));
    let mut taken = exit_live;
    let mut fall = exit_live;
    for e in cfg.graph.edges(id) {
        use petgraph::visit::EdgeRef;
        let s = block_in[e.target().index()];
        match e.weight() {
            Edge::Branch => taken = taken.union(&s),
            _ => fall = fall.union(&s),
        }
    }
    let Some(g) = guard else {
        let mut live = taken.union(&fall);
        for i in (b.first..b.end).rev() {
            live_out[i] = live;
            apply(&mut live, &ud[i], false);
            live_in[i] = live;
        }
        return live;
    };
    // The branch itself.
    let i = b.end - 1;
    live_out[i] = taken.union(&fall);
    apply(&mut taken, &ud[i], false);
    apply(&mut fall, &ud[i], false);
    live_in[i] = taken.union(&fall);
    let mut split = true;
    for i in (b.first..b.end - 1).rev() {
        let ins = &f.instrs[i];
        if split {
            live_out[i] = taken.union(&fall);
            match ins.predicate {
                Some(p) if p == g && PREDICATE_AWARE => apply(&mut taken, &ud[i], true),
                _ => {
                    apply(&mut taken, &ud[i], false);
                    apply(&mut fall, &ud[i], false);
                }
            }
            live_in[i] = taken.union(&fall);
            if writes_pred(ins, g) {
                split = false;
                taken = live_in[i];
            }
        } else {
            live_out[i] = taken;
            apply(&mut taken, &ud[i], false);
            live_in[i] = taken;
        }
    }
    if split { taken.union(&fall) } else { taken }
}

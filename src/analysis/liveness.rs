//! Liveness of the general registers (R0 to R254; `RZ` is not a register) per instruction,
//! and the live count `nvdisasm -plr` prints in its GPR `#` column.
//!
//! The count at an instruction is the number of registers live into it or written by it.
//! `R1` (the stack pointer) counts everywhere: nvdisasm treats it as live out of every exit.
//!
//! The sets reproduce `nvdisasm -plr` register for register at every instruction of the
//! kernels of tests/sass_decode.rs, which takes two analyses, as nvdisasm has them:
//! * a fixed point over blocks of the live-in each block passes to its predecessors,
//!   path-sensitive at a closing guarded branch (`@!P1 IMAD R6, ...; @!P1 BRA` ends R6 on the
//!   taken path) and ending what any `CALL` clobbers, guarded or not (`block_in_pair`);
//! * per block, what nvdisasm shows: a plain backward walk in which no guarded write (and no
//!   guarded call) ends anything, from the successors' passed live-in, or after a guarded
//!   branch from their plain one (`show_block`).
//!
//! So [`Liveness::live_in`] is nvdisasm's view, not a conservative one: it takes the
//! clobbers of a guarded call as ended above the block that holds it (k_switch_loop's
//! `@!P0 CALL.REL.NOINC `(.L_x_7)` closing a loop: the loop counter reads as dead in the
//! loop body). A rewrite that picks free registers from it must not rely on that case.

use crate::sass::ir::{Function, Instr, OperandKind, Pred, Role};
use crate::sass::opcode::Op;

use super::cfg::{Cfg, Edge};

/// A set of general registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RegSet([u64; 4]);

impl RegSet {
    pub(crate) fn insert(&mut self, r: u8) {
        self.0[(r / 64) as usize] |= 1 << (r % 64);
    }
    pub(crate) fn remove(&mut self, r: u8) {
        self.0[(r / 64) as usize] &= !(1 << (r % 64));
    }
    pub(crate) fn contains(&self, r: u8) -> bool {
        self.0[(r / 64) as usize] & (1 << (r % 64)) != 0
    }
    pub(crate) fn union(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
    pub(crate) fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=254u8).filter(|&r| self.contains(r))
    }
    pub(crate) fn from_regs(rs: impl IntoIterator<Item = u8>) -> RegSet {
        let mut s = RegSet::default();
        for r in rs {
            s.insert(r);
        }
        s
    }
}

/// The stack pointer.
pub const SP: u8 = 1;

/// Per-instruction liveness of one function.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Registers live into each instruction.
    pub(crate) live_in: Vec<RegSet>,
    /// Registers each instruction writes.
    pub(crate) defs: Vec<RegSet>,
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
        // Even a guarded call ends what it clobbers, for what the block passes to its
        // predecessors; see `show_block` for what nvdisasm shows inside the block.
        return (uses, defs, true);
    }
    if ins.op() == Op::Ret {
        for r in std::iter::once(2).chain(16..=31).filter(|&r| below(r)) {
            uses.insert(r);
        }
    }
    (uses, defs, ins.always())
}

/// A register file, for [`Liveness::compute_file`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegFile {
    /// `R0`-`R254` (nvdisasm `-plr`: GPR).
    Gpr,
    /// `P0`-`P6` (PRED).
    Pred,
    /// `UR0`-`UR62` (UGPR).
    UGpr,
    /// `UP0`-`UP6` (UPRED).
    UPred,
}

/// What an instruction reads and writes in a register file other than the general one
/// (numbers within the file; `PT`, `UPT`, `URZ` are not registers). The guard predicate is
/// read. `PR` (`P2R`, `R2P`) stands for all of P0-P6.
pub fn use_def_file(ins: &Instr, file: RegFile) -> (RegSet, RegSet, bool) {
    let mut uses = RegSet::default();
    let mut defs = RegSet::default();
    if let Some(p) = ins.predicate
        && p.index != 7
        && ((file == RegFile::Pred && !p.uniform) || (file == RegFile::UPred && p.uniform))
    {
        uses.insert(p.index);
    }
    let mut mark = |r: u8, role: Role| {
        if role.reads() {
            uses.insert(r);
        }
        if role.writes() {
            defs.insert(r);
        }
    };
    // The clobbers every call of the fixtures has in nvdisasm's model; it clobbers more in
    // some cubins (tests/sass_decode.rs `other_register_files_match_nvdisasm_plr`).
    if ins.is_call() {
        let clobbers = match file {
            RegFile::Gpr => 0..0,
            RegFile::Pred => 0..4,
            RegFile::UGpr => 4..10,
            RegFile::UPred => 0..1,
        };
        clobbers.for_each(|r| mark(r, Role::Write));
    }
    for op in &ins.operands {
        match (&op.kind, file) {
            (OperandKind::Pred { index, .. }, RegFile::Pred)
            | (OperandKind::UPred { index, .. }, RegFile::UPred)
                if *index != 7 =>
            {
                mark(*index, op.role)
            }
            (OperandKind::SpecialReg(s), RegFile::Pred) if s == "PR" => {
                (0..7).for_each(|r| mark(r, op.role))
            }
            (OperandKind::UReg(r), RegFile::UGpr) if *r != 63 => {
                for k in 0..op.width.max(1) {
                    if r + k < 63 {
                        mark(r + k, op.role);
                    }
                }
            }
            (OperandKind::Const { ureg: Some(u), .. }, RegFile::UGpr) if *u != 63 => {
                mark(*u, Role::Read);
            }
            (
                OperandKind::Addr {
                    ureg,
                    ureg_width,
                    desc,
                    ..
                },
                RegFile::UGpr,
            ) => {
                // The operand tables give the uniform part's width (a pair in a 64-bit
                // address); a descriptor is a pair.
                if let Some(u) = ureg.filter(|&u| u != 63) {
                    for k in 0..(*ureg_width).max(1) {
                        if u + k < 63 {
                            mark(u + k, Role::Read);
                        }
                    }
                }
                if let Some(d) = desc.filter(|&d| d != 63) {
                    mark(d, Role::Read);
                    if d + 1 < 63 {
                        mark(d + 1, Role::Read);
                    }
                }
            }
            _ => {}
        }
    }
    (uses, defs, ins.always())
}

impl Liveness {
    /// Liveness of the general registers.
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        Liveness::compute_file(f, cfg, RegFile::Gpr)
    }

    /// Liveness of the registers of `file`.
    pub fn compute_file(f: &Function, cfg: &Cfg, file: RegFile) -> Liveness {
        let n = f.instrs.len();
        let regs = f.regs.unwrap_or(255);
        let ud: Vec<(RegSet, RegSet, bool)> = f
            .instrs
            .iter()
            .map(|i| match file {
                RegFile::Gpr => use_def(i, regs),
                _ => use_def_file(i, file),
            })
            .collect();
        let mut exit_live = RegSet::default();
        if file == RegFile::Gpr {
            exit_live.insert(SP);
        }
        let nb = cfg.graph.node_count();
        let blocks: Vec<_> = cfg.blocks().collect();
        // (path-sensitive, plain) live-in of every block, to a fixed point.
        let mut block_in = vec![(RegSet::default(), RegSet::default()); nb];
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let live = block_in_pair(f, cfg, &ud, id, b, &block_in, exit_live);
                if live != block_in[id.index()] {
                    block_in[id.index()] = live;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut live_in = vec![RegSet::default(); n];
        for &(id, b) in &blocks {
            show_block(f, cfg, &ud, id, b, &block_in, exit_live, &mut live_in);
        }
        Liveness {
            live_in,
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

/// Whether a block ends in a guarded branch (`@P0 BRA`, `@!P1 EXIT`).
fn guarded_end(last: &Instr) -> Option<Pred> {
    last.predicate
        .filter(|p| !p.is_true() && matches!(last.op(), Op::Bra | Op::Exit))
}

/// The live-in of block `b` from its successors' path-sensitive live-ins, twice:
/// path-sensitive (what nvdisasm passes up to predecessors) and plain (the same walk with
/// every guarded write ending nothing, used for what a guarded branch shows).
///
/// Path-sensitive: a block that ends in a guarded `BRA`/`EXIT` (`@!P1 BRA`) is walked along
/// its two paths separately back to the last write of the guard; an instruction under the
/// same guard runs only on the taken path, and there its write ends the earlier value.
fn block_in_pair(
    f: &Function,
    cfg: &Cfg,
    ud: &[(RegSet, RegSet, bool)],
    id: petgraph::graph::NodeIndex,
    b: super::cfg::Block,
    block_in: &[(RegSet, RegSet)],
    exit_live: RegSet,
) -> (RegSet, RegSet) {
    use petgraph::visit::EdgeRef;
    let mut taken = exit_live;
    let mut fall = exit_live;
    for e in cfg.graph.edges(id) {
        let s = block_in[e.target().index()].0;
        match e.weight() {
            Edge::Branch => taken = taken.union(&s),
            _ => fall = fall.union(&s),
        }
    }
    let mut plain = taken.union(&fall);
    for i in (b.first..b.end).rev() {
        apply(&mut plain, &ud[i], false);
    }
    let Some(g) = guarded_end(&f.instrs[b.end - 1]) else {
        return (plain, plain);
    };
    // The branch itself.
    apply(&mut taken, &ud[b.end - 1], false);
    apply(&mut fall, &ud[b.end - 1], false);
    let mut split = true;
    for i in (b.first..b.end - 1).rev() {
        let ins = &f.instrs[i];
        if split {
            if ins.predicate == Some(g) {
                apply(&mut taken, &ud[i], true);
            } else {
                apply(&mut taken, &ud[i], false);
                apply(&mut fall, &ud[i], false);
            }
            if writes_pred(ins, g) {
                split = false;
                taken = taken.union(&fall);
            }
        } else {
            apply(&mut taken, &ud[i], false);
        }
    }
    (if split { taken.union(&fall) } else { taken }, plain)
}

/// What nvdisasm shows at the instructions of block `b` (`live_in`).
///
/// Every guarded write ends nothing inside the block. The block's live-out is its
/// successors' path-sensitive live-in, except after a guarded branch, where it is their
/// plain one: after `BRX R8` in k_switch_loop, the target `ISETP P1; @!P1 IMAD R6, ...;
/// @!P1 BRA` shows R6 live at its first instruction but the `BRX` does not have it, and
/// x_atomics's entry block does not have the result of the `@!P1 ATOMG R7; @!P1 BRA` block
/// it falls into; but `@P0 BRA` in the sm_75 m_drcp slow path has the R7 of the
/// `@P0 LOP3.LUT R7; @P0 BRA` block it falls into (and m_dsqrt likewise R4, R5).
///
/// At a guarded call (`@!P0 CALL.REL.NOINC `(.L_x_7)`, which closes a loop body in
/// k_switch_loop on sm_80-89) the registers the call clobbers stay live above it here (the
/// call may not run), while the live-in passed to predecessors has them ended, as for an
/// unguarded call.
#[allow(clippy::too_many_arguments)]
fn show_block(
    f: &Function,
    cfg: &Cfg,
    ud: &[(RegSet, RegSet, bool)],
    id: petgraph::graph::NodeIndex,
    b: super::cfg::Block,
    block_in: &[(RegSet, RegSet)],
    exit_live: RegSet,
    live_in: &mut [RegSet],
) {
    use petgraph::visit::EdgeRef;
    let guarded = guarded_end(&f.instrs[b.end - 1]).is_some();
    let mut live = exit_live;
    for e in cfg.graph.edges(id) {
        let (ps, plain) = block_in[e.target().index()];
        live = live.union(if guarded { &plain } else { &ps });
    }
    for i in (b.first..b.end).rev() {
        let ins = &f.instrs[i];
        if ins.is_call() && !ins.always() {
            let (u, d, _) = &ud[i];
            apply(&mut live, &(*u, *d, false), false);
        } else {
            apply(&mut live, &ud[i], false);
        }
        live_in[i] = live;
    }
}

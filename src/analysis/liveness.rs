//! Liveness per instruction, as `nvdisasm -plr` shows it: the registers live into each
//! instruction or written by it, and their count (the `#` column of `-plr` and of
//! `nvdisasm -lrm count`), in each register file.
//!
//! # nvdisasm's convention
//!
//! Reverse-engineered from `-plr` on every cubin of tests/oracles/liveness_oracle.rs (about
//! 600,000 instructions, sm_75 to sm_90) and reproduced here register for register, but for
//! 3 instructions where it shows one register more (the safe side; [`Pending`]'s rule, the
//! test's `KNOWN_OVER`), never fewer:
//!
//! * A cell is marked when the register is live into the instruction (read by it or live
//!   through it) or written by it, used or not, guarded or not. `R1` is live out of every exit.
//! * `PR` (`R2P PR, R2, 0x6`, `P2R`) stands for no predicate: nvdisasm does not see them.
//! * Calls follow an ABI: a `CALL` reads R0 and R1 and writes (clobbers) every register a
//!   callee need not preserve ([`callee_saved`]: R0, R3-R15, then R32-R35, R40-R43, ...); a
//!   `RET` reads the preserved ones (R2, R16-R31, R36-R39, ...). Only registers below the
//!   function's count (`Function::abi_regs`) take part: `SHI_REGISTERS`, capped by the table's
//!   width (the highest register the cubin names, or a `RET` reads).
//! * Inside a basic block the shown sets come from a plain backward walk: a guarded write
//!   (or guarded call) ends nothing, an unguarded one ends the register.
//! * Between blocks nvdisasm passes a *tagged* live-in: each register is live with one tag,
//!   its guard literal (`@!P1`), "always" or "unknown". A use tags it with its guard; after a
//!   guarded branch (`@P0 BRA`) what the target needs is tagged `P0`, what the next block
//!   needs `!P0`; where two different literals meet, or a tagged literal's predicate is
//!   written, the tag becomes unknown; "always" wins over both. Walking a block backwards,
//!   an unguarded write (or a call, guarded or not) ends any tag, a write under `@g` ends the
//!   tags "always" and `g` (so `@P3 MOV R29` ends an R29 the next block reads unguarded, but
//!   not one live only on a `!P1` path), but never a use of the same block below it; and
//!   where the block writes `g`'s predicate above the guarded write, a register it ended
//!   the tag "always" of is live again there, tagged unknown ([`Pending`]: the conservative
//!   side). A uniform guard (`@!UP0`) counts as none.
//! * A block that ends in a guarded branch shows, for what falls through, the next block's
//!   plain live-in when that one also ends in a guarded branch (its guarded writes ending
//!   nothing); everywhere else the shown live-out is the successors' tagged live-in.
//!
//! So this is nvdisasm's view, not a conservative one: guarded writes end liveness as above,
//! and a call clobbers by the ABI whatever the callee really does. `regdem` uses its
//! own, conservative liveness (`transform::regdem::live`); the checker its own.
//!
//! Instructions the operand tables do not cover (textures, surfaces, ...) have no known
//! effects: [`Liveness::compute_marked`] takes theirs from nvdisasm's `-plr` marks
//! ([`Marked`]), which `nvcc-orion debug sass --liveness` does.

use std::collections::HashMap;

use crate::sass::decode::callee_saved;
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
    pub(crate) fn contains(&self, r: u8) -> bool {
        self.0[(r / 64) as usize] & (1 << (r % 64)) != 0
    }
    pub(crate) fn union(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
    pub(crate) fn intersect(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
    pub(crate) fn minus(&self, o: &RegSet) -> RegSet {
        RegSet(std::array::from_fn(|i| self.0[i] & !o.0[i]))
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
/// Calls follow nvdisasm's ABI model: a `CALL` reads R0 and R1 and writes every register
/// below the register count a callee may clobber ([`callee_saved`]); a `RET` reads the
/// others but R1.
pub fn use_def(ins: &Instr, regs: u32) -> (RegSet, RegSet, bool) {
    let mut uses = RegSet::from_regs(ins.gpr_reads());
    let mut defs = RegSet::from_regs(ins.gpr_writes());
    let below = |r: u8| u32::from(r) < regs;
    if ins.is_call() {
        uses.insert(0);
        uses.insert(SP);
        for r in (0..=254u8).filter(|&r| below(r) && !callee_saved(r)) {
            defs.insert(r);
        }
        // Even a guarded call ends what it clobbers, for what the block passes to its
        // predecessors; see `show_block` for what nvdisasm shows inside the block.
        return (uses, defs, true);
    }
    if ins.op() == Op::Ret {
        for r in (2..=254u8).filter(|&r| below(r) && callee_saved(r)) {
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
/// read. A call's clobbers depend on the cubin ([`call_clobbers`]) and are not included.
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
    for op in &ins.operands {
        match (&op.kind, file) {
            (OperandKind::Pred { index, .. }, RegFile::Pred)
            | (OperandKind::UPred { index, .. }, RegFile::UPred)
                if *index != 7 =>
            {
                mark(*index, op.role)
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

/// A guard as a tag index: 0 is "always", then `P0`..`P6`, each positive and negated
/// (`1 + 2 × index + negated`). nvdisasm takes a uniform guard (`@!UP0`) for none: the
/// write ends the register. (Indices up to [`UNKNOWN`] leave room for `UP0`..`UP6`.)
fn cond_of(p: Option<Pred>) -> usize {
    match p {
        Some(p) if !p.is_true() && p.index != 7 && !p.uniform => {
            1 + 2 * (7 * usize::from(p.uniform) + usize::from(p.index)) + usize::from(p.negated)
        }
        _ => 0,
    }
}

/// The other literal of the same predicate.
fn negate(c: usize) -> usize {
    if c == 0 { 0 } else { ((c - 1) ^ 1) + 1 }
}

/// Tag indices: "always" (0), the guard literals as [`cond_of`] numbers them, [`UNKNOWN`].
const TAGS: usize = 30;
/// Live under a guard that is no longer known: two literals met, or the predicate of one
/// is written above the use.
const UNKNOWN: usize = 29;

/// Registers live into a block, each with one tag (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Tagged([RegSet; TAGS]);

impl Tagged {
    fn all(&self) -> RegSet {
        self.0.iter().fold(RegSet::default(), |a, s| a.union(s))
    }

    fn always(live: RegSet) -> Tagged {
        let mut t = Tagged::default();
        t.0[0] = live;
        t
    }

    fn union(&self, o: &Tagged) -> Tagged {
        let mut t = Tagged(std::array::from_fn(|i| self.0[i].union(&o.0[i])));
        t.normalize();
        t
    }

    /// One tag per register: "always" over unknown over a literal; two different literals
    /// make it unknown.
    fn normalize(&mut self) {
        let mut seen = RegSet::default();
        let mut twice = RegSet::default();
        for l in &self.0[1..UNKNOWN] {
            twice = twice.union(&seen.intersect(l));
            seen = seen.union(l);
        }
        let always = self.0[0];
        let unknown = self.0[UNKNOWN].union(&twice).minus(&always);
        let top = always.union(&unknown);
        for l in &mut self.0[1..UNKNOWN] {
            *l = l.minus(&top);
        }
        self.0[UNKNOWN] = unknown;
    }

    /// Everything live here, tagged with literal `c` only (a path taken under it).
    fn under(&self, c: usize) -> Tagged {
        let mut t = Tagged::default();
        t.0[c] = self.all();
        t
    }

    /// The predicates of the literals in `written` (a mask of positive literals) are
    /// written: what was tagged with them is tagged unknown.
    fn flush(&mut self, written: u32) {
        if written == 0 {
            return;
        }
        for c in (1..UNKNOWN).filter(|c| written & (1 << (c - ((c - 1) & 1))) != 0) {
            let s = std::mem::take(&mut self.0[c]);
            self.0[UNKNOWN] = self.0[UNKNOWN].union(&s);
        }
        self.normalize();
    }
}

/// One instruction as the walks see it.
#[derive(Debug, Clone, Copy)]
struct Step {
    uses: RegSet,
    defs: RegSet,
    /// The guard's tag index (0: unguarded).
    guard: usize,
    /// Its writes end every tag whatever its guard (a `CALL`).
    kills_always: bool,
    /// The predicates it writes, as a mask of positive literals' tag indices.
    preds_written: u32,
}

/// Registers live "always" that a guarded write ended, per guard predicate, while the walk
/// is in its block.
///
/// nvdisasm lets `@P0 FFMA R23` end an R23 live "always" below it only while P0 keeps the
/// value the block entered with: where the block writes P0 above the guarded write
/// (`ISETP ... P0` then `@P0 FFMA R23` and `@!P0 MUFU.RCP R23`, the inlined `__frcp_rn` of
/// `lv_convert_mix` on sm_90), R23 stays live into the block, tagged unknown. That is the
/// conservative side: R23 is in fact dead there, both writes covering every path. An R23
/// live only under `P0` (tagged `P0`) is ended for good, as is what is still held at the
/// top of the block.
#[derive(Debug, Default)]
struct Pending([RegSet; 7]);

impl Pending {
    /// A write under guard tag `guard` ended `regs`, live "always" below it.
    fn hold(&mut self, guard: usize, regs: RegSet) {
        let p = (guard - 1) / 2;
        self.0[p] = self.0[p].union(&regs);
    }

    /// An unguarded write (or a call) ends `regs` for good.
    fn end(&mut self, regs: &RegSet) {
        for s in &mut self.0 {
            *s = s.minus(regs);
        }
    }

    /// The predicates of `written` (a mask of positive literals' tag indices) are written:
    /// what their guarded writes ended is live again, tagged unknown.
    fn revive(&mut self, written: u32, live: &mut Tagged) {
        for p in 0..7 {
            if written & (1 << (1 + 2 * p)) != 0 {
                let s = std::mem::take(&mut self.0[p]);
                live.0[UNKNOWN] = live.0[UNKNOWN].union(&s);
            }
        }
        live.normalize();
    }
}

impl Step {
    /// What flows through the instruction from below, backwards: written predicates make
    /// their tags unknown and take back the guarded ends of `pending` under them; an
    /// unguarded write (or a call) ends every tag, a write under `@g` ends `g` and "always",
    /// the latter only until `g`'s predicate is written above it in the block
    /// ([`Pending`]). The instruction's own uses are left to [`Step::uses`].
    fn through(&self, live: &mut Tagged, pending: &mut Pending) {
        live.flush(self.preds_written);
        pending.revive(self.preds_written, live);
        if self.guard == 0 || self.kills_always {
            for s in &mut live.0 {
                *s = s.minus(&self.defs);
            }
            pending.end(&self.defs);
            return;
        }
        // Only the end of "always" waits on the predicate: a register live under `g` alone
        // is ended by a write under `g` whatever the block does to `g` above.
        let ended = live.0[0].intersect(&self.defs);
        for k in [0, self.guard] {
            live.0[k] = live.0[k].minus(&self.defs);
        }
        pending.hold(self.guard, ended);
    }

    /// The block's own uses, backwards: each tagged with its guard; only an unguarded write
    /// ends them.
    fn uses(&self, live: &mut Tagged) {
        live.flush(self.preds_written);
        if self.guard == 0 {
            for s in &mut live.0 {
                *s = s.minus(&self.defs);
            }
        }
        live.0[self.guard] = live.0[self.guard].union(&self.uses);
        live.normalize();
    }

    /// The plain transfer: a guarded write (or guarded call) ends nothing.
    fn plain(&self, live: &mut RegSet) {
        if self.guard == 0 {
            *live = live.minus(&self.defs);
        }
        *live = live.union(&self.uses);
    }
}

/// An instruction's register effects as nvdisasm's `-plr` marks them, per register file
/// (`v`/`x`: read, `^`/`x`: written), for instructions the operand tables do not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marked {
    reads: [RegSet; 4],
    writes: [RegSet; 4],
}

impl Marked {
    /// Record register `r` of `file` as read and/or written.
    pub fn mark(&mut self, file: RegFile, r: u8, read: bool, write: bool) {
        let k = file as usize;
        if read {
            self.reads[k].insert(r);
        }
        if write {
            self.writes[k].insert(r);
        }
    }
}

impl Liveness {
    /// Liveness of the general registers.
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        Liveness::compute_file(f, cfg, RegFile::Gpr)
    }

    /// Liveness of the registers of `file`.
    pub fn compute_file(f: &Function, cfg: &Cfg, file: RegFile) -> Liveness {
        Liveness::compute_marked(f, cfg, file, &HashMap::new())
    }

    /// Liveness of the registers of `file`, the instructions at the offsets of `marked`
    /// taking their effects from it (nvdisasm's marks) instead of the operand tables.
    pub fn compute_marked(
        f: &Function,
        cfg: &Cfg,
        file: RegFile,
        marked: &HashMap<u64, Marked>,
    ) -> Liveness {
        let regs = f.abi_regs.or(f.regs).unwrap_or(255);
        let clobbers = call_clobbers(f, file);
        let steps: Vec<Step> = f
            .instrs
            .iter()
            .map(|ins| {
                let (uses, defs, _) = match (marked.get(&ins.offset), file) {
                    (Some(m), _) => (m.reads[file as usize], m.writes[file as usize], true),
                    (None, RegFile::Gpr) => use_def(ins, regs),
                    (None, _) if ins.is_call() => {
                        let (uses, defs, always) = use_def_file(ins, file);
                        (uses, defs.union(&clobbers), always)
                    }
                    (None, _) => use_def_file(ins, file),
                };
                // The predicates whose tags a write makes unknown (uniform ones tag nothing).
                let mut preds_written = 0u32;
                for index in 0..7 {
                    let p = Pred {
                        uniform: false,
                        index,
                        negated: false,
                    };
                    let written = match marked.get(&ins.offset) {
                        Some(m) => m.writes[RegFile::Pred as usize].contains(index),
                        None => writes_pred(ins, p),
                    };
                    if written {
                        preds_written |= 1 << cond_of(Some(p));
                    }
                }
                Step {
                    uses,
                    defs,
                    guard: cond_of(ins.predicate),
                    kills_always: ins.is_call(),
                    preds_written,
                }
            })
            .collect();
        let mut exit_live = RegSet::default();
        if file == RegFile::Gpr {
            exit_live.insert(SP);
        }
        let nb = cfg.graph.node_count();
        let blocks: Vec<_> = cfg.blocks().collect();
        // (tagged, plain) live-in of every block, to a fixed point.
        let mut block_in = vec![(Tagged::default(), RegSet::default()); nb];
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let live = block_in_pair(f, cfg, &steps, id, b, &block_in, exit_live);
                if live != block_in[id.index()] {
                    block_in[id.index()] = live;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut live_in = vec![RegSet::default(); f.instrs.len()];
        for &(id, b) in &blocks {
            show_block(f, cfg, &steps, id, b, &block_in, exit_live, &mut live_in);
        }
        Liveness {
            live_in,
            defs: steps.iter().map(|s| s.defs).collect(),
        }
    }

    /// Registers live into instruction `i` or written by it (what `nvdisasm -plr` marks).
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

/// The registers of a file other than the general one that nvdisasm's model has a `CALL`
/// clobber: every predicate and uniform predicate with a column in `-plr`'s table, and the
/// uniform registers UR4 to UR35 with one (`Function::abi_files`; a call reads none of
/// them, and a `RET` none).
fn call_clobbers(f: &Function, file: RegFile) -> RegSet {
    let [p, u, up] = f.abi_files.unwrap_or([7, 63, 7]);
    let range = match file {
        RegFile::Gpr => 0..0,
        RegFile::Pred => 0..p.min(7),
        RegFile::UGpr => 4..u.min(36),
        RegFile::UPred => 0..up.min(7),
    };
    let mut s = RegSet::default();
    range.for_each(|r| s.insert(r));
    s
}

/// Whether an instruction writes predicate `p` (an unknown instruction may write any).
/// nvdisasm does not see the predicates `PR` stands for (`R2P PR, R2, 0x6`, `P2R`).
fn writes_pred(ins: &Instr, p: Pred) -> bool {
    ins.unknown
        || ins.operands.iter().any(|o| {
            o.role.writes()
                && match o.kind {
                    OperandKind::Pred { index, .. } => !p.uniform && index == p.index,
                    OperandKind::UPred { index, .. } => p.uniform && index == p.index,
                    _ => false,
                }
        })
}

/// The guard of a block's last instruction when it is a guarded `BRA` or `EXIT` taken on
/// that guard alone (not `BRA.DIV`, `BRA.CONV` nor `@P0 BRA P1`; a uniform guard counts as
/// none).
fn guarded_end(last: &Instr) -> Option<Pred> {
    last.predicate.filter(|p| {
        cond_of(Some(*p)) != 0
            && matches!(last.op(), Op::Bra | Op::Exit)
            && !super::cfg::conditional_form(last)
    })
}

/// The live-in of block `b` from its successors', twice: tagged (what nvdisasm passes to
/// predecessors) and plain (what a predecessor ending in a guarded branch shows for it).
fn block_in_pair(
    f: &Function,
    cfg: &Cfg,
    steps: &[Step],
    id: petgraph::graph::NodeIndex,
    b: super::cfg::Block,
    block_in: &[(Tagged, RegSet)],
    exit_live: RegSet,
) -> (Tagged, RegSet) {
    use petgraph::visit::EdgeRef;
    let mut taken = Tagged::always(exit_live);
    let mut fall = Tagged::always(exit_live);
    for e in cfg.graph.edges(id) {
        let s = &block_in[e.target().index()].0;
        match e.weight() {
            Edge::Branch => taken = taken.union(s),
            _ => fall = fall.union(s),
        }
    }
    let guarded = guarded_end(&f.instrs[b.end - 1]);
    let mut plain = taken.all().union(&fall.all());
    let mut through = match guarded {
        Some(g) => {
            let c = cond_of(Some(g));
            taken.under(c).union(&fall.under(negate(c)))
        }
        None => taken.union(&fall),
    };
    let mut own = Tagged::default();
    let mut pending = Pending::default();
    for st in steps[b.first..b.end].iter().rev() {
        st.through(&mut through, &mut pending);
        st.uses(&mut own);
        st.plain(&mut plain);
    }
    let live = through.union(&own);
    if guarded.is_none() {
        plain = live.all();
    }
    (live, plain)
}

/// What nvdisasm shows at the instructions of block `b` (`live_in`): a plain walk from the
/// successors' tagged live-in, or, for what falls through a guarded branch, their plain one.
#[allow(clippy::too_many_arguments)]
fn show_block(
    f: &Function,
    cfg: &Cfg,
    steps: &[Step],
    id: petgraph::graph::NodeIndex,
    b: super::cfg::Block,
    block_in: &[(Tagged, RegSet)],
    exit_live: RegSet,
    live_in: &mut [RegSet],
) {
    use petgraph::visit::EdgeRef;
    let guarded = guarded_end(&f.instrs[b.end - 1]).is_some();
    let mut live = exit_live;
    for e in cfg.graph.edges(id) {
        let (tagged, plain) = &block_in[e.target().index()];
        let fall = !matches!(e.weight(), Edge::Branch);
        live = live.union(&if guarded && fall {
            *plain
        } else {
            tagged.all()
        });
    }
    for i in (b.first..b.end).rev() {
        steps[i].plain(&mut live);
        live_in[i] = live;
    }
}

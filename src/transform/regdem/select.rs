//! Which registers to demote and where everything else goes (RegDem §3.3, §3.4.3:
//! docs/papers.md §RegDem).
//!
//! * **Groups** ([`super::groups`]): aligned blocks of 1, 2 or 4 registers, demoted, moved
//!   and given value registers as a whole.
//! * **Candidates.** A group can be demoted unless it is pinned (R1, or named by an
//!   instruction whose fields are ambiguous), read where it may be undefined (ptxas reads
//!   registers under a predicate that matches the one of their only definition, and on the
//!   other path the value is the register's entry value, which no spill slot holds), read at
//!   a jump-table or reconvergence target (loads go before an instruction; only `BRA`s are
//!   redirected through them), written by an instruction whose result latency is not known,
//!   named by a control instruction, or used in a sub-function.
//! * **Strategies** (§3.4.3): order the candidates by static access count, by loop-weighted
//!   access count, or by operand conflicts (loop-weighted count scaled by how many other
//!   registers share the instructions, which need value registers at once); demote in that
//!   order until the rest fits under the target.
//! * **Compaction** (§3.3): pinned groups keep their numbers; the others, the value-register
//!   pool and the base register are packed from R0 up, largest first, each aligned to its
//!   size, so the highest register falls below the target without splitting a tuple.

use std::collections::{BTreeMap, BTreeSet};

use super::fields::RegFields;
use super::groups::{self, named_by, regs_of};
pub(crate) use super::groups::{Callees, Group};
use super::refusal::Refusal;
use crate::analysis::{Cfg, must_defined};
use crate::arch::OpClass;
use crate::arch::latency::fixed_latency;
use crate::sass::Op;
use crate::sass::ir::{Function, Instr};

/// The stack pointer: never moved or demoted.
const SP: u8 = 1;

/// A candidate ordering of §3.4.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Strategy {
    StaticCount,
    LoopWeighted,
    OperandConflicts,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [
        Strategy::StaticCount,
        Strategy::LoopWeighted,
        Strategy::OperandConflicts,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Strategy::StaticCount => "static access count",
            Strategy::LoopWeighted => "loop-weighted access count",
            Strategy::OperandConflicts => "operand conflicts",
        }
    }
}

/// What the selection knows about the function.
pub(crate) struct Analysis {
    /// Group of every register (by number), `None` when unused.
    pub(crate) group_of: Vec<Option<Group>>,
    pub(crate) groups: Vec<Group>,
    /// Groups that keep their numbers.
    pub(crate) fixed: BTreeSet<Group>,
    /// Groups that may not be demoted, with why.
    pub(crate) excluded: BTreeMap<Group, String>,
    /// Groups each instruction names (sorted, distinct).
    pub(crate) named: Vec<Vec<Group>>,
    /// Loop weight of each instruction.
    pub(crate) weight: Vec<f64>,
}

/// Whether instruction `ins` produces its registers with a known fixed latency or a
/// scoreboard the rewrite can wait on.
pub(crate) fn result_is_waitable(sm: u32, ins: &Instr) -> bool {
    ins.ctrl.write_sb.is_some() || fixed_latency(sm, ins.class()).is_some()
}

impl Analysis {
    pub fn new(
        sm: u32,
        f: &Function,
        fields: &[RegFields],
        max_group: u8,
        callees: &Callees,
    ) -> Result<Analysis, Refusal> {
        let (group_of, groups) = groups::groups(f, callees)?;
        let named: Vec<Vec<Group>> = f
            .instrs
            .iter()
            .map(|ins| named_by(ins, &group_of).into_iter().collect())
            .collect();
        let (fixed, in_callee) = pinned(fields, &named, &group_of, callees);
        let mut excluded = Excluded::default();
        for &g in &fixed {
            excluded.add(g, "pinned".into());
        }
        for (&g, c) in &in_callee {
            excluded.add(g, format!("used in the sub-function `{c}`"));
        }
        for &g in &groups {
            if g.size > max_group {
                excluded.add(
                    g,
                    format!("{}-register group wider than the value registers", g.size),
                );
            }
        }
        excluded.by_instructions(sm, f, &named, &group_of, callees);
        Ok(Analysis {
            group_of,
            groups,
            fixed,
            excluded: excluded.0,
            named,
            weight: crate::analysis::loops::loop_weights(f),
        })
    }

    /// Candidates in the order `strategy` demotes them (cheapest first).
    pub(crate) fn order(&self, strategy: Strategy) -> Vec<Group> {
        let mut cost: BTreeMap<Group, f64> = BTreeMap::new();
        for (k, gs) in self.named.iter().enumerate() {
            for &g in gs {
                let c = match strategy {
                    Strategy::StaticCount => 1.0,
                    Strategy::LoopWeighted => self.weight[k],
                    Strategy::OperandConflicts => self.weight[k] * gs.len() as f64,
                };
                *cost.entry(g).or_default() += c;
            }
        }
        let mut c: Vec<(f64, Group)> = self
            .groups
            .iter()
            .filter(|g| !self.excluded.contains_key(g))
            // Cost per register freed: a 64-bit pair frees two.
            .map(|&g| (cost.get(&g).copied().unwrap_or(0.0) / f64::from(g.size), g))
            .collect();
        c.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        c.into_iter().map(|(_, g)| g).collect()
    }
}

/// Groups that keep their numbers (R1, those named by an instruction whose fields are
/// ambiguous, in the kernel or a sub-function), and the groups each sub-function names
/// (the first one naming it).
fn pinned(
    fields: &[RegFields],
    named: &[Vec<Group>],
    group_of: &[Option<Group>],
    callees: &Callees,
) -> (BTreeSet<Group>, BTreeMap<Group, String>) {
    let mut fixed = BTreeSet::new();
    if let Some(g) = group_of[SP as usize] {
        fixed.insert(g);
    }
    for (fl, gs) in fields.iter().zip(named) {
        if fl.pinned {
            fixed.extend(gs.iter().copied());
        }
    }
    let mut in_callee: BTreeMap<Group, String> = BTreeMap::new();
    for (c, cfields) in &callees.code {
        for (ins, fl) in c.instrs.iter().zip(cfields) {
            let gs = named_by(ins, group_of);
            if fl.pinned {
                fixed.extend(gs.iter().copied());
            }
            for g in gs {
                in_callee.entry(g).or_insert_with(|| c.name.clone());
            }
        }
    }
    (fixed, in_callee)
}

/// Groups that may not be demoted, with the first reason found.
#[derive(Default)]
struct Excluded(BTreeMap<Group, String>);

impl Excluded {
    fn add(&mut self, g: Group, why: String) {
        self.0.entry(g).or_insert(why);
    }

    /// What the kernel's instructions exclude: groups named by a control instruction, read
    /// at a target other than a `BRA`'s, read where they may be undefined, or written with
    /// no known latency.
    fn by_instructions(
        &mut self,
        sm: u32,
        f: &Function,
        named: &[Vec<Group>],
        group_of: &[Option<Group>],
        callees: &Callees,
    ) {
        // Targets other than a `BRA`'s (`BSSY` reconvergence points, jump tables, calls):
        // loads cannot go before those (a `BRA`'s target is entered through the loads,
        // [`crate::sass::relayout::insert_with_heads`]).
        let targets = other_targets(f);
        // Must-defined registers before each instruction.
        let cfg = Cfg::build(f);
        let call_defs: BTreeMap<usize, BTreeSet<u8>> = callees
            .calls
            .iter()
            .map(|(&k, (_, w))| (k, w.clone()))
            .collect();
        let defined = must_defined(f, &cfg, &call_defs);
        for (k, ins) in f.instrs.iter().enumerate() {
            let (reads, writes) = accessed(ins, callees.calls.get(&k).map(|(r, _)| r));
            let g = |r: u8| group_of[r as usize];
            if matches!(ins.class(), OpClass::Control | OpClass::Sync) || ins.is_call() {
                for &x in &named[k] {
                    self.add(x, format!("named by `{}` at {:#x}", ins.opcode, ins.offset));
                }
            }
            if targets.contains(&ins.offset) {
                for &r in &reads {
                    if let Some(x) = g(r) {
                        self.add(
                            x,
                            format!("read at the jump or reconvergence target {:#x}", ins.offset),
                        );
                    }
                }
            }
            for &r in &reads {
                if !defined[k].contains(&r)
                    && let Some(x) = g(r)
                {
                    // Its value there may be whatever the register held at the kernel's
                    // entry: a spill slot never holds that, so it is not demoted (it may be
                    // renumbered: the claim states the numbering at entry, where every
                    // register's value is arbitrary).
                    self.add(x, format!("R{r} may be undefined at {:#x}", ins.offset));
                }
            }
            if !writes.is_empty() && !result_is_waitable(sm, ins) {
                for &r in &writes {
                    if let Some(x) = g(r) {
                        self.add(
                            x,
                            format!("written by `{}` with no known latency", ins.opcode),
                        );
                    }
                }
            }
        }
    }
}

/// The registers `ins` reads (a guarded write reads the old value; a call reads what its
/// callee reads before writing, `call_reads`) and writes.
fn accessed(ins: &Instr, call_reads: Option<&BTreeSet<u8>>) -> (Vec<u8>, Vec<u8>) {
    let regs = regs_of(ins);
    let guarded = !ins.always();
    let mut reads: Vec<u8> = regs
        .iter()
        .filter(|x| x.2 || (x.3 && guarded))
        .flat_map(|&(b, w, _, _)| b..b + w)
        .collect();
    if let Some(r) = call_reads {
        reads.extend(r.iter().copied());
    }
    let writes: Vec<u8> = regs
        .iter()
        .filter(|x| x.3)
        .flat_map(|&(b, w, _, _)| b..b + w)
        .collect();
    (reads, writes)
}

/// Offsets that something other than a `BRA` targets.
pub(crate) fn other_targets(f: &Function) -> BTreeSet<u64> {
    let mut t = BTreeSet::new();
    for ins in &f.instrs {
        if ins.op() != Op::Bra {
            t.extend(ins.target);
        }
        t.extend(ins.targets.iter().copied());
    }
    t
}

/// Where every kept group, the value-register pool and the base register go.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Old group start → new start (kept groups).
    pub(crate) kept: BTreeMap<u8, u8>,
    pub(crate) pool: u8,
    pub(crate) pool_size: u8,
    pub(crate) base: u8,
    /// Highest register used.
    pub(crate) highest: u8,
}

/// Pack the kept groups, the pool and the base under `highest_allowed`, or `None`.
pub(crate) fn compact(
    a: &Analysis,
    demoted: &BTreeSet<Group>,
    pool_size: u8,
    highest_allowed: u8,
) -> Option<Layout> {
    let limit = usize::from(highest_allowed) + 1;
    let mut used = vec![false; limit];
    let mut kept = BTreeMap::new();
    for g in &a.fixed {
        if usize::from(g.start) + usize::from(g.size) > limit {
            return None;
        }
        for r in g.regs() {
            used[r as usize] = true;
        }
        kept.insert(g.start, g.start);
    }
    // (size, what): what = Some(old start) for kept groups, None for the pool, base last.
    let mut items: Vec<(u8, Option<u8>, bool)> = a
        .groups
        .iter()
        .filter(|g| !demoted.contains(g) && !a.fixed.contains(g))
        .map(|g| (g.size, Some(g.start), false))
        .collect();
    // Without demoted registers nothing needs a pool or the base (pure compaction).
    if pool_size > 0 {
        items.push((pool_size, None, false));
        items.push((1, None, true));
    }
    items.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    let mut pool = None;
    let mut base = None;
    for (size, old, is_base) in items {
        let s = usize::from(size);
        let at = (0..limit)
            .step_by(s)
            .find(|&p| p + s <= limit && (p..p + s).all(|r| !used[r]))?;
        for u in &mut used[at..at + s] {
            *u = true;
        }
        match (old, is_base) {
            (Some(o), _) => {
                kept.insert(o, at as u8);
            }
            (None, true) => base = Some(at as u8),
            (None, false) => pool = Some(at as u8),
        }
    }
    let highest = used.iter().rposition(|&u| u)? as u8;
    if pool_size == 0 {
        return Some(Layout {
            kept,
            pool: 0,
            pool_size,
            base: 0,
            highest,
        });
    }
    Some(Layout {
        kept,
        pool: pool?,
        pool_size,
        base: base?,
        highest,
    })
}

/// Demote in `order` until [`compact`] fits, keeping every instruction's demoted registers
/// within the pool. `None` when the order runs out first.
pub(crate) fn select(
    a: &Analysis,
    order: &[Group],
    pool_size: u8,
    highest_allowed: u8,
) -> Option<(BTreeSet<Group>, Layout)> {
    let mut demoted = BTreeSet::new();
    let mut taken: Vec<Group> = Vec::new();
    let mut demand = vec![0u8; a.named.len()];
    let mut next = order.iter();
    loop {
        if let Some(l) = compact(a, &demoted, pool_size, highest_allowed) {
            // Greedy order can over-shoot (a late tuple frees what earlier singles did):
            // give back, most expensive first, every group the target does not need.
            let mut layout = l;
            for g in taken.iter().rev() {
                demoted.remove(g);
                match compact(a, &demoted, pool_size, highest_allowed) {
                    Some(l) => layout = l,
                    None => {
                        demoted.insert(*g);
                    }
                }
            }
            return Some((demoted, layout));
        }
        // The next candidate that keeps every instruction within the pool.
        let g = loop {
            let g = *next.next()?;
            let fits = a
                .named
                .iter()
                .enumerate()
                .all(|(k, gs)| !gs.contains(&g) || demand[k] + g.size <= pool_size);
            if fits {
                break g;
            }
        };
        for (k, gs) in a.named.iter().enumerate() {
            if gs.contains(&g) {
                demand[k] += g.size;
            }
        }
        demoted.insert(g);
        taken.push(g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(groups: &[(u8, u8)], fixed: &[(u8, u8)]) -> Analysis {
        let groups: Vec<Group> = groups
            .iter()
            .map(|&(start, size)| Group { start, size })
            .collect();
        let mut group_of = vec![None; 256];
        for g in &groups {
            for r in g.regs() {
                group_of[usize::from(r)] = Some(*g);
            }
        }
        Analysis {
            group_of,
            named: vec![groups.clone()],
            weight: vec![1.0],
            fixed: fixed
                .iter()
                .map(|&(start, size)| Group { start, size })
                .collect(),
            excluded: BTreeMap::new(),
            groups,
        }
    }

    #[test]
    fn compaction_keeps_tuples_aligned_and_pinned_registers_in_place() {
        // R1 pinned; a 128-bit tuple at R8, pairs at R12 and R20, singles at R0, R30, R31.
        let a = analysis(
            &[(0, 1), (1, 1), (8, 4), (12, 2), (20, 2), (30, 1), (31, 1)],
            &[(1, 1)],
        );
        let l = compact(&a, &BTreeSet::new(), 2, 20).unwrap();
        assert_eq!(l.kept[&1], 1);
        assert_eq!(l.kept[&8] % 4, 0);
        for start in [12, 20] {
            assert_eq!(l.kept[&start] % 2, 0);
        }
        assert_eq!(l.pool % 2, 0);
        let mut used: Vec<u8> = Vec::new();
        for (&old, &new) in &l.kept {
            let size = a.group_of[usize::from(old)].unwrap().size;
            used.extend(new..new + size);
        }
        used.extend(l.pool..l.pool + 2);
        used.push(l.base);
        let n = used.len();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), n, "overlap: {used:?}");
        assert_eq!(l.highest, *used.last().unwrap());
        // 4 + 2 + 2 + 3 singles kept, R1 pinned, 2 pool, 1 base = 15 registers: R0-R14,
        // no hole left by the alignment.
        assert_eq!(l.highest, 14);
        // Too low a ceiling fails; demoting makes room.
        assert!(compact(&a, &BTreeSet::new(), 2, 13).is_none());
        let demoted = BTreeSet::from([Group { start: 8, size: 4 }]);
        assert_eq!(compact(&a, &demoted, 2, 10).map(|l| l.highest), Some(10));
        // A pinned register above the ceiling can never fit.
        let b = analysis(&[(1, 1), (40, 1)], &[(1, 1), (40, 1)]);
        assert!(compact(&b, &BTreeSet::new(), 2, 20).is_none());
    }

    #[test]
    fn selection_respects_the_pool() {
        // One instruction names both pairs: with a pool of 2 only one can be demoted.
        let a = analysis(&[(0, 2), (2, 2), (4, 1)], &[]);
        let order = a.order(Strategy::StaticCount);
        let (d, l) = select(&a, &order, 2, 6).unwrap();
        assert!(l.highest <= 6);
        assert!(d.iter().map(|g| g.size).sum::<u8>() <= 2);
        assert!(select(&a, &order, 2, 3).is_none());
    }
}

//! `regdem`'s value registers: which ones each block may use, which one a demoted
//! group gets at each instruction, and the loads hoisted up their block into them
//! (docs/papers.md §RegDem, its §3.4; the rest of the rewrite is in [`super`]).

use std::collections::{BTreeMap, BTreeSet};

use super::select::{Analysis, Group, Layout};
use super::{live, sched, select};
use crate::arch::OpClass;
use crate::arch::latency::fixed_latency;
use crate::sass::ir::{Function, RZ};

/// The value registers each instruction may use: `pool` (free everywhere), and the numbers
/// of the kept groups dead throughout its block (not live, not named there). A group
/// qualifies only if nothing else can touch its register while it holds a value: no
/// sub-function names it, no instruction writes it with a variable latency (a write still in
/// flight at the block's start would land later) or reads it behind a read scoreboard (an
/// operand not yet read when the block starts).
#[allow(clippy::too_many_arguments)]
pub(super) fn block_pools(
    f: &Function,
    block_start: &[bool],
    live: &live::Live,
    analysis: &Analysis,
    demoted: &BTreeSet<Group>,
    layout: &Layout,
    in_callees: &BTreeSet<u8>,
    pool: &BTreeSet<u8>,
    sm: u32,
) -> Vec<BTreeSet<u8>> {
    let n = f.instrs.len();
    let mut asynchronous: BTreeSet<u8> = BTreeSet::new();
    for ins in &f.instrs {
        if ins.ctrl.write_sb.is_some() || fixed_latency(sm, ins.class()).is_none() {
            asynchronous.extend(ins.gpr_writes());
        }
        if ins.ctrl.read_sb.is_some() {
            asynchronous.extend(ins.gpr_reads());
        }
    }
    let candidates: Vec<(Group, u8)> = if pool.is_empty() {
        Vec::new()
    } else {
        analysis
            .groups
            .iter()
            .filter(|g| !demoted.contains(g) && !analysis.fixed.contains(g))
            .filter(|g| {
                g.regs()
                    .all(|r| !in_callees.contains(&r) && !asynchronous.contains(&r))
            })
            .filter_map(|g| Some((*g, *layout.kept.get(&g.start)?)))
            .collect()
    };
    let mut out = vec![pool.clone(); n];
    let mut k = 0;
    while k < n {
        let end = (k + 1..n).find(|&j| block_start[j]).unwrap_or(n);
        let mut busy: BTreeSet<u8> = BTreeSet::new();
        for j in k..end {
            busy.extend(live.before[j].iter().copied());
            busy.extend(live.after[j].iter().copied());
            let ins = &f.instrs[j];
            busy.extend(ins.gpr_reads());
            busy.extend(ins.gpr_writes());
        }
        let mut free = pool.clone();
        for &(g, to) in &candidates {
            if g.regs().all(|r| !busy.contains(&r)) {
                free.extend(to..to + g.size);
            }
        }
        for p in &mut out[k..end] {
            p.clone_from(&free);
        }
        k = end;
    }
    out
}

/// Value registers for the demoted groups `here` of one instruction, from `pool` (register
/// numbers): each aligned to its size, largest first; a place that already holds the group
/// (`holds`) first, then one whose register bank the instruction's other sources use least
/// (`banks`: sources per bank; the register file of sm_70 and later has two banks, register
/// number mod 2: Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
/// Microbenchmarking", 2018), then the least recently used one. `now` stamps them. `None`
/// when they do not fit (the selection keeps every instruction within the reserved pool).
pub(super) fn assign_values(
    here: &[Group],
    pool: &BTreeSet<u8>,
    last_use: &mut [usize; 256],
    now: usize,
    holds: &[Option<u8>; 256],
    mut banks: [u32; 2],
) -> Option<BTreeMap<Group, u8>> {
    let mut taken: BTreeSet<u8> = BTreeSet::new();
    let mut out = BTreeMap::new();
    let mut by_size: Vec<Group> = here.to_vec();
    by_size.sort_by(|a, b| b.size.cmp(&a.size).then(a.start.cmp(&b.start)));
    for g in by_size {
        let s = g.size;
        let at = pool
            .iter()
            .copied()
            .filter(|&p| {
                p % s == 0
                    && u16::from(p) + u16::from(s) < u16::from(RZ)
                    && (p..p + s).all(|q| pool.contains(&q) && !taken.contains(&q))
            })
            .min_by_key(|&p| {
                let held = (0..s).all(|o| holds[usize::from(p + o)] == Some(g.start + o));
                // A single register shares a bank with the sources of its parity; a tuple
                // covers both banks wherever it goes.
                let conflicts = if s == 1 { banks[usize::from(p % 2)] } else { 0 };
                let used = (p..p + s)
                    .map(|q| last_use[usize::from(q)])
                    .max()
                    .unwrap_or(0);
                (!held, conflicts, used)
            })?;
        for q in at..at + s {
            taken.insert(q);
            last_use[usize::from(q)] = now;
            banks[usize::from(q % 2)] += 1;
        }
        out.insert(g, at);
    }
    Some(out)
}

/// Hoisting (§3.4): each load moves up its block as far as nothing in between touches its
/// value register, stores its slot, writes its register or is a control instruction, so its
/// latency overlaps the instructions before its reader. It stays after the block's first
/// instruction's stores (loads before a branch target run on every path into it).
pub(super) fn hoist_loads(
    sites: &mut [sched::Site],
    load_slots: &mut [Vec<u32>],
    store_slots: &[Vec<u32>],
    wrote: &[BTreeSet<u8>],
    block_start: &[bool],
    slot_of: &BTreeMap<u8, u32>,
    f: &Function,
) {
    let reg_of: BTreeMap<u32, u8> = slot_of.iter().map(|(&r, &s)| (s, r)).collect();
    let others = select::other_targets(f);
    let control = |i: &crate::sass::ir::Instr| {
        matches!(i.class(), OpClass::Control | OpClass::Sync) || i.is_call()
    };
    let touches = |s: &sched::Site, v: u8| {
        s.loads.contains(&v)
            || s.stores.contains(&v)
            || s.reads.contains(&v)
            || s.writes.contains(&v)
    };
    for k in 1..sites.len() {
        let mut l = 0;
        while l < sites[k].loads.len() {
            let (v, slot) = (sites[k].loads[l], load_slots[k][l]);
            let r = reg_of[&slot];
            let mut j = k;
            while j > 0 && !block_start[j] {
                let i = j - 1;
                if control(&f.instrs[i])
                    || touches(&sites[i], v)
                    || store_slots[i].contains(&slot)
                    || wrote[i].contains(&r)
                {
                    break;
                }
                j = i;
            }
            // Code before a jump-table or reconvergence target runs on fall-through only.
            if j < k && others.contains(&f.instrs[j].offset) {
                j += 1;
            }
            if j == k {
                l += 1;
                continue;
            }
            let consumer = sites[k].load_for.remove(l);
            sites[k].loads.remove(l);
            load_slots[k].remove(l);
            sites[j].loads.push(v);
            sites[j].load_for.push(consumer);
            load_slots[j].push(slot);
        }
    }
}

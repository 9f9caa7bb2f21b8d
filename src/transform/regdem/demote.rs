//! The rewrite of each original instruction (docs/papers.md §RegDem, its §3.4): its
//! registers renamed, a read of a demoted register loaded into a value register just before
//! it, a write stored just after it; then the dead stores go. Which value register a group
//! gets, and the hoisting of the loads, are in [`super::values`].

use std::collections::{BTreeMap, BTreeSet};

use super::code::Code;
use super::select::{Analysis, Group, Layout};
use super::values::{assign_values, block_pools, hoist_loads};
use super::{Choice, live, sched};
use crate::analysis::Cfg;
use crate::arch::OpClass;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};
use crate::transform::{TransformError, not_applicable};

/// Value register → the demoted register whose current value it holds.
type Holds = [Option<u8>; 256];

/// The blocks of the kernel: what a value register holds is only trusted inside one (§3.4
/// post-passes).
pub(super) struct Blocks {
    /// Offsets something branches, jumps or reconverges to.
    targets: BTreeSet<u64>,
    /// Per instruction: whether a block starts there.
    pub(super) start: Vec<bool>,
}

impl Blocks {
    pub(super) fn of(f: &Function) -> Blocks {
        let n = f.instrs.len();
        let mut targets: BTreeSet<u64> = BTreeSet::new();
        for ins in &f.instrs {
            targets.extend(ins.target);
            targets.extend(ins.targets.iter().copied());
        }
        let control =
            |i: &Instr| matches!(i.class(), OpClass::Control | OpClass::Sync) || i.is_call();
        let start = (0..n)
            .map(|k| targets.contains(&f.instrs[k].offset) || (k > 0 && control(&f.instrs[k - 1])))
            .collect();
        Blocks { targets, start }
    }

    /// Per instruction: whether it must wait for all our scoreboards (a branch target, a
    /// control or synchronisation instruction, a call).
    pub(super) fn flush(&self, f: &Function) -> Vec<bool> {
        f.instrs
            .iter()
            .map(|i| {
                self.targets.contains(&i.offset)
                    || matches!(i.class(), OpClass::Control | OpClass::Sync)
                    || i.is_call()
            })
            .collect()
    }
}

/// Slots: one per demoted register.
pub(super) fn slots(choice: &Choice) -> BTreeMap<u8, u32> {
    choice
        .demoted
        .iter()
        .flat_map(|g| g.regs())
        .enumerate()
        .map(|(i, r)| (r, i as u32))
        .collect()
}

/// The value registers each instruction may use: the reserved pool and every register above
/// the highest one the layout uses, up to the target (free everywhere: value-register
/// substitution), and per block the kept registers dead throughout it.
pub(super) fn value_pools(
    code: &Code,
    analysis: &Analysis,
    choice: &Choice,
    blocks: &Blocks,
    any_demoted: bool,
    highest_allowed: u8,
    sm: u32,
) -> Vec<BTreeSet<u8>> {
    let layout = &choice.layout;
    let pool: BTreeSet<u8> = if any_demoted {
        (layout.pool..layout.pool + layout.pool_size)
            .chain(layout.highest + 1..=highest_allowed)
            .collect()
    } else {
        BTreeSet::new()
    };
    let f = code.kernel();
    let called = super::calls::called(f, &code.funcs, &code.effects);
    block_pools(
        f,
        &blocks.start,
        &live::liveness(f, &Cfg::build(f), &called, &BTreeSet::new()),
        analysis,
        &choice.demoted,
        layout,
        &code.in_callees(),
        &pool,
        sm,
    )
}

/// The new number of a kept register `r` of group `g`.
pub(super) fn kept_number(layout: &Layout, g: Group, r: u8) -> u8 {
    layout.kept.get(&g.start).map_or(r, |&s| s + (r - g.start))
}

/// What the rewrite inserts and renames, per original instruction.
pub(super) struct Accesses {
    /// Loads, stores and value registers, for the scheduler.
    pub(super) sites: Vec<sched::Site>,
    /// Old register → new register.
    pub(super) renamed: Vec<[u8; 256]>,
    /// The slot of each load and each store of `sites`.
    pub(super) load_slots: Vec<Vec<u32>>,
    pub(super) store_slots: Vec<Vec<u32>>,
    /// Demoted registers it writes (original numbers).
    pub(super) wrote: Vec<BTreeSet<u8>>,
}

impl Accesses {
    /// Value registers and loads and stores for every instruction of `f`, in order; a load
    /// is left out where its value register still holds the value (redundant load
    /// elimination).
    pub(super) fn assign(
        f: &Function,
        analysis: &Analysis,
        choice: &Choice,
        blocks: &Blocks,
        pools: &[BTreeSet<u8>],
        slot_of: &BTreeMap<u8, u32>,
    ) -> Result<Accesses, TransformError> {
        let n = f.instrs.len();
        let mut acc = Accesses {
            sites: vec![sched::Site::default(); n],
            renamed: Vec::with_capacity(n),
            load_slots: vec![Vec::new(); n],
            store_slots: vec![Vec::new(); n],
            wrote: vec![BTreeSet::new(); n],
        };
        let mut last_use = [0usize; 256];
        let mut holds: Holds = [None; 256];
        for (k, ins) in f.instrs.iter().enumerate() {
            if blocks.start[k] {
                holds.fill(None);
            }
            let here: Vec<Group> = analysis.named[k]
                .iter()
                .filter(|g| choice.demoted.contains(g))
                .copied()
                .collect();
            let banks = kept_source_banks(ins, analysis, choice);
            let value_at = assign_values(&here, &pools[k], &mut last_use, k + 1, &holds, banks)
                .ok_or_else(|| {
                    not_applicable(format!("{:#x}: value registers do not fit", ins.offset))
                })?;
            let new_reg = |r: u8| -> u8 {
                let Some(g) = analysis.group_of[usize::from(r)] else {
                    return r;
                };
                match value_at.get(&g) {
                    Some(&v) => v + (r - g.start),
                    None => kept_number(&choice.layout, g, r),
                }
            };
            acc.renamed.push(rename_table(new_reg));
            if here.is_empty() {
                continue;
            }
            let (reads, writes) = demoted_operands(ins, slot_of);
            acc.record(k, &reads, &writes, new_reg, slot_of, &mut holds);
        }
        Ok(acc)
    }

    /// The loads and stores of instruction `k`, which reads the demoted registers `reads` and
    /// writes `writes` (original numbers), renamed by `new_reg`.
    fn record(
        &mut self,
        k: usize,
        reads: &BTreeSet<u8>,
        writes: &BTreeSet<u8>,
        new_reg: impl Fn(u8) -> u8,
        slot_of: &BTreeMap<u8, u32>,
        holds: &mut Holds,
    ) {
        let site = &mut self.sites[k];
        let pos = |r: u8| usize::from(new_reg(r));
        for &r in reads {
            if holds[pos(r)] != Some(r) {
                site.loads.push(new_reg(r));
                site.load_for.push(k);
                self.load_slots[k].push(slot_of[&r]);
                holds[pos(r)] = Some(r);
            }
            site.reads.push(new_reg(r));
        }
        self.wrote[k] = writes.clone();
        for &r in writes {
            site.stores.push(new_reg(r));
            self.store_slots[k].push(slot_of[&r]);
            site.writes.push(new_reg(r));
            for h in holds.iter_mut() {
                if *h == Some(r) {
                    *h = None;
                }
            }
            holds[pos(r)] = Some(r);
        }
    }

    /// Loads moved up their block ([`hoist_loads`]).
    pub(super) fn hoist_loads(
        &mut self,
        block_start: &[bool],
        slot_of: &BTreeMap<u8, u32>,
        f: &Function,
    ) {
        hoist_loads(
            &mut self.sites,
            &mut self.load_slots,
            &self.store_slots,
            &self.wrote,
            block_start,
            slot_of,
            f,
        );
    }

    /// Redundant store elimination: a store whose slot is stored again later in the block
    /// before any load of it is dead.
    pub(super) fn drop_dead_stores(&mut self, block_start: &[bool]) {
        let n = self.sites.len();
        for k in 0..n {
            let keep: Vec<bool> = self.store_slots[k]
                .iter()
                .map(|&slot| !self.stored_again(k, slot, block_start))
                .collect();
            let mut it = keep.iter();
            self.sites[k].stores.retain(|_| *it.next().unwrap_or(&true));
            let mut it = keep.iter();
            self.store_slots[k].retain(|_| *it.next().unwrap_or(&true));
        }
    }

    /// Whether `slot`, stored after instruction `k`, is stored again later in the block
    /// before any load of it.
    fn stored_again(&self, k: usize, slot: u32, block_start: &[bool]) -> bool {
        let later = block_start
            .iter()
            .zip(&self.load_slots)
            .zip(&self.store_slots)
            .skip(k + 1);
        for ((&starts, loads), stores) in later {
            if starts || loads.contains(&slot) {
                return false;
            }
            if stores.contains(&slot) {
                return true;
            }
        }
        false
    }
}

/// Sources per register bank among the instruction's kept source registers (new numbers),
/// for the bank-aware choice of value registers.
fn kept_source_banks(ins: &Instr, analysis: &Analysis, choice: &Choice) -> [u32; 2] {
    let mut banks = [0u32; 2];
    for r in ins.gpr_reads() {
        if let Some(g) = analysis.group_of[usize::from(r)]
            && !choice.demoted.contains(&g)
        {
            banks[usize::from(kept_number(&choice.layout, g, r) % 2)] += 1;
        }
    }
    banks
}

/// `new_reg` over every register number, `RZ` staying `RZ`.
fn rename_table(new_reg: impl Fn(u8) -> u8) -> [u8; 256] {
    let mut m = [0u8; 256];
    for (r, x) in m.iter_mut().enumerate() {
        *x = if r == usize::from(RZ) {
            RZ
        } else {
            new_reg(r as u8)
        };
    }
    m
}

/// The demoted registers (those with a slot) `ins` reads and writes. A guarded write reads
/// too: the store keeps the old value when the guard is false.
fn demoted_operands(ins: &Instr, slot_of: &BTreeMap<u8, u32>) -> (BTreeSet<u8>, BTreeSet<u8>) {
    let guarded = !ins.always();
    let mut reads = BTreeSet::new();
    let mut writes = BTreeSet::new();
    for o in &ins.operands {
        let (base, width, r, w) = match &o.kind {
            OperandKind::Reg(b) => (*b, o.width.max(1), o.role.reads(), o.role.writes()),
            OperandKind::Addr {
                reg: Some(b),
                reg_width,
                ..
            } => (*b, (*reg_width).max(1), true, false),
            OperandKind::Const { reg: Some(b), .. } => (*b, 1, true, false),
            _ => continue,
        };
        if base == RZ {
            continue;
        }
        for reg in base..base + width {
            if !slot_of.contains_key(&reg) {
                continue;
            }
            if r || (w && guarded) {
                reads.insert(reg);
            }
            if w {
                writes.insert(reg);
            }
        }
    }
    (reads, writes)
}

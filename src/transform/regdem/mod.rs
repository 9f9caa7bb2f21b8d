//! `regdem` (docs/papers.md §RegDem; docs/DESIGN.md §regdem): from a
//! kernel's efficient binary (few or no spills), move registers to per-thread shared-memory
//! slots until the register count reaches a target budget at an occupancy cliff.
//!
//! 0. [`code`]: the kernel, its budget and its section's functions, or why they are refused.
//! 1. [`select`]: groups (aligned tuples, [`groups`]), candidates, the three orderings of §3.4.3, and
//!    the compaction of §3.3 that packs the kept registers, a pool of value registers and
//!    the spill-area base register under the target. Every ordering and pool size (2, 4, 8) is
//!    tried; the one with the fewest loop-weighted inserted accesses wins.
//! 2. Rewriting ([`demote`], [`values`]): every original instruction is renamed field by field ([`fields`]); a read
//!    of a demoted register becomes a read of a value register loaded just before it
//!    (`LDS`), a write becomes a write of a value register stored just after it (`STS`); a
//!    guarded write loads the old value first so the store keeps it when the guard is false.
//!    A `BRA` to an instruction with loads enters through them
//!    ([`crate::sass::relayout::insert_with_heads`]). Value registers come from the reserved pool and the
//!    registers above the layout's highest, up to the target (free everywhere), picked per
//!    instruction: one already holding the value, else one on the register bank the
//!    instruction's other sources use least, else the least recently used.
//!    Post-passes (§3.4): redundant loads (the value register still holds the value) and
//!    dead stores (stored again before any load in the block) go; loads are hoisted up their
//!    block; after the greedy selection, demoted groups the target does not need are given
//!    back. When compaction alone reaches the target nothing is demoted.
//! 3. [`sched`]: control bits for the accesses and the instructions around them.
//! 4. [`emit`]: the spill area, its prologue and the shared sizing are those of spill2smem
//!    ([`super::area`], [`super::prologue`]); the register count becomes the highest
//!    register + 3.
//!
//! Calls of the section's own sub-functions are handled: the sub-functions' registers
//! are renumbered with the kernel's (one numbering for the section, stated in the claim so
//! the checker follows it across calls) and never demoted; a call ends a block (value
//! registers hold nothing across it). Calls leaving the section (`vprintf`) or through a
//! register are refused. What the rewrite
//! claims is proved by `verify` (values) and `verify::schedule` (control bits); nothing
//! here checks itself.

pub(crate) mod access;
pub(crate) mod calls;
mod code;
mod demote;
mod emit;
pub(crate) mod fields;
mod groups;
pub(crate) mod live;
mod refusal;
pub(crate) mod sched;
mod seam;
pub(crate) mod select;
mod values;

pub(crate) use seam::Regdem;

use std::collections::{BTreeMap, BTreeSet};

use super::area::{Area, Options};
use super::prologue::Shape;
use super::{TransformError, not_applicable};
use crate::analysis::Cfg;
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::ir::Function;
use code::{Code, Kernel, kernel_section};
use demote::{Accesses, Blocks};
use emit::NewCode;
use fields::RegFields;
use select::{Analysis, Group, Layout, Strategy};

/// Registers above the highest one in use that ptxas counts (the allocation rule).
const COUNT_EXTRA: u32 = 3;

/// What the rewrite did and claims.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub(crate) kernel: String,
    pub section: usize,
    pub map: OffsetMap,
    /// Rewritten offsets of all inserted instructions (prologue first).
    pub inserted: Vec<u64>,
    /// Rewritten offsets of the inserted demoted loads and stores.
    pub accesses: Vec<u64>,
    pub base_reg: u8,
    pub base_defined_at: u64,
    pub stride: u32,
    pub slots: u32,
    pub area_offset: u32,
    pub shared_added: u64,
    pub(crate) registers_before: u32,
    pub registers: u32,
    /// Demoted groups (original numbers).
    pub(crate) demoted: Vec<(u8, u8)>,
    pub(crate) strategy: Strategy,
    pub loads: usize,
    pub stores: usize,
    /// Registers renumbered by the compaction (original → new), kernel and sub-functions
    /// alike (what the checker's claim states at function boundaries).
    pub renamed: BTreeMap<u8, u8>,
    pub options: Options,
}

/// One chosen demotion.
struct Choice {
    demoted: BTreeSet<Group>,
    layout: Layout,
    strategy: Strategy,
    cost: f64,
}

/// The liveness regdem picks value registers with, for one kernel
/// ([`kernel_liveness`]).
#[derive(Debug, Clone)]
pub struct KernelLiveness {
    /// The kernel's code, split from its section.
    pub function: Function,
    /// Registers live before each instruction.
    pub before: Vec<BTreeSet<u8>>,
    /// Registers live after each instruction.
    pub after: Vec<BTreeSet<u8>>,
    /// Registers some call of the kernel ends: its callee writes them on every path.
    pub call_writes: BTreeSet<u8>,
}

/// The liveness regdem picks value registers with ([`live`]: guarded writes end
/// nothing, a call reads its callee's live-in and ends what the callee writes on every path),
/// for `kernel` of a decoded cubin. tests/oracles/liveness_oracle.rs compares it with `nvdisasm -plr`.
pub fn kernel_liveness(
    cubin: &Cubin,
    functions: &[Function],
    kernel: &str,
) -> Result<KernelLiveness, TransformError> {
    let info = cubin
        .function_info(kernel)
        .ok_or_else(|| not_applicable(format!("no function `{kernel}`")))?;
    let (owned, entry, order) = kernel_section(cubin, functions, kernel, info.text_section)?;
    let funcs: Vec<&Function> = owned.iter().collect();
    let effects = calls::effects(&funcs, &order);
    let f = funcs[entry];
    let called = calls::called(f, &funcs, &effects);
    let live = live::liveness(f, &Cfg::build(f), &called, &BTreeSet::new());
    Ok(KernelLiveness {
        function: f.clone(),
        before: live.before,
        after: live.after,
        call_writes: called
            .values()
            .flat_map(|e| e.writes.iter().copied())
            .collect(),
    })
}

/// Demote registers of `kernel` until it needs at most `opts.max_registers` (required).
pub(crate) fn regdem(
    cubin: &mut Cubin,
    functions: &[Function],
    kernel: &str,
    opts: Options,
) -> Result<Rewrite, TransformError> {
    let k = Kernel::check(cubin, kernel, &opts)?;
    let (owned, entry, order) = kernel_section(cubin, functions, kernel, k.section)?;
    let code = Code::of(cubin, k.section, &owned, entry, &order)?;
    let highest_allowed = k.highest_allowed()?;
    let f = code.kernel();

    // 1. Selection.
    let fields: Vec<RegFields> = f.instrs.iter().map(fields::reg_fields).collect();
    let analysis = Analysis::new(k.sm, f, &fields, 4, &code.callees).map_err(not_applicable)?;
    let choice =
        choose(&analysis, highest_allowed).ok_or_else(|| no_demotion(&analysis, k.target))?;
    let slot_of = demote::slots(&choice);
    let any_demoted = !slot_of.is_empty();
    let area = Area::plan(&opts, k.static_shared, slot_of.len() as u32)?;

    // 2. Rewriting, and the post-passes.
    let blocks = Blocks::of(f);
    let pools = demote::value_pools(
        &code,
        &analysis,
        &choice,
        &blocks,
        any_demoted,
        highest_allowed,
        k.sm,
    );
    let mut acc = Accesses::assign(f, &analysis, &choice, &blocks, &pools, &slot_of)?;
    acc.drop_dead_stores(&blocks.start);
    acc.hoist_loads(&blocks.start, &slot_of, f);

    // 3. Control bits.
    let schedule = sched::schedule(k.sm, f, &acc.sites, &blocks.flush(f), code.callee_depbars)
        .map_err(not_applicable)?;

    // 4. The new code, the register count and the spill area.
    let shape = Shape {
        sm: k.sm,
        one_d: opts.one_d,
    };
    let layout = &choice.layout;
    let insertions = emit::insertions(shape, layout, any_demoted, f, &acc, &schedule, &area);
    let new_code = NewCode {
        kernel,
        section: k.section,
        code: &code,
        fields: &fields,
        analysis: &analysis,
        layout,
        acc: &acc,
        schedule: &schedule,
    };
    let (mut out, relaid) = new_code.write(cubin, &insertions)?;
    let registers = emit::register_count(&acc.sites, layout);
    emit::set_resources(&mut out, kernel, registers, &area, k.static_shared, &opts)?;
    *cubin = out;

    Ok(Rewrite {
        kernel: kernel.to_string(),
        section: k.section,
        base_defined_at: insertions
            .prologue
            .checked_sub(1)
            .and_then(|i| relaid.inserted.get(i))
            .copied()
            .unwrap_or(0),
        accesses: accesses_at(&relaid.inserted, &insertions.is_access),
        map: relaid.map,
        inserted: relaid.inserted,
        base_reg: layout.base,
        stride: area.stride,
        slots: area.slots,
        area_offset: area.offset,
        shared_added: area.added,
        registers_before: k.registers,
        registers,
        demoted: choice.demoted.iter().map(|g| (g.start, g.size)).collect(),
        strategy: choice.strategy,
        loads: acc.sites.iter().map(|s| s.loads.len()).sum(),
        stores: acc.sites.iter().map(|s| s.stores.len()).sum(),
        renamed: emit::renumbering(&analysis, layout),
        options: opts,
    })
}

/// Why no demotion reaches `target`: the groups that may not be demoted.
fn no_demotion(analysis: &Analysis, target: u32) -> TransformError {
    not_applicable(format!(
        "no demotion reaches {target} registers ({} of {} register groups may not be demoted, {} pinned: {}{})",
        analysis.excluded.len(),
        analysis.groups.len(),
        analysis.fixed.len(),
        analysis
            .fixed
            .iter()
            .map(|g| format!("R{}", g.start))
            .collect::<Vec<_>>()
            .join(" "),
        analysis
            .excluded
            .iter()
            .find(|(g, _)| !analysis.fixed.contains(g))
            .map(|(g, why)| format!(", e.g. R{}: {why}", g.start))
            .unwrap_or_default()
    ))
}

/// Rewritten offsets of the inserted accesses (`is_access`, in request order).
fn accesses_at(inserted: &[u64], is_access: &[bool]) -> Vec<u64> {
    inserted
        .iter()
        .zip(is_access)
        .filter(|(_, a)| **a)
        .map(|(o, _)| *o)
        .collect()
}

/// The cheapest demotion over the strategies and pool sizes.
fn choose(a: &Analysis, highest_allowed: u8) -> Option<Choice> {
    // Compaction alone may be enough (registers left unused between others).
    if let Some(layout) = select::compact(a, &BTreeSet::new(), 0, highest_allowed) {
        return Some(Choice {
            demoted: BTreeSet::new(),
            layout,
            strategy: Strategy::StaticCount,
            cost: 0.0,
        });
    }
    let mut best: Option<Choice> = None;
    for pool_size in [2u8, 4, 8] {
        for strategy in Strategy::ALL {
            let Some((demoted, layout)) =
                select::select(a, &a.order(strategy), pool_size, highest_allowed)
            else {
                continue;
            };
            // Each instruction naming a demoted group pays a load or a store per register.
            let cost: f64 = a
                .named
                .iter()
                .enumerate()
                .map(|(k, gs)| {
                    a.weight[k]
                        * gs.iter()
                            .filter(|g| demoted.contains(g))
                            .map(|g| f64::from(g.size))
                            .sum::<f64>()
                })
                .sum();
            if best.as_ref().is_none_or(|b| cost < b.cost) {
                best = Some(Choice {
                    demoted,
                    layout,
                    strategy,
                    cost,
                });
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::values::block_pools;
    use super::*;
    use crate::arch::Family;
    use crate::sass::control::Control;
    use crate::sass::ir::Instr;
    use crate::sass::operands;

    fn ins(k: usize, opcode: &str, ops: &str, write_sb: Option<u8>) -> Instr {
        let mut i = Instr {
            offset: 16 * k as u64,
            raw: 0,
            opcode: opcode.into(),
            predicate: None,
            operands: operands::parse(ops).expect("parses"),
            ctrl: Control {
                write_sb,
                ..Control::default()
            },
            target: None,
            targets: Vec::new(),
            callee: None,
            unknown: false,
        };
        i.unknown = !operands::apply(Family::Turing, &mut i);
        i
    }

    /// Value-register substitution: a block's pool grows by the kept registers dead
    /// throughout it, never by one a variable-latency instruction writes.
    #[test]
    fn block_pools_take_registers_dead_throughout_a_block() {
        let f = Function {
            name: "k".into(),
            section: 1,
            start: 0,
            instrs: vec![
                ins(0, "MOV", "R2, 0x1", None),
                ins(1, "FADD", "R3, R2, R2", None),
                ins(2, "LDG.E", "R5, [R10.64]", Some(0)),
                ins(3, "FADD", "R7, R3, R5", None),
                // A second block.
                ins(4, "FADD", "R8, R7, R7", None),
                ins(5, "FADD", "R9, R8, R8", None),
                ins(6, "EXIT", "", None),
            ],
            kernel: true,
            regs: Some(16),
            abi_regs: None,
            abi_files: None,
            marked: Default::default(),
        };
        // (No encodings here: every register counts as placed.)
        let fields = vec![RegFields::default(); f.instrs.len()];
        let a = Analysis::new(80, &f, &fields, 4, &select::Callees::default()).unwrap();
        let layout = select::compact(&a, &BTreeSet::new(), 2, 20).unwrap();
        let pool: BTreeSet<u8> = (layout.pool..layout.pool + 2).collect();
        let block_start = [true, false, false, false, true, false, false];
        let live = live::liveness(&f, &Cfg::build(&f), &BTreeMap::new(), &BTreeSet::new());
        let pools_with = |in_callees: &BTreeSet<u8>| {
            block_pools(
                &f,
                &block_start,
                &live,
                &a,
                &BTreeSet::new(),
                &layout,
                in_callees,
                &pool,
                80,
            )
        };
        let pools = pools_with(&BTreeSet::new());
        let at = |r: u8| layout.kept[&r];
        // Dead in the second block: R2, R3; R8 and R9 in the first.
        assert!(
            pools[4].contains(&at(2)) && pools[4].contains(&at(3)),
            "{pools:?}"
        );
        assert!(
            pools[0].contains(&at(8)) && pools[0].contains(&at(9)),
            "{pools:?}"
        );
        // Live or named there: never.
        assert!(
            !pools[4].contains(&at(7)) && !pools[0].contains(&at(2)),
            "{pools:?}"
        );
        // Written by a load (its write may still be in flight): never.
        assert!(pools.iter().all(|p| !p.contains(&at(5))), "{pools:?}");
        // Every block keeps the reserved pool; a sub-function's register is never lent.
        assert!(pools.iter().all(|p| pool.is_subset(p)));
        let lent = pools_with(&BTreeSet::from([2u8]));
        assert!(!lent[4].contains(&at(2)) && lent[4].contains(&at(3)));
    }
}

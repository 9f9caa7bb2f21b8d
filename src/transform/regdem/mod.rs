//! Register demotion (docs/papers.md §RegDem; docs/DESIGN.md §Register demotion): from a
//! kernel's efficient binary (few or no spills), move registers to per-thread shared-memory
//! slots until the register count reaches a target budget at an occupancy cliff.
//!
//! 1. [`select`]: groups (aligned tuples), candidates, the three orderings of §3.4.3, and
//!    the compaction of §3.3 that packs the kept registers, a pool of value registers and
//!    the spill-area base register under the target. Every ordering and pool size (2, 4, 8) is
//!    tried; the one with the fewest loop-weighted inserted accesses wins.
//! 2. Rewriting: every original instruction is renamed field by field ([`fields`]); a read
//!    of a demoted register becomes a read of a value register loaded just before it
//!    (`LDS`), a write becomes a write of a value register stored just after it (`STS`); a
//!    guarded write loads the old value first so the store keeps it when the guard is false.
//!    A `BRA` to an instruction with loads enters through them
//!    ([`relayout::insert_with_heads`]). Value registers come from the reserved pool and the
//!    registers above the layout's highest, up to the target (free everywhere), picked per
//!    instruction: one already holding the value, else one on the register bank the
//!    instruction's other sources use least, else the least recently used.
//!    Post-passes (§3.4): redundant loads (the value register still holds the value) and
//!    dead stores (stored again before any load in the block) go; loads are hoisted up their
//!    block; after the greedy selection, demoted groups the target does not need are given
//!    back. When compaction alone reaches the target nothing is demoted.
//! 3. [`sched`]: control bits for the accesses and the instructions around them.
//! 4. The spill area, its prologue and the shared sizing are those of spill → shared
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
pub(crate) mod fields;
pub(crate) mod live;
pub(crate) mod sched;
mod seam;
pub(crate) mod select;
mod values;

pub(crate) use seam::Regdem;

use std::collections::{BTreeMap, BTreeSet};

use super::area::{Area, Options};
use super::prologue::{self, Shape};
use super::section::{call_order, split_at_symbols};
use super::{TransformError, not_applicable};
use crate::analysis::Cfg;
use crate::arch::ShaderModel;
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::Op;
use crate::sass::OpClass;
use crate::sass::encode;
use crate::sass::ir::{Function, OperandKind, RZ};
use crate::sass::relayout;
use fields::RegFields;
use select::{Analysis, Group, Layout, Strategy};
use values::{assign_values, block_pools, hoist_loads};

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

/// The functions of `kernel`'s text section (split at their symbols, by start), the
/// kernel's index among them and the call order from it. Refused: recursion, instructions
/// the operand tables do not cover, calls leaving the section or through a register.
fn kernel_section(
    cubin: &Cubin,
    functions: &[Function],
    kernel: &str,
    section: usize,
) -> Result<(Vec<Function>, usize, Vec<usize>), TransformError> {
    let mut owned = split_at_symbols(cubin, section, functions);
    owned.sort_by_key(|f| f.start);
    let funcs: Vec<&Function> = owned.iter().collect();
    let entry = funcs
        .iter()
        .position(|f| f.name == kernel && f.start == 0)
        .ok_or_else(|| {
            not_applicable("the kernel's code was not decoded at its section's start")
        })?;
    let (order, _) = call_order(&funcs, entry)?;
    let names: BTreeSet<&str> = funcs.iter().map(|g| g.name.as_str()).collect();
    for g in &funcs {
        if let Some(i) = g.instrs.iter().find(|i| i.unknown) {
            return Err(not_applicable(format!(
                "`{}` at {:#x} is not covered by the operand tables",
                i.opcode, i.offset
            )));
        }
        // Code outside the section (`vprintf`) or entered through a register would see
        // the renumbered registers: only calls of the section's own functions are handled.
        if let Some(i) = g.instrs.iter().find(|i| {
            i.is_call()
                && (i.has_mod("ABS")
                    || !i.gpr_reads().is_empty()
                    || i.callee.as_deref().is_some_and(|c| !names.contains(c)))
        }) {
            return Err(not_applicable(format!(
                "calls: `{}` at {:#x} calls code outside the kernel's section or through a register",
                i.opcode, i.offset
            )));
        }
    }
    Ok((owned, entry, order))
}

/// The liveness register demotion picks value registers with, for one kernel
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

/// The liveness register demotion picks value registers with ([`live`]: guarded writes end
/// nothing, a call reads its callee's live-in and ends what the callee writes on every path),
/// for `kernel` of a decoded cubin. tests/liveness_oracle.rs compares it with `nvdisasm -plr`.
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
    let sm = cubin.arch();
    if !ShaderModel::of(sm).rewrites {
        return Err(not_applicable(format!("sm_{sm} code is not rewritten")));
    }
    let target = opts
        .max_registers
        .ok_or_else(|| not_applicable("no target register budget"))?;
    let info = cubin
        .function_info(kernel)
        .ok_or_else(|| not_applicable(format!("no function `{kernel}`")))?;
    if !info.is_kernel {
        return Err(not_applicable(format!("`{kernel}` is not a kernel")));
    }
    let before = info.registers.unwrap_or(0);
    if before <= target {
        return Err(not_applicable(format!(
            "already at {before} registers, within the target of {target}"
        )));
    }
    if target < 8 {
        return Err(not_applicable(format!(
            "target of {target} registers is too low"
        )));
    }
    let section = info.text_section;
    let (owned, entry, order) = kernel_section(cubin, functions, kernel, section)?;
    let funcs: Vec<&Function> = owned.iter().collect();
    let f = funcs[entry];
    if !cubin.spill_offsets(section).is_empty()
        || funcs
            .iter()
            .flat_map(|g| g.instrs.iter())
            .any(|i| matches!(i.op(), Op::Stl | Op::Ldl))
    {
        return Err(not_applicable(
            "the kernel uses local memory (spills or arrays); demote its spills first",
        ));
    }
    // Sub-functions: renumbered with the kernel, never demoted.
    let others: Vec<usize> = (0..funcs.len()).filter(|&i| i != entry).collect();
    let effects = calls::effects(&funcs, &order);
    let callees = select::Callees {
        code: others
            .iter()
            .map(|&i| {
                (
                    funcs[i],
                    funcs[i].instrs.iter().map(fields::reg_fields).collect(),
                )
            })
            .collect(),
        calls: calls::called(f, &funcs, &effects)
            .into_iter()
            .map(|(k, e)| (k, (e.reads.clone(), e.writes.clone())))
            .collect(),
    };
    // Scoreboards a callee's `DEPBAR` counts on stay untouched too.
    let mut callee_depbars = 0u8;
    for &i in &others {
        callee_depbars |= sched::depbar_scoreboards(funcs[i]).map_err(not_applicable)?;
    }
    let highest_allowed = u8::try_from(target - COUNT_EXTRA)
        .map_err(|_| not_applicable("target above 255 registers"))?
        .min(RZ - 1);

    let fields: Vec<RegFields> = f.instrs.iter().map(fields::reg_fields).collect();
    let analysis = Analysis::new(sm, f, &fields, 4, &callees).map_err(not_applicable)?;
    let choice = choose(&analysis, highest_allowed).ok_or_else(|| {
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
    })?;
    let layout = &choice.layout;

    // Slots: one per demoted register.
    let slot_of: BTreeMap<u8, u32> = choice
        .demoted
        .iter()
        .flat_map(|g| g.regs())
        .enumerate()
        .map(|(i, r)| (r, i as u32))
        .collect();
    let area = Area::plan(&opts, info.static_shared, slot_of.len() as u32)?;

    // Per instruction: value registers and the renaming.
    let n = f.instrs.len();
    // Value registers: the reserved pool, and every register above the highest one the
    // layout uses, up to the target (free everywhere: value-register substitution).
    let pool: BTreeSet<u8> = if slot_of.is_empty() {
        BTreeSet::new()
    } else {
        (layout.pool..layout.pool + layout.pool_size)
            .chain(layout.highest + 1..=highest_allowed)
            .collect()
    };
    let mut last_use = [0usize; 256];
    let mut sites = vec![sched::Site::default(); n];
    // Per instruction: old register → new register.
    let mut renamed: Vec<[u8; 256]> = Vec::with_capacity(n);
    let mut load_slots: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut store_slots: Vec<Vec<u32>> = vec![Vec::new(); n];
    // Blocks: what a value register holds is only trusted inside one (§3.4 post-passes).
    let mut targets: BTreeSet<u64> = BTreeSet::new();
    for ins in &f.instrs {
        targets.extend(ins.target);
        targets.extend(ins.targets.iter().copied());
    }
    let control = |i: &crate::sass::ir::Instr| {
        matches!(i.class(), OpClass::Control | OpClass::Sync) || i.is_call()
    };
    let block_start: Vec<bool> = (0..n)
        .map(|k| targets.contains(&f.instrs[k].offset) || (k > 0 && control(&f.instrs[k - 1])))
        .collect();
    // Value-register substitution (§3.4): per block, the pool grows by the kept registers
    // dead throughout it.
    let called = calls::called(f, &funcs, &effects);
    let in_callees: BTreeSet<u8> = callees
        .code
        .iter()
        .flat_map(|(c, _)| c.instrs.iter())
        .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
        .collect();
    let pools = block_pools(
        f,
        &block_start,
        &live::liveness(f, &Cfg::build(f), &called, &BTreeSet::new()),
        &analysis,
        &choice.demoted,
        layout,
        &in_callees,
        &pool,
        sm,
    );
    // Value register → the demoted register whose current value it holds.
    let mut holds: [Option<u8>; 256] = [None; 256];
    // Demoted registers each instruction writes (original numbers).
    let mut wrote: Vec<BTreeSet<u8>> = vec![BTreeSet::new(); n];
    for (k, ins) in f.instrs.iter().enumerate() {
        if block_start[k] {
            holds.fill(None);
        }
        let here: Vec<Group> = analysis.named[k]
            .iter()
            .filter(|g| choice.demoted.contains(g))
            .copied()
            .collect();
        // Banks of the instruction's other (kept) source registers, for the bank-aware
        // choice of value registers.
        let mut banks = [0u32; 2];
        for r in ins.gpr_reads() {
            if let Some(g) = analysis.group_of[usize::from(r)]
                && !choice.demoted.contains(&g)
            {
                let new = layout.kept.get(&g.start).map_or(r, |&s| s + (r - g.start));
                banks[usize::from(new % 2)] += 1;
            }
        }
        let value_at = assign_values(&here, &pools[k], &mut last_use, k + 1, &holds, banks)
            .ok_or_else(|| {
                not_applicable(format!("{:#x}: value registers do not fit", ins.offset))
            })?;
        let new_reg = |r: u8| -> u8 {
            let Some(g) = analysis.group_of[usize::from(r)] else {
                return r;
            };
            let off = r - g.start;
            match value_at.get(&g) {
                Some(&v) => v + off,
                None => layout.kept.get(&g.start).map_or(r, |&s| s + off),
            }
        };
        let mut m = [0u8; 256];
        for (r, x) in m.iter_mut().enumerate() {
            *x = if r == usize::from(RZ) {
                RZ
            } else {
                new_reg(r as u8)
            };
        }
        renamed.push(m);
        if here.is_empty() {
            continue;
        }
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
        let site = &mut sites[k];
        let pos = |r: u8| usize::from(new_reg(r));
        for &r in &reads {
            // Redundant load elimination: the value register already holds it.
            if holds[pos(r)] != Some(r) {
                site.loads.push(new_reg(r));
                site.load_for.push(k);
                load_slots[k].push(slot_of[&r]);
                holds[pos(r)] = Some(r);
            }
            site.reads.push(new_reg(r));
        }
        wrote[k] = writes.clone();
        for &r in &writes {
            site.stores.push(new_reg(r));
            store_slots[k].push(slot_of[&r]);
            site.writes.push(new_reg(r));
            for h in holds.iter_mut() {
                if *h == Some(r) {
                    *h = None;
                }
            }
            holds[pos(r)] = Some(r);
        }
    }
    // Redundant store elimination: a store whose slot is stored again later in the block
    // before any load of it is dead.
    for k in 0..n {
        let mut keep = vec![true; store_slots[k].len()];
        for (j, &slot) in store_slots[k].iter().enumerate() {
            for kk in k + 1..n {
                if block_start[kk] || load_slots[kk].contains(&slot) {
                    break;
                }
                if store_slots[kk].contains(&slot) {
                    keep[j] = false;
                    break;
                }
            }
        }
        let mut it = keep.iter();
        sites[k].stores.retain(|_| *it.next().unwrap_or(&true));
        let mut it = keep.iter();
        store_slots[k].retain(|_| *it.next().unwrap_or(&true));
    }

    hoist_loads(
        &mut sites,
        &mut load_slots,
        &store_slots,
        &wrote,
        &block_start,
        &slot_of,
        f,
    );

    // Control bits.
    let flush: Vec<bool> = f
        .instrs
        .iter()
        .map(|i| {
            targets.contains(&i.offset)
                || matches!(i.class(), OpClass::Control | OpClass::Sync)
                || i.is_call()
        })
        .collect();
    let schedule =
        sched::schedule(sm, f, &sites, &flush, callee_depbars).map_err(not_applicable)?;

    // The prologue (temporaries from the pool: nothing lives there at entry).
    let base = layout.base;
    let pro = prologue::spill_base(
        Shape {
            sm,
            one_d: opts.one_d,
        },
        base,
        layout.pool,
        layout.pool + 1,
    );
    // No demoted register (compaction alone): no spill area, no prologue.
    let pro_words = if slot_of.is_empty() {
        Vec::new()
    } else {
        pro.words.clone()
    };
    let mut insertions: Vec<(u64, Vec<[u8; 16]>)> = Vec::new();
    if !pro_words.is_empty() {
        insertions.push((0, pro_words.clone()));
    }
    // Request order → is it an access (for the schedule check)?
    let mut is_access: Vec<bool> = vec![false; pro_words.len()];
    for k in 0..n {
        let off = f.instrs[k].offset;
        if !sites[k].loads.is_empty() {
            let words: Vec<[u8; 16]> = sites[k]
                .loads
                .iter()
                .zip(&load_slots[k])
                .zip(&schedule.loads[k])
                .map(|((&v, &s), &c)| encode::to_bytes(access::lds(v, base, area.imm(s), c)))
                .collect();
            is_access.extend(words.iter().map(|_| true));
            insertions.push((off, words));
        }
        if !sites[k].stores.is_empty() {
            let words: Vec<[u8; 16]> = sites[k]
                .stores
                .iter()
                .zip(&store_slots[k])
                .zip(&schedule.stores[k])
                .map(|((&v, &s), &c)| encode::to_bytes(access::sts(v, base, area.imm(s), c)))
                .collect();
            is_access.extend(words.iter().map(|_| true));
            insertions.push((off + 16, words));
        }
    }
    let loads: usize = sites.iter().map(|s| s.loads.len()).sum();
    let stores: usize = sites.iter().map(|s| s.stores.len()).sum();

    // A `BRA` into an instruction with loads enters through the loads (after the stores of
    // the instruction before, which run on fall-through only).
    let bra_targets: BTreeSet<u64> = f
        .instrs
        .iter()
        .filter(|i| i.op() == Op::Bra)
        .filter_map(|i| i.target)
        .collect();
    let heads: BTreeMap<u64, u64> = (1..n)
        .filter(|&k| !sites[k].loads.is_empty() && bra_targets.contains(&f.instrs[k].offset))
        .map(|k| (f.instrs[k].offset, sites[k - 1].stores.len() as u64))
        .collect();
    let mut out = cubin.clone();
    let relaid = relayout::insert_with_heads(&mut out, kernel, &insertions, &heads)?;
    let mut code = out.elf().sections[section].data.clone();
    // Rewrite the re-laid word of the original instruction at `offset` (its PC-relative
    // fields already re-encoded).
    let mut patch = |offset: u64, f: &dyn Fn(u128) -> u128| -> Result<(), TransformError> {
        let at = relaid
            .map
            .map(offset)
            .ok_or_else(|| not_applicable(format!("{offset:#x} lost in re-layout")))?
            as usize;
        let slot = code
            .get_mut(at..at + 16)
            .ok_or_else(|| not_applicable("re-layout moved an instruction outside the section"))?;
        let w = f(encode::from_bytes(slot.try_into().unwrap_or([0; 16])));
        slot.copy_from_slice(&encode::to_bytes(w));
        Ok(())
    };
    for (k, ins) in f.instrs.iter().enumerate() {
        // NOPs name no register; trailing padding is re-made by re-layout. A NOP ends a
        // block, though, and may now wait for our scoreboards.
        if ins.op() == Op::Nop {
            if schedule.original[k] != ins.ctrl {
                patch(ins.offset, &|w| {
                    encode::set_bits(w, 105, 23, u64::from(schedule.original[k].to_bits()))
                })?;
            }
            continue;
        }
        // The registers and the control field of the rewrite.
        patch(ins.offset, &|w| {
            let w = if fields[k].pinned {
                w
            } else {
                fields::rename(w, &fields[k], |r| renamed[k][usize::from(r)])
            };
            encode::set_bits(w, 105, 23, u64::from(schedule.original[k].to_bits()))
        })?;
    }
    // Sub-functions: the kernel's numbering, control bits as they were.
    let renumber = |r: u8| -> u8 {
        match analysis.group_of[usize::from(r)] {
            Some(g) => layout.kept.get(&g.start).map_or(r, |&s| s + (r - g.start)),
            None => r,
        }
    };
    for (c, cfields) in &callees.code {
        for (ins, fl) in c.instrs.iter().zip(cfields) {
            if ins.op() != Op::Nop && !fl.pinned {
                patch(ins.offset, &|w| fields::rename(w, fl, renumber))?;
            }
        }
    }
    let renamed: BTreeMap<u8, u8> = analysis
        .groups
        .iter()
        .filter_map(|g| Some((g, *layout.kept.get(&g.start)?)))
        .flat_map(|(g, to)| (0..g.size).map(move |o| (g.start + o, to + o)))
        .filter(|(a, b)| a != b)
        .collect();
    out.replace_text(kernel, code, &OffsetMap::new())?;
    let highest_used = sites
        .iter()
        .flat_map(|s| {
            s.reads
                .iter()
                .chain(&s.writes)
                .chain(&s.loads)
                .chain(&s.stores)
        })
        .copied()
        .chain([layout.highest])
        .max()
        .unwrap_or(layout.highest);
    let registers = u32::from(highest_used) + COUNT_EXTRA;
    out.set_register_count(kernel, registers)?;
    out.raise_maxreg_count(kernel, registers)?;
    if area.added > 0 {
        out.set_shared_size(kernel, info.static_shared + area.added)?;
        area.enforce(&mut out, kernel, &opts)?;
    }

    let base_defined_at = pro_words
        .len()
        .checked_sub(1)
        .and_then(|i| relaid.inserted.get(i))
        .copied()
        .unwrap_or(0);
    let accesses = relaid
        .inserted
        .iter()
        .zip(&is_access)
        .filter(|(_, a)| **a)
        .map(|(o, _)| *o)
        .collect();
    *cubin = out;
    Ok(Rewrite {
        kernel: kernel.to_string(),
        section,
        map: relaid.map,
        inserted: relaid.inserted,
        accesses,
        base_reg: base,
        base_defined_at,
        stride: area.stride,
        slots: area.slots,
        area_offset: area.offset,
        shared_added: area.added,
        registers_before: before,
        registers,
        demoted: choice.demoted.iter().map(|g| (g.start, g.size)).collect(),
        strategy: choice.strategy,
        loads,
        stores,
        renamed,
        options: opts,
    })
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
    use super::*;
    use crate::sass::control::Control;
    use crate::sass::ir::Instr;
    use crate::sass::operands::{self, Family};

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

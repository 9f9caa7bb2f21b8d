//! Where the rewrite puts things: the spill words' slots in the shared area (all of them,
//! or the hottest that fit) and the base register above every register the section uses.

use std::collections::BTreeSet;

use super::Partial;
use super::liveness::Calls;
use super::partial::{self, SlotPlan};
use super::scan::{Section, Spills};
use crate::sass::ir::RZ;
use crate::transform::area::{Area, Options};
use crate::transform::stack::Mode;
use crate::transform::{TransformError, not_applicable};

/// The slots and the area holding them.
pub(super) struct Placement {
    pub(super) plan: SlotPlan,
    pub(super) area: Area,
    /// Set when only the hottest words fit.
    pub(super) partial: Option<Partial>,
    /// Slots stacked frames would have needed (for the report's comparison).
    pub(super) stacked_slots: u32,
}

/// The registers the rewrite uses.
pub(super) struct Registers {
    /// Holds the per-thread base of the area.
    pub(super) base: u8,
    /// Temporaries of the prologue.
    pub(super) t0: u8,
    pub(super) t1: u8,
    /// The kernel's register count after the rewrite.
    pub(super) count: u32,
}

/// Every word in shared memory where the area fits; else the hottest, as many as fit
/// (issue 23, partial moves: the rest keep their local accesses).
pub(super) fn slots(
    sec: &Section,
    spills: &Spills,
    calls: &Calls,
    static_shared: u64,
    opts: &Options,
) -> Result<Placement, TransformError> {
    let all = slot_plan(spills, calls, &BTreeSet::new(), opts.stack);
    let (plan, area, partial) = match Area::plan(opts, static_shared, all.slots) {
        Ok(area) => (all, area, None),
        Err(why) => {
            let (plan, area, part) = partial_move(sec, spills, calls, static_shared, opts, why)?;
            (plan, area, Some(part))
        }
    };
    let stacked_slots = plan.stacked_slots(&calls.order);
    Ok(Placement {
        plan,
        area,
        partial,
        stacked_slots,
    })
}

/// The slots of every spill word but those in `local`, laid out by `mode`.
fn slot_plan(spills: &Spills, calls: &Calls, local: &BTreeSet<i64>, mode: Mode) -> SlotPlan {
    partial::slot_plan(
        &spills.words_of,
        &calls.cross,
        &calls.live,
        &calls.order,
        local,
        mode,
    )
}

/// The hottest words that fit the area (`full`: why all of them do not).
fn partial_move(
    sec: &Section,
    spills: &Spills,
    calls: &Calls,
    static_shared: u64,
    opts: &Options,
    full: TransformError,
) -> Result<(SlotPlan, Area, Partial), TransformError> {
    // The compressed layout's slot count does not depend on where variables sit: the
    // in-order layout sizes each try without the matching.
    let sizing = match opts.stack {
        Mode::Compressed => Mode::CompressedInOrder,
        m => m,
    };
    let heat = partial::spill_heat(&sec.funcs, &calls.order, &calls.live.calls, &spills.list);
    let units = partial::units(&heat);
    let fits = |local: &BTreeSet<i64>| {
        Area::plan(
            opts,
            static_shared,
            slot_plan(spills, calls, local, sizing).slots,
        )
        .is_ok()
    };
    let Some(local) = partial::choose(&units, fits) else {
        return Err(not_applicable(format!("not one spill word fits: {full}")));
    };
    let slots_plan = slot_plan(spills, calls, &local, opts.stack);
    let all = spills.all_words.len();
    let part = Partial {
        words_moved: all - local.len(),
        words: all,
        local_bytes: 4 * local.len() as u64,
        kept: local.iter().map(|w| 4 * w).collect(),
        full_slots: slot_plan(spills, calls, &BTreeSet::new(), sizing).slots,
    };
    let area = Area::plan(opts, static_shared, slots_plan.slots)?;
    Ok((slots_plan, area, part))
}

/// The base register above everything the section names, two temporaries for the prologue,
/// and the register count that follows, within the limit (`current`: the kernel's count).
pub(super) fn registers(
    sec: &Section,
    current: Option<u32>,
    opts: &Options,
) -> Result<Registers, TransformError> {
    let highest = sec
        .funcs
        .iter()
        .flat_map(|f| f.instrs.iter())
        .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
        .filter(|&r| r != RZ)
        .max()
        .unwrap_or(0);
    let base = highest
        .checked_add(1)
        .filter(|&r| r < RZ - 3)
        .ok_or_else(|| not_applicable("no free register"))?;
    let (t0, t1) = if base > 3 {
        (0, 2)
    } else {
        (base + 1, base + 2)
    };
    let count = (u32::from(base.max(t1)) + 3).max(current.unwrap_or(0));
    // By default the kernel keeps its register allocation class (counts are allocated in
    // units of 8), so the rewrite never changes occupancy through registers nor exceeds a
    // launch-bounds cap ptxas met.
    let current = current.unwrap_or(0);
    let limit = opts
        .max_registers
        .unwrap_or(current.div_ceil(8) * 8)
        .min(255);
    if count > limit {
        return Err(not_applicable(format!(
            "the base register needs {count} registers, above the limit of {limit}"
        )));
    }
    Ok(Registers {
        base,
        t0,
        t1,
        count,
    })
}

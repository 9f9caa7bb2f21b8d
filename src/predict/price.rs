//! A variant's predicted time per warp at its occupancy (docs/DESIGN.md §Prediction and
//! selection): the larger of the terms that bound a scheduler's work, after Resios'
//! saturation model (docs/papers.md §Resios). With `W` warps resident per scheduler:
//!
//! - **latency / W**: a warp's stalls and waits, which the other warps' work overlaps;
//! - **issue**: the cycles the warp occupies its scheduler's pipes;
//! - **L1, L2, DRAM**: the cycles the warp's bytes need of each level's bandwidth
//!   ([`super::memory::Ceilings`]).
//!
//! More warps hide latency until a pipe or a memory level is saturated, and then only queue.

use serde::Serialize;

use super::memory::{Ceilings, Placement};
use super::stalls::{Cost, function_cost};
use crate::arch::Sm;
use crate::arch::latency::SCHEDULERS_PER_SM;
use crate::arch::memory::MemoryParams;
use crate::sass::ir::Function;

/// The parameters one architecture is priced with: the published ones
/// ([`Sm::memory`]) or a calibration's (`predict::calibration`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub sm: u32,
    pub memory: MemoryParams,
}

impl Model {
    /// sm_`sm` with its published parameters.
    pub fn published(sm: u32) -> Model {
        Model {
            sm,
            memory: Sm::of(sm).memory(),
        }
    }
}

/// What a variant has of one SM at one launch: its resident warps, each thread's local frame,
/// and the L1 the carve-out leaves ([`super::memory::l1_left`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    pub warps_per_sm: u32,
    pub frame_bytes: u32,
    pub l1_bytes: u32,
}

/// Which term sets a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Term {
    Latency,
    Issue,
    L1,
    L2,
    Dram,
    /// Held at the bound of its budget: no better than ptxas's own code with the budget's
    /// warps ([`super::coherence`]).
    Bound,
}

impl Term {
    pub fn name(self) -> &'static str {
        match self {
            Term::Latency => "latency",
            Term::Issue => "issue",
            Term::L1 => "L1",
            Term::L2 => "L2",
            Term::Dram => "DRAM",
            Term::Bound => "bound",
        }
    }
}

/// The predictor's verdict on one kernel variant at one launch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    pub cost: Cost,
    /// Resident warps per scheduler.
    pub(crate) warps_per_scheduler: f64,
    /// Predicted cycles per warp, the largest term. Lower is better.
    pub cycles_per_warp: f64,
    /// `latency / W`, the term more warps shrink.
    pub latency_share: f64,
    pub ceilings: Ceilings,
    pub placement: Placement,
    pub bound_by: Term,
    /// The variant priced alone, before ptxas's own code floors it
    /// ([`super::coherence::price`]); equal to `cycles_per_warp` where nothing does.
    pub own_cycles: f64,
}

/// `cost` with `warps_per_sm` resident warps, its local data placed as `placement`.
pub fn combine(
    m: &MemoryParams,
    cost: Cost,
    warps_per_sm: u32,
    placement: Placement,
) -> Prediction {
    let w = (f64::from(warps_per_sm) / f64::from(SCHEDULERS_PER_SM)).max(f64::MIN_POSITIVE);
    let ceilings = Ceilings::new(m, &placement, &cost.bytes);
    let latency_share = cost.latency / w;
    // A tie with latency goes to the throughput term: more warps would not help (the old
    // `issue >= latency / W`); ties among throughput terms to the nearer level.
    let (bound_by, cycles) = [
        (Term::Latency, latency_share),
        (Term::Issue, cost.issue),
        (Term::L1, ceilings.l1),
        (Term::L2, ceilings.l2),
        (Term::Dram, ceilings.dram),
    ]
    .into_iter()
    .fold((Term::Latency, f64::NEG_INFINITY), |best, t| {
        if t.1 > best.1 || (t.1 == best.1 && best.0 == Term::Latency) {
            t
        } else {
            best
        }
    });
    Prediction {
        cost,
        warps_per_scheduler: w,
        cycles_per_warp: cycles,
        latency_share,
        ceilings,
        placement,
        bound_by,
        own_cycles: cycles,
    }
}

/// Kernel `kernel` among `functions` (its device functions included) with residency `r`.
pub fn predict(
    model: &Model,
    functions: &[Function],
    kernel: &str,
    r: Residency,
) -> Option<Prediction> {
    let placement = Placement::new(&model.memory, r.frame_bytes, r.warps_per_sm, r.l1_bytes);
    let cost = function_cost(
        model.sm,
        &placement.latencies(&model.memory),
        functions,
        kernel,
    )?;
    Some(combine(&model.memory, cost, r.warps_per_sm, placement))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::stalls::{Spent, Traffic};

    fn cost(latency: f64, issue: f64, global: f64) -> Cost {
        Cost {
            latency,
            issue,
            local_accesses: 0.0,
            instructions: 0.0,
            local: Spent::default(),
            bytes: Traffic {
                global,
                ..Traffic::default()
            },
        }
    }

    fn fits() -> Placement {
        Placement {
            working_set: 0,
            l1_bytes: 0,
            l1_hit: 1.0,
            l2_hit: 1.0,
        }
    }

    #[test]
    fn warps_hide_latency_until_a_pipe_is_full() {
        let m = Sm::of(86).memory();
        // 12 cycles of latency, 3 of issue, no memory.
        let c = cost(12.0, 3.0, 0.0);
        // One warp per scheduler: latency-bound, 12 cycles.
        let p = combine(&m, c, 4, fits());
        assert_eq!((p.cycles_per_warp, p.bound_by), (12.0, Term::Latency));
        // Four per scheduler hide the stalls: 3 cycles, issue-bound.
        let p = combine(&m, c, 16, fits());
        assert_eq!((p.cycles_per_warp, p.bound_by), (3.0, Term::Issue));
    }

    /// Resios' saturation point for DRAM: a warp that loads 128 bytes per 500 cycles of latency
    /// gains from more warps only until DRAM's bytes per clock are used up.
    #[test]
    fn dram_bandwidth_caps_what_more_warps_buy() {
        let m = Sm::of(90).memory();
        let c = cost(500.0, 8.0, 128.0);
        let dram = 4.0 * 128.0 / m.dram_bytes_per_clock;
        let at = |warps| combine(&m, c, warps, fits());
        // 32 warps: 8 per scheduler, 62.5 cycles of latency each, above DRAM's 40.
        assert_eq!(at(32).bound_by, Term::Latency);
        assert_eq!(at(32).cycles_per_warp, 62.5);
        // 64 warps: latency would be 31.25, but DRAM needs 40 cycles per warp.
        assert_eq!(at(64).bound_by, Term::Dram);
        assert!((at(64).cycles_per_warp - dram).abs() < 1e-9);
        assert!(dram > 31.25 && dram < 62.5, "{dram}");
    }
}

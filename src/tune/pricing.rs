//! How a step prices its kernels' candidates (docs/DESIGN.md §Prediction and selection): its
//! architecture's model (published or calibrated) and ptxas's own code, which every
//! candidate is priced against, and the bound of a budget that pruning judges it by
//! (`predict::coherence`).

use super::candidates::KernelPlan;
use super::record::Limit;
use super::select::worst_gain;
use crate::predict::coherence::{self, Own};
use crate::predict::{Arch, Model, Prediction, Residency};
use crate::sass::Function;

/// How a step prices its kernels' candidates: its architecture's model (published or
/// calibrated) and ptxas's own code, which every candidate is priced against
/// ([`coherence`]).
#[derive(Debug, Clone, Copy)]
pub struct Pricing<'a> {
    pub(crate) model: Model,
    pub(crate) arch: Arch,
    pub(crate) relocatable: bool,
    /// The baseline cubin's SASS (empty: no prediction).
    pub(crate) baseline: &'a [Function],
}

impl Pricing<'_> {
    pub(crate) fn own(&self, p: &KernelPlan) -> Own<'_> {
        Own {
            functions: self.baseline,
            frame_bytes: p.baseline_frame,
        }
    }

    /// The residency budget `regs` buys `p` with ptxas's own frame and shared memory, per
    /// block size.
    fn residencies(&self, p: &KernelPlan, regs: u32) -> Vec<Residency> {
        p.residencies(
            self.arch,
            &self.model.memory,
            regs,
            p.static_shared,
            p.baseline_frame,
            self.relocatable,
        )
    }

    /// Budget `regs`'s bound per block size of `p` (`None` where it cannot launch): ptxas's
    /// own code with the warps the budget buys.
    fn bounds(&self, p: &KernelPlan, regs: u32) -> Vec<Option<Prediction>> {
        let own = self.own(p);
        self.residencies(p, regs)
            .into_iter()
            .map(|r| {
                (r.warps_per_sm > 0)
                    .then(|| coherence::bound(&self.model, &own, &p.name, r))
                    .flatten()
            })
            .collect()
    }

    /// The cycles per warp of budget `regs`'s bound, per block size of `p` (`None` where it
    /// cannot launch): ptxas's own code with the warps the budget buys.
    pub fn bound_cycles(&self, p: &KernelPlan, regs: u32) -> Vec<Option<f64>> {
        self.bounds(p, regs)
            .into_iter()
            .map(|b| b.map(|b| b.cycles_per_warp))
            .collect()
    }

    /// Whether budget `regs` buys `p` more resident warps than ptxas's own count at some
    /// block size considered: the architecture's occupancy limits alone, whatever the
    /// kernel's reuse and working set. The one bound measured builds prune by.
    pub fn raises_occupancy(&self, p: &KernelPlan, regs: u32) -> bool {
        let base = self.residencies(p, p.baseline_regs);
        let at = self.residencies(p, regs);
        base.iter()
            .zip(&at)
            .any(|(b, a)| a.warps_per_sm > b.warps_per_sm)
    }

    /// What decides budget `regs`'s bound (`bound_percent`): at the block size where its gain
    /// is least, no warps to gain there, else the term that sets the bound's cycles (the
    /// model's DRAM floor without reuse, its issue bound, ...).
    pub fn bound_limit(&self, p: &KernelPlan, regs: u32) -> Limit {
        let base_warps = self.residencies(p, p.baseline_regs);
        let at_warps = self.residencies(p, regs);
        let base = self.bounds(p, p.baseline_regs);
        let at = self.bounds(p, regs);
        let mut worst: Option<(f64, usize)> = None;
        for (i, (b, a)) in base.iter().zip(&at).enumerate() {
            let (Some(b), Some(a)) = (b, a) else { continue };
            if a.cycles_per_warp <= 0.0 {
                continue;
            }
            let gain = b.cycles_per_warp / a.cycles_per_warp;
            if worst.is_none_or(|(g, _)| gain < g) {
                worst = Some((gain, i));
            }
        }
        let Some((_, i)) = worst else {
            return Limit::NoOccupancyGain;
        };
        if at_warps[i].warps_per_sm <= base_warps[i].warps_per_sm {
            return Limit::NoOccupancyGain;
        }
        at[i]
            .as_ref()
            .map_or(Limit::NoOccupancyGain, |a| Limit::of_term(a.bound_by))
    }

    /// ptxas's own cycles per warp, per block size of `p`.
    pub fn baseline_cycles(&self, p: &KernelPlan) -> Vec<Option<f64>> {
        self.bound_cycles(p, p.baseline_regs)
    }

    /// The bound of budget `regs` in percent: what it gains over ptxas's own code at most,
    /// worst case over the block sizes (minus infinity where it cannot launch).
    pub fn bound_percent(&self, p: &KernelPlan, regs: u32) -> f64 {
        worst_gain(&self.baseline_cycles(p), &self.bound_cycles(p, regs))
            .unwrap_or(f64::NEG_INFINITY)
    }
}

//! How a step prices its kernels' candidates (docs/DESIGN.md §Prediction and selection): its
//! architecture's model (published or calibrated) and ptxas's own code, which every
//! candidate is priced against, and the bound of a budget that pruning judges it by
//! (`predict::coherence`).

use super::candidates::KernelPlan;
use super::select::worst_gain;
use crate::predict::coherence::{self, Own};
use crate::predict::{Arch, Model};
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

    /// The cycles per warp of budget `regs`'s bound, per block size of `p` (`None` where it
    /// cannot launch): ptxas's own code with the warps the budget buys.
    pub fn bound_cycles(&self, p: &KernelPlan, regs: u32) -> Vec<Option<f64>> {
        let own = self.own(p);
        p.residencies(
            self.arch,
            &self.model.memory,
            regs,
            p.static_shared,
            p.baseline_frame,
            self.relocatable,
        )
        .into_iter()
        .map(|r| {
            (r.warps_per_sm > 0)
                .then(|| coherence::bound(&self.model, &own, &p.name, r))
                .flatten()
                .map(|b| b.cycles_per_warp)
        })
        .collect()
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

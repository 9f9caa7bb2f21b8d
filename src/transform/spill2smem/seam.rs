//! `spill2smem` behind the rewrite seam ([`crate::transform::Transform`]): how the tuner
//! offers it, what it claims and how its report line reads.

use super::{Rewrite, spill2smem};
use crate::cubin::Cubin;
use crate::sass::ir::Function;
use crate::transform::area::{Options, STATIC_SHARED_LIMIT, proof_note};
use crate::transform::seam::{Claim, SpillBase};
use crate::transform::{Rewritten, Transform, TransformError};

/// `spill2smem`, as registered in [`crate::transform::REGISTERED`].
pub(crate) struct Spill2Smem;

impl Transform for Spill2Smem {
    fn key(&self) -> &'static str {
        "spill2smem"
    }

    /// At the lowest plain budget, compiled one register lower: the base register brings it
    /// back (docs/DESIGN.md §spill2smem).
    fn offer(&self, plain: &[u32], _baseline: u32) -> Vec<(u32, u32)> {
        plain
            .iter()
            .min()
            .map(|&lowest| (lowest, lowest.saturating_sub(1)))
            .into_iter()
            .collect()
    }

    /// At the shipped budget itself, compiled one register lower so the base register keeps
    /// the kernel within it (a user's limit is a promise; issue 23).
    fn offer_at_limit(&self, baseline: u32) -> Option<(u32, u32)> {
        // ptxas does not go below 16 registers in practice (`tune::candidates::MIN_BUDGET`).
        (baseline > 16).then(|| (baseline, baseline - 1))
    }

    fn mark_budget(&self, _compiled_at: u32, budget: &mut nvcc_orion_schema::Budget) {
        budget.spill2smem = true;
    }

    fn explained(&self) -> bool {
        true
    }

    fn skip(&self, cubin: &Cubin, kernel: &str) -> Option<TransformError> {
        let spills = cubin
            .function_info(kernel)
            .is_some_and(|i| !cubin.spill_offsets(i.text_section).is_empty());
        (!spills).then(|| TransformError::NotApplicable("no spills".into()))
    }

    fn apply(
        &self,
        cubin: &mut Cubin,
        functions: &[Function],
        kernel: &str,
        opts: Options,
    ) -> Result<Box<dyn Rewritten>, TransformError> {
        Ok(Box::new(spill2smem(cubin, functions, kernel, opts)?))
    }
}

impl Rewritten for Rewrite {
    fn kernel(&self) -> &str {
        &self.kernel
    }

    fn section(&self) -> usize {
        self.section
    }

    fn claim(&self) -> Claim {
        Claim {
            map: self.map.clone(),
            inserted: self.inserted.clone(),
            base: Some(SpillBase {
                reg: self.base_reg,
                defined_at: self.base_defined_at,
                stride: self.stride,
                slots: self.slots,
                area: self.area_offset,
            }),
            passed: self.passed.clone(),
            renamed: Default::default(),
        }
    }

    fn summary(&self, checked: usize, shapes: usize) -> String {
        let mut stack = String::new();
        if self.stacked_slots != self.slots || self.moves > 0 {
            stack = format!(
                " (stack compressed from {} stacked slots, {} moved around calls)",
                self.stacked_slots, self.moves
            );
        }
        let kept = if let Some(p) = &self.partial {
            format!(
                "; partly moved: {} of {} spill words, {} bytes left in local memory ({} instructions): the area limit at {} threads, all {} slots need {} bytes beside the kernel's {}, above {} bytes of static shared memory",
                p.words_moved,
                p.words,
                p.local_bytes,
                self.kept_local,
                self.options.threads,
                p.full_slots,
                u64::from(p.full_slots) * u64::from(self.stride),
                self.area_offset,
                STATIC_SHARED_LIMIT
            )
        } else if self.kept_local > 0 {
            format!(
                "; {} kept in local memory (values passed between functions)",
                self.kept_local
            )
        } else if self.frame_released > 0 {
            format!("; local frame of {} bytes released", self.frame_released)
        } else {
            String::new()
        };
        format!(
            "{} spill instructions moved to {} shared slots{stack} ({} bytes per block for {} threads, {}){kept}; {} registers; proved ({checked} instructions checked)",
            self.spills,
            self.slots,
            self.shared_added,
            self.options.threads,
            self.options.source.describe(),
            self.registers,
        ) + &proof_note(shapes, &self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_at_the_shipped_budget_within_it() {
        // Compiled one lower; the base register brings it back to the limit, never above.
        assert_eq!(Spill2Smem.offer_at_limit(32), Some((32, 31)));
        assert_eq!(Spill2Smem.offer_at_limit(64), Some((64, 63)));
        assert_eq!(Spill2Smem.offer_at_limit(16), None);
    }
}

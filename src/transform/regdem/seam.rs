//! `regdem` behind the rewrite seam ([`crate::transform::Transform`]): how the
//! tuner offers it, what it claims and how its report line reads.

use super::{Rewrite, regdem};
use crate::cubin::Cubin;
use crate::sass::ir::Function;
use crate::transform::area::{Options, proof_note};
use crate::transform::seam::{Claim, SpillBase};
use crate::transform::{Rewritten, Transform, TransformError};

/// `regdem`, as registered in [`crate::transform::REGISTERED`].
pub(crate) struct Regdem;

impl Transform for Regdem {
    fn key(&self) -> &'static str {
        "regdem"
    }

    /// At each plain budget below ptxas's own count: the efficient binary (compiled at that
    /// count) rewritten to the budget (docs/papers.md §RegDem).
    fn offer(&self, plain: &[u32], baseline: u32) -> Vec<(u32, u32)> {
        plain
            .iter()
            .filter(|&&r| r < baseline)
            .map(|&r| (r, baseline))
            .collect()
    }

    fn mark_budget(&self, compiled_at: u32, budget: &mut nvcc_orion_schema::Budget) {
        budget.regdem_from = Some(compiled_at);
    }

    fn apply(
        &self,
        cubin: &mut Cubin,
        functions: &[Function],
        kernel: &str,
        opts: Options,
    ) -> Result<Box<dyn Rewritten>, TransformError> {
        Ok(Box::new(regdem(cubin, functions, kernel, opts)?))
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
            // Compaction alone uses no spill area.
            base: (self.slots > 0).then_some(SpillBase {
                reg: self.base_reg,
                defined_at: self.base_defined_at,
                stride: self.stride,
                slots: self.slots,
                area: self.area_offset,
            }),
            passed: Vec::new(),
            renamed: self.renamed.clone(),
        }
    }

    fn summary(&self, checked: usize, shapes: usize) -> String {
        format!(
            "{} → {} registers: {} register(s) demoted ({}), {} loads and {} stores inserted, {} shared slots ({} bytes per block for {} threads, {}); proved ({checked} instructions checked, control bits of every access checked)",
            self.registers_before,
            self.registers,
            self.demoted.iter().map(|&(_, s)| u32::from(s)).sum::<u32>(),
            self.strategy.name(),
            self.loads,
            self.stores,
            self.slots,
            self.shared_added,
            self.options.threads,
            self.options.source.describe(),
        ) + &proof_note(shapes, &self.options)
    }
}

//! The tuner's records in the report's schema ([`nvcc_orion_schema`]): the one place the
//! tuner's own types become the JSON the report holds, so the writer and every reader
//! (`explain`, the generator's harness) share one definition of each field.

use nvcc_orion_schema as schema;

use super::candidates::{BlockFrom, DynamicShared};
use super::guided::{Measured, MeasuredVariant};
use super::ptx::Budget;
use super::record::{Assembly, Embedded, KeptCubins, KernelRecord, Limit, Pruned, Verdict};
use super::select::{Evaluated, MemoryTerms};
use crate::predict::memory::Level;
use crate::predict::price::Term;
use crate::predict::stalls::Traffic;

impl KernelRecord {
    /// The record as the report writes it, `unit` (the translation unit, when known) last.
    pub(crate) fn to_schema(&self, unit: Option<&str>) -> schema::Record {
        schema::Record {
            arch: self.arch.clone(),
            kernel: self.kernel.clone(),
            output: self.output.clone(),
            source: None,
            block_sizes: self.block_sizes.clone(),
            block_from: block_from(self.block_from),
            candidates: self.candidates.iter().map(candidate).collect(),
            pruned: self.pruned.iter().map(pruned).collect(),
            chosen: self.chosen,
            chosen_registers: self.chosen_registers,
            gain_percent: self.gain_percent,
            reason: self.reason.clone(),
            transform: self.transform.clone(),
            verdict: self.verdict.as_ref().map(verdict),
            cubins: self.cubins.as_ref().map(kept_cubins),
            measured: self.measured.as_ref().map(measured),
            variants: self.variants.iter().map(embedded).collect(),
            assembly: self.assembly.map(assembly),
            selector: self.selector.clone(),
            dynamic_shared: self.dynamic_shared.map(dynamic_shared),
            kept_by: self.kept_by.map(limit),
            train_would_measure: self.train_would_measure.iter().map(budget).collect(),
            unit: unit.map(str::to_string),
        }
    }
}

/// A budget as the report writes it; a rewrite's candidate carries its rewrite's mark
/// ([`crate::transform::Transform::mark_budget`]).
pub(crate) fn budget(b: &Budget) -> schema::Budget {
    let mut out = schema::Budget {
        regs: b.regs,
        smem_spill: b.smem_spill,
        ..schema::Budget::default()
    };
    if let (Some(r), Some(t)) = (b.rewrite, b.transform()) {
        t.mark_budget(r.from, &mut out);
    }
    out
}

pub(crate) fn candidate(e: &Evaluated) -> schema::Candidate {
    schema::Candidate {
        budget: e.budget.as_ref().map(budget),
        registers: e.registers,
        spill_instructions: e.spill_instructions,
        frame_bytes: e.frame_bytes,
        static_shared: e.static_shared,
        warps_per_sm: e.warps_per_sm.clone(),
        cycles_per_warp: e.cycles_per_warp.clone(),
        latency: e.latency,
        issue: e.issue,
        local_accesses: e.local_accesses,
        bytes: traffic(&e.bytes),
        memory: e
            .memory
            .iter()
            .map(|m| m.as_ref().map(memory_terms))
            .collect(),
        bound_percent: e.bound_percent,
        measured_only: e.measured_only,
    }
}

fn traffic(t: &Traffic) -> schema::Traffic {
    schema::Traffic {
        global: t.global,
        local: t.local,
        shared: t.shared,
    }
}

fn memory_terms(m: &MemoryTerms) -> schema::MemoryTerms {
    schema::MemoryTerms {
        working_set: m.working_set,
        l1_bytes: m.l1_bytes,
        spills_hit: level(m.spills_hit),
        l1_hit: m.l1_hit,
        l2_hit: m.l2_hit,
        latency: m.latency,
        issue: m.issue,
        l1: m.l1,
        l2: m.l2,
        dram: m.dram,
        l2_bytes: m.l2_bytes,
        dram_bytes: m.dram_bytes,
        bound_by: term(m.bound_by),
        own_cycles: m.own_cycles,
    }
}

fn pruned(p: &Pruned) -> schema::Pruned {
    schema::Pruned {
        budget: budget(&p.budget),
        bound_percent: p.bound_percent,
        limit: Some(limit(p.limit)),
    }
}

fn verdict(v: &Verdict) -> schema::Verdict {
    schema::Verdict {
        budget: v.budget,
        proved: v.proved,
        detail: v.detail.clone(),
    }
}

fn kept_cubins(k: &KeptCubins) -> schema::KeptCubins {
    schema::KeptCubins {
        candidates: k.candidates.clone(),
        before_rewrite: k.before_rewrite.clone(),
    }
}

fn measured(m: &Measured) -> schema::Measured {
    schema::Measured {
        profile: m.profile.clone(),
        configurations: m.configurations,
        variants: m.variants.iter().map(measured_variant).collect(),
        winner: m.winner,
        rank_error: m.rank_error,
    }
}

fn measured_variant(v: &MeasuredVariant) -> schema::MeasuredVariant {
    schema::MeasuredVariant {
        variant: v.variant,
        name: v.name.clone(),
        candidate: v.candidate,
        registers: v.registers,
        cycles_per_warp: v.cycles_per_warp.clone(),
        measured_us: v.measured_us,
    }
}

pub(crate) fn embedded(e: &Embedded) -> schema::Embedded {
    schema::Embedded {
        variant: e.variant,
        name: e.name.clone(),
        candidate: e.candidate,
        registers: e.registers,
        frame_bytes: e.frame_bytes,
        spill_instructions: e.spill_instructions,
        same_code: e.same_code,
        dropped: e.dropped.clone(),
        left_out: e.left_out.map(limit),
    }
}

pub(crate) fn block_from(b: BlockFrom) -> schema::BlockFrom {
    match b {
        BlockFrom::Reqntid => schema::BlockFrom::Reqntid,
        BlockFrom::LaunchBounds => schema::BlockFrom::LaunchBounds,
        BlockFrom::Setting => schema::BlockFrom::Setting,
        BlockFrom::Assumed => schema::BlockFrom::Assumed,
    }
}

pub(crate) fn dynamic_shared(d: DynamicShared) -> schema::DynamicShared {
    match d {
        DynamicShared::Given(n) => schema::DynamicShared::Given(n),
        DynamicShared::Unknown => schema::DynamicShared::Unknown,
    }
}

fn limit(l: Limit) -> schema::Limit {
    match l {
        Limit::NoOccupancyGain => schema::Limit::NoOccupancyGain,
        Limit::DramWithoutReuse => schema::Limit::DramWithoutReuse,
        Limit::Issue => schema::Limit::Issue,
        Limit::Latency => schema::Limit::Latency,
        Limit::L1 => schema::Limit::L1,
        Limit::L2 => schema::Limit::L2,
        Limit::BelowMargin => schema::Limit::BelowMargin,
        Limit::BuildCost => schema::Limit::BuildCost,
        Limit::Stopped => schema::Limit::Stopped,
        Limit::Outbid => schema::Limit::Outbid,
        Limit::ObjectSize => schema::Limit::ObjectSize,
    }
}

fn assembly(a: Assembly) -> schema::Assembly {
    match a {
        Assembly::Variant => schema::Assembly::Variant,
        Assembly::Spliced => schema::Assembly::Spliced,
        Assembly::WholeModule => schema::Assembly::WholeModule,
        Assembly::MultiVariant => schema::Assembly::MultiVariant,
        Assembly::VariantsAdded => schema::Assembly::VariantsAdded,
    }
}

fn level(l: Level) -> schema::Level {
    match l {
        Level::L1 => schema::Level::L1,
        Level::L2 => schema::Level::L2,
        Level::Dram => schema::Level::Dram,
    }
}

fn term(t: Term) -> schema::Term {
    match t {
        Term::Latency => schema::Term::Latency,
        Term::Issue => schema::Term::Issue,
        Term::L1 => schema::Term::L1,
        Term::L2 => schema::Term::L2,
        Term::Dram => schema::Term::Dram,
        Term::Bound => schema::Term::Bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewritten_budgets_keep_the_report_format() {
        use crate::transform::{regdem::Regdem, spill2smem::Spill2Smem};
        use crate::tune::ptx::Budget;
        let json = |b: Budget| serde_json::to_string(&budget(&b)).unwrap();
        assert_eq!(json(Budget::regs(40)), r#"{"regs":40,"smem_spill":false}"#);
        let shared = Budget::rewritten_by(&Spill2Smem, 40, 39);
        assert_eq!(
            json(shared),
            r#"{"regs":40,"smem_spill":false,"spill2smem":true}"#
        );
        assert_eq!(
            (shared.to_string(), shared.ptxas_regs()),
            ("40+spill2smem".into(), 39)
        );
        let demoted = Budget::rewritten_by(&Regdem, 32, 48);
        assert_eq!(
            json(demoted),
            r#"{"regs":32,"smem_spill":false,"regdem_from":48}"#
        );
        assert_eq!(
            (demoted.to_string(), demoted.ptxas_regs()),
            ("32+regdem".into(), 48)
        );
        assert_eq!(demoted.transform().map(|t| t.key()), Some("regdem"));
        assert!(demoted.rewritten() && !Budget::regs(32).rewritten());
    }

    #[test]
    fn dynamic_shared_is_bytes_or_unknown() {
        let d = [DynamicShared::Given(4096), DynamicShared::Unknown].map(dynamic_shared);
        assert_eq!(serde_json::to_string(&d).unwrap(), "[4096,\"unknown\"]");
    }
}

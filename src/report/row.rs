//! One kernel of a project in one line: the overview's row, taken from its report record
//! (the file it came from, architecture, registers, spills, occupancy and its limiter, launch
//! bounds, what the tuner tried, what it chose and why, how the cubin was assembled).

use nvcc_orion_schema::{Assembly, Budget, Candidate, Limit, Record};

use super::{budget, budget_tag, list};

/// A kernel and architecture of the project.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The translation unit (the record's `unit`), else the name nvcc gave the step's output.
    pub file: String,
    /// The kernel's symbol, and its short name.
    pub kernel: String,
    pub name: String,
    pub arch: String,
    /// ptxas's own registers and spill instructions, and the shipped candidate's.
    pub ptxas_regs: u64,
    pub regs: u64,
    pub ptxas_spills: u64,
    pub spills: u64,
    /// Occupancy of the shipped candidate per block size, in percent of the SM's warp slots.
    pub occupancy: Vec<u32>,
    /// What stops one more block fitting (`registers`, `shared memory`, `block size`, `warps`).
    pub limiter: String,
    /// Block sizes and where they came from (`launch-bounds`, `reqntid`, `setting`, `assumed`).
    pub blocks: String,
    pub bounds: String,
    /// The budgets built and those pruned, in words.
    pub tried: String,
    /// What ships: `ptxas` or the candidate's budget and kind.
    pub chose: String,
    /// A lower budget or a rewrite ships instead of ptxas's own code.
    pub retuned: bool,
    /// The reason in a few words, for grouping; `reason` in full.
    pub why: &'static str,
    pub reason: String,
    /// How the tuned cubin was put together (`spliced`, `variant`, ...), when it was.
    pub assembly: String,
}

impl Row {
    /// The key two builds' rows are matched by.
    pub fn key(&self) -> (String, String, String) {
        (self.file.clone(), self.arch.clone(), self.kernel.clone())
    }
}

/// The row of one kernel record (`None` for a record that names no kernel).
pub fn of(r: &Record) -> Option<Row> {
    if r.kernel.is_empty() {
        return None;
    }
    let base = r.baseline()?;
    let c = r.chosen_candidate()?;
    let (chose_budget, kind) = budget(r, c.budget.as_ref());
    let retuned = r.chosen != 0;
    Some(Row {
        file: file_of(r),
        name: crate::cubin::symbols::short_name(&r.kernel),
        kernel: r.kernel.clone(),
        arch: r.arch.clone(),
        ptxas_regs: u64::from(base.registers),
        regs: u64::from(c.registers),
        ptxas_spills: u64::from(base.spill_instructions),
        spills: u64::from(c.spill_instructions),
        occupancy: occupancy(r, c),
        limiter: super::limiter::of(r, c).unwrap_or_else(|| "-".to_string()),
        blocks: list(&r.block_sizes),
        bounds: r.block_from.name().to_string(),
        tried: tried(r),
        chose: if retuned {
            format!("{chose_budget} ({kind})")
        } else {
            "ptxas".to_string()
        },
        retuned,
        why: kept_group(r).unwrap_or_else(|| why(&r.reason, retuned)),
        reason: r.reason.clone(),
        assembly: r.assembly.as_ref().map_or("", Assembly::name).to_string(),
    })
}

/// The record's translation unit; a report from before `unit` names the step's output, whose
/// nvcc temporary name (`tmpxft_…-8_walk.sm_90.cubin`) still carries the source's stem.
fn file_of(r: &Record) -> String {
    if let Some(u) = &r.unit {
        return u.clone();
    }
    let out = r.output.as_str();
    let base = out.rsplit('/').next().unwrap_or(out);
    let base = match base.strip_prefix("tmpxft_") {
        Some(rest) => rest.split_once('_').map_or(rest, |(_, r)| r),
        None => base,
    };
    let base = base
        .split_once('_')
        .map_or(base, |(n, rest)| if n.contains('-') { rest } else { base });
    match base.split_once(".sm_") {
        Some((stem, _)) => format!("{stem} (from {out})"),
        None => base.to_string(),
    }
}

/// Percent of the warp slots per block size (empty for an untuned architecture).
fn occupancy(r: &Record, c: &Candidate) -> Vec<u32> {
    let Some(max) = super::svg::arch_of(&r.arch)
        .map(|a| a.params().max_warps_per_sm())
        .filter(|&m| m > 0)
    else {
        return Vec::new();
    };
    c.warps_per_sm.iter().map(|&w| 100 * w / max).collect()
}

/// `40, 32, 32+smem; pruned 56`: the candidates built besides ptxas's own, then the budgets
/// not built; `-` when nothing was.
fn tried(r: &Record) -> String {
    let built: Vec<String> = r
        .candidates
        .iter()
        .skip(1)
        .map(|c| budget_word(r, c.budget.as_ref()))
        .collect();
    let pruned: Vec<String> = r
        .pruned
        .iter()
        .map(|p| budget_word(r, Some(&p.budget)))
        .collect();
    let mut s = built.join(", ");
    if !pruned.is_empty() {
        if !s.is_empty() {
            s.push_str("; ");
        }
        s.push_str("pruned ");
        s.push_str(&pruned.join(", "));
    }
    if s.is_empty() { "-".to_string() } else { s }
}

fn budget_word(r: &Record, b: Option<&Budget>) -> String {
    let (word, _) = budget(r, b);
    format!("{word}{}", b.map_or("", budget_tag))
}

/// For a kernel whose lower budgets the model's bound pruned, the assumption that decided
/// (the record's `kept_by`), as the group's words.
fn kept_group(r: &Record) -> Option<&'static str> {
    if r.chosen != 0 {
        return None;
    }
    Some(match r.kept_by.as_ref()? {
        Limit::DramWithoutReuse => "pruned: DRAM-bound if no data is reused",
        Limit::Issue => "pruned: issue-bound",
        Limit::Latency => "pruned: more warps hide too little latency",
        Limit::L1 => "pruned: L1-bound",
        Limit::L2 => "pruned: L2-bound",
        _ => return None,
    })
}

/// The reason in a few words: why a kernel was retuned, or why ptxas's choice stayed.
pub fn why(reason: &str, retuned: bool) -> &'static str {
    if reason.starts_with("forced") {
        "forced"
    } else if retuned {
        if reason.starts_with("measured") || reason.contains("profile") {
            "measured faster"
        } else {
            "predicted faster"
        }
    } else if reason.starts_with("not tuned") {
        "architecture not tuned"
    } else if reason.starts_with("no lower budget raises occupancy") {
        "no occupancy cliff below ptxas's count"
    } else if reason.starts_with("no lower budget can clear") {
        "more warps alone cannot clear the margin"
    } else if reason.contains("below the") && reason.contains("margin") {
        "tried: below the margin"
    } else if reason.starts_with("no candidate launches") {
        "no candidate launches at every block size"
    } else if reason.contains("defines") || reason.contains("nvlink") {
        "calls another module's function (-rdc)"
    } else if reason.contains("as built") || reason.contains("built file") {
        "a built file (nothing to try)"
    } else {
        "ptxas's choice kept"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn of(v: Value) -> Option<Row> {
        super::of(&crate::report::record(v))
    }

    fn record() -> Value {
        json!({"arch":"sm_90","kernel":"_Z13walk_featuresPKiPKfPfii","output":"tmpxft_00005e95_00000000-8_walk.sm_90.cubin",
            "block_sizes":[128,256,512],"block_from":"assumed",
            "candidates":[
              {"budget":null,"registers":64,"spill_instructions":0,"static_shared":0,"warps_per_sm":[32,32,32]},
              {"budget":{"regs":40,"smem_spill":false},"registers":40,"spill_instructions":74,"static_shared":0,"warps_per_sm":[48,48,48]},
              {"budget":{"regs":32,"smem_spill":false},"registers":32,"spill_instructions":98,"static_shared":0,"warps_per_sm":[64,64,64]},
              {"budget":{"regs":32,"smem_spill":true},"registers":32,"spill_instructions":108,"static_shared":41344,"warps_per_sm":[20,40,64]}],
            "pruned":[{"budget":{"regs":56,"smem_spill":false},"bound_percent":0.0}],
            "chosen":2,"chosen_registers":32,"gain_percent":87.8,
            "reason":"predicted 87.9% faster than ptxas's choice (margin 5%)","assembly":"variant"})
    }

    #[test]
    fn a_retuned_kernel() {
        let row = of(record()).unwrap();
        assert_eq!(
            row.file,
            "walk (from tmpxft_00005e95_00000000-8_walk.sm_90.cubin)"
        );
        assert_eq!(row.name, "walk_features");
        assert_eq!((row.ptxas_regs, row.regs), (64, 32));
        assert_eq!((row.ptxas_spills, row.spills), (0, 98));
        assert_eq!(row.occupancy, vec![100, 100, 100]);
        assert_eq!(row.tried, "40, 32, 32+smem; pruned 56");
        assert_eq!(row.chose, "32 (.maxnreg)");
        assert!(row.retuned);
        assert_eq!(row.why, "predicted faster");
        assert_eq!(row.assembly, "variant");
    }

    #[test]
    fn a_kept_kernel_with_its_unit() {
        let mut r = record();
        r["chosen"] = 0.into();
        r["unit"] = "src/walk.cu".into();
        r["reason"] = "best candidate (32 registers) predicted +2.0%, below the 5% margin".into();
        let row = of(r.clone()).unwrap();
        assert_eq!(row.file, "src/walk.cu");
        assert_eq!((row.regs, row.spills), (64, 0));
        assert_eq!(row.occupancy, vec![50, 50, 50]);
        assert_eq!(row.limiter, "registers");
        assert_eq!(row.chose, "ptxas");
        assert_eq!(row.why, "tried: below the margin");
        assert!(of(json!({"passed_through": "-G"})).is_none());
        // The assumption that decided, where the record has it.
        r["kept_by"] = "dram-without-reuse".into();
        assert_eq!(
            of(r.clone()).unwrap().why,
            "pruned: DRAM-bound if no data is reused"
        );
        r["kept_by"] = "below-margin".into();
        assert_eq!(of(r.clone()).unwrap().why, "tried: below the margin");
    }
}

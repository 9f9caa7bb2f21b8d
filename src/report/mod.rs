//! Reports for people, from the tuner's JSON records (`NVCC_ORION_REPORT`): the terminal table
//! of candidates ([`table`]), records for an already built file ([`file`]), and the
//! self-contained HTML page ([`html`]) with its SVG charts ([`svg`]) drawn from per-kernel
//! views of the SASS ([`view`]). A whole build's records make a [`project`]: one [`row`] per
//! kernel (with its occupancy [`limiter`]), a terminal [`summary`], the overview page
//! ([`project_html`]) and what [`changes`] between two builds.
//!
//! Records are the report's schema ([`nvcc_orion_schema`]), the types the tuner writes: a report
//! from another nvcc-orion version reads with defaults for the fields it lacks, so a missing
//! field costs one cell of a table, not the whole explanation.

pub mod assembly;
pub mod changes;
pub mod file;
pub mod html;
pub mod limiter;
pub mod measured;
pub mod memory;
pub mod project;
pub mod project_html;
pub mod pruned;
pub mod row;
pub mod spills;
pub mod summary;
pub mod svg;
pub mod table;
pub mod variants;
pub mod view;

use nvcc_orion_schema::{Budget, Candidate, Record, Rewrite};

/// `128/256`: block sizes, or warps per SM per block size.
pub fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
}

/// `5828/4033`: predicted cycles per block size (rounded), `null` where a variant cannot
/// launch.
pub fn cycles(v: &[Option<f64>]) -> String {
    v.iter()
        .map(|c| c.map_or_else(|| "null".to_string(), |f| format!("{f:.0}")))
        .collect::<Vec<_>>()
        .join("/")
}

/// A candidate's budget column and kind, from its `budget` (`None`: ptxas's own choice, or the
/// only variant a built file holds).
pub fn budget(record: &Record, b: Option<&Budget>) -> (String, &'static str) {
    let Some(b) = b else {
        return if record.is_built_file() {
            ("-".to_string(), "as built")
        } else {
            ("ptxas".to_string(), "baseline")
        };
    };
    let kind = match b.rewrite() {
        Some(r) => r.key(),
        None if b.smem_spill => ".maxnreg+smem spill",
        None => ".maxnreg",
    };
    (b.regs.to_string(), kind)
}

/// A budget's tag after its registers in the short lists (`40+spill2smem`, `32+smem`): the
/// spelling of `--orion-force` and the tuner's notes.
pub fn budget_tag(b: &Budget) -> &'static str {
    match b.rewrite() {
        Some(Rewrite::Spill2Smem) => "+spill2smem",
        Some(Rewrite::Regdem { .. }) => "+regdem",
        None if b.smem_spill => "+smem",
        None => "",
    }
}

/// The checker's column for a candidate: only our SASS rewrites are checked; what ptxas made
/// alone is `n/a`.
pub fn checker(record: &Record, c: &Candidate) -> String {
    match c.budget.as_ref().and_then(Budget::rewrite) {
        // A regdem candidate exists only once proved (and scheduling-checked).
        Some(Rewrite::Regdem { .. }) => return "proved".to_string(),
        Some(Rewrite::Spill2Smem) => {}
        None => return "n/a".to_string(),
    }
    match (&record.verdict, record.transform.as_deref()) {
        (Some(v), _) if v.proved => "proved".to_string(),
        (Some(v), _) => format!("rejected: {}", v.detail),
        // A report from before the structured verdict: the note says it.
        (None, Some(t)) if t.contains("not applied") => "rejected".to_string(),
        (None, Some(_)) => "proved".to_string(),
        (None, None) => "?".to_string(),
    }
}

/// The spill2smem candidate the checker refused: it never became a candidate, but the
/// table shows it with the reason. `(budget, reason)`.
pub fn rejected(record: &Record) -> Option<(u32, String)> {
    let v = record.verdict.as_ref()?;
    (!v.proved).then(|| (v.budget, v.detail.clone()))
}

/// A report's records from their JSON (for the tests of the modules here).
#[cfg(test)]
pub(crate) fn record(v: serde_json::Value) -> Record {
    serde_json::from_value(v).expect("a record")
}

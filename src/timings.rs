//! Where a build's time goes, by kind of step (`NVCC_ORION_TIMINGS=FILE`, for
//! `scripts/bench-build.sh`): the toolkit's own steps (front end, plain ptxas), the variant
//! rounds, the final assembly, the assembly check and the selector's multi-variant cubin.
//!
//! Each phase adds up the wall time of its spans; spans on different threads (an
//! architecture tuned in the background, a round's second worker) add up too, so a phase can
//! exceed the build's wall time. Nothing here reaches an output or the report: durations go
//! only to the file the variable names, one JSON line per compile, so the objects and reports
//! stay the same bytes from run to run.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A kind of work a build does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Every step of nvcc's plan that is not ptxas: preprocessing, `cicc`, the host compile,
    /// `fatbinary`.
    FrontEnd,
    /// ptxas as nvcc asked for it (the baseline).
    Ptxas,
    /// The variant rounds: ptxas runs of the same PTX under other budgets, each run's time
    /// (so rounds that run side by side add up).
    Variants,
    /// The wall time of each step's batch of variant rounds: under [`Phase::Variants`]
    /// when they ran one after another, less when they overlapped.
    VariantBatches,
    /// The chosen budgets put together: a splice, or one more whole-module ptxas run.
    Assembly,
    /// The assembly check's reading and comparing of the shipped cubin.
    Check,
    /// Under adapt/train: the multi-variant cubin with its selector.
    Selector,
}

const PHASES: [(Phase, &str); 7] = [
    (Phase::FrontEnd, "front_end_s"),
    (Phase::Ptxas, "ptxas_s"),
    (Phase::Variants, "variants_s"),
    (Phase::VariantBatches, "variant_batches_s"),
    (Phase::Assembly, "assembly_s"),
    (Phase::Check, "check_s"),
    (Phase::Selector, "selector_s"),
];

/// Nanoseconds per phase, in [`PHASES`]' order.
static TOTALS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

fn slot(phase: Phase) -> &'static AtomicU64 {
    let i = PHASES.iter().position(|(p, _)| *p == phase).unwrap_or(0);
    &TOTALS[i]
}

/// Time from now until the span drops is added to its phase.
#[must_use = "the span measures until it is dropped"]
pub struct Span {
    phase: Phase,
    start: Instant,
}

impl Drop for Span {
    fn drop(&mut self) {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        slot(self.phase).fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Start timing `phase`.
pub fn span(phase: Phase) -> Span {
    Span {
        phase,
        start: Instant::now(),
    }
}

/// Time `f` as `phase`.
pub fn timed<R>(phase: Phase, f: impl FnOnce() -> R) -> R {
    let _span = span(phase);
    f()
}

/// Seconds spent in `phase` so far.
pub fn seconds(phase: Phase) -> f64 {
    slot(phase).load(Ordering::Relaxed) as f64 / 1e9
}

/// The phases so far and `total_s` (the compile's wall time) as one JSON object.
pub fn line(total_s: f64) -> String {
    let mut fields: Vec<String> = PHASES
        .iter()
        .map(|(p, name)| format!("\"{name}\":{:.3}", seconds(*p)))
        .collect();
    fields.push(format!("\"total_s\":{total_s:.3}"));
    format!("{{{}}}", fields.join(","))
}

/// Append [`line`] to `path`, under a lock so that parallel compiles never interleave lines.
pub fn append(path: &Path, total_s: f64) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.lock()?;
    writeln!(f, "{}", line(total_s))?;
    f.unlock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_add_up_per_phase_and_the_line_names_every_phase() {
        let before = seconds(Phase::Check);
        timed(Phase::Check, || {
            std::thread::sleep(std::time::Duration::from_millis(20))
        });
        let after = seconds(Phase::Check);
        assert!(after - before >= 0.02, "{before} -> {after}");
        let l = line(1.5);
        let v: serde_json::Value = serde_json::from_str(&l).expect("JSON");
        for (_, name) in PHASES {
            assert!(v[name].as_f64().is_some(), "{name} in {l}");
        }
        assert_eq!(v["total_s"].as_f64(), Some(1.5));
    }
}

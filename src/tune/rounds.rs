//! A descent stage's plain round split by ptxas's predicted peak memory, or over free job
//! slots (issue 47, docs/DESIGN.md §Budgets at occupancy cliffs, bench/results/build.md).
//!
//! Measured with the toolkit's ptxas (CUDA 13.x, bench/results/build.md): a variant run's
//! resident set is a fixed part, a part that grows with the PTX text it reads, and a part that
//! grows with the PTX text of each kernel it compiles *below ptxas's own register choice*:
//! those are additive within one run (16 double kernels at 48 registers 115 MB, 15 float ones
//! 100 MB, the 46 of them in one run 197 MB, against 67 MB for plain ptxas on the whole
//! module; measured when every `--entry` run read the whole module). A plain round now reads
//! only the module less the entries it does not build ([`super::trim`]); its memory is still
//! predicted as if it read the whole module, an over-estimate, so the bound holds. The fixed
//! and text parts are paid again by every run, so a round is split only as far as needed:
//! each part's predicted memory stays within [`PEAK_OVER_PLAIN`] times the plain ptxas run's.
//!
//! A stage left as one plain round while job slots are free (the other architectures' steps
//! are done) is split too, across the free slots ([`spread_over_free_slots`]): the parts run
//! side by side, so the stage's wall time falls, for one more parse of the text every part
//! reads (the module less its entries, [`super::trim::shared_len`]) per part.
//!
//! Only a plain round is split: a kernel's SASS does not depend on the entries built beside
//! it ([`super::variants`]), so its parts give the same code. A pragma round is not: ptxas
//! refuses the pragma for the whole run when one kernel cannot have it, and which kernels
//! are refused together decides which candidates exist.

use std::collections::BTreeMap;

use super::variants::Budgets;

/// The most a split round's predicted memory may be over the plain ptxas run's. The issue's
/// target is 1.2x nvcc's peak, and nvcc's peak process is its front end (cicc), which took
/// 1.6-2.1x plain ptxas's resident set on the bench files measured (108-113 MB against
/// 52-67 MB). Holding rounds to 1.2x plain ptxas instead would take about five ptxas runs
/// for each one on bench/build/retuned_instances.cu (each re-reads the module's PTX).
const PEAK_OVER_PLAIN: f64 = 2.0;

/// ptxas's fixed resident set, in bytes of lowered kernel PTX that cost as much (33 MB for a
/// one-line module; a lowered kernel costs about 200 bytes per byte of its PTX).
const FIXED_AS_LOWERED: f64 = 165_000.0;

/// What a byte of the module's PTX costs a run, against a byte of a lowered kernel's
/// (about 43 against 200 bytes of resident set).
const MODULE_AS_LOWERED: f64 = 0.215;

/// The most lowered kernel PTX one run may compile for the module `ptx` (bytes of text).
fn capacity(ptx: &str) -> f64 {
    let plain = FIXED_AS_LOWERED + MODULE_AS_LOWERED * ptx.len() as f64;
    (PEAK_OVER_PLAIN - 1.0) * plain
}

/// `stage` with each plain round over the capacity split into parts in name order, each
/// within it (a kernel alone over it is a part of its own); `notes` says which were split.
/// `lengths` gives each kernel's PTX text length; a kernel without one counts as none.
pub(crate) fn split_by_memory(
    ptx: &str,
    lengths: &BTreeMap<String, usize>,
    stage: Vec<Budgets>,
    notes: &mut Vec<String>,
) -> Vec<Budgets> {
    let cap = capacity(ptx);
    let mut out = Vec::with_capacity(stage.len());
    for round in stage {
        if round.values().all(|b| b.smem_spill) {
            out.push(round);
            continue;
        }
        let kernels = round.len();
        let parts = split_one(round, lengths, cap);
        if parts.len() > 1 {
            notes.push(format!(
                "a round of {kernels} kernels built in {} ptxas runs to bound ptxas's memory",
                parts.len()
            ));
        }
        out.extend(parts);
    }
    out
}

/// How much longer ptxas takes to compile a byte of a lowered kernel's PTX than to read a
/// byte of the module (CUDA 13.5, bench/build/retuned_small.cu sm_90: a round of 30 of its
/// 32 kernels, 0.5-0.6 s, against about 0.07 s to read its 560 KB of PTX).
const COMPILE_OVER_READ: f64 = 8.0;

/// `stage` with its plain round split over the job slots free now (`free` takes and counts
/// them; the build's workers take them again), when that round is the whole stage. Of `k`
/// parts each saves its share of the round's compile time `C` (wall: `C (1 - 1/k)`) and
/// costs one more read of the text every part reads `R` (CPU: `(k - 1) R`; the module less
/// its entries, each part reading its own kernels besides); so at most
/// `COMPILE_OVER_READ * lowered / shared` parts. Parts of near-equal PTX, in name order:
/// which kernels run beside which does not change their code ([`super::variants`]). `notes`
/// says which rounds were spread (verbose mode: how many runs a stage takes depends on the
/// slots free at the time, not what it builds).
pub(crate) fn spread_over_free_slots(
    ptx: &str,
    lengths: &BTreeMap<String, usize>,
    stage: Vec<Budgets>,
    free: impl FnOnce() -> usize,
    notes: &mut Vec<String>,
) -> Vec<Budgets> {
    let [round] = &stage[..] else {
        return stage;
    };
    if round.len() < 2 || round.values().any(|b| b.smem_spill) {
        return stage;
    }
    let lowered: usize = round.keys().filter_map(|k| lengths.get(k)).sum();
    let shared = super::trim::shared_len(ptx);
    let worth = (COMPILE_OVER_READ * lowered as f64 / shared.max(1) as f64) as usize;
    if worth < 2 {
        return stage;
    }
    let parts = (1 + free()).min(worth).min(round.len());
    if parts < 2 {
        return stage;
    }
    let cap = (lowered as f64 / parts as f64).ceil();
    let Some(round) = stage.into_iter().next() else {
        return Vec::new();
    };
    let kernels = round.len();
    let out = split_one(round, lengths, cap.max(1.0));
    notes.push(format!(
        "a round of {kernels} kernels built in {} ptxas runs side by side on free job slots",
        out.len()
    ));
    out
}

/// One round as parts of at most `cap` lowered PTX bytes each, filled in name order.
fn split_one(round: Budgets, lengths: &BTreeMap<String, usize>, cap: f64) -> Vec<Budgets> {
    let mut parts = Vec::new();
    let mut part = Budgets::new();
    let mut used = 0.0;
    for (name, budget) in round {
        let len = lengths.get(&name).copied().unwrap_or(0) as f64;
        if !part.is_empty() && used + len > cap {
            parts.push(std::mem::take(&mut part));
            used = 0.0;
        }
        used += len;
        part.insert(name, budget);
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::ptx::Budget;

    fn round(names: &[&str]) -> Budgets {
        names
            .iter()
            .map(|n| (n.to_string(), Budget::regs(48)))
            .collect()
    }

    #[test]
    fn a_round_over_the_capacity_is_split_in_name_order_and_a_small_one_is_not() {
        let ptx = "x".repeat(100_000);
        let cap = capacity(&ptx);
        let third = (cap / 3.0) as usize + 1;
        let lengths: BTreeMap<String, usize> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| (n.to_string(), third))
            .collect();
        let mut notes = Vec::new();
        let stage = vec![round(&["a", "b", "c", "d", "e"]), round(&["a"])];
        let out = split_by_memory(&ptx, &lengths, stage, &mut notes);
        let names: Vec<Vec<&str>> = out
            .iter()
            .map(|r| r.keys().map(String::as_str).collect())
            .collect();
        assert_eq!(
            names,
            [vec!["a", "b"], vec!["c", "d"], vec!["e"], vec!["a"]]
        );
        assert_eq!(
            notes,
            ["a round of 5 kernels built in 3 ptxas runs to bound ptxas's memory"]
        );
    }

    #[test]
    fn a_kernel_over_the_capacity_alone_is_a_part_of_its_own() {
        let lengths: BTreeMap<String, usize> =
            [("big".to_string(), 10_000_000), ("small".to_string(), 10)].into();
        let parts = split_one(round(&["big", "small"]), &lengths, 1000.0);
        assert_eq!(parts.len(), 2);
        assert!(parts[0].contains_key("big") && parts[1].contains_key("small"));
    }

    #[test]
    fn a_lone_round_is_spread_over_the_free_slots_when_worth_it() {
        let lengths: BTreeMap<String, usize> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| (n.to_string(), 100))
            .collect();
        let names = |stage: &[Budgets]| -> Vec<Vec<String>> {
            stage.iter().map(|r| r.keys().cloned().collect()).collect()
        };
        let module = "x".repeat(400);
        let all = || vec![round(&["a", "b", "c", "d"])];
        let mut notes = Vec::new();
        // One slot free: two parts of equal PTX, in name order.
        let out = spread_over_free_slots(&module, &lengths, all(), || 1, &mut notes);
        assert_eq!(names(&out), [vec!["a", "b"], vec!["c", "d"]]);
        // Three free: one part per slot as far as it is worth it (8 x 400 / 400: 8 parts).
        let out = spread_over_free_slots(&module, &lengths, all(), || 3, &mut notes);
        assert_eq!(out.len(), 4);
        // No slot free, or kernels too small against the module: one run.
        assert_eq!(
            spread_over_free_slots(&module, &lengths, all(), || 0, &mut notes),
            all()
        );
        let big = "x".repeat(400 * 8);
        assert_eq!(
            spread_over_free_slots(&big, &lengths, all(), || 3, &mut notes),
            all()
        );
        // A stage of two rounds keeps both slots busy already; a pragma round stays whole.
        let two = vec![round(&["a", "b"]), round(&["c", "d"])];
        assert_eq!(
            spread_over_free_slots(&module, &lengths, two.clone(), || 1, &mut notes),
            two
        );
        let mut pragma = round(&["a", "b", "c", "d"]);
        for b in pragma.values_mut() {
            b.smem_spill = true;
        }
        let out = spread_over_free_slots(&module, &lengths, vec![pragma.clone()], || 1, &mut notes);
        assert_eq!(out, [pragma]);
        assert_eq!(
            notes,
            [
                "a round of 4 kernels built in 2 ptxas runs side by side on free job slots",
                "a round of 4 kernels built in 4 ptxas runs side by side on free job slots"
            ]
        );
    }

    #[test]
    fn a_pragma_round_is_never_split() {
        let lengths: BTreeMap<String, usize> =
            [("a".to_string(), 10_000_000), ("b".to_string(), 10_000_000)].into();
        let mut pragma = round(&["a", "b"]);
        for b in pragma.values_mut() {
            b.smem_spill = true;
        }
        let mut notes = Vec::new();
        let out = split_by_memory("", &lengths, vec![pragma.clone()], &mut notes);
        assert_eq!(out, [pragma]);
        assert!(notes.is_empty());
    }
}

//! A descent stage's plain round split by ptxas's predicted peak memory (issue 47,
//! docs/DESIGN.md §Budgets at occupancy cliffs, bench/results/build.md).
//!
//! Measured with the toolkit's ptxas (CUDA 13.x, bench/results/build.md): a variant run's
//! resident set is a fixed part, a part that grows with the whole module's PTX text (every
//! `--entry` run reads all of it), and a part that grows with the PTX text of each kernel it
//! compiles *below ptxas's own register choice*: those are additive within one run (16 double
//! kernels at 48 registers 115 MB, 15 float ones 100 MB, the 46 of them in one run 197 MB,
//! against 67 MB for plain ptxas on the whole module). The fixed and module parts are paid
//! again by every run, so a round is split only as far as needed: each part's predicted
//! memory stays within [`PEAK_OVER_PLAIN`] times the plain ptxas run's.
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

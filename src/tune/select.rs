//! Choosing a kernel's variant: the lowest predicted time, where "lower" must hold at every
//! block size the kernel may run with, by at least the margin; otherwise ptxas's own choice
//! stays.

use serde::Serialize;

use crate::predict::Prediction;
use crate::predict::memory::Level;
use crate::predict::price::Term;
use crate::predict::stalls::Traffic;
use crate::settings::Force;
use crate::transform::Transform;
use crate::transform::spill2smem::Spill2Smem;

/// One evaluated option for a kernel.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Evaluated {
    /// The budget; `None` for ptxas's own choice (the baseline).
    pub(crate) budget: Option<super::ptx::Budget>,
    /// Registers ptxas used under it.
    pub(crate) registers: u32,
    pub(crate) spill_instructions: u32,
    /// Stack frame bytes (local memory per thread).
    pub(crate) frame_bytes: u32,
    /// Static shared memory as the cubin records it (grows with shared-memory spilling).
    pub(crate) static_shared: u64,
    /// Resident warps per SM, per block size of the plan.
    pub(crate) warps_per_sm: Vec<u32>,
    /// Predicted cycles per warp, per block size (`None`: cannot launch).
    pub(crate) cycles_per_warp: Vec<Option<f64>>,
    /// Loop-weighted latency and issue cycles per warp (as priced at the first block size),
    /// and local accesses.
    pub(crate) latency: f64,
    pub(crate) issue: f64,
    pub(crate) local_accesses: f64,
    /// Loop-weighted bytes per warp to global, local and shared memory (the variant's code).
    pub(crate) bytes: Traffic,
    /// Per block size: the memory terms and where the spills land (`None`: cannot launch).
    pub(crate) memory: Vec<Option<MemoryTerms>>,
    /// For a budget below ptxas's count: the bound its pruning was judged by (the most it can
    /// gain, in percent, worst case over the block sizes); the candidate's predicted gain is
    /// never above it (`predict::coherence`).
    pub(crate) bound_percent: Option<f64>,
    /// Under adapt/train: built only to be measured (the model's bound ruled it out, no
    /// hardware limit did); the static choice never takes it, so the original name ships what
    /// the default mode would.
    pub(crate) measured_only: bool,
}

/// A candidate's memory terms at one block size (docs/DESIGN.md §Prediction and selection).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryTerms {
    /// Local bytes resident per SM, and the L1 the carve-out leaves them.
    pub(crate) working_set: u64,
    pub(crate) l1_bytes: u32,
    /// Where local (spill) accesses hit: the level most of them hit, and the fractions.
    pub(crate) spills_hit: Level,
    pub(crate) l1_hit: f64,
    pub(crate) l2_hit: f64,
    /// Cycles per warp of each term: latency over the warps, issue, and each level's
    /// bandwidth for its bytes.
    pub(crate) latency: f64,
    pub(crate) issue: f64,
    pub(crate) l1: f64,
    pub(crate) l2: f64,
    pub(crate) dram: f64,
    /// Bytes per warp reaching L2 and DRAM.
    pub(crate) l2_bytes: f64,
    pub(crate) dram_bytes: f64,
    /// The term that sets the prediction.
    pub(crate) bound_by: Term,
    /// The candidate priced alone, before ptxas's own code floors it (`predict::coherence`).
    pub(crate) own_cycles: f64,
}

impl MemoryTerms {
    pub(crate) fn of(p: &Prediction) -> MemoryTerms {
        MemoryTerms {
            working_set: p.placement.working_set,
            l1_bytes: p.placement.l1_bytes,
            spills_hit: p.placement.level(),
            l1_hit: p.placement.l1_hit,
            l2_hit: p.placement.l2_hit,
            latency: p.latency_share,
            issue: p.cost.issue,
            l1: p.ceilings.l1,
            l2: p.ceilings.l2,
            dram: p.ceilings.dram,
            l2_bytes: p.ceilings.l2_bytes,
            dram_bytes: p.ceilings.dram_bytes,
            bound_by: p.bound_by,
            own_cycles: p.own_cycles,
        }
    }
}

/// The decision for a kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// Index into the evaluated options (0 is the baseline).
    pub(crate) index: usize,
    /// Predicted gain over the baseline in percent, worst case over the block sizes.
    pub(crate) gain_percent: f64,
    pub(crate) reason: String,
}

/// The worst-case gain of `c` over `base` in percent; `None` when `c` cannot launch at some
/// block size where the baseline can.
pub fn gain_percent(base: &Evaluated, c: &Evaluated) -> Option<f64> {
    worst_gain(&base.cycles_per_warp, &c.cycles_per_warp)
}

/// The worst-case gain over the block sizes of `cycles` over `base` (cycles per warp per block
/// size, `None` where it cannot launch), in percent; `None` when `cycles` cannot launch at a
/// block size where `base` can. The one reading of a gain: a candidate's, and a budget's bound.
pub fn worst_gain(base: &[Option<f64>], cycles: &[Option<f64>]) -> Option<f64> {
    base.iter()
        .zip(cycles)
        .map(|(b, v)| match (b, v) {
            (Some(b), Some(v)) if *v > 0.0 => Some(100.0 * (b / v - 1.0)),
            (None, _) => Some(0.0),
            _ => None,
        })
        .try_fold(f64::INFINITY, |acc, g| g.map(|g| acc.min(g)))
        .map(|g| if g.is_finite() { g } else { 0.0 })
}

/// Pick among `options` (the baseline first). `force`: `baseline`, `lowest` (the lowest
/// budget that built), `budget:N` (the plain candidate at N registers), `pragma` (ptxas's
/// shared-memory spilling candidate), `spill2smem` (its proved candidate) or `regdem` (its
/// lowest proved candidate), for testing and
/// bench/gpu's exhaustive variants. A forced kind the kernel has no candidate of keeps the
/// baseline, and the reason says so.
pub fn choose(options: &[Evaluated], margin_percent: f64, force: Option<&Force>) -> Choice {
    let baseline = Choice {
        index: 0,
        gain_percent: 0.0,
        reason: String::new(),
    };
    let Some(base) = options.first() else {
        return Choice {
            reason: "no options".into(),
            ..baseline
        };
    };
    if options.len() == 1 {
        return Choice {
            reason: "no lower budget raises occupancy".into(),
            ..baseline
        };
    }
    if force.is_none() && options.iter().skip(1).all(|o| o.measured_only) {
        return Choice {
            reason: "no lower budget the model's bound admits; the others are only measured".into(),
            ..baseline
        };
    }
    match force {
        Some(Force::Rewrite(key)) => {
            if let Some(t) = crate::transform::seam::by_key(key) {
                return forced_rewrite(options, t, baseline);
            }
        }
        Some(Force::Baseline) => {
            return Choice {
                reason: "forced: baseline".into(),
                ..baseline
            };
        }
        Some(Force::Lowest) => {
            let (i, c) = options
                .iter()
                .enumerate()
                .min_by_key(|(_, o)| {
                    o.budget
                        .map_or((u32::MAX, false), |b| (b.regs, !b.smem_spill))
                })
                .expect("non-empty");
            return Choice {
                index: i,
                gain_percent: gain_percent(base, c).unwrap_or(f64::NEG_INFINITY),
                reason: "forced: lowest budget".into(),
            };
        }
        Some(f @ (Force::Budget(_) | Force::Pragma)) => {
            let want = match f {
                Force::Budget(n) => Some(*n),
                _ => None,
            };
            let what = want.map_or("shared-memory spilling (pragma)".to_string(), |n| {
                format!("budget {n}")
            });
            return match options.iter().enumerate().find(|(_, o)| {
                o.budget.is_some_and(|b| {
                    !b.rewritten()
                        && match want {
                            Some(n) => b.regs == n && !b.smem_spill,
                            None => b.smem_spill,
                        }
                })
            }) {
                Some((i, c)) => Choice {
                    index: i,
                    gain_percent: gain_percent(base, c).unwrap_or(f64::NEG_INFINITY),
                    reason: format!("forced: {what}"),
                },
                None => Choice {
                    reason: format!("forced {what}, but no such candidate"),
                    ..baseline
                },
            };
        }
        _ => {}
    }
    // Of equal gains the first candidate: the highest budget, the fewest spills (candidates
    // bound by the same memory level tie).
    let best = options
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, c)| !c.measured_only)
        .filter_map(|(i, c)| Some((i, gain_percent(base, c)?)))
        .fold(None, |best: Option<(usize, f64)>, x| match best {
            Some(b) if b.1 >= x.1 => Some(b),
            _ => Some(x),
        });
    match best {
        Some((i, g)) if g >= margin_percent => Choice {
            index: i,
            gain_percent: g,
            reason: format!(
                "predicted {g:.1}% faster than ptxas's choice (margin {margin_percent}%)"
            ),
        },
        Some((i, g)) => Choice {
            gain_percent: 0.0,
            reason: format!(
                "best candidate ({} registers) predicted {g:+.1}%, below the {margin_percent}% margin",
                options[i].registers
            ),
            ..baseline
        },
        None => Choice {
            reason: "no candidate launches at every block size".into(),
            ..baseline
        },
    }
}

/// The lowest proved candidate of the rewrite `t` (the strongest test of it), else
/// `baseline` with the reason. For spill2smem, one that moved every spill comes before
/// a partial move (spills left) at any budget.
fn forced_rewrite(options: &[Evaluated], t: &dyn Transform, baseline: Choice) -> Choice {
    let name = t.key();
    let of_t = |o: &Evaluated| {
        o.budget
            .is_some_and(|b| b.rewrite.is_some_and(|r| r.transform == t.key()))
    };
    let partly = |o: &Evaluated| t.key() == Spill2Smem.key() && o.spill_instructions > 0;
    match options
        .iter()
        .enumerate()
        .filter(|(_, o)| of_t(o))
        .min_by_key(|(_, o)| (partly(o), o.budget.map_or(u32::MAX, |b| b.regs)))
    {
        Some((i, c)) => Choice {
            index: i,
            gain_percent: gain_percent(&options[0], c).unwrap_or(f64::NEG_INFINITY),
            reason: format!("forced: {name}"),
        },
        None => Choice {
            reason: format!("forced {name}, but no proved candidate"),
            ..baseline
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A candidate with only its budget, registers and predicted cycles (test constructor,
    /// shared with `ranked`'s tests).
    pub(crate) fn ev(budget: Option<u32>, regs: u32, cycles: &[Option<f64>]) -> Evaluated {
        Evaluated {
            budget: budget.map(crate::tune::ptx::Budget::regs),
            registers: regs,
            cycles_per_warp: cycles.to_vec(),
            ..Evaluated::default()
        }
    }

    #[test]
    fn worst_case_gain_decides() {
        let base = ev(None, 96, &[Some(100.0), Some(100.0)]);
        let a = ev(Some(64), 64, &[Some(50.0), Some(95.0)]); // +100%, +5.3%
        let b = ev(Some(48), 48, &[Some(80.0), Some(80.0)]); // +25% at both
        assert!((gain_percent(&base, &a).unwrap() - 5.263).abs() < 0.01);
        let c = choose(&[base.clone(), a.clone(), b.clone()], 5.0, None);
        assert_eq!(c.index, 2);
        assert!((c.gain_percent - 25.0).abs() < 1e-9);
        // Under a 30% margin the baseline stays, and the reason says why.
        let c = choose(&[base.clone(), a.clone(), b.clone()], 30.0, None);
        assert_eq!(c.index, 0);
        assert!(c.reason.contains("below the 30% margin"), "{}", c.reason);
        // Forcing.
        assert_eq!(
            choose(
                &[base.clone(), a.clone(), b.clone()],
                5.0,
                Some(&Force::Lowest)
            )
            .index,
            2
        );
        assert_eq!(
            choose(&[base.clone(), b.clone()], 5.0, Some(&Force::Baseline)).index,
            0
        );
    }

    #[test]
    fn of_equal_gains_the_highest_budget_wins() {
        let base = ev(None, 64, &[Some(100.0)]);
        let a = ev(Some(40), 40, &[Some(80.0)]);
        let b = ev(Some(32), 32, &[Some(80.0)]);
        assert_eq!(choose(&[base, a, b], 5.0, None).index, 1);
    }

    #[test]
    fn forcing_one_budget_or_the_pragma() {
        let base = ev(None, 96, &[Some(100.0)]);
        let a = ev(Some(64), 64, &[Some(90.0)]);
        let b = ev(Some(48), 48, &[Some(200.0)]);
        let mut pragma = ev(Some(48), 48, &[Some(150.0)]);
        pragma.budget = pragma.budget.map(|b| crate::tune::ptx::Budget {
            smem_spill: true,
            ..b
        });
        let opts = [base.clone(), a, b, pragma];
        // The slower budget is taken when forced, and the pragma's twin is not.
        let c = choose(&opts, 5.0, Some(&Force::Budget(48)));
        assert_eq!((c.index, c.reason.as_str()), (2, "forced: budget 48"));
        assert!((c.gain_percent + 50.0).abs() < 1e-9, "{}", c.gain_percent);
        assert_eq!(choose(&opts, 5.0, Some(&Force::Budget(64))).index, 1);
        let c = choose(&opts, 5.0, Some(&Force::Pragma));
        assert_eq!(c.index, 3, "{}", c.reason);
        // No such candidate: the baseline, and the reason says so.
        let c = choose(&opts, 5.0, Some(&Force::Budget(40)));
        assert_eq!(c.index, 0);
        assert_eq!(c.reason, "forced budget 40, but no such candidate");
        let c = choose(&opts[..3], 5.0, Some(&Force::Pragma));
        assert_eq!(c.index, 0);
        assert!(c.reason.contains("no such candidate"), "{}", c.reason);
    }

    #[test]
    fn forcing_a_rewrite_takes_its_lowest_proved_candidate() {
        use crate::transform::{regdem::Regdem, spill2smem::Spill2Smem};
        use crate::tune::ptx::Budget;
        let base = ev(None, 64, &[Some(100.0)]);
        let plain = ev(Some(40), 40, &[Some(90.0)]);
        let mut demoted = vec![];
        for regs in [48, 40] {
            let mut e = ev(Some(regs), regs, &[Some(120.0)]);
            e.budget = Some(Budget::rewritten_by(&Regdem, regs, 64));
            demoted.push(e);
        }
        let opts = [base.clone(), plain, demoted[0].clone(), demoted[1].clone()];
        let c = choose(&opts, 5.0, Some(&Force::Rewrite("regdem".into())));
        assert_eq!((c.index, c.reason.as_str()), (3, "forced: regdem"));
        let c = choose(&opts, 5.0, Some(&Force::Rewrite("spill2smem".into())));
        assert_eq!(c.index, 0);
        assert_eq!(c.reason, "forced spill2smem, but no proved candidate");
        let mut shared = ev(Some(40), 40, &[Some(95.0)]);
        shared.budget = Some(Budget::rewritten_by(&Spill2Smem, 40, 39));
        let c = choose(
            &[base.clone(), shared.clone()],
            5.0,
            Some(&Force::Rewrite("spill2smem".into())),
        );
        assert_eq!((c.index, c.reason.as_str()), (1, "forced: spill2smem"));
        // A partial move at a lower budget gives way to a full one.
        let mut partly = ev(Some(32), 32, &[Some(95.0)]);
        partly.budget = Some(Budget::rewritten_by(&Spill2Smem, 32, 31));
        partly.spill_instructions = 12;
        let c = choose(
            &[base.clone(), partly.clone(), shared],
            5.0,
            Some(&Force::Rewrite("spill2smem".into())),
        );
        assert_eq!(c.index, 2);
        assert_eq!(
            choose(
                &[base, partly],
                5.0,
                Some(&Force::Rewrite("spill2smem".into()))
            )
            .index,
            1
        );
    }

    #[test]
    fn a_candidate_built_only_to_be_measured_never_wins() {
        let base = ev(None, 96, &[Some(100.0)]);
        let kept = ev(Some(64), 64, &[Some(95.0)]); // +5.3%
        let mut measured = ev(Some(48), 48, &[Some(50.0)]); // +100%, but only measured
        measured.measured_only = true;
        let c = choose(&[base.clone(), kept.clone(), measured.clone()], 5.0, None);
        assert_eq!(c.index, 1);
        let c = choose(&[base.clone(), measured.clone()], 5.0, None);
        assert_eq!(c.index, 0);
        assert!(c.reason.contains("only measured"), "{}", c.reason);
        // Forcing (testing) still reaches it.
        assert_eq!(
            choose(&[base, measured], 5.0, Some(&Force::Lowest)).index,
            1
        );
    }

    #[test]
    fn a_variant_that_cannot_launch_never_wins() {
        let base = ev(None, 96, &[Some(100.0)]);
        let broken = ev(Some(32), 32, &[None]);
        assert_eq!(gain_percent(&base, &broken), None);
        let c = choose(&[base.clone(), broken], 0.0, None);
        assert_eq!(c.index, 0);
        assert_eq!(
            choose(&[base], 0.0, None).reason,
            "no lower budget raises occupancy"
        );
    }
}

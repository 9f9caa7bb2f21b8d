//! The default mode's budget search (issue 47, docs/DESIGN.md §Budgets at occupancy cliffs):
//! each kernel's lower budgets built highest first, one stage at a time, stopping, once one
//! has beaten ptxas's own code, at the first budget whose prediction does not improve on the
//! best built so far.
//!
//! On the bench files the winner is the highest budget built in two kernels of three and
//! almost never the fourth (bench/results/build.md), while every budget costs a ptxas run of
//! its kernel: building them all made the variant rounds 3.7-5.6x the plain ptxas run. The
//! rule, per kernel, after each stage:
//! - the budget just built improved on the best prediction so far (ptxas's own code counts
//!   as 0 %): the descent goes on to the next lower budget whose bound can still beat that
//!   best; those skipped on the way are left out as `outbid` (exact: a budget is never
//!   predicted above its bound, `predict::coherence`, and a tie goes to the higher budget,
//!   listed first);
//! - it did not (or ptxas refused its round, or it cannot launch where ptxas's code can),
//!   while nothing built beats ptxas's own code yet: the descent goes on as above. The
//!   nearest cliff often buys few warps for its spills where the next buys many (a kernel
//!   calling a non-inlined function: -2.5 % at 64 registers, +37.8 % at 40, in
//!   tests/kernels/tune/descent.cu), and stopping there lost every such kernel's gain;
//! - it did not, after one has: the descent stops, and every lower budget is left out as
//!   `stopped`. This is the heuristic part: a lower budget past a worse one can still win
//!   (more warps may pay for more spills), and the full search (`--orion-search=full`)
//!   would then choose it; on the bench files it never did (bench/results/build.md).
//!
//! The shared-memory spilling candidate at the lowest budget is built in the stage that
//! builds the lowest plain budget, in a round of its own (ptxas refuses the pragma for a
//! whole module when one kernel cannot have it, and a refusal must not cost the plain
//! budgets), so it is left out exactly when the descent does not get there.
//!
//! Measured selection (adapt, train, a profile-guided build) descends by a rule of its own
//! ([`Rule::Variants`]): it ranks variants, not just a winner, so a budget is needed while it
//! can still be predicted within the band of the static winner (`ranked::BAND_PERCENT`).
//! A budget whose bound cannot come that close to the best built is `outbid` (exact: it is
//! neither the winner nor a variant), and once a budget clears the margin, the first budget
//! predicted outside the band of the best stops the descent (`stopped`: the heuristic part,
//! lower budgets spill more). Budgets built only to be measured are always built. On every
//! bench/build, bench/heavy and examples file it built 896 budgets where the full search
//! built 1094, and the objects were the same bytes (bench/results/build.md).
//!
//! Only where that holds by construction: no forcing (it builds what it names), no SASS
//! rewrite offered (its candidates are proved round by round from the plain ones), and
//! kernels compiled with `--entry` (a
//! kernel's SASS does not depend on the entries built beside it, [`super::variants`]). Each
//! stage is one `--entry` ptxas run of the kernels still descending (in parts where that is
//! too much for ptxas's memory, [`super::rounds`]; and one for the pragma when any reach
//! their lowest budget); the stages of one step run one after another, but
//! the steps of other architectures run beside them on the build's other job slots (the
//! driver tunes a step in the background while the next one runs).

use std::collections::BTreeMap;

use super::candidates::KernelPlan;
use super::evaluate;
use super::plan::Plan;
use super::pricing::Pricing;
use super::ptx::Budget;
use super::ranked::BAND_PERCENT;
use super::record::{Limit, Pruned, TuneError};
use super::rounds;
use super::select::{Evaluated, gain_percent, worst_gain};
use super::variants::{self, Budgets, Builder, Built, VariantError};
use crate::cubin::Cubin;
use crate::sass::raw;
use crate::settings::{Search, Settings};

/// Whether the step's budgets are searched by descent (see the module docs).
pub(crate) fn applies(plan: &Plan, settings: &Settings, builder: &Builder<'_>) -> bool {
    settings.search == Search::Descent
        && settings.force.is_none()
        && builder.entries.is_some()
        && plan
            .kernels
            .iter()
            .flat_map(|p| &p.budgets)
            .all(|b| !b.rewritten())
}

/// What ends a kernel's descent, and what a built budget must be able to reach to be built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    /// The static choice alone (the default mode): a budget that cannot beat the best built
    /// is `outbid`; after one has beaten ptxas's code, the first that does not improve on
    /// the best stops the descent.
    Choice,
    /// Measured selection (adapt, train, a profile-guided build): a budget is needed while it
    /// can still be a ranked variant, predicted within [`BAND_PERCENT`] of the static winner
    /// (docs/selector.md §Ranking). One whose bound cannot come that close to the best built
    /// is `outbid` (exact); once a budget has cleared `margin` (so the winner gains at least
    /// as much as the best built), the first budget predicted outside the band of the best
    /// stops the descent (`stopped`: lower budgets spill more). Budgets built only to be
    /// measured are always built, and never count as the best.
    Variants { margin: f64 },
}

impl Rule {
    /// The rule for a build with `settings`.
    pub(crate) fn of(settings: &Settings) -> Rule {
        if settings.selector.is_some() || settings.profile.is_some() {
            Rule::Variants {
                margin: settings.margin_percent,
            }
        } else {
            Rule::Choice
        }
    }
}

/// Build `plan`'s budgets by descent under `rule`: the variants built (`None`: ptxas
/// refused one), in the order of the rounds `plan` is left naming; its kernels' budgets
/// become those built, and every budget left out is added to `plan.pruned` as `stopped` or
/// `outbid`. A stage's plain round too large for one ptxas run's memory is built in parts
/// ([`rounds`]), said in `notes`.
pub(crate) fn build(
    builder: &Builder<'_>,
    plan: &mut Plan,
    pricing: &Pricing<'_>,
    baseline: &Cubin,
    rule: Rule,
    notes: &mut Vec<String>,
) -> Result<Vec<Option<Built>>, TuneError> {
    let lengths = super::ptx::entry_lengths(builder.ptx).map_err(VariantError::from)?;
    let mut open: Vec<Descent> = plan
        .kernels
        .iter()
        .filter(|p| !p.budgets.is_empty())
        .map(|p| {
            let measured = plan.measured_only.get(&p.name).map_or(&[][..], |m| &m[..]);
            Descent::of(p, pricing, baseline, (rule, measured))
        })
        .collect();
    let mut built = Vec::new();
    let mut rounds = Vec::new();
    loop {
        let stage = rounds::split_by_memory(builder.ptx, &lengths, next_stage(&mut open), notes);
        let free = || free_slots(builder);
        let stage = rounds::spread_over_free_slots(builder.ptx, &lengths, stage, free, notes);
        if stage.is_empty() {
            break;
        }
        let results = builder.build_all_from(rounds.len(), &stage);
        let mut gains: BTreeMap<String, Option<f64>> = BTreeMap::new();
        for (round, result) in stage.into_iter().zip(results) {
            let made = match result {
                Ok(b) => Some(b),
                Err(VariantError::Refused { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            if let Some(b) = &made {
                price_round(&open, plan, pricing, &round, b, &mut gains)?;
            }
            built.push(made);
            rounds.push(round);
        }
        for d in &mut open {
            if d.waiting {
                d.priced(gains.get(&d.name).copied().flatten());
            }
        }
    }
    settle(plan, open, rounds);
    Ok(built)
}

/// How many extra job slots are free now, at most one fewer than the builder's workers
/// (taken to count, and given back at once: the batch's workers take them again).
fn free_slots(builder: &Builder<'_>) -> usize {
    let held: Vec<_> = (1..builder.jobs)
        .map_while(|_| builder.slots.try_extra())
        .collect();
    held.len()
}

/// One kernel's descent.
struct Descent {
    name: String,
    rule: Rule,
    /// ptxas's own code as evaluated: gains and bounds are read against its cycles (`None`:
    /// the baseline has no record of the kernel, so no budget has a bound).
    base: Option<Evaluated>,
    /// Plain budgets not built yet, highest first.
    left: Vec<Left>,
    /// The shared-memory spilling candidate at the lowest budget, if the plan has one: built
    /// beside the lowest plain budget.
    smem: Option<Budget>,
    /// The best prediction built so far; ptxas's own code is 0 % (so above 0: a budget
    /// built beats ptxas's code).
    best: f64,
    /// The best prediction built so far among the budgets the static choice may take
    /// (minus infinity: none yet); `Rule::Variants` reads the winner's least gain from it.
    top: f64,
    /// Whether a budget of this kernel is in the stage being built.
    waiting: bool,
    /// Whether the budget being built is one built only to be measured.
    measuring: bool,
    /// Whether the descent goes on: the last budget built improved on `best`.
    going: bool,
    /// Budgets left out, and why.
    left_out: Vec<Pruned>,
}

/// A plain budget not built yet.
#[derive(Debug, Clone)]
struct Left {
    budget: Budget,
    /// Its bound's gain over ptxas's own code, worst case (`None`: none applies).
    bound: Option<f64>,
    /// Its bound's cycles per warp per block size (empty: none applies).
    bound_cycles: Vec<Option<f64>>,
    /// Its bound as the plan reports bounds.
    reported: f64,
    /// Built only to be measured (`Rule::Variants`): never left out, never the best.
    measured_only: bool,
}

impl Descent {
    fn of(
        p: &KernelPlan,
        pricing: &Pricing<'_>,
        baseline: &Cubin,
        (rule, measured_only): (Rule, &[Budget]),
    ) -> Descent {
        let base = evaluate::evaluate(p, pricing, baseline, pricing.baseline, None);
        let left = p
            .budgets
            .iter()
            .filter(|b| !b.smem_spill)
            .map(|b| {
                // As `evaluate` floors a candidate: below ptxas's count, with its SASS.
                let bounded = b.regs < p.baseline_regs && !pricing.baseline.is_empty();
                let bound_cycles = match (&base, bounded) {
                    (Some(_), true) => pricing.bound_cycles(p, b.regs),
                    _ => Vec::new(),
                };
                let bound = base
                    .as_ref()
                    .filter(|_| bounded)
                    .and_then(|base| worst_gain(&base.cycles_per_warp, &bound_cycles));
                Left {
                    budget: *b,
                    bound,
                    bound_cycles,
                    reported: pricing.bound_percent(p, b.regs),
                    measured_only: measured_only.contains(b),
                }
            })
            .collect();
        Descent {
            name: p.name.clone(),
            rule,
            base,
            left,
            smem: p.budgets.iter().copied().find(|b| b.smem_spill),
            best: 0.0,
            top: f64::NEG_INFINITY,
            waiting: false,
            measuring: false,
            going: true,
            left_out: Vec::new(),
        }
    }

    /// The next budgets to build (a plain one, and the pragma's when the plain one is the
    /// lowest), or none: the descent is over, and what is left is left out with its reason.
    fn take_next(&mut self) -> (Option<Budget>, Option<Budget>) {
        while !self.left.is_empty() {
            let next = self.left.remove(0);
            let lowest = self.left.is_empty();
            match self.left_out_why(&next) {
                None => {
                    self.waiting = true;
                    self.measuring = next.measured_only;
                    return (Some(next.budget), self.smem.filter(|_| lowest));
                }
                Some(limit) => {
                    self.leave_out(next.budget, next.reported, limit);
                    if lowest && let Some(s) = self.smem {
                        self.leave_out(s, next.reported, limit);
                    }
                }
            }
        }
        (None, None)
    }

    /// Why `next` is not built, if it is not.
    fn left_out_why(&self, next: &Left) -> Option<Limit> {
        if next.measured_only {
            return None;
        }
        if !self.going {
            return Some(Limit::Stopped);
        }
        let outbid = match self.rule {
            // Only against a built budget: ptxas's own code is no candidate, and under a
            // 0 % margin a budget predicted exactly 0 % is chosen (the plan's bound already
            // prunes what cannot clear the margin).
            Rule::Choice => self.best > 0.0 && next.bound.is_some_and(|b| b <= self.best),
            Rule::Variants { margin } => self.base.as_ref().is_some_and(|base| {
                out_of_band(
                    &base.cycles_per_warp,
                    &next.bound_cycles,
                    winner_gains_at_least(self.top, margin),
                )
            }),
        };
        outbid.then_some(Limit::Outbid)
    }

    fn leave_out(&mut self, budget: Budget, bound_percent: f64, limit: Limit) {
        self.left_out.push(Pruned {
            budget,
            bound_percent,
            limit,
        });
    }

    /// The plain budget built in this stage predicted `gain` (`None`: refused, or it cannot
    /// launch everywhere ptxas's code can).
    fn priced(&mut self, gain: Option<f64>) {
        self.waiting = false;
        if self.measuring {
            return;
        }
        if let Some(g) = gain {
            self.top = self.top.max(g);
        }
        if let Rule::Variants { margin } = self.rule {
            // Outside the band of a best that clears the margin: it is no variant, and the
            // lower budgets, which spill more, are taken to be slower still.
            let behind = gain.is_some_and(|g| {
                self.top >= margin
                    && (1.0 + g / 100.0) * (1.0 + BAND_PERCENT / 100.0) < 1.0 + self.top / 100.0
            });
            self.going = !behind;
            return;
        }
        match gain {
            Some(g) if g > self.best => self.best = g,
            // Nothing built beats ptxas's own code yet: a lower budget may still.
            _ if self.best <= 0.0 => {}
            _ => self.going = false,
        }
    }
}

/// The least worst-case gain over ptxas's own code the static winner (`select::choose`) can
/// have, once the best candidate built gains `top` %: the final best gains at least `top`, so
/// where `top` clears `margin` the winner does; else it is ptxas's own code (0 %) or a
/// candidate that clears the margin.
fn winner_gains_at_least(top: f64, margin: f64) -> f64 {
    if top >= margin { top } else { margin.min(0.0) }
}

/// Whether a budget whose bound is `bound` (cycles per warp per block size) is sure to be
/// predicted more than [`BAND_PERCENT`] slower than any winner that gains at least
/// `winner_gain` % over ptxas's own code `base`, at some block size where both launch: there
/// the budget's prediction is at least its bound (`evaluate` floors it there), and the
/// winner's at most `base / (1 + winner_gain)`. Such a budget is neither the winner nor a
/// ranked variant (`ranked::ranked`), so it need not be built. A hair of slack keeps a budget
/// at the band's very edge, where rounding could decide.
fn out_of_band(base: &[Option<f64>], bound: &[Option<f64>], winner_gain: f64) -> bool {
    let speedup = 1.0 + winner_gain / 100.0;
    if speedup <= 0.0 {
        return false;
    }
    let band = (1.0 + BAND_PERCENT / 100.0) * (1.0 + 1e-9);
    base.iter().zip(bound).any(|(b, x)| match (b, x) {
        (Some(b), Some(x)) => *x > b / speedup * band,
        _ => false,
    })
}

/// The next stage: a round of each open kernel's next plain budget, and a round of the
/// pragma's candidates of those that reached their lowest budget (empty: all done).
fn next_stage(open: &mut [Descent]) -> Vec<Budgets> {
    let mut plain = Budgets::new();
    let mut smem = Budgets::new();
    for d in open.iter_mut() {
        let (p, s) = d.take_next();
        if let Some(p) = p {
            plain.insert(d.name.clone(), p);
        }
        if let Some(s) = s {
            smem.insert(d.name.clone(), s);
        }
    }
    [plain, smem]
        .into_iter()
        .filter(|r| !r.is_empty())
        .collect()
}

/// The gain of each kernel's plain budget in one built round over ptxas's own code, into
/// `gains` (a pragma round prices nothing: it ends its kernel's descent).
fn price_round(
    open: &[Descent],
    plan: &Plan,
    pricing: &Pricing<'_>,
    round: &Budgets,
    built: &Built,
    gains: &mut BTreeMap<String, Option<f64>>,
) -> Result<(), TuneError> {
    if round.values().all(|b| b.smem_spill) {
        return Ok(());
    }
    let cubin = Cubin::parse(&built.cubin)
        .map_err(|e| TuneError::Cubin(format!("variant {}", variants::describe(round)), e))?;
    let functions = raw::functions(&cubin);
    for d in open {
        let (Some(budget), Some(p)) = (
            round.get(&d.name),
            plan.kernels.iter().find(|p| p.name == d.name),
        ) else {
            continue;
        };
        let gain = evaluate::evaluate(p, pricing, &cubin, &functions, Some(*budget))
            .and_then(|e| gain_percent(d.base.as_ref()?, &e));
        gains.insert(d.name.clone(), gain);
    }
    Ok(())
}

/// `plan` as built: its rounds those of the stages, each kernel's budgets those built (in
/// the plan's order), and those left out among the pruned.
fn settle(plan: &mut Plan, open: Vec<Descent>, rounds: Vec<Budgets>) {
    let mut left_out: BTreeMap<String, Vec<Pruned>> = open
        .into_iter()
        .filter(|d| !d.left_out.is_empty())
        .map(|d| (d.name, d.left_out))
        .collect();
    for p in &mut plan.kernels {
        let Some(out) = left_out.remove(&p.name) else {
            continue;
        };
        p.budgets.retain(|b| !out.iter().any(|x| x.budget == *b));
        plan.pruned.entry(p.name.clone()).or_default().extend(out);
    }
    plan.rewrite = vec![None; rounds.len()];
    plan.rounds = rounds;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel with plain budgets 80, 48 and 32 (highest first) with these bounds, and the
    /// pragma's candidate at 32.
    fn descent(bounds: [Option<f64>; 3]) -> Descent {
        Descent {
            name: "k".into(),
            rule: Rule::Choice,
            base: None,
            left: [80, 48, 32]
                .map(Budget::regs)
                .into_iter()
                .zip(bounds)
                .map(|(budget, bound)| Left {
                    budget,
                    bound,
                    // One block size; ptxas's own code at 100 cycles per warp.
                    bound_cycles: vec![bound.map(|g| 100.0 / (1.0 + g / 100.0))],
                    reported: bound.unwrap_or(f64::INFINITY),
                    measured_only: false,
                })
                .collect(),
            smem: Some(Budget {
                smem_spill: true,
                ..Budget::regs(32)
            }),
            best: 0.0,
            top: f64::NEG_INFINITY,
            waiting: false,
            measuring: false,
            going: true,
            left_out: Vec::new(),
        }
    }

    /// The same kernel under measured selection (margin 5 %), ptxas's own code at 100 cycles
    /// per warp.
    fn measured(bounds: [Option<f64>; 3]) -> Descent {
        let mut base = crate::tune::select::tests::ev(None, 96, &[Some(100.0)]);
        base.warps_per_sm = vec![8];
        Descent {
            rule: Rule::Variants { margin: 5.0 },
            base: Some(base),
            ..descent(bounds)
        }
    }

    fn left_out(d: &Descent) -> Vec<(u32, bool, Limit)> {
        d.left_out
            .iter()
            .map(|x| (x.budget.regs, x.budget.smem_spill, x.limit))
            .collect()
    }

    /// Each improvement builds the next lower budget, the pragma's beside the lowest.
    #[test]
    fn improving_budgets_descend_to_the_lowest() {
        let mut d = descent([Some(30.0), Some(40.0), Some(50.0)]);
        assert_eq!(d.take_next(), (Some(Budget::regs(80)), None));
        d.priced(Some(10.0));
        assert_eq!(d.take_next(), (Some(Budget::regs(48)), None));
        d.priced(Some(20.0));
        let (plain, smem) = d.take_next();
        assert_eq!(plain, Some(Budget::regs(32)));
        assert!(smem.is_some_and(|s| s.smem_spill && s.regs == 32));
        d.priced(Some(25.0));
        assert_eq!(d.take_next(), (None, None));
        assert!(d.left_out.is_empty());
    }

    /// A budget that does not improve on the best stops the descent, even where a lower one
    /// would have won: what is left is `stopped`, the pragma's candidate with it.
    #[test]
    fn a_budget_that_does_not_improve_stops_the_descent() {
        let mut d = descent([Some(30.0), Some(40.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(12.0));
        d.take_next();
        // 48 is predicted 8 %: worse than 80's 12 %. 32 (bound 90 %) is not built.
        d.priced(Some(8.0));
        assert_eq!(d.take_next(), (None, None));
        assert_eq!(
            left_out(&d),
            [(32, false, Limit::Stopped), (32, true, Limit::Stopped)]
        );
        // Equal is not better: the higher budget, listed first, would win the tie.
        let mut d = descent([Some(30.0), Some(40.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(12.0));
        d.take_next();
        d.priced(Some(12.0));
        assert_eq!(d.take_next(), (None, None));
    }

    /// Until a budget beats ptxas's own code, one that does not (slower, or unable to
    /// launch where ptxas's code can) does not stop the descent: the next may.
    #[test]
    fn the_descent_goes_on_until_a_budget_beats_ptxas() {
        let mut d = descent([Some(30.0), Some(40.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(-2.5));
        assert_eq!(d.take_next(), (Some(Budget::regs(48)), None));
        d.priced(None);
        assert_eq!(d.take_next().0, Some(Budget::regs(32)));
        d.priced(Some(0.0));
        assert_eq!(d.take_next(), (None, None));
        assert!(d.left_out.is_empty());
        // Once one has, the next that does not improve stops it.
        let mut d = descent([Some(30.0), Some(40.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(-2.5));
        d.take_next();
        d.priced(Some(20.0));
        d.take_next();
        d.priced(Some(10.0));
        assert_eq!(d.take_next(), (None, None));
        assert!(d.left_out.is_empty(), "32 was the lowest: nothing left");
    }

    /// A budget whose bound cannot beat the best built is skipped as `outbid`, and the
    /// descent goes on below it; one with no bound is always built.
    #[test]
    fn outbid_budgets_are_skipped() {
        let mut d = descent([None, Some(15.0), Some(60.0)]);
        assert_eq!(d.take_next(), (Some(Budget::regs(80)), None));
        d.priced(Some(20.0));
        let (plain, smem) = d.take_next();
        assert_eq!(plain, Some(Budget::regs(32)));
        assert!(smem.is_some());
        assert_eq!(left_out(&d), [(48, false, Limit::Outbid)]);
        // The lowest outbid takes the pragma's candidate at its budget with it.
        let mut d = descent([Some(30.0), Some(40.0), Some(35.0)]);
        d.take_next();
        d.priced(Some(38.0));
        assert_eq!(d.take_next(), (Some(Budget::regs(48)), None));
        d.priced(Some(39.0));
        assert_eq!(d.take_next(), (None, None));
        assert_eq!(
            left_out(&d),
            [(32, false, Limit::Outbid), (32, true, Limit::Outbid)]
        );
    }

    /// Under measured selection a budget that does not improve on the best is built all the
    /// same while it is predicted within the band of the best: it may be a variant.
    #[test]
    fn measured_selection_builds_every_budget_in_the_band() {
        let mut d = measured([Some(30.0), Some(60.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(20.0));
        assert_eq!(d.take_next(), (Some(Budget::regs(48)), None));
        // 48 is predicted 8 %: slower than 80's 20 %, but within 25 % of it.
        d.priced(Some(8.0));
        let (plain, smem) = d.take_next();
        assert_eq!(plain, Some(Budget::regs(32)));
        assert!(smem.is_some());
        d.priced(Some(-4.0));
        assert_eq!(d.take_next(), (None, None));
        assert!(d.left_out.is_empty());
    }

    /// Once a budget clears the margin, the first one predicted more than 25 % slower than
    /// the best stops the descent; before that, none does.
    #[test]
    fn measured_selection_stops_outside_the_band() {
        let mut d = measured([Some(30.0), Some(60.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(40.0));
        d.take_next();
        // 48 at +5 %: 140 / 105 = 1.33 times the best's time, outside the band.
        d.priced(Some(5.0));
        assert_eq!(d.take_next(), (None, None));
        assert_eq!(
            left_out(&d),
            [(32, false, Limit::Stopped), (32, true, Limit::Stopped)]
        );
        // Far behind ptxas's own code while nothing clears the margin: the descent goes on.
        let mut d = measured([Some(30.0), Some(60.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(-60.0));
        assert_eq!(d.take_next(), (Some(Budget::regs(48)), None));
        d.priced(Some(3.0));
        assert_eq!(d.take_next().0, Some(Budget::regs(32)));
    }

    /// A budget whose bound cannot come within the band of the best built is `outbid`
    /// (exact: it can be neither the winner nor a variant), and one that can is built
    /// although it cannot beat the best.
    #[test]
    fn measured_selection_skips_budgets_whose_bound_is_out_of_the_band() {
        // Best +50 %: 66.7 cycles. 48's bound (+10 %: 90.9 cycles) is 1.36 times that.
        let mut d = measured([None, Some(10.0), Some(30.0)]);
        d.take_next();
        d.priced(Some(50.0));
        let (plain, _) = d.take_next();
        assert_eq!(plain, Some(Budget::regs(32)));
        assert_eq!(left_out(&d), [(48, false, Limit::Outbid)]);
        // A bound of +30 % (76.9 cycles, 1.15 times the best) could be a variant: built.
        let mut d = measured([None, Some(30.0), Some(90.0)]);
        d.take_next();
        d.priced(Some(50.0));
        assert_eq!(d.take_next().0, Some(Budget::regs(48)));
        // Before any budget clears the margin, the winner may be ptxas's own code: a bound
        // of +10 % is within its band.
        let mut d = measured([None, Some(10.0), Some(30.0)]);
        d.take_next();
        d.priced(Some(2.0));
        assert_eq!(d.take_next().0, Some(Budget::regs(48)));
    }

    /// Budgets built only to be measured are always built and never count as the best.
    #[test]
    fn measured_only_budgets_are_always_built() {
        let mut d = measured([None, Some(10.0), Some(30.0)]);
        for l in &mut d.left {
            l.measured_only = true;
        }
        d.take_next();
        d.priced(Some(50.0));
        assert_eq!(d.take_next().0, Some(Budget::regs(48)));
        d.priced(Some(-90.0));
        assert_eq!(d.take_next().0, Some(Budget::regs(32)));
        assert_eq!(d.top, f64::NEG_INFINITY);
    }

    #[test]
    fn the_winner_gains_at_least_the_best_that_clears_the_margin() {
        assert_eq!(winner_gains_at_least(12.0, 5.0), 12.0);
        assert_eq!(winner_gains_at_least(3.0, 5.0), 0.0);
        assert_eq!(winner_gains_at_least(f64::NEG_INFINITY, -2.0), -2.0);
        // 100 cycles, a winner at least +25 % (at most 80 cycles): 100 is 1.25 times that,
        // at the band's edge, not beyond it.
        assert!(!out_of_band(&[Some(100.0)], &[Some(100.0)], 25.0));
        assert!(out_of_band(&[Some(100.0)], &[Some(100.1)], 25.0));
        // Only where both launch.
        assert!(!out_of_band(
            &[None, Some(100.0)],
            &[Some(500.0), None],
            25.0
        ));
    }
}

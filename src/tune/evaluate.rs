//! Evaluating one step's built variants: each variant of a rewrite's round gets that
//! rewrite, kept only where proved ([`super::proven`]); every variant is then read back and
//! each kernel's candidate in it predicted ([`evaluate`]).

use std::collections::BTreeMap;

use super::candidates::KernelPlan;
use super::keep::Keep;
use super::plan::Plan;
use super::pricing::Pricing;
use super::proven;
use super::ptx::Budget;
use super::record::{TuneError, Verdict};
use super::select::{Evaluated, MemoryTerms};
use super::variants::{self, Budgets, Built};
use crate::cubin::Cubin;
use crate::predict::Prediction;
use crate::predict::coherence;
use crate::sass::{Function, raw};
use crate::transform::Transform;
use crate::transform::area::Options;

/// A variant as evaluated: its cubin (rewritten where its round asks) and its SASS.
pub type Variant = Option<(Cubin, Vec<Function>)>;

/// A variant's cubins kept for `explain`: as evaluated, and as ptxas made it.
pub type Kept = (Option<String>, Option<String>);

/// What the rewrites said, per kernel: the report's note, and the checker's verdict where
/// `explain` shows it ([`Transform::explained`]).
#[derive(Debug, Default)]
pub struct Notes {
    pub(crate) transforms: BTreeMap<String, String>,
    /// Every verdict per kernel, in the order the rewrites were checked.
    verdicts: BTreeMap<String, Vec<Verdict>>,
}

impl Notes {
    fn add(&mut self, kernel: &str, note: String) {
        let e = self.transforms.entry(kernel.to_string()).or_default();
        if !e.is_empty() {
            e.push_str("; ");
        }
        e.push_str(&note);
    }

    fn verdict(&mut self, kernel: String, v: Verdict) {
        self.verdicts.entry(kernel).or_default().push(v);
    }

    /// The verdict the report shows for `kernel`: the proved one at `shipped`, the budget of
    /// the rewrite that ships (a rewrite offered at two budgets reports the one chosen);
    /// else the last proved one, else the last (a refusal is never shown over a proof).
    pub(crate) fn take_verdict(&mut self, kernel: &str, shipped: Option<u32>) -> Option<Verdict> {
        let all = self.verdicts.remove(kernel)?;
        let pick = all
            .iter()
            .rposition(|v| v.proved && Some(v.budget) == shipped)
            .or_else(|| all.iter().rposition(|v| v.proved))
            .unwrap_or(all.len() - 1);
        all.into_iter().nth(pick)
    }
}

/// Per built variant (`None`: ptxas refused it): the variant as evaluated, and the cubins
/// kept for `explain` (as evaluated, as ptxas made it). A kernel whose rewrite is not proved
/// leaves its round (`plan.rounds`).
pub fn variants(
    built: &[Option<Built>],
    plan: &mut Plan,
    block_sizes: &[(Option<String>, u32)],
    keep: Option<&Keep>,
    notes: &mut Notes,
) -> Result<(Vec<Variant>, Vec<Kept>), TuneError> {
    let mut parsed = Vec::new();
    let mut kept = Vec::new();
    for (i, b) in built.iter().enumerate() {
        let Some(b) = b else {
            parsed.push(None);
            kept.push((None, None));
            continue;
        };
        let bytes = match plan.rewrite[i] {
            Some(t) => rewrite_round(t, &b.cubin, &mut plan.rounds[i], block_sizes, notes)?,
            None => b.cubin.clone(),
        };
        kept.push(match keep {
            Some(k) => {
                let raw = k.save(&format!("v{i}"), &b.cubin);
                let evaluated = if bytes == b.cubin {
                    raw.clone()
                } else {
                    k.save(&format!("v{i}-rewritten"), &bytes)
                };
                (evaluated, raw)
            }
            None => (None, None),
        });
        let c = Cubin::parse(&bytes).map_err(|e| {
            TuneError::Cubin(format!("variant {}", variants::describe(&b.budgets)), e)
        })?;
        let f = raw::functions(&c);
        parsed.push(Some((c, f)));
    }
    Ok((parsed, kept))
}

/// `t` on the kernels of one built round, each kept only where proved: the rewritten bytes.
/// A kernel not proved leaves `wanted`, with a note saying why.
fn rewrite_round(
    t: &dyn Transform,
    cubin: &[u8],
    wanted: &mut Budgets,
    block_sizes: &[(Option<String>, u32)],
    notes: &mut Notes,
) -> Result<Vec<u8>, TuneError> {
    let name = t.key();
    let requests = requests(t, cubin, wanted, block_sizes)?;
    let outcome = match proven::prove(t, cubin, &requests) {
        Ok(outcome) => outcome,
        Err(e) => {
            for (kernel, budget) in std::mem::take(wanted) {
                notes.add(&kernel, format!("{name}: not applied: {e}"));
                if t.explained() {
                    let verdict = Verdict {
                        budget: budget.regs,
                        proved: false,
                        detail: e.to_string(),
                    };
                    notes.verdict(kernel, verdict);
                }
            }
            return Ok(cubin.to_vec());
        }
    };
    for (kernel, r) in &outcome.kernels {
        let budget = wanted[kernel];
        let (proved, detail) = match r {
            Ok(p) => (true, p.summary()),
            Err(e) => {
                wanted.remove(kernel);
                (false, e.to_string())
            }
        };
        let note = if proved {
            format!("{name} at {}: {detail}", budget.regs)
        } else {
            format!("{name} at {}: not applied: {detail}", budget.regs)
        };
        notes.add(kernel, note);
        if t.explained() {
            let verdict = Verdict {
                budget: budget.regs,
                proved,
                detail,
            };
            notes.verdict(kernel.clone(), verdict);
        }
    }
    Ok(outcome.bytes)
}

/// The requests for the kernels of `budgets` made with `t` in the cubin `bytes`: slots laid
/// out from the launch bounds, else the block-size setting, else 1024 threads; at most the
/// budget's registers.
pub fn requests(
    t: &dyn Transform,
    bytes: &[u8],
    budgets: &Budgets,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Vec<(String, Options)>, TuneError> {
    let cubin = Cubin::parse(bytes).map_err(|e| TuneError::Cubin(t.key().into(), e))?;
    Ok(budgets
        .iter()
        .filter(|(_, b)| b.rewrite.is_some_and(|r| r.transform == t.key()))
        .map(|(k, b)| {
            let setting = crate::settings::block_size_for(block_sizes, k);
            let mut o = Options::for_kernel(&cubin, k, setting);
            o.max_registers = Some(b.regs);
            (k.clone(), o)
        })
        .collect())
}

/// Kernel `p`'s candidate in `cubin` (`funcs`: its SASS; none: no prediction), as compiled
/// with `budget` (none: the baseline), or `None` when the cubin has no record of it. A budget
/// below ptxas's count is priced no better than its bound, and carries it.
pub fn evaluate(
    p: &KernelPlan,
    pricing: &Pricing<'_>,
    cubin: &Cubin,
    funcs: &[Function],
    budget: Option<Budget>,
) -> Option<Evaluated> {
    let info = cubin.function_info(&p.name)?;
    let regs = info.registers?;
    let frame = info.frame_size.unwrap_or(0);
    let residencies = p.residencies(
        pricing.arch,
        &pricing.model.memory,
        regs,
        info.static_shared,
        frame,
        pricing.relocatable,
    );
    let bounded = budget.filter(|b| b.regs < p.baseline_regs && !pricing.baseline.is_empty());
    let bounds = match bounded {
        Some(b) => pricing.bound_cycles(p, b.regs),
        None => vec![None; residencies.len()],
    };
    let own = pricing.own(p);
    let predictions: Vec<Option<Prediction>> = residencies
        .iter()
        .zip(&bounds)
        .map(|(r, bound)| {
            (r.warps_per_sm > 0 && !funcs.is_empty() && !pricing.baseline.is_empty())
                .then(|| coherence::price(&pricing.model, &own, &p.name, funcs, *r, *bound))
                .flatten()
        })
        .collect();
    let first = predictions.iter().flatten().next();
    Some(Evaluated {
        budget,
        registers: regs,
        spill_instructions: info.spill_instructions,
        frame_bytes: frame,
        static_shared: info.static_shared,
        cycles_per_warp: predictions
            .iter()
            .map(|x| x.map(|x| x.cycles_per_warp))
            .collect(),
        warps_per_sm: residencies.iter().map(|r| r.warps_per_sm).collect(),
        latency: first.map_or(0.0, |x| x.cost.latency),
        issue: first.map_or(0.0, |x| x.cost.issue),
        local_accesses: first.map_or(0.0, |x| x.cost.local_accesses),
        bytes: first.map(|x| x.cost.bytes).unwrap_or_default(),
        memory: predictions
            .iter()
            .map(|x| x.as_ref().map(MemoryTerms::of))
            .collect(),
        bound_percent: bounded.map(|b| pricing.bound_percent(p, b.regs)),
        // The step marks the budgets built only to be measured.
        measured_only: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(budget: u32, proved: bool) -> Verdict {
        Verdict {
            budget,
            proved,
            detail: String::new(),
        }
    }

    #[test]
    fn a_proved_verdict_is_not_replaced_by_a_refusal() {
        let mut n = Notes::default();
        let seen = |x: Option<Verdict>| x.map(|x| (x.budget, x.proved));
        n.verdict("k".into(), v(32, true));
        n.verdict("k".into(), v(24, false));
        assert_eq!(seen(n.take_verdict("k", None)), Some((32, true)));
        n.verdict("j".into(), v(32, false));
        n.verdict("j".into(), v(24, true));
        assert_eq!(seen(n.take_verdict("j", None)), Some((24, true)));
        n.verdict("r".into(), v(32, false));
        assert_eq!(seen(n.take_verdict("r", None)), Some((32, false)));
        assert_eq!(seen(n.take_verdict("r", None)), None);
    }

    #[test]
    fn the_report_shows_the_verdict_of_the_rewrite_that_ships() {
        let mut n = Notes::default();
        // Offered at the shipped budget 64 and at 40; both proved, the one at 64 ships.
        n.verdict("k".into(), v(64, true));
        n.verdict("k".into(), v(40, true));
        let got = n.take_verdict("k", Some(64)).unwrap();
        assert_eq!((got.budget, got.proved), (64, true));
        n.verdict("k".into(), v(64, true));
        n.verdict("k".into(), v(40, true));
        assert_eq!(n.take_verdict("k", Some(40)).unwrap().budget, 40);
    }
}

//! Planning one step's variants (docs/DESIGN.md §Budgets at occupancy cliffs): each kernel's register budgets from the
//! baseline cubin, the registered SASS rewrites offered where asked for, the budgets pruned
//! that cannot clear the margin, and the rounds of variants to build.

use std::collections::{BTreeMap, BTreeSet};

use super::candidates::{self, KernelPlan};
use super::dynamic_shared;
use super::pricing::Pricing;
use super::ptx::Budget;
use super::record::{Limit, Pruned};
use super::variants::Budgets;
use crate::arch::Sm;
use crate::cubin::Cubin;
use crate::predict::{Arch, Model};
use crate::sass::Function;
use crate::settings::Settings;
use crate::transform::{self, Transform};

/// What to build for one step.
#[derive(Debug, Default)]
pub struct Plan {
    pub(crate) kernels: Vec<KernelPlan>,
    /// Per kernel, the budgets pruned before building.
    pub(crate) pruned: BTreeMap<String, Vec<Pruned>>,
    /// The variants to build: round `i` gives each kernel it names that budget.
    pub(crate) rounds: Vec<Budgets>,
    /// Per round, the rewrite its budgets are made with (none: ptxas alone).
    pub(crate) rewrite: Vec<Option<&'static dyn Transform>>,
    /// Per kernel kept at ptxas's budget whatever the model says: why.
    pub(crate) held: BTreeMap<String, String>,
    /// Per kernel, the budgets the model's bound prunes, as the default mode leaves them out
    /// (under adapt/train some are built all the same, see `measured_only`).
    pub(crate) model_pruned: BTreeMap<String, Vec<Pruned>>,
    /// Under adapt/train, per kernel: the budgets built only to be measured (the model's
    /// bound ruled them out, no hardware limit did); the static choice never takes them.
    pub(crate) measured_only: BTreeMap<String, Vec<Budget>>,
    /// Where the model's bound pruned (the default mode, a profile-guided build), per kernel:
    /// the budgets a training run would build and measure.
    pub(crate) train_would_measure: BTreeMap<String, Vec<Budget>>,
    /// Why the rewrites the settings ask for are not offered in this module, when that is
    /// the line tables: one warning line, so a forced rewrite does not fail silently.
    pub(crate) rewrites_off: Option<String>,
}

/// Per kernel, a list.
type PerKernel<T> = BTreeMap<String, Vec<T>>;

/// Under adapt/train, the most budgets per kernel built only to be measured
/// (docs/selector.md §Ranking): the nearest cliff that raises occupancy. Each budget is one
/// more `--entry` ptxas run of the kernels that have one and one more copy of their code in
/// the object, so this caps the extra rounds a measured build costs at one and its object at
/// about twice nvcc's device code; two made a template-heavy file's object 3x nvcc's
/// (bench/results/measured-path.md: one gives 1.26-1.36x nvcc's cold time and 1.99-2.16x
/// its object there). Which of the variants built ship is then the object-size cap's
/// choice ([`super::cap`]: 1.72-1.77x there).
pub(crate) const MEASURED_EXTRAS: usize = 1;

/// The plan for the kernels of `baseline` (`functions`: its SASS, for pruning with `model`;
/// `dynamic_users`: the kernels whose PTX uses shared memory sized at launch).
pub fn plan(
    arch: Arch,
    model: Model,
    baseline: &Cubin,
    functions: &[Function],
    settings: &Settings,
    dynamic_users: &BTreeSet<String>,
) -> Plan {
    let sm = baseline.arch();
    let relocatable = baseline.is_relocatable();
    let mut kernels: Vec<KernelPlan> = baseline
        .kernels()
        .iter()
        .filter_map(|f| {
            let dynamic =
                dynamic_shared::of_kernel(dynamic_users, &settings.dynamic_shared, &f.name);
            candidates::plan(arch, f, relocatable, &settings.block_sizes, true, dynamic)
        })
        .collect();
    let spilling: BTreeSet<String> = baseline
        .kernels()
        .iter()
        .filter(|f| f.spill_instructions > 0)
        .map(|f| f.name.clone())
        .collect();
    let mut held = if relocatable {
        hold_external_callers(&mut kernels, baseline)
    } else {
        BTreeMap::new()
    };
    // Forcing a choice (testing) still builds what it names. Only lower budgets go: a
    // rewrite asked for at the budget a kernel ships with (`offer_at_limit`) buys no warps.
    if settings.force.is_none() {
        for (k, why) in dynamic_shared::hold_unknown(&mut kernels) {
            held.entry(k).or_insert(why);
        }
    }
    // A SASS rewrite moves code that `-lineinfo`'s (or `-G`'s) line tables describe by
    // address, and nothing rewrites those tables, so such a module gets ptxas's code only.
    let lines = baseline.debug_info_section();
    let rewritable = Sm::of(sm).model().rewrites && !relocatable && lines.is_none();
    let rewrites_off = lines
        .filter(|_| {
            transform::REGISTERED
                .iter()
                .any(|t| settings.offers_transform(t.key()))
        })
        .map(|section| {
            format!(
                "SASS rewrites are off for this module: its {section} describes ptxas's code by \
                 address and nothing rewrites it (build without -lineinfo to rewrite)"
            )
        });
    offer_rewrites(&mut kernels, rewritable, settings, &spilling);
    // Forcing a choice (testing) builds all. Every other mode prunes with the model's bound
    // first (`prune`): a budget it rules out is one the model cannot predict to beat
    // ptxas's by the margin, so the default mode, which ships what the model picks without
    // measuring, builds no more (issue 31). Under adapt and train the bound is no reason to
    // skip a measurement: it rests on the model's DRAM, issue and latency estimates (no data
    // reuse, say), which is what measuring is for (issue 45). There only a hardware limit
    // prunes (no warps to gain), and the build cost rule (`measured`) picks which of the
    // rest to build beside what the model keeps. A profile-guided build builds the same
    // candidates as the training run whose profile guides it, so that the profile's variant
    // numbers name the same budgets and a measured-only winner can ship.
    let mut measured_only = BTreeMap::new();
    let mut train_would_measure = BTreeMap::new();
    let (pruned, model_pruned) = if settings.force.is_some() {
        (BTreeMap::new(), BTreeMap::new())
    } else {
        let pricing = Pricing {
            model,
            arch,
            relocatable,
            baseline: functions,
        };
        let model_pruned = prune(&mut kernels, &pricing, settings.margin_percent);
        let measured = measured(&kernels, &model_pruned, &pricing);
        if settings.selector.is_some() || settings.profile.is_some() {
            let pruned = add_measured(
                &mut kernels,
                (&model_pruned, measured),
                &pricing,
                &mut measured_only,
            );
            (pruned, model_pruned)
        } else {
            train_would_measure = measured;
            (model_pruned.clone(), model_pruned)
        }
    };
    let (rounds, rewrite) = rounds(&kernels);
    Plan {
        kernels,
        pruned,
        rounds,
        rewrite,
        held,
        model_pruned,
        measured_only,
        train_would_measure,
        rewrites_off,
    }
}

/// Functions the driver provides (`printf`, `assert`, device `malloc`): nvlink gives them no
/// register count to check, so calling them limits no budget.
const DRIVER_CALLS: &[&str] = &["vprintf", "__assertfail", "malloc", "free"];

/// Relocatable code: a kernel that reaches a function defined in another module keeps
/// ptxas's budget. nvlink refuses a kernel whose register limit is below a callee's count,
/// and that count is only known when the callee's own module is compiled (issue 30).
fn hold_external_callers(kernels: &mut [KernelPlan], cubin: &Cubin) -> BTreeMap<String, String> {
    let callees: BTreeMap<String, Vec<String>> = cubin
        .functions()
        .into_iter()
        .map(|f| (f.name, f.callees))
        .collect();
    let mut held = BTreeMap::new();
    for p in kernels.iter_mut() {
        if let Some(outside) = external_callee(&callees, &p.name) {
            p.budgets.clear();
            held.insert(
                p.name.clone(),
                format!(
                    "calls {outside}, which another module defines (-rdc): its register count is \
                     not known before the device link, so ptxas's budget stays"
                ),
            );
        }
    }
    held
}

/// The first function `kernel` reaches through `callees` (defined functions → their direct
/// callees) that this module does not define and the driver does not provide.
fn external_callee(callees: &BTreeMap<String, Vec<String>>, kernel: &str) -> Option<String> {
    let mut seen = BTreeSet::from([kernel.to_string()]);
    let mut todo = vec![kernel.to_string()];
    while let Some(f) = todo.pop() {
        for c in callees.get(&f).into_iter().flatten() {
            if !callees.contains_key(c) {
                if !DRIVER_CALLS.contains(&c.as_str()) {
                    return Some(c.clone());
                }
            } else if seen.insert(c.clone()) {
                todo.push(c.clone());
            }
        }
    }
    None
}

/// The registered rewrites asked for (`--orion-transforms`, or forced), offered on
/// whole-program code without line tables for sm_75-90 (`rewritable`; docs/DESIGN.md
/// §Rewrites), each at the budgets it names
/// ([`Transform::offer`]) from each kernel's plain ones. A kernel that spills at the budget
/// it ships with (`spilling`: ptxas's own count, which is the user's limit when one binds) is
/// also offered each rewrite's candidate at that budget ([`Transform::offer_at_limit`]) and,
/// with it, ptxas's shared-memory spilling there (issue 23: the spills users have come from
/// their own limits, where no lower budget raises occupancy).
fn offer_rewrites(
    kernels: &mut [KernelPlan],
    rewritable: bool,
    settings: &Settings,
    spilling: &BTreeSet<String>,
) {
    if !rewritable {
        return;
    }
    for t in transform::REGISTERED {
        if !settings.offers_transform(t.key()) {
            continue;
        }
        for p in kernels.iter_mut() {
            if spilling.contains(&p.name)
                && let Some((regs, from)) = t.offer_at_limit(p.baseline_regs)
            {
                let at_limit = Budget::rewritten_by(*t, regs, from);
                if !p.budgets.contains(&at_limit) {
                    p.budgets.push(at_limit);
                }
                let pragma = Budget {
                    smem_spill: true,
                    ..Budget::regs(p.baseline_regs)
                };
                if !p.budgets.contains(&pragma) {
                    p.budgets.push(pragma);
                }
            }
            let plain: Vec<u32> = p
                .budgets
                .iter()
                .filter(|b| !b.smem_spill && !b.rewritten())
                .map(|b| b.regs)
                .collect();
            let offered = t.offer(&plain, p.baseline_regs);
            p.budgets.extend(
                offered
                    .into_iter()
                    .map(|(regs, from)| Budget::rewritten_by(*t, regs, from)),
            );
        }
    }
}

/// Drop the budgets that cannot clear the margin even in the best case: ptxas's own code with
/// the warps the budget buys ([`Pricing::bound_percent`]; a kernel whose warps are issue- or
/// bandwidth-bound gains nothing from more of them). A built budget is never priced above its
/// bound (`predict::coherence`), so nothing pruned could have been chosen. What was dropped,
/// per kernel.
fn prune(
    kernels: &mut [KernelPlan],
    pricing: &Pricing<'_>,
    margin_percent: f64,
) -> BTreeMap<String, Vec<Pruned>> {
    let mut pruned = BTreeMap::new();
    for p in kernels {
        if !pricing.baseline.iter().any(|f| f.name == p.name) {
            continue;
        }
        let bound = |b: &Budget| pricing.bound_percent(p, b.regs);
        // A candidate at the shipped budget that moves spills (a rewrite or the pragma) gains
        // by the local traffic it removes, not by occupancy: the occupancy bound does not
        // apply, and its evaluation weighs the traffic saved against the warps the grown
        // shared size costs.
        let at_limit = |b: &Budget| b.regs == p.baseline_regs && (b.rewritten() || b.smem_spill);
        let (keep, drop): (Vec<Budget>, Vec<Budget>) = p
            .budgets
            .iter()
            .partition(|b| at_limit(b) || bound(b) >= margin_percent);
        if !drop.is_empty() {
            let dropped = drop
                .iter()
                .map(|b| Pruned {
                    budget: *b,
                    bound_percent: bound(b),
                    limit: pricing.bound_limit(p, b.regs),
                })
                .collect();
            pruned.insert(p.name.clone(), dropped);
        }
        p.budgets = keep;
    }
    pruned
}

/// Per kernel, the budgets the model pruned that a measured build builds
/// (docs/selector.md §Ranking): for a kernel the model keeps no budget of (so that its
/// variants would otherwise measure nothing), plain register budgets that buy more resident
/// warps at some block size (the one bound that holds whatever the kernel's reuse), best by
/// the model's bound first (ties: the higher budget, fewer spills), the nearest such cliff
/// always among them, [`MEASURED_EXTRAS`] at most; highest budget first. A kernel with a
/// budget the model keeps is measured against ptxas's own already: building its pruned
/// budgets too cost a template-heavy file 2.5x nvcc's time and 3x its object (issue 45).
fn measured(
    kernels: &[KernelPlan],
    model_pruned: &BTreeMap<String, Vec<Pruned>>,
    pricing: &Pricing<'_>,
) -> BTreeMap<String, Vec<Budget>> {
    let mut out = BTreeMap::new();
    for p in kernels.iter().filter(|p| p.budgets.is_empty()) {
        let Some(pruned) = model_pruned.get(&p.name) else {
            continue;
        };
        let mut open: Vec<&Pruned> = pruned
            .iter()
            .filter(|x| !x.budget.smem_spill && !x.budget.rewritten())
            .filter(|x| pricing.raises_occupancy(p, x.budget.regs))
            .collect();
        let Some(nearest) = open.iter().map(|x| x.budget).max_by_key(|b| b.regs) else {
            continue;
        };
        open.sort_by(|a, b| {
            b.bound_percent
                .total_cmp(&a.bound_percent)
                .then(b.budget.regs.cmp(&a.budget.regs))
        });
        let mut picked = vec![nearest];
        for x in open {
            if picked.len() == MEASURED_EXTRAS {
                break;
            }
            if !picked.contains(&x.budget) {
                picked.push(x.budget);
            }
        }
        picked.sort_by_key(|b| std::cmp::Reverse(b.regs));
        out.insert(p.name.clone(), picked);
    }
    out
}

/// Under adapt/train: each kernel's `measured` budgets appended to the ones the model kept
/// (after them, so those keep their rounds), noted in `measured_only`; what stays unbuilt,
/// per kernel, with what decided now (no warps to gain, or the build's cost).
fn add_measured(
    kernels: &mut [KernelPlan],
    (model_pruned, measured): (&PerKernel<Pruned>, PerKernel<Budget>),
    pricing: &Pricing<'_>,
    measured_only: &mut BTreeMap<String, Vec<Budget>>,
) -> BTreeMap<String, Vec<Pruned>> {
    let mut pruned = BTreeMap::new();
    for p in kernels.iter_mut() {
        let extra = measured.get(&p.name).cloned().unwrap_or_default();
        let left: Vec<Pruned> = model_pruned
            .get(&p.name)
            .into_iter()
            .flatten()
            .filter(|x| !extra.contains(&x.budget))
            .map(|x| Pruned {
                limit: if pricing.raises_occupancy(p, x.budget.regs) {
                    Limit::BuildCost
                } else {
                    Limit::NoOccupancyGain
                },
                ..x.clone()
            })
            .collect();
        if !left.is_empty() {
            pruned.insert(p.name.clone(), left);
        }
        if !extra.is_empty() {
            p.budgets.extend(extra.iter().copied());
            measured_only.insert(p.name.clone(), extra);
        }
    }
    pruned
}

/// The variants to build. Variant i gives every kernel its i-th plain register budget; the
/// shared-memory spilling budgets go in a variant of their own, since ptxas refuses the
/// pragma for a whole module when one kernel cannot have it (dynamic shared memory), and a
/// refusal must not cost the plain budgets; then each registered rewrite's budgets, its i-th
/// budget of every kernel in its i-th round.
fn rounds(kernels: &[KernelPlan]) -> (Vec<Budgets>, Vec<Option<&'static dyn Transform>>) {
    let mut rounds = by_position(kernels, |b| !b.smem_spill && !b.rewritten());
    // One round per position: a kernel offered the pragma at its lowest budget and at its
    // shipped one builds both (one map per round holds one budget per kernel).
    rounds.extend(by_position(kernels, |b| b.smem_spill));
    let mut rewrite = vec![None; rounds.len()];
    for t in transform::REGISTERED {
        let of_t = by_position(kernels, |b| {
            b.rewrite.is_some_and(|r| r.transform == t.key())
        });
        rewrite.extend(of_t.iter().map(|_| Some(*t)));
        rounds.extend(of_t);
    }
    (rounds, rewrite)
}

/// Where budget `b` of kernel `p` is listed among its candidates: in the order of the rounds
/// that build them in the full search ([`rounds`]: plain budgets, then shared-memory
/// spilling, then each registered rewrite's, each in the plan's order), so that the report
/// lists them, and equal predictions go to the same candidate, whichever round built them
/// (a descent builds them in another order, [`super::descent`]).
pub(crate) fn listed_at(p: &KernelPlan, b: &Budget) -> (usize, usize) {
    let kind = |x: &Budget| match x.rewrite {
        Some(r) => {
            2 + transform::REGISTERED
                .iter()
                .position(|t| t.key() == r.transform)
                .unwrap_or(transform::REGISTERED.len())
        }
        None if x.smem_spill => 1,
        None => 0,
    };
    let at = p
        .budgets
        .iter()
        .filter(|x| kind(x) == kind(b))
        .position(|x| x == b)
        .unwrap_or(usize::MAX);
    (kind(b), at)
}

/// Round i: the i-th budget of each kernel among those `keep` selects.
fn by_position(kernels: &[KernelPlan], keep: impl Fn(&Budget) -> bool) -> Vec<Budgets> {
    let of =
        |p: &KernelPlan| -> Vec<Budget> { p.budgets.iter().copied().filter(|b| keep(b)).collect() };
    let n = kernels.iter().map(|p| of(p).len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            kernels
                .iter()
                .filter_map(|p| Some((p.name.clone(), *of(p).get(i)?)))
                .collect()
        })
        .collect()
}

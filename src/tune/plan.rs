//! Planning one step's variants (docs/DESIGN.md §Budgets at occupancy cliffs): each kernel's register budgets from the
//! baseline cubin, the registered SASS rewrites offered where asked for, the budgets pruned
//! that cannot clear the margin, and the rounds of variants to build.

use std::collections::{BTreeMap, BTreeSet};

use super::candidates::{self, KernelPlan};
use super::dynamic_shared;
use super::pricing::Pricing;
use super::ptx::Budget;
use super::record::Pruned;
use super::variants::Budgets;
use crate::arch::ShaderModel;
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
}

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
    offer_rewrites(&mut kernels, sm, relocatable, settings, &spilling);
    // Forcing a choice (testing) builds all. Every other mode builds the same candidates,
    // measured selection included: a budget the model's bound rules out is one it cannot
    // predict to beat ptxas's by the margin (the bound is an upper bound of the model,
    // `predict::coherence`), so it is no real alternative for the selector either (Orion
    // §3.3 rules out "the versions that are unlikely to perform well" at compile time), and
    // building it would cost a template-heavy file several times nvcc's time (issue 31).
    // The original name's static winner is then what a default build ships by construction.
    let pruned = if settings.force.is_some() {
        BTreeMap::new()
    } else {
        let pricing = Pricing {
            model,
            arch,
            relocatable,
            baseline: functions,
        };
        prune(&mut kernels, &pricing, settings.margin_percent)
    };
    let (rounds, rewrite) = rounds(&kernels);
    Plan {
        kernels,
        pruned,
        rounds,
        rewrite,
        held,
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
/// whole-program code for sm_75-90 (docs/DESIGN.md §Rewrites), each at the budgets it names
/// ([`Transform::offer`]) from each kernel's plain ones. A kernel that spills at the budget
/// it ships with (`spilling`: ptxas's own count, which is the user's limit when one binds) is
/// also offered each rewrite's candidate at that budget ([`Transform::offer_at_limit`]) and,
/// with it, ptxas's shared-memory spilling there (issue 23: the spills users have come from
/// their own limits, where no lower budget raises occupancy).
fn offer_rewrites(
    kernels: &mut [KernelPlan],
    sm: u32,
    relocatable: bool,
    settings: &Settings,
    spilling: &BTreeSet<String>,
) {
    if !ShaderModel::of(sm).rewrites || relocatable {
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
                })
                .collect();
            pruned.insert(p.name.clone(), dropped);
        }
        p.budgets = keep;
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

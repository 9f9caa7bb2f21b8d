//! Tuning one ptxas step: plan each kernel's budgets from the cubin ptxas made by itself (the
//! baseline, already where nvcc expects it), build the variants (only the kernels that vary),
//! predict each kernel's time under each, choose, assemble the chosen budgets (a built
//! whole-module variant, else the chosen kernels spliced into the baseline, else one final
//! ptxas run), check that every kernel's SASS is what was evaluated, and put the result in
//! place of the baseline.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::TuneContext;
use super::candidates::{self, BlockFrom, KernelPlan};
use super::proven;
use super::ptx::Budget;
use super::ptxas_args::PtxasArgs;
use super::select::{self, Evaluated};
use super::variants::{self, Budgets, Builder, VariantError};
use crate::cubin::Cubin;
use crate::process::StepContext;
use crate::predict::Arch;
use crate::predict::stalls::{combine, function_cost};
use crate::sass::{Function, raw};
use crate::transform::spill_to_shared::Options;

/// One kernel's record in the report (`NVCC_ORION_REPORT`, one JSON object per line).
#[derive(Debug, Clone, Serialize)]
pub struct KernelRecord {
    pub arch: String,
    pub kernel: String,
    /// The cubin nvcc asked ptxas for: relative to where the step ran, or the file name of
    /// one of nvcc's temporaries (never a folder of the build machine).
    pub output: String,
    pub block_sizes: Vec<u32>,
    pub block_from: BlockFrom,
    /// The baseline first, then each budget tried that ptxas built.
    pub candidates: Vec<Evaluated>,
    /// Budgets not built because even an optimistic bound on their gain was below the margin.
    pub pruned: Vec<Pruned>,
    /// Index into `candidates`.
    pub chosen: usize,
    pub chosen_registers: u32,
    pub gain_percent: f64,
    pub reason: String,
    /// The SASS transform tried on this kernel and what came of it (the checker's verdict,
    /// or why the kernel was left alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
    /// The same outcome, structured, for the candidates table's checker column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// With [`crate::settings::Settings::keep_cubins`]: where each candidate's cubin was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cubins: Option<KeptCubins>,
}

/// What the checker said about the spill → shared rewrite of one kernel.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The budget of the spill → shared candidate.
    pub budget: u32,
    pub proved: bool,
    /// The proof's summary, or why the rewrite was refused.
    pub detail: String,
}

/// Cubins kept for `explain --html` (paths).
#[derive(Debug, Clone, Serialize)]
pub struct KeptCubins {
    /// One per candidate, in the record's order (the baseline first).
    pub candidates: Vec<String>,
    /// The spill → shared candidate's variant as ptxas made it, before the rewrite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_rewrite: Option<String>,
}

/// A budget skipped before building: its gain if the variant had the baseline's own latency
/// and issue cycles per warp, only more warps (a lower budget adds spills; it does not make a
/// warp's own work shorter), was below the margin.
#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    pub budget: Budget,
    /// The bound on the gain, in percent, worst case over the block sizes.
    pub bound_percent: f64,
}

/// What tuning did to one step.
#[derive(Debug, Default)]
pub struct Tuned {
    /// ptxas's diagnostics for the cubin that was kept (the final run's when it changed).
    pub stderr: Option<Vec<u8>>,
    pub records: Vec<KernelRecord>,
    pub changed: bool,
    /// Variants built, and how many came from the cache.
    pub built: usize,
    pub cached: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("cubin {0}: {1}")]
    Cubin(String, crate::cubin::CubinError),
    #[error(transparent)]
    Variant(#[from] VariantError),
    #[error("{0}")]
    Io(String),
    #[error(
        "the final ptxas run gave kernel {0} different SASS from the variant that was evaluated"
    )]
    Mismatch(String),
    #[error("spill → shared: {0}")]
    Transform(String),
}

fn io_err(what: &Path) -> impl FnOnce(std::io::Error) -> TuneError + '_ {
    move |e| TuneError::Io(format!("{}: {e}", what.display()))
}

/// The files of a ptxas step that can be tuned.
pub fn step_files(argv: &[String]) -> Option<PtxasArgs> {
    PtxasArgs::parse(argv)
}

/// Tune the step whose baseline cubin ptxas has just written.
pub fn tune(argv: &[String], ctx: &StepContext, tune: TuneContext<'_>) -> Result<Tuned, TuneError> {
    let Some(files) = step_files(argv) else {
        return Ok(Tuned::default());
    };
    let out = ctx.cwd.join(files.output_path(argv));
    let report_out = report_path(&ctx.cwd, &out);
    let ptx_path = ctx.cwd.join(&argv[files.input]);
    let ptx = std::fs::read_to_string(&ptx_path).map_err(io_err(&ptx_path))?;
    let baseline_bytes = std::fs::read(&out).map_err(io_err(&out))?;
    let baseline = Cubin::parse(&baseline_bytes)
        .map_err(|e| TuneError::Cubin(out.display().to_string(), e))?;
    let sm = baseline.arch();
    let arch_name = format!("sm_{sm}");
    let Some(arch) = u8::try_from(sm / 10)
        .ok()
        .and_then(|major| Arch::from_cc(major, (sm % 10) as u8).ok())
    else {
        // No occupancy table for this architecture (its limits are not in the verified
        // data): ptxas's code stays, and the report says why.
        return Ok(Tuned {
            records: untuned_records(&baseline, &arch_name, &report_out),
            ..Tuned::default()
        });
    };
    let relocatable = baseline.is_relocatable();
    let mut plans: Vec<KernelPlan> = baseline
        .kernels()
        .iter()
        .filter_map(|f| candidates::plan(arch, f, relocatable, &tune.settings.block_sizes, true))
        .collect();
    // Spill → shared at the lowest budget, when asked for: compiled one register lower, the
    // base register brings it back (sm_75-90, whole-program code; DESIGN.md §5.1).
    let offer =
        tune.settings.spill_to_shared || tune.settings.force.as_deref() == Some("spill2smem");
    if offer && (75..=90).contains(&sm) && !relocatable {
        for p in &mut plans {
            if let Some(lowest) = p
                .budgets
                .iter()
                .filter(|b| !b.smem_spill)
                .map(|b| b.regs)
                .min()
            {
                p.budgets.push(Budget::spill_to_shared(lowest));
            }
        }
    }
    // Register demotion at each plain budget below ptxas's count, when asked for: the
    // efficient binary (compiled at that count) rewritten to the budget (papers/004).
    let offer_regdem = tune.settings.regdem || tune.settings.force.as_deref() == Some("regdem");
    if offer_regdem && (75..=90).contains(&sm) && !relocatable {
        for p in &mut plans {
            let from = p.baseline_regs;
            let extra: Vec<Budget> = p
                .budgets
                .iter()
                .filter(|b| !b.smem_spill && !b.rewritten() && b.regs < from)
                .map(|b| Budget::regdem(b.regs, from))
                .collect();
            p.budgets.extend(extra);
        }
    }
    // Prune budgets that cannot clear the margin even in the best case: a kernel whose warps
    // are issue-bound gains nothing from more of them. Forcing a choice (testing) builds all.
    let base_functions = raw::functions(&baseline);
    let mut pruned: BTreeMap<String, Vec<Pruned>> = BTreeMap::new();
    if tune.settings.force.is_none() {
        for p in &mut plans {
            let Some(cost) = function_cost(sm, &base_functions, &p.name) else {
                continue;
            };
            let base_cycles: Vec<f64> = p
                .warps(arch, p.baseline_regs, relocatable)
                .iter()
                .map(|&w| combine(cost, w).cycles_per_warp)
                .collect();
            let (keep, drop): (Vec<Budget>, Vec<Budget>) = p.budgets.iter().partition(|b| {
                bound_percent(p, arch, relocatable, cost, &base_cycles, b)
                    >= tune.settings.margin_percent
            });
            if !drop.is_empty() {
                pruned.insert(
                    p.name.clone(),
                    drop.iter()
                        .map(|b| Pruned {
                            budget: *b,
                            bound_percent: bound_percent(
                                p,
                                arch,
                                relocatable,
                                cost,
                                &base_cycles,
                                b,
                            ),
                        })
                        .collect(),
                );
            }
            p.budgets = keep;
        }
    }

    let work = tempfile::Builder::new()
        .prefix("nvcc-orion-variants-")
        .tempdir()
        .map_err(|e| TuneError::Io(format!("temporary folder: {e}")))?;
    let cache = tune.settings.cache.clone();
    let ptxas = ctx
        .resolve(&argv[0])
        .map_err(|e| TuneError::Io(format!("ptxas: {e}")))?;
    let builder = Builder {
        ctx,
        argv,
        files,
        ptx: &ptx,
        ptxas_id: variants::ptxas_id(&ptxas),
        cache: cache.clone(),
        work: work.path(),
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        jobserver: jobserver_client(),
        progress: (tune.settings.verbose && std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .then(|| arch_name.clone()),
        // Compile only what varies: each variant builds just the kernels it sets a budget for
        // (whole-program code: `ptxas -c` compiles every entry whatever `--entry` says).
        entries: (variants::entries_allowed(argv) && !relocatable)
            .then(|| super::ptx::entries(&ptx).ok())
            .flatten()
            .map(|d| d.into_iter().map(|e| e.name).collect()),
    };

    // Variant i gives every kernel its i-th register budget; the shared-memory spilling
    // budgets go in a variant of their own, since ptxas refuses the pragma for a whole module
    // when one kernel cannot have it (dynamic shared memory), and a refusal must not cost the
    // plain budgets.
    let plain = |p: &KernelPlan| -> Vec<Budget> {
        p.budgets
            .iter()
            .copied()
            .filter(|b| !b.smem_spill && !b.rewritten())
            .collect()
    };
    let rounds = plans.iter().map(|p| plain(p).len()).max().unwrap_or(0);
    let mut wanted: Vec<Budgets> = (0..rounds)
        .map(|i| {
            plans
                .iter()
                .filter_map(|p| Some((p.name.clone(), *plain(p).get(i)?)))
                .collect()
        })
        .collect();
    let spilling: Budgets = plans
        .iter()
        .flat_map(|p| {
            p.budgets
                .iter()
                .filter(|b| b.smem_spill)
                .map(|b| (p.name.clone(), *b))
        })
        .collect();
    if !spilling.is_empty() {
        wanted.push(spilling);
    }
    let to_shared: Budgets = plans
        .iter()
        .flat_map(|p| {
            p.budgets
                .iter()
                .filter(|b| b.spill_to_shared)
                .map(|b| (p.name.clone(), *b))
        })
        .collect();
    let to_shared_round = (!to_shared.is_empty()).then(|| {
        wanted.push(to_shared);
        wanted.len() - 1
    });
    // Register demotion: one round per candidate level (each compiled at ptxas's own count).
    let demote = |p: &KernelPlan| -> Vec<Budget> {
        p.budgets
            .iter()
            .copied()
            .filter(|b| b.regdem_from.is_some())
            .collect()
    };
    let regdem_rounds: Vec<usize> = (0..plans.iter().map(|p| demote(p).len()).max().unwrap_or(0))
        .map(|i| {
            wanted.push(
                plans
                    .iter()
                    .filter_map(|p| Some((p.name.clone(), *demote(p).get(i)?)))
                    .collect(),
            );
            wanted.len() - 1
        })
        .collect();
    let built = builder.build_all(&wanted);
    let mut result = Tuned {
        built: built.iter().filter(|b| b.is_ok()).count(),
        cached: built
            .iter()
            .filter(|b| b.as_ref().is_ok_and(|b| b.cached))
            .count(),
        ..Tuned::default()
    };
    // A variant ptxas refuses is no candidate; anything else is an internal failure.
    let built: Vec<Option<variants::Built>> = built
        .into_iter()
        .map(|b| match b {
            Ok(b) => Ok(Some(b)),
            Err(VariantError::Refused { .. }) => Ok(None),
            Err(e) => Err(e),
        })
        .collect::<Result<_, _>>()?;

    let base_listing = base_functions;
    let mut parsed: Vec<Option<(Cubin, Vec<Function>)>> = Vec::new();
    let mut transforms: BTreeMap<String, String> = BTreeMap::new();
    let mut verdicts: BTreeMap<String, Verdict> = BTreeMap::new();
    let keep = Keep::new(tune.settings.keep_cubins.as_deref(), &arch_name, &out);
    let kept_baseline = keep
        .as_ref()
        .and_then(|k| k.save("baseline", &baseline_bytes));
    // Per variant: the kept cubin as evaluated, and as ptxas made it.
    let mut kept: Vec<(Option<String>, Option<String>)> = Vec::new();
    for (i, b) in built.iter().enumerate() {
        parsed.push(match b {
            Some(b) => {
                let mut bytes = b.cubin.clone();
                if Some(i) == to_shared_round {
                    let requests =
                        spill_requests(&b.cubin, &wanted[i], &tune.settings.block_sizes)?;
                    match proven::spill_to_shared(&b.cubin, &requests) {
                        Ok(outcome) => {
                            for (kernel, r) in &outcome.kernels {
                                let budget = wanted[i][kernel];
                                let (proved, detail) = match r {
                                    Ok(p) => (true, p.summary()),
                                    Err(e) => {
                                        wanted[i].remove(kernel);
                                        (false, e.to_string())
                                    }
                                };
                                let note = if proved {
                                    format!("spill → shared at {}: {detail}", budget.regs)
                                } else {
                                    format!(
                                        "spill → shared at {}: not applied: {detail}",
                                        budget.regs
                                    )
                                };
                                transforms.insert(kernel.clone(), note);
                                verdicts.insert(
                                    kernel.clone(),
                                    Verdict {
                                        budget: budget.regs,
                                        proved,
                                        detail,
                                    },
                                );
                            }
                            bytes = outcome.bytes;
                        }
                        Err(e) => {
                            for (kernel, budget) in std::mem::take(&mut wanted[i]) {
                                transforms.insert(
                                    kernel.clone(),
                                    format!("spill → shared: not applied: {e}"),
                                );
                                verdicts.insert(
                                    kernel,
                                    Verdict {
                                        budget: budget.regs,
                                        proved: false,
                                        detail: e.to_string(),
                                    },
                                );
                            }
                        }
                    }
                }
                if regdem_rounds.contains(&i) {
                    let requests =
                        regdem_requests(&b.cubin, &wanted[i], &tune.settings.block_sizes)?;
                    match proven::regdem(&b.cubin, &requests) {
                        Ok(outcome) => {
                            for (kernel, r) in &outcome.kernels {
                                let budget = wanted[i][kernel];
                                let note = match r {
                                    Ok(p) => format!(
                                        "register demotion at {}: {}",
                                        budget.regs,
                                        p.summary()
                                    ),
                                    Err(e) => {
                                        wanted[i].remove(kernel);
                                        format!(
                                            "register demotion at {}: not applied: {e}",
                                            budget.regs
                                        )
                                    }
                                };
                                let e = transforms.entry(kernel.clone()).or_default();
                                if !e.is_empty() {
                                    e.push_str("; ");
                                }
                                e.push_str(&note);
                            }
                            bytes = outcome.bytes;
                        }
                        Err(e) => {
                            for kernel in std::mem::take(&mut wanted[i]).into_keys() {
                                transforms
                                    .insert(kernel, format!("register demotion: not applied: {e}"));
                            }
                        }
                    }
                }
                kept.push(match &keep {
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
                Some((c, f))
            }
            None => {
                kept.push((None, None));
                None
            }
        });
    }

    let mut chosen: Budgets = BTreeMap::new();
    // Per kernel: which evaluated listing its final SASS must equal (None = baseline).
    let mut expected: BTreeMap<String, Option<usize>> = BTreeMap::new();
    for p in &plans {
        let evaluate = |cubin: &Cubin,
                        funcs: &[Function],
                        budget: Option<super::ptx::Budget>|
         -> Option<Evaluated> {
            let info = cubin.function_info(&p.name)?;
            let regs = info.registers?;
            let warps = p.warps_with_shared(arch, regs, info.static_shared, relocatable);
            let cost = if funcs.is_empty() {
                None
            } else {
                function_cost(sm, funcs, &p.name)
            };
            Some(Evaluated {
                budget,
                registers: regs,
                spill_instructions: info.spill_instructions,
                frame_bytes: info.frame_size.unwrap_or(0),
                static_shared: info.static_shared,
                cycles_per_warp: warps
                    .iter()
                    .map(|&w| {
                        cost.filter(|_| w > 0)
                            .map(|c| combine(c, w).cycles_per_warp)
                    })
                    .collect(),
                warps_per_sm: warps,
                latency: cost.map_or(0.0, |c| c.latency),
                issue: cost.map_or(0.0, |c| c.issue),
                local_accesses: cost.map_or(0.0, |c| c.local_accesses),
            })
        };
        let mut options = Vec::new();
        let mut sources = vec![None];
        options.extend(evaluate(&baseline, &base_listing, None));
        for (i, v) in parsed.iter().enumerate() {
            if let (Some(budget), Some((c, l))) = (wanted[i].get(&p.name), v)
                && let Some(e) = evaluate(c, l, Some(*budget))
            {
                options.push(e);
                sources.push(Some(i));
            }
        }
        if options.is_empty() {
            continue;
        }
        let kernel_pruned = pruned.remove(&p.name).unwrap_or_default();
        let cubins = keep.as_ref().map(|_| KeptCubins {
            candidates: sources
                .iter()
                .map(|s| match s {
                    None => kept_baseline.clone().unwrap_or_default(),
                    Some(i) => kept[*i].0.clone().unwrap_or_default(),
                })
                .collect(),
            before_rewrite: sources
                .iter()
                .flatten()
                .find(|&&i| Some(i) == to_shared_round)
                .and_then(|&i| kept[i].1.clone()),
        });
        let mut choice = select::choose(
            &options,
            tune.settings.margin_percent,
            tune.settings.force.as_deref(),
        );
        if let Some(i) = sources[choice.index] {
            chosen.insert(p.name.clone(), wanted[i][&p.name]);
        }
        expected.insert(p.name.clone(), sources[choice.index]);
        if options.len() == 1 && !kernel_pruned.is_empty() {
            let best = kernel_pruned
                .iter()
                .map(|x| x.bound_percent)
                .fold(f64::NEG_INFINITY, f64::max);
            choice.reason = format!(
                "no lower budget can clear the {}% margin: at best {best:+.1}% with more warps alone",
                tune.settings.margin_percent
            );
        }
        result.records.push(KernelRecord {
            arch: arch_name.clone(),
            kernel: p.name.clone(),
            output: report_out.clone(),
            block_sizes: p.blocks.clone(),
            block_from: p.block_from,
            chosen_registers: options[choice.index].registers,
            candidates: options,
            chosen: choice.index,
            gain_percent: choice.gain_percent,
            reason: choice.reason,
            pruned: kernel_pruned,
            transform: transforms.remove(&p.name),
            verdict: verdicts.remove(&p.name),
            cubins,
        });
    }
    if chosen.is_empty() {
        return Ok(result);
    }

    // The final cubin: a whole-module variant that is exactly the choice; else the baseline
    // with the chosen kernels spliced in from the variants they were evaluated in (what a
    // whole-module run makes, byte for byte, tested); else one more ptxas run.
    let mut spliced = false;
    let final_built = match built
        .iter()
        .flatten()
        .find(|b| b.whole_module && b.budgets == chosen)
    {
        Some(b) => b.clone(),
        None => match splice_choice(argv, &baseline, &chosen, &expected, &parsed) {
            Some(cubin) => {
                spliced = true;
                variants::Built {
                    budgets: chosen.clone(),
                    cubin,
                    // Not used: ptxas's own diagnostics for the step stay.
                    stderr: Vec::new(),
                    cached: false,
                    whole_module: true,
                }
            }
            None => builder.build(wanted.len(), &chosen)?,
        },
    };
    // Kernels chosen with spill → shared get the same proved rewrite on the final cubin.
    let mut final_bytes = final_built.cubin.clone();
    let shared: Budgets = chosen
        .iter()
        .filter(|(_, b)| b.spill_to_shared)
        .map(|(k, b)| (k.clone(), *b))
        .collect();
    if !shared.is_empty() {
        let requests = spill_requests(&final_bytes, &shared, &tune.settings.block_sizes)?;
        let outcome = proven::spill_to_shared(&final_bytes, &requests)
            .map_err(|e| TuneError::Transform(format!("final assembly: {e}")))?;
        if let Some((k, Err(e))) = outcome.kernels.iter().find(|(_, r)| r.is_err()) {
            return Err(TuneError::Transform(format!("final assembly, {k}: {e}")));
        }
        final_bytes = outcome.bytes;
    }
    // Kernels chosen with register demotion get the same proved rewrite.
    let demoted: Budgets = chosen
        .iter()
        .filter(|(_, b)| b.regdem_from.is_some())
        .map(|(k, b)| (k.clone(), *b))
        .collect();
    if !demoted.is_empty() {
        let requests = regdem_requests(&final_bytes, &demoted, &tune.settings.block_sizes)?;
        let outcome = proven::regdem(&final_bytes, &requests)
            .map_err(|e| TuneError::Transform(format!("final assembly: {e}")))?;
        if let Some((k, Err(e))) = outcome.kernels.iter().find(|(_, r)| r.is_err()) {
            return Err(TuneError::Transform(format!("final assembly, {k}: {e}")));
        }
        final_bytes = outcome.bytes;
    }
    let final_cubin =
        Cubin::parse(&final_bytes).map_err(|e| TuneError::Cubin("final".to_string(), e))?;
    for (kernel, source) in &expected {
        let evaluated = match source {
            None => &baseline,
            Some(i) => match &parsed[*i] {
                Some((c, _)) => c,
                None => return Err(TuneError::Mismatch(kernel.clone())),
            },
        };
        if kernel_code(&final_cubin, kernel) != kernel_code(evaluated, kernel) {
            return Err(TuneError::Mismatch(kernel.clone()));
        }
    }
    write_atomically(&out, &final_bytes).map_err(io_err(&out))?;
    if !spliced {
        result.stderr = Some(final_built.stderr);
    }
    result.changed = true;
    Ok(result)
}

/// The baseline with each chosen kernel taken from the variant it was evaluated in, when that
/// can be done exactly: plain ptxas budgets only (a SASS rewrite is applied to the final
/// cubin), no `-v` report to reproduce, and a splice the cubin module accepts.
fn splice_choice(
    argv: &[String],
    baseline: &Cubin,
    chosen: &Budgets,
    expected: &BTreeMap<String, Option<usize>>,
    parsed: &[Option<(Cubin, Vec<Function>)>],
) -> Option<Vec<u8>> {
    let verbose = argv
        .iter()
        .skip(1)
        .any(|a| matches!(a.as_str(), "-v" | "--verbose"));
    if verbose || chosen.values().any(|b| b.rewritten()) {
        return None;
    }
    let parts: Vec<(&str, &Cubin)> = chosen
        .keys()
        .map(|k| {
            let i = (*expected.get(k)?)?;
            Some((k.as_str(), &parsed.get(i)?.as_ref()?.0))
        })
        .collect::<Option<_>>()?;
    crate::cubin::splice::splice(baseline, &parts).ok()
}

/// Where `explain --html` wants this step's cubins: one folder, files named by the step's
/// architecture and a hash of its output path (several steps may write to one folder).
struct Keep {
    dir: std::path::PathBuf,
    stem: String,
}

impl Keep {
    fn new(dir: Option<&Path>, arch: &str, out: &Path) -> Option<Keep> {
        use sha2::Digest;
        let dir = dir?;
        let hash = sha2::Sha256::digest(out.as_os_str().as_encoded_bytes());
        let hex: String = hash[..6].iter().map(|b| format!("{b:02x}")).collect();
        Some(Keep {
            dir: dir.to_path_buf(),
            stem: format!("{arch}-{hex}"),
        })
    }

    /// Write one cubin; its path, or `None` when it cannot be written (the page then goes
    /// without that view; the build is not affected).
    fn save(&self, what: &str, bytes: &[u8]) -> Option<String> {
        let path = self.dir.join(format!("{}-{what}.cubin", self.stem));
        std::fs::create_dir_all(&self.dir).ok()?;
        std::fs::write(&path, bytes).ok()?;
        Some(path.display().to_string())
    }
}

/// The transform requests for the spill → shared kernels of `budgets` in the cubin `bytes`:
/// slots laid out from the launch bounds, else the block-size setting, else 1024 threads;
/// at most the budget's registers.
fn spill_requests(
    bytes: &[u8],
    budgets: &Budgets,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Vec<(String, Options)>, TuneError> {
    let cubin = Cubin::parse(bytes).map_err(|e| TuneError::Cubin("spill → shared".into(), e))?;
    Ok(budgets
        .iter()
        .filter(|(_, b)| b.spill_to_shared)
        .map(|(k, b)| {
            let setting = crate::settings::block_size_for(block_sizes, k);
            let mut o = Options::for_kernel(&cubin, k, setting);
            o.max_registers = Some(b.regs);
            (k.clone(), o)
        })
        .collect())
}

/// The register-demotion requests for the kernels of `budgets` with a demotion candidate:
/// the target is the budget; slots laid out as for spill → shared.
fn regdem_requests(
    bytes: &[u8],
    budgets: &Budgets,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Vec<(String, Options)>, TuneError> {
    let cubin = Cubin::parse(bytes).map_err(|e| TuneError::Cubin("register demotion".into(), e))?;
    Ok(budgets
        .iter()
        .filter(|(_, b)| b.regdem_from.is_some())
        .map(|(k, b)| {
            let setting = crate::settings::block_size_for(block_sizes, k);
            let mut o = Options::for_kernel(&cubin, k, setting);
            o.max_registers = Some(b.regs);
            (k.clone(), o)
        })
        .collect())
}

/// The best gain `b` could give `p` over `base_cycles` (per block size) in percent, worst case
/// over the block sizes, if the variant kept the baseline's latency and issue per warp.
fn bound_percent(
    p: &KernelPlan,
    arch: Arch,
    relocatable: bool,
    cost: crate::predict::stalls::Cost,
    base_cycles: &[f64],
    b: &Budget,
) -> f64 {
    p.warps(arch, b.regs, relocatable)
        .iter()
        .zip(base_cycles)
        .map(|(&w, &base)| {
            if w == 0 {
                f64::NEG_INFINITY
            } else {
                100.0 * (base / combine(cost, w).cycles_per_warp - 1.0)
            }
        })
        .fold(f64::INFINITY, f64::min)
}

/// The bytes of a kernel's code and of its own sub-functions (`$kernel$...`), in symbol
/// order: what must not change between the evaluated variant and the cubin that ships.
fn kernel_code(cubin: &Cubin, kernel: &str) -> Vec<Vec<u8>> {
    let prefix = format!("${kernel}$");
    let sections = &cubin.elf().sections;
    cubin
        .functions()
        .into_iter()
        .filter(|f| f.name == kernel || f.name.starts_with(&prefix))
        .map(|f| {
            let data = sections
                .get(f.text_section)
                .map_or(&[][..], |s| &s.data[..]);
            let start = usize::try_from(f.text_offset)
                .unwrap_or(usize::MAX)
                .min(data.len());
            let end = usize::try_from(f.text_offset.saturating_add(f.text_size))
                .unwrap_or(usize::MAX)
                .min(data.len());
            data[start..end.max(start)].to_vec()
        })
        .collect()
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The cubin as the report names it: relative to where the step ran when inside it, else
/// (one of nvcc's temporaries) its file name, so no record names a folder of the machine.
fn report_path(cwd: &Path, out: &Path) -> String {
    match out.strip_prefix(cwd) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => out.file_name().map_or_else(
            || out.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    }
}

/// Records for the kernels of an architecture the tuner has no occupancy table for: ptxas's
/// own result, nothing tried.
fn untuned_records(baseline: &Cubin, arch_name: &str, out: &str) -> Vec<KernelRecord> {
    baseline
        .kernels()
        .iter()
        .filter_map(|f| {
            let info = baseline.function_info(&f.name)?;
            let registers = info.registers?;
            Some(KernelRecord {
                arch: arch_name.to_string(),
                kernel: f.name.clone(),
                output: out.to_string(),
                block_sizes: Vec::new(),
                block_from: candidates::BlockFrom::Assumed,
                candidates: vec![Evaluated {
                    budget: None,
                    registers,
                    spill_instructions: info.spill_instructions,
                    frame_bytes: info.frame_size.unwrap_or(0),
                    static_shared: info.static_shared,
                    warps_per_sm: Vec::new(),
                    cycles_per_warp: Vec::new(),
                    latency: 0.0,
                    issue: 0.0,
                    local_accesses: 0.0,
                }],
                pruned: Vec::new(),
                chosen: 0,
                chosen_registers: registers,
                gain_percent: 0.0,
                reason: format!(
                    "not tuned: no occupancy table for {arch_name} (its limits are not in the \
                     tuner's verified data); ptxas's own code kept"
                ),
                transform: None,
                verdict: None,
                cubins: None,
            })
        })
        .collect()
}

/// The build's jobserver (GNU make's or cargo's), when one is handed down.
fn jobserver_client() -> Option<jobserver::Client> {
    // SAFETY: `from_env_ext` reads the descriptors named in MAKEFLAGS / CARGO_MAKEFLAGS. They
    // were inherited from the parent build for this purpose; with `check_pipe` the crate
    // checks that they really are the jobserver's pipe or fifo before using them, so a stale
    // MAKEFLAGS whose numbers now name one of our own files is refused rather than read.
    unsafe { jobserver::Client::from_env_ext(true) }.client.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_a_ptxas_step() {
        let argv: Vec<String> = [
            "ptxas",
            "-arch=sm_90",
            "-m64",
            "/t/x.ptx",
            "-o",
            "/t/x.cubin",
        ]
        .map(String::from)
        .to_vec();
        let f = step_files(&argv).unwrap();
        assert_eq!(f.input, 3);
        assert_eq!(f.output_path(&argv), std::path::PathBuf::from("/t/x.cubin"));
        let no_out: Vec<String> = ["ptxas", "-arch=sm_90", "/t/x.ptx"]
            .map(String::from)
            .to_vec();
        assert_eq!(step_files(&no_out), None);
    }
}

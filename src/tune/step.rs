//! Tuning one ptxas step, top to bottom: read the cubin ptxas made by itself (the baseline,
//! already where nvcc expects it); [`plan`](super::plan) each kernel's budgets and the
//! rewrites offered; build the variants (only the kernels that vary); [`evaluate`] them
//! (rewrites proved, each kernel's time predicted under each); choose per kernel
//! ([`select`]); [`assemble`](super::assemble) the chosen budgets and put the result in
//! place of the baseline.

use std::collections::BTreeMap;
use std::path::Path;

use super::TuneContext;
use super::assemble::{self, write_atomically};
use super::candidates::KernelPlan;
use super::descent;
use super::evaluate::{self, Kept, Notes, Variant};
use super::guided::Guide;
use super::keep::Keep;
use super::multi;
use super::plan;
use super::pricing::Pricing;
use super::ptxas_args::PtxasArgs;
use super::select::{self, Evaluated};
use super::variants::{self, Budgets, Builder, Built, VariantError};
use crate::arch::Sm;
use crate::cubin::Cubin;
use crate::process::StepContext;
use crate::sass::raw;
use crate::settings::Settings;
use crate::transform::Transform;

use super::record::{Assembly, KeptCubins, KernelRecord, Limit, Pruned, TuneError, Tuned};

fn io_err(what: &Path) -> impl FnOnce(std::io::Error) -> TuneError + '_ {
    move |source| TuneError::Io {
        what: what.display().to_string(),
        source,
    }
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
    let step = read_step(argv, ctx, &files)?;
    let Some(arch) = Sm::of(step.sm).limits() else {
        // No occupancy table for this architecture (its limits are not in the verified
        // data): ptxas's code stays, and the report says why.
        return Ok(Tuned {
            records: super::record::untuned_records(
                &step.baseline,
                &step.arch_name,
                &step.report_out,
            ),
            ..Tuned::default()
        });
    };
    let settings = tune.settings;
    let base_functions = raw::functions(&step.baseline);
    let (model, model_warning) = super::model::for_step(step.sm, settings);
    let dynamic_users =
        super::ptx::dynamic_shared_users(&step.ptx).map_err(|e| TuneError::Variant(e.into()))?;
    let mut plan = plan::plan(
        arch,
        model,
        &step.baseline,
        &base_functions,
        settings,
        &dynamic_users,
    );
    let work = variants::WorkDir::default();
    let builder = builder(argv, ctx, files, &step, settings, &work)?;
    let pricing = Pricing {
        model,
        arch,
        relocatable: step.baseline.is_relocatable(),
        baseline: &base_functions,
    };
    let (built, mut result) = build_variants(&builder, &mut plan, &pricing, &step, settings)?;
    result.warnings.extend(model_warning);
    result.warnings.extend(plan.rewrites_off.take());
    let keep = Keep::new(settings.keep_cubins.as_deref(), &step.arch_name, &step.out);
    let mut notes = Notes::default();
    let (parsed, kept) = evaluate::variants(
        &built,
        &mut plan,
        &settings.block_sizes,
        keep.as_ref(),
        &mut notes,
    )?;
    let kept_baseline = keep
        .as_ref()
        .and_then(|k| k.save("baseline", &step.baseline_bytes));
    let candidates = Candidates {
        pricing,
        baseline: (&step.baseline, &base_functions[..]),
        parsed: &parsed,
        rounds: &plan.rounds,
        rewrite: &plan.rewrite,
        measured_only: &plan.measured_only,
        kept: keep.as_ref().map(|_| (kept_baseline, &kept[..])),
    };
    let mut not_built = LeftOut {
        pruned: &mut plan.pruned,
        held: &mut plan.held,
        model_pruned: &mut plan.model_pruned,
        train_would_measure: &mut plan.train_would_measure,
    };
    let mut selected = select_kernels(
        &plan.kernels,
        &mut not_built,
        &candidates,
        settings,
        &step,
        &mut notes,
        &mut result,
    );
    let built = from_ptxas(&builder, built, &selected, settings.selector.is_some())?;
    result.cache_warning = builder.cache_warning();
    let tools = crate::audit::Tools::in_dir(tune.toolkit.bin_dir());
    let inputs = assemble::Inputs {
        argv,
        baseline: (&step.baseline, &step.baseline_bytes, &base_functions),
        built: &built,
        parsed: &parsed,
        rounds: &plan.rounds,
        builder: &builder,
        block_sizes: &settings.block_sizes,
        tools: &tools,
        refuse_in_check: &settings.refuse_in_check,
    };
    let multi_index = plan.rounds.len() + 1;
    let early = early_multi(
        &inputs,
        &selected,
        multi_index,
        settings,
        &step,
        &result.records,
    );
    let (plain, prebuilt) =
        assemble_beside(&inputs, &mut selected, &step.arch_name, &mut result, early);
    let plain = plain?;
    result.one_run = (settings.selector.is_none() && tune.selector_refused.is_none())
        .then(|| one_run(plain.as_ref().map(|a| a.how), &selected.chosen))
        .flatten();
    let mut ship = plain.as_ref().map(|a| (a.bytes.clone(), a.how));
    if settings.selector.is_some() {
        let input = multi::Input {
            step: &inputs,
            plain: plain
                .as_ref()
                .map_or(&step.baseline_bytes[..], |a| &a.bytes[..]),
            chosen: &selected.chosen,
            sources: &selected.sources,
            index: multi_index,
            perturb: &settings.perturb_originals,
            prebuilt: prebuilt.as_ref(),
        };
        embed_selector(&input, &step.arch_name, &mut result, &mut ship);
    }
    ship_cubin(&step.out, ship, &mut result)?;
    if let Some(why) = tune.selector_refused {
        for r in &mut result.records {
            r.selector = Some(why.to_string());
        }
    }
    if let Some(a) = plain
        && a.how != Assembly::Spliced
    {
        result.stderr = Some(a.built.stderr);
    }
    Ok(result)
}

/// What one ptxas step read: its PTX, and the cubin ptxas made by itself (the baseline).
struct Step {
    out: std::path::PathBuf,
    /// The output as the report names it.
    report_out: String,
    ptx: String,
    baseline_bytes: Vec<u8>,
    baseline: Cubin,
    sm: u32,
    arch_name: String,
}

fn read_step(argv: &[String], ctx: &StepContext, files: &PtxasArgs) -> Result<Step, TuneError> {
    let out = ctx.cwd.join(files.output_path(argv));
    let report_out = report_path(&ctx.cwd, &out);
    let ptx_path = ctx.cwd.join(&argv[files.input]);
    let ptx = std::fs::read_to_string(&ptx_path).map_err(io_err(&ptx_path))?;
    let baseline_bytes = std::fs::read(&out).map_err(io_err(&out))?;
    let baseline = Cubin::parse(&baseline_bytes)
        .map_err(|e| TuneError::Cubin(out.display().to_string(), e))?;
    let sm = baseline.arch();
    Ok(Step {
        out,
        report_out,
        ptx,
        baseline_bytes,
        baseline,
        sm,
        arch_name: format!("sm_{sm}"),
    })
}

/// How this step's variants are built: its ptxas, cache, jobs and the entries that vary.
fn builder<'a>(
    argv: &'a [String],
    ctx: &'a StepContext,
    files: PtxasArgs,
    step: &'a Step,
    settings: &Settings,
    work: &'a variants::WorkDir,
) -> Result<Builder<'a>, TuneError> {
    let ptxas = ctx.resolve(&argv[0]).map_err(|source| TuneError::Io {
        what: "ptxas".into(),
        source,
    })?;
    Ok(Builder {
        ctx,
        argv,
        files,
        ptx: &step.ptx,
        ptxas_id: variants::ptxas_id(&ptxas),
        cache: settings.cache.clone(),
        work,
        jobs: crate::jobs::cores(),
        slots: crate::jobs::Slots::of_process(),
        progress: (settings.verbose && std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .then(|| step.arch_name.clone()),
        // Compile only what varies: each variant builds just the kernels it sets a budget for
        // (whole-program code: `ptxas -c` compiles every entry whatever `--entry` says), unless
        // the module uses functions as values, whose code depends on the entries compiled.
        entries: (variants::entries_allowed(argv)
            && !step.baseline.is_relocatable()
            && !super::function_pointers::uses_functions_as_values(&step.ptx))
        .then(|| super::ptx::entries(&step.ptx).ok())
        .flatten()
        .map(|d| d.into_iter().map(|e| e.name).collect()),
        reads_cache: std::sync::atomic::AtomicBool::new(true),
        bad_entries: std::sync::Mutex::new(Vec::new()),
    })
}

/// Build the plan's variants: each one's cubin (`None`: ptxas refused it, so it is no
/// candidate; any other failure is internal), and the counts the result starts with. In
/// the default mode by descent ([`descent`]), which leaves `plan` naming what was built.
fn build_variants(
    builder: &Builder<'_>,
    plan: &mut plan::Plan,
    pricing: &Pricing<'_>,
    step: &Step,
    settings: &Settings,
) -> Result<(Vec<Option<Built>>, Tuned), TuneError> {
    let mut split = Vec::new();
    let built: Vec<Option<Built>> = if descent::applies(plan, settings, builder) {
        descent::build(
            builder,
            plan,
            pricing,
            &step.baseline,
            descent::Rule::of(settings),
            &mut split,
        )?
    } else {
        builder
            .build_all(&plan.rounds)
            .into_iter()
            .map(|b| match b {
                Ok(b) => Ok(Some(b)),
                Err(VariantError::Refused { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .collect::<Result<_, _>>()?
    };
    let result = Tuned {
        built: built.iter().flatten().count(),
        cached: built.iter().flatten().filter(|b| b.cached).count(),
        notes: split
            .into_iter()
            .map(|n| format!("nvcc-orion: {}: {n}", step.arch_name))
            .collect(),
        ..Tuned::default()
    };
    Ok((built, result))
}

/// Every variant the chosen code may come from, as ptxas makes it now rather than as the
/// cache had it ([`Builder::refresh`]): the variants the chosen kernels were evaluated in,
/// the whole-module variant at exactly the chosen budgets, and under a selector every ranked
/// candidate's. From here on the builder runs ptxas for every variant it is asked for, so
/// neither what ships nor what the assembly check compares it with comes from the cache.
fn from_ptxas(
    builder: &Builder<'_>,
    mut built: Vec<Option<Built>>,
    selected: &Selected,
    selector: bool,
) -> Result<Vec<Option<Built>>, TuneError> {
    builder
        .reads_cache
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let mut donors: std::collections::BTreeSet<usize> =
        selected.expected.values().flatten().copied().collect();
    if selector {
        donors.extend(selected.sources.values().flatten().flatten().copied());
    }
    donors.extend(built.iter().enumerate().filter_map(|(i, b)| {
        b.as_ref()
            .filter(|b| {
                !selected.chosen.is_empty() && b.whole_module && b.budgets == selected.chosen
            })
            .map(|_| i)
    }));
    for i in donors {
        if let Some(slot) = built.get_mut(i)
            && let Some(b) = slot.as_ref().filter(|b| b.cached)
        {
            *slot = Some(builder.refresh(b)?);
        }
    }
    Ok(built)
}

/// The budgets at which one whole-module ptxas run makes exactly the cubin that ships, when
/// it does: ptxas's own (`how` none: nothing chosen), a whole-module variant, or a splice of
/// plain budgets (whole-module ptxas's code, `tests/oracles/generated.rs`); not when a
/// rewrite of ours made a kernel's code.
fn one_run(how: Option<Assembly>, chosen: &Budgets) -> Option<Budgets> {
    match how {
        None => Some(Budgets::new()),
        Some(Assembly::Variant | Assembly::Spliced | Assembly::WholeModule)
            if !chosen.values().any(|b| b.rewritten()) =>
        {
            Some(chosen.clone())
        }
        Some(_) => None,
    }
}

/// Choose every kernel's static winner ([`select_kernel`]), its record into `result`.
fn select_kernels(
    kernels: &[KernelPlan],
    left: &mut LeftOut<'_>,
    candidates: &Candidates<'_>,
    settings: &Settings,
    step: &Step,
    notes: &mut Notes,
    result: &mut Tuned,
) -> Selected {
    let mut selected = Selected::default();
    let mut guide = Guide::load(settings, &step.arch_name);
    for p in kernels {
        let not_built = NotBuilt {
            pruned: left.pruned.remove(&p.name).unwrap_or_default(),
            held: left.held.remove(&p.name),
            model_pruned: left.model_pruned.remove(&p.name).unwrap_or_default(),
            train_would_measure: left.train_would_measure.remove(&p.name).unwrap_or_default(),
        };
        let mut ctx = Choosing {
            settings,
            arch_name: &step.arch_name,
            guide: &mut guide,
            notes,
        };
        if let Some(record) = select_kernel(p, candidates, not_built, &mut ctx, &mut selected) {
            result.records.push(KernelRecord {
                arch: step.arch_name.clone(),
                output: step.report_out.clone(),
                ..record
            });
        }
    }
    result.warnings.extend(guide.warnings);
    selected
}

/// Under adapt and train: the ranked variants and the selector's cubin in place of `ship`.
fn embed_selector(
    input: &multi::Input<'_>,
    arch_name: &str,
    result: &mut Tuned,
    ship: &mut Option<(Vec<u8>, Assembly)>,
) {
    match multi::embed(input, &mut result.records) {
        multi::Embedding::Cubin(bytes, note, how, warnings) => {
            *ship = Some((bytes, how));
            result
                .notes
                .push(format!("nvcc-orion: {arch_name}: {note}"));
            let warnings = warnings.into_iter().map(|w| format!("{arch_name}: {w}"));
            result.warnings.extend(warnings);
        }
        multi::Embedding::None => {}
        multi::Embedding::Note(n) => result.notes.push(format!("nvcc-orion: {arch_name}: {n}")),
        multi::Embedding::Failed(w) => result.warnings.push(format!("{arch_name}: {w}")),
    }
}

/// Put the chosen cubin where nvcc expects ptxas's, and say how it was assembled.
fn ship_cubin(
    out: &Path,
    ship: Option<(Vec<u8>, Assembly)>,
    result: &mut Tuned,
) -> Result<(), TuneError> {
    let Some((bytes, how)) = ship else {
        return Ok(());
    };
    write_atomically(out, &bytes).map_err(io_err(out))?;
    result.changed = true;
    for r in &mut result.records {
        r.assembly = Some(how);
    }
    Ok(())
}

/// Every kernel's candidates: the baseline and the evaluated variants.
struct Candidates<'a> {
    pricing: Pricing<'a>,
    baseline: (&'a Cubin, &'a [crate::sass::Function]),
    parsed: &'a [Variant],
    /// Per variant: the budgets it was built with, less the kernels whose rewrite was not
    /// proved ([`plan::Plan::rounds`]), and its rewrite.
    rounds: &'a [Budgets],
    rewrite: &'a [Option<&'static dyn Transform>],
    /// Per kernel, the budgets built only to be measured ([`plan::Plan::measured_only`]).
    measured_only: &'a BTreeMap<String, Vec<super::ptx::Budget>>,
    /// With `explain`'s cubins kept: the baseline's path, and each variant's (as evaluated,
    /// as ptxas made it).
    kept: Option<(Option<String>, &'a [Kept])>,
}

/// Under a selector, the multi-variant cubin's first ptxas run (variant `index`) when it is
/// known before plain tune's cubin is assembled ([`multi::early`], which estimates that
/// cubin's size; ptxas's own fills the unread `plain`). `None` on any failure: the run then
/// waits for its turn.
fn early_multi(
    inputs: &assemble::Inputs<'_>,
    selected: &Selected,
    index: usize,
    settings: &Settings,
    step: &Step,
    records: &[KernelRecord],
) -> Option<(multi::Early, usize)> {
    settings.selector.as_ref()?;
    let input = multi::Input {
        step: inputs,
        plain: &step.baseline_bytes,
        chosen: &selected.chosen,
        sources: &selected.sources,
        index,
        perturb: &settings.perturb_originals,
        prebuilt: None,
    };
    let early = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        multi::early(&input, records)
    }));
    Some((early.ok()??, index))
}

/// Plain tune's cubin ([`assemble_or_refuse`]), with `early`'s ptxas run beside it on a free
/// job slot (issue 47: the two runs need nothing of each other, and one after the other they
/// were the adapt build's serial tail): what that run made, for [`multi::embed`] to use where
/// it asks for exactly that.
fn assemble_beside(
    inputs: &assemble::Inputs<'_>,
    selected: &mut Selected,
    arch_name: &str,
    result: &mut Tuned,
    early: Option<(multi::Early, usize)>,
) -> (
    Result<Option<assemble::Assembled>, TuneError>,
    Option<multi::Prebuilt>,
) {
    std::thread::scope(|s| {
        let running = early.and_then(|(e, index)| multi::start(s, inputs.builder, index, e));
        let plain = assemble_or_refuse(inputs, selected, arch_name, result);
        (plain, running.and_then(|h| h.join().ok()))
    })
}

/// Assemble the chosen kernels. A kernel chosen with a rewrite that the assembly check
/// refuses keeps ptxas's code, the other kernels their choice: one warning names it and why,
/// and its record says so (`None`: nothing is left chosen).
fn assemble_or_refuse(
    inputs: &assemble::Inputs<'_>,
    selected: &mut Selected,
    arch_name: &str,
    result: &mut Tuned,
) -> Result<Option<assemble::Assembled>, TuneError> {
    refusing_per_kernel(selected, arch_name, result, |choice| {
        assemble::assemble(inputs, choice)
    })
}

/// [`assemble_or_refuse`] with the assembly as a parameter: `assemble` is tried with what is
/// chosen, and each rewritten kernel it names as disagreeing is taken out of the choice
/// (ptxas's code for it) before the next try. A disagreement about a kernel no rewrite made,
/// or any other error, ends it: the caller keeps ptxas's cubin, as before the check.
fn refusing_per_kernel<A>(
    selected: &mut Selected,
    arch_name: &str,
    result: &mut Tuned,
    mut assemble: impl FnMut(&assemble::Choice<'_>) -> Result<A, TuneError>,
) -> Result<Option<A>, TuneError> {
    loop {
        if selected.chosen.is_empty() {
            return Ok(None);
        }
        let choice = assemble::Choice {
            chosen: &selected.chosen,
            expected: &selected.expected,
        };
        match assemble(&choice) {
            Err(TuneError::Audit(crate::audit::AuditError::Disagrees { kernel, what }))
                if selected.chosen.get(&kernel).is_some_and(|b| b.rewritten()) =>
            {
                refuse(selected, &kernel, &what, arch_name, result);
            }
            r => return r.map(Some),
        }
    }
}

/// Kernel `kernel`'s rewrite refused by the assembly check (`what`): it keeps ptxas's code,
/// one warning names it, and its record says why.
fn refuse(
    selected: &mut Selected,
    kernel: &str,
    what: &crate::audit::Difference,
    arch_name: &str,
    result: &mut Tuned,
) {
    selected.chosen.remove(kernel);
    selected.expected.insert(kernel.to_string(), None);
    result.warnings.push(format!(
        "{arch_name} {kernel}: the assembly check refused its rewrite ({what}); the kernel keeps ptxas's code"
    ));
    if let Some(r) = result.records.iter_mut().find(|r| r.kernel == kernel) {
        r.chosen = 0;
        r.chosen_registers = r
            .candidates
            .first()
            .map_or(r.chosen_registers, |c| c.registers);
        r.gain_percent = 0.0;
        r.reason = format!("the assembly check refused its rewrite: {what}");
    }
}

/// The choices so far.
#[derive(Default)]
struct Selected {
    /// Per kernel not keeping the baseline: its budget.
    chosen: Budgets,
    /// Per kernel: which evaluated variant its final SASS must equal (None = baseline).
    expected: BTreeMap<String, Option<usize>>,
    /// Per kernel: each candidate's variant (None = baseline), in the record's order.
    sources: BTreeMap<String, Vec<Option<usize>>>,
}

/// What choosing needs besides the candidates.
struct Choosing<'a> {
    settings: &'a Settings,
    arch_name: &'a str,
    /// The profile, if any ([`Guide::apply`]).
    guide: &'a mut Guide,
    notes: &'a mut Notes,
}

/// Per kernel, what the plan left out ([`plan::Plan`]): the budgets pruned, those the
/// model's bound pruned, its reasons to hold ptxas's budget, and what a training run would
/// measure.
struct LeftOut<'a> {
    pruned: &'a mut BTreeMap<String, Vec<Pruned>>,
    held: &'a mut BTreeMap<String, String>,
    model_pruned: &'a mut BTreeMap<String, Vec<Pruned>>,
    train_would_measure: &'a mut BTreeMap<String, Vec<super::ptx::Budget>>,
}

/// What a build leaves out of a kernel's choice ([`plan::Plan`]).
struct NotBuilt {
    /// Budgets pruned before building.
    pruned: Vec<Pruned>,
    /// Why it keeps ptxas's budget whatever the model says.
    held: Option<String>,
    /// The budgets the model's bound pruned (under adapt/train, some built to be measured).
    model_pruned: Vec<Pruned>,
    /// Where the model's bound pruned: the budgets a training run would build.
    train_would_measure: Vec<super::ptx::Budget>,
}

/// Kernel `p`'s candidates evaluated and the static winner chosen ([`select::choose`]): its record (arch and output left for the caller), or
/// `None` when not even the baseline has a record of it.
fn select_kernel(
    p: &KernelPlan,
    c: &Candidates<'_>,
    not_built: NotBuilt,
    ctx: &mut Choosing<'_>,
    selected: &mut Selected,
) -> Option<KernelRecord> {
    let settings = ctx.settings;
    let NotBuilt {
        pruned: kernel_pruned,
        held,
        model_pruned,
        train_would_measure,
    } = not_built;
    let (base, base_functions) = c.baseline;
    let mut options: Vec<Evaluated> = Vec::new();
    let mut sources = vec![None];
    options.extend(evaluate::evaluate(
        p,
        &c.pricing,
        base,
        base_functions,
        None,
    ));
    // In the order the plan lists the budgets (ties go to the first), whichever round built
    // them: a descent builds the pragma's candidate before the lower plain budgets.
    let mut built: Vec<usize> = (0..c.parsed.len())
        .filter(|&i| c.rounds[i].contains_key(&p.name))
        .collect();
    built.sort_by_key(|&i| plan::listed_at(p, &c.rounds[i][&p.name]));
    for i in built {
        if let (Some(budget), Some((cubin, funcs))) = (c.rounds[i].get(&p.name), &c.parsed[i])
            && let Some(mut e) = evaluate::evaluate(p, &c.pricing, cubin, funcs, Some(*budget))
        {
            e.measured_only = c
                .measured_only
                .get(&p.name)
                .is_some_and(|m| m.contains(budget));
            options.push(e);
            sources.push(Some(i));
        }
    }
    if options.is_empty() {
        return None;
    }
    let cubins = c.kept.as_ref().map(|(baseline, kept)| KeptCubins {
        candidates: sources
            .iter()
            .map(|s| match s {
                None => baseline.clone().unwrap_or_default(),
                Some(i) => kept[*i].0.clone().unwrap_or_default(),
            })
            .collect(),
        before_rewrite: sources
            .iter()
            .flatten()
            .find(|&&i| c.rewrite[i].is_some_and(|t| t.explained()))
            .and_then(|&i| kept[i].1.clone()),
    });
    let mut choice = select::choose(&options, settings.margin_percent, settings.force.as_ref());
    // A forced choice (testing) wins over a profile.
    let measured = settings
        .force
        .is_none()
        .then(|| {
            ctx.guide
                .apply(&p.name, ctx.arch_name, &options, &mut choice)
        })
        .flatten();
    if let Some(i) = sources[choice.index] {
        selected.chosen.insert(p.name.clone(), c.rounds[i][&p.name]);
    }
    selected
        .expected
        .insert(p.name.clone(), sources[choice.index]);
    selected.sources.insert(p.name.clone(), sources);
    // The model's bound pruned every budget a default build would have: the same reason as
    // there (under adapt/train the budgets it ruled out are measured all the same).
    let statics = options.iter().filter(|o| !o.measured_only).count();
    if statics == 1 && !model_pruned.is_empty() && settings.force.is_none() {
        let best = best_pruned(&model_pruned).map_or(f64::NEG_INFINITY, |x| x.bound_percent);
        choice.reason = format!(
            "no lower budget can clear the {}% margin: at best {best:+.1}% with more warps alone",
            settings.margin_percent
        );
    }
    let profiled = measured.as_ref().is_some_and(|m| m.winner.is_some());
    let kept_by = (choice.index == 0 && held.is_none() && settings.force.is_none() && !profiled)
        .then(|| kept_by(statics, &model_pruned))
        .flatten();
    if let Some(why) = held {
        choice.reason = why;
    }
    let shipped_rewrite = options[choice.index]
        .budget
        .filter(|b| b.rewritten())
        .map(|b| b.regs);
    Some(KernelRecord {
        arch: String::new(),
        kernel: p.name.clone(),
        output: String::new(),
        block_sizes: p.blocks.clone(),
        block_from: p.block_from,
        chosen_registers: options[choice.index].registers,
        candidates: options,
        chosen: choice.index,
        gain_percent: choice.gain_percent,
        reason: choice.reason,
        pruned: kernel_pruned,
        transform: ctx.notes.transforms.remove(&p.name),
        verdict: ctx.notes.take_verdict(&p.name, shipped_rewrite),
        cubins,
        measured,
        variants: Vec::new(),
        assembly: None,
        selector: None,
        dynamic_shared: p.dynamic_shared,
        kept_by,
        train_would_measure,
    })
}

/// The budget the model's bound came closest to keeping (the first of equal bounds).
fn best_pruned(pruned: &[Pruned]) -> Option<&Pruned> {
    pruned
        .iter()
        .fold(None, |best: Option<&Pruned>, x| match best {
            Some(b) if b.bound_percent >= x.bound_percent => Some(b),
            _ => Some(x),
        })
}

/// Why ptxas's choice stays for a kernel with `statics` candidates the static choice may take
/// (ptxas's own included) and `model_pruned` the budgets the model's bound pruned: no lower
/// budget raises occupancy, the bound of the one it came closest to keeping (the model's
/// DRAM floor without reuse, its issue bound, ...), or the built ones' predictions.
fn kept_by(statics: usize, model_pruned: &[Pruned]) -> Option<Limit> {
    if statics > 1 {
        return Some(Limit::BelowMargin);
    }
    Some(best_pruned(model_pruned).map_or(Limit::NoOccupancyGain, |x| x.limit))
}

/// The cubin as the report names it: relative to where the step ran when inside it, else
/// (one of nvcc's temporaries) its file name, so no record names a folder of the machine.
pub(crate) fn report_path(cwd: &Path, out: &Path) -> String {
    match out.strip_prefix(cwd) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => out.file_name().map_or_else(
            || out.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    }
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

    /// Two kernels chosen with a rewrite; the assembly (here a stand-in that names `a` as
    /// disagreeing while `a` is chosen, as the check's per-kernel comparison does) refuses
    /// `a` only: `b` ships its rewrite, and one warning and `a`'s record name `a`.
    #[test]
    fn a_refused_rewrite_rejects_only_its_kernel() {
        use crate::transform::spill2smem::Spill2Smem;
        use crate::tune::multi::tests::record;
        use crate::tune::select::tests::ev;
        let rewritten = crate::tune::ptx::Budget::rewritten_by(&Spill2Smem, 40, 40);
        let mut selected = Selected::default();
        let mut result = Tuned::default();
        for k in ["a", "b"] {
            selected.chosen.insert(k.to_string(), rewritten);
            selected.expected.insert(k.to_string(), Some(0));
            let mut shared = ev(Some(40), 40, &[Some(90.0)]);
            shared.budget = Some(rewritten);
            result
                .records
                .push(record(k, vec![ev(None, 64, &[Some(100.0)]), shared], 1));
        }
        let mut tries = Vec::new();
        let shipped = refusing_per_kernel(&mut selected, "sm_90", &mut result, |choice| {
            let names: Vec<String> = choice.chosen.keys().cloned().collect();
            tries.push(names.clone());
            if choice.chosen.contains_key("a") {
                return Err(TuneError::Audit(crate::audit::AuditError::Disagrees {
                    kernel: "a".to_string(),
                    what: crate::audit::Difference::Symbol("helper".to_string()),
                }));
            }
            Ok(names)
        })
        .unwrap();
        assert_eq!(shipped, Some(vec!["b".to_string()]));
        assert_eq!(tries, [vec!["a", "b"], vec!["b"]]);
        assert_eq!(selected.expected["a"], None);
        assert_eq!(selected.expected["b"], Some(0));
        assert_eq!(
            result.warnings,
            [
                "sm_90 a: the assembly check refused its rewrite (symbol `helper` differs in its \
              code section); the kernel keeps ptxas's code"
            ]
        );
        let (a, b) = (&result.records[0], &result.records[1]);
        assert_eq!((a.chosen, a.chosen_registers, a.gain_percent), (0, 64, 0.0));
        assert!(a.reason.contains("refused its rewrite"), "{}", a.reason);
        assert_eq!((b.chosen, b.chosen_registers), (1, 40));
    }

    /// A disagreement about a kernel no rewrite made is not the rewrite's: it ends the
    /// assembly (the caller keeps ptxas's cubin), and the choice is left as it was.
    #[test]
    fn a_disagreement_outside_the_rewrites_is_an_error() {
        let mut selected = Selected::default();
        selected
            .chosen
            .insert("a".to_string(), crate::tune::ptx::Budget::regs(40));
        let mut result = Tuned::default();
        let r: Result<Option<()>, _> =
            refusing_per_kernel(&mut selected, "sm_90", &mut result, |_| {
                Err(TuneError::Audit(crate::audit::AuditError::Disagrees {
                    kernel: "a".to_string(),
                    what: crate::audit::Difference::NotShipped,
                }))
            });
        assert!(matches!(r, Err(TuneError::Audit(_))));
        assert!(selected.chosen.contains_key("a") && result.warnings.is_empty());
    }
}

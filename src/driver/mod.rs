//! The dry-run split and replay: ask the real nvcc what it would run (`--dryrun`), then run
//! those steps ourselves in order, sending every ptxas step through [`crate::tune::ptxas_step`].
//!
//! Nothing the steps print is shown until every step has succeeded. On any failure the caller
//! runs the real nvcc instead, so the user sees exactly nvcc's own errors and exit code.

mod chains;
pub(crate) mod depfile;
pub mod dryrun;
pub mod dryrun_shim;
pub(crate) mod glue;
pub mod passed;
pub(crate) mod shell;
mod units;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli::Facts;
use crate::jobs::Slots;
use crate::process::{Captured, StepContext};
use crate::settings::{Mode, Settings};
use crate::timings::{self, Phase};
use crate::toolkit::Toolkit;
use crate::tune::{Stepped, TuneContext};
use dryrun::{RunKind, Step};

/// What a successful replay printed, to be shown as nvcc would have shown it.
#[derive(Debug, Default)]
pub struct Replayed {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// How many ptxas steps went through the tuning hook.
    pub ptxas_steps: usize,
    pub steps: usize,
    /// What the tuning hook reported (shown in verbose mode).
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The dry run itself failed: a bad option, a missing file. nvcc will say why.
    #[error("nvcc --dryrun exited with {0}")]
    DryRunFailed(std::process::ExitStatus),
    #[error(transparent)]
    DryRun(#[from] dryrun::DryRunError),
    /// A step failed: most likely the user's error (a syntax error), which nvcc reports itself.
    #[error("step `{tool}` exited with {status}")]
    StepFailed {
        tool: String,
        status: std::process::ExitStatus,
    },
    #[error("cannot run `{tool}`: {source}")]
    Spawn {
        tool: String,
        source: std::io::Error,
    },
    #[error("dependency file {path}: {source}")]
    Depfile {
        path: PathBuf,
        source: depfile::DepfileError,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl DriverError {
    /// Whether falling back deserves a warning: not when nvcc itself is about to report the
    /// user's own error.
    pub fn is_internal(&self) -> bool {
        !matches!(
            self,
            DriverError::DryRunFailed(_) | DriverError::StepFailed { .. }
        )
    }
}

/// Split and replay one tunable invocation. `nvcc_env` is the environment the real nvcc would
/// get (nvcc-orion's own variables removed); `cwd` is where it runs.
pub fn replay(
    tk: &Toolkit,
    facts: &Facts,
    settings: &Settings,
    nvcc_env: &[(OsString, OsString)],
    cwd: &Path,
) -> Result<Replayed, DriverError> {
    // A private TMPDIR for the dry run puts nvcc's temporary file names in a directory only
    // this invocation uses; it is removed when `tmp` drops.
    let tmp = tempfile::Builder::new()
        .prefix("nvcc-orion-")
        .tempdir()
        .map_err(|source| DriverError::Io {
            what: "creating a temporary directory".into(),
            source,
        })?;
    let mut dry_env: Vec<(OsString, OsString)> = nvcc_env
        .iter()
        .filter(|(k, _)| k != "TMPDIR")
        .cloned()
        .collect();
    dry_env.push(("TMPDIR".into(), tmp.path().into()));
    let out = Command::new(tk.nvcc())
        .args(&facts.dryrun_args)
        .arg("--dryrun")
        .env_clear()
        .envs(dry_env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .output()
        .map_err(|source| DriverError::Spawn {
            tool: "nvcc".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(DriverError::DryRunFailed(out.status));
    }
    if !out.stdout.is_empty() {
        return Err(dryrun::DryRunError::UnknownLine {
            line_no: 0,
            text: String::from_utf8_lossy(&out.stdout).into_owned(),
        }
        .into());
    }
    let text = String::from_utf8(out.stderr).map_err(|e| dryrun::DryRunError::UnknownLine {
        line_no: 0,
        text: format!("non-UTF-8 output: {e}"),
    })?;
    let base: HashMap<String, String> = nvcc_env
        .iter()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string())))
        .collect();
    let plan = dryrun::parse(&text, &base)?;

    let mut env: Vec<(OsString, OsString)> = nvcc_env.to_vec();
    for (k, v) in &plan.env {
        env.retain(|(name, _)| name != k.as_str());
        env.push((k.into(), v.into()));
    }
    let ctx = StepContext {
        env,
        cwd: cwd.to_path_buf(),
    };
    let (settings, adjusted) = for_plan(settings, &plan);
    let settings: &Settings = &settings;
    // The selector's glue lives beside the variant cache (`<cache>/runtime`), or in this
    // replay's own folder when there is no cache.
    let glue = settings.selector.map(|sel| {
        let root = match settings.cache.as_deref().and_then(Path::parent) {
            Some(base) => base.join("runtime"),
            None => tmp.path().join("nvcc-orion-runtime"),
        };
        glue::Glue::new(sel, root)
    });
    let result = run_steps(
        &plan,
        &ctx,
        facts,
        TuneContext {
            toolkit: tk,
            settings,
            selector_refused: adjusted.selector_refused,
        },
        glue.as_ref(),
    );
    drop(tmp);
    let mut replayed = result?;
    let mut messages = Vec::new();
    adjusted.say(&mut messages, &mut replayed.notes);
    for m in &plan.messages {
        messages.extend_from_slice(m.as_bytes());
        messages.push(b'\n');
    }
    messages.append(&mut replayed.stderr);
    replayed.stderr = messages;
    Ok(replayed)
}

/// What [`for_plan`] changed of the settings, and what it says about it.
struct Adjusted {
    /// Under adapt or train, why the compile gets no selector.
    selector_refused: Option<&'static str>,
    /// The profile could not be read or parsed: its one warning line.
    profile_ignored: Option<String>,
}

impl Adjusted {
    /// The lines: an -flto object lacks what the user asked for, and an unreadable profile
    /// guides nothing, so both warn (once per compile, not once per ptxas step); a -cubin or
    /// -fatbin output never carries a selector (docs/selector.md), so that is a verbose note.
    fn say(&self, stderr: &mut Vec<u8>, notes: &mut Vec<String>) {
        if let Some(line) = &self.profile_ignored {
            stderr.extend_from_slice(format!("nvcc-orion: warning: {line}\n").as_bytes());
        }
        match self.selector_refused {
            Some(LTO_REFUSED) => {
                stderr.extend_from_slice(format!("nvcc-orion: warning: {LTO_REFUSED}\n").as_bytes())
            }
            Some(why) => notes.push(format!("nvcc-orion: {why}")),
            None => {}
        }
    }
}

/// The settings the plan's steps run with. Where no glue can reach the launches, nothing
/// could launch a variant: no selector, and the tuned winners ship alone, as in a default
/// build. A profile that cannot be read is dropped here, once for every ptxas step.
fn for_plan<'s>(
    settings: &'s Settings,
    plan: &dryrun::Plan,
) -> (std::borrow::Cow<'s, Settings>, Adjusted) {
    let adjusted = Adjusted {
        selector_refused: settings.selector.and_then(|_| selector_refused(plan)),
        // Only a tuned step reads the profile (`NVCC_ORION=replay` tunes nothing).
        profile_ignored: (settings.mode == Mode::Tune)
            .then(|| crate::tune::guided::unreadable(settings))
            .flatten(),
    };
    if adjusted.selector_refused.is_none() && adjusted.profile_ignored.is_none() {
        return (std::borrow::Cow::Borrowed(settings), adjusted);
    }
    let mut changed = settings.clone();
    if adjusted.selector_refused.is_some() {
        changed.selector = None;
    }
    if adjusted.profile_ignored.is_some() {
        changed.profile = None;
    }
    (std::borrow::Cow::Owned(changed), adjusted)
}

/// Why a compile with `-flto` host objects gets no launch-time selector.
const LTO_REFUSED: &str = "no launch-time selector: the host compiler's -flto objects keep \
    their symbols in LTO bytecode, where the launches cannot be redirected; the tuned kernels \
    ship alone";

/// Why a `-cubin` or `-fatbin` compile gets no launch-time selector.
const NO_HOST_OBJECT: &str = "no launch-time selector: a -cubin or -fatbin output has no host \
    object to carry it, so nothing could launch a variant; the tuned kernels ship alone";

/// Under adapt or train, why the plan's objects cannot carry the selector's glue, if they
/// cannot: it has no host object (`-cubin`, `-fatbin`), or its host objects are
/// link-time-optimised.
fn selector_refused(plan: &dryrun::Plan) -> Option<&'static str> {
    let hosts: Vec<&Vec<String>> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            dryrun::Step::Run {
                argv,
                kind: dryrun::RunKind::HostCompile(_),
                ..
            } => Some(argv),
            _ => None,
        })
        .collect();
    if hosts.is_empty() {
        return Some(NO_HOST_OBJECT);
    }
    let lto = hosts.iter().any(|argv| {
        argv.iter()
            .any(|a| a.starts_with("-flto") && a != "-flto=none")
    });
    lto.then_some(LTO_REFUSED)
}

/// Whom a chain compiles for, as its verbose line names it: ptxas's `-arch=sm_XX`, else the
/// preprocessing's `-D__CUDA_ARCH__=XX0` (a chain of one preprocessing run, as `-MD` makes
/// them), else the host side (the host preprocessing, without `__CUDA_ARCH__`).
fn chain_target(steps: &[(usize, &[String])]) -> String {
    let args = || steps.iter().flat_map(|(_, argv)| argv.iter());
    if let Some(arch) = args().find_map(|a| a.strip_prefix("-arch=")) {
        return arch.to_string();
    }
    args()
        .find_map(|a| a.strip_prefix("-D__CUDA_ARCH__="))
        .and_then(|n| n.parse::<u32>().ok())
        .map_or_else(|| "host".to_string(), |n| format!("sm_{}", n / 10))
}

/// What one `Run` step left: its output, or a tuned ptxas step still to publish.
enum Ran {
    Plain(Captured),
    Tuned(Stepped),
}

impl Ran {
    fn status(&self) -> std::process::ExitStatus {
        match self {
            Ran::Plain(c) => c.status,
            Ran::Tuned(t) => t.captured.status,
        }
    }
}

/// A ptxas step tuned in the background, and the files it reads and writes (a later step
/// that names one waits for it).
struct Pending<'s> {
    index: usize,
    /// Its plan index.
    step: usize,
    files: Vec<String>,
    handle: std::thread::ScopedJoinHandle<'s, std::io::Result<Stepped>>,
}

/// The files a step names: its arguments that are no options and look like paths.
fn files_of(argv: &[String]) -> Vec<String> {
    argv.iter()
        .skip(1)
        .filter(|a| !a.starts_with('-') && (a.contains('/') || a.contains('.')))
        .cloned()
        .collect()
}

/// Run the plan's steps in order. Under tune, each further architecture's front end and ptxas
/// step (a [`chains::Chain`]) starts on an extra job slot ([`Slots`]) when one is free, as its
/// stretch of the plan begins, and runs beside the driver's own steps; without a free slot the
/// driver runs it in its place, as nvcc would. A tuned ptxas step runs in the background when
/// an extra slot is free too, and each variant round draws on the same slots. A step that
/// names a background step's files waits for it (`fatbinary` for the cubins), every step that
/// may not overlap waits for the chains, and so does every `rm` and dependency-file step.
/// Output, notes and report records are taken in step order, and a failure is the first in
/// plan order, so the replay prints and reports the same bytes either way. With `glue`
/// (`NVCC_ORION=adapt|train`), the host compilation of each `.cudafe1.cpp` goes through it.
fn run_steps(
    plan: &dryrun::Plan,
    ctx: &StepContext,
    facts: &Facts,
    tune: TuneContext<'_>,
    glue: Option<&glue::Glue>,
) -> Result<Replayed, DriverError> {
    let units = units::Units::of(plan);
    let background = tune.settings.mode == Mode::Tune;
    let sides = if background {
        chains::side_chains(&plan.steps, &ctx.cwd)
    } else {
        chains::Sides::default()
    };
    let progress = chains::Progress::default();
    let mut replay = Replay {
        ctx,
        tune,
        glue,
        units: &units,
        background,
        slots: Slots::of_process(),
        done: Replayed::default(),
        ran: Vec::new(),
        unit_of: Vec::new(),
        aside: Vec::new(),
        preprocessed: Vec::new(),
        sides: &sides,
        progress: &progress,
    };
    std::thread::scope(|scope| -> Result<(), DriverError> {
        // Whatever way this returns, no chain is left waiting on a step that will not run.
        let _stop = chains::StopOnDrop(&progress);
        // The glue is offered a slot only after the last chain was: it needs nothing of the
        // front ends, but a chain left without a slot runs after the others (issue 47).
        let glue_at = sides.chains.iter().map(|c| c.start_at).max().unwrap_or(0);
        let mut pending: Vec<Pending<'_>> = Vec::new();
        let mut running: Vec<Running<'_>> = Vec::new();
        for (i, step) in plan.steps.iter().enumerate() {
            replay.done.steps += 1;
            running.extend(replay.start_chains(i, plan, scope));
            if i == glue_at {
                prefetch_glue(plan, ctx, glue, replay.slots, scope);
            }
            if replay.placed_aside(i, step, &mut running) {
                continue;
            }
            if !chains::may_overlap(step) {
                replay.join_chains(std::mem::take(&mut running))?;
            }
            if !replay.wait_for_sides(i) {
                return Err(replay.side_failure(running));
            }
            let (ready, later): (Vec<_>, Vec<_>) =
                pending.into_iter().partition(|p| p.needed_by(step));
            pending = later;
            for p in ready {
                replay.join(p)?;
            }
            let result = match step {
                Step::Run { argv, kind, .. } => {
                    replay.run(i, argv, kind, scope).map(|p| pending.extend(p))
                }
                Step::Archive { query, args, .. } => archive(query, args, ctx)
                    .map(|archived| replay.record("ar".to_string(), None, Ran::Plain(archived))),
                Step::FilterDeps { out } => write_depfile(out, &replay.preprocessed, ctx, facts)
                    .map(|()| replay.preprocessed.clear()),
                Step::Remove { paths } => remove(paths, ctx),
            };
            if let Err(e) = result {
                return Err(replay.first_failure(i, e, running));
            }
            if !pending.iter().any(|p| p.step == i) {
                progress.finish(i);
            }
        }
        replay.join_chains(running)?;
        for p in pending {
            replay.join(p)?;
        }
        Ok(())
    })?;
    Ok(replay.collect())
}

/// A chain running on a thread of its own: where its steps' results go in the replay.
struct Running<'s> {
    /// Its steps' plan indices, ascending.
    steps: Vec<usize>,
    /// For each step the driver has passed, its place in [`Replay::ran`].
    places: Vec<usize>,
    handle: std::thread::ScopedJoinHandle<'s, ChainRun>,
}

/// What a chain's thread left: its steps' results in order, up to the first that failed.
struct ChainRun {
    ran: Vec<Ran>,
    /// The failed step's plan index and why.
    failed: Option<(usize, DriverError)>,
}

/// Run a chain's steps in order on this thread, each once its waits on other groups are over
/// ([`chains::Sides::waits`]), stopping at the first that fails (or when the replay stops:
/// another step failed, which the replay reports).
fn run_chain(
    steps: &[(usize, &[String])],
    ctx: &StepContext,
    tune: TuneContext<'_>,
    sides: (&chains::Sides, &chains::Progress),
) -> ChainRun {
    let (plan, progress) = sides;
    let _stop = chains::StopOnPanic(progress);
    let mut ran = Vec::new();
    for &(index, argv) in steps {
        let waits = plan.waits.get(&index).map_or(&[][..], Vec::as_slice);
        if !progress.wait_for(waits) {
            return ChainRun { ran, failed: None };
        }
        let tool = dryrun::tool_of(argv).unwrap_or_default().to_string();
        let result = if RunKind::of(argv) == RunKind::Ptxas {
            crate::tune::ptxas_step(argv, ctx, tune).map(Ran::Tuned)
        } else {
            timings::timed(Phase::FrontEnd, || ctx.run(argv)).map(Ran::Plain)
        };
        let failed = match result {
            Ok(r) if r.status().success() => {
                ran.push(r);
                progress.finish(index);
                continue;
            }
            Ok(r) => DriverError::StepFailed {
                tool,
                status: r.status(),
            },
            Err(source) => DriverError::Spawn { tool, source },
        };
        progress.stop();
        return ChainRun {
            ran,
            failed: Some((index, failed)),
        };
    }
    ChainRun { ran, failed: None }
}

/// With the selector's glue, build its object for the plan's host compiler on an extra job
/// slot, if one is still free once every chain was offered one, while the front ends run (it
/// needs nothing of theirs); the host compile waits for it. Without a free slot the host
/// compile builds it beside itself ([`glue::Glue::compile`]).
fn prefetch_glue<'s, 'a: 's>(
    plan: &'a dryrun::Plan,
    ctx: &'a StepContext,
    glue: Option<&'a glue::Glue>,
    slots: &'static Slots,
    scope: &'s std::thread::Scope<'s, 'a>,
) {
    let Some(glue) = glue else { return };
    let Some(argv) = plan.steps.iter().find_map(|s| match s {
        Step::Run {
            argv,
            kind: RunKind::HostCompile(_),
            ..
        } => Some(argv),
        _ => None,
    }) else {
        return;
    };
    if let Some(slot) = slots.try_extra() {
        scope.spawn(move || {
            let _slot = slot;
            glue.prefetch(argv, ctx);
        });
    }
}

/// The replay so far: each step's tool and result (and for a ptxas step the source its
/// records name), in step order.
struct Replay<'a> {
    ctx: &'a StepContext,
    tune: TuneContext<'a>,
    glue: Option<&'a glue::Glue>,
    units: &'a units::Units,
    /// Whether a tuned ptxas step may run beside the next steps (tune mode).
    background: bool,
    slots: &'static Slots,
    done: Replayed,
    ran: Vec<(String, Option<Ran>)>,
    unit_of: Vec<Option<&'a str>>,
    /// Verbose lines of the background steps, in step order.
    aside: Vec<String>,
    /// Preprocessed outputs since the last dependency step: nvcc reads them to write the `.d`.
    preprocessed: Vec<PathBuf>,
    /// The plan's side chains, and which steps have finished.
    sides: &'a chains::Sides,
    progress: &'a chains::Progress,
}

impl<'a> Replay<'a> {
    /// Run tool step `argv`: a tuned ptxas step (in the background when an extra slot is free:
    /// then its pending result), a host compile through the selector's glue, or as it is.
    fn run<'s>(
        &mut self,
        step: usize,
        argv: &'a [String],
        kind: &RunKind,
        scope: &'s std::thread::Scope<'s, 'a>,
    ) -> Result<Option<Pending<'s>>, DriverError> {
        let tool = dryrun::tool_of(argv).unwrap_or_default().to_string();
        let spawn_err = |source| DriverError::Spawn {
            tool: tool.clone(),
            source,
        };
        let (ctx, tune) = (self.ctx, self.tune);
        let result = if *kind == RunKind::Ptxas {
            self.done.ptxas_steps += 1;
            if let Some(slot) = self.background.then(|| self.slots.try_extra()).flatten() {
                self.note_background(argv);
                self.ran.push((tool, None));
                self.unit_of.push(self.units.of_ptxas(argv));
                let progress = self.progress;
                return Ok(Some(Pending {
                    index: self.ran.len() - 1,
                    step,
                    files: files_of(argv),
                    handle: scope.spawn(move || {
                        let _slot = slot;
                        let _stop = chains::StopOnPanic(progress);
                        let stepped = crate::tune::ptxas_step(argv, ctx, tune);
                        match &stepped {
                            Ok(s) if s.captured.status.success() => progress.finish(step),
                            _ => progress.stop(),
                        }
                        stepped
                    }),
                }));
            }
            Ran::Tuned(crate::tune::ptxas_step(argv, ctx, tune).map_err(spawn_err)?)
        } else if let Some(glue) = self.glue
            && let RunKind::HostCompile(host) = kind
        {
            let compiled = timings::timed(Phase::FrontEnd, || {
                glue.compile(argv, host, ctx, self.slots)
            })
            .map_err(spawn_err)?;
            if tune.settings.verbose {
                self.aside.extend(compiled.note);
            }
            Ran::Plain(compiled.captured)
        } else {
            Ran::Plain(timings::timed(Phase::FrontEnd, || ctx.run(argv)).map_err(spawn_err)?)
        };
        let status = result.status();
        if !status.success() {
            return Err(DriverError::StepFailed { tool, status });
        }
        let unit = if *kind == RunKind::Ptxas {
            self.units.of_ptxas(argv)
        } else {
            None
        };
        self.record(tool, unit, result);
        if let RunKind::Preprocess { output: Some(out) } = kind {
            self.preprocessed.push(ctx.cwd.join(out));
        }
        Ok(None)
    }

    /// Start on a thread of its own each chain whose stretch begins at step `at`, while an
    /// extra job slot is free. A chain left without one is run by the driver in its place.
    fn start_chains<'s>(
        &mut self,
        at: usize,
        plan: &'a dryrun::Plan,
        scope: &'s std::thread::Scope<'s, 'a>,
    ) -> Vec<Running<'s>> {
        let mut started = Vec::new();
        let sides = (self.sides, self.progress);
        for chain in self.sides.chains.iter().filter(|c| c.start_at == at) {
            let Some(slot) = self.slots.try_extra() else {
                break;
            };
            let steps: Vec<(usize, &'a [String])> = chain
                .steps
                .iter()
                .filter_map(|&i| match &plan.steps[i] {
                    Step::Run { argv, .. } => Some((i, argv.as_slice())),
                    _ => None,
                })
                .collect();
            self.note_chain(&steps);
            let (ctx, tune) = (self.ctx, self.tune);
            started.push(Running {
                steps: chain.steps.clone(),
                places: Vec::new(),
                handle: scope.spawn(move || {
                    let _slot = slot;
                    run_chain(&steps, ctx, tune, sides)
                }),
            });
        }
        started
    }

    fn note_chain(&mut self, steps: &[(usize, &[String])]) {
        if self.tune.settings.verbose {
            self.aside.push(format!(
                "nvcc-orion: {}: front end run beside the steps before it (an extra job slot)",
                chain_target(steps)
            ));
        }
    }

    /// If step `at` is a running chain's, keep its place in step order (its result comes when
    /// the chain is joined) and count it as the driver would have.
    fn placed_aside(&mut self, at: usize, step: &'a Step, running: &mut [Running<'_>]) -> bool {
        let Some(chain) = running.iter_mut().find(|r| r.steps.contains(&at)) else {
            return false;
        };
        let Step::Run { argv, kind, .. } = step else {
            unreachable!("a chain holds only Run steps");
        };
        let mut unit = None;
        match kind {
            RunKind::Ptxas => {
                self.done.ptxas_steps += 1;
                unit = self.units.of_ptxas(argv);
            }
            RunKind::Preprocess { output: Some(out) } => {
                self.preprocessed.push(self.ctx.cwd.join(out));
            }
            _ => {}
        }
        let tool = dryrun::tool_of(argv).unwrap_or_default().to_string();
        self.ran.push((tool, None));
        self.unit_of.push(unit);
        chain.places.push(self.ran.len() - 1);
        true
    }

    /// Wait for the running chains and take their results; a failure is the first in plan
    /// order among theirs.
    fn join_chains(&mut self, running: Vec<Running<'_>>) -> Result<(), DriverError> {
        self.finish_chains(running).map_or(Ok(()), |(_, e)| Err(e))
    }

    /// [`Replay::join_chains`], with the plan index of the failed step.
    fn finish_chains(&mut self, running: Vec<Running<'_>>) -> Option<(usize, DriverError)> {
        if running.is_empty() {
            return None;
        }
        // The driver only waits now: its slot serves the chains' variant rounds.
        let lent = self.slots.lend();
        let joined: Vec<_> = running
            .into_iter()
            .map(|r| (r.places, r.handle.join()))
            .collect();
        drop(lent);
        let mut first: Option<(usize, DriverError)> = None;
        for (places, run) in joined {
            let run = run.unwrap_or_else(|_| ChainRun {
                ran: Vec::new(),
                failed: Some((
                    usize::MAX,
                    DriverError::Spawn {
                        tool: "front end".into(),
                        source: std::io::Error::other("a front-end thread panicked"),
                    },
                )),
            });
            for (place, result) in places.into_iter().zip(run.ran) {
                self.ran[place].1 = Some(result);
            }
            if let Some((index, e)) = run.failed
                && first.as_ref().is_none_or(|(f, _)| index < *f)
            {
                first = Some((index, e));
            }
        }
        first
    }

    /// Wait until the steps of other groups that step `at` waits for have finished, lending
    /// the driver's slot meanwhile: false if a step failed first.
    fn wait_for_sides(&self, at: usize) -> bool {
        let waits = self.sides.waits.get(&at).map_or(&[][..], Vec::as_slice);
        if self.progress.finished(waits) {
            return true;
        }
        let _lent = self.slots.lend();
        self.progress.wait_for(waits)
    }

    /// The failure to report when a step the driver waited for failed: the chains' first.
    fn side_failure(&mut self, running: Vec<Running<'_>>) -> DriverError {
        self.progress.stop();
        self.finish_chains(running).map_or_else(
            || DriverError::Spawn {
                tool: "front end".into(),
                source: std::io::Error::other("a step the driver waited for did not finish"),
            },
            |(_, e)| e,
        )
    }

    /// The failure to report when step `at` failed with `error`: a chain's step before it in
    /// plan order failed first (nvcc, running in order, would have stopped there).
    fn first_failure(
        &mut self,
        at: usize,
        error: DriverError,
        running: Vec<Running<'_>>,
    ) -> DriverError {
        // Chains waiting on a step the driver will not run now end without it.
        self.progress.stop();
        match self.finish_chains(running) {
            Some((index, e)) if index < at => e,
            _ => error,
        }
    }

    fn note_background(&mut self, argv: &[String]) {
        if self.tune.settings.verbose {
            let arch = argv.iter().find_map(|a| a.strip_prefix("-arch="));
            self.aside.push(format!(
                "nvcc-orion: {}: tuned in the background (an extra job slot)",
                arch.unwrap_or("?")
            ));
        }
    }

    fn record(&mut self, tool: String, unit: Option<&'a str>, result: Ran) {
        self.unit_of.push(unit);
        self.ran.push((tool, Some(result)));
    }

    /// Take a finished background step's result, failing the replay if ptxas failed.
    fn join(&mut self, p: Pending<'_>) -> Result<(), DriverError> {
        // The main thread only waits now: its slot serves the step's variant rounds.
        let lent = self.slots.lend();
        let joined = p.handle.join();
        drop(lent);
        let stepped = joined
            .unwrap_or_else(|_| Err(std::io::Error::other("a tuning thread panicked")))
            .map_err(|source| DriverError::Spawn {
                tool: "ptxas".into(),
                source,
            })?;
        if !stepped.captured.status.success() {
            return Err(DriverError::StepFailed {
                tool: "ptxas".into(),
                status: stepped.captured.status,
            });
        }
        self.ran[p.index].1 = Some(Ran::Tuned(stepped));
        Ok(())
    }

    /// Every step's output, notes and report records, in step order.
    fn collect(self) -> Replayed {
        let mut done = self.done;
        let mut aside = self.aside;
        done.notes.append(&mut aside);
        for ((_, r), unit) in self.ran.into_iter().zip(self.unit_of) {
            let Captured {
                mut stdout,
                mut stderr,
                ..
            } = match r {
                Some(Ran::Plain(c)) => c,
                Some(Ran::Tuned(t)) => t.publish_for(unit, self.tune, &mut done.notes),
                None => unreachable!("every background step is joined"),
            };
            done.stdout.append(&mut stdout);
            done.stderr.append(&mut stderr);
        }
        done
    }
}

impl Pending<'_> {
    /// Whether `step` must wait for this background step: it names one of its files, or it
    /// is a dependency-file, remove or archive step.
    fn needed_by(&self, step: &Step) -> bool {
        match step {
            Step::Run { argv, .. } => argv
                .iter()
                .any(|a| self.files.iter().any(|f| a.contains(f.as_str()))),
            Step::FilterDeps { .. } | Step::Remove { .. } | Step::Archive { .. } => true,
        }
    }
}

/// nvcc's `rm` step: a file already gone is fine.
fn remove(paths: &[PathBuf], ctx: &StepContext) -> Result<(), DriverError> {
    for p in paths {
        match std::fs::remove_file(ctx.cwd.join(p)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(DriverError::Io {
                    what: format!("removing {}", p.display()),
                    source: e,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// `-lib`'s archive step as its shell would run it: ask the host compiler for the archiver
/// (`query`), then run that with `args`.
fn archive(query: &[String], args: &[String], ctx: &StepContext) -> Result<Captured, DriverError> {
    let failed = |tool: &str, status| DriverError::StepFailed {
        tool: tool.to_string(),
        status,
    };
    let asked = ctx.run(query).map_err(|source| DriverError::Spawn {
        tool: query[0].clone(),
        source,
    })?;
    if !asked.status.success() {
        return Err(failed(&query[0], asked.status));
    }
    let program = String::from_utf8_lossy(&asked.stdout).trim().to_string();
    let mut argv = vec![program.clone()];
    argv.extend_from_slice(args);
    let done = ctx.run(&argv).map_err(|source| DriverError::Spawn {
        tool: program.clone(),
        source,
    })?;
    if !done.status.success() {
        return Err(failed(&program, done.status));
    }
    Ok(done)
}

/// Write the `-MD`/`-MMD` dependency file `out` from the preprocessed outputs before it.
fn write_depfile(
    out: &Path,
    preprocessed: &[PathBuf],
    ctx: &StepContext,
    facts: &Facts,
) -> Result<(), DriverError> {
    let inputs: Vec<&Path> = preprocessed.iter().map(PathBuf::as_path).collect();
    let dep_err = |source| DriverError::Depfile {
        path: out.to_path_buf(),
        source,
    };
    let files = depfile::collect(&inputs).map_err(dep_err)?;
    let source = depfile::source_of(&files)
        .ok_or(depfile::DepfileError::NoInput)
        .map_err(dep_err)?;
    let style = depfile::Style {
        skip_system: facts.dep_skip_system,
        phony: facts.dep_phony,
    };
    let text =
        depfile::render(&facts.dep_target(Path::new(source)), &files, style).map_err(dep_err)?;
    std::fs::write(ctx.cwd.join(out), text).map_err(|source| DriverError::Io {
        what: format!("writing {}", out.display()),
        source,
    })
}

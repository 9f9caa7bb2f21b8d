//! The tuning hook: every ptxas step of a replayed compile goes through [`ptxas_step`].
//!
//! ptxas first runs exactly as nvcc asked, so the baseline cubin is in place whatever happens
//! next. In tune mode the step is then tuned ([`step::tune`]): register-budget variants from
//! the same PTX, a prediction per kernel, and the chosen budgets assembled in place of the
//! baseline. Any internal failure leaves the baseline (what plain nvcc makes) with one
//! warning line. A step whose choice is cached ([`choice`]) runs ptxas once, at the chosen
//! budgets, in place of all that.

pub(crate) mod assemble;
pub mod cache_entry;
pub(crate) mod candidates;
pub(crate) mod cap;
pub(crate) mod choice;
pub(crate) mod descent;
pub(crate) mod dynamic_shared;
pub(crate) mod evaluate;
pub mod function_pointers;
pub(crate) mod guided;
pub(crate) mod keep;
pub(crate) mod model;
pub(crate) mod multi;
pub(crate) mod plan;
pub(crate) mod pricing;
pub mod proven;
pub mod ptx;
pub(crate) mod ptxas_args;
pub(crate) mod ranked;
pub(crate) mod record;
pub(crate) mod report_line;
pub(crate) mod rounds;
pub(crate) mod select;
pub(crate) mod step;
pub(crate) mod trim;
pub(crate) mod variants;

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::process::{Captured, StepContext};
use crate::settings::{Mode, Settings};
use crate::toolkit::Toolkit;

/// What the tuning hook needs besides the step itself.
#[derive(Debug, Clone, Copy)]
pub struct TuneContext<'a> {
    pub toolkit: &'a Toolkit,
    pub settings: &'a Settings,
    /// Under adapt/train, why this compile gets no launch-time selector (its records say so,
    /// and no variants are embedded: nothing could launch them).
    pub selector_refused: Option<&'a str>,
}

/// One ptxas step through the hook: what it printed, and what it has to report once the
/// replay takes it ([`Stepped::publish`]). Tuning runs may finish in any order (the driver
/// tunes one architecture in the background while the next one's front end runs); publishing
/// in step order keeps the report the same bytes.
#[derive(Debug)]
pub struct Stepped {
    pub captured: Captured,
    notes: Vec<String>,
    /// The report's records, without `unit` (set when published).
    records: Vec<nvcc_orion_schema::Record>,
}

impl Stepped {
    fn plain(captured: Captured) -> Stepped {
        Stepped {
            captured,
            notes: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Append the step's records to the report (when one is asked for) and its lines to
    /// `notes` (shown on stderr in verbose mode); what the step printed comes back.
    pub fn publish(self, tune: TuneContext<'_>, notes: &mut Vec<String>) -> Captured {
        self.publish_for(None, tune, notes)
    }

    /// [`Stepped::publish`], each record naming `unit`, the translation unit the step's PTX
    /// came from as nvcc was given it (the project view's files).
    pub fn publish_for(
        mut self,
        unit: Option<&str>,
        tune: TuneContext<'_>,
        notes: &mut Vec<String>,
    ) -> Captured {
        notes.append(&mut self.notes);
        if let Some(path) = &tune.settings.report
            && let Err(e) = append_report(path, &self.records, unit)
        {
            warn(
                &mut self.captured,
                &format!("cannot write the report {}: {e}", path.display()),
            );
        }
        self.captured
    }
}

/// Run one ptxas step (`argv` exactly as nvcc's dry run printed it, expanded), then tune it;
/// or, when the cache has the step's choice, run ptxas once at it ([`choice`]).
pub fn ptxas_step(
    argv: &[String],
    ctx: &StepContext,
    tune: TuneContext<'_>,
) -> std::io::Result<Stepped> {
    // A refused selector's records say why (the default build's, cached, do not).
    let lookup = match tune.selector_refused {
        None => choice::lookup(argv, ctx, tune.settings),
        Some(_) => None,
    };
    let mut missed = None;
    if let Some(c) = lookup.as_ref().and_then(|l| l.found.as_ref()) {
        match c.run(argv, ctx) {
            Ok(captured) => return Ok(from_choice(captured, c, argv, ctx, tune)),
            Err(why) => missed = Some(why),
        }
    }
    let mut captured = crate::timings::timed(crate::timings::Phase::Ptxas, || ctx.run(argv))?;
    // A failed ptxas is the user's error (nvcc reports it); a PTX-only target runs ptxas
    // without -o as a syntax check: nothing to tune.
    if !captured.status.success() {
        return Ok(Stepped::plain(captured));
    }
    let Some(files) = step::step_files(argv) else {
        return Ok(Stepped::plain(captured));
    };
    // `-cubin -o /dev/null`, `-o /dev/stdout`, a FIFO: ptxas wrote the cubin somewhere it
    // cannot be read back or replaced, so there is nothing to tune and nvcc's behaviour stays.
    if !tunable_output(&ctx.cwd.join(files.output_path(argv))) {
        return Ok(Stepped::plain(captured));
    }
    let arch = files.arch.clone().unwrap_or_else(|| "?".to_string());
    let mut notes = Vec::new();
    if tune.settings.mode != Mode::Tune {
        if tune.settings.verbose {
            notes.push(format!(
                "nvcc-orion: {arch}: replayed unchanged (NVCC_ORION=replay)"
            ));
        }
        return Ok(Stepped {
            captured,
            notes,
            records: Vec::new(),
        });
    }
    // A bug of ours must not fail a build nvcc would finish: a panic while tuning leaves
    // ptxas's own cubin in place (nothing is written until the tuned cubin is verified) and
    // becomes one warning line, not a backtrace.
    let tuned = quietly(|| {
        if tune.settings.force == Some(crate::settings::Force::Panic) {
            panic!("forced by --orion-force=panic");
        }
        step::tune(argv, ctx, tune)
    })
    .unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".to_string());
        Err(record::TuneError::Internal(what))
    });
    let mut records = Vec::new();
    match tuned {
        Ok(t) => {
            if let Some(stderr) = t.stderr {
                captured.stderr = stderr;
            }
            let lines: Vec<_> = t.records.iter().map(|r| r.to_schema(None)).collect();
            let verbose: Vec<String> = t.records.iter().map(verbose_line).collect();
            if let (Some(l), Some(budgets)) = (&lookup, &t.one_run) {
                let out = ctx.cwd.join(files.output_path(argv));
                if let Ok(cubin) = std::fs::read(&out) {
                    l.store(
                        argv,
                        &choice::Shipped {
                            budgets,
                            cubin: &cubin,
                            captured: &captured,
                            warnings: &t.warnings,
                            records: &lines,
                            verbose: &verbose,
                        },
                    );
                }
            }
            for w in t.warnings.iter().chain(&t.cache_warning) {
                warn(&mut captured, w);
            }
            if tune.settings.verbose {
                notes.extend(verbose);
                notes.extend(missed.map(|why| {
                    format!(
                        "nvcc-orion: {arch}: the cached choice did not ship ({why}); tuned in full"
                    )
                }));
                notes.extend(t.notes);
                notes.push(format!(
                    "nvcc-orion: {arch}: {} variant(s) built ({} from the cache){}",
                    t.built,
                    t.cached,
                    if t.changed {
                        "; tuned cubin written"
                    } else {
                        "; ptxas's cubin kept"
                    }
                ));
            }
            records = lines;
        }
        Err(e) => warn(
            &mut captured,
            &format!("tuning {arch} failed ({e}); keeping ptxas's own cubin"),
        ),
    }
    if let Some(why) = lookup.and_then(|l| l.damaged) {
        warn(
            &mut captured,
            &format!("a cached choice failed its check and {arch} was tuned in full ({why})"),
        );
    }
    Ok(Stepped {
        captured,
        notes,
        records,
    })
}

/// A step built by one ptxas run at its cached choice: what that run printed, the first
/// build's warning lines, and its records naming this step's output.
fn from_choice(
    mut captured: Captured,
    c: &choice::Choice,
    argv: &[String],
    ctx: &StepContext,
    tune: TuneContext<'_>,
) -> Stepped {
    for w in c.warnings() {
        warn(&mut captured, w);
    }
    let files = step::step_files(argv);
    let arch = files
        .as_ref()
        .and_then(|f| f.arch.clone())
        .unwrap_or_else(|| "?".to_string());
    let mut notes = Vec::new();
    if tune.settings.verbose {
        notes.extend(c.verbose().iter().cloned());
        notes.push(format!(
            "nvcc-orion: {arch}: the cached choice, built in one ptxas run"
        ));
    }
    let output = files.map_or_else(String::new, |f| {
        step::report_path(&ctx.cwd, &ctx.cwd.join(f.output_path(argv)))
    });
    Stepped {
        captured,
        notes,
        records: c.records(&output),
    }
}

/// Whether ptxas's output `path` is a plain file that this process can read back and write
/// over: not a device (`/dev/null`), FIFO or socket, and not reached through a link to a file
/// descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`), which named ptxas's own
/// descriptor (its captured stdout), not the file this process would find there.
pub(crate) fn tunable_output(path: &Path) -> bool {
    let mut at = path.to_path_buf();
    // Follow the links one at a time (as the kernel does, up to its 40 hops).
    for _ in 0..40 {
        if names_a_descriptor(&at) {
            return false;
        }
        match std::fs::read_link(&at) {
            Ok(next) => at = at.parent().unwrap_or(Path::new("/")).join(next),
            Err(_) => break,
        }
    }
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/...`, `/proc/...`: a path whose
/// meaning depends on the process that opens it.
fn names_a_descriptor(path: &Path) -> bool {
    [
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/fd",
        "/proc",
    ]
    .iter()
    .any(|p| path.starts_with(p))
}

/// The panic hook in place while no tuning runs; `None` inside.
type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Run `f`, catching a panic without printing it. The hook is process-wide and tuning steps
/// may run side by side: the first one in silences it, the last one out puts it back.
fn quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    static QUIET: Mutex<(usize, Option<Hook>)> = Mutex::new((0, None));
    {
        let mut q = QUIET.lock().unwrap_or_else(|e| e.into_inner());
        if q.0 == 0 {
            q.1 = Some(std::panic::take_hook());
            std::panic::set_hook(Box::new(|_| {}));
        }
        q.0 += 1;
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let mut q = QUIET.lock().unwrap_or_else(|e| e.into_inner());
    q.0 -= 1;
    if q.0 == 0
        && let Some(hook) = q.1.take()
    {
        std::panic::set_hook(hook);
    }
    r
}

/// One warning line, shown with the step's own output.
fn warn(captured: &mut Captured, what: &str) {
    captured.warn(what);
}

/// `nvcc-orion: sm_90 kernel: 96 -> 64 registers, 16 -> 24 warps/SM (+18.2% predicted); why`.
fn verbose_line(r: &record::KernelRecord) -> String {
    let base = &r.candidates[0];
    let chosen = &r.candidates[r.chosen];
    let warps = |e: &select::Evaluated| {
        e.warps_per_sm
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/")
    };
    let tried: Vec<String> = r.candidates[1..]
        .iter()
        .map(|c| match c.budget {
            Some(b) if b.smem_spill => format!("{}+smem", c.registers),
            _ => c.registers.to_string(),
        })
        .collect();
    format!(
        "nvcc-orion: {} {}: {} -> {} registers, {} -> {} warps/SM at {} threads{}; tried [{}]; {}",
        r.arch,
        r.kernel,
        base.registers,
        chosen.registers,
        warps(base),
        warps(chosen),
        r.block_sizes
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        if r.block_from == candidates::BlockFrom::Assumed {
            " (assumed)"
        } else {
            ""
        },
        tried.join(" "),
        r.reason
    )
}

/// Append one JSON object per kernel to `path` (with `unit`, when known, as its last field),
/// under a lock so that parallel compiles (`make -j`, ninja) never interleave lines.
pub(crate) fn append_report(
    path: &Path,
    records: &[nvcc_orion_schema::Record],
    unit: Option<&str>,
) -> std::io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut text = Vec::new();
    for r in records {
        let r = nvcc_orion_schema::Record {
            unit: unit.map(str::to_string),
            ..r.clone()
        };
        serde_json::to_writer(&mut text, &r)?;
        text.push(b'\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.lock()?;
    f.write_all(&text)?;
    f.unlock()
}

/// The PTX cut of a trimmed round ([`trim::only_entries`]) and the bytes every round parses
/// ([`trim::shared_len`]), for the `ptx` fuzz target (built only under cargo-fuzz's
/// `--cfg fuzzing`: the cut is not public API).
#[cfg(fuzzing)]
pub fn fuzz_trim(ptx: &str, keep: &[&str]) -> (Option<String>, usize) {
    (trim::only_entries(ptx, keep), trim::shared_len(ptx))
}

//! The tuning hook: every ptxas step of a replayed compile goes through [`ptxas_step`].
//!
//! ptxas first runs exactly as nvcc asked, so the baseline cubin is in place whatever happens
//! next. In tune mode the step is then tuned ([`step::tune`]): register-budget variants from
//! the same PTX, a prediction per kernel, and the chosen budgets assembled in place of the
//! baseline. Any internal failure leaves the baseline (what plain nvcc makes) with one
//! warning line.

pub(crate) mod assemble;
pub(crate) mod candidates;
pub(crate) mod evaluate;
pub(crate) mod guided;
pub(crate) mod keep;
pub(crate) mod plan;
pub mod proven;
pub mod ptx;
pub(crate) mod ptxas_args;
pub(crate) mod ranked;
pub(crate) mod record;
pub(crate) mod select;
pub(crate) mod step;
pub(crate) mod variants;

use std::io::Write;
use std::path::Path;

use crate::process::{Captured, StepContext};
use crate::settings::{Mode, Settings};
use crate::toolkit::Toolkit;

/// What the tuning hook needs besides the step itself.
#[derive(Debug, Clone, Copy)]
pub struct TuneContext<'a> {
    pub toolkit: &'a Toolkit,
    pub settings: &'a Settings,
}

/// Run one ptxas step (`argv` exactly as nvcc's dry run printed it, expanded). Report lines go
/// to `notes` (shown on stderr in verbose mode).
pub fn ptxas_step(
    argv: &[String],
    ctx: &StepContext,
    tune: TuneContext<'_>,
    notes: &mut Vec<String>,
) -> std::io::Result<Captured> {
    let mut captured = ctx.run(argv)?;
    // A failed ptxas is the user's error (nvcc reports it); a PTX-only target runs ptxas
    // without -o as a syntax check: nothing to tune.
    if !captured.status.success() {
        return Ok(captured);
    }
    let Some(files) = step::step_files(argv) else {
        return Ok(captured);
    };
    let arch = files.arch.unwrap_or_else(|| "?".to_string());
    if tune.settings.mode != Mode::Tune {
        if tune.settings.verbose {
            notes.push(format!(
                "nvcc-orion: {arch}: replayed unchanged (NVCC_ORION=replay)"
            ));
        }
        return Ok(captured);
    }
    // A bug of ours must not fail a build nvcc would finish: a panic while tuning leaves
    // ptxas's own cubin in place (nothing is written until the tuned cubin is verified) and
    // becomes one warning line, not a backtrace.
    let tuned = {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if tune.settings.force.as_deref() == Some("panic") {
                panic!("forced by --orion-force=panic");
            }
            step::tune(argv, ctx, tune)
        }));
        std::panic::set_hook(hook);
        r.unwrap_or_else(|payload| {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".to_string());
            Err(step::TuneError::Io(format!("internal error: {what}")))
        })
    };
    match tuned {
        Ok(t) => {
            if let Some(stderr) = t.stderr {
                captured.stderr = stderr;
            }
            for w in &t.warnings {
                warn(&mut captured, w);
            }
            if tune.settings.verbose {
                notes.extend(t.records.iter().map(verbose_line));
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
            if let Some(path) = &tune.settings.report
                && let Err(e) = append_report(path, &t.records)
            {
                warn(
                    &mut captured,
                    &format!("cannot write the report {}: {e}", path.display()),
                );
            }
        }
        Err(e) => warn(
            &mut captured,
            &format!("tuning {arch} failed ({e}); keeping ptxas's own cubin"),
        ),
    }
    Ok(captured)
}

/// One warning line, shown with the step's own output.
fn warn(captured: &mut Captured, what: &str) {
    captured
        .stderr
        .extend_from_slice(format!("nvcc-orion: warning: {what}\n").as_bytes());
}

/// `nvcc-orion: sm_90 kernel: 96 -> 64 registers, 16 -> 24 warps/SM (+18.2% predicted); why`.
fn verbose_line(r: &step::KernelRecord) -> String {
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

/// Append one JSON object per kernel to `path`, under a lock so that parallel compiles
/// (`make -j`, ninja) never interleave lines.
pub(crate) fn append_report(path: &Path, records: &[step::KernelRecord]) -> std::io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut text = Vec::new();
    for r in records {
        serde_json::to_writer(&mut text, r)?;
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

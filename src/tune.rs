//! The tuning hook: every ptxas step of a replayed compile goes through [`ptxas_step`].
//!
//! For now it runs the step exactly as nvcc would and, when asked, reports what ptxas made of
//! each function; the occupancy-tuning issue makes it build register-budget variants from the
//! same PTX and put the winner where ptxas would have written its cubin.

use std::path::PathBuf;

use crate::driver::process::{Captured, StepContext};
use crate::report;
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
    let captured = ctx.run(argv)?;
    if tune.settings.verbose && captured.status.success() {
        // A PTX-only target runs ptxas without -o as a syntax check: nothing to report.
        if let Some(cubin) = output_of(argv) {
            let arch = argv
                .iter()
                .find_map(|a| a.strip_prefix("-arch="))
                .unwrap_or("?");
            let decision = match tune.settings.mode {
                Mode::Replay => "replayed unchanged (NVCC_ORION=replay)",
                _ => "kept as ptxas built it (register-budget tuning is not enabled yet)",
            };
            match report::res_usage(&tune.toolkit.tool("cuobjdump"), &ctx.cwd.join(&cubin)) {
                Ok(funcs) => notes.extend(funcs.iter().map(|f| report::line(arch, f, decision))),
                Err(e) => notes.push(format!("nvcc-orion: cannot read {}: {e}", cubin.display())),
            }
        }
    }
    Ok(captured)
}

fn output_of(argv: &[String]) -> Option<PathBuf> {
    let i = argv.iter().position(|a| a == "-o")?;
    argv.get(i + 1).map(PathBuf::from)
}

//! The dry-run split and replay: ask the real nvcc what it would run (`--dryrun`), then run
//! those steps ourselves in order, sending every ptxas step through [`crate::tune::ptxas_step`].
//!
//! Nothing the steps print is shown until every step has succeeded. On any failure the caller
//! runs the real nvcc instead, so the user sees exactly nvcc's own errors and exit code.

pub(crate) mod depfile;
pub mod dryrun;
pub mod dryrun_shim;
pub(crate) mod shell;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli::Facts;
use crate::process::{Captured, StepContext};
use crate::settings::Settings;
use crate::toolkit::Toolkit;
use crate::tune::TuneContext;
use dryrun::Step;

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
    let result = run_steps(
        &plan,
        &ctx,
        facts,
        TuneContext {
            toolkit: tk,
            settings,
        },
    );
    drop(tmp);
    let mut replayed = result?;
    let mut messages = Vec::new();
    for m in &plan.messages {
        messages.extend_from_slice(m.as_bytes());
        messages.push(b'\n');
    }
    messages.append(&mut replayed.stderr);
    replayed.stderr = messages;
    Ok(replayed)
}

fn run_steps(
    plan: &dryrun::Plan,
    ctx: &StepContext,
    facts: &Facts,
    tune: TuneContext<'_>,
) -> Result<Replayed, DriverError> {
    let mut done = Replayed::default();
    // Preprocessed outputs since the last dependency step: nvcc reads them to write the `.d`.
    let mut preprocessed: Vec<PathBuf> = Vec::new();
    for step in &plan.steps {
        done.steps += 1;
        match step {
            Step::Run { argv, .. } => {
                let tool = step.tool().unwrap_or_default().to_string();
                let result = if tool == "ptxas" {
                    done.ptxas_steps += 1;
                    crate::tune::ptxas_step(argv, ctx, tune, &mut done.notes)
                } else {
                    ctx.run(argv)
                };
                let Captured {
                    status,
                    mut stdout,
                    mut stderr,
                } = result.map_err(|source| DriverError::Spawn {
                    tool: tool.clone(),
                    source,
                })?;
                if !status.success() {
                    return Err(DriverError::StepFailed { tool, status });
                }
                done.stdout.append(&mut stdout);
                done.stderr.append(&mut stderr);
                if argv.iter().any(|a| a == "-E")
                    && let Some(out) = argv
                        .iter()
                        .position(|a| a == "-o")
                        .and_then(|i| argv.get(i + 1))
                {
                    preprocessed.push(ctx.cwd.join(out));
                }
            }
            Step::FilterDeps { out } => {
                let inputs: Vec<&Path> = preprocessed.iter().map(PathBuf::as_path).collect();
                let dep_err = |source| DriverError::Depfile {
                    path: out.clone(),
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
                let text = depfile::render(&facts.dep_target(Path::new(source)), &files, style)
                    .map_err(dep_err)?;
                std::fs::write(ctx.cwd.join(out), text).map_err(|source| DriverError::Io {
                    what: format!("writing {}", out.display()),
                    source,
                })?;
                preprocessed.clear();
            }
            Step::Remove { paths } => {
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
            }
        }
    }
    Ok(done)
}

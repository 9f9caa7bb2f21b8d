//! nvcc's argument grammar and the classification of one invocation.
//!
//! The option table comes from `nvcc --help` of CUDA 13.5 (`table.rs`), so every option is known
//! in both spellings. Classification decides whether an invocation is a device compile we may
//! tune (and replay step by step) or anything else, which is exec'ed unchanged.

use std::ffi::OsString;
use std::path::PathBuf;

/// One nvcc command line, understood.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// What the real nvcc gets: `argv[1..]` with every `--orion-*` option removed, otherwise
    /// byte-for-byte the user's arguments in the user's order.
    pub nvcc_args: Vec<OsString>,
    /// The `--orion-NAME[=VALUE]` options found on the command line, in order.
    pub orion_args: Vec<(String, Option<String>)>,
    /// Tunable device compile, or pass-through with the reason.
    pub class: Class,
    /// What the driver needs to know about a tunable invocation.
    pub facts: Facts,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// `-c`/`-dc`/`-cubin`/`-fatbin` of `.cu` input(s) with at least one real SASS target.
    Tunable,
    /// Anything else: exec the real nvcc unchanged. The string says why (for verbose logs).
    PassThrough(String),
}

/// Facts taken from the expanded command line (options files and `NVCC_PREPEND_FLAGS` /
/// `NVCC_APPEND_FLAGS` included, in nvcc's precedence).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Input files, in command-line order.
    pub inputs: Vec<PathBuf>,
    /// `-o`/`--output-file`.
    pub output: Option<PathBuf>,
    /// `-odir`/`--output-directory`.
    pub output_dir: Option<PathBuf>,
    /// `-MT`/`--dependency-target-name` values, in order (nvcc uses the last one).
    pub dep_targets: Vec<String>,
    /// `--keep`/`-keep` or `--save-temps`/`-save-temps` given.
    pub keep: bool,
    /// `--keep-dir`/`-keep-dir`.
    pub keep_dir: Option<PathBuf>,
    /// `nvcc_args` with `-t N`/`--threads N` (every spelling) removed: nvcc's `--dryrun` output
    /// is grouped by tool, not in execution order, when threads are on.
    pub dryrun_args: Vec<OsString>,
    /// The user's register limit (`-maxrregcount`, or `-Xptxas -maxrregcount`): later issues
    /// never exceed it.
    pub user_maxrregcount: Option<u32>,
    /// `-G`/`--device-debug`.
    pub device_debug: bool,
    /// `-rdc=true`/`-dc`.
    pub relocatable: bool,
}

impl Facts {
    /// The target name nvcc writes into a `-MD`/`-MMD` dependency file for `input`: the last
    /// `-MT`, else `-o`, else `[odir/]stem.o` (also for `-cubin`/`-fatbin`, as nvcc 13.5 does).
    pub fn dep_target(&self, input: &std::path::Path) -> String {
        todo_dep_target(self, input)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot read options file {path}: {source}")]
    OptionsFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Parse `args` (argv without argv[0]). `env` looks up environment variables
/// (`NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`); relative options-file paths resolve against the
/// current directory. Never fails on an unknown option: that makes the invocation pass-through.
pub fn parse(args: &[OsString], env: &dyn Fn(&str) -> Option<String>) -> Result<Invocation, CliError> {
    let _ = env;
    todo_parse(args)
}

// Placeholders until the grammar lands (kept so the crate builds meanwhile).
fn todo_parse(args: &[OsString]) -> Result<Invocation, CliError> {
    let mut nvcc_args = Vec::new();
    let mut orion_args = Vec::new();
    for a in args {
        match a.to_str().and_then(|s| s.strip_prefix("--orion-")) {
            Some(rest) => {
                let (k, v) = match rest.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (rest.to_string(), None),
                };
                orion_args.push((k, v));
            }
            None => nvcc_args.push(a.clone()),
        }
    }
    Ok(Invocation {
        facts: Facts { dryrun_args: nvcc_args.clone(), ..Facts::default() },
        nvcc_args,
        orion_args,
        class: Class::PassThrough("grammar not implemented yet".into()),
    })
}

fn todo_dep_target(f: &Facts, input: &std::path::Path) -> String {
    if let Some(t) = f.dep_targets.last() {
        return t.clone();
    }
    if let Some(o) = &f.output {
        return o.display().to_string();
    }
    let stem = input.file_stem().unwrap_or_default().to_string_lossy();
    match &f.output_dir {
        Some(d) => format!("{}/{stem}.o", d.display()),
        None => format!("{stem}.o"),
    }
}

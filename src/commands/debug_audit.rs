//! `nvcc-orion debug audit SHIPPED --module CUBIN [--origin NAME=CUBIN[:NAME_THERE]]...`: run
//! the assembly check on cubins of your own: every function of SHIPPED against the cubin it
//! came from (MODULE unless an `--origin` names another). Prints what was compared, or the
//! first disagreement (exit 1).

use std::path::PathBuf;

use crate::audit::{self, Job, Origin, Tools};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The assembled cubin.
    pub(crate) shipped: PathBuf,
    /// The cubin its module-level parts and unnamed functions came from.
    #[arg(long)]
    pub(crate) module: PathBuf,
    /// What ptxas made of the step as asked (default: MODULE).
    #[arg(long)]
    pub(crate) baseline: Option<PathBuf>,
    /// `NAME=CUBIN` or `NAME=CUBIN:NAME_THERE`: function NAME came from CUBIN.
    #[arg(long = "origin")]
    pub(crate) origins: Vec<String>,
}

/// Run the command; true on failure (already reported on stderr).
pub(crate) fn run(args: &Args, out: &mut impl std::io::Write) -> bool {
    match audit(args) {
        Ok(line) => writeln!(out, "{line}").is_err(),
        Err(e) => {
            super::report_error(format_args!("{}: {e}", args.shipped.display()));
            true
        }
    }
}

/// Why `debug audit` could not check (a disagreement included).
#[derive(Debug, thiserror::Error)]
enum AuditCommandError {
    #[error("no CUDA toolkit found")]
    NoToolkit,
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--origin {0}: NAME=CUBIN")]
    BadOrigin(String),
    #[error(transparent)]
    Audit(#[from] audit::AuditError),
}

fn audit(args: &Args) -> Result<String, AuditCommandError> {
    let nvdisasm = crate::toolkit::find_tool("nvdisasm").ok_or(AuditCommandError::NoToolkit)?;
    let bin = nvdisasm.parent().map(PathBuf::from).unwrap_or_default();
    let read = |p: &PathBuf| {
        std::fs::read(p).map_err(|source| AuditCommandError::Read {
            path: p.clone(),
            source,
        })
    };
    let shipped = read(&args.shipped)?;
    let module = read(&args.module)?;
    let baseline = args.baseline.as_ref().map(read).transpose()?;
    let parsed: Vec<(String, String, Vec<u8>)> = args
        .origins
        .iter()
        .map(|o| {
            let (name, rest) = o
                .split_once('=')
                .ok_or_else(|| AuditCommandError::BadOrigin(o.clone()))?;
            let (file, there) = rest.split_once(':').unwrap_or((rest, name));
            Ok((
                name.to_string(),
                there.to_string(),
                read(&PathBuf::from(file))?,
            ))
        })
        .collect::<Result<_, AuditCommandError>>()?;
    let job = Job {
        proved: Vec::new(),
        shipped: &shipped,
        baseline: baseline.as_deref().unwrap_or(&module),
        module: &module,
        origins: parsed
            .iter()
            .map(|(s, n, c)| Origin {
                shipped: s,
                name: n,
                cubin: c,
            })
            .collect(),
    };
    let checked = audit::check(&Tools::in_dir(&bin), &job)?;
    Ok(format!(
        "agrees: {} function(s) compared, {} through their listings",
        checked.functions, checked.disassembled
    ))
}

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

fn audit(args: &Args) -> Result<String, String> {
    let nvdisasm = crate::toolkit::find_tool("nvdisasm").ok_or("no CUDA toolkit found")?;
    let bin = nvdisasm.parent().map(PathBuf::from).unwrap_or_default();
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let shipped = read(&args.shipped)?;
    let module = read(&args.module)?;
    let baseline = args.baseline.as_ref().map(read).transpose()?;
    let parsed: Vec<(String, String, Vec<u8>)> = args
        .origins
        .iter()
        .map(|o| {
            let (name, rest) = o
                .split_once('=')
                .ok_or(format!("--origin {o}: NAME=CUBIN"))?;
            let (file, there) = rest.split_once(':').unwrap_or((rest, name));
            Ok((
                name.to_string(),
                there.to_string(),
                read(&PathBuf::from(file))?,
            ))
        })
        .collect::<Result<_, String>>()?;
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
    let checked = audit::check(&Tools::in_dir(&bin), &job).map_err(|e| e.to_string())?;
    Ok(format!(
        "agrees: {} function(s) compared, {} through their listings",
        checked.functions, checked.disassembled
    ))
}

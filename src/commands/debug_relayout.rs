//! `nvcc-orion debug relayout FILE --insert-nops N --seed S -o OUT`: insert N NOPs at
//! pseudo-random places of every function of every sm_75-sm_90 cubin image in FILE (a cubin,
//! fatbin, host object or archive) with a full re-layout, and write the result to OUT.
//! Images of other architectures are left as they are.

use crate::arch::Sm;
use crate::container::{self, ContainerError};
use crate::cubin::Cubin;
use crate::sass::relayout;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    pub(crate) file: PathBuf,
    /// How many NOPs to insert per function.
    #[arg(long)]
    pub(crate) insert_nops: usize,
    /// Seed for the insertion points.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
}

/// Rewrite `bytes` (any container) as the command does; the number of images changed.
pub fn relayout_bytes(
    bytes: Vec<u8>,
    per_function: usize,
    seed: u64,
) -> Result<(Vec<u8>, usize), ContainerError> {
    let mut artifact = container::read(bytes)?;
    let n = artifact.edit_cubins(|loc, image| {
        let fail = |e: &dyn std::fmt::Display| ContainerError::Edit {
            at: loc.to_string(),
            what: e.to_string(),
        };
        let mut cubin = Cubin::parse(image).map_err(|e| fail(&e))?;
        if !Sm::of(cubin.arch()).model().relayout {
            return Ok(None);
        }
        relayout::insert_random_nops(&mut cubin, per_function, seed).map_err(|e| fail(&e))?;
        Ok(Some(cubin.write().map_err(|e| fail(&e))?))
    })?;
    Ok((artifact.write()?, n))
}

/// Run the command; true on failure (already reported on stderr).
pub(crate) fn run(args: &Args) -> bool {
    let at = |e: &dyn std::fmt::Display| {
        super::report_error(format_args!("{}: {e}", args.file.display()));
        true
    };
    let bytes = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => return at(&e),
    };
    let (out, n) = match relayout_bytes(bytes, args.insert_nops, args.seed) {
        Ok(r) => r,
        Err(e) => return at(&e),
    };
    if let Err(e) = std::fs::write(&args.output, out) {
        super::report_error(format_args!("{}: {e}", args.output.display()));
        return true;
    }
    eprintln!(
        "{}: {n} image(s) re-laid out, {} NOP(s) per function",
        args.output.display(),
        args.insert_nops
    );
    false
}

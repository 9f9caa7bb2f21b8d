//! `nvcc-orion debug sass FILE [--kernel K] [--liveness] [--cfg]`.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A cubin, or any file `inspect` reads.
    pub file: PathBuf,
    /// Only this kernel (mangled name).
    #[arg(long)]
    pub kernel: Option<String>,
    /// One line per instruction: `0x<offset> live=<n>` (general registers live).
    #[arg(long)]
    pub liveness: bool,
    /// Print the control-flow graph.
    #[arg(long)]
    pub cfg: bool,
}

/// Run the command; true on failure (already reported on stderr).
pub fn run(args: &Args, _out: &mut impl std::io::Write) -> bool {
    super::report_error(format_args!(
        "{}: debug sass is not built yet",
        args.file.display()
    ));
    true
}

//! `nvcc-orion debug relayout FILE --insert-nops N --seed S -o OUT`.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    pub file: PathBuf,
    /// How many NOPs to insert per function.
    #[arg(long)]
    pub insert_nops: usize,
    /// Seed for the insertion points.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

/// Run the command; true on failure (already reported on stderr).
pub fn run(args: &Args) -> bool {
    super::report_error(format_args!(
        "{}: debug relayout is not built yet",
        args.file.display()
    ));
    true
}

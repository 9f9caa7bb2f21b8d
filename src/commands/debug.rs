//! `nvcc-orion debug sass|relayout|audit ...`: developer views of the SASS layer and the
//! assembly check.

use clap::{Parser, Subcommand};

use super::{debug_audit, debug_relayout, debug_sass};

#[derive(Debug, Parser)]
#[command(about = "Developer views of the SASS layer")]
pub struct Args {
    #[command(subcommand)]
    pub(crate) what: What,
}

#[derive(Debug, Subcommand)]
pub enum What {
    /// Print the decoded IR of a cubin's (or object's) kernels.
    Sass(debug_sass::Args),
    /// Insert NOPs at pseudo-random places with a full re-layout (a test hook).
    Relayout(debug_relayout::Args),
    /// Run the assembly check on an assembled cubin against where its code came from.
    Audit(debug_audit::Args),
}

/// Run the command; true on failure (already reported on stderr).
pub fn run(args: &Args, out: &mut impl std::io::Write) -> bool {
    match &args.what {
        What::Sass(a) => debug_sass::run(a, out),
        What::Relayout(a) => debug_relayout::run(a),
        What::Audit(a) => debug_audit::run(a, out),
    }
}

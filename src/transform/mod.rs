//! SASS transforms (docs/DESIGN.md §Rewrites): each takes a cubin and the decoded code of one kernel's
//! section and returns the rewritten cubin with what it claims about the rewrite. A claim is
//! proved by `verify` before anything reaches a user; nothing here checks itself.
//!
//! * [`spill2smem`]: ptxas's register spills (`STL/LDL [R1+imm]`) into per-thread
//!   shared-memory slots (docs/papers.md §ICS'14), one shared frame per function of the call tree.
//! * [`stack`]: where those frames sit: stacked, or Orion's compressible stack with the
//!   fewest moves around calls (docs/papers.md §Orion).
//! * [`regdem`]: registers of a kernel without spills demoted to the same kind of shared
//!   slots until the register count reaches a target budget (docs/papers.md §RegDem).
//! * [`area`]: the per-thread spill area both keep their slots in, and their options.
//!
//! Every rewrite is reached through one seam, [`Transform`] ([`seam`]), and registered in
//! [`REGISTERED`]; adding one is a new module and one line there (docs/adding-a-rewrite.md).

pub mod area;
pub(crate) mod prologue;
pub mod regdem;
pub(crate) mod seam;
pub(crate) mod section;
pub mod spill2smem;
pub mod stack;

pub use seam::{Checks, Claim, Rewritten, Transform};

/// Every rewrite the tuner may offer and `nvcc-orion rewrite` may apply, one line each, in
/// the order the tuner builds their variants and the final assembly applies them.
pub(crate) const REGISTERED: &[&dyn Transform] = &[&spill2smem::Spill2Smem, &regdem::Regdem];

/// The keys of [`REGISTERED`] in order: the names the settings accept (`--orion-transforms=`,
/// `--orion-force=`; `settings` is a leaf and is handed them).
pub fn keys() -> Vec<&'static str> {
    REGISTERED.iter().map(|t| t.key()).collect()
}

use std::fmt;

/// The worked example of a third rewrite, compiled and run as a doctest so it stays true to
/// the seam.
#[cfg(doctest)]
#[doc = include_str!("../../docs/adding-a-rewrite.md")]
pub(crate) struct AddingARewrite;

use crate::cubin::CubinError;
use crate::sass::relayout::RelayoutError;

/// Why a transform left a kernel alone. The message is one line, for the report.
#[derive(Debug)]
pub enum TransformError {
    /// The kernel's code is outside what the transform handles (no spills, recursion, a
    /// spill it cannot name, too much shared memory, ...).
    NotApplicable(String),
    /// The cubin layer refused an edit.
    Cubin(CubinError),
    /// Re-layout refused the insertion.
    Relayout(RelayoutError),
}

impl fmt::Display for TransformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransformError::NotApplicable(s) => f.write_str(s),
            TransformError::Cubin(e) => write!(f, "cubin edit refused: {e}"),
            TransformError::Relayout(e) => write!(f, "re-layout refused: {e}"),
        }
    }
}

impl std::error::Error for TransformError {}

impl From<CubinError> for TransformError {
    fn from(e: CubinError) -> Self {
        TransformError::Cubin(e)
    }
}

impl From<RelayoutError> for TransformError {
    fn from(e: RelayoutError) -> Self {
        TransformError::Relayout(e)
    }
}

fn not_applicable(what: impl fmt::Display) -> TransformError {
    TransformError::NotApplicable(what.to_string())
}

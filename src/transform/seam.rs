//! The one seam every SASS rewrite goes through (docs/DESIGN.md §Adding a rewrite; a worked
//! example is docs/adding-a-rewrite.md). A rewrite says how it is offered to the tuner, applies itself
//! to one kernel of a cubin and states what it claims; `tune::proven` runs every rewrite
//! through the same loop (rewrite → decode → check → retry without the rejected kernels),
//! and the tuner, `nvcc-orion rewrite` and the report reach rewrites only through
//! [`super::REGISTERED`]. Nothing here checks a rewrite: `tune::proven` hands the
//! [`Claim`] to `verify` as the checker's own claim (the rewrites and the checker stay
//! independent floors, so the checker cannot inherit a rewrite's blind spot).

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

use super::TransformError;
use super::area::Options;
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::ir::Function;

/// A SASS rewrite of one kernel at a time, kept only where the checker proves it.
pub trait Transform: Sync {
    /// The rewrite's one name (docs/DESIGN.md §Rewrites): on the command line and in the
    /// settings (`--orion-transforms=`, `--orion-force=`), in a budget's suffix
    /// (`40+spill2smem`), in the report and in messages.
    fn key(&self) -> &'static str;

    /// The budgets this rewrite offers a kernel whose plain budgets (ptxas alone, in the
    /// tuner's order) are `plain` and whose own register count is `baseline`: `(registers
    /// after the rewrite, .maxnreg ptxas compiles the variant with)`, in the order the tuner
    /// builds them (one round of variants per position).
    fn offer(&self, plain: &[u32], baseline: u32) -> Vec<(u32, u32)>;

    /// The candidate this rewrite offers a kernel that spills at the budget it ships with
    /// (`baseline`: ptxas's own count, the user's limit when one binds), never above it:
    /// `(registers after the rewrite, .maxnreg ptxas compiles the variant with)`. None: the
    /// rewrite has nothing to offer there.
    fn offer_at_limit(&self, _baseline: u32) -> Option<(u32, u32)> {
        None
    }

    /// Mark the report's budget object of a candidate of this rewrite compiled at
    /// `compiled_at` registers (its field in the report's schema, [`nvcc_orion_schema::Budget`]).
    fn mark_budget(&self, compiled_at: u32, budget: &mut nvcc_orion_schema::Budget);

    /// Whether `explain` shows the checker's verdict on this rewrite and the code before it (the
    /// candidates table's checker column, the page's before/after view).
    fn explained(&self) -> bool {
        false
    }

    /// Why `kernel` needs no rewrite, known from the cubin alone (answered without decoding
    /// anything, so the tuner may ask for every kernel of a variant).
    fn skip(&self, _cubin: &Cubin, _kernel: &str) -> Option<TransformError> {
        None
    }

    /// Rewrite `kernel` in `cubin` (unchanged on error); `functions` are the decoded
    /// functions of the cubin as it is. What the rewrite did and claims.
    fn apply(
        &self,
        cubin: &mut Cubin,
        functions: &[Function],
        kernel: &str,
        opts: Options,
    ) -> Result<Box<dyn Rewritten>, TransformError>;

    /// The checks the rewrite must pass besides the translation checker.
    fn checks(&self) -> Checks {
        Checks::ALL
    }
}

/// Checks run on a rewritten kernel besides the translation checker; each refuses the
/// rewrite when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    /// `nvdisasm -plr` agrees with our instruction facts in the section, before and after.
    pub(crate) oracle: bool,
    /// The control bits of every inserted and moved instruction (`verify::schedule`).
    pub(crate) schedule: bool,
    /// The spill base holds the same per-thread address for every launch the cubin allows
    /// (`verify::base`), where the claim names a spill area.
    pub base: bool,
}

impl Checks {
    pub const ALL: Checks = Checks {
        oracle: true,
        schedule: true,
        base: true,
    };
}

/// What one rewrite of one kernel did and claims.
pub trait Rewritten: fmt::Debug + Send + Any {
    /// The kernel rewritten.
    fn kernel(&self) -> &str;
    /// The index of its text section.
    fn section(&self) -> usize;
    /// What the rewrite claims, for the checker.
    fn claim(&self) -> Claim;
    /// One line for messages and reports, once proved with `checked` instructions followed
    /// and the base proved for `shapes` block shapes (0 without a spill area).
    fn summary(&self, checked: usize, shapes: usize) -> String;
}

impl fmt::Debug for dyn Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// What a rewrite of one kernel's section claims, field for field what the checker's
/// `verify::Claim` states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    /// Original section offset → rewritten section offset of every original instruction.
    pub map: OffsetMap,
    /// Rewritten section offsets of the inserted instructions.
    pub inserted: Vec<u64>,
    /// The spill area, when the rewrite uses one.
    pub base: Option<SpillBase>,
    /// Frame words a caller passes to its callees (`[R1+k]`) kept in the spill word
    /// `[base + imm]` instead: `(k, imm)`.
    pub passed: Vec<(i64, i64)>,
    /// General registers renumbered across the whole section (original → rewritten).
    pub renamed: BTreeMap<u8, u8>,
}

/// The per-thread spill area a rewrite keeps its slots in ([`super::area`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillBase {
    /// The register holding the per-thread base.
    pub reg: u8,
    /// Rewritten section offset of the instruction after which `reg` holds the base.
    pub defined_at: u64,
    /// Bytes between slots (threads per block × 4).
    pub stride: u32,
    pub slots: u32,
    /// Offset of slot 0 from the base register.
    pub area: u32,
}

/// The registered rewrite named `key`.
pub(crate) fn by_key(key: &str) -> Option<&'static dyn Transform> {
    super::REGISTERED.iter().copied().find(|t| t.key() == key)
}

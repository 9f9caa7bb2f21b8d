//! What a transform states about its rewrite of one text section ([`Claim`], [`SpillBase`]),
//! and what the checker answers: a [`Proof`] (counts of what was checked) or a
//! [`Rejection`] (the function, offset and reason of the first failed check).

use std::collections::BTreeMap;
use std::fmt;

use crate::cubin::OffsetMap;

/// What a transform claims about its rewrite of one text section.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// Original section offset → rewritten section offset of every original instruction
    /// (the `map` of `sass::relayout::Relayout`; the identity when nothing was inserted).
    pub map: OffsetMap,
    /// Rewritten section offsets of the inserted instructions (not images of originals).
    pub inserted: Vec<u64>,
    /// The spill area, when the rewrite uses one.
    pub base: Option<SpillBase>,
    /// Frame words a caller passes to its callees (`[R1+k]` read by a callee before it
    /// writes it, as a spilled return address) that the rewrite keeps in the spill word
    /// `[base + imm]` instead: `(k, imm)`. A call then needs the spill word to hold the
    /// frame word's value, and a callee starts with it there.
    pub passed: Vec<(i64, i64)>,
    /// General registers the rewrite renumbered across the whole section (register
    /// demotion's compaction): original `R<r>` is rewritten `R<renamed[r]>` wherever
    /// functions meet. A call needs each register live into its callee in the renumbered
    /// place and leaves what the callee writes there; a sub-function starts with its
    /// live-in there and must return its writes there. Registers not listed keep their
    /// numbers. Not allowed in sections with indirect calls.
    pub renamed: BTreeMap<u8, u8>,
}

impl Claim {
    /// Nothing moved, nothing inserted, no spill area.
    pub fn identity() -> Claim {
        Claim::default()
    }
}

/// The per-thread spill area in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillBase {
    /// General register that holds the per-thread base of the spill area.
    pub reg: u8,
    /// Rewritten section offset of the (inserted) instruction after which `reg` holds the base.
    pub defined_at: u64,
    /// Bytes between consecutive slot words (threads-per-block × 4); every shared access
    /// `[reg + imm]` must have `imm - area` a multiple of it and below `slots × stride`.
    pub stride: u32,
    pub slots: u32,
    /// Offset of slot 0 from the base register (the static shared size the code was
    /// compiled against: the transforms fold it into each access's immediate).
    pub area: u32,
}

/// What was proved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proof {
    /// Reachable rewritten instructions checked (final pass).
    pub(crate) instructions: usize,
    /// Functions checked.
    pub functions: usize,
    /// Images of original spill moves (`STL/LDL [R1+imm]`) checked.
    pub(crate) moves: usize,
    /// Of those, moves whose image addresses the spill area in shared memory.
    pub shared_moves: usize,
    /// Inserted instructions (in the claim).
    pub inserted: usize,
    /// Call sites checked against summaries (direct, indirect and unknown).
    pub calls: usize,
    /// Block visits until the fixed point (all functions).
    pub(crate) iterations: usize,
}

/// Which of the checker's passes refused a rewrite (module doc: the items of the check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// An inserted instruction transfers control or synchronises.
    InsertedControl,
    /// An instruction names a register tuple that is not aligned.
    Tuples,
    /// The code does not split into sub-functions alike before and after.
    Split,
    /// The claim's or the section's shape: functions, inserted offsets, the spill base.
    Claim,
    /// The offset map: images of the original instructions.
    Mapping,
    /// Correspondence: order, control flow, what inserted code may do.
    Correspondence,
    /// An original instruction's image (not a spill move).
    Image,
    /// A spill move's image.
    Moves,
    /// A call's image.
    Calls,
    /// A callee's summary, or a call site against it.
    Summary,
    /// A value an instruction needs is not where it must be (the symbolic state).
    Values,
}

/// Why a rewrite was not proved: where, which pass, and the pass's one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub(crate) function: String,
    /// Rewritten section offset (0 when the problem is not at one instruction).
    pub offset: u64,
    /// The pass that refused.
    pub check: Check,
    pub reason: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {:#x}: {}",
            self.function,
            self.offset,
            self.reason.replace('\n', " ")
        )
    }
}

impl std::error::Error for Rejection {}

pub(super) fn reject<T>(
    check: Check,
    function: &str,
    offset: u64,
    reason: impl ToString,
) -> Result<T, Rejection> {
    Err(Rejection {
        function: function.to_string(),
        offset,
        check,
        reason: reason.to_string(),
    })
}

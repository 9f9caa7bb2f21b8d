//! Why the spill base is not proved ([`super::base::prove`]): typed, one line each as the
//! reports show them.

use crate::sass::Opcode;

/// Why the spill base of a rewritten kernel is not proved for every launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaseError {
    #[error("sm_{0} driver constants are not modelled")]
    UnmodelledArch(u32),
    /// No instruction at the claimed definition.
    #[error("no instruction at {0:#x}")]
    NoDefinition(u64),
    /// An instruction the evaluation cannot follow, at `at`.
    #[error("`{opcode}` at {at:#x}{problem}")]
    At {
        opcode: Opcode,
        at: u64,
        problem: AtProblem,
    },
    #[error("written under a guard at {0:#x}")]
    Guarded(u64),
    #[error(
        "R{reg} is not ready after {at:#x} (a scoreboard not waited for, or too few stall cycles)"
    )]
    NotReady { reg: u8, at: u64 },
    #[error("R{reg} is not written before {at:#x}")]
    NotWritten { reg: u8, at: u64 },
    /// The value is known, and wrong for some launch.
    #[error("the spill base `{shown}` {problem}")]
    Value {
        shown: String,
        problem: ValueProblem,
    },
}

/// What is wrong at one instruction ([`BaseError::At`]). The text follows the instruction
/// (`` `IMAD` at 0x40``), so each starts with its own separator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtProblem {
    #[error(" branches to {target:#x}, before the base is defined")]
    BranchesBack { target: u64 },
    #[error(" transfers control before the base is defined")]
    TransfersControl,
    #[error(" is not modelled")]
    Unmodelled,
    #[error(" sets no scoreboard for its result")]
    NoScoreboard,
    #[error(": operand {0} missing")]
    OperandMissing(usize),
    #[error(": source {0} missing")]
    SourceMissing(usize),
    #[error(" reads R{0}, not written before")]
    ReadsUnwritten(u8),
    #[error(" reads R{reg} before scoreboard {sb} of its producer is waited for")]
    ReadsPending { reg: u8, sb: u8 },
    #[error(" reads R{reg} {cycles} cycle(s) before its producer's result is ready")]
    ReadsEarly { reg: u8, cycles: u64 },
    #[error(" reads c[0x0][{0:#x}]")]
    ReadsDriverConstant(i64),
    #[error(" reads {0}")]
    ReadsSpecial(String),
    #[error(": immediate `{0}` is not an integer")]
    NotAnInteger(String),
    #[error(": operand `{0}` is not modelled")]
    OperandUnmodelled(String),
    #[error(": shift is not an immediate")]
    ShiftNotImmediate,
}

/// What is wrong with a known spill base ([`BaseError::Value`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueProblem {
    #[error("addresses {slots} slots of stride {stride}")]
    Slots { slots: u32, stride: u32 },
    #[error(
        "addresses [{area:#x}, {end:#x}) past the dynamic shared memory; the kernel's own static shared memory is {before:#x} bytes and the rewrite allocates up to {after:#x}"
    )]
    OutsideArea {
        area: u32,
        end: u64,
        before: u64,
        after: u64,
    },
    #[error("multiplies the dynamic size or the rank")]
    ScalesDynamicOrRank,
    #[error("is not affine in the thread index")]
    NotAffine,
    #[error("does not start after the dynamic shared memory (D once)")]
    NotAfterDynamic,
    #[error("has the cluster rank at {found:#x}, not {want:#x} as sm_{sm} shared addresses need")]
    Rank { found: u32, want: u32, sm: u32 },
    /// `shape`: the block shape, `X×Y×Z`.
    #[error("is not word-aligned for a {shape} block")]
    Misaligned { shape: String },
    #[error("gives two threads of a {shape} block the same slot")]
    SameSlot { shape: String },
    #[error(
        "puts a thread of a {shape} block at offset {offset} outside its slot row [0, {stride})"
    )]
    OutsideRow {
        shape: String,
        offset: i128,
        stride: i128,
    },
}

//! Why regdem does not apply to a kernel's code (a [`super::TransformError`]
//! `NotApplicable` once it leaves the transform).

use crate::sass::Opcode;

/// What in the code regdem cannot handle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("`DEPBAR` at {0:#x} not understood")]
    DepbarUnread(u64),
    #[error("every scoreboard is counted by a DEPBAR")]
    NoFreeScoreboard,
    #[error("no scoreboard can be used")]
    NoScoreboard,
    #[error("`{opcode}` at {at:#x}: result latency unknown")]
    LatencyUnknown { opcode: Opcode, at: u64 },
    #[error("{opcode} at {at:#x}: a {width}-register tuple at R{reg} is not aligned")]
    MisalignedTuple {
        opcode: Opcode,
        at: u64,
        width: u8,
        reg: u8,
    },
}

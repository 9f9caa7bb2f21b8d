//! Why the scheduling check refuses a rewrite: where ([`ScheduleError`]) and which hazard
//! ([`Hazard`]). The messages are one line each, as the reports and logs show them.

use crate::sass::Opcode;
use crate::sass::control::Control;

/// The hazard the scheduling check found at one instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Hazard {
    #[error("not a 32-bit LDS/STS")]
    NotAnAccess,
    #[error("uses a scoreboard a DEPBAR counts on")]
    DepbarScoreboard,
    #[error("its address register R{addr} is overwritten at {at:#x}")]
    AddressOverwritten { addr: u8, at: u64 },
    /// An instruction reads or writes what a scoreboard still guards, without waiting.
    #[error("{at:#x} `{opcode}` does not wait for SB{sb}")]
    NotWaited { at: u64, opcode: Opcode, sb: u8 },
    #[error("SB{sb} still pending where the block ends at {at:#x}")]
    PendingAtBlockEnd { sb: u8, at: u64 },
    #[error("SB{sb} never waited for")]
    NeverWaited { sb: u8 },
    #[error("no write scoreboard")]
    NoWriteScoreboard,
    #[error("no read scoreboard")]
    NoReadScoreboard,
    #[error("no producer of R{reg} in its block")]
    NoProducer { reg: u8 },
    /// A store's data comes from a scoreboard nothing waited for.
    #[error("data from {at:#x} on SB{sb}, not waited for")]
    DataNotWaited { at: u64, sb: u8 },
    #[error("producer `{opcode}` has no scoreboard and no known latency")]
    DataLatencyUnknown { opcode: Opcode },
    /// A store issued before its fixed-latency producer's result is ready.
    #[error("{stalls} cycles after `{opcode}` at {at:#x}, which needs {needs}")]
    DataTooSoon {
        stalls: u32,
        opcode: Opcode,
        at: u64,
        needs: u8,
    },
    #[error("R{reg} from {at:#x} on SB{sb}, not waited for")]
    SourceNotWaited { reg: u8, at: u64, sb: u8 },
    #[error("producer `{opcode}` of R{reg} has no known latency")]
    SourceLatencyUnknown { opcode: Opcode, reg: u8 },
    #[error("R{reg} read {stalls} cycles after `{opcode}` at {at:#x}, which needs {needs}")]
    SourceTooSoon {
        reg: u8,
        stalls: u32,
        opcode: Opcode,
        at: u64,
        needs: u8,
    },
    /// A write over a register an earlier instruction still reads through a scoreboard.
    #[error("overwrites a register `{opcode}` at {at:#x} still reads (SB{sb})")]
    OverwritesPendingRead { opcode: Opcode, at: u64, sb: u8 },
    #[error(
        "overwrites a register `{opcode}` at {at:#x} reads after issue, with no read scoreboard"
    )]
    OverwritesLateRead { opcode: Opcode, at: u64 },
    #[error("{at:#x} `{opcode}` overwrites a source before SB{sb} is waited for")]
    SourceOverwritten { at: u64, opcode: Opcode, sb: u8 },
    // An original instruction's image against the original:
    #[error("its scoreboards changed")]
    ScoreboardsChanged,
    #[error("it now uses a scoreboard a DEPBAR counts on")]
    NowDepbarScoreboard,
    #[error("it no longer waits for a scoreboard the original waited for")]
    WaitsLess,
    #[error("it stalls less than the original")]
    StallsLess,
    #[error("a reuse flag the original did not set")]
    ReuseAdded,
    #[error("a reuse flag before an inserted instruction")]
    ReuseBeforeInserted,
}

/// A scheduling rejection: the instruction, and its [`Hazard`] (boxed: the rejection is the
/// error of every check's `Result`, which stays small).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// An offset named in the claim holds no instruction of the rewritten code.
    #[error("{offset:#x}: no instruction there")]
    NoInstruction { offset: u64 },
    /// An inserted 32-bit shared-memory access.
    #[error("`{opcode}` at {offset:#x} ({ctrl}): {hazard}")]
    Access {
        opcode: Opcode,
        offset: u64,
        ctrl: Control,
        hazard: Box<Hazard>,
    },
    /// The image of an original instruction, at `offset` (the original at `was`).
    #[error("`{opcode}` at {offset:#x} (was {was:#x}): {hazard} ({before} → {after})")]
    Image {
        opcode: Opcode,
        offset: u64,
        was: u64,
        before: Control,
        after: Control,
        hazard: Box<Hazard>,
    },
    /// Another inserted instruction (prologue arithmetic, moves).
    #[error("inserted `{opcode}` at {offset:#x} ({ctrl}): {hazard}")]
    Inserted {
        opcode: Opcode,
        offset: u64,
        ctrl: Control,
        hazard: Box<Hazard>,
    },
}

impl ScheduleError {
    /// The hazard, where the error is at an instruction.
    pub fn hazard(&self) -> Option<&Hazard> {
        match self {
            ScheduleError::NoInstruction { .. } => None,
            ScheduleError::Access { hazard, .. }
            | ScheduleError::Image { hazard, .. }
            | ScheduleError::Inserted { hazard, .. } => Some(hazard.as_ref()),
        }
    }
}

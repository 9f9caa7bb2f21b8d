//! Prediction: what a compiled kernel variant will achieve before it runs. For now the occupancy
//! calculator (per-architecture tables, `cuda_occupancy.h`'s rules), the register budgets a
//! tuner should try, and the static stall model over a variant's SASS (docs/DESIGN.md §Prediction and selection). The
//! per-architecture tables themselves live in [`crate::arch`]; `arch` and `latency` here
//! re-export them under their old paths.

pub use crate::arch::limits as arch;
pub(crate) mod latency;
pub mod occupancy;
pub mod stalls;

pub use arch::{Arch, ArchError, ArchParams};
pub use occupancy::{
    BlockLimits, Carveout, DynamicSharedLimit, KernelResources, Launch, Limiter, Limiters,
    MAX_REGS_PER_THREAD, Occupancy, OccupancyError, SharedBytes, occupancy, register_cliffs,
};

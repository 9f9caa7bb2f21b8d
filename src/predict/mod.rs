//! Prediction: what a compiled kernel variant will achieve before it runs. For now the occupancy
//! calculator (per-architecture tables, `cuda_occupancy.h`'s rules) and the register budgets a
//! tuner should try; the static stall model joins it here (DESIGN.md §7).

pub mod arch;
pub mod occupancy;

pub use arch::{Arch, ArchError, ArchParams};
pub use occupancy::{
    BlockLimits, Carveout, DynamicSharedLimit, KernelResources, Launch, Limiter, Limiters,
    MAX_REGS_PER_THREAD, Occupancy, OccupancyError, SharedBytes, occupancy, register_cliffs,
};

//! Prediction: what a compiled kernel variant will achieve before it runs (docs/DESIGN.md
//! §Prediction and selection): the occupancy calculator (per-architecture tables,
//! `cuda_occupancy.h`'s rules) and the register budgets a tuner should try, the static stall
//! model over a variant's SASS ([`stalls`]), where its memory accesses land and what each
//! level's bandwidth allows ([`memory`]), the time per warp those give ([`price`]), the rule
//! that keeps a variant's price coherent with its pruning bound ([`coherence`]), and the
//! parameters measured on a user's GPU ([`calibration`]). The per-architecture tables
//! themselves live in [`crate::arch`]; [`Arch`], [`MemoryParams`] and [`Sm`] (the handle that
//! reads an architecture's rows) are re-exported here as the crate's public names for them.

pub mod calibration;
pub mod coherence;
pub mod memory;
pub mod occupancy;
pub mod price;
pub mod stalls;

pub use crate::arch::limits::{Arch, ArchError, ArchParams};
pub use crate::arch::memory::MemoryParams;
pub use crate::arch::sm::Sm;
pub use occupancy::{
    BlockLimits, Carveout, DynamicSharedLimit, KernelResources, Launch, Limiter, Limiters,
    MAX_REGS_PER_THREAD, Occupancy, OccupancyError, SharedBytes, occupancy, register_cliffs,
};
pub use price::{Model, Prediction, Residency};

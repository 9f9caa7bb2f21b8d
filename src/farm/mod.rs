//! Compile farms: what a remote builder needs to run nvcc-orion's ptxas steps (a toolchain
//! archive sccache-dist accepts) and what compiler caches hash (`cache-key`).
//!
//! Data flows one way: `deps` finds the shared libraries of the programs, `archive` writes a
//! deterministic `.tar.gz` of them, `toolchain` decides what goes in and where.

pub mod archive;
pub mod deps;
pub mod identity;
pub mod toolchain;

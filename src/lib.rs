//! nvcc-orion: a drop-in `nvcc` that replays the real toolkit's compilation steps and tunes
//! each kernel's register budget. See `docs/DESIGN.md` for the architecture; data flows
//! `cli` → `driver` → `tune` → outputs.

pub mod analysis;
pub(crate) mod arch;
pub(crate) mod atomic_file;
pub mod audit;
pub mod cli;
pub mod commands;
pub mod container;
pub mod cubin;
pub mod driver;
pub(crate) mod farm;
pub(crate) mod jobs;
pub mod predict;
pub mod process;
pub mod profile;
pub(crate) mod report;
pub mod sass;
pub mod settings;
pub mod timings;
pub mod toolkit;
pub mod transform;
pub mod tune;
pub mod verify;

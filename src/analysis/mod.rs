//! Analyses over decoded SASS: control-flow graphs per function, the call graph, natural loops,
//! liveness per instruction for the general registers, and max-live (DESIGN.md §3).

pub mod cfg;
pub mod liveness;

pub use cfg::{Block, CallGraph, Cfg, Loop};
pub use liveness::{Liveness, RegFile, RegSet};

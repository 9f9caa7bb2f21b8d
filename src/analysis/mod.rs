//! Analyses over decoded SASS: control-flow graphs per function, the call graph, natural loops,
//! liveness per instruction for the general registers, must-defined registers, and
//! max-live (docs/DESIGN.md §Floors).

pub mod cfg;
pub mod defined;
pub mod liveness;
pub mod section;

pub use cfg::{Block, CallGraph, Cfg, Loop};
pub use defined::must_defined;
pub use liveness::{Liveness, RegFile, RegSet};

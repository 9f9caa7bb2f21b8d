//! Analyses over decoded SASS: control-flow graphs per function, the call graph, natural loops,
//! liveness per instruction for the general registers, must-defined registers,
//! max-live, and loop weights (docs/DESIGN.md §Floors).

pub(crate) mod cfg;
pub(crate) mod defined;
pub(crate) mod liveness;
pub(crate) mod loops;
pub(crate) mod section;

pub use cfg::{Block, Cfg, Loop};
pub(crate) use defined::must_defined;
pub use liveness::{Liveness, Marked, RegFile, RegSet};

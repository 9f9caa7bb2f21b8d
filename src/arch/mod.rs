//! Per-architecture facts behind one seam, the way Mesa NAK keeps its `ShaderModel` per
//! family: every place that behaves differently on sm_75, sm_80, sm_86-89 or sm_90 asks the
//! row of [`ShaderModel`] for its architecture instead of comparing `sm` numbers, so adding an
//! architecture is one row here (docs/sass.md names the encodings; docs/DESIGN.md the floors).
//!
//! The module sits at the bottom floor: `cubin`, `sass`, `predict` and `transform` all read it,
//! and it reads nothing of theirs.
//! - [`model`]: the per-family table (encodings, rewritable ranges, pipe rates, fixed
//!   latencies).
//! - [`limits`]: the occupancy parameters per compute capability (`cuda_occupancy.h`).
//! - [`latency`]: the stall predictor's per-class numbers, with the per-arch ones read from
//!   [`model`].
//! - [`class`]: the pipe classes instructions are priced by.
//! - [`memory`]: the memory system per architecture (cache sizes, latencies, bandwidths).

pub mod class;
pub mod latency;
pub mod limits;
pub mod memory;
pub mod model;

pub(crate) use class::OpClass;
pub use limits::Arch;
pub use model::{Family, ShaderModel};

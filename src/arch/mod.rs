//! Per-architecture facts behind one seam, the way Mesa NAK keeps its `ShaderModel` per
//! family: every place that behaves differently on sm_75, sm_80, sm_86-89 or sm_90 asks the
//! handle [`Sm`] of its architecture (looked up once from the SM number) for the row it needs
//! instead of comparing `sm` numbers, so adding an architecture is one row in each table here
//! (docs/sass.md names the encodings; docs/DESIGN.md the floors).
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
//! - [`sm`]: [`Sm`], the handle that holds one architecture's row of each of the three tables
//!   ([`model`], [`memory`], [`limits`]); nothing outside this module looks a table up itself.

pub mod class;
pub mod latency;
pub mod limits;
pub mod memory;
pub mod model;
pub mod sm;

pub(crate) use class::OpClass;
pub use limits::Arch;
pub use model::Family;
pub use sm::Sm;

/// Test support: a per-architecture table's rows, given as their SM-number ranges, are
/// ascending and cover every number from 0 up, with no gap and no overlap.
#[cfg(test)]
pub(crate) fn assert_covers_every_sm(ranges: &[(u32, u32)]) {
    assert_eq!(ranges.first().map(|r| r.0), Some(0));
    assert_eq!(ranges.last().map(|r| r.1), Some(u32::MAX));
    for w in ranges.windows(2) {
        assert_eq!(w[0].1 + 1, w[1].0, "{:?} then {:?}", w[0], w[1]);
    }
}

//! Reading and writing what the toolkit makes, on its real output: cubins, fatbins, host
//! objects and the fixture matrix; SASS decode, control fields and re-layout; the call graph.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test decode -E 'test(/^MODULE::/)'`.

mod common;

mod cubin_real;
mod container_real;
mod fixtures_matrix;
mod sass_decode;
mod sass_predict;
mod sass_relayout;
mod callgraph_real;

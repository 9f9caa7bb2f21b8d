//! Reading and writing what the toolkit makes, on its real output: cubins, fatbins, host
//! objects and the fixture matrix; SASS decode, control fields and re-layout; the call graph.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test decode -E 'test(/^callgraph_real::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod callgraph_real;
mod container_real;
mod cubin_real;
mod fixtures_matrix;
mod sass_decode;
mod sass_predict;
mod sass_relayout;

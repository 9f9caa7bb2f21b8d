//! The SASS rewrites and their checker on real ptxas output: spill → shared, register
//! demotion, the spill area's thread shape, the spill corpus, the translation checker and mutation
//! testing of both.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test rewrites -E 'test(/^MODULE::/)'`.

mod common;

mod spill2smem;
mod regdem;
mod thread_shape;
mod spill_corpus;
mod verify_checker;
mod mutation;

//! The SASS rewrites and their checker on real ptxas output: spill2smem, register
//! demotion, the spill area's thread shape, the spill corpus, the translation checker and mutation
//! testing of both.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test rewrites -E 'test(/^mutation::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod mutation;
mod regdem;
mod spill2smem;
mod spill_corpus;
mod thread_shape;
mod verify_checker;

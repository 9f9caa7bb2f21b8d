//! Measured selection on real toolchain output: the launch-time selector and its CUDA glue,
//! launches redirected by symbol, selection end to end, profile-guided builds and separable links in
//! every mode.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test selector -E 'test(/^launch_names::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod launch_names;
mod profile_guided;
mod runtime_glue;
mod runtime_select;
mod selector_e2e;
mod separable;

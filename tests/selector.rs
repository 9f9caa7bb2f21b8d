//! Measured selection on real toolchain output: the launch-time selector and its CUDA glue,
//! launches redirected by symbol, selection end to end, profile-guided builds and separable links in
//! every mode.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test selector -E 'test(/^MODULE::/)'`.

mod common;

mod runtime_glue;
mod runtime_select;
mod selector_e2e;
mod launch_names;
mod profile_guided;
mod separable;

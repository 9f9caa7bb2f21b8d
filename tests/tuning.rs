//! Occupancy tuning on real toolchain output: budgets, ptxas --entry builds, the predictor's
//! coherence and calibration, the measured path, adapt's variants and static winner, the variant
//! cache's integrity.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test tuning -E 'test(/^MODULE::/)'`.

mod common;

mod tune_real;
mod tune_entry;
mod model_coherence;
mod calibrate;
mod measured_path;
mod multi_variant;
mod static_winner;
mod cache_integrity;

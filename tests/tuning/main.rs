//! Occupancy tuning on real toolchain output: budgets, ptxas --entry builds, the predictor's
//! coherence and calibration, the measured path, adapt's variants and static winner, the variant
//! cache's integrity.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test tuning -E 'test(/^cache_integrity::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod cache_integrity;
mod calibrate;
mod measured_path;
mod model_coherence;
mod multi_variant;
mod static_winner;
mod tune_entry;
mod tune_real;

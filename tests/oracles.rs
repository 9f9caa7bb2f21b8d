//! Ground truth from the toolkit: the instruction-semantics oracle and its coverage kernels,
//! liveness against nvdisasm, occupancy against cuda_occupancy.h, and differential testing with
//! generated programs.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test oracles -E 'test(/^MODULE::/)'`.

mod common;

mod oracle;
mod oracle_kernels;
mod liveness_oracle;
mod occupancy_oracle;
mod generated;

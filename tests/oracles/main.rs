//! Ground truth from the toolkit: the instruction-semantics oracle and its coverage kernels,
//! liveness against nvdisasm, occupancy against cuda_occupancy.h, and differential testing with
//! generated programs.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test oracles -E 'test(/^generated::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod generated;
mod liveness_oracle;
mod occupancy_oracle;
mod oracle;
mod oracle_kernels;

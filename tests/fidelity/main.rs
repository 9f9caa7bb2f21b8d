//! nvcc-orion is a drop-in nvcc: parity with the real nvcc, what ptxas prints for the shipped
//! code, outputs that are not plain files, hermetic and deterministic outputs.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test fidelity -E 'test(/^diagnostics_real::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod diagnostics_real;
mod hermetic;
mod parity;
mod special_outputs;

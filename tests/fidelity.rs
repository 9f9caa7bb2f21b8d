//! nvcc-orion is a drop-in nvcc: parity with the real nvcc, what ptxas prints for the shipped
//! code, outputs that are not plain files, hermetic and deterministic outputs.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test fidelity -E 'test(/^MODULE::/)'`.

mod common;

mod parity;
mod diagnostics_real;
mod special_outputs;
mod hermetic;

//! The driver and the command line: replay, the dry-run parser, one-call builds, the ptxas
//! shim, and the inspect, rewrite and explain commands.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test cli -E 'test(/^MODULE::/)'`.

mod common;

mod driver_replay;
mod dryrun_real;
mod commands;
mod one_call;
mod ptxas_shim;
mod explain;

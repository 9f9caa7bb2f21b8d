//! The driver and the command line: replay, the dry-run parser, one-call builds, the ptxas
//! shim, and the inspect, rewrite and explain commands.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test cli -E 'test(/^commands::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod driver_replay;
mod dryrun_real;
mod explain;
mod one_call;
mod ptxas_shim;

//! The assembly check and the splices it guards, on real ptxas output: kernel copies under
//! new names and the rewrites' audit.
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test assembly -E 'test(/^assembly_check::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod assembly_check;
mod entry_copy;
mod rewrite_audit;
mod rewrite_segments;

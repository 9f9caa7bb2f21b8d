//! The assembly check and the splices it guards, on real ptxas output: kernel copies under
//! new names and the rewrites' audit.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test assembly -E 'test(/^MODULE::/)'`.

mod common;

mod assembly_check;
mod entry_copy;
mod rewrite_audit;

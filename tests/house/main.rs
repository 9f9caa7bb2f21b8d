//! House rules read from the repository: module layering, function length, every README and
//! usage command block run, one registration per rewrite, one spelling per rewrite, and the
//! ceilings on string errors, string-keyed report lookups and test binaries; the skip count; and the suite's
//! toolkit (the real tools behind memos), checked against the real toolkit; the suite's rustc
//! wrapper (`scripts/suite-rustc.sh`).
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test house -E 'test(/^function_length::/)'`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/rust_text.rs"]
mod rust_text;

mod ceilings;
mod function_length;
mod layers;
mod one_registration;
mod readme;
mod skips;
mod spelling;
mod suite_rustc;
mod toolkit_memo;

//! House rules read from the repository: module layering, function length, every README and
//! usage command block run, one registration per rewrite.
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test house -E 'test(/^MODULE::/)'`.

#[path = "common/rust_text.rs"]
mod rust_text;
mod common;

mod layers;
mod function_length;
mod readme;
mod one_registration;

//! Build systems and compiler caches around nvcc-orion: CMake, cargo's build.rs helper,
//! sccache's dry-run path and its compile farm, PyTorch extensions, caches under other settings, and
//! the GPU harness's build. (The build.rs helper under a jobserver, tests/cargo_jobserver.rs, stays a
//! binary of its own: it sets the process environment, safe only with no other test in the process.)
//!
//! One test binary (issue 50): each module below was a test binary of its own, and its file
//! moved here whole. One module's tests: `cargo nextest run --release --test builds -E 'test(/^MODULE::/)'`.

mod common;

mod cmake_example;
mod cargo_example;
mod cargo_helper_deps;
mod sccache_dryrun;
mod farm_loopback;
mod pytorch_extension;
mod cache_settings;
mod gpu_harness;

//! Build systems and compiler caches around nvcc-orion: CMake, cargo's build.rs helper,
//! sccache's dry-run path and its compile farm, PyTorch extensions, caches under other settings, and
//! the GPU harness's build. (The build.rs helper under a jobserver, tests/cargo_jobserver.rs, stays a
//! binary of its own: it sets the process environment, safe only with no other test in the process.)
//!
//! One test binary (issue 50): each module was a binary of its own, its file moved here whole.
//! One module: `cargo nextest run --release --test builds -E 'test(/^cache_settings::/)'`.

#[path = "../common/mod.rs"]
mod common;

mod cache_settings;
mod cargo_example;
mod cargo_helper_deps;
mod cmake_example;
mod farm_loopback;
mod gpu_harness;
mod pytorch_extension;
mod sccache_dryrun;

//! Every command block of README.md (the ```sh fences) runs, in README order, from the
//! repository root, each in its own `bash -euo pipefail` from this test's environment (which
//! `scripts/test.sh` sets up with `eval "$(scripts/setup.sh)"`). Later blocks use what earlier
//! ones built, as a reader following the README would. `scripts/test.sh` is the suite itself:
//! instead of running it, the test checks that `.ci/run` does; `bench/gpu/` commands are run
//! by `tests/gpu_harness.rs`.
//!
//! Without the toolkit the test prints a skip line and passes, unless `CI` is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The ```sh blocks of `text`, in order (indented fences inside list items included).
fn sh_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut current {
            None if trimmed == "```sh" => current = Some((indent, Vec::new())),
            Some(_) if trimmed == "```" => {
                if let Some((_, lines)) = current.take() {
                    out.push(lines.join("\n"));
                }
            }
            Some((ind, lines)) => lines.push(line.get(*ind..).unwrap_or(trimmed).to_string()),
            None => {}
        }
    }
    assert!(current.is_none(), "README.md: an unclosed ```sh block");
    out
}

#[test]
fn blocks_are_found() {
    let b = sh_blocks("a\n```sh\nx \\\n  y\n```\n- item\n\n  ```sh\n  z\n  ```\n```rust\nr\n```\n");
    assert_eq!(b, vec!["x \\\n  y".to_string(), "z".to_string()]);
}

#[test]
fn every_readme_command_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    if common::find_nvcc().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "readme: no nvcc found and CI is set; run `eval \"$(scripts/setup.sh)\"`"
        );
        eprintln!("SKIPPED readme: no nvcc found; run `eval \"$(scripts/setup.sh)\"`");
        return;
    }
    // The README's commands name `target/release/nvcc-orion`: it must be this build.
    let named = repo.join("target/release/nvcc-orion");
    let this = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    if std::fs::canonicalize(&named).ok() != std::fs::canonicalize(&this).ok() {
        let msg = format!(
            "readme: {} is not the binary under test ({}): run the suite in release with the default target folder (scripts/test.sh)",
            named.display(),
            this.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        eprintln!("SKIPPED {msg}");
        return;
    }
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    assert!(blocks.len() >= 10, "{} blocks", blocks.len());
    let ci_run = std::fs::read_to_string(repo.join(".ci/run")).unwrap();
    let have = |tool: &str| which::which(tool).is_ok();
    let mut ran = 0;
    // Blocks of bench/gpu commands only (tests/gpu_harness.rs runs them).
    let mut gpu_blocks = 0;
    for block in &blocks {
        // The test suite itself: what CI runs.
        let script: Vec<&str> = block
            .lines()
            .filter(|l| {
                let test_sh = l.trim_start().starts_with("scripts/test.sh");
                if test_sh {
                    assert!(
                        ci_run.contains("scripts/test.sh"),
                        ".ci/run does not run scripts/test.sh"
                    );
                }
                // The GPU harness's two commands: tests/gpu_harness.rs runs both (the build
                // takes minutes; run.sh needs a GPU and is checked for its no-GPU exit).
                let gpu = l.trim_start().starts_with("bench/gpu/");
                if gpu {
                    let harness = std::fs::read_to_string(repo.join("tests/gpu_harness.rs"))
                        .expect("tests/gpu_harness.rs");
                    assert!(harness.contains("build.sh") && harness.contains("run.sh"));
                }
                !test_sh && !gpu
            })
            .collect();
        let script = script.join("\n");
        if script.trim().is_empty() {
            gpu_blocks += usize::from(block.trim_start().starts_with("bench/gpu/"));
            continue;
        }
        if script.contains("ccache") && !have("ccache") {
            assert!(
                std::env::var_os("CI").is_none(),
                "readme: ccache missing under CI (scripts/setup.sh installs it with NVCC_ORION_SETUP_CCACHE=1)"
            );
            eprintln!("SKIPPED readme block (no ccache):\n{script}");
            continue;
        }
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", &script])
            .current_dir(repo)
            .env_remove("NVCC_ORION")
            .env_remove("NVCC_ORION_REPORT")
            .env_remove("NVCC_ORION_VERBOSE")
            .env_remove("CUDACXX")
            .env_remove("CUDAARCHS");
        if script.contains("examples/cargo") {
            // The cargo example's own test builds in this folder: share its build, and not
            // the outer cargo's settings.
            cmd.env("CARGO_TARGET_DIR", repo.join("target/example-cargo"))
                .env_remove("CARGO_MAKEFLAGS")
                .env_remove("RUSTFLAGS");
        }
        let out = cmd.output().expect("run bash");
        assert!(
            out.status.success(),
            "README block failed ({}):\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(
        ran + gpu_blocks + 1 >= blocks.len() && gpu_blocks == 2,
        "{ran} of {} blocks ran ({gpu_blocks} of bench/gpu)",
        blocks.len()
    );
    // What the blocks said they would make.
    let target = repo.join("target");
    for f in [
        "walk.o",
        "walk-shim.o",
        "walk-jit.cubin",
        "cmake-example/particles_demo",
        "cmake-example-compiler/particles_demo",
        "make-example/walk.o",
        "walk-smem.cubin",
        "walk-regdem.cubin",
        "explain.html",
    ] {
        assert!(target.join(f).is_file(), "target/{f} missing");
    }
    let report = std::fs::read_to_string(target.join("cmake-report.jsonl")).unwrap();
    assert!(report.contains("chain_step"), "{report}");
}

//! `examples/cargo`: a crate whose build.rs compiles its two kernel sources with
//! `nvcc_orion_build::Build` (side by side, within cargo's jobserver).
//! Built in release (tuned: the report has its kernel for both architectures) and debug
//! (passed straight through: no report), linked against the toolkit's static CUDA runtime,
//! run (it exits 0 without a GPU), and rebuilt when a header the kernel includes changes.
//!
//! Without nvcc the test prints a skip message and passes (with `CI` set it fails).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn cargo_build(example: &Path, target: &Path, release: bool, report: &Path) -> Output {
    let mut cmd = common::command(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(example)
        .arg("build")
        .env("CARGO_TARGET_DIR", target)
        .env("NVCC_ORION_BIN", env!("CARGO_BIN_EXE_nvcc-orion"))
        .env("NVCC_ORION_REPORT", report)
        .env_remove("CUDA_COMPUTE_CAP")
        // The outer cargo's settings are not the example's.
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("RUSTFLAGS");
    if release {
        cmd.arg("--release");
    }
    cmd.output().expect("run cargo")
}

#[test]
fn cargo_example_builds_links_runs_and_tracks_headers() {
    let Some(_) = common::fixtures::fixtures() else {
        return;
    };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cargo");
    // Kept between runs (the helper crate and cc compile once).
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../example-cargo");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.jsonl");

    for release in [true, false] {
        let _ = std::fs::remove_file(&report);
        let out = cargo_build(&example, &target, release, &report);
        assert!(
            out.status.success(),
            "cargo build (release={release}):\n{}",
            text(&out)
        );
        // A fresh report folder each time: rerun-if-env-changed(NVCC_ORION_REPORT) reruns
        // the build script, so the report is written by this build.
        let records = std::fs::read_to_string(&report).unwrap_or_default();
        if release {
            let arches: Vec<String> = records
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|v| v["kernel"].as_str().unwrap().contains("walk_score"))
                .map(|v| {
                    assert_eq!(v["block_sizes"], serde_json::json!([256]));
                    // Whole-program code (not cc's `--device-c` for several sources): the
                    // shared-memory spilling candidates, refused for relocatable code, are
                    // offered (built, or pruned by the model's bound: both are in the plan).
                    let smem = ["candidates", "pruned"].iter().any(|list| {
                        v[*list]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|c| c["budget"]["smem_spill"] == true)
                    });
                    assert!(smem, "no shared-memory spilling candidate: {v}");
                    v["arch"].as_str().unwrap().to_string()
                })
                .collect();
            assert_eq!(arches, ["sm_80", "sm_90"], "{records}");
            // The second source, compiled beside the first.
            assert!(records.contains("sum_squares"), "{records}");
        } else {
            assert!(records.is_empty(), "a debug build is not tuned: {records}");
        }
        let profile = if release { "release" } else { "debug" };
        let exe = target.join(profile).join("nvcc-orion-cargo-example");
        let run = common::command(&exe).output().unwrap();
        assert!(run.status.success(), "{}", text(&run));
        assert!(text(&run).starts_with("walk: "), "{}", text(&run));
        assert!(text(&run).contains("\nnorm: "), "{}", text(&run));
        // The CUDA runtime is linked statically: no libcudart.so among the needed libraries.
        let dynamic = Command::new("readelf")
            .arg("-d")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(
            !text(&dynamic).contains("libcudart.so"),
            "{}",
            text(&dynamic)
        );
    }

    // Nothing changed: nothing is compiled again. The header changes: the crate is rebuilt.
    let out = cargo_build(&example, &target, true, &report);
    assert!(out.status.success());
    assert!(
        !text(&out).contains("Compiling nvcc-orion-cargo-example"),
        "{}",
        text(&out)
    );
    let header = example.join("kernels/walk_params.cuh");
    let f = std::fs::File::options().append(true).open(&header).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(2))
        .unwrap();
    drop(f);
    let out = cargo_build(&example, &target, true, &report);
    assert!(out.status.success());
    assert!(
        text(&out).contains("Compiling nvcc-orion-cargo-example"),
        "a header change must rebuild: {}",
        text(&out)
    );
}

/// The builder's other outputs, outside cargo (told its compiler and output folder):
/// `build_cubin` gives one cubin per source for the first architecture, `build_ptx` PTX for
/// the `gencode` given, defines and include folders reach the compiler, and a failing
/// source is an error naming it.
#[test]
fn builder_makes_cubins_and_ptx() {
    let Some(_) = common::nvcc_or_skip("builder_makes_cubins_and_ptx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cargo/kernels");
    let mut b = nvcc_orion_build::Build::new();
    b.compiler(env!("CARGO_BIN_EXE_nvcc-orion"))
        .out_dir(dir.path())
        .cargo_metadata(false)
        .files([kernels.join("walk.cu"), kernels.join("norm.cu")])
        .include(&kernels)
        .define("ORION_UNUSED", Some("1"))
        .block_size("256");
    let cubins = b.clone().arch("sm_80").build_cubin().unwrap();
    assert_eq!(cubins.len(), 2);
    for c in &cubins {
        let cubin = nvcc_orion::cubin::Cubin::parse(&std::fs::read(c).unwrap()).unwrap();
        assert_eq!(cubin.arch(), 80, "{}", c.display());
    }
    let ptx = b
        .clone()
        .gencode("arch=compute_90,code=compute_90")
        .build_ptx()
        .unwrap();
    assert_eq!(ptx.len(), 2);
    let text = std::fs::read_to_string(&ptx[0]).unwrap();
    assert!(text.contains(".target sm_90"), "{text}");
    assert!(text.contains("walk_score"), "{text}");
    // A source that does not compile: the error names it.
    let bad = dir.path().join("bad.cu");
    std::fs::write(&bad, "__global__ void k() { undeclared(); }\n").unwrap();
    let e = b
        .clone()
        .file(&bad)
        .arch("sm_80")
        .build_cubin()
        .unwrap_err();
    assert!(e.to_string().contains("bad.cu"), "{e}");
}

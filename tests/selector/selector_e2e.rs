//! Measured selection end to end (issue 21): the tuner's own variants and the driver's glue in
//! one program. `examples/kernels/walk.cu` is compiled by nvcc-orion under `NVCC_ORION=adapt`
//! and `train` (and plain `tune`), `examples/adapt/walk_demo.cpp` is linked against each object
//! by nvcc (static cudart), g++ (static) and clang++ (shared cudart), and every program runs
//! here. The checks:
//! - the adapt and train objects hold the ranked variants (`cuobjdump -res-usage`, with the
//!   registers the report lists) and the selector's glue (`nm`), the tune object neither;
//! - each program exits, prints and reports errors exactly as the plain build does: here,
//!   without a GPU, the runtime's own error; on a GPU, the same CPU-checked result;
//! - with `NVCC_ORION_VERBOSE` set the selector adds at most one line, on stderr.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

const WALK: &str = "_Z13walk_featuresPKiPKfPfii";

/// `walk.cu` compiled by nvcc-orion under `mode`, into `dir/walk-<mode>.o` with its report.
fn compile(nvcc: &Path, dir: &Path, mode: &str) -> PathBuf {
    let out = dir.join(format!("walk-{mode}.o"));
    let o = common::without_our_settings(common::orion(), nvcc)
        .env("NVCC_ORION", mode)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env("NVCC_ORION_REPORT", dir.join(format!("walk-{mode}.jsonl")))
        .args(["-c", "-arch=sm_90"])
        .arg(common::example("walk.cu"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    common::assert_ok(&o, &format!("nvcc-orion ({mode})"));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// `walk_demo.cpp` linked against `obj` by `linker`: nvcc (its default, static cudart), g++
/// (static cudart) or clang++ (the shared cudart, found at run time through its rpath).
fn link(nvcc: &Path, linker: &str, obj: &Path, exe: &Path) {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adapt/walk_demo.cpp");
    let cuda = nvcc.parent().unwrap().parent().unwrap();
    let o = if linker == "nvcc" {
        Command::new(nvcc)
            .arg(&demo)
            .arg(obj)
            .arg("-o")
            .arg(exe)
            .output()
    } else {
        let mut cmd = Command::new(linker);
        cmd.arg(&demo)
            .arg(obj)
            .arg(format!("-I{}", cuda.join("include").display()));
        for lib in ["lib64", "lib"].map(|l| cuda.join(l)) {
            cmd.arg(format!("-L{}", lib.display()));
            if linker == "clang++" {
                cmd.arg(format!("-Wl,-rpath,{}", lib.display()));
            }
        }
        if linker == "clang++" {
            // The toolkit from PyPI ships libcudart.so.13 without the unversioned link.
            cmd.arg("-l:libcudart.so.13");
        } else {
            cmd.arg("-lcudart_static");
        }
        cmd.args(["-ldl", "-lpthread", "-lrt", "-o"])
            .arg(exe)
            .output()
    }
    .unwrap();
    common::assert_ok(&o, &format!("link {} with {linker}", obj.display()));
}

/// Run `exe` (20 s at most: a hang is a failure), with `NVCC_ORION_VERBOSE` when `verbose`.
fn run(exe: &Path, verbose: bool) -> Output {
    let mut cmd = common::command("timeout");
    cmd.arg("20").arg(exe);
    if verbose {
        cmd.env("NVCC_ORION_VERBOSE", "1");
    }
    let start = std::time::Instant::now();
    let o = cmd.output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(20) && o.status.code() != Some(124),
        "{} hung",
        exe.display()
    );
    o
}

/// Registers per function, from `cuobjdump -res-usage`.
fn registers(obj: &Path) -> Vec<(String, u64)> {
    common::fixtures::res_usage(obj)
        .unwrap()
        .into_iter()
        .map(|u| (u.function, u64::from(u.reg)))
        .collect()
}

#[test]
fn tuned_variants_and_the_selector_run_like_the_plain_build() {
    let Some(nvcc) = common::nvcc_or_skip("selector_e2e") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();

    let plain = compile(&nvcc, dir, "tune");
    let mut programs = Vec::new();
    for (mode, obj) in [
        ("tune", plain.clone()),
        ("adapt", compile(&nvcc, dir, "adapt")),
        ("train", compile(&nvcc, dir, "train")),
    ] {
        let regs = registers(&obj);
        let nm = common::nm_symbols(&obj);
        if mode == "tune" {
            assert!(!nm.contains("orion_rt_v1_"), "{nm}");
            assert!(
                regs.iter().all(|(n, _)| !n.contains("__orion_v")),
                "{regs:?}"
            );
        } else {
            // The glue, and every variant the report lists with its registers.
            assert!(nm.contains("orion_rt_v1_cudaLaunchKernel"), "{nm}");
            let report = std::fs::read_to_string(dir.join(format!("walk-{mode}.jsonl"))).unwrap();
            let record: Value = serde_json::from_str(report.lines().next().unwrap()).unwrap();
            let listed: Vec<(String, u64)> = record["variants"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v["dropped"].is_null())
                .map(|v| {
                    (
                        v["name"].as_str().unwrap().to_string(),
                        v["registers"].as_u64().unwrap(),
                    )
                })
                .collect();
            assert!(listed.len() >= 3, "{mode}: {listed:?}");
            for (name, r) in &listed {
                assert!(
                    regs.contains(&(name.clone(), *r)),
                    "{mode}: {name} {r} not in {regs:?}"
                );
            }
            assert!(
                listed
                    .iter()
                    .any(|(n, _)| n == &format!("{WALK}__orion_v1"))
            );
        }
        let mut linkers = vec!["nvcc", "g++"];
        if common::clang_or_skip("selector_e2e") {
            linkers.push("clang++");
        }
        for linker in linkers {
            let exe = dir.join(format!("walk-{mode}-{linker}"));
            link(&nvcc, linker, &obj, &exe);
            programs.push((mode, linker, exe));
        }
    }

    let want = run(&programs[0].2, false);
    let have_gpu = want.status.success();
    if !have_gpu {
        // No GPU here: the runtime's own error, as the plain build reports it.
        assert_eq!(want.status.code(), Some(2), "{want:?}");
        assert!(
            String::from_utf8_lossy(&want.stdout).starts_with("walk_demo: CUDA error "),
            "{want:?}"
        );
    }
    for (mode, linker, exe) in &programs {
        let got = run(exe, false);
        assert_eq!(
            (got.status.code(), &got.stdout, &got.stderr),
            (want.status.code(), &want.stdout, &want.stderr),
            "{mode} linked by {linker}"
        );
        let verbose = run(exe, true);
        assert_eq!(
            (verbose.status.code(), &verbose.stdout),
            (want.status.code(), &want.stdout),
            "{mode} linked by {linker}, verbose"
        );
        let said = String::from_utf8_lossy(&verbose.stderr);
        assert!(
            said.lines()
                .filter(|l| l.starts_with("nvcc-orion:"))
                .count()
                <= 1
                && said.lines().all(|l| l.starts_with("nvcc-orion:")),
            "{mode} linked by {linker}: {said}"
        );
    }
}

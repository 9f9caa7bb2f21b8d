//! A PyTorch C++/CUDA extension (`examples/pytorch`, a `CUDAExtension` built by
//! `python setup.py build_ext`) through nvcc-orion: torch's ninja build runs the compiler
//! `PYTORCH_NVCC` names, with torch's own nvcc flags, on the extension's `.cu`; `CUDA_HOME`
//! stays the real toolkit. The extension builds and imports (no GPU needed), its kernel is
//! tuned (the report's record, with the source as its unit) and the shared object ships the
//! registers the report chose.
//!
//! The `.cu` is the kernel and a plain C++ launcher; torch's headers are in the binding
//! (`walk_bind.cpp`, built by the host compiler): through nvcc, torch's headers cost most of
//! the test's time (issue 50; bench/results/suite.md), and nvcc-orion gets the same command
//! line either way.
//!
//! Needs torch from PyPI (its CUDA 13 wheel with the CUDA libraries it imports), which
//! `scripts/setup.sh` installs into the cache with `NVCC_ORION_SETUP_TORCH=1` (set by
//! `.ci/run`) and names in `NVCC_ORION_TORCH_PYTHON`. Without it the test says so and
//! passes, unless `CI` is set.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");

/// The Python that has torch: `NVCC_ORION_TORCH_PYTHON`, else the cache's torch venv.
fn torch_python() -> Option<PathBuf> {
    let found = std::env::var_os("NVCC_ORION_TORCH_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("NVCC_ORION_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    Some(Path::new(&std::env::var_os("HOME")?).join(".cache/nvcc-orion"))
                })?;
            Some(cache.join("torch-venv/bin/python"))
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        common::skip(
            "pytorch_extension",
            "no Python with torch (NVCC_ORION_SETUP_TORCH=1 scripts/setup.sh installs it)",
        );
    }
    found
}

/// A folder with `libcudart.so` for the extension's `-lcudart`: the toolkit's own, or, for a
/// toolkit from PyPI (which ships only `libcudart.so.13`), a link to it in `scratch`.
fn cudart_dir(cuda_home: &Path, scratch: &Path) -> PathBuf {
    for lib in ["lib64", "lib"] {
        if cuda_home.join(lib).join("libcudart.so").exists() {
            return cuda_home.join(lib);
        }
    }
    std::fs::create_dir_all(scratch).unwrap();
    let versioned = std::fs::read_dir(cuda_home.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libcudart.so."))
        })
        .expect("libcudart.so.N in the toolkit");
    let link = scratch.join("libcudart.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(versioned, &link).unwrap();
    scratch.to_path_buf()
}

#[test]
fn cuda_extension_builds_through_nvcc_orion() {
    let Some(nvcc) = common::nvcc_or_skip("pytorch_extension") else {
        return;
    };
    let Some(python) = torch_python() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // walk_ext.cu includes ../kernels/walk.cu, as in the repository.
    std::fs::create_dir_all(d.join("pytorch")).unwrap();
    std::fs::create_dir_all(d.join("kernels")).unwrap();
    for f in ["setup.py", "walk_ext.cu", "walk_bind.cpp"] {
        std::fs::copy(
            repo.join("examples/pytorch").join(f),
            d.join("pytorch").join(f),
        )
        .unwrap();
    }
    std::fs::copy(common::example("walk.cu"), d.join("kernels/walk.cu")).unwrap();
    let cuda_home = nvcc
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let report = d.join("report.jsonl");
    let library_path = match std::env::var("LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!(
            "{}:{p}",
            cudart_dir(&cuda_home, &d.join("cudart")).display()
        ),
        _ => cudart_dir(&cuda_home, &d.join("cudart"))
            .display()
            .to_string(),
    };
    let mut build = common::without_our_settings(Command::new(&python), &nvcc);
    build
        .current_dir(d.join("pytorch"))
        .args(["setup.py", "build_ext", "--inplace"])
        .env("PYTORCH_NVCC", ORION)
        .env("CUDA_HOME", &cuda_home)
        .env("TORCH_CUDA_ARCH_LIST", "9.0")
        .env("MAX_JOBS", "2")
        .env("LIBRARY_PATH", library_path)
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_CACHE", d.join("cache"));
    let out = build.output().unwrap();
    common::assert_ok(&out, "python setup.py build_ext");
    let log = String::from_utf8_lossy(&out.stdout);
    // torch ran nvcc-orion on the .cu with its own command line: its include folders,
    // defines and nvcc flags (walk_ext.cu needs none of them; nvcc-orion still has to take
    // them all, as in an extension whose .cu includes torch's headers).
    let line = log
        .lines()
        .find(|l| l.contains(ORION) && l.contains("walk_ext.cu"))
        .unwrap_or_else(|| panic!("torch's build did not run nvcc-orion on walk_ext.cu:\n{log}"));
    for flag in [
        "/torch/include",
        "-DTORCH_EXTENSION_NAME=walk_ext",
        "--expt-relaxed-constexpr",
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-gencode=arch=compute_90,code=sm_90",
    ] {
        assert!(
            line.contains(flag),
            "{flag} not in torch's nvcc-orion line: {line}"
        );
    }

    // The kernel was tuned, and its record names the extension's source.
    let text = std::fs::read_to_string(&report).expect("a report");
    let record: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| {
            r["kernel"]
                .as_str()
                .is_some_and(|k| k.contains("walk_features"))
        })
        .expect("walk_features in the report");
    assert!(
        record["unit"]
            .as_str()
            .is_some_and(|u| u.ends_with("walk_ext.cu")),
        "{record}"
    );
    let chosen = record["chosen_registers"].as_u64().unwrap();
    assert!(
        chosen < record["candidates"][0]["registers"].as_u64().unwrap(),
        "not retuned: {record}"
    );
    let so = std::fs::read_dir(d.join("pytorch"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "so"))
        .expect("the extension's shared object");
    let shipped = common::fixtures::res_usage(&so)
        .unwrap()
        .into_iter()
        .find(|u| u.function.contains("walk_features"))
        .expect("walk_features in the extension");
    assert_eq!(u64::from(shipped.reg), chosen);

    // It imports (calling it needs a GPU).
    let out = common::command(&python)
        .current_dir(d.join("pytorch"))
        .args([
            "-c",
            "import torch, walk_ext; print(walk_ext.features.__doc__)",
        ])
        .output()
        .unwrap();
    common::assert_ok(&out, "import walk_ext");
    assert!(String::from_utf8_lossy(&out.stdout).contains("walk_features on CUDA tensors"));
}

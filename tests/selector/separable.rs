//! Separable compilation links in every mode (issue 30): `tests/kernels/separable` has a
//! register-hungry kernel that calls a `__device__` function another file defines and one
//! that calls only what the driver provides. Through nvcc-orion in the default, adapt, train
//! and forced-lowest modes: `-rdc -c` of each file, `-dlink`, `-lib`, and the host links
//! (nvcc and g++) all succeed, the programs behave exactly like plain nvcc's, the cross-file
//! caller keeps ptxas's budget and says why, and the other kernel is still retuned. Then the
//! same project through CMake with `CUDA_SEPARABLE_COMPILATION`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");
const FAR: &str = "_Z8far_walkPKiPKfPfii";
const NEAR: &str = "_Z9near_walkPKiPKfPfii";

fn src(name: &str) -> PathBuf {
    common::kernels_dir().join("separable").join(name)
}

/// nvcc-orion in `mode` (None: plain nvcc through `NVCC_ORION=off`), run in `dir`.
fn orion(nvcc: &Path, mode: Option<&str>, dir: &Path, report: &Path) -> Command {
    let mut c = common::without_our_settings(common::orion(), nvcc);
    c.current_dir(dir).env("NVCC_ORION_REPORT", report);
    match mode {
        None => c.env("NVCC_ORION", "off"),
        Some("lowest") => c.arg("--orion-force=lowest"),
        Some("tune") => &mut c,
        Some(m) => c.env("NVCC_ORION", m),
    };
    c
}

fn ok(o: Output, what: &str) -> Output {
    common::assert_ok(&o, what);
    o
}

/// What running a program printed and returned.
fn behaviour(app: &Path) -> (Option<i32>, String, String) {
    let o = common::command(app).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every link of the project in `mode`: the two programs (nvcc's link, and `-lib` + g++
/// with the device link) and what they do when run.
fn build_all(nvcc: &Path, mode: Option<&str>, dir: &Path) -> Vec<(Option<i32>, String, String)> {
    std::fs::create_dir_all(dir).unwrap();
    let report = dir.join("report.jsonl");
    let run = |args: &[&str], what: &str| {
        ok(
            orion(nvcc, mode, dir, &report).args(args).output().unwrap(),
            &format!("{what} ({mode:?})"),
        )
    };
    let arch = [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
    ];
    for f in ["walk.cu", "fold.cu"] {
        let s = src(f).display().to_string();
        let o = format!("{}.o", &f[..f.len() - 3]);
        run(
            &[
                &["-rdc=true", "-c"][..],
                &arch[..],
                &[s.as_str(), "-o", o.as_str()],
            ]
            .concat(),
            "-rdc -c",
        );
    }
    let main = src("main.cpp").display().to_string();
    run(&["-c", main.as_str(), "-o", "main.o"], "host compile");
    run(
        &[&arch[..], &["-dlink", "walk.o", "fold.o", "-o", "dlink.o"]].concat(),
        "-dlink",
    );
    run(
        &[&arch[..], &["walk.o", "fold.o", "main.o", "-o", "app"]].concat(),
        "nvcc link",
    );
    run(
        &[&arch[..], &["-lib", "walk.o", "fold.o", "-o", "libwalks.a"]].concat(),
        "-lib",
    );
    run(
        &[&arch[..], &["-dlink", "libwalks.a", "-o", "lib_dlink.o"]].concat(),
        "-dlink of the library",
    );
    let cuda_lib = nvcc.parent().unwrap().parent().unwrap().join("lib");
    ok(
        Command::new("g++")
            .current_dir(dir)
            .args(["main.o", "lib_dlink.o", "libwalks.a", "-o", "app_gxx"])
            .arg(format!("-L{}", cuda_lib.display()))
            .args(["-lcudart_static", "-ldl", "-lpthread", "-lrt"])
            .output()
            .unwrap(),
        &format!("g++ link ({mode:?})"),
    );
    vec![behaviour(&dir.join("app")), behaviour(&dir.join("app_gxx"))]
}

/// The report's records of `kernel`.
fn records(dir: &Path, kernel: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("report.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["kernel"] == kernel)
        .collect()
}

#[test]
fn separable_builds_link_in_every_mode() {
    let Some(nvcc) = common::nvcc_or_skip("separable") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let plain = build_all(&nvcc, None, &root.path().join("plain"));
    for mode in ["tune", "adapt", "train", "lowest"] {
        let dir = root.path().join(mode);
        let got = build_all(&nvcc, Some(mode), &dir);
        assert_eq!(got, plain, "{mode}: the programs behave like plain nvcc's");
        let far = records(&dir, FAR);
        assert_eq!(far.len(), 2, "{mode}: one record per architecture");
        for r in &far {
            let base = &r["candidates"][0]["registers"];
            assert_eq!(&r["chosen_registers"], base, "{mode}: {r}");
            assert!(
                r["reason"]
                    .as_str()
                    .unwrap()
                    .contains("another module defines"),
                "{mode}: {r}"
            );
            assert!(r["variants"].is_null(), "{mode}: no variants for it: {r}");
        }
        // The kernel that calls only printf/assert/malloc is not held at ptxas's budget: its
        // lower budgets are planned (built, or pruned by the model where it is DRAM-bound),
        // forced lowest it is retuned, and its build links.
        for r in records(&dir, NEAR) {
            let base = r["candidates"][0]["registers"].as_u64().unwrap();
            let planned = r["candidates"].as_array().unwrap().len() > 1
                || !r["pruned"].as_array().unwrap().is_empty();
            assert!(
                planned
                    && !r["reason"]
                        .as_str()
                        .unwrap()
                        .contains("another module defines"),
                "{mode}: near_walk tuned: {r}"
            );
            if mode == "lowest" {
                assert!(
                    r["chosen_registers"].as_u64().unwrap() < base,
                    "{mode}: near_walk retuned: {r}"
                );
            }
        }
    }
}

#[test]
fn cmake_separable_project_links() {
    let Some(nvcc) = common::nvcc_or_skip("separable cmake") else {
        return;
    };
    let (Ok(cmake), Ok(ninja)) = (which::which("cmake"), which::which("ninja")) else {
        return common::skip("separable cmake", "no cmake or ninja");
    };
    let root = tempfile::tempdir().unwrap();
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("cmake/NvccOrion.cmake");
    let mut results = Vec::new();
    // Adapt comes from the environment of the build (the module's option is on or off), so
    // tune and adapt share one configure (about 3 s of CPU; issue 50, bench/results/suite.md,
    // seventh pass): adapt's build cleans first and starts from no report and no program.
    for (mode, option, env) in [
        ("off", "OFF", None),
        ("tune", "ON", None),
        ("adapt", "ON", Some("adapt")),
    ] {
        let build = root.path().join(option);
        let report = build.join("report.jsonl");
        if build.exists() {
            let _ = std::fs::remove_file(&report);
            let _ = std::fs::remove_file(build.join("walk_app"));
        } else {
            let mut c = common::without_our_settings(Command::new(&cmake), &nvcc);
            c.arg("-G")
                .arg("Ninja")
                .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
                .arg(format!("-DCMAKE_TOOLCHAIN_FILE={}", module.display()))
                .arg(format!("-DNVCC_ORION_EXECUTABLE={ORION}"))
                .arg(format!("-DNVCC_ORION={option}"))
                .arg(format!("-DNVCC_ORION_REPORT={}", report.display()))
                .arg("-S")
                .arg(src(""))
                .arg("-B")
                .arg(&build);
            ok(c.output().unwrap(), &format!("cmake configure ({mode})"));
        }
        let mut b = common::without_our_settings(Command::new(&cmake), &nvcc);
        if let Some(m) = env {
            b.env("NVCC_ORION", m);
        }
        ok(
            b.arg("--build")
                .arg(&build)
                .arg("--clean-first")
                .output()
                .unwrap(),
            &format!("cmake build ({mode})"),
        );
        results.push((mode, behaviour(&build.join("walk_app"))));
        if option == "ON" {
            let far = std::fs::read_to_string(&report).unwrap();
            assert!(far.contains(FAR), "{mode}: the report has far_walk");
        }
    }
    let plain = results[0].1.clone();
    for (mode, got) in &results {
        assert_eq!(got, &plain, "{mode}: behaves like the plain build");
    }
}

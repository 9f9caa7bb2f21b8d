//! Measured selection redirects launches by symbol, not by name in the source (issue 31): the
//! host object's references to the CUDA runtime's launch entry points are renamed to the
//! glue's, and nothing a user names is touched. `tests/runtime/names` has a program that
//! launches through `<<<>>>`, `cudaLaunchKernel` and `cudaLaunchKernelEx` beside a
//! `trace::cudaLaunchKernel` defined in another file and a class's static `cudaLaunchKernel`;
//! and an interposer that defines the runtime's `cudaLaunchKernel` itself and forwards to it.
//! Built under adapt (one call, and `-c` then a link), every program links and runs exactly
//! like plain nvcc's, with no warning.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn src(name: &str) -> String {
    common::kernels_dir()
        .parent()
        .unwrap()
        .join("runtime/names")
        .join(name)
        .display()
        .to_string()
}

/// What running `exe` with the runtime libraries of `lib` printed and returned.
fn behaviour(exe: &Path, lib: &Path) -> (Option<i32>, String, String) {
    let o = common::command(exe)
        .env("LD_LIBRARY_PATH", lib)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn quiet(o: Output, what: &str) {
    common::assert_ok(&o, what);
    assert!(
        o.stderr.is_empty(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `nvcc-orion` under `mode` (`off`: plain nvcc), in `dir`.
fn orion(nvcc: &Path, mode: &str, dir: &Path) -> Command {
    let mut c = common::without_our_settings(common::orion(), nvcc);
    c.current_dir(dir)
        .env("NVCC_ORION", mode)
        .env("NVCC_ORION_CACHE", dir.join("cache"));
    c
}

/// The programs of one mode: (label, path), built in `dir`.
fn programs(nvcc: &Path, mode: &str, dir: &Path, lib: &Path) -> Vec<(&'static str, PathBuf)> {
    std::fs::create_dir_all(dir).unwrap();
    let l = format!("-L{}", lib.display());
    let arch = "-arch=sm_90";
    let once = |out: &str, extra: &[&str]| {
        let o = orion(nvcc, mode, dir)
            .args([arch, "-cudart", "shared", &l])
            .args([src("app.cu"), src("trace.cpp")])
            .args(extra)
            .args(["-o", out])
            .output()
            .unwrap();
        quiet(o, &format!("{mode}: one call {out}"));
    };
    once("app", &[]);
    once("app_interposed", &[&src("interpose.cpp"), "-ldl"]);
    // Compiled apart, the tracer by g++, linked by g++.
    quiet(
        orion(nvcc, mode, dir)
            .args([arch, "-c", &src("app.cu"), "-o", "app.o"])
            .output()
            .unwrap(),
        &format!("{mode}: -c"),
    );
    quiet(
        Command::new("g++")
            .current_dir(dir)
            .arg(format!(
                "-I{}",
                common::cuda_home(nvcc).join("include").display()
            ))
            .args(["-c", &src("trace.cpp"), "-o", "trace.o"])
            .output()
            .unwrap(),
        "g++ -c trace.cpp",
    );
    quiet(
        Command::new("g++")
            .current_dir(dir)
            .args(["app.o", "trace.o", &l, "-lcudart", "-o", "app_gxx"])
            .output()
            .unwrap(),
        &format!("{mode}: g++ link"),
    );
    vec![
        ("one call", dir.join("app")),
        ("interposer", dir.join("app_interposed")),
        ("g++ link", dir.join("app_gxx")),
    ]
}

/// Link-time-optimised host objects keep their launches in LTO bytecode: the compile gets no
/// selector and no variants, with one warning line and the reason in each record, and the
/// program links and runs like plain nvcc's.
#[test]
fn lto_objects_get_no_selector_and_say_why() {
    let Some(nvcc) = common::nvcc_or_skip("launch_names lto") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lib = common::cudart_dir(&nvcc, root.path());
    let l = format!("-L{}", lib.display());
    let mut apps = Vec::new();
    for mode in ["off", "adapt"] {
        let dir = root.path().join(mode);
        std::fs::create_dir_all(&dir).unwrap();
        let report = dir.join("report.jsonl");
        let o = orion(&nvcc, mode, &dir)
            .env("NVCC_ORION_REPORT", &report)
            .args([
                "-arch=sm_90",
                "-Xcompiler",
                "-flto",
                "-c",
                &src("app.cu"),
                "-o",
                "app.o",
            ])
            .output()
            .unwrap();
        common::assert_ok(&o, &format!("{mode}: -flto -c"));
        let stderr = String::from_utf8_lossy(&o.stderr);
        if mode == "adapt" {
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(
                stderr.starts_with("nvcc-orion: warning: no launch-time selector:"),
                "{stderr}"
            );
            let text = std::fs::read_to_string(&report).unwrap();
            for r in text.lines() {
                let r: serde_json::Value = serde_json::from_str(r).unwrap();
                assert!(r["selector"].as_str().unwrap().contains("-flto"), "{r}");
                assert!(r["variants"].is_null(), "no variants: {r}");
            }
        } else {
            assert!(stderr.is_empty(), "{stderr}");
        }
        quiet(
            Command::new("g++")
                .current_dir(&dir)
                .arg(format!(
                    "-I{}",
                    common::cuda_home(&nvcc).join("include").display()
                ))
                .args(["-flto", "-c", &src("trace.cpp"), "-o", "trace.o"])
                .output()
                .unwrap(),
            "g++ -flto -c",
        );
        quiet(
            Command::new("g++")
                .current_dir(&dir)
                .args(["-flto", "app.o", "trace.o", &l, "-lcudart", "-o", "app"])
                .output()
                .unwrap(),
            &format!("{mode}: g++ -flto link"),
        );
        apps.push(behaviour(&dir.join("app"), &lib));
    }
    assert_eq!(
        apps[1], apps[0],
        "the -flto program behaves like plain nvcc's"
    );
}

#[test]
fn user_names_and_interposers_are_left_alone() {
    let Some(nvcc) = common::nvcc_or_skip("launch_names") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lib = common::cudart_dir(&nvcc, root.path());
    let plain = programs(&nvcc, "off", &root.path().join("plain"), &lib);
    let adapt = programs(&nvcc, "adapt", &root.path().join("adapt"), &lib);
    for ((what, p), (_, a)) in plain.iter().zip(&adapt) {
        let want = behaviour(p, &lib);
        assert!(
            want.1.contains("traced a launch") && want.1.contains("class: 42"),
            "{what}: {want:?}"
        );
        assert_eq!(
            behaviour(a, &lib),
            want,
            "{what}: adapt behaves like plain nvcc"
        );
    }
    // The adapt object calls the glue for the runtime's launches, and still calls the
    // project's own function by its own (mangled) name.
    let nm = |f: &str| {
        let o = Command::new("nm")
            .arg(root.path().join("adapt").join(f))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let app = nm("app.o");
    assert!(app.contains("orion_rt_v1_"), "the glue is merged: {app}");
    assert!(app.contains("U _ZN5trace16cudaLaunchKernelEPKv"), "{app}");
    assert!(!app.contains("orion_rt_v1__ZN5trace"), "{app}");
    // The interposer's own definition stays, and the program still calls it.
    let interposed = behaviour(&root.path().join("adapt/app_interposed"), &lib);
    assert!(
        interposed.2.contains("interposed cudaLaunchKernel"),
        "{interposed:?}"
    );
}

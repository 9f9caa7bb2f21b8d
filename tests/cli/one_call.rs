//! One-call builds are tuned like `-c` builds (issue 33): compiling and linking in one
//! command (`nvcc-orion -arch=sm_90 walk_demo.cpp walk.cu -o app`), several sources with
//! relocatable code, and `-lib` ship exactly the kernels the `-c` builds of the same sources
//! ship (the cubins `cuobjdump` extracts, byte for byte, and their registers), and the report
//! names each kernel's source. A one-call build that must still pass through (`-MD`) says
//! so in the report, and `explain --project` shows it.
//!
//! Without nvcc the tests print a skip line and pass (with `CI` set they fail).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn orion(nvcc: &Path, dir: &Path, report: &Path) -> Command {
    let mut c = common::without_our_settings(common::orion(), nvcc);
    c.current_dir(dir)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env("NVCC_ORION_REPORT", report);
    c
}

/// Registers by (architecture, function), and the cubins holding kernels.
type Shipped = (BTreeMap<(u32, String), u32>, Vec<Vec<u8>>);

/// The kernels a file ships: `cuobjdump -res-usage` per function and architecture, and the
/// extracted cubins that hold a kernel (a program also holds nvlink's device-link image,
/// which has none), sorted.
fn shipped(file: &Path, scratch: &Path) -> Shipped {
    let regs = common::fixtures::res_usage_images(file)
        .unwrap()
        .into_iter()
        .flat_map(|img| {
            img.functions
                .into_iter()
                .map(move |f| ((img.arch, f.function), f.reg))
        })
        .collect();
    std::fs::create_dir_all(scratch).unwrap();
    let mut cubins: Vec<Vec<u8>> = common::fixtures::extract_elfs(file, scratch)
        .unwrap()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .filter(|b| b.windows(6).any(|w| w == b".text."))
        .collect();
    cubins.sort();
    (regs, cubins)
}

fn copy(dir: &Path, files: &[(&str, PathBuf)]) {
    for (name, from) in files {
        std::fs::copy(from, dir.join(name)).unwrap();
    }
}

fn ok(cmd: &mut Command, what: &str) {
    let o = cmd.output().unwrap();
    common::assert_ok(&o, what);
}

/// `nvcc-orion -arch=sm_90 walk_demo.cpp walk.cu -o app` ships walk.cu's tuned kernel: the
/// same cubin as `nvcc-orion -c -arch=sm_90 walk.cu`, fewer registers than plain nvcc's.
#[test]
fn one_call_program_ships_the_c_builds_kernels() {
    let Some(nvcc) = common::nvcc_or_skip("one_call_program") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy(
        d,
        &[
            ("walk.cu", common::example("walk.cu")),
            ("walk_demo.cpp", repo.join("examples/adapt/walk_demo.cpp")),
        ],
    );
    let report = d.join("r.jsonl");
    ok(
        orion(&nvcc, d, &report).args(["-arch=sm_90", "walk_demo.cpp", "walk.cu", "-o", "app"]),
        "one-call build",
    );
    ok(
        orion(&nvcc, d, &d.join("c.jsonl")).args(["-c", "-arch=sm_90", "walk.cu", "-o", "walk.o"]),
        "-c build",
    );
    ok(
        Command::new(&nvcc).current_dir(d).args([
            "-arch=sm_90",
            "walk_demo.cpp",
            "walk.cu",
            "-o",
            "plain",
        ]),
        "plain nvcc",
    );
    let (app_regs, app_cubins) = shipped(&d.join("app"), &d.join("x-app"));
    let (obj_regs, obj_cubins) = shipped(&d.join("walk.o"), &d.join("x-obj"));
    let (plain_regs, _) = shipped(&d.join("plain"), &d.join("x-plain"));
    assert_eq!(app_regs, obj_regs);
    assert_eq!(
        app_cubins, obj_cubins,
        "the program's cubin is not the -c build's"
    );
    let key = (90, "_Z13walk_featuresPKiPKfPfii".to_string());
    assert!(
        app_regs[&key] < plain_regs[&key],
        "not tuned: {app_regs:?} vs plain {plain_regs:?}"
    );
    // The program runs as plain nvcc's does (here without a GPU: the same error and exit).
    let run = |exe: &str| Command::new(d.join(exe)).output().unwrap();
    let (a, p) = (run("app"), run("plain"));
    assert_eq!((a.status.code(), &a.stdout), (p.status.code(), &p.stdout));
    // The report names the source of each record, as nvcc was given it.
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("\"unit\":\"walk.cu\""), "{text}");
}

/// Several sources with relocatable code, and `-lib`: each kernel as its own `-c`/`-dc`
/// build ships it.
#[test]
fn several_sources_and_lib_ship_the_c_builds_kernels() {
    let Some(nvcc) = common::nvcc_or_skip("one_call_lib") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy(
        d,
        &[
            ("walk.cu", common::example("walk.cu")),
            ("nbody.cu", common::example("nbody.cu")),
            ("stencil2d.cu", common::example("stencil2d.cu")),
        ],
    );
    let report = d.join("r.jsonl");
    let sources = ["walk.cu", "nbody.cu", "stencil2d.cu"];
    let mut lib = orion(&nvcc, d, &report);
    lib.args(["-lib", "-arch=sm_86", "-o", "libk.a"])
        .args(sources);
    ok(&mut lib, "-lib");
    let mut c_regs = BTreeMap::new();
    let mut c_cubins = Vec::new();
    for s in sources {
        let obj = format!("{s}.o");
        ok(
            orion(&nvcc, d, &d.join("c.jsonl")).args(["-c", "-arch=sm_86", s, "-o", &obj]),
            s,
        );
        let (r, c) = shipped(&d.join(&obj), &d.join(format!("x-{s}")));
        c_regs.extend(r);
        c_cubins.extend(c);
    }
    c_cubins.sort();
    let (lib_regs, lib_cubins) = shipped(&d.join("libk.a"), &d.join("x-lib"));
    assert_eq!(lib_regs, c_regs);
    assert_eq!(
        lib_cubins, c_cubins,
        "the library's cubins are not the -c builds'"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    for s in sources {
        assert!(text.contains(&format!("\"unit\":\"{s}\"")), "{s}: {text}");
    }

    // Relocatable code in one call: the program's pre-link cubins are the -dc builds'.
    copy(
        d,
        &[
            ("rdc_a.cu", common::kernels_dir().join("rdc_a.cu")),
            ("rdc_b.cu", common::kernels_dir().join("rdc_b.cu")),
        ],
    );
    ok(
        orion(&nvcc, d, &report).args([
            "-rdc=true",
            "-arch=sm_90",
            "rdc_a.cu",
            "rdc_b.cu",
            "walk.cu",
            "-o",
            "rdc_app",
        ]),
        "-rdc one call",
    );
    ok(
        orion(&nvcc, d, &d.join("c.jsonl")).args([
            "-dc",
            "-arch=sm_90",
            "walk.cu",
            "-o",
            "walk_dc.o",
        ]),
        "-dc walk.cu",
    );
    let (app_regs, _) = shipped(&d.join("rdc_app"), &d.join("x-rdc"));
    let (dc_regs, _) = shipped(&d.join("walk_dc.o"), &d.join("x-dc"));
    let key = (90, "_Z13walk_featuresPKiPKfPfii".to_string());
    assert_eq!(app_regs[&key], dc_regs[&key]);
}

/// A one-call build that must pass through (`-MD`: the dependency file's target is nvcc's
/// business) leaves a `passed_through` record, and `explain --project` lists it.
#[test]
fn a_passed_through_one_call_build_is_in_the_report() {
    let Some(nvcc) = common::nvcc_or_skip("one_call_passed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy(
        d,
        &[
            ("walk.cu", common::example("walk.cu")),
            ("main.cu", common::kernels_dir().join("main.cu")),
            ("shmem.cu", common::kernels_dir().join("shmem.cu")),
        ],
    );
    let report = d.join("r.jsonl");
    ok(
        orion(&nvcc, d, &report).args(["-MD", "-arch=sm_80", "main.cu", "shmem.cu", "-o", "app"]),
        "-MD one call",
    );
    ok(
        orion(&nvcc, d, &report).args(["-c", "-arch=sm_80", "walk.cu"]),
        "-c walk.cu",
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(
            "{\"inputs\":[\"main.cu\",\"shmem.cu\"],\"passed_through\":\"no compile mode"
        ),
        "{text}"
    );
    let out = common::orion()
        .current_dir(d)
        .args(["explain", "--project", "r.jsonl"])
        .output()
        .unwrap();
    common::assert_ok(&out, "explain --project");
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.contains("1 compile(s) passed to nvcc untuned")
            && summary
                .contains("\npassed to nvcc untuned (1):\n  main.cu shmem.cu: no compile mode"),
        "{summary}"
    );
}

//! `nvcc-orion calibrate` (issue 32): without a GPU one line and exit status 3, from the
//! microbenchmarks built with the real nvcc (for every architecture, or one with `--arch`, or
//! built beforehand with `--build-only` and run with `--bench`); the fit from saved
//! measurements (`--measurements`) written to a calibration file keyed by device and driver;
//! and a build that names the file prices the calibrated architecture with it and restates it
//! for compiler caches. With `NVCC_ORION_TEST_GPU=1` (a machine with a GPU) the real run must
//! succeed in under five minutes instead.
//!
//! Without nvcc the tests print a skip line and pass (with `CI` set they fail).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nvcc_orion::predict::MemoryParams;
use nvcc_orion::predict::Sm;
use serde_json::Value;

fn orion(nvcc: &Path) -> Command {
    common::without_our_settings(common::orion(), nvcc)
}

fn gpu() -> bool {
    std::env::var_os("NVCC_ORION_TEST_GPU").is_some_and(|v| v == "1")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// No GPU: exactly one line naming the reason, exit status 3, no file.
fn assert_no_gpu(o: &Output, file: &Path) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("nvcc-orion: error: calibrate: no usable GPU here ("),
        "{err}"
    );
    assert!(!file.exists());
}

#[test]
fn without_a_gpu_calibrate_says_so_in_one_line() {
    let Some(nvcc) = common::nvcc_or_skip("without_a_gpu_calibrate_says_so_in_one_line") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calibration.json");
    // The user's path: build for every architecture, run, fit.
    let started = Instant::now();
    let o = orion(&nvcc)
        .args(["calibrate", "--output"])
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    if gpu() {
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        assert!(started.elapsed() < Duration::from_secs(300));
        assert!(out.starts_with("calibrated "), "{out}");
        return;
    }
    assert_no_gpu(&o, &file);
    // Built beforehand for one architecture (as bench/gpu ships it), run later.
    let tools = dir.path().join("tools");
    let o = orion(&nvcc)
        .args(["calibrate", "--arch", "sm_90", "--build-only"])
        .arg(&tools)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let program = tools.join("orion-calibrate");
    assert_eq!(out.trim(), program.display().to_string());
    let o = orion(&nvcc)
        .args(["calibrate", "--bench"])
        .arg(&program)
        .arg("--output")
        .arg(&file)
        .output()
        .unwrap();
    assert_no_gpu(&o, &file);
}

/// What the microbenchmarks would print on an sm_90 GPU of 132 SMs whose memory is `m`: the
/// chase from 4 KiB to 512 MiB, the streams at 1 to 64 warps (each warp keeping 2 KiB in
/// flight per latency).
fn measurements(name: &str, m: &MemoryParams) -> String {
    let l1 = u64::from(m.l1_shared_bytes);
    let l2 = u64::from(m.l2_bytes_per_sm) * 132;
    let mut out = format!("DEVICE,{name},90,132,{l2},13000\n");
    for s in 12..=29 {
        let bytes = 1u64 << s;
        let cycles = if bytes <= l1 {
            m.l1_latency
        } else if bytes <= l2 {
            m.l2_latency
        } else {
            m.dram_latency
        };
        out += &format!("CHASE,{bytes},{cycles}\n");
    }
    out += &format!("SHARED,{}\n", m.shared_latency);
    for (level, bw, latency) in [
        ("L1", m.l1_bytes_per_clock, m.l1_latency),
        ("L2", m.l2_bytes_per_clock, m.l2_latency),
        ("DRAM", m.dram_bytes_per_clock, m.dram_latency),
    ] {
        for w in [1u32, 2, 4, 8, 16, 32, 48, 64] {
            let y = (f64::from(w) * 2048.0 / latency).min(bw);
            out += &format!("STREAM,{level},{w},{y:.6}\n");
        }
    }
    out
}

fn cycles_of(report: &Path) -> Vec<f64> {
    std::fs::read_to_string(report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .flat_map(|r| {
            r["candidates"][0]["cycles_per_warp"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_f64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn measurements_are_fitted_into_a_file_the_predictor_reads() {
    let Some(nvcc) =
        common::nvcc_or_skip("measurements_are_fitted_into_a_file_the_predictor_reads")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calibration.json");
    // A slower device than the published sm_90 one: DRAM twice as far and half as wide.
    let mut slow = Sm::of(90).memory();
    slow.dram_latency *= 2.0;
    slow.dram_bytes_per_clock /= 2.0;
    let fit = |name: &str, m: &MemoryParams| {
        let saved = dir.path().join(format!("{name}.txt"));
        std::fs::write(&saved, measurements(name, m)).unwrap();
        let o = orion(&nvcc)
            .args(["calibrate", "--measurements"])
            .arg(&saved)
            .arg("--output")
            .arg(&file)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        out
    };
    let out = fit("Slow GPU", &slow);
    assert!(
        out.starts_with(&format!(
            "calibrated Slow GPU / driver 13000 (sm_90) into {}\n",
            file.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "DRAM latency (cycles): {:.1} (published {:.1})",
            slow.dram_latency,
            Sm::of(90).memory().dram_latency
        )),
        "{out}"
    );
    fit("Other GPU", &Sm::of(90).memory());
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(c["format"], "nvcc-orion-calibration-1");
    let keys: Vec<&String> = c["devices"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["Other GPU / driver 13000", "Slow GPU / driver 13000"]
    );
    let fitted = &c["devices"]["Slow GPU / driver 13000"]["memory"];
    assert_eq!(fitted["dram_latency"].as_f64().unwrap(), slow.dram_latency);
    let dram = fitted["dram_bytes_per_clock"].as_f64().unwrap();
    assert!((dram - slow.dram_bytes_per_clock).abs() < 1e-4, "{dram}");

    // A build naming a file with only the slow device prices sm_90 with it, sm_80 as before,
    // and says so to compiler caches.
    std::fs::remove_file(&file).unwrap();
    fit("Slow GPU", &slow);
    let build = |calibrated: bool, arch: &str| {
        let report = dir.path().join(format!("{calibrated}-{arch}.jsonl"));
        let mut cmd = orion(&nvcc);
        cmd.env("NVCC_ORION_CACHE", "off")
            .env("NVCC_ORION_REPORT", &report)
            .args(["-c", "-O3", &format!("-arch={arch}")])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kernels/walk.cu"))
            .arg("-o")
            .arg(dir.path().join("walk.o"));
        if calibrated {
            cmd.env("NVCC_ORION_CALIBRATION", &file);
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", text(&o).1);
        cycles_of(&report)
    };
    let (published, calibrated) = (build(false, "sm_90"), build(true, "sm_90"));
    assert!(
        calibrated.iter().zip(&published).all(|(c, p)| c > p),
        "{calibrated:?} vs {published:?}"
    );
    assert_eq!(build(false, "sm_80"), build(true, "sm_80"));
    // A file edited by hand to hold what no device measures (a DRAM latency of 0) is not
    // used: the build succeeds, says so in one line, and prices with the published values.
    let good = std::fs::read_to_string(&file).unwrap();
    let mut edited: Value = serde_json::from_str(&good).unwrap();
    edited["devices"]["Slow GPU / driver 13000"]["memory"]["dram_latency"] = 0.0.into();
    std::fs::write(&file, edited.to_string()).unwrap();
    let report = dir.path().join("edited.jsonl");
    let o = orion(&nvcc)
        .env("NVCC_ORION_CACHE", "off")
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_CALIBRATION", &file)
        .args(["-c", "-O3", "-arch=sm_90"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kernels/walk.cu"))
        .arg("-o")
        .arg(dir.path().join("walk.o"))
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("calibration")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("dram_latency is not above zero")
            && warnings[0].contains("priced with the published parameters"),
        "{err}"
    );
    assert_eq!(cycles_of(&report), published);
    std::fs::write(&file, good).unwrap();
    let key = |calibrated: bool| {
        let mut cmd = orion(&nvcc);
        if calibrated {
            cmd.env("NVCC_ORION_CALIBRATION", &file);
        }
        text(&cmd.arg("cache-key").output().unwrap()).0
    };
    let (plain, with) = (key(false), key(true));
    assert_ne!(plain, with);
    assert!(with.contains("--orion-calibration-sha256="), "{with}");
}

//! `nvcc-orion calibrate`: measure the static model's memory parameters on this machine's GPU
//! (issue 32; Resios' instantiation workflow, docs/papers.md §Resios) and keep them in a
//! calibration file a build names with `NVCC_ORION_CALIBRATION` (docs/DESIGN.md §Calibration).
//!
//! 1. Build the microbenchmarks (`calibrate.cu`, embedded) with the user's nvcc, statically
//!    linked, or take a binary built before (`--bench`, as bench/gpu ships it) or saved
//!    measurements (`--measurements`).
//! 2. Run them (at most `--timeout` seconds). Without a GPU they say so: one line, exit 3.
//! 3. Fit the parameters ([`crate::predict::calibration::fit`]) and add the device, keyed by
//!    its name and driver, to the calibration file (`--output`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

use crate::arch::Sm;
use crate::predict::calibration::{Calibration, Device, Measurements, fit};
use crate::predict::{Arch, MemoryParams};
use crate::toolkit::Toolkit;

/// The microbenchmarks' source.
const SOURCE: &str = include_str!("calibrate.cu");

/// Exit status when there is no usable GPU (as bench/gpu's programs).
pub const NO_GPU: u8 = 3;

#[derive(Debug, Parser)]
#[command(about = "Measure the model's memory parameters on this GPU and write a calibration file")]
pub struct Args {
    /// The calibration file to add this device to (created when missing).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "nvcc-orion-calibration.json"
    )]
    pub(crate) output: PathBuf,
    /// Build the microbenchmarks for this architecture only (default: sm_75 to sm_120).
    #[arg(long, value_name = "sm_XX")]
    pub(crate) arch: Option<String>,
    /// Only build the microbenchmark program, into this folder, and print its path.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["bench", "measurements"])]
    pub(crate) build_only: Option<PathBuf>,
    /// Run this microbenchmark program (built before with --build-only) instead of building.
    #[arg(long, value_name = "PROGRAM")]
    pub(crate) bench: Option<PathBuf>,
    /// Fit measurements saved from an earlier run (the program's output) instead of running.
    #[arg(long, value_name = "FILE", conflicts_with = "bench")]
    pub(crate) measurements: Option<PathBuf>,
    /// Also write the raw measurements here.
    #[arg(long, value_name = "FILE")]
    pub(crate) save_measurements: Option<PathBuf>,
    /// Seconds the microbenchmarks may run.
    #[arg(long, value_name = "SECONDS", default_value_t = 270)]
    pub(crate) timeout: u64,
}

/// What went wrong, and the exit status it gives.
enum Failure {
    NoGpu(String),
    Other(String),
}

/// Run `calibrate`; the exit status (0, 1 on failure, 3 without a GPU).
pub fn run(args: &Args, out: &mut dyn Write) -> u8 {
    match calibrate(args, out) {
        Ok(()) => 0,
        Err(Failure::NoGpu(why)) => {
            super::report_error(format_args!("calibrate: no usable GPU here ({why})"));
            NO_GPU
        }
        Err(Failure::Other(why)) => {
            super::report_error(format_args!("calibrate: {why}"));
            1
        }
    }
}

fn calibrate(args: &Args, out: &mut dyn Write) -> Result<(), Failure> {
    let text = match (&args.measurements, &args.bench) {
        (Some(file), _) => std::fs::read_to_string(file)
            .map_err(|e| Failure::Other(format!("{}: {e}", file.display())))?,
        (None, Some(program)) => measure(program, args.timeout)?,
        (None, None) => {
            let scratch = tempfile::tempdir()
                .map_err(|e| Failure::Other(format!("temporary folder: {e}")))?;
            let dir = args.build_only.as_deref().unwrap_or(scratch.path());
            let program = build(dir, args.arch.as_deref())?;
            if args.build_only.is_some() {
                let _ = writeln!(out, "{}", program.display());
                return Ok(());
            }
            measure(&program, args.timeout)?
        }
    };
    if let Some(file) = &args.save_measurements {
        std::fs::write(file, &text)
            .map_err(|e| Failure::Other(format!("{}: {e}", file.display())))?;
    }
    let mut m = Measurements::parse(&text).map_err(|e| Failure::Other(e.to_string()))?;
    if args.measurements.is_none()
        && let Some(driver) = driver_version()
    {
        m.driver = driver;
    }
    let published = Sm::of(m.sm).memory();
    let memory = fit(&m, &published, min_carveout(m.sm))
        .map_err(|e| Failure::Other(format!("cannot fit the measurements: {e}")))?;
    let key = m.key();
    let before = if args.output.exists() {
        Calibration::read(&args.output).map_err(|e| Failure::Other(e.to_string()))?
    } else {
        Calibration::default()
    };
    let device = Device {
        device: m.device.clone(),
        driver: m.driver.clone(),
        sm: m.sm,
        memory,
        measured: m,
    };
    let sm = device.sm;
    std::fs::write(&args.output, before.with(device).to_json())
        .map_err(|e| Failure::Other(format!("{}: {e}", args.output.display())))?;
    let _ = writeln!(
        out,
        "calibrated {key} (sm_{sm}) into {}",
        args.output.display()
    );
    for line in compare(&memory, &published) {
        let _ = writeln!(out, "  {line}");
    }
    Ok(())
}

/// The microbenchmark program, built with the toolkit's nvcc into `dir`.
fn build(dir: &Path, arch: Option<&str>) -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Other(format!("cannot find nvcc-orion itself: {e}")))?;
    let tk = Toolkit::locate(&|k| std::env::var_os(k), &exe)
        .map_err(|e| Failure::Other(e.to_string()))?;
    std::fs::create_dir_all(dir).map_err(|e| Failure::Other(format!("{}: {e}", dir.display())))?;
    let source = dir.join("orion-calibrate.cu");
    std::fs::write(&source, SOURCE)
        .map_err(|e| Failure::Other(format!("{}: {e}", source.display())))?;
    let program = dir.join("orion-calibrate");
    let mut cmd = Command::new(tk.nvcc());
    cmd.args(["-O3", "-cudart", "static", "-o"])
        .arg(&program)
        .arg(&source);
    match arch {
        Some(a) => {
            let a: Arch = a
                .parse()
                .map_err(|e| Failure::Other(format!("--arch {a}: {e}")))?;
            cmd.arg(format!("-arch=sm_{}{}", a.major(), a.minor()));
        }
        None => {
            for a in Arch::all() {
                let sm = format!("{}{}", a.major(), a.minor());
                cmd.arg(format!("-gencode=arch=compute_{sm},code=sm_{sm}"));
            }
        }
    }
    // nvcc-orion's own settings are for the user's builds, not this one.
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(crate::settings::is_ours) {
            cmd.env_remove(k);
        }
    }
    let r = cmd
        .output()
        .map_err(|e| Failure::Other(format!("{}: {e}", tk.nvcc().display())))?;
    if !r.status.success() {
        return Err(Failure::Other(format!(
            "building the microbenchmarks failed: {}",
            String::from_utf8_lossy(&r.stderr).trim()
        )));
    }
    Ok(program)
}

/// Run the microbenchmark program: its output, or why there is none.
fn measure(program: &Path, timeout: u64) -> Result<String, Failure> {
    let mut child = Command::new(program)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Failure::Other(format!("{}: {e}", program.display())))?;
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Failure::Other(format!(
                    "the microbenchmarks ran past {timeout} s and were stopped"
                )));
            }
            Err(e) => return Err(Failure::Other(e.to_string())),
        }
    };
    let mut text = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut o, &mut text);
    }
    if status.code() == Some(i32::from(NO_GPU)) {
        let why = text
            .lines()
            .find_map(|l| l.strip_prefix("NO-GPU,"))
            .unwrap_or("the microbenchmarks found no CUDA device");
        return Err(Failure::NoGpu(why.to_string()));
    }
    if !status.success() {
        let why = text
            .lines()
            .find(|l| l.starts_with("ERROR,"))
            .unwrap_or("no error line");
        return Err(Failure::Other(format!(
            "the microbenchmarks failed ({status}): {why}"
        )));
    }
    Ok(text)
}

/// The display driver's version from nvidia-smi, when there is one.
fn driver_version() -> Option<String> {
    let o = Command::new("nvidia-smi")
        .args(["--query-gpu=driver_version", "--format=csv,noheader"])
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()?
        .trim()
        .to_string();
    (o.status.success() && !v.is_empty()).then_some(v)
}

/// The smallest shared-memory carve-out of sm_`sm`: what a kernel without shared memory
/// leaves out of L1 (32 KB on Turing, none later).
fn min_carveout(sm: u32) -> u32 {
    Sm::of(sm).limits().map_or(0, |a| a.params().carveouts[0])
}

/// One line per parameter: measured against published.
fn compare(m: &MemoryParams, p: &MemoryParams) -> Vec<String> {
    [
        ("L1 latency (cycles)", m.l1_latency, p.l1_latency),
        ("L2 latency (cycles)", m.l2_latency, p.l2_latency),
        ("DRAM latency (cycles)", m.dram_latency, p.dram_latency),
        (
            "shared latency (cycles)",
            m.shared_latency,
            p.shared_latency,
        ),
        (
            "L1/shared bytes per clock per SM",
            m.l1_bytes_per_clock,
            p.l1_bytes_per_clock,
        ),
        (
            "L2 bytes per clock per SM",
            m.l2_bytes_per_clock,
            p.l2_bytes_per_clock,
        ),
        (
            "DRAM bytes per clock per SM",
            m.dram_bytes_per_clock,
            p.dram_bytes_per_clock,
        ),
        (
            "L1 + shared bytes per SM",
            f64::from(m.l1_shared_bytes),
            f64::from(p.l1_shared_bytes),
        ),
        (
            "L2 bytes per SM",
            f64::from(m.l2_bytes_per_sm),
            f64::from(p.l2_bytes_per_sm),
        ),
    ]
    .into_iter()
    .map(|(name, got, published)| format!("{name}: {got:.1} (published {published:.1})"))
    .collect()
}

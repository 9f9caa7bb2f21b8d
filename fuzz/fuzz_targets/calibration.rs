#![no_main]
//! The calibration microbenchmark's output as `nvcc-orion calibrate --measurements` reads
//! and fits it: any text gives a calibration file or an error, never a panic, and a file
//! written reads back, which `Calibration::read` allows only with parameters the model can
//! price with (every latency, rate and size above zero and finite). Run with
//! `-close_fd_mask=3`: the command prints its verdict.
use std::ffi::OsString;

use nvcc_orion::commands::{self, Subcommand};
use nvcc_orion::predict::calibration::Calibration;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("orion-fuzz-calibration-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (measured, output) = (dir.join("measured.txt"), dir.join("calibration.json"));
    std::fs::write(&measured, data).unwrap();
    let _ = std::fs::remove_file(&output);
    let argv: Vec<OsString> = vec![
        "nvcc-orion".into(),
        "calibrate".into(),
        "--measurements".into(),
        measured.into_os_string(),
        "--output".into(),
        output.clone().into_os_string(),
    ];
    let _ = commands::run(Subcommand::Calibrate, &argv);
    if !output.exists() {
        return;
    }
    // The reader refuses a parameter no device has (zero, negative, not finite): what
    // calibrate writes, a build must be able to use.
    Calibration::read(&output).expect("a calibration file calibrate wrote reads back");
});

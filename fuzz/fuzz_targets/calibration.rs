#![no_main]
//! The calibration microbenchmark's output as `nvcc-orion calibrate --measurements` reads
//! and fits it: any text gives a calibration file or an error, never a panic, and a file
//! written holds parameters the model can price with (every latency and rate finite and
//! above zero) and reads back. Run with `-close_fd_mask=3`: the command prints its verdict.
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
    let file = Calibration::read(&output).expect("a calibration file calibrate wrote reads back");
    for (key, d) in &file.devices {
        let m = &d.memory;
        for (name, v) in [
            ("l1_latency", m.l1_latency),
            ("l2_latency", m.l2_latency),
            ("dram_latency", m.dram_latency),
            ("shared_latency", m.shared_latency),
            ("l1_bytes_per_clock", m.l1_bytes_per_clock),
            ("l2_bytes_per_clock", m.l2_bytes_per_clock),
            ("dram_bytes_per_clock", m.dram_bytes_per_clock),
        ] {
            assert!(v.is_finite() && v > 0.0, "{key}: {name} = {v}");
        }
    }
});

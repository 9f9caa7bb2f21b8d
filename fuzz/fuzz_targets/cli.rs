#![no_main]
//! The command line as nvcc-orion reads it (`cli::parse`, then `Settings::read` over its
//! `--orion-*` options): arguments are the input split at NUL bytes, the first of them the
//! value of `NVCC_PREPEND_FLAGS` and the second of `NVCC_APPEND_FLAGS`; never a panic.
//! It runs in an empty folder of its own, so a relative options file names nothing.
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use nvcc_orion::{cli, settings::Settings, transform};

static EMPTY_CWD: std::sync::Once = std::sync::Once::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0);
    let prepend = parts
        .next()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let append = parts
        .next()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let args: Vec<OsString> = parts.map(|p| OsString::from_vec(p.to_vec())).collect();
    EMPTY_CWD.call_once(|| {
        let dir = std::env::temp_dir().join(format!("orion-fuzz-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_current_dir(&dir).unwrap();
    });
    let env = |k: &str| match k {
        "NVCC_PREPEND_FLAGS" => prepend.clone(),
        "NVCC_APPEND_FLAGS" => append.clone(),
        _ => None,
    };
    if let Ok(inv) = cli::parse(&args, &env) {
        let _ = Settings::read(&env, &inv.orion_args, &transform::keys());
    }
});

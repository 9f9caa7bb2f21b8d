//! Outputs that are not plain files (issue 48, point 5): `-o /dev/null` and `-o /dev/stdout`
//! with `-cubin`, `-c`, `-fatbin` and `-ptx` behave as with plain nvcc: the same exit code,
//! the same bytes on stdout where nvcc's are deterministic, and nothing on stderr (no
//! "tuning sm_90 failed (... 0 bytes ...)"). ptxas writes a `-cubin` output itself, so
//! there is nothing this process could read back or replace: the step is not tuned.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");

/// Exit code, stdout and stderr of `program` compiling the register-hungry test kernel with
/// `mode` into `out`. Stdout is a pipe (as `| consumer` in a shell) or, with `to_file`, a
/// file (as `> file`): `/dev/stdout` names whichever it is.
fn compile(program: &Path, nvcc: &Path, args: (&str, &str), dir: &Path, to_file: bool) -> Outcome {
    let (mode, out) = args;
    let kernel = common::kernels_dir().join("regpressure.cu");
    let mut cmd = common::without_our_settings(Command::new(program), nvcc);
    cmd.current_dir(dir)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .args(["-arch=sm_90", mode])
        .arg(&kernel)
        .args(["-o", out])
        .stdin(Stdio::null());
    let file = dir.join("stdout");
    if to_file {
        cmd.stdout(std::fs::File::create(&file).unwrap());
    }
    let o = cmd.output().unwrap();
    let stdout = match to_file {
        true => std::fs::read(&file).unwrap(),
        false => o.stdout,
    };
    (
        o.status.code(),
        stdout,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

type Outcome = (Option<i32>, Vec<u8>, String);

#[test]
fn device_and_descriptor_outputs_behave_as_with_nvcc() {
    let Some(nvcc) = common::nvcc_or_skip("special_outputs") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for mode in ["-cubin", "-c", "-fatbin", "-ptx"] {
        for (out, to_file) in [
            ("/dev/null", false),
            ("/dev/stdout", true),
            ("/dev/stdout", false),
        ] {
            let want = compile(&nvcc, &nvcc, (mode, out), dir.path(), to_file);
            let got = compile(Path::new(ORION), &nvcc, (mode, out), dir.path(), to_file);
            let what = format!("{mode} -o {out} (stdout a file: {to_file})");
            assert_eq!(got.0, want.0, "{what}: exit code");
            assert_eq!(got.2, want.2, "{what}: stderr");
            assert_eq!(got.2, "", "{what}: nvcc printed nothing");
            // `-c`'s object names its temporary files (`tmpxft_...`), different each run.
            if mode != "-c" {
                assert_eq!(got.1, want.1, "{what}: stdout bytes");
            }
        }
    }
}

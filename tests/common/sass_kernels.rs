//! The SASS test kernels of `tests/kernels/sass/` (calls, math, memory, tensor), each built
//! once per content hash as plain `nvcc -cubin -arch=sm_<arch>` for sm_75, 80, 86, 89 and 90,
//! cached under `CARGO_TARGET_TMPDIR` and shared by the test processes of a run (a lock file
//! and a completion stamp): the decoder's tests (`tests/decode/sass_decode.rs`) and the
//! oracle's (`tests/oracles/oracle.rs`) read the same cubins instead of compiling them twice
//! (issue 50).

use std::path::{Path, PathBuf};
use std::process::Command;

pub const ARCHS: &[u32] = &[75, 80, 86, 89, 90];
pub const SOURCES: &[&str] = &["calls.cu", "math.cu", "memory.cu", "tensor.cu"];

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/sass")
}

/// Every source for every arch, built by `nvcc` if this run has not yet: (arch, stem, cubin),
/// arch-major in [`ARCHS`] order, sources in [`SOURCES`] order.
pub fn built(nvcc: &Path) -> Vec<(u32, String, PathBuf)> {
    let mut inputs = Vec::new();
    for s in SOURCES {
        inputs.push(s.as_bytes().to_vec());
        inputs.push(std::fs::read(src_dir().join(s)).expect("kernel source"));
    }
    let views: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let lock = super::Locked::new("sass-kernels", nvcc, &views);
    let dir = lock.dir.clone();
    let cubins: Vec<(u32, String, PathBuf)> = ARCHS
        .iter()
        .flat_map(|&a| {
            let dir = &dir;
            SOURCES.iter().map(move |s| {
                let stem = s.trim_end_matches(".cu");
                (a, stem.to_string(), dir.join(format!("{stem}_sm{a}.cubin")))
            })
        })
        .collect();
    if !lock.complete() {
        // Two nvcc calls at a time (CI has two cores).
        for pair in cubins.chunks(2) {
            let children: Vec<_> = pair
                .iter()
                .map(|(a, stem, out)| {
                    let child = Command::new(nvcc)
                        .arg("-cubin")
                        .arg(format!("-arch=sm_{a}"))
                        .arg("-o")
                        .arg(out)
                        .arg(src_dir().join(format!("{stem}.cu")))
                        .output();
                    (out.clone(), child)
                })
                .collect();
            for (out, res) in children {
                let res = res.expect("run nvcc");
                assert!(
                    res.status.success(),
                    "nvcc for {} failed:\n{}",
                    out.display(),
                    String::from_utf8_lossy(&res.stderr)
                );
            }
        }
        lock.finish();
    }
    cubins
}

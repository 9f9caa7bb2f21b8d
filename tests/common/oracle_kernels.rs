//! The coverage kernels of `tests/kernels/oracle/` (issue 18), built once per content hash by
//! `scripts/oracle-kernels.sh` for every architecture it lists (sm_75, 80, 86, 89, 90 and
//! sm_90a, the target that accepts wgmma), cached under `CARGO_TARGET_TMPDIR` and shared by
//! the test processes (a lock file and a completion stamp).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct OracleKernels {
    pub nvcc: PathBuf,
    /// (arch as in `sm_<arch>`, e.g. "90a"; source stem; cubin), sorted by arch then stem.
    pub cubins: Vec<(String, String, PathBuf)>,
    pub archs: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The built kernels, or `None` (with a skip line) without nvcc; with `CI` set a missing
/// toolkit is a failure.
pub fn oracle_kernels(test: &str) -> Option<&'static OracleKernels> {
    static K: OnceLock<Option<OracleKernels>> = OnceLock::new();
    K.get_or_init(|| {
        let nvcc = super::nvcc_or_skip(test)?;
        let script = root().join("scripts/oracle-kernels.sh");
        let src_dir = root().join("tests/kernels/oracle");
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&src_dir)
            .expect("tests/kernels/oracle")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cu"))
            .collect();
        sources.sort();
        let mut inputs = vec![std::fs::read(&script).unwrap()];
        for s in &sources {
            inputs.push(s.file_name().unwrap().as_encoded_bytes().to_vec());
            inputs.push(std::fs::read(s).unwrap());
        }
        let views: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let lock = super::Locked::new("oracle-kernels", &nvcc, &views);
        let dir = lock.dir.clone();
        if !lock.complete() {
            let out = Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .env("NVCC_ORION_NVCC", &nvcc)
                .output()
                .expect("run scripts/oracle-kernels.sh");
            assert!(
                out.status.success(),
                "scripts/oracle-kernels.sh failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            lock.finish();
        }
        drop(lock);
        let archs: Vec<String> = String::from_utf8(
            Command::new("bash")
                .arg(&script)
                .arg("--archs")
                .output()
                .expect("scripts/oracle-kernels.sh --archs")
                .stdout,
        )
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
        let cubins = archs
            .iter()
            .flat_map(|a| {
                let dir = &dir;
                sources.iter().map(move |s| {
                    let stem = s.file_stem().unwrap().to_string_lossy().into_owned();
                    let cubin = dir.join(format!("{stem}_sm{a}.cubin"));
                    assert!(cubin.is_file(), "{} was not built", cubin.display());
                    (a.clone(), stem, cubin)
                })
            })
            .collect();
        Some(OracleKernels {
            nvcc,
            cubins,
            archs,
        })
    })
    .as_ref()
}

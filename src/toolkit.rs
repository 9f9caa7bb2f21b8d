//! Finding the real CUDA toolkit: `NVCC_ORION_NVCC`, then `CUDA_HOME`/`CUDA_PATH`, then `nvcc`
//! on PATH with nvcc-orion itself and its shims skipped, so it never runs itself.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    nvcc: PathBuf,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolkitError {
    #[error("{var} points at nvcc-orion itself ({path}); set NVCC_ORION_NVCC to the real nvcc")]
    Recursive { var: &'static str, path: PathBuf },
    #[error("NVCC_ORION_NVCC={0} is not an executable file")]
    BadExplicit(PathBuf),
    #[error(
        "cannot find the real nvcc; set NVCC_ORION_NVCC to its path or CUDA_HOME to the toolkit"
    )]
    NotFound,
}

impl Toolkit {
    /// Look the toolkit up. `env` reads environment variables; `me` is nvcc-orion's own path.
    pub fn locate(env: &dyn Fn(&str) -> Option<OsString>, me: &Path) -> Result<Self, ToolkitError> {
        let me = std::fs::canonicalize(me).unwrap_or_else(|_| me.to_path_buf());
        if let Some(p) = env("NVCC_ORION_NVCC").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            if !is_executable(&p) {
                return Err(ToolkitError::BadExplicit(p));
            }
            if is_us(&p, &me) {
                return Err(ToolkitError::Recursive {
                    var: "NVCC_ORION_NVCC",
                    path: p,
                });
            }
            return Ok(Toolkit { nvcc: p });
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            let Some(root) = env(var).filter(|p| !p.is_empty()) else {
                continue;
            };
            let p = Path::new(&root).join("bin").join("nvcc");
            if is_executable(&p) {
                if is_us(&p, &me) {
                    return Err(ToolkitError::Recursive { var, path: p });
                }
                return Ok(Toolkit { nvcc: p });
            }
        }
        let path = env("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            let p = dir.join("nvcc");
            if is_executable(&p) && !is_us(&p, &me) {
                return Ok(Toolkit { nvcc: p });
            }
        }
        Err(ToolkitError::NotFound)
    }

    pub fn nvcc(&self) -> &Path {
        &self.nvcc
    }

    /// The directory holding nvcc, where `ptxas`, `nvdisasm`, `cuobjdump`, `fatbinary` live too.
    pub(crate) fn bin_dir(&self) -> &Path {
        self.nvcc.parent().unwrap_or(Path::new("."))
    }

    /// A tool next to the real nvcc (`ptxas`, `nvdisasm`, `cuobjdump`, `fatbinary`, `nvlink`).
    pub fn tool(&self, name: &str) -> PathBuf {
        self.bin_dir().join(name)
    }
}

/// A toolkit tool (`nvdisasm`, ...) next to the real nvcc this process would use (the
/// environment and `PATH`, never nvcc-orion itself); `None` without a toolkit.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let me = std::env::current_exe().unwrap_or_else(|_| "nvcc-orion".into());
    Toolkit::locate(&|k| std::env::var_os(k), &me)
        .ok()
        .map(|t| t.tool(name))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Is `p` nvcc-orion itself, a link to it, or one of its shims (a script that runs it)?
fn is_us(p: &Path, me: &Path) -> bool {
    if std::fs::canonicalize(p).is_ok_and(|c| c == me) {
        return true;
    }
    // Shims are small scripts; a real nvcc is an ELF binary and never mentions us.
    // Read only the head: a real nvcc is tens of MB and this runs on every invocation.
    let mut bytes = Vec::with_capacity(4096);
    let read = std::fs::File::open(p).and_then(|f| {
        use std::io::Read;
        f.take(4096).read_to_end(&mut bytes)
    });
    if read.is_err() {
        return false;
    }
    bytes.starts_with(b"#!") && bytes.windows(10).any(|w| w == b"nvcc-orion")
}

/// A program's identity as the caches key tools (ptxas for variants, cuobjdump and nvdisasm
/// for the assembly check's verdicts): path, size, modification time.
pub fn program_identity(program: &Path) -> String {
    let meta = std::fs::metadata(program).ok();
    let mtime = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{}:{mtime}",
        program.display(),
        meta.map_or(0, |m| m.len())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    fn exe(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn lookup(vars: HashMap<&'static str, OsString>) -> impl Fn(&str) -> Option<OsString> {
        move |k| vars.get(k).cloned()
    }

    #[test]
    fn order_explicit_then_cuda_home_then_path_skipping_ourselves() {
        let d = tempfile::tempdir().unwrap();
        let me = d.path().join("orion/nvcc-orion");
        exe(&me, "\x7fELF me");
        let shim = d.path().join("shims/nvcc");
        exe(&shim, "#!/bin/sh\nexec nvcc-orion \"$@\"\n");
        let link = d.path().join("link/nvcc");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&me, &link).unwrap();
        let real = d.path().join("cuda/bin/nvcc");
        exe(&real, "\x7fELF real");
        let explicit = d.path().join("other/nvcc");
        exe(&explicit, "\x7fELF other");

        let path = std::env::join_paths([
            shim.parent().unwrap(),
            link.parent().unwrap(),
            real.parent().unwrap(),
        ])
        .unwrap();
        let env = lookup(HashMap::from([("PATH", path.clone())]));
        assert_eq!(Toolkit::locate(&env, &me).unwrap().nvcc(), real);

        let env = lookup(HashMap::from([
            ("PATH", path.clone()),
            ("CUDA_HOME", d.path().join("cuda").into()),
        ]));
        assert_eq!(
            Toolkit::locate(&env, &me).unwrap().tool("ptxas"),
            d.path().join("cuda/bin/ptxas")
        );

        let env = lookup(HashMap::from([
            ("PATH", path),
            ("NVCC_ORION_NVCC", explicit.clone().into()),
        ]));
        assert_eq!(Toolkit::locate(&env, &me).unwrap().nvcc(), explicit);
    }

    #[test]
    fn refuses_to_run_itself() {
        let d = tempfile::tempdir().unwrap();
        let me = d.path().join("nvcc-orion");
        exe(&me, "\x7fELF me");
        let env = lookup(HashMap::from([("NVCC_ORION_NVCC", me.clone().into())]));
        let err = Toolkit::locate(&env, &me).unwrap_err();
        assert!(err.to_string().contains("set NVCC_ORION_NVCC"), "{err}");
        let env = lookup(HashMap::from([("PATH", d.path().into())]));
        assert_eq!(Toolkit::locate(&env, &me), Err(ToolkitError::NotFound));
        assert!(
            ToolkitError::NotFound
                .to_string()
                .contains("NVCC_ORION_NVCC")
        );
    }
}

//! The test suite's nvdisasm: the real tool behind a memo of its clean listings (why, and what
//! is kept: `scripts/toolkit-memo/nvdisasm`). `scripts/test.sh` runs the suite with a toolkit
//! whose nvdisasm is that memo already (`scripts/toolkit-memo/build.sh`), shared with the
//! product under test; a suite run without it (`cargo nextest` by hand) gets the memo here, for
//! the tests' own listings only.

use std::path::{Path, PathBuf};

const SCRIPT: &str = include_str!("../../scripts/toolkit-memo/nvdisasm");

/// Is `tool` a memo of the suite's toolkit (the real one is `.real/<name>` beside it)?
pub fn is_memo(tool: &Path) -> bool {
    real_behind(tool).is_some()
}

/// The real tool behind a memo of the suite's toolkit, `None` for a real tool.
pub fn real_behind(tool: &Path) -> Option<PathBuf> {
    let name = tool.file_name()?;
    let real = tool.with_file_name(".real").join(name);
    real.is_file()
        .then(|| std::fs::canonicalize(&real).unwrap_or(real))
}

/// The memoising stand-in for `real` (an nvdisasm), installed once per tool identity (path,
/// size, modification time: another toolkit gets other listings).
pub fn nvdisasm(real: &Path) -> PathBuf {
    if is_memo(real) {
        return real.to_path_buf();
    }
    let meta = std::fs::metadata(real).expect("nvdisasm beside nvcc");
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let identity = format!("{}:{}:{mtime}", real.display(), meta.len());
    let h = super::fnv(identity.as_bytes(), 0xcbf2_9ce4_8422_2325);
    let h = super::fnv(SCRIPT.as_bytes(), h);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvdisasm-memo-{h:016x}"));
    let exe = root.join("bin").join("nvdisasm");
    if exe.is_file() {
        return exe;
    }
    let behind = root.join("bin").join(".real");
    std::fs::create_dir_all(&behind).unwrap();
    // Another test starting beside this one may have linked it first.
    match std::os::unix::fs::symlink(real, behind.join("nvdisasm")) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => panic!("{e}"),
        _ => {}
    }
    // Written aside and renamed, so a test starting beside this one never runs half a script.
    let tmp = tempfile::NamedTempFile::new_in(root.join("bin")).unwrap();
    std::fs::write(tmp.path(), SCRIPT).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp.persist(&exe).unwrap();
    exe
}

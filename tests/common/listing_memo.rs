//! The test suite's nvdisasm: the real tool behind a memo of its clean listings, shared by every
//! test process of a run under `CARGO_TARGET_TMPDIR` (why, and what is kept:
//! `nvdisasm-memo.sh`). Tests reach it through [`super::toolkit_tool`]; the product under test
//! never does (it finds nvdisasm beside nvcc), so its own checks still run the tool each time.

use std::path::{Path, PathBuf};

const SCRIPT: &str = include_str!("nvdisasm-memo.sh");

/// The memoising stand-in for `real` (an nvdisasm), installed once per tool identity (path,
/// size, modification time: another toolkit gets other listings).
pub fn nvdisasm(real: &Path) -> PathBuf {
    let meta = std::fs::metadata(real).expect("nvdisasm beside nvcc");
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let identity = format!("{}:{}:{mtime}", real.display(), meta.len());
    let h = super::fnv(identity.as_bytes(), 0xcbf2_9ce4_8422_2325);
    let memo = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvdisasm-memo-{h:016x}"));
    let exe = memo.join("nvdisasm");
    if exe.is_file() {
        return exe;
    }
    std::fs::create_dir_all(&memo).unwrap();
    for p in [real, memo.as_path()] {
        assert!(
            !p.to_string_lossy().contains('\''),
            "{} holds a quote",
            p.display()
        );
    }
    let text = SCRIPT
        .replacen("'REAL'", &format!("'{}'", real.display()), 1)
        .replacen("'MEMO'", &format!("'{}'", memo.display()), 1);
    // Written aside and renamed, so a test starting beside this one never runs half a script.
    let tmp = tempfile::NamedTempFile::new_in(&memo).unwrap();
    std::fs::write(tmp.path(), text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp.persist(&exe).unwrap();
    exe
}

//! Passed checks, remembered: a cached build ships the same bytes from the same origins as
//! the build that checked them, so the check's verdict is looked up instead of running
//! cuobjdump and nvdisasm again (issue 35: the check was most of what a cached build added).
//!
//! The key is everything the verdict depends on: every byte of the job (shipped cubin,
//! baseline, module, each origin's names and cubin), the tools that read them (path, size and
//! modification time, as the variant cache names ptxas), and this checker (nvcc-orion's own
//! executable, the same way). Only a pass is remembered; a disagreement or a tool failure is
//! found again by the next build. A verdict file that does not read is no verdict; so is one
//! whose checksum (a SHA-256 of its key and its words) does not match, such as a verdict
//! damaged on disk or copied or renamed from another key's file: the check then runs again.
//! (Files of the earlier layout, without a checksum, read as no verdict.)

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Checked, Job, Tools};

/// Folder of the verdicts under the cache root (the version names the file format).
const FOLDER: &str = "audit-v1";

/// The file the verdict of `job` read with `tools` lives in, under cache root `root`.
pub(super) fn path(root: &Path, tools: &Tools, job: &Job<'_>) -> PathBuf {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(crate::toolkit::program_identity(&tools.cuobjdump).as_bytes());
    field(crate::toolkit::program_identity(&tools.nvdisasm).as_bytes());
    field(checker().as_bytes());
    field(job.shipped);
    field(job.baseline);
    field(job.module);
    for o in &job.origins {
        field(o.shipped.as_bytes());
        field(o.name.as_bytes());
        field(o.cubin);
    }
    // Counted, so that no run of origins reads as a run of proved kernels.
    field(&(job.proved.len() as u64).to_le_bytes());
    for k in &job.proved {
        field(k.as_bytes());
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    root.join(FOLDER).join(key)
}

/// A remembered pass at `file`, if one reads and its checksum matches.
pub(super) fn read(file: &Path) -> Option<Checked> {
    let text = std::fs::read_to_string(file).ok()?;
    let (pass, sum) = text.trim_end().rsplit_once(' ')?;
    if sum != checksum(file, pass) {
        return None;
    }
    let mut words = pass.strip_prefix("passed ")?.split(' ');
    let functions = words.next()?.parse().ok()?;
    let disassembled = words.next()?.parse().ok()?;
    words.next().is_none().then_some(Checked {
        functions,
        disassembled,
    })
}

/// The checksum of verdict `text` in `file`: bound to the file's name (its key), so that a
/// verdict moved to another key's name does not read.
fn checksum(file: &Path, text: &str) -> String {
    let mut h = Sha256::new();
    let key = file.file_name().unwrap_or_default().to_string_lossy();
    h.update((key.len() as u64).to_le_bytes());
    h.update(key.as_bytes());
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Remember a pass at `file` (written whole, then renamed, [`crate::atomic_file`], so a
/// concurrent build never reads half a verdict). Failing to write only costs the next build
/// the check.
pub(super) fn write(file: &Path, checked: Checked) {
    let Some(dir) = file.parent() else {
        return;
    };
    let _ = std::fs::create_dir_all(dir).and_then(|()| {
        crate::atomic_file::write_with(file, None, |f| {
            let pass = format!("passed {} {}", checked.functions, checked.disassembled);
            writeln!(f, "{pass} {}", checksum(file, &pass))
        })
    });
}

/// This checker's identity: a new nvcc-orion checks again.
fn checker() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    format!(
        "{}:{}",
        env!("CARGO_PKG_VERSION"),
        crate::toolkit::program_identity(&exe)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Origin;

    fn job<'a>(shipped: &'a [u8], origin: &'a [u8]) -> Job<'a> {
        Job {
            proved: Vec::new(),
            shipped,
            baseline: b"baseline",
            module: b"module",
            origins: vec![Origin {
                shipped: "k",
                name: "k",
                cubin: origin,
            }],
        }
    }

    #[test]
    fn every_byte_of_the_job_is_in_the_key() {
        let root = Path::new("/cache");
        let tools = Tools::in_dir(Path::new("/nowhere"));
        let a = path(root, &tools, &job(b"shipped", b"origin"));
        assert_eq!(a, path(root, &tools, &job(b"shipped", b"origin")));
        assert_ne!(a, path(root, &tools, &job(b"shippeD", b"origin")));
        assert_ne!(a, path(root, &tools, &job(b"shipped", b"origiN")));
        // Field boundaries count: moving a byte from one field to the next is another job.
        assert_ne!(a, path(root, &tools, &job(b"shippedo", b"rigin")));
        let other_tools = Tools::in_dir(Path::new("/elsewhere"));
        assert_ne!(a, path(root, &other_tools, &job(b"shipped", b"origin")));
        // A kernel named as proved is another job.
        let proved = Job {
            proved: vec!["k"],
            ..job(b"shipped", b"origin")
        };
        assert_ne!(a, path(root, &tools, &proved));
        assert!(a.starts_with("/cache/audit-v1"));
    }

    #[test]
    fn a_pass_is_read_back_and_anything_else_is_no_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit-v1/key");
        assert_eq!(read(&file), None);
        let checked = Checked {
            functions: 7,
            disassembled: 2,
        };
        write(&file, checked);
        assert_eq!(read(&file), Some(checked));
        // Another key's verdict, renamed: no verdict.
        let other = dir.path().join("audit-v1/other");
        std::fs::copy(&file, &other).unwrap();
        assert_eq!(read(&other), None);
        // A changed digit: no verdict.
        let good = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, good.replacen("passed 7", "passed 6", 1)).unwrap();
        assert_eq!(read(&file), None);
        // The earlier layout, without a checksum: no verdict.
        std::fs::write(&file, "passed 7 2\n").unwrap();
        assert_eq!(read(&file), None);
        // Words that do not read, however well summed: no verdict.
        for bad in [
            "",
            "passed",
            "passed 7",
            "passed 7 x",
            "passed 7 2 9",
            "failed 7 2",
        ] {
            std::fs::write(&file, format!("{bad} {}", checksum(&file, bad))).unwrap();
            assert_eq!(read(&file), None, "{bad:?}");
        }
    }
}

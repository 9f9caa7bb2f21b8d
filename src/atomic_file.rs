//! Writing a file so that no reader ever sees half of it: the bytes go to a temporary file in
//! the same folder, which one rename puts in place (a rename within a file system is atomic).
//! Every file nvcc-orion writes that another process may read at the same moment (the variant
//! cache, the assembly check's verdicts, the `--dryrun` ptxas shim, the toolchain archive) or
//! that replaces its own input (`nvcc-orion rewrite -o`) goes through here.

use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::path::Path;

/// Put `bytes` in place of `path`, in one rename. The folder must exist.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, None, |f| f.write_all(bytes))
}

/// Put what `fill` writes in place of `path`, in one rename, with `permissions` when given
/// (a temporary file starts private). The folder must exist; on any error nothing is left
/// behind and `path` is as it was.
pub fn write_with(
    path: &Path,
    permissions: Option<Permissions>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    fill(tmp.as_file_mut())?;
    if let Some(p) = permissions {
        tmp.as_file().set_permissions(p)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_or_not_at_all() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        write(&p, b"one").unwrap();
        write_with(&p, Some(Permissions::from_mode(0o755)), |f| {
            f.write_all(b"two")
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        // A failed fill leaves the old file and no temporary beside it.
        let failed = write_with(&p, None, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // A missing folder is an error, not a folder made.
        assert!(write(&d.path().join("no/f"), b"x").is_err());
    }
}

//! Where `explain --html` wants a step's cubins ([`crate::settings::Settings::keep_cubins`]).

use std::path::{Path, PathBuf};

/// One folder, files named by the step's architecture and a hash of its output path (several
/// steps may write to one folder).
pub struct Keep {
    dir: PathBuf,
    stem: String,
}

impl Keep {
    pub fn new(dir: Option<&Path>, arch: &str, out: &Path) -> Option<Keep> {
        use sha2::Digest;
        let dir = dir?;
        let hash = sha2::Sha256::digest(out.as_os_str().as_encoded_bytes());
        let hex: String = hash[..6].iter().map(|b| format!("{b:02x}")).collect();
        Some(Keep {
            dir: dir.to_path_buf(),
            stem: format!("{arch}-{hex}"),
        })
    }

    /// Write one cubin; its path, or `None` when it cannot be written (the page then goes
    /// without that view; the build is not affected).
    pub fn save(&self, what: &str, bytes: &[u8]) -> Option<String> {
        let path = self.dir.join(format!("{}-{what}.cubin", self.stem));
        std::fs::create_dir_all(&self.dir).ok()?;
        std::fs::write(&path, bytes).ok()?;
        Some(path.display().to_string())
    }
}

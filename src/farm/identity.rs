//! What identifies an nvcc-orion build for a cache key: its version and the SHA-256 of its
//! own bytes (a rebuild with other code is another compiler, whatever its version says).

use std::path::Path;

use sha2::{Digest, Sha256};

/// `nvcc-orion <version> sha256:<hex>` for the binary at `exe`.
pub fn of_binary(exe: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(exe)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        "nvcc-orion {} sha256:{hex}",
        env!("CARGO_PKG_VERSION")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_not_name() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        std::fs::write(&a, b"one").unwrap();
        std::fs::write(&b, b"one").unwrap();
        std::fs::write(&c, b"two").unwrap();
        let id = of_binary(&a).unwrap();
        assert_eq!(id, of_binary(&b).unwrap());
        assert_ne!(id, of_binary(&c).unwrap());
        assert!(id.starts_with("nvcc-orion ") && id.len() > 70, "{id}");
    }
}

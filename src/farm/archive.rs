//! A deterministic `.tar.gz`: the same entries give the same bytes on any machine. Entries
//! are written in path order, every header is ustar with mtime 0, owner 0:0 and no owner
//! names, modes are 0755 (executables and directories) or 0644, and the gzip header carries
//! no file name and no time.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    /// A file read when the archive is written.
    File(PathBuf),
    Bytes(Vec<u8>),
    Dir,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    content: Content,
    mode: u32,
}

/// The entries of an archive, by their path inside it (relative, `/`-separated).
#[derive(Debug, Default, Clone)]
pub struct Archive {
    entries: BTreeMap<String, Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{0:?} is not a relative path inside the archive")]
    BadPath(String),
    #[error("{path} is both {a} and {b} in the archive")]
    Conflict { path: String, a: String, b: String },
    #[error("cannot read {0}: {1}")]
    Read(PathBuf, io::Error),
    #[error("cannot write the archive: {0}")]
    Write(io::Error),
}

impl Archive {
    /// The file at `source` as `at` (an absolute path maps to the same path below the root).
    pub fn add_file(
        &mut self,
        at: &str,
        source: &Path,
        executable: bool,
    ) -> Result<(), ArchiveError> {
        self.insert(
            at,
            Content::File(source.to_path_buf()),
            exec_mode(executable),
        )
    }

    /// `bytes` as the file `at`.
    pub fn add_bytes(
        &mut self,
        at: &str,
        bytes: &[u8],
        executable: bool,
    ) -> Result<(), ArchiveError> {
        self.insert(at, Content::Bytes(bytes.to_vec()), exec_mode(executable))
    }

    /// An (empty) directory `at` with `mode` (`0o1777` for a `tmp`).
    pub fn add_dir(&mut self, at: &str, mode: u32) -> Result<(), ArchiveError> {
        self.insert(at, Content::Dir, mode)
    }

    /// The paths inside the archive, in the order they are written.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    fn insert(&mut self, at: &str, content: Content, mode: u32) -> Result<(), ArchiveError> {
        let path = normalise(at)?;
        // Parent directories first, so an unpacked tree has them whatever the unpacker does.
        let mut parent = String::new();
        for part in path
            .split('/')
            .collect::<Vec<_>>()
            .split_last()
            .map(|(_, p)| p)
            .unwrap_or(&[])
        {
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(part);
            match self.entries.get(&parent) {
                Some(Entry {
                    content: Content::Dir,
                    ..
                }) => {}
                Some(e) => {
                    return Err(ArchiveError::Conflict {
                        path: parent.clone(),
                        a: describe(&e.content),
                        b: "a directory".into(),
                    });
                }
                None => {
                    self.entries.insert(
                        parent.clone(),
                        Entry {
                            content: Content::Dir,
                            mode: 0o755,
                        },
                    );
                }
            }
        }
        let new = Entry { content, mode };
        match self.entries.get(&path) {
            // The same thing twice (a library two programs need) is one entry.
            Some(old) if *old == new => Ok(()),
            Some(Entry {
                content: Content::Dir,
                ..
            }) if new.content == Content::Dir => {
                self.entries.insert(path, new);
                Ok(())
            }
            Some(old) => Err(ArchiveError::Conflict {
                path,
                a: describe(&old.content),
                b: describe(&new.content),
            }),
            None => {
                self.entries.insert(path, new);
                Ok(())
            }
        }
    }

    /// Write the archive as a gzip-compressed tar to `out`.
    pub fn write_tar_gz(&self, out: impl Write) -> Result<(), ArchiveError> {
        let gz = flate2::GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(out, flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (path, entry) in &self.entries {
            let mut h = tar::Header::new_ustar();
            h.set_mtime(0);
            h.set_uid(0);
            h.set_gid(0);
            h.set_mode(entry.mode);
            let w = |e| ArchiveError::Write(e);
            match &entry.content {
                Content::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    h.set_path(format!("{path}/")).map_err(w)?;
                    h.set_cksum();
                    tar.append(&h, io::empty()).map_err(w)?;
                }
                Content::Bytes(b) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(b.len() as u64);
                    h.set_path(path).map_err(w)?;
                    h.set_cksum();
                    tar.append(&h, b.as_slice()).map_err(w)?;
                }
                Content::File(src) => {
                    let f =
                        std::fs::File::open(src).map_err(|e| ArchiveError::Read(src.clone(), e))?;
                    let len = f
                        .metadata()
                        .map_err(|e| ArchiveError::Read(src.clone(), e))?
                        .len();
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(len);
                    h.set_path(path).map_err(w)?;
                    h.set_cksum();
                    // A file that changes size while it is read fails the append: never a
                    // silently truncated archive.
                    tar.append(&h, f)
                        .map_err(|e| ArchiveError::Read(src.clone(), e))?;
                }
            }
        }
        let gz = tar.into_inner().map_err(ArchiveError::Write)?;
        gz.finish()
            .map_err(ArchiveError::Write)?
            .flush()
            .map_err(ArchiveError::Write)
    }
}

fn exec_mode(executable: bool) -> u32 {
    if executable { 0o755 } else { 0o644 }
}

fn describe(c: &Content) -> String {
    match c {
        Content::File(p) => p.display().to_string(),
        Content::Bytes(_) => "generated contents".into(),
        Content::Dir => "a directory".into(),
    }
}

/// `at` without a leading `/`, every part a plain name.
fn normalise(at: &str) -> Result<String, ArchiveError> {
    let parts: Vec<&str> = at
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return Err(ArchiveError::BadPath(at.to_string()));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(order: &[usize]) -> Vec<u8> {
        let items: [(&str, &[u8], bool); 3] = [
            ("/opt/t/bin/run", b"#!/bin/sh\n", true),
            ("lib/x.so", b"\x7fELF", false),
            ("opt/t/share/readme", b"hi", false),
        ];
        let mut a = Archive::default();
        for &i in order {
            let (p, b, x) = items[i];
            a.add_bytes(p, b, x).unwrap();
        }
        a.add_dir("tmp", 0o1777).unwrap();
        let mut out = Vec::new();
        a.write_tar_gz(&mut out).unwrap();
        out
    }

    #[test]
    fn same_entries_same_bytes_in_any_order() {
        assert_eq!(sample(&[0, 1, 2]), sample(&[2, 0, 1]));
    }

    #[test]
    fn headers_are_fixed_and_parents_listed() {
        let bytes = sample(&[0, 1, 2]);
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut seen = Vec::new();
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(
                (h.mtime().unwrap(), h.uid().unwrap(), h.gid().unwrap()),
                (0, 0, 0)
            );
            seen.push((e.path().unwrap().display().to_string(), h.mode().unwrap()));
        }
        assert_eq!(
            seen,
            [
                ("lib/".to_string(), 0o755),
                ("lib/x.so".into(), 0o644),
                ("opt/".into(), 0o755),
                ("opt/t/".into(), 0o755),
                ("opt/t/bin/".into(), 0o755),
                ("opt/t/bin/run".into(), 0o755),
                ("opt/t/share/".into(), 0o755),
                ("opt/t/share/readme".into(), 0o644),
                ("tmp/".into(), 0o1777),
            ]
        );
        // gzip: no time (bytes 4..8), OS "unknown".
        assert_eq!(&bytes[4..8], &[0, 0, 0, 0]);
        assert_eq!(bytes[9], 255);
    }

    #[test]
    fn conflicts_and_escapes_are_refused() {
        let mut a = Archive::default();
        a.add_bytes("a/b", b"1", false).unwrap();
        a.add_bytes("a/b", b"1", false).unwrap();
        assert!(matches!(
            a.add_bytes("a/b", b"2", false),
            Err(ArchiveError::Conflict { .. })
        ));
        assert!(matches!(
            a.add_bytes("a/b/c", b"2", false),
            Err(ArchiveError::Conflict { .. })
        ));
        assert!(matches!(
            a.add_bytes("../x", b"2", false),
            Err(ArchiveError::BadPath(_))
        ));
    }
}

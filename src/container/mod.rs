//! Fatbin containers and the files that carry them: bare fatbins, host objects
//! (`.nv_fatbin`, `__nv_relfatbin`), linked executables and `ar` archives; read, edit, write.
//!
//! ```no_run
//! # fn main() -> Result<(), nvcc_orion::container::ContainerError> {
//! let mut a = nvcc_orion::container::open(std::path::Path::new("k.o"))?;
//! for img in a.images()? {
//!     println!("{} sm_{} {:?} {} bytes", img.location, img.arch, img.kind, img.image.len());
//! }
//! let n = a.edit_cubins(|_loc, cubin| Ok(Some(cubin.to_vec())))?; // store every cubin raw
//! std::fs::write("k2.o", a.write()?).unwrap();
//! # let _ = n; Ok(()) }
//! ```
//!
//! Facts this layer relies on, checked on CUDA 13.5 output (`tests/decode/container_real.rs`):
//! - payloads are padded to 8 bytes, uncompressed cubins included (an sm_100 cubin of 0x1f252
//!   bytes sits in a 0x1f258 payload); ZSTD-compressed relocatable cubins decompress to the
//!   padded size too. `cuobjdump -xelf` extracts the exact ELF, so [`Entry::image`] cuts ELF
//!   images to their extent (end of the last section / header table).
//! - `--concat` puts several cubins of one entry (kind 0x100) in one ZSTD blob; sm_100+ cubins
//!   and PTX stay separate entries. cuobjdump lists the parts as ordinary ELF files.
//! - in linked executables cuobjdump ignores `__nv_relfatbin` (the inputs of the device link).
//! - a relocatable object whose `.nv_fatbin`/`__nv_relfatbin` changes size links and runs the
//!   toolkit's tools fine once later sections and `e_shoff` move (nothing stores the size).
//!
//! Modules: [`fatbin`] (containers and entries, compression), [`host`] (host ELF sections and
//! re-layout), [`archive`] (`ar`), [`error`]. Writing an unedited artifact gives back the input
//! bytes exactly. No input makes any of it panic: every size is checked before it is used.

pub(crate) mod archive;
mod bytes;
pub(crate) mod error;
pub(crate) mod fatbin;
pub(crate) mod host;

pub use archive::{Archive, Member, MemberData};
pub use error::ContainerError;
pub use fatbin::{Compression, ConcatPart, Container, Entry, EntryKind, Fatbin, Piece};
pub use host::{FatbinSection, HostElf, Section};

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

/// What a file is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FileKind {
    /// A bare fatbin (`nvcc -fatbin`).
    Fatbin,
    /// A device ELF (`e_machine` EM_CUDA = 190).
    Cubin,
    /// Any other ELF: host object, executable, shared library.
    Host,
    /// An `ar` archive.
    Archive,
}

/// Tell the kind of a file from its first bytes; `None` when it is none of the four.
pub(crate) fn sniff(bytes: &[u8]) -> Option<FileKind> {
    if bytes::u32_le(bytes, 0) == Some(fatbin::FATBIN_MAGIC) {
        Some(FileKind::Fatbin)
    } else if bytes.starts_with(b"\x7fELF") {
        if bytes::u16_le(bytes, 18) == Some(host::EM_CUDA) && bytes.get(5) == Some(&1) {
            Some(FileKind::Cubin)
        } else {
            Some(FileKind::Host)
        }
    } else if bytes.starts_with(archive::AR_MAGIC) || bytes.starts_with(archive::THIN_MAGIC) {
        Some(FileKind::Archive)
    } else {
        None
    }
}

/// A file that carries device code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    Fatbin(Fatbin),
    Cubin(Vec<u8>),
    Host(HostElf),
    Archive(Archive),
}

/// Parse a file's bytes.
pub fn read(bytes: Vec<u8>) -> Result<Artifact, ContainerError> {
    match sniff(&bytes) {
        Some(FileKind::Fatbin) => Ok(Artifact::Fatbin(
            Fatbin::parse(&bytes).map_err(|e| e.within("fatbin"))?,
        )),
        Some(FileKind::Cubin) => Ok(Artifact::Cubin(bytes)),
        Some(FileKind::Host) => Ok(Artifact::Host(HostElf::parse(bytes)?)),
        Some(FileKind::Archive) => Ok(Artifact::Archive(Archive::parse(&bytes)?)),
        None => Err(ContainerError::UnknownFormat {
            first: bytes::hex_prefix(&bytes, 8),
        }),
    }
}

/// Read and parse a file; errors name it (`<path>: <what>`). An archive remembers its file
/// name for image locations.
pub fn open(path: &Path) -> Result<Artifact, ContainerError> {
    let data = std::fs::read(path).map_err(|e| ContainerError::Io {
        path: path.to_path_buf(),
        what: e.to_string(),
    })?;
    let mut a = read(data).map_err(|e| e.in_file(path))?;
    if let Artifact::Archive(ar) = &mut a {
        ar.name = path
            .file_name()
            .map(|n| error::one_line(&n.to_string_lossy()));
    }
    Ok(a)
}

/// Where an image is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct ImageLocation {
    /// The archive's file name, when known (see [`open`]).
    pub(crate) archive: Option<String>,
    /// Archive member name.
    pub member: Option<String>,
    /// Host ELF section (`.nv_fatbin`, `__nv_relfatbin`).
    pub section: Option<String>,
    /// Container index in the fatbin (sequence); 0 for a bare cubin.
    pub(crate) container: usize,
    /// Entry index in the container; 0 for a bare cubin.
    pub(crate) entry: usize,
    /// Part of a `--concat` entry (those are listed part by part, read-only).
    pub part: Option<usize>,
    /// The image is a bare cubin file, not in a fatbin.
    pub(crate) bare: bool,
}

impl fmt::Display for ImageLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match (&self.archive, &self.member) {
            (Some(a), Some(m)) => parts.push(format!("{a}({m})")),
            (None, Some(m)) => parts.push(format!("member {m}")),
            _ => {}
        }
        if self.bare {
            parts.push("cubin".to_string());
        } else {
            if let Some(s) = &self.section {
                parts.push(s.clone());
            }
            parts.push(format!("container {} entry {}", self.container, self.entry));
            if let Some(p) = self.part {
                parts.push(format!("part {p}"));
            }
        }
        f.write_str(&parts.join(" "))
    }
}

/// One device image of an artifact.
#[derive(Debug, Clone)]
pub struct ImageRef<'a> {
    pub location: ImageLocation,
    pub kind: EntryKind,
    /// SM number (90 for sm_90 / compute_90).
    pub arch: u32,
    pub compression: Compression,
    /// Bytes the payload takes in the file (its `payload_size`; the file size for a cubin).
    pub(crate) stored_size: u64,
    /// The decompressed image (uncompressed payloads include their padding).
    pub image: Cow<'a, [u8]>,
}

/// The SM number of a cubin: `e_flags` bits 8..16 (ABI v8 and later), else bits 0..8.
pub fn cubin_arch(cubin: &[u8]) -> u32 {
    let flags = bytes::u32_le(cubin, 48).unwrap_or(0);
    match (flags >> 8) & 0xff {
        0 => flags & 0xff,
        a => a,
    }
}

fn fatbin_images<'a>(
    fb: &'a Fatbin,
    base: &ImageLocation,
    out: &mut Vec<ImageRef<'a>>,
) -> Result<(), ContainerError> {
    for (c, i, e) in fb.entries() {
        let location = ImageLocation {
            container: c,
            entry: i,
            ..base.clone()
        };
        let at = location.to_string();
        if e.kind() == EntryKind::Concat {
            let compression = e.compression().map_err(|err| err.within(&at))?;
            for (p, part) in e
                .concat_parts()
                .map_err(|err| err.within(&at))?
                .iter()
                .enumerate()
            {
                let location = ImageLocation {
                    part: Some(p),
                    ..location.clone()
                };
                let at = location.to_string();
                out.push(ImageRef {
                    kind: part.kind,
                    arch: part.arch,
                    compression,
                    stored_size: part.size,
                    image: Cow::Owned(e.concat_part_image(part).map_err(|err| err.within(&at))?),
                    location,
                });
            }
            continue;
        }
        out.push(ImageRef {
            kind: e.kind(),
            arch: e.arch(),
            compression: e.compression().map_err(|err| err.within(&at))?,
            stored_size: e.payload_size(),
            image: e.image().map_err(|err| err.within(&at))?,
            location,
        });
    }
    Ok(())
}

fn host_images<'a>(
    h: &'a HostElf,
    base: &ImageLocation,
    out: &mut Vec<ImageRef<'a>>,
) -> Result<(), ContainerError> {
    for fs in &h.fatbins {
        let loc = ImageLocation {
            section: Some(fs.name.clone()),
            ..base.clone()
        };
        fatbin_images(&fs.fatbin, &loc, out)?;
    }
    Ok(())
}

type EditFn<'f> = dyn FnMut(&ImageLocation, &[u8]) -> Result<Option<Vec<u8>>, ContainerError> + 'f;

fn edit_fatbin(
    fb: &mut Fatbin,
    base: &ImageLocation,
    f: &mut EditFn<'_>,
) -> Result<usize, ContainerError> {
    let mut n = 0;
    for (c, cont) in fb.containers_mut().enumerate() {
        for (i, e) in cont.entries.iter_mut().enumerate() {
            if e.kind() != EntryKind::Elf {
                continue;
            }
            let location = ImageLocation {
                container: c,
                entry: i,
                ..base.clone()
            };
            let at = location.to_string();
            let new = {
                let image = e.image().map_err(|err| err.within(&at))?;
                f(&location, &image)?
            };
            if let Some(new) = new {
                e.set_image(new).map_err(|err| err.within(&at))?;
                n += 1;
            }
        }
    }
    Ok(n)
}

fn edit_host(
    h: &mut HostElf,
    base: &ImageLocation,
    f: &mut EditFn<'_>,
) -> Result<usize, ContainerError> {
    let mut n = 0;
    for fs in &mut h.fatbins {
        let loc = ImageLocation {
            section: Some(fs.name.clone()),
            ..base.clone()
        };
        n += edit_fatbin(&mut fs.fatbin, &loc, f)?;
    }
    let at = match (&base.archive, &base.member) {
        (Some(a), Some(m)) => format!("{a}({m})"),
        (None, Some(m)) => format!("member {m}"),
        _ => String::new(),
    };
    h.check_writable().map_err(|e| e.within(&at))?;
    Ok(n)
}

impl Artifact {
    /// "fatbin", "cubin", "host object", "executable" or "archive".
    pub fn kind_name(&self) -> &'static str {
        match self {
            Artifact::Fatbin(_) => "fatbin",
            Artifact::Cubin(_) => "cubin",
            Artifact::Host(h) if h.is_relocatable() => "host object",
            Artifact::Host(_) => "executable",
            Artifact::Archive(_) => "archive",
        }
    }

    /// The file's bytes: the input exactly when nothing was edited.
    pub fn write(&self) -> Result<Vec<u8>, ContainerError> {
        match self {
            Artifact::Fatbin(fb) => Ok(fb.write()),
            Artifact::Cubin(c) => Ok(c.clone()),
            Artifact::Host(h) => h.write(),
            Artifact::Archive(a) => a.write(),
        }
    }

    /// Every device image in file order, with a human-readable location
    /// ("librdc.a(rdc_lib.o) __nv_relfatbin container 0 entry 2"). A `--concat` entry gives
    /// one image per part ("container 0 entry 0 part 1"), with the part's kind and arch.
    pub fn images(&self) -> Result<Vec<ImageRef<'_>>, ContainerError> {
        let mut out = Vec::new();
        match self {
            Artifact::Fatbin(fb) => fatbin_images(fb, &ImageLocation::default(), &mut out)
                .map_err(|e| e.within("fatbin"))?,
            Artifact::Cubin(c) => out.push(ImageRef {
                location: ImageLocation {
                    bare: true,
                    ..ImageLocation::default()
                },
                kind: EntryKind::Elf,
                arch: cubin_arch(c),
                compression: Compression::None,
                stored_size: c.len() as u64,
                image: Cow::Borrowed(c),
            }),
            Artifact::Host(h) => host_images(h, &ImageLocation::default(), &mut out)?,
            Artifact::Archive(a) => {
                for m in &a.members {
                    if let MemberData::Host(h) = &m.data {
                        let loc = ImageLocation {
                            archive: a.name.clone(),
                            member: Some(error::one_line(&m.name)),
                            ..ImageLocation::default()
                        };
                        host_images(h, &loc, &mut out)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Call `f` on every ELF (cubin) image; when it returns `Some(new)`, the image is replaced
    /// (stored uncompressed) and every enclosing size is fixed when the artifact is written.
    /// Returns how many images were replaced. PTX entries and the parts of `--concat` entries
    /// (read-only) are not visited.
    ///
    /// A replacement that makes a fatbin section of a linked executable larger is refused with
    /// [`ContainerError::ExecutableGrow`] (the artifact keeps the edits made until then).
    pub fn edit_cubins(
        &mut self,
        mut f: impl FnMut(&ImageLocation, &[u8]) -> Result<Option<Vec<u8>>, ContainerError>,
    ) -> Result<usize, ContainerError> {
        let f: &mut EditFn<'_> = &mut f;
        match self {
            Artifact::Fatbin(fb) => {
                edit_fatbin(fb, &ImageLocation::default(), f).map_err(|e| e.within("fatbin"))
            }
            Artifact::Cubin(c) => {
                let location = ImageLocation {
                    bare: true,
                    ..ImageLocation::default()
                };
                match f(&location, c)? {
                    Some(new) => {
                        *c = new;
                        Ok(1)
                    }
                    None => Ok(0),
                }
            }
            Artifact::Host(h) => edit_host(h, &ImageLocation::default(), f),
            Artifact::Archive(a) => {
                let mut n = 0;
                for m in &mut a.members {
                    if let MemberData::Host(h) = &mut m.data {
                        let loc = ImageLocation {
                            archive: a.name.clone(),
                            member: Some(error::one_line(&m.name)),
                            ..ImageLocation::default()
                        };
                        n += edit_host(h, &loc, f)?;
                    }
                }
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_kinds() {
        assert_eq!(
            sniff(&[0x50, 0xed, 0x55, 0xba, 1, 0]),
            Some(FileKind::Fatbin)
        );
        let mut cubin = b"\x7fELF\x02\x01".to_vec();
        cubin.resize(20, 0);
        cubin[18] = 190;
        assert_eq!(sniff(&cubin), Some(FileKind::Cubin));
        cubin[18] = 62;
        assert_eq!(sniff(&cubin), Some(FileKind::Host));
        assert_eq!(sniff(b"!<arch>\nxx"), Some(FileKind::Archive));
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"hello"), None);
    }

    #[test]
    fn locations_display() {
        let l = ImageLocation {
            archive: Some("librdc.a".into()),
            member: Some("rdc_lib.o".into()),
            section: Some(".nv_fatbin".into()),
            container: 0,
            entry: 2,
            part: None,
            bare: false,
        };
        assert_eq!(
            l.to_string(),
            "librdc.a(rdc_lib.o) .nv_fatbin container 0 entry 2"
        );
        let c = ImageLocation {
            bare: true,
            ..ImageLocation::default()
        };
        assert_eq!(c.to_string(), "cubin");
        assert_eq!(ImageLocation::default().to_string(), "container 0 entry 0");
    }

    #[test]
    fn unknown_and_empty_inputs_are_errors() {
        let e = read(Vec::new()).unwrap_err();
        assert!(matches!(e, ContainerError::UnknownFormat { .. }));
        assert!(!e.to_string().contains('\n'));
        assert!(read(b"\x7fELF".to_vec()).is_err());
        let e = open(Path::new("/nonexistent/x.o")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.o: "), "{e}");
    }
}

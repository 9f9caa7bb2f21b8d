//! Fatbin containers (docs/sass.md §Fatbin): one or several containers back to back,
//! with zero padding between them; each container a 16-byte header and entries (PTX, ELF,
//! `--concat` bundles), payloads stored raw, ZSTD (flag 0x8000) or LZ4 (flag 0x2000).
//!
//! Every byte is kept: headers and payloads are stored as read, fields are read from them and
//! only the fields an edit changes are rewritten, so writing an unedited fatbin gives back the
//! input byte for byte (compressed payloads included: nvcc's ZSTD output cannot be reproduced
//! by re-compressing).

use super::bytes::{align_up, put, slice, u16_le, u32_le, u64_le};
use super::error::ContainerError;
use std::borrow::Cow;

/// Container magic, `50 ed 55 ba` in the file.
pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The container header nvcc writes (and the smallest one accepted).
pub(crate) const CONTAINER_HEADER_SIZE: u16 = 16;
/// The fixed part of an entry header; the rest (PTX options, the sm_100+ compat copy) is kept
/// verbatim.
pub(crate) const ENTRY_HEADER_MIN: u32 = 0x40;
/// Entry flag: payload is a raw LZ4 block.
pub(crate) const FLAG_LZ4: u64 = 0x2000;
/// Entry flag: payload is a standard ZSTD frame.
pub(crate) const FLAG_ZSTD: u64 = 0x8000;
/// Largest decompressed image accepted (a corrupt size must not make us allocate more).
pub(crate) const MAX_IMAGE_SIZE: u64 = 1 << 30;
/// Largest accepted ratio of decompressed to compressed size (plus 16 MiB of slack).
pub(crate) const MAX_RATIO: u64 = 4096;
const RATIO_SLACK: u64 = 1 << 24;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum EntryKind {
    /// PTX text (kind 1).
    Ptx,
    /// A device ELF (cubin, kind 2).
    Elf,
    /// A CUDA 13 `--concat` bundle of cubins (kind 0x100); read-only.
    Concat,
    /// A kind this layer does not know; kept verbatim.
    Other(u16),
}

impl EntryKind {
    pub(crate) fn from_raw(kind: u16) -> Self {
        match kind {
            1 => EntryKind::Ptx,
            2 => EntryKind::Elf,
            0x100 => EntryKind::Concat,
            k => EntryKind::Other(k),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Ptx => "ptx",
            EntryKind::Elf => "elf",
            EntryKind::Concat => "concat",
            EntryKind::Other(_) => "unknown",
        }
    }
}

/// How a payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Compression {
    None,
    Zstd,
    Lz4,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
        }
    }
}

/// One entry: its header (`header_size` bytes) and stored payload (`payload_size` bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    header: Vec<u8>,
    payload: Vec<u8>,
}

// Entry header field offsets (§2.2).
const E_KIND: u64 = 0x00;
const E_HEADER_SIZE: u64 = 0x04;
const E_PAYLOAD_SIZE: u64 = 0x08;
const E_COMPRESSED_SIZE: u64 = 0x10;
const E_ARCH: u64 = 0x1c;
const E_FLAGS: u64 = 0x28;
const E_DECOMPRESSED_SIZE: u64 = 0x38;

impl Entry {
    /// Read the entry at `data[off..]`, which must end by `end`. Error locations are relative
    /// to the entry (the caller adds container and entry index).
    fn parse(data: &[u8], off: u64, end: u64) -> Result<Entry, ContainerError> {
        let avail = end.saturating_sub(off);
        if avail < u64::from(ENTRY_HEADER_MIN) {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "entry header truncated (offset {off:#x}, {avail:#x} bytes left, header needs at least {ENTRY_HEADER_MIN:#x})"
                ),
            ));
        }
        let hs = u32_le(data, off + E_HEADER_SIZE).unwrap_or(0);
        let ps = u64_le(data, off + E_PAYLOAD_SIZE).unwrap_or(0);
        if hs < ENTRY_HEADER_MIN || u64::from(hs) > avail {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "bad entry header size {hs:#x} (offset {off:#x}, {avail:#x} bytes left in the container)"
                ),
            ));
        }
        let payload_at = off + u64::from(hs);
        if ps > end - payload_at {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "payload runs past the end of the container (offset {payload_at:#x}, size {ps:#x}, container end {end:#x})"
                ),
            ));
        }
        let header = slice(data, off, u64::from(hs)).unwrap_or_default().to_vec();
        let payload = slice(data, payload_at, ps).unwrap_or_default().to_vec();
        Ok(Entry { header, payload })
    }

    /// Write header and payload.
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.payload);
    }

    fn u16(&self, off: u64) -> u16 {
        u16_le(&self.header, off).unwrap_or(0)
    }
    fn u32(&self, off: u64) -> u32 {
        u32_le(&self.header, off).unwrap_or(0)
    }
    fn u64(&self, off: u64) -> u64 {
        u64_le(&self.header, off).unwrap_or(0)
    }

    pub(crate) fn kind_raw(&self) -> u16 {
        self.u16(E_KIND)
    }
    pub fn kind(&self) -> EntryKind {
        EntryKind::from_raw(self.kind_raw())
    }
    /// Bytes reserved for the payload (padded).
    pub fn payload_size(&self) -> u64 {
        self.u64(E_PAYLOAD_SIZE)
    }
    /// Exact compressed byte count (0 when stored raw).
    pub fn compressed_size(&self) -> u32 {
        self.u32(E_COMPRESSED_SIZE)
    }
    /// Size after decompression (0 when stored raw).
    pub fn decompressed_size(&self) -> u64 {
        self.u64(E_DECOMPRESSED_SIZE)
    }
    /// SM number: 90 for sm_90 (or compute_90 for PTX).
    pub fn arch(&self) -> u32 {
        self.u32(E_ARCH)
    }
    pub(crate) fn flags(&self) -> u64 {
        self.u64(E_FLAGS)
    }
    /// The payload as stored (compressed or not, padding included).
    #[cfg(test)]
    fn stored_payload(&self) -> &[u8] {
        &self.payload
    }

    /// How the payload is stored (both compression flags at once is an error).
    pub fn compression(&self) -> Result<Compression, ContainerError> {
        let f = self.flags();
        match (f & FLAG_ZSTD != 0, f & FLAG_LZ4 != 0) {
            (false, false) => Ok(Compression::None),
            (true, false) => Ok(Compression::Zstd),
            (false, true) => Ok(Compression::Lz4),
            (true, true) => Err(ContainerError::malformed(
                "",
                format!("both the ZSTD and the LZ4 flag are set (flags {f:#x})"),
            )),
        }
    }

    /// The image: the payload, decompressed, and for ELF entries cut to the ELF's own extent
    /// (the end of its last section or header table), which drops the payload padding: nvcc
    /// pads payloads (and, for some compressed cubins, the decompressed data) to 8 bytes, and
    /// `cuobjdump -xelf` extracts the exact ELF. PTX keeps its NUL padding.
    pub fn image(&self) -> Result<Cow<'_, [u8]>, ContainerError> {
        let data = self.decompressed()?;
        if self.kind() != EntryKind::Elf {
            return Ok(data);
        }
        let Some(extent) = elf_extent(&data).filter(|&e| e < data.len() as u64) else {
            return Ok(data);
        };
        Ok(match data {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..extent as usize]),
            Cow::Owned(mut v) => {
                v.truncate(extent as usize);
                Cow::Owned(v)
            }
        })
    }

    /// The payload, decompressed (`decompressed_size` bytes), or as stored when raw; padding
    /// included.
    pub fn decompressed(&self) -> Result<Cow<'_, [u8]>, ContainerError> {
        let compression = self.compression()?;
        if compression == Compression::None {
            return Ok(Cow::Borrowed(&self.payload));
        }
        let cs = u64::from(self.compressed_size());
        let ds = self.decompressed_size();
        let ps = self.payload.len() as u64;
        let bad = |what: String| ContainerError::Decompress {
            at: String::new(),
            what,
        };
        if cs == 0 || cs > ps {
            return Err(bad(format!(
                "compressed size {cs:#x} is zero or larger than the payload ({ps:#x})"
            )));
        }
        let limit = cs
            .saturating_mul(MAX_RATIO)
            .saturating_add(RATIO_SLACK)
            .min(MAX_IMAGE_SIZE);
        if ds == 0 || ds > limit {
            return Err(bad(format!(
                "implausible decompressed size {ds:#x} for {cs:#x} compressed bytes (limit {limit:#x})"
            )));
        }
        let input = slice(&self.payload, 0, cs).unwrap_or_default();
        let cap = usize::try_from(ds).map_err(|_| bad(format!("size {ds:#x} too large")))?;
        let out = if compression == Compression::Zstd {
            unzstd(input, cap).map_err(|e| bad(format!("zstd ({cs:#x} bytes -> {ds:#x}): {e}")))?
        } else {
            lz4_flex::block::decompress(input, cap)
                .map_err(|e| bad(format!("lz4 ({cs:#x} bytes -> {ds:#x}): {e}")))?
        };
        if out.len() as u64 != ds {
            return Err(bad(format!(
                "{} gave {:#x} bytes, the header says {ds:#x}",
                compression.name(),
                out.len()
            )));
        }
        Ok(Cow::Owned(out))
    }

    /// The parts of a `--concat` entry (kind 0x100): the extra header holds `u32 count`,
    /// `u32 bytes`, then `count` 64-byte sub-headers laid out like an entry header, where
    /// +0x04 is the part's offset into the decompressed blob and +0x08 its size.
    pub fn concat_parts(&self) -> Result<Vec<ConcatPart>, ContainerError> {
        if self.kind() != EntryKind::Concat {
            return Ok(Vec::new());
        }
        let count = u32_le(&self.header, 0x40).unwrap_or(0);
        let avail = self.header.len().saturating_sub(0x48) as u64 / 0x40;
        if u64::from(count) > avail {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "concat entry lists {count} parts, its header ({:#x} bytes) holds {avail}",
                    self.header.len()
                ),
            ));
        }
        Ok((0..u64::from(count))
            .map(|i| {
                let h = 0x48 + i * 0x40;
                let f32 = |o: u64| u32_le(&self.header, h + o).unwrap_or(0);
                ConcatPart {
                    kind: EntryKind::from_raw(u16_le(&self.header, h).unwrap_or(0)),
                    offset: u64::from(f32(E_HEADER_SIZE)),
                    size: u64_le(&self.header, h + E_PAYLOAD_SIZE).unwrap_or(0),
                    arch: f32(E_ARCH),
                    flags: u64_le(&self.header, h + E_FLAGS).unwrap_or(0),
                }
            })
            .collect())
    }

    /// The image of one `--concat` part (cut to its ELF extent, as [`Entry::image`]).
    pub fn concat_part_image(&self, part: &ConcatPart) -> Result<Vec<u8>, ContainerError> {
        let blob = self.decompressed()?;
        let bytes = slice(&blob, part.offset, part.size).ok_or_else(|| {
            ContainerError::malformed(
                "",
                format!(
                    "concat part (offset {:#x}, size {:#x}) runs past the end of the blob ({:#x})",
                    part.offset,
                    part.size,
                    blob.len()
                ),
            )
        })?;
        let end = match part.kind {
            EntryKind::Elf => elf_extent(bytes)
                .filter(|&e| e < part.size)
                .unwrap_or(part.size),
            _ => part.size,
        };
        Ok(bytes[..end as usize].to_vec())
    }

    /// Replace the image. It is stored uncompressed: the compression flags are cleared, the
    /// compressed and decompressed sizes set to 0, the payload padded with zeros to 8 bytes (as
    /// nvcc pads uncompressed cubins, e.g. 0x1f252 → 0x1f258; PTX keeps at least one NUL) and
    /// `payload_size` set. Every other header byte (the
    /// sm_100+ compat copy included) is kept. `--concat` and unknown entries cannot be edited.
    pub fn set_image(&mut self, image: Vec<u8>) -> Result<(), ContainerError> {
        let kind = self.kind();
        let align = match kind {
            EntryKind::Elf | EntryKind::Ptx => 8,
            EntryKind::Concat | EntryKind::Other(_) => {
                return Err(ContainerError::unsupported(
                    "",
                    format!("replacing the image of a {} entry", kind.name()),
                ));
            }
        };
        let mut payload = image;
        let mut len = payload.len() as u64;
        if kind == EntryKind::Ptx && payload.last() != Some(&0) {
            len = len.saturating_add(1);
        }
        let padded = align_up(len, align)
            .filter(|&p| p <= MAX_IMAGE_SIZE)
            .ok_or_else(|| {
                ContainerError::unsupported("", format!("an image of {len:#x} bytes"))
            })?;
        payload.resize(padded as usize, 0);
        let flags = self.flags() & !(FLAG_LZ4 | FLAG_ZSTD);
        put(&mut self.header, E_FLAGS, &flags.to_le_bytes());
        put(&mut self.header, E_COMPRESSED_SIZE, &0u32.to_le_bytes());
        put(&mut self.header, E_DECOMPRESSED_SIZE, &0u64.to_le_bytes());
        put(&mut self.header, E_PAYLOAD_SIZE, &padded.to_le_bytes());
        self.payload = payload;
        Ok(())
    }
}

/// Bytes a 64-bit little-endian ELF image covers: the end of its ELF header, section and
/// program header tables, and of every section and segment stored in the file. `None` when
/// `b` is not such an ELF.
pub(crate) fn elf_extent(b: &[u8]) -> Option<u64> {
    if !b.starts_with(b"\x7fELF") || b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return None;
    }
    let phoff = u64_le(b, 0x20)?;
    let shoff = u64_le(b, 0x28)?;
    let phentsize = u64::from(u16_le(b, 0x36)?);
    let phnum = u64::from(u16_le(b, 0x38)?);
    let shentsize = u64::from(u16_le(b, 0x3a)?);
    let shnum = u64::from(u16_le(b, 0x3c)?);
    // Every sum checked: a damaged header's offsets may lie anywhere in u64 (the fatbin
    // fuzz target found a field offset past it).
    let end = |off: u64, size: u64| off.checked_add(size);
    let u64_at = |h: u64, field: u64| u64_le(b, h.checked_add(field)?);
    let mut extent = 64u64;
    if phoff != 0 {
        extent = extent.max(end(phoff, phentsize.checked_mul(phnum)?)?);
        for i in 0..phnum {
            let h = phoff + i * phentsize;
            extent = extent.max(end(u64_at(h, 8)?, u64_at(h, 0x20)?)?);
        }
    }
    if shoff != 0 {
        extent = extent.max(end(shoff, shentsize.checked_mul(shnum)?)?);
        for i in 0..shnum {
            let h = shoff + i * shentsize;
            if u32_le(b, h.checked_add(4)?)? != 8 {
                extent = extent.max(end(u64_at(h, 0x18)?, u64_at(h, 0x20)?)?);
            }
        }
    }
    Some(extent)
}

/// One part of a `--concat` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcatPart {
    pub(crate) kind: EntryKind,
    pub arch: u32,
    pub(crate) flags: u64,
    /// Offset into the decompressed blob.
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

/// An image's zstd frames decoded into at most `cap` bytes (more is an error, as with lz4's
/// block). Pure Rust: the C library's build was a sixth of a cold test build's CPU.
fn unzstd(
    input: &[u8],
    cap: usize,
) -> Result<Vec<u8>, ruzstd::decoding::errors::FrameDecoderError> {
    let mut out = Vec::with_capacity(cap);
    ruzstd::decoding::FrameDecoder::new().decode_all_to_vec(input, &mut out)?;
    Ok(out)
}

/// One container: header (kept verbatim, `fat_size` recomputed on write) and entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    header: Vec<u8>,
    pub entries: Vec<Entry>,
}

impl Container {
    /// Σ (entry header size + payload size), what `fat_size` says after a write.
    pub(crate) fn fat_size(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.header.len() as u64 + e.payload.len() as u64)
            .sum()
    }
    /// Bytes this container takes when written.
    pub(crate) fn written_len(&self) -> u64 {
        self.header.len() as u64 + self.fat_size()
    }

    /// Read a container at `data[off..]`; returns it and its end offset.
    fn parse(data: &[u8], off: u64) -> Result<(Container, u64), ContainerError> {
        let len = data.len() as u64;
        let magic = u32_le(data, off);
        if magic != Some(FATBIN_MAGIC) {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "no fatbin magic at offset {off:#x} (found {})",
                    match magic {
                        Some(m) => format!("{m:#010x}"),
                        None => "end of data".into(),
                    }
                ),
            ));
        }
        let (Some(hs), Some(fat)) = (u16_le(data, off + 6), u64_le(data, off + 8)) else {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "container header truncated (offset {off:#x}, {:#x} bytes left)",
                    len - off
                ),
            ));
        };
        if hs < CONTAINER_HEADER_SIZE || u64::from(hs) > len - off {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "bad container header size {hs:#x} (offset {off:#x}, {:#x} bytes left)",
                    len - off
                ),
            ));
        }
        let body = off + u64::from(hs);
        if fat > len - body {
            return Err(ContainerError::malformed(
                "",
                format!(
                    "container runs past the end of the data (offset {off:#x}, fat size {fat:#x}, {:#x} bytes after the header)",
                    len - body
                ),
            ));
        }
        let end = body + fat;
        let header = slice(data, off, u64::from(hs)).unwrap_or_default().to_vec();
        let mut entries = Vec::new();
        let mut at = body;
        while at < end {
            let e = Entry::parse(data, at, end)
                .map_err(|e| e.within(&format!("entry {}", entries.len())))?;
            at += e.header.len() as u64 + e.payload.len() as u64;
            entries.push(e);
        }
        Ok((Container { header, entries }, end))
    }

    fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.header);
        put(&mut out[start..], 8, &self.fat_size().to_le_bytes());
        for e in &self.entries {
            e.write_to(out);
        }
    }
}

/// A part of a fatbin byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Container(Container),
    /// Zero bytes between or after containers (kept so that writing is the identity).
    Padding(u64),
}

/// A sequence of containers, possibly with zero padding between them: a `.fatbin` file, or the
/// contents of `.nv_fatbin`/`__nv_relfatbin`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fatbin {
    pub(crate) pieces: Vec<Piece>,
}

impl Fatbin {
    /// Parse all of `data`: containers and zero padding. Any other byte is an error.
    pub fn parse(data: &[u8]) -> Result<Fatbin, ContainerError> {
        let len = data.len() as u64;
        let mut pieces = Vec::new();
        let mut at = 0u64;
        let mut index = 0usize;
        while at < len {
            let rest = data.get(at as usize..).unwrap_or_default();
            let zeros = rest.iter().take_while(|&&b| b == 0).count() as u64;
            if zeros > 0 {
                pieces.push(Piece::Padding(zeros));
                at += zeros;
                continue;
            }
            let (c, end) =
                Container::parse(data, at).map_err(|e| e.within(&format!("container {index}")))?;
            pieces.push(Piece::Container(c));
            index += 1;
            at = end;
        }
        Ok(Fatbin { pieces })
    }

    /// Write it back: the input bytes, unless an entry was edited (then with fixed sizes).
    pub fn write(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.written_len() as usize);
        for p in &self.pieces {
            match p {
                Piece::Container(c) => c.write_to(&mut out),
                Piece::Padding(n) => out.resize(out.len() + *n as usize, 0),
            }
        }
        out
    }

    /// Bytes [`Fatbin::write`] produces.
    pub fn written_len(&self) -> u64 {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Container(c) => c.written_len(),
                Piece::Padding(n) => *n,
            })
            .sum()
    }

    pub fn containers(&self) -> impl Iterator<Item = &Container> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Container(c) => Some(c),
            Piece::Padding(_) => None,
        })
    }

    pub fn containers_mut(&mut self) -> impl Iterator<Item = &mut Container> {
        self.pieces.iter_mut().filter_map(|p| match p {
            Piece::Container(c) => Some(c),
            Piece::Padding(_) => None,
        })
    }

    /// Every entry with its (container, entry) index.
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize, &Entry)> {
        self.containers()
            .enumerate()
            .flat_map(|(c, cont)| cont.entries.iter().enumerate().map(move |(i, e)| (c, i, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_header(kind: u16, hs: u32, ps: u64, flags: u64, cs: u32, ds: u64) -> Vec<u8> {
        let mut h = vec![0u8; hs as usize];
        put(&mut h, 0, &kind.to_le_bytes());
        put(&mut h, 2, &0x0101u16.to_le_bytes());
        put(&mut h, 4, &hs.to_le_bytes());
        put(&mut h, 8, &ps.to_le_bytes());
        put(&mut h, 0x10, &cs.to_le_bytes());
        put(&mut h, 0x1c, &90u32.to_le_bytes());
        put(&mut h, 0x28, &flags.to_le_bytes());
        put(&mut h, 0x38, &ds.to_le_bytes());
        h
    }

    fn container(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let fat: u64 = entries
            .iter()
            .map(|(h, p)| (h.len() + p.len()) as u64)
            .sum();
        let mut out = Vec::new();
        out.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&fat.to_le_bytes());
        for (h, p) in entries {
            out.extend_from_slice(h);
            out.extend_from_slice(p);
        }
        out
    }

    #[test]
    fn round_trip_with_padding_and_two_containers() {
        let e1 = (entry_header(2, 0x40, 16, 0x11, 0, 0), vec![7u8; 16]);
        let e2 = (
            entry_header(1, 0x50, 8, 0x11, 0, 0),
            b"ptx\0\0\0\0\0".to_vec(),
        );
        let mut data = container(&[e1.clone(), e2]);
        data.extend_from_slice(&[0; 8]);
        data.extend_from_slice(&container(&[e1]));
        data.extend_from_slice(&[0; 3]);
        let fb = Fatbin::parse(&data).unwrap();
        assert_eq!(fb.containers().count(), 2);
        assert_eq!(fb.entries().count(), 3);
        assert_eq!(fb.write(), data);
        let (_, _, e) = fb.entries().nth(1).unwrap();
        assert_eq!(e.kind(), EntryKind::Ptx);
        assert_eq!(e.arch(), 90);
        assert_eq!(&*e.image().unwrap(), b"ptx\0\0\0\0\0");
    }

    #[test]
    fn compressed_entries_decode_and_set_image_stores_raw() {
        let image: Vec<u8> = (0..4000u32).map(|i| (i % 7) as u8).collect();
        let z = ruzstd::encoding::compress_to_vec(
            &image[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let zp = align_up(z.len() as u64, 8).unwrap();
        let mut zpay = z.clone();
        zpay.resize(zp as usize, 0);
        let l = lz4_flex::block::compress(&image);
        let lp = align_up(l.len() as u64, 8).unwrap();
        let mut lpay = l.clone();
        lpay.resize(lp as usize, 0);
        let data = container(&[
            (
                entry_header(2, 0x40, zp, FLAG_ZSTD | 1, z.len() as u32, 4000),
                zpay,
            ),
            (
                entry_header(2, 0x48, lp, FLAG_LZ4 | 1, l.len() as u32, 4000),
                lpay,
            ),
        ]);
        let mut fb = Fatbin::parse(&data).unwrap();
        assert_eq!(fb.write(), data);
        for (_, _, e) in fb.entries() {
            assert_eq!(&*e.image().unwrap(), &image[..]);
        }
        let c = fb.containers_mut().next().unwrap();
        c.entries[0].set_image(image.clone()).unwrap();
        let e = &c.entries[0];
        assert_eq!(e.compression().unwrap(), Compression::None);
        assert_eq!(e.flags(), 1);
        assert_eq!(e.payload_size(), 4000);
        assert_eq!((e.compressed_size(), e.decompressed_size()), (0, 0));
        let out = fb.write();
        let again = Fatbin::parse(&out).unwrap();
        assert_eq!(u64_le(&out, 8), Some(0x40 + 4000 + 0x48 + lp));
        assert_eq!(
            &*again.entries().next().unwrap().2.image().unwrap(),
            &image[..]
        );
    }

    #[test]
    fn errors_name_container_entry_and_offsets() {
        let e1 = (entry_header(2, 0x40, 0x2000, 0, 0, 0), vec![0u8; 16]);
        let mut data = container(&[e1]);
        // fat_size says 0x2040 but only 0x50 bytes follow the header.
        put(&mut data, 8, &0x2040u64.to_le_bytes());
        let err = Fatbin::parse(&data).unwrap_err().to_string();
        assert!(err.starts_with("container 0: container runs past"), "{err}");
        put(&mut data, 8, &0x50u64.to_le_bytes());
        let err = Fatbin::parse(&data).unwrap_err().to_string();
        assert!(
            err.starts_with("container 0 entry 0: payload runs past the end of the container (offset 0x50, size 0x2000"),
            "{err}"
        );
        // Header size below 0x40.
        put(&mut data, 16 + 4, &0x20u32.to_le_bytes());
        assert!(Fatbin::parse(&data).is_err());
        // Not a container.
        assert!(Fatbin::parse(b"\x01\x02").is_err());
        // Truncated headers.
        assert!(Fatbin::parse(&FATBIN_MAGIC.to_le_bytes()).is_err());
        assert!(Fatbin::parse(&data[..20]).is_err());
        // Empty and all-zero data are fine (nothing, or padding only).
        assert_eq!(Fatbin::parse(&[]).unwrap().pieces.len(), 0);
        assert_eq!(Fatbin::parse(&[0; 5]).unwrap().write(), vec![0; 5]);
    }

    #[test]
    fn corrupt_compressed_sizes_are_errors_not_allocations() {
        let huge = entry_header(2, 0x40, 8, FLAG_ZSTD, 8, u64::MAX);
        let data = container(&[(huge, vec![0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0])]);
        let fb = Fatbin::parse(&data).unwrap();
        let e = fb.entries().next().unwrap().2;
        assert!(matches!(e.image(), Err(ContainerError::Decompress { .. })));
        let both = entry_header(2, 0x40, 8, FLAG_ZSTD | FLAG_LZ4, 8, 8);
        let data = container(&[(both, vec![0; 8])]);
        let fb = Fatbin::parse(&data).unwrap();
        assert!(fb.entries().next().unwrap().2.image().is_err());
        let cs_too_big = entry_header(2, 0x40, 8, FLAG_LZ4, 9, 8);
        let data = container(&[(cs_too_big, vec![0; 8])]);
        let fb = Fatbin::parse(&data).unwrap();
        assert!(fb.entries().next().unwrap().2.image().is_err());
    }

    #[test]
    fn concat_entries_are_read_only() {
        let h = entry_header(0x100, 0x40, 0, 0, 0, 0);
        let data = container(&[(h, vec![])]);
        let mut fb = Fatbin::parse(&data).unwrap();
        let c = fb.containers_mut().next().unwrap();
        assert_eq!(c.entries[0].kind(), EntryKind::Concat);
        assert!(matches!(
            c.entries[0].set_image(vec![1]),
            Err(ContainerError::Unsupported { .. })
        ));
    }

    #[test]
    fn damaged_zstd_is_an_error_never_a_panic_nor_more_than_the_cap() {
        let image: Vec<u8> = (0..3000u32).map(|i| (i % 13) as u8).collect();
        let z = ruzstd::encoding::compress_to_vec(
            &image[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(unzstd(&z, image.len()).unwrap(), image);
        assert!(
            unzstd(&z, image.len() - 1).is_err(),
            "a cap below the content"
        );
        for cut in 0..z.len() {
            let _ = unzstd(&z[..cut], image.len());
        }
        for at in 0..z.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = z.clone();
                bad[at] ^= bit;
                if let Ok(out) = unzstd(&bad, image.len()) {
                    assert!(out.len() <= image.len());
                }
            }
        }
    }

    #[test]
    fn concat_parts_come_from_the_extra_header() {
        let blob: Vec<u8> = (0..48u8).collect();
        let z = ruzstd::encoding::compress_to_vec(
            &blob[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut pay = z.clone();
        pay.resize(z.len().div_ceil(8) * 8, 0);
        let mut h = entry_header(0x100, 0xc8, pay.len() as u64, FLAG_ZSTD, z.len() as u32, 48);
        put(&mut h, 0x40, &2u32.to_le_bytes());
        put(&mut h, 0x44, &0x88u32.to_le_bytes());
        for (i, (off, size, arch)) in [(0u32, 16u64, 80u32), (16, 32, 90)].iter().enumerate() {
            let at = 0x48 + 0x40 * i as u64;
            put(&mut h, at, &2u16.to_le_bytes());
            put(&mut h, at + 4, &off.to_le_bytes());
            put(&mut h, at + 8, &size.to_le_bytes());
            put(&mut h, at + 0x1c, &arch.to_le_bytes());
        }
        let data = container(&[(h.clone(), pay.clone())]);
        let fb = Fatbin::parse(&data).unwrap();
        let e = fb.entries().next().unwrap().2;
        let parts = e.concat_parts().unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[1].offset, parts[1].size, parts[1].arch),
            (16, 32, 90)
        );
        assert_eq!(e.concat_part_image(&parts[1]).unwrap(), &blob[16..]);
        // A count the header cannot hold, and a part past the blob.
        let mut bad = h.clone();
        put(&mut bad, 0x40, &3u32.to_le_bytes());
        let fb = Fatbin::parse(&container(&[(bad, pay.clone())])).unwrap();
        assert!(fb.entries().next().unwrap().2.concat_parts().is_err());
        let mut bad = h;
        put(&mut bad, 0x48 + 0x40 + 8, &33u64.to_le_bytes());
        let fb = Fatbin::parse(&container(&[(bad, pay)])).unwrap();
        let e = fb.entries().next().unwrap().2;
        let parts = e.concat_parts().unwrap();
        assert!(e.concat_part_image(&parts[1]).is_err());
    }

    #[test]
    fn elf_extent_covers_headers_and_sections() {
        assert_eq!(elf_extent(b"not an elf"), None);
        let mut elf = vec![0u8; 0x200];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        // Two section headers at 0x100; section 1 at 0x1c0, size 0x30 (ends past the table).
        put(&mut elf, 0x28, &0x100u64.to_le_bytes());
        put(&mut elf, 0x3a, &0x40u16.to_le_bytes());
        put(&mut elf, 0x3c, &2u16.to_le_bytes());
        put(&mut elf, 0x140 + 4, &1u32.to_le_bytes());
        put(&mut elf, 0x140 + 0x18, &0x1c0u64.to_le_bytes());
        put(&mut elf, 0x140 + 0x20, &0x30u64.to_le_bytes());
        assert_eq!(elf_extent(&elf), Some(0x1f0));
        // NOBITS does not count.
        put(&mut elf, 0x140 + 4, &8u32.to_le_bytes());
        assert_eq!(elf_extent(&elf), Some(0x180));
        // Truncated tables are None, not a panic.
        assert_eq!(elf_extent(&elf[..0x120]), None);
        // Tables whose fields lie past u64 (entries of size 0 at its very end) are None, not
        // an overflow (the fatbin fuzz target).
        put(&mut elf, 0x3a, &0u16.to_le_bytes());
        for (table, entries) in [(0x28, 0x3c), (0x20, 0x38)] {
            let mut e = elf.clone();
            put(&mut e, table, &(u64::MAX - 2).to_le_bytes());
            put(&mut e, entries, &1u16.to_le_bytes());
            assert_eq!(elf_extent(&e), None);
        }
    }

    #[test]
    fn ptx_set_image_keeps_a_nul() {
        let h = entry_header(1, 0x50, 8, 0, 0, 0);
        let data = container(&[(h, b"abc\0\0\0\0\0".to_vec())]);
        let mut fb = Fatbin::parse(&data).unwrap();
        let c = fb.containers_mut().next().unwrap();
        c.entries[0].set_image(b"12345678".to_vec()).unwrap();
        assert_eq!(c.entries[0].stored_payload(), b"12345678\0\0\0\0\0\0\0\0");
    }
}

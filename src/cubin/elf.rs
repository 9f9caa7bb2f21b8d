//! The raw ELF64 model: header, section headers with their bytes, program headers; parse,
//! relayout and write.
//!
//! Byte identity: every section keeps its bytes and its offset, and the bytes between the
//! things the headers describe ("gaps") are kept too. As long as no size changed, [`Elf::write`]
//! puts everything back where it was, so an unedited cubin is written back byte for byte.
//! After an edit that changes a size, [`Elf::relayout`] moves the sections that follow (each
//! keeps its alignment), the section and program header tables, and rebuilds the program
//! headers from the sections they covered.

use super::error::CubinError;
use object::LittleEndian as LE;
use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader as _};

pub(crate) const SHT_NOBITS: u32 = 8;
pub(crate) const SHT_SYMTAB: u32 = 2;
pub(crate) const SHT_REL: u32 = 9;
pub(crate) const SHT_RELA: u32 = 4;
pub(crate) const SHT_CUDA_INFO: u32 = 0x7000_0000;
pub(crate) const SHT_CUDA_CALLGRAPH: u32 = 0x7000_0001;
/// The type of a relocatable cubin's shared memory sections (`.nv.shared.*`).
pub(crate) const SHT_CUDA_SHARED: u32 = 0x7000_000a;
pub(crate) const SHF_WRITE: u64 = 0x1;
pub(crate) const SHF_ALLOC: u64 = 0x2;
pub(crate) const SHF_INFO_LINK: u64 = 0x40;
pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PF_W: u32 = 0x2;
pub(crate) const ET_REL: u16 = 1;
pub(crate) const EHDR_SIZE: usize = 64;
pub(crate) const SHDR_SIZE: usize = 64;
pub(crate) const PHDR_SIZE: usize = 56;

/// The ELF file header, every field kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfHeader {
    pub(crate) ident: [u8; 16],
    pub(crate) e_type: u16,
    pub(crate) e_machine: u16,
    pub(crate) e_version: u32,
    pub(crate) e_entry: u64,
    pub(crate) e_phoff: u64,
    pub e_shoff: u64,
    pub(crate) e_flags: u32,
    pub(crate) e_ehsize: u16,
    pub(crate) e_phentsize: u16,
    pub(crate) e_phnum: u16,
    pub(crate) e_shentsize: u16,
    pub(crate) e_shnum: u16,
    pub(crate) e_shstrndx: u16,
}

/// One section: its header fields and its bytes (empty for NOBITS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Name from `.shstrtab` (lossy UTF-8; empty when unreadable).
    pub name: String,
    pub(crate) sh_name: u32,
    pub(crate) sh_type: u32,
    pub(crate) sh_flags: u64,
    pub(crate) sh_addr: u64,
    pub sh_offset: u64,
    pub(crate) sh_size: u64,
    pub(crate) sh_link: u32,
    pub sh_info: u32,
    pub(crate) sh_addralign: u64,
    pub(crate) sh_entsize: u64,
    /// File contents; for NOBITS always empty (`sh_size` is the memory size).
    pub data: Vec<u8>,
}

impl Section {
    /// No bytes in the file: NOBITS, and the CUDA types that behave like it
    /// (0x70000007 `.nv.global` and 0x7000000a `.nv.shared.*` in ET_REL cubins, 0x70000015
    /// reserved shared memory on sm_100+).
    pub(crate) fn is_nobits(&self) -> bool {
        is_nobits_type(self.sh_type)
    }
    /// Bytes the section occupies in the file.
    pub(crate) fn file_size(&self) -> u64 {
        if self.is_nobits() {
            0
        } else {
            self.data.len() as u64
        }
    }
}

pub(crate) fn is_nobits_type(t: u32) -> bool {
    matches!(t, SHT_NOBITS | 0x7000_0007 | 0x7000_000a | 0x7000_0015)
}

/// One program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramHeader {
    pub p_type: u32,
    pub p_flags: u32,
    pub(crate) p_offset: u64,
    pub(crate) p_vaddr: u64,
    pub(crate) p_paddr: u64,
    pub(crate) p_filesz: u64,
    pub p_memsz: u64,
    pub(crate) p_align: u64,
}

/// What a program header covered when the file was read, so it can be rebuilt after a move.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Coverage {
    /// It describes the program header table itself.
    phdr_table: bool,
    /// First and last section (indices) whose file bytes lie inside, with the distance from
    /// the segment start to the first one and from the last one's end to the segment end.
    sections: Option<(usize, usize, u64, u64)>,
    /// Whether `p_memsz - p_filesz` is exactly the NOBITS layout of [`nobits_extent`].
    nobits_tracked: bool,
    /// A segment of NOBITS sections only that starts where the first of them does (ptxas's
    /// shared memory, placed after the code): it moves with them.
    nobits_start: bool,
}

/// A parsed ELF64 little-endian file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elf {
    pub header: ElfHeader,
    pub sections: Vec<Section>,
    pub phdrs: Vec<ProgramHeader>,
    /// Bytes of the input that no header, table or section describes, by offset.
    gaps: Vec<(u64, Vec<u8>)>,
    coverage: Vec<Coverage>,
    /// Original offsets of everything, for relayout.
    orig_shoff: u64,
    orig_phoff: u64,
}

fn hdr_err(what: impl Into<String>) -> CubinError {
    CubinError::Header(what.into())
}

fn align_up(v: u64, align: u64) -> Option<u64> {
    let a = align.max(1);
    v.checked_add(a - 1).map(|x| x / a * a)
}

impl Elf {
    /// Parse a 64-bit little-endian ELF file.
    pub(crate) fn parse(data: &[u8]) -> Result<Elf, CubinError> {
        let e = LE;
        if data.len() < EHDR_SIZE {
            return Err(hdr_err(format!(
                "file is {} bytes, shorter than an ELF64 header",
                data.len()
            )));
        }
        let fh = object::elf::FileHeader64::<LE>::parse(data)
            .map_err(|err| hdr_err(format!("not an ELF64 little-endian file: {err}")))?;
        let header = ElfHeader {
            ident: data[..16].try_into().map_err(|_| hdr_err("short ident"))?,
            e_type: fh.e_type(e).0,
            e_machine: fh.e_machine(e).0,
            e_version: fh.e_version(e),
            e_entry: fh.e_entry(e),
            e_phoff: fh.e_phoff(e),
            e_shoff: fh.e_shoff(e),
            e_flags: fh.e_flags(e).0,
            e_ehsize: fh.e_ehsize(e),
            e_phentsize: fh.e_phentsize(e),
            e_phnum: fh.e_phnum(e),
            e_shentsize: fh.e_shentsize(e),
            e_shnum: fh.e_shnum(e),
            e_shstrndx: fh.e_shstrndx(e).0,
        };
        if header.e_shnum == 0 && header.e_shoff != 0 {
            return Err(hdr_err("extended section numbering is not supported"));
        }
        if header.e_shstrndx == 0xffff {
            return Err(hdr_err("extended section string index is not supported"));
        }
        if header.e_shnum != 0 && header.e_shentsize as usize != SHDR_SIZE {
            return Err(hdr_err(format!(
                "e_shentsize {} is not {SHDR_SIZE}",
                header.e_shentsize
            )));
        }
        if header.e_phnum != 0 && header.e_phentsize as usize != PHDR_SIZE {
            return Err(hdr_err(format!(
                "e_phentsize {} is not {PHDR_SIZE}",
                header.e_phentsize
            )));
        }
        let shdrs = fh
            .section_headers(e, data)
            .map_err(|err| hdr_err(format!("section headers at {:#x}: {err}", header.e_shoff)))?;
        let phdrs_raw = fh
            .program_headers(e, data)
            .map_err(|err| hdr_err(format!("program headers at {:#x}: {err}", header.e_phoff)))?;

        let mut sections = Vec::with_capacity(shdrs.len());
        for (i, sh) in shdrs.iter().enumerate() {
            let sh_type = sh.sh_type(e).0;
            let sh_offset = sh.sh_offset(e);
            let sh_size = sh.sh_size(e);
            let bytes = if is_nobits_type(sh_type) || i == 0 {
                Vec::new()
            } else {
                let start = usize::try_from(sh_offset).ok();
                let end = start.and_then(|s| s.checked_add(usize::try_from(sh_size).ok()?));
                match (start, end) {
                    (Some(s), Some(end)) if end <= data.len() => data[s..end].to_vec(),
                    _ => {
                        return Err(CubinError::section(
                            i,
                            "?",
                            format!(
                                "contents at {sh_offset:#x}+{sh_size:#x} run past the end of the file ({:#x})",
                                data.len()
                            ),
                        ));
                    }
                }
            };
            sections.push(Section {
                name: String::new(),
                sh_name: sh.sh_name(e),
                sh_type,
                sh_flags: sh.sh_flags(e).0,
                sh_addr: sh.sh_addr(e),
                sh_offset,
                sh_size,
                sh_link: sh.sh_link(e),
                sh_info: sh.sh_info(e),
                sh_addralign: sh.sh_addralign(e),
                sh_entsize: sh.sh_entsize(e),
                data: bytes,
            });
        }
        // Names.
        let shstrndx = header.e_shstrndx as usize;
        if shstrndx != 0 {
            let strtab = sections
                .get(shstrndx)
                .ok_or_else(|| hdr_err(format!("e_shstrndx {shstrndx} is not a section")))?
                .data
                .clone();
            for s in &mut sections {
                s.name = cstr(&strtab, s.sh_name as usize).unwrap_or_default();
            }
        }

        let phdrs: Vec<ProgramHeader> = phdrs_raw
            .iter()
            .map(|p| ProgramHeader {
                p_type: p.p_type(e).0,
                p_flags: p.p_flags(e).0,
                p_offset: p.p_offset(e),
                p_vaddr: p.p_vaddr(e),
                p_paddr: p.p_paddr(e),
                p_filesz: p.p_filesz(e),
                p_memsz: p.p_memsz(e),
                p_align: p.p_align(e),
            })
            .collect();

        let mut elf = Elf {
            orig_shoff: header.e_shoff,
            orig_phoff: header.e_phoff,
            header,
            sections,
            phdrs,
            gaps: Vec::new(),
            coverage: Vec::new(),
        };
        elf.coverage = elf.phdrs.iter().map(|p| elf.coverage_of(p)).collect();
        elf.gaps = elf.find_gaps(data);
        Ok(elf)
    }

    fn coverage_of(&self, p: &ProgramHeader) -> Coverage {
        let phdr_table = self.header.e_phnum != 0
            && p.p_offset == self.header.e_phoff
            && p.p_filesz == self.header.e_phnum as u64 * PHDR_SIZE as u64;
        let end = p.p_offset.saturating_add(p.p_filesz);
        let mut first: Option<usize> = None;
        let mut last: Option<usize> = None;
        if !phdr_table && p.p_filesz > 0 {
            for (i, s) in self.sections.iter().enumerate().skip(1) {
                if s.file_size() == 0 {
                    continue;
                }
                let s_end = s.sh_offset.saturating_add(s.file_size());
                if s.sh_offset >= p.p_offset && s_end <= end {
                    if first.is_none_or(|f| self.sections[f].sh_offset > s.sh_offset) {
                        first = Some(i);
                    }
                    if last.is_none_or(|l| {
                        let ls = &self.sections[l];
                        ls.sh_offset.saturating_add(ls.file_size()) < s_end
                    }) {
                        last = Some(i);
                    }
                }
            }
        }
        let sections = match (first, last) {
            (Some(f), Some(l)) => {
                let fs = &self.sections[f];
                let ls = &self.sections[l];
                Some((
                    f,
                    l,
                    fs.sh_offset - p.p_offset,
                    end - ls.sh_offset.saturating_add(ls.file_size()),
                ))
            }
            _ => None,
        };
        let nobits_tracked = p.p_type == PT_LOAD
            && p.p_flags & PF_W != 0
            && self.nobits_extent(p.p_filesz) == Some(p.p_memsz);
        let nobits_start = p.p_type == PT_LOAD
            && p.p_filesz == 0
            && !phdr_table
            && self.first_nobits_offset() == Some(p.p_offset);
        Coverage {
            phdr_table,
            sections,
            nobits_tracked,
            nobits_start,
        }
    }

    /// The offset of the first allocated NOBITS section, in section order.
    fn first_nobits_offset(&self) -> Option<u64> {
        self.sections
            .iter()
            .find(|s| s.is_nobits() && s.sh_flags & SHF_ALLOC != 0)
            .map(|s| s.sh_offset)
    }

    /// The memory size of a writable segment of file size `filesz` followed by every
    /// allocated NOBITS section, laid out in section order with their alignments (what ptxas
    /// writes as `p_memsz`).
    fn nobits_extent(&self, filesz: u64) -> Option<u64> {
        let mut at = filesz;
        for s in &self.sections {
            if s.is_nobits() && s.sh_flags & SHF_ALLOC != 0 {
                at = align_up(at, s.sh_addralign)?.checked_add(s.sh_size)?;
            }
        }
        Some(at)
    }

    /// Total of `nobits_extent` minus file size.
    fn find_gaps(&self, data: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut covered: Vec<(u64, u64)> = vec![(0, EHDR_SIZE as u64)];
        covered.push((
            self.header.e_shoff,
            self.header
                .e_shoff
                .saturating_add(self.sections.len() as u64 * SHDR_SIZE as u64),
        ));
        covered.push((
            self.header.e_phoff,
            self.header
                .e_phoff
                .saturating_add(self.phdrs.len() as u64 * PHDR_SIZE as u64),
        ));
        for s in &self.sections {
            if s.file_size() > 0 {
                covered.push((s.sh_offset, s.sh_offset + s.file_size()));
            }
        }
        covered.sort();
        let mut gaps = Vec::new();
        let mut at = 0u64;
        for (start, end) in covered {
            if start > at {
                let (a, b) = (at as usize, (start as usize).min(data.len()));
                if a < b && data[a..b].iter().any(|&x| x != 0) {
                    gaps.push((at, data[a..b].to_vec()));
                } else if a < b {
                    gaps.push((at, vec![0; b - a]));
                }
            }
            at = at.max(end);
        }
        if (at as usize) < data.len() {
            gaps.push((at, data[at as usize..].to_vec()));
        }
        gaps
    }

    /// Serialise. Every section is written at its `sh_offset`, the tables at `e_shoff` /
    /// `e_phoff`, and the kept gap bytes where they were.
    pub(crate) fn write(&self) -> Result<Vec<u8>, CubinError> {
        let mut len = EHDR_SIZE as u64;
        let ext = |a: u64, b: u64| {
            a.checked_add(b)
                .ok_or_else(|| hdr_err("file size overflows"))
        };
        if !self.sections.is_empty() {
            len = len.max(ext(
                self.header.e_shoff,
                self.sections.len() as u64 * SHDR_SIZE as u64,
            )?);
        }
        if !self.phdrs.is_empty() {
            len = len.max(ext(
                self.header.e_phoff,
                self.phdrs.len() as u64 * PHDR_SIZE as u64,
            )?);
        }
        for s in &self.sections {
            if s.file_size() > 0 {
                len = len.max(ext(s.sh_offset, s.file_size())?);
            }
        }
        for (off, g) in &self.gaps {
            len = len.max(ext(*off, g.len() as u64)?);
        }
        // Everything placed comes from an input of at most this size plus edits; refuse absurd
        // layouts instead of allocating them.
        let budget: u64 = self
            .sections
            .iter()
            .map(|s| s.file_size() + 256)
            .sum::<u64>()
            + self.gaps.iter().map(|g| g.1.len() as u64).sum::<u64>()
            + (self.sections.len() * SHDR_SIZE + self.phdrs.len() * PHDR_SIZE + 4096) as u64;
        if len > budget.saturating_mul(2) {
            return Err(hdr_err(format!(
                "layout spans {len:#x} bytes for {budget:#x} bytes of contents"
            )));
        }
        let mut out = vec![0u8; len as usize];
        for (off, g) in &self.gaps {
            let o = *off as usize;
            out[o..o + g.len()].copy_from_slice(g);
        }
        for s in &self.sections {
            if s.file_size() > 0 {
                let o = s.sh_offset as usize;
                out[o..o + s.data.len()].copy_from_slice(&s.data);
            }
        }
        let h = &self.header;
        let mut eh = Vec::with_capacity(EHDR_SIZE);
        eh.extend_from_slice(&h.ident);
        eh.extend_from_slice(&h.e_type.to_le_bytes());
        eh.extend_from_slice(&h.e_machine.to_le_bytes());
        eh.extend_from_slice(&h.e_version.to_le_bytes());
        eh.extend_from_slice(&h.e_entry.to_le_bytes());
        eh.extend_from_slice(&h.e_phoff.to_le_bytes());
        eh.extend_from_slice(&h.e_shoff.to_le_bytes());
        eh.extend_from_slice(&h.e_flags.to_le_bytes());
        eh.extend_from_slice(&h.e_ehsize.to_le_bytes());
        eh.extend_from_slice(&h.e_phentsize.to_le_bytes());
        eh.extend_from_slice(&h.e_phnum.to_le_bytes());
        eh.extend_from_slice(&h.e_shentsize.to_le_bytes());
        eh.extend_from_slice(&h.e_shnum.to_le_bytes());
        eh.extend_from_slice(&h.e_shstrndx.to_le_bytes());
        out[..EHDR_SIZE].copy_from_slice(&eh);
        if !self.sections.is_empty() {
            let mut at = h.e_shoff as usize;
            for s in &self.sections {
                let mut b = Vec::with_capacity(SHDR_SIZE);
                b.extend_from_slice(&s.sh_name.to_le_bytes());
                b.extend_from_slice(&s.sh_type.to_le_bytes());
                b.extend_from_slice(&s.sh_flags.to_le_bytes());
                b.extend_from_slice(&s.sh_addr.to_le_bytes());
                b.extend_from_slice(&s.sh_offset.to_le_bytes());
                b.extend_from_slice(&s.sh_size.to_le_bytes());
                b.extend_from_slice(&s.sh_link.to_le_bytes());
                b.extend_from_slice(&s.sh_info.to_le_bytes());
                b.extend_from_slice(&s.sh_addralign.to_le_bytes());
                b.extend_from_slice(&s.sh_entsize.to_le_bytes());
                out[at..at + SHDR_SIZE].copy_from_slice(&b);
                at += SHDR_SIZE;
            }
        }
        if !self.phdrs.is_empty() {
            let mut at = h.e_phoff as usize;
            for p in &self.phdrs {
                let mut b = Vec::with_capacity(PHDR_SIZE);
                b.extend_from_slice(&p.p_type.to_le_bytes());
                b.extend_from_slice(&p.p_flags.to_le_bytes());
                b.extend_from_slice(&p.p_offset.to_le_bytes());
                b.extend_from_slice(&p.p_vaddr.to_le_bytes());
                b.extend_from_slice(&p.p_paddr.to_le_bytes());
                b.extend_from_slice(&p.p_filesz.to_le_bytes());
                b.extend_from_slice(&p.p_memsz.to_le_bytes());
                b.extend_from_slice(&p.p_align.to_le_bytes());
                out[at..at + PHDR_SIZE].copy_from_slice(&b);
                at += PHDR_SIZE;
            }
        }
        Ok(out)
    }

    /// Recompute every offset after sizes changed: items (sections, the two header tables)
    /// keep their original order; each moves by at most what the items before it grew,
    /// rounded up to its alignment, so an unchanged file keeps every offset. Then rebuild the
    /// program headers from what they covered, and drop the gap bytes (they are padding).
    pub(crate) fn relayout(&mut self) -> Result<(), CubinError> {
        self.relayout_with(false)
    }

    /// [`Elf::relayout`], each item placed right after the one before it (rounded up to its
    /// alignment) rather than keeping the padding it had: how ptxas lays a cubin out, for a
    /// file assembled from parts of several ptxas outputs.
    pub(crate) fn relayout_packed(&mut self) -> Result<(), CubinError> {
        self.relayout_with(true)
    }

    fn relayout_with(&mut self, packed: bool) -> Result<(), CubinError> {
        // File sizes as last laid out (`sh_size` is synced from the data only here).
        let old_sizes: Vec<u64> = self
            .sections
            .iter()
            .map(|s| if s.is_nobits() { 0 } else { s.sh_size })
            .collect();
        for s in &mut self.sections {
            if !s.is_nobits() {
                s.sh_size = s.data.len() as u64;
            }
        }
        #[derive(Clone, Copy)]
        enum Item {
            Sec(usize),
            Shdrs,
            Phdrs,
        }
        // (original offset, zero-sized first, order, item)
        let mut items: Vec<(u64, bool, usize, Item)> = Vec::new();
        for (i, s) in self.sections.iter().enumerate().skip(1) {
            items.push((s.sh_offset, s.file_size() > 0, i, Item::Sec(i)));
        }
        if !self.sections.is_empty() {
            items.push((self.orig_shoff, true, usize::MAX - 1, Item::Shdrs));
        }
        if !self.phdrs.is_empty() {
            items.push((self.orig_phoff, true, usize::MAX, Item::Phdrs));
        }
        items.sort_by_key(|x| (x.0, x.1, x.2));
        let mut cursor = EHDR_SIZE as u64;
        let mut shift: i128 = 0;
        let mut new_offsets = vec![0u64; self.sections.len()];
        let mut old_offsets = vec![0u64; self.sections.len()];
        // Sections that alias (lie inside) an earlier one's bytes keep their place in it
        // (sm_100+: `.nv.merc.nv.constant.pic` shares `.nv.constant4`'s bytes).
        let mut placed: Vec<(u64, u64, u64)> = Vec::new();
        for (orig, _, _, item) in items {
            if let Item::Sec(i) = item {
                let end = orig.saturating_add(old_sizes[i]);
                if old_sizes[i] > 0
                    && self.sections[i].file_size() > 0
                    && let Some(&(o, _, n)) =
                        placed.iter().find(|&&(o, e, _)| o <= orig && end <= e)
                {
                    old_offsets[i] = orig;
                    new_offsets[i] = n + (orig - o);
                    continue;
                }
            }
            let (align, size) = match item {
                Item::Sec(i) => {
                    let s = &self.sections[i];
                    (s.sh_addralign.max(1), s.file_size())
                }
                // The tables keep the alignment their offset had (ptxas leaves them at
                // 2- or 4-byte offsets), up to 8.
                Item::Shdrs => (
                    offset_alignment(orig),
                    (self.sections.len() * SHDR_SIZE) as u64,
                ),
                Item::Phdrs => (
                    offset_alignment(orig),
                    (self.phdrs.len() * PHDR_SIZE) as u64,
                ),
            };
            let candidate = if packed {
                cursor
            } else {
                (orig as i128 + shift).max(0) as u64
            };
            let at = align_up(candidate.max(cursor), align)
                .ok_or_else(|| hdr_err("layout overflows"))?;
            shift = at as i128 - orig as i128;
            cursor = at
                .checked_add(size)
                .ok_or_else(|| hdr_err("layout overflows"))?;
            let old_size = match item {
                Item::Sec(i) => old_sizes[i],
                _ => size,
            };
            if old_size > 0 {
                placed.push((orig, orig.saturating_add(old_size), at));
            }
            match item {
                Item::Sec(i) => {
                    old_offsets[i] = self.sections[i].sh_offset;
                    new_offsets[i] = at;
                }
                Item::Shdrs => self.header.e_shoff = at,
                Item::Phdrs => self.header.e_phoff = at,
            }
        }
        for (i, s) in self.sections.iter_mut().enumerate().skip(1) {
            s.sh_offset = new_offsets[i];
        }
        // Program headers.
        let phoff = self.header.e_phoff;
        let phsize = (self.phdrs.len() * PHDR_SIZE) as u64;
        for idx in 0..self.phdrs.len() {
            let cov = self.coverage[idx].clone();
            let mut p = self.phdrs[idx];
            let extra_mem = p.p_memsz.saturating_sub(p.p_filesz);
            if cov.phdr_table {
                p.p_offset = phoff;
                p.p_filesz = phsize;
                p.p_memsz = phsize;
            } else if let Some((f, l, lead, trail)) = cov.sections {
                let first = &self.sections[f];
                let last = &self.sections[l];
                let start = first.sh_offset.saturating_sub(lead);
                let end = last
                    .sh_offset
                    .saturating_add(last.file_size())
                    .saturating_add(trail);
                p.p_offset = start;
                p.p_filesz = end.saturating_sub(start);
                p.p_memsz = p.p_filesz.saturating_add(extra_mem);
            }
            if cov.nobits_tracked {
                p.p_memsz = self
                    .nobits_extent(p.p_filesz)
                    .ok_or_else(|| hdr_err("segment size overflows"))?;
            }
            if cov.nobits_start
                && let Some(at) = self.first_nobits_offset()
            {
                p.p_offset = at;
            }
            self.phdrs[idx] = p;
        }
        // Gap bytes are padding once things moved.
        let _ = old_offsets;
        self.gaps.clear();
        self.orig_shoff = self.header.e_shoff;
        self.orig_phoff = self.header.e_phoff;
        self.coverage = self.phdrs.iter().map(|p| self.coverage_of(p)).collect();
        Ok(())
    }

    /// Insert section `s` at index `at`, renumbering every section index the file holds
    /// (`sh_link`, `sh_info` where it names a section, `e_shstrndx`, what the program headers
    /// covered; symbols are the caller's, see [`super::Cubin::insert_section`]). A section
    /// with file bytes inserted right after the last one a segment covers, with the same
    /// flags, joins that segment (a new `.text.*` after the last one joins the code segment).
    /// `s` is laid out right after the section before it by the next relayout.
    pub(crate) fn insert_section(&mut self, at: usize, mut s: Section) -> Result<(), CubinError> {
        if at == 0 || at > self.sections.len() || self.sections.len() >= 0xff00 {
            return Err(hdr_err("no room for a section there"));
        }
        // An index past the table (a damaged file) stays past it, never wrapping to a valid one.
        let shift = |i: u32| {
            if i as usize >= at {
                i.saturating_add(1)
            } else {
                i
            }
        };
        let shstrndx = u16::try_from(shift(u32::from(self.header.e_shstrndx)))
            .map_err(|_| hdr_err("section name table index past 16 bits"))?;
        for t in &mut self.sections {
            t.sh_link = shift(t.sh_link);
            if names_section(t) {
                t.sh_info = shift(t.sh_info);
            }
        }
        self.header.e_shstrndx = shstrndx;
        let before = &self.sections[at - 1];
        s.sh_offset = before.sh_offset.saturating_add(before.file_size());
        let joins = s.sh_flags & SHF_ALLOC != 0 && s.file_size() > 0;
        for c in &mut self.coverage {
            if let Some((f, l, _, _)) = &mut c.sections {
                let extend = joins && *l + 1 == at && self.sections[*l].sh_flags == s.sh_flags;
                *f += usize::from(*f >= at);
                *l = if extend {
                    at
                } else {
                    *l + usize::from(*l >= at)
                };
            }
        }
        self.sections.insert(at, s);
        self.header.e_shnum = self.sections.len() as u16;
        Ok(())
    }

    /// Whether the module's writable `LOAD` (`None`: there is none) has for its memory size
    /// the NOBITS layout of [`Elf::nobits_extent`], so that a NOBITS section added joins it at
    /// the next relayout; `Some(false)` also where there is more than one.
    pub(crate) fn writable_tracks_nobits(&self) -> Option<bool> {
        let writable: Vec<bool> = self
            .phdrs
            .iter()
            .zip(&self.coverage)
            .filter(|(p, _)| p.p_type == PT_LOAD && p.p_flags & PF_W != 0)
            .map(|(_, c)| c.nobits_tracked)
            .collect();
        match writable[..] {
            [] => None,
            [tracked] => Some(tracked),
            _ => Some(false),
        }
    }

    /// Insert program header `p` at index `at` for a writable segment of NOBITS sections only
    /// (the module's first shared memory): its start and memory size follow them at each
    /// relayout, and the program header table grows by one entry.
    pub(crate) fn insert_nobits_segment(
        &mut self,
        at: usize,
        p: ProgramHeader,
    ) -> Result<(), CubinError> {
        if at > self.phdrs.len() || p.p_filesz != 0 || p.p_flags & PF_W == 0 {
            return Err(hdr_err("not a segment of NOBITS sections"));
        }
        self.phdrs.insert(at, p);
        self.coverage.insert(
            at,
            Coverage {
                phdr_table: false,
                sections: None,
                nobits_tracked: true,
                nobits_start: true,
            },
        );
        self.header.e_phnum =
            u16::try_from(self.phdrs.len()).map_err(|_| hdr_err("too many program headers"))?;
        Ok(())
    }

    /// Add `name` to `.shstrtab`, returning its offset.
    pub(crate) fn add_section_name(&mut self, name: &str) -> Result<u32, CubinError> {
        let idx = self.header.e_shstrndx as usize;
        let sec = self
            .sections
            .get_mut(idx)
            .filter(|_| idx != 0)
            .ok_or_else(|| hdr_err("no section name table"))?;
        let off = u32::try_from(sec.data.len()).map_err(|_| hdr_err(".shstrtab too large"))?;
        sec.data.extend_from_slice(name.as_bytes());
        sec.data.push(0);
        Ok(off)
    }

    pub fn section_index_by_name(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name)
    }
}

/// Whether a section's `sh_info` is a section index: relocations name the section they
/// apply to, and `SHF_INFO_LINK` sections (a kernel's `.nv.info.*`, constant bank, shared
/// memory) the code they belong to. (A `.text.*`'s `sh_info` is its symbol and registers.)
fn names_section(s: &Section) -> bool {
    s.sh_type == SHT_REL || s.sh_type == SHT_RELA || s.sh_flags & SHF_INFO_LINK != 0
}

/// The largest power of two (at most 8) dividing `off`.
fn offset_alignment(off: u64) -> u64 {
    if off == 0 {
        8
    } else {
        (1u64 << off.trailing_zeros().min(3)).max(1)
    }
}

/// NUL-terminated string at `off` in `table`.
pub(crate) fn cstr(table: &[u8], off: usize) -> Option<String> {
    let rest = table.get(off..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Little-endian reads with bounds checks.
pub(crate) fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}
pub fn rd_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}
pub(crate) fn wr_u32(b: &mut [u8], at: usize, v: u32) -> Option<()> {
    b.get_mut(at..at.checked_add(4)?)?
        .copy_from_slice(&v.to_le_bytes());
    Some(())
}
pub(crate) fn wr_u64(b: &mut [u8], at: usize, v: u64) -> Option<()> {
    b.get_mut(at..at.checked_add(8)?)?
        .copy_from_slice(&v.to_le_bytes());
    Some(())
}

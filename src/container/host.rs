//! Host ELF files (x86-64 objects from `nvcc -c`/`-dc`/`-dlink`, linked executables and shared
//! libraries): the fatbin sections `.nv_fatbin` and `__nv_relfatbin`, parsed, and the file
//! written back with those sections replaced.
//!
//! Only the section headers are interpreted; every other byte is copied. When a fatbin section
//! of a relocatable object changes size, everything stored after it in the file moves by the
//! same amount, rounded to the largest alignment among what moves, so every other section
//! keeps its alignment and contents (symbols and relocations are section-relative and stay
//! valid). Linked executables only take replacements that fit in the section (padded with
//! zeros): growing one would move code and data that absolute addresses point to.

use super::bytes::{put, slice, u16_le, u32_le, u64_le};
use super::error::ContainerError;
use super::fatbin::Fatbin;

/// Names of the sections that hold fatbin containers.
pub(crate) const FATBIN_SECTIONS: [&str; 2] = [".nv_fatbin", "__nv_relfatbin"];

const ET_REL: u16 = 1;
const SHT_NOBITS: u32 = 8;
const SHDR_SIZE: u64 = 64;
/// e_machine of CUDA device ELFs (cubins).
pub(crate) const EM_CUDA: u16 = 190;
const MAX_SECTIONS: u64 = 1 << 20;

/// One section header, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub(crate) index: usize,
    pub name: String,
    pub(crate) sh_type: u32,
    pub(crate) flags: u64,
    pub(crate) addr: u64,
    pub offset: u64,
    pub size: u64,
    pub(crate) align: u64,
}

/// A fatbin section and its parsed containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinSection {
    /// Section header index.
    pub(crate) index: usize,
    pub name: String,
    pub fatbin: Fatbin,
}

/// A host ELF file with its fatbin sections parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostElf {
    data: Vec<u8>,
    elf_type: u16,
    sections: Vec<Section>,
    /// In section header order.
    pub fatbins: Vec<FatbinSection>,
}

struct Layout {
    shoff: u64,
    shnum: u64,
}

fn layout(data: &[u8]) -> Result<Layout, ContainerError> {
    let bad = |what: String| ContainerError::malformed("ELF", what);
    if data.len() < 64 || !data.starts_with(b"\x7fELF") {
        return Err(bad(format!(
            "ELF header truncated ({:#x} bytes)",
            data.len()
        )));
    }
    if data[4] != 2 || data[5] != 1 {
        return Err(ContainerError::unsupported(
            "ELF",
            format!(
                "only 64-bit little-endian ELF is handled (class {}, data {})",
                data[4], data[5]
            ),
        ));
    }
    let shoff = u64_le(data, 0x28).unwrap_or(0);
    let shentsize = u16_le(data, 0x3a).unwrap_or(0);
    let mut shnum = u64::from(u16_le(data, 0x3c).unwrap_or(0));
    if shoff == 0 {
        return Ok(Layout { shoff, shnum: 0 });
    }
    if u64::from(shentsize) != SHDR_SIZE {
        return Err(bad(format!(
            "section header size {shentsize} (expected 64)"
        )));
    }
    if shnum == 0 {
        // Extended numbering: the count is in section 0's sh_size.
        shnum = u64_le(data, shoff.saturating_add(0x20)).ok_or_else(|| {
            bad(format!(
                "section header table at {shoff:#x} is past the end of the file ({:#x})",
                data.len()
            ))
        })?;
    }
    if shnum > MAX_SECTIONS || slice(data, shoff, shnum.saturating_mul(SHDR_SIZE)).is_none() {
        return Err(bad(format!(
            "section header table (offset {shoff:#x}, {shnum} entries) runs past the end of the file ({:#x})",
            data.len()
        )));
    }
    Ok(Layout { shoff, shnum })
}

fn read_sections(data: &[u8]) -> Result<Vec<Section>, ContainerError> {
    let l = layout(data)?;
    let shdr = |i: u64, f: u64| l.shoff + i * SHDR_SIZE + f;
    let mut raw = Vec::new();
    for i in 0..l.shnum {
        raw.push((
            u32_le(data, shdr(i, 0)).unwrap_or(0),
            u32_le(data, shdr(i, 4)).unwrap_or(0),
            u64_le(data, shdr(i, 8)).unwrap_or(0),
            u64_le(data, shdr(i, 0x10)).unwrap_or(0),
            u64_le(data, shdr(i, 0x18)).unwrap_or(0),
            u64_le(data, shdr(i, 0x20)).unwrap_or(0),
            u64_le(data, shdr(i, 0x30)).unwrap_or(0),
        ));
    }
    let mut shstrndx = u64::from(u16_le(data, 0x3e).unwrap_or(0));
    if shstrndx == 0xffff {
        shstrndx = u64::from(u32_le(data, shdr(0, 0x28)).unwrap_or(0));
    }
    let strtab = raw
        .get(shstrndx as usize)
        .filter(|_| shstrndx != 0)
        .and_then(|&(_, ty, _, _, off, size, _)| {
            if ty == SHT_NOBITS {
                None
            } else {
                slice(data, off, size)
            }
        });
    let mut sections = Vec::with_capacity(raw.len());
    for (index, &(name, sh_type, flags, addr, offset, size, align)) in raw.iter().enumerate() {
        let name = strtab
            .and_then(|t| t.get(name as usize..))
            .map(|s| {
                let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                String::from_utf8_lossy(&s[..end]).into_owned()
            })
            .unwrap_or_default();
        if index != 0 && sh_type != SHT_NOBITS && slice(data, offset, size).is_none() {
            return Err(ContainerError::malformed(
                "ELF",
                format!(
                    "section {index} {} (offset {offset:#x}, size {size:#x}) runs past the end of the file ({:#x})",
                    super::error::one_line(&name),
                    data.len()
                ),
            ));
        }
        sections.push(Section {
            index,
            name,
            sh_type,
            flags,
            addr,
            offset,
            size,
            align,
        });
    }
    Ok(sections)
}

impl HostElf {
    /// Parse a host ELF and every fatbin section in it.
    pub(crate) fn parse(data: Vec<u8>) -> Result<HostElf, ContainerError> {
        let sections = read_sections(&data)?;
        let elf_type = u16_le(&data, 16).unwrap_or(0);
        let mut fatbins = Vec::new();
        for s in &sections {
            if s.sh_type == SHT_NOBITS || !FATBIN_SECTIONS.contains(&s.name.as_str()) {
                continue;
            }
            let bytes = slice(&data, s.offset, s.size).unwrap_or_default();
            let fatbin = Fatbin::parse(bytes).map_err(|e| {
                e.within(&format!(
                    "section {} (offset {:#x}) fatbin",
                    s.name, s.offset
                ))
            })?;
            fatbins.push(FatbinSection {
                index: s.index,
                name: s.name.clone(),
                fatbin,
            });
        }
        Ok(HostElf {
            data,
            elf_type,
            sections,
            fatbins,
        })
    }

    /// A relocatable object (`.o`), whose sections may change size.
    pub(crate) fn is_relocatable(&self) -> bool {
        self.elf_type == ET_REL
    }

    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Check that every edited fatbin section can be written (executables: no growth).
    pub(crate) fn check_writable(&self) -> Result<(), ContainerError> {
        if self.is_relocatable() {
            return Ok(());
        }
        for fs in &self.fatbins {
            let old = self.sections.get(fs.index).map_or(0, |s| s.size);
            let new = fs.fatbin.written_len();
            if new > old {
                return Err(ContainerError::ExecutableGrow {
                    at: format!("section {}", fs.name),
                    old,
                    new,
                });
            }
        }
        Ok(())
    }

    /// Write the file: the original bytes with every fatbin section rewritten (identity when
    /// nothing was edited).
    pub(crate) fn write(&self) -> Result<Vec<u8>, ContainerError> {
        let mut out = self.data.clone();
        // Highest file offset first, so that moving one section does not move the next one
        // to be replaced.
        let mut order: Vec<&FatbinSection> = self.fatbins.iter().collect();
        order.sort_by_key(|fs| std::cmp::Reverse(self.sections[fs.index].offset));
        for fs in order {
            let sec = &self.sections[fs.index];
            let old = slice(&self.data, sec.offset, sec.size).unwrap_or_default();
            let new = fs.fatbin.write();
            if new == old {
                continue;
            }
            let at = format!("section {}", fs.name);
            if (new.len() as u64) <= sec.size && !self.is_relocatable() {
                // In place, padded with zeros (executables, and any file that is not ET_REL).
                let mut bytes = new;
                bytes.resize(sec.size as usize, 0);
                put(&mut out, sec.offset, &bytes);
                continue;
            }
            if !self.is_relocatable() {
                return Err(ContainerError::ExecutableGrow {
                    at,
                    old: sec.size,
                    new: new.len() as u64,
                });
            }
            out = replace_section(&out, fs.index, &new).map_err(|e| e.within(&at))?;
        }
        Ok(out)
    }
}

/// `data` (a relocatable ELF) with section `index`'s contents replaced by `new`, every later
/// byte of the file moved and the section headers fixed.
fn replace_section(data: &[u8], index: usize, new: &[u8]) -> Result<Vec<u8>, ContainerError> {
    let sections = read_sections(data)?;
    let l = layout(data)?;
    let bad = |what: String| ContainerError::malformed("", what);
    let sec = sections
        .get(index)
        .ok_or_else(|| bad(format!("no section {index}")))?;
    let start = sec.offset;
    let old_end = start
        .checked_add(sec.size)
        .ok_or_else(|| bad("section end overflows".into()))?;
    // What moves: every section stored at or after the old end, and the header table.
    let mut align = 8u64;
    for s in &sections {
        if s.index == index || s.index == 0 {
            continue;
        }
        if s.offset >= old_end {
            if s.align.is_power_of_two() {
                align = align.max(s.align.min(1 << 16));
            }
        } else if s.offset > start && s.sh_type != SHT_NOBITS && s.size > 0 {
            return Err(bad(format!(
                "section {} (offset {:#x}) overlaps the replaced section (offset {start:#x}, size {:#x})",
                super::error::one_line(&s.name),
                s.offset,
                sec.size
            )));
        }
    }
    if l.shoff > start && l.shoff < old_end {
        return Err(bad(format!(
            "the section header table ({:#x}) is inside the replaced section",
            l.shoff
        )));
    }
    let new_len = new.len() as u64;
    // Signed shift of everything after the section, a multiple of `align`.
    let (grow, amount) = if new_len >= sec.size {
        let d = new_len - sec.size;
        (
            true,
            super::bytes::align_up(d, align).ok_or_else(|| bad("size overflow".into()))?,
        )
    } else {
        let d = sec.size - new_len;
        (false, d / align * align)
    };
    let shift = |off: u64| -> u64 {
        if off >= old_end {
            // NOBITS sections may carry any offset: saturate rather than overflow.
            if grow {
                off.saturating_add(amount)
            } else {
                off.saturating_sub(amount)
            }
        } else {
            off
        }
    };
    let region = if grow {
        sec.size + amount
    } else {
        sec.size - amount
    };
    let tail = data.get(old_end as usize..).unwrap_or_default();
    let total = (start as usize)
        .checked_add(region as usize)
        .and_then(|v| v.checked_add(tail.len()))
        .ok_or_else(|| bad("size overflow".into()))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(data.get(..start as usize).unwrap_or_default());
    out.extend_from_slice(new);
    out.resize(start as usize + region as usize, 0);
    out.extend_from_slice(tail);
    // Header fields.
    let shoff = shift(l.shoff);
    put(&mut out, 0x28, &shoff.to_le_bytes());
    let phoff = u64_le(data, 0x20).unwrap_or(0);
    if phoff != 0 {
        put(&mut out, 0x20, &shift(phoff).to_le_bytes());
    }
    for s in &sections {
        let h = shoff + s.index as u64 * SHDR_SIZE;
        if s.index == index {
            put(&mut out, h + 0x20, &new_len.to_le_bytes());
        } else if s.index != 0 {
            put(&mut out, h + 0x18, &shift(s.offset).to_le_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ET_REL file: sections [null, .nv_fatbin (align 8), .data (align 16),
    /// .shstrtab], header table at the end.
    fn tiny(fatbin: &[u8]) -> Vec<u8> {
        let names = b"\0.nv_fatbin\0.data\0.shstrtab\0";
        let mut f = vec![0u8; 64];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        put(&mut f, 16, &ET_REL.to_le_bytes());
        put(&mut f, 18, &62u16.to_le_bytes());
        put(&mut f, 0x34, &64u16.to_le_bytes());
        put(&mut f, 0x3a, &64u16.to_le_bytes());
        put(&mut f, 0x3c, &4u16.to_le_bytes());
        put(&mut f, 0x3e, &3u16.to_le_bytes());
        let fat_off = f.len() as u64;
        f.extend_from_slice(fatbin);
        while !f.len().is_multiple_of(16) {
            f.push(0);
        }
        let data_off = f.len() as u64;
        f.extend_from_slice(&[0xaa; 16]);
        let str_off = f.len() as u64;
        f.extend_from_slice(names);
        while !f.len().is_multiple_of(8) {
            f.push(0);
        }
        let shoff = f.len() as u64;
        put(&mut f, 0x28, &shoff.to_le_bytes());
        let mut sh = |name: u32, ty: u32, off: u64, size: u64, align: u64| {
            let mut h = [0u8; 64];
            put(&mut h, 0, &name.to_le_bytes());
            put(&mut h, 4, &ty.to_le_bytes());
            put(&mut h, 0x18, &off.to_le_bytes());
            put(&mut h, 0x20, &size.to_le_bytes());
            put(&mut h, 0x30, &align.to_le_bytes());
            f.extend_from_slice(&h);
        };
        sh(0, 0, 0, 0, 0);
        sh(1, 1, fat_off, fatbin.len() as u64, 8);
        sh(12, 1, data_off, 16, 16);
        sh(18, 3, str_off, names.len() as u64, 1);
        f
    }

    fn container(payload: usize) -> Vec<u8> {
        let mut c = Vec::new();
        c.extend_from_slice(&super::super::fatbin::FATBIN_MAGIC.to_le_bytes());
        c.extend_from_slice(&1u16.to_le_bytes());
        c.extend_from_slice(&16u16.to_le_bytes());
        c.extend_from_slice(&(0x40 + payload as u64).to_le_bytes());
        let mut h = [0u8; 0x40];
        put(&mut h, 0, &2u16.to_le_bytes());
        put(&mut h, 4, &0x40u32.to_le_bytes());
        put(&mut h, 8, &(payload as u64).to_le_bytes());
        c.extend_from_slice(&h);
        c.extend(std::iter::repeat_n(0x5a, payload));
        c
    }

    #[test]
    fn identity_and_resize_in_relocatable() {
        let data = tiny(&container(16));
        let mut h = HostElf::parse(data.clone()).unwrap();
        assert!(h.is_relocatable());
        assert_eq!(h.fatbins.len(), 1);
        assert_eq!(h.write().unwrap(), data);
        for size in [48usize, 16 * 40, 0] {
            let c = h.fatbins[0].fatbin.containers_mut().next().unwrap();
            c.entries[0].set_image(vec![0x11; size]).unwrap();
            let out = h.write().unwrap();
            let again = HostElf::parse(out.clone()).unwrap();
            let secs = again.sections();
            assert_eq!(secs[1].size, 0x50 + size as u64);
            assert_eq!(secs[2].offset % 16, 0);
            assert_eq!(slice(&out, secs[2].offset, 16).unwrap(), &[0xaa; 16]);
            assert_eq!(secs[3].name, ".shstrtab");
            let img = again.fatbins[0]
                .fatbin
                .entries()
                .next()
                .unwrap()
                .2
                .image()
                .unwrap()
                .to_vec();
            assert_eq!(img, vec![0x11; size]);
        }
    }

    #[test]
    fn executables_refuse_growth_and_pad_shrinks() {
        let mut data = tiny(&container(32));
        put(&mut data, 16, &2u16.to_le_bytes()); // e_type ET_EXEC
        let mut h = HostElf::parse(data.clone()).unwrap();
        assert!(!h.is_relocatable());
        let c = h.fatbins[0].fatbin.containers_mut().next().unwrap();
        c.entries[0].set_image(vec![1; 16]).unwrap();
        let out = h.write().unwrap();
        assert_eq!(out.len(), data.len());
        let again = HostElf::parse(out).unwrap();
        assert_eq!(again.fatbins[0].fatbin.written_len(), 0x50 + 16 + 16);
        let c = h.fatbins[0].fatbin.containers_mut().next().unwrap();
        c.entries[0].set_image(vec![1; 64]).unwrap();
        assert!(matches!(
            h.check_writable(),
            Err(ContainerError::ExecutableGrow { .. })
        ));
        let err = h.write().unwrap_err();
        assert!(
            matches!(err, ContainerError::ExecutableGrow { .. }),
            "{err}"
        );
        assert!(err.to_string().starts_with("section .nv_fatbin: "), "{err}");
    }

    #[test]
    fn bad_headers_are_errors() {
        let data = tiny(&container(16));
        for cut in [0, 10, 63, 64, 100, data.len() - 1] {
            assert!(HostElf::parse(data[..cut].to_vec()).is_err(), "cut {cut}");
        }
        let mut d = data.clone();
        d[4] = 1;
        assert!(matches!(
            HostElf::parse(d),
            Err(ContainerError::Unsupported { .. })
        ));
        let mut d = data.clone();
        put(&mut d, 0x3c, &0xffffu16.to_le_bytes());
        assert!(HostElf::parse(d).is_err());
    }
}

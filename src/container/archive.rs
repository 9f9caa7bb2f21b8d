//! `ar` archives (GNU format: `/` or `/SYM64/` symbol table, `//` long names): members kept
//! byte for byte, ELF host objects among them parsed as [`HostElf`].
//!
//! When a member changes size its header's size field is rewritten, and the member offsets in
//! the symbol table are moved to the members' new places; nothing else changes.

use super::bytes::{slice, u32_be, u64_be};
use super::error::{ContainerError, one_line};
use super::host::{EM_CUDA, HostElf};

pub(crate) const AR_MAGIC: &[u8; 8] = b"!<arch>\n";
pub(crate) const THIN_MAGIC: &[u8; 8] = b"!<thin>\n";
const HEADER: u64 = 60;

/// What a member holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberData {
    /// A host ELF (its fatbin sections parsed).
    Host(Box<HostElf>),
    /// Anything else (symbol table, long names, other files), verbatim.
    Raw(Vec<u8>),
}

/// One member: its 60-byte header, contents and the padding byte after odd-sized contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    header: Vec<u8>,
    /// The resolved name (`rdc_lib.o`), or the raw name of special members (`/`, `//`).
    pub(crate) name: String,
    pub data: MemberData,
    pad: Option<u8>,
}

impl Member {
    fn is_symtab32(&self) -> bool {
        self.header.starts_with(b"/ ")
    }
    fn is_symtab64(&self) -> bool {
        self.header.starts_with(b"/SYM64/ ")
    }
}

/// An `ar` archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    /// The archive's file name, used in image locations (set by `container::open`).
    pub(crate) name: Option<String>,
    pub members: Vec<Member>,
}

fn parse_size(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?.trim_end_matches(' ');
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Archive {
    pub(crate) fn parse(data: &[u8]) -> Result<Archive, ContainerError> {
        if data.starts_with(THIN_MAGIC) {
            return Err(ContainerError::unsupported("archive", "thin archives"));
        }
        if !data.starts_with(AR_MAGIC) {
            return Err(ContainerError::malformed("archive", "no `!<arch>` magic"));
        }
        let len = data.len() as u64;
        let mut at = AR_MAGIC.len() as u64;
        let mut members: Vec<Member> = Vec::new();
        let mut long_names: Option<Vec<u8>> = None;
        while at < len {
            let n = members.len();
            let bad = |what: String| ContainerError::malformed(format!("archive member {n}"), what);
            let header = slice(data, at, HEADER).ok_or_else(|| {
                bad(format!(
                    "member header truncated (offset {at:#x}, {:#x} bytes left)",
                    len - at
                ))
            })?;
            if &header[58..60] != b"`\n" {
                return Err(bad(format!(
                    "bad member header terminator at offset {:#x}",
                    at + 58
                )));
            }
            let size = parse_size(&header[48..58]).ok_or_else(|| {
                bad(format!(
                    "bad size field `{}` (offset {at:#x})",
                    one_line(&String::from_utf8_lossy(&header[48..58]))
                ))
            })?;
            let body = at + HEADER;
            let contents = slice(data, body, size).ok_or_else(|| {
                bad(format!(
                    "contents run past the end of the archive (offset {body:#x}, size {size:#x}, archive {len:#x})"
                ))
            })?;
            let raw_name = String::from_utf8_lossy(&header[..16])
                .trim_end()
                .to_string();
            let name = if raw_name == "/" || raw_name == "//" || raw_name == "/SYM64/" {
                raw_name.clone()
            } else if let Some(off) = raw_name.strip_prefix('/') {
                off.parse::<usize>()
                    .ok()
                    .and_then(|o| long_names.as_ref()?.get(o..))
                    .map(|s| {
                        let end = s
                            .iter()
                            .position(|&b| b == b'\n' || b == 0)
                            .unwrap_or(s.len());
                        let s = &s[..end];
                        String::from_utf8_lossy(s.strip_suffix(b"/").unwrap_or(s)).into_owned()
                    })
                    .unwrap_or(raw_name.clone())
            } else {
                raw_name.strip_suffix('/').unwrap_or(&raw_name).to_string()
            };
            if raw_name == "//" {
                long_names = Some(contents.to_vec());
            }
            let is_host = contents.starts_with(b"\x7fELF")
                && super::bytes::u16_le(contents, 18) != Some(EM_CUDA)
                && !name.starts_with('/');
            let member_data = if is_host {
                let host = HostElf::parse(contents.to_vec())
                    .map_err(|e| e.within(&format!("archive member {}", one_line(&name))))?;
                MemberData::Host(Box::new(host))
            } else {
                MemberData::Raw(contents.to_vec())
            };
            at = body + size;
            let mut pad = None;
            if at % 2 == 1 && at < len {
                pad = data.get(at as usize).copied();
                at += 1;
            }
            members.push(Member {
                header: header.to_vec(),
                name,
                data: member_data,
                pad,
            });
        }
        Ok(Archive {
            name: None,
            members,
        })
    }

    /// Write the archive back (identity when nothing was edited).
    pub(crate) fn write(&self) -> Result<Vec<u8>, ContainerError> {
        let mut bodies = Vec::with_capacity(self.members.len());
        for m in &self.members {
            bodies.push(match &m.data {
                MemberData::Host(h) => std::borrow::Cow::Owned(
                    h.write()
                        .map_err(|e| e.within(&format!("archive member {}", one_line(&m.name))))?,
                ),
                MemberData::Raw(r) => std::borrow::Cow::Borrowed(r.as_slice()),
            });
        }
        // Old and new header offsets of every member.
        let mut old_at = AR_MAGIC.len() as u64;
        let mut new_at = old_at;
        let mut moved = Vec::with_capacity(self.members.len());
        let mut resized = false;
        for (m, b) in self.members.iter().zip(&bodies) {
            moved.push((old_at, new_at));
            let old_size = parse_size(&m.header[48..58]).unwrap_or(0);
            let new_size = b.len() as u64;
            resized |= old_size != new_size;
            let pad = |at: u64, size: u64| u64::from((at + HEADER + size) % 2 == 1);
            old_at += HEADER + old_size + if m.pad.is_some() { 1 } else { 0 };
            new_at += HEADER + new_size + pad(new_at, new_size);
        }
        let mut out = Vec::with_capacity(new_at as usize);
        out.extend_from_slice(AR_MAGIC);
        for (i, (m, b)) in self.members.iter().zip(&bodies).enumerate() {
            let mut header = m.header.clone();
            let new_size = b.len() as u64;
            if parse_size(&header[48..58]) != Some(new_size) {
                let field = format!("{new_size:<10}");
                if field.len() != 10 {
                    return Err(ContainerError::unsupported(
                        format!("archive member {}", one_line(&m.name)),
                        format!("a member of {new_size} bytes"),
                    ));
                }
                header[48..58].copy_from_slice(field.as_bytes());
            }
            out.extend_from_slice(&header);
            if resized && (m.is_symtab32() || m.is_symtab64()) {
                out.extend_from_slice(&remap_symtab(b, m.is_symtab64(), &moved).map_err(
                    |what| {
                        ContainerError::malformed(
                            format!("archive member {i} (symbol table)"),
                            what.to_string(),
                        )
                    },
                )?);
            } else {
                out.extend_from_slice(b);
            }
            if out.len() % 2 == 1 {
                match m.pad {
                    Some(p) => out.push(p),
                    None if i + 1 < self.members.len() => out.push(b'\n'),
                    None => {}
                }
            }
        }
        Ok(out)
    }
}

/// What is wrong with an archive's symbol table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SymtabProblem {
    #[error("symbol table truncated")]
    Truncated,
    #[error("symbol count {0} does not fit in the table")]
    Count(u64),
    #[error("symbol {index} points at {offset:#x}, which is no member header")]
    NoMember { index: u64, offset: u64 },
    #[error("archive too large for a 32-bit symbol table")]
    TooLarge,
}

/// The symbol table with each member offset moved from its old to its new place.
fn remap_symtab(table: &[u8], wide: bool, moved: &[(u64, u64)]) -> Result<Vec<u8>, SymtabProblem> {
    let w = if wide { 8 } else { 4 };
    let read = |off: u64| {
        if wide {
            u64_be(table, off)
        } else {
            u32_be(table, off).map(u64::from)
        }
    };
    let count = read(0).ok_or(SymtabProblem::Truncated)?;
    if count
        .checked_mul(w)
        .and_then(|n| n.checked_add(w))
        .is_none_or(|n| n > table.len() as u64)
    {
        return Err(SymtabProblem::Count(count));
    }
    let mut out = table.to_vec();
    for i in 0..count {
        let at = w + i * w;
        let old = read(at).ok_or(SymtabProblem::Truncated)?;
        let new = moved
            .iter()
            .find(|(o, _)| *o == old)
            .map(|(_, n)| *n)
            .ok_or(SymtabProblem::NoMember {
                index: i,
                offset: old,
            })?;
        let bytes: Vec<u8> = if wide {
            new.to_be_bytes().to_vec()
        } else {
            u32::try_from(new)
                .map_err(|_| SymtabProblem::TooLarge)?
                .to_be_bytes()
                .to_vec()
        };
        super::bytes::put(&mut out, at, &bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, body: &[u8]) -> Vec<u8> {
        let mut h = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            644,
            body.len()
        )
        .into_bytes();
        h.extend_from_slice(body);
        if h.len() % 2 == 1 {
            h.push(b'\n');
        }
        h
    }

    #[test]
    fn parse_names_and_identity() {
        let mut a = AR_MAGIC.to_vec();
        let mut symtab = vec![0, 0, 0, 1, 0, 0, 0, 0];
        symtab.extend_from_slice(b"sym\0");
        let names = b"a_rather_long_member_name.o/\n";
        let first = member("/", &symtab);
        let off2 = (a.len() + first.len() + member("//", names).len()) as u32;
        symtab[4..8].copy_from_slice(&off2.to_be_bytes());
        a.extend_from_slice(&member("/", &symtab));
        a.extend_from_slice(&member("//", names));
        a.extend_from_slice(&member("/0", b"abc"));
        a.extend_from_slice(&member("short.o/", b"hello"));
        let ar = Archive::parse(&a).unwrap();
        let names: Vec<&str> = ar.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["/", "//", "a_rather_long_member_name.o", "short.o"]);
        assert_eq!(ar.write().unwrap(), a);
        // Resize member 2: the symbol table's offset of it stays (it is before), the size
        // field changes.
        let mut ar2 = ar.clone();
        ar2.members[2].data = MemberData::Raw(b"abcdefgh".to_vec());
        let out = ar2.write().unwrap();
        let back = Archive::parse(&out).unwrap();
        assert_eq!(back.members[2].data, MemberData::Raw(b"abcdefgh".to_vec()));
        assert_eq!(back.members[3].data, MemberData::Raw(b"hello".to_vec()));
    }

    #[test]
    fn symtab_offsets_follow_moved_members() {
        let moved = [(8, 8), (100, 120)];
        let t = [0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 0, 100, b'a', 0, b'b', 0];
        let out = remap_symtab(&t, false, &moved).unwrap();
        assert_eq!(&out[8..12], &[0, 0, 0, 120]);
        assert_eq!(
            remap_symtab(&[0, 0, 0, 9], false, &moved),
            Err(SymtabProblem::Count(9))
        );
        assert_eq!(
            remap_symtab(&[0, 0, 0, 1, 0, 0, 0, 7], false, &moved),
            Err(SymtabProblem::NoMember {
                index: 0,
                offset: 7
            })
        );
    }

    #[test]
    fn bad_archives_are_errors() {
        assert!(Archive::parse(b"!<thin>\n").is_err());
        let mut a = AR_MAGIC.to_vec();
        a.extend_from_slice(&member("x.o/", b"abcd"));
        for cut in 9..a.len() {
            if cut == 8 + 60 + 4 {
                continue;
            }
            assert!(Archive::parse(&a[..cut]).is_err(), "cut {cut}");
        }
        let mut b = a.clone();
        b[8 + 48] = b'x';
        assert!(Archive::parse(&b).is_err());
    }
}

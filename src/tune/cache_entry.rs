//! One variant cache entry on disk: the cubin ptxas made and what it printed, in one file
//! that says which key it was stored under and carries a SHA-256 of all of it. A flipped bit,
//! a truncated or lengthened file, and an entry copied or renamed to another key's name all
//! fail [`decode`], and a failed entry is a miss: ptxas runs again and the build says so once
//! (CI caches restored from elsewhere, shared cache folders and failing disks do all three).
//!
//! Layout (integers little-endian):
//! `MAGIC`, `u16` key length, the key, `u64` cubin length, `u64` stderr length, the 32-byte
//! digest of everything before it and everything after it, the cubin, the stderr.

use sha2::{Digest, Sha256};

/// Names the format; a new layout gets a new magic (old files then read as foreign).
const MAGIC: &[u8; 8] = b"ORVCv1\0\n";
const DIGEST: usize = 32;

/// What an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub cubin: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a file is not a good entry for the key asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("not a variant cache entry (no header)")]
    Foreign,
    #[error("truncated ({0} bytes)")]
    Truncated(usize),
    #[error("stored under another key")]
    OtherKey,
    #[error("{0} bytes past the end of the entry")]
    Trailing(usize),
    #[error("checksum mismatch")]
    Checksum,
}

/// The file's bytes for `entry` stored under `key`.
pub fn encode(key: &str, entry: &Entry) -> Vec<u8> {
    // Keys are 64 hex digits; a longer one is cut, so that it only ever reads as a miss.
    let key = &key.as_bytes()[..key.len().min(usize::from(u16::MAX))];
    let key_len = key.len() as u16;
    let mut head = Vec::with_capacity(MAGIC.len() + 2 + key.len() + 16);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&key_len.to_le_bytes());
    head.extend_from_slice(key);
    head.extend_from_slice(&(entry.cubin.len() as u64).to_le_bytes());
    head.extend_from_slice(&(entry.stderr.len() as u64).to_le_bytes());
    let digest = digest(&head, &entry.cubin, &entry.stderr);
    let mut out = head;
    out.extend_from_slice(&digest);
    out.extend_from_slice(&entry.cubin);
    out.extend_from_slice(&entry.stderr);
    out
}

/// Read an entry that must have been stored under `key`, checking every byte.
pub fn decode(key: &str, bytes: &[u8]) -> Result<Entry, EntryError> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(MAGIC.len()).ok() != Some(&MAGIC[..]) {
        return Err(EntryError::Foreign);
    }
    let key_len = usize::from(u16::from_le_bytes(r.array()?));
    if r.take(key_len)? != key.as_bytes() {
        return Err(EntryError::OtherKey);
    }
    let cubin_len = r.length()?;
    let stderr_len = r.length()?;
    let head = &bytes[..r.at];
    let stored: [u8; DIGEST] = r.array()?;
    let cubin = r.take(cubin_len)?;
    let stderr = r.take(stderr_len)?;
    if r.at != bytes.len() {
        return Err(EntryError::Trailing(bytes.len() - r.at));
    }
    if digest(head, cubin, stderr) != stored {
        return Err(EntryError::Checksum);
    }
    Ok(Entry {
        cubin: cubin.to_vec(),
        stderr: stderr.to_vec(),
    })
}

fn digest(head: &[u8], cubin: &[u8], stderr: &[u8]) -> [u8; DIGEST] {
    let mut h = Sha256::new();
    h.update(head);
    h.update(cubin);
    h.update(stderr);
    h.finalize().into()
}

/// Reads fields front to back; running out is [`EntryError::Truncated`].
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EntryError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(EntryError::Truncated(self.bytes.len()))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], EntryError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A `u64` length, which must fit in what is left of the file.
    fn length(&mut self) -> Result<usize, EntryError> {
        let n = u64::from_le_bytes(self.array()?);
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or(EntryError::Truncated(self.bytes.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            cubin: b"\x7fELF cubin bytes".to_vec(),
            stderr: b"ptxas info : Used 40 registers\n".to_vec(),
        }
    }

    #[test]
    fn round_trip() {
        let bytes = encode("k1", &entry());
        assert_eq!(decode("k1", &bytes), Ok(entry()));
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let bytes = encode("k1", &entry());
        for i in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(decode("k1", &bad).is_err(), "bit {i} flipped went unseen");
        }
    }

    #[test]
    fn truncated_lengthened_and_swapped_entries_are_misses() {
        let bytes = encode("k1", &entry());
        for n in 0..bytes.len() {
            assert!(decode("k1", &bytes[..n]).is_err(), "cut at {n}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(decode("k1", &long), Err(EntryError::Trailing(1)));
        assert_eq!(decode("k2", &bytes), Err(EntryError::OtherKey));
        assert_eq!(decode("k1", b"\x7fELF"), Err(EntryError::Foreign));
    }
}

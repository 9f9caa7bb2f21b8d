//! `.nv.info`, `.nv.info.<k>` and `.nv.compat` records: a sequence of 4-byte-aligned records
//! `u8 format, u8 attribute`, then by format: 1 NVAL `u16` (no value, kept), 2 BVAL and
//! 3 HVAL `u16`, 4 SVAL `u16 len` and `len` bytes.

use super::eiattr::Attr;
use super::elf::{rd_u32, wr_u32};

pub const EIFMT_NVAL: u8 = 1;
pub const EIFMT_BVAL: u8 = 2;
pub const EIFMT_HVAL: u8 = 3;
pub const EIFMT_SVAL: u8 = 4;

/// One record. `short` is the 16-bit field of NVAL/BVAL/HVAL records (the length for SVAL is
/// derived from `data` when encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub format: u8,
    pub attr: Attr,
    pub short: u16,
    pub data: Vec<u8>,
}

/// Why a record list did not parse: the byte offset of the bad record and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub offset: usize,
    pub what: String,
}

impl Record {
    /// The `i`-th `u32` of an SVAL value.
    pub fn word(&self, i: usize) -> Option<u32> {
        rd_u32(&self.data, i.checked_mul(4)?)
    }
    pub fn words(&self) -> impl Iterator<Item = u32> + '_ {
        self.data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }
    pub fn set_word(&mut self, i: usize, v: u32) -> Option<()> {
        wr_u32(&mut self.data, i.checked_mul(4)?, v)
    }
    /// Bytes this record takes when encoded.
    pub fn encoded_len(&self) -> usize {
        4 + if self.format == EIFMT_SVAL {
            self.data.len()
        } else {
            0
        }
    }
}

/// Parse a record list (the whole section). Never panics; loops at most `bytes.len() / 4`
/// times.
pub fn parse_records(bytes: &[u8]) -> Result<Vec<Record>, RecordError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let err = |what: &str| RecordError {
            offset: at,
            what: what.to_string(),
        };
        let head = bytes
            .get(at..at + 4)
            .ok_or_else(|| err("runs past the end"))?;
        let format = head[0];
        let attr = Attr::from_code(head[1]);
        let short = u16::from_le_bytes([head[2], head[3]]);
        let (data, next) = match format {
            EIFMT_NVAL | EIFMT_BVAL | EIFMT_HVAL => (Vec::new(), at + 4),
            EIFMT_SVAL => {
                let len = short as usize;
                let start = at + 4;
                let v = bytes
                    .get(start..start + len)
                    .ok_or_else(|| err("runs past the end"))?;
                (v.to_vec(), start + len)
            }
            other => return Err(err(&format!("has unknown format {other}"))),
        };
        out.push(Record {
            format,
            attr,
            short,
            data,
        });
        at = next;
    }
    Ok(out)
}

/// Encode a record list; the inverse of [`parse_records`] (byte-identical for any list it
/// returned). SVAL values longer than 0xffff bytes are refused.
pub fn encode_records(records: &[Record]) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::with_capacity(records.iter().map(Record::encoded_len).sum());
    for r in records {
        out.push(r.format);
        out.push(r.attr.code());
        if r.format == EIFMT_SVAL {
            let len = u16::try_from(r.data.len()).map_err(|_| RecordError {
                offset: out.len() - 2,
                what: format!("value of {} bytes does not fit a record", r.data.len()),
            })?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&r.data);
        } else {
            out.extend_from_slice(&r.short.to_le_bytes());
        }
    }
    Ok(out)
}

/// `.nv.callgraph`: `(i32 caller, i32 callee)` pairs (negative callees are sentinels).
pub fn parse_callgraph(bytes: &[u8]) -> Vec<(i32, i32)> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            (
                i32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                i32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect()
}

//! `.nv.info`, `.nv.info.<k>` and `.nv.compat` records: a sequence of 4-byte-aligned records
//! `u8 format, u8 attribute`, then by format: 1 NVAL `u16` (no value, kept), 2 BVAL and
//! 3 HVAL `u16`, 4 SVAL `u16 len` and `len` bytes.

use super::eiattr::Attr;
use super::elf::{rd_u32, wr_u32};

pub(crate) const EIFMT_NVAL: u8 = 1;
pub(crate) const EIFMT_BVAL: u8 = 2;
pub(crate) const EIFMT_HVAL: u8 = 3;
pub(crate) const EIFMT_SVAL: u8 = 4;

/// One record. `short` is the 16-bit field of NVAL/BVAL/HVAL records (the length for SVAL is
/// derived from `data` when encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub format: u8,
    pub attr: Attr,
    pub(crate) short: u16,
    pub data: Vec<u8>,
}

/// Why a record list did not parse: the byte offset of the bad record and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub(crate) offset: usize,
    pub(crate) what: String,
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
    pub(crate) fn set_word(&mut self, i: usize, v: u32) -> Option<()> {
        wr_u32(&mut self.data, i.checked_mul(4)?, v)
    }
    /// Bytes this record takes when encoded.
    pub(crate) fn encoded_len(&self) -> usize {
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
pub(crate) fn parse_callgraph(bytes: &[u8]) -> Vec<(i32, i32)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_name_codes() {
        // REGCOUNT [sym 5, 24 regs], MAXREG_COUNT 0xff, CTAIDZ_USED, an unknown 0x5f HVAL.
        let bytes = [
            4, 0x2f, 8, 0, 5, 0, 0, 0, 24, 0, 0, 0, //
            3, 0x1b, 0xff, 0, //
            1, 0x04, 0, 0, //
            3, 0x5f, 0x01, 0x01,
        ];
        let recs = parse_records(&bytes).unwrap();
        assert_eq!(recs.len(), 4);
        assert_eq!(recs[0].attr, Attr::Regcount);
        assert_eq!(recs[0].word(1), Some(24));
        assert_eq!(recs[1].attr.name(), "MAXREG_COUNT");
        assert_eq!(recs[2].attr, Attr::CtaidzUsed);
        assert_eq!(recs[3].attr, Attr::Unknown(0x5f));
        assert_eq!(encode_records(&recs).unwrap(), bytes);
    }

    #[test]
    fn malformed_records_are_errors() {
        assert_eq!(parse_records(&[4, 0x2f, 8, 0, 1]).unwrap_err().offset, 0);
        assert_eq!(
            parse_records(&[1, 4, 0, 0, 9, 4, 0, 0]).unwrap_err(),
            RecordError {
                offset: 4,
                what: "has unknown format 9".to_string()
            }
        );
        assert!(parse_records(&[1, 4]).is_err());
        assert_eq!(parse_records(&[]).unwrap(), vec![]);
    }

    #[test]
    fn every_code_has_a_stable_identity() {
        for c in 0..=255u8 {
            assert_eq!(Attr::from_code(c).code(), c);
        }
        let named = (0..=0x6du8)
            .filter(|&c| !matches!(Attr::from_code(c), Attr::Unknown(_)))
            .count();
        // 0x47, 0x56, 0x5a, 0x5f, 0x60, 0x63, 0x67 have no name in cuobjdump 13.5.
        assert_eq!(named, 0x6e - 7);
    }
}

//! [`OffsetMap`]: where each instruction offset of a text section goes when code is inserted.
//! Its own file because both the text edit ([`super::edit`]) and the `.debug_frame` range
//! update ([`super::debug_frame`]) follow it, and the edit calls the range update.

use super::error::CubinError;
use std::collections::BTreeMap;

/// Maps old instruction byte offsets of one text section to new ones, as a list of anchors:
/// an offset maps through the greatest anchor at or below it, keeping its distance to it.
/// The empty map is the identity; [`OffsetMap::shift_from`] describes one insertion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetMap {
    anchors: BTreeMap<u64, u64>,
}

impl OffsetMap {
    /// The identity.
    pub fn new() -> OffsetMap {
        OffsetMap::default()
    }

    /// Offsets at or after `at` move by `delta` bytes (an insertion of `delta` bytes at `at`
    /// when positive); offsets before `at` stay.
    pub fn shift_from(at: u64, delta: i64) -> OffsetMap {
        let mut m = OffsetMap::new();
        m.insert(0, 0);
        m.insert(at, at.saturating_add_signed(delta));
        m
    }

    /// Old offset `old` (and the offsets after it, up to the next anchor) goes to `new`.
    pub fn insert(&mut self, old: u64, new: u64) {
        self.anchors.insert(old, new);
    }

    /// The new offset of `old`.
    pub fn map(&self, old: u64) -> Option<u64> {
        match self.anchors.range(..=old).next_back() {
            None => Some(old),
            Some((&a_old, &a_new)) => a_new.checked_add(old - a_old),
        }
    }

    pub(super) fn map_or_err(&self, old: u64, what: &str) -> Result<u64, CubinError> {
        self.map(old).ok_or_else(|| CubinError::Unmapped {
            what: what.to_string(),
            offset: old,
        })
    }

    pub(super) fn map_u32(&self, old: u32, what: &str) -> Result<u32, CubinError> {
        let n = self.map_or_err(old as u64, what)?;
        u32::try_from(n).map_err(|_| CubinError::Range(format!("{what}: offset {n:#x}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_map_shifts_after_the_insertion_point() {
        let m = OffsetMap::shift_from(0x40, 0x80);
        assert_eq!(m.map(0x30), Some(0x30));
        assert_eq!(m.map(0x40), Some(0xc0));
        assert_eq!(m.map(0x100), Some(0x180));
        assert_eq!(OffsetMap::new().map(0x1234), Some(0x1234));
        let mut m = OffsetMap::new();
        m.insert(0, 0);
        m.insert(0x20, 0x40);
        m.insert(0x60, 0x70);
        assert_eq!(m.map(0x30), Some(0x50));
        assert_eq!(m.map(0x70), Some(0x80));
    }
}

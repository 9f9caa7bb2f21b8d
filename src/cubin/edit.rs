//! Edits.

/// Maps old instruction byte offsets to new ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetMap {
    anchors: std::collections::BTreeMap<u64, u64>,
}

//! The error type of reading, editing and writing a cubin (a refused splice has its own,
//! [`super::refusal`]).

/// Everything that can go wrong while reading, editing or writing a cubin. Each message is one
/// line that names what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CubinError {
    /// The ELF header or a table it points to cannot be read.
    #[error("ELF header: {0}")]
    Header(String),
    /// A section's contents do not follow the format its type implies.
    #[error("section {index} ({name}): {what}")]
    Section {
        index: usize,
        name: String,
        what: String,
    },
    /// A `.nv.info` record is malformed.
    #[error("section {index} ({name}): record at {offset:#x} {what}")]
    Record {
        index: usize,
        name: String,
        offset: usize,
        what: String,
    },
    /// No function (or kernel) of that name.
    #[error("no function `{0}` in the cubin")]
    NoFunction(String),
    /// The function exists but has no section of the kind the edit needs.
    #[error("function `{name}`: {what}")]
    Function { name: String, what: String },
    /// The kernel carries an attribute that holds instruction offsets in a layout this layer
    /// does not know, so moving its code would leave a stale offset behind.
    #[error(
        "function `{name}`: attribute {attr} ({code:#04x}) holds instruction offsets in an unknown layout; refusing to move code"
    )]
    UnknownOffsetLayout {
        name: String,
        attr: &'static str,
        code: u8,
    },
    /// An offset that the edit must move has no image in the offset map.
    #[error("{what}: offset {offset:#x} is not covered by the offset map")]
    Unmapped { what: String, offset: u64 },
    /// A value does not fit the field it must be written to.
    #[error("{0}: value out of range")]
    Range(String),
    /// A kernel's static shared memory cannot be added as ptxas lays it out (the section's
    /// place, its names, the module's first shared memory segment): the refusal's message
    /// (a `Refusal` would make this file and `refusal.rs`, which wraps a `CubinError`, a
    /// circle).
    #[error("function `{name}`: no shared memory section can be added as ptxas would: {why}")]
    SharedLayout { name: String, why: String },
}

impl CubinError {
    pub(crate) fn section(index: usize, name: &str, what: impl Into<String>) -> Self {
        CubinError::Section {
            index,
            name: name.to_string(),
            what: what.into(),
        }
    }
}

//! The one error type of the container layer: a typed kind, what is wrong and where.

use std::path::PathBuf;

/// What went wrong while reading, editing or writing a container file.
///
/// `Display` is always one line: where (file, archive member, section, container, entry and
/// byte offsets) and what.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The bytes are not what the format says they must be (bad magic, a size that runs past
    /// the end, overlapping sections, ...).
    #[error("{at}: {what}")]
    Malformed { at: String, what: String },
    /// The file is well formed but uses something this layer does not handle (ELF32, thin
    /// archives, editing a `--concat` entry, ...).
    #[error("{at}: not supported: {what}")]
    Unsupported { at: String, what: String },
    /// A compressed payload does not decode to the size its header gives.
    #[error("{at}: cannot decompress: {what}")]
    Decompress { at: String, what: String },
    /// An edit would make a section of a linked executable larger: resizing inside a linked
    /// image would move code and data that absolute addresses point to.
    #[error(
        "{at}: the new contents ({new:#x} bytes) do not fit in the section of a linked executable ({old:#x} bytes); growing sections of executables is not supported"
    )]
    ExecutableGrow { at: String, old: u64, new: u64 },
    /// An error from an edit callback (see `Artifact::edit_cubins`).
    #[error("{at}: {what}")]
    Edit { at: String, what: String },
    /// Not a fatbin, a cubin, a host ELF or an `ar` archive.
    #[error("not a fatbin, cubin, ELF file or ar archive (first bytes {first})")]
    UnknownFormat { first: String },
    /// Reading the file failed.
    #[error("{}: {what}", path.display())]
    Io { path: PathBuf, what: String },
    /// Another error, in a named file.
    #[error("{}: {source}", path.display())]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<ContainerError>,
    },
}

/// Make a text safe to put in a one-line message.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

impl ContainerError {
    pub(crate) fn malformed(at: impl Into<String>, what: impl Into<String>) -> Self {
        ContainerError::Malformed {
            at: at.into(),
            what: one_line(&what.into()),
        }
    }

    pub(crate) fn unsupported(at: impl Into<String>, what: impl Into<String>) -> Self {
        ContainerError::Unsupported {
            at: at.into(),
            what: one_line(&what.into()),
        }
    }

    /// Put `outer` (e.g. `"section .nv_fatbin"`) in front of where the error is.
    pub(crate) fn within(self, outer: &str) -> Self {
        let join = |at: String| {
            if at.is_empty() {
                outer.to_string()
            } else if outer.is_empty() {
                at
            } else {
                format!("{outer} {at}")
            }
        };
        match self {
            ContainerError::Malformed { at, what } => {
                ContainerError::Malformed { at: join(at), what }
            }
            ContainerError::Unsupported { at, what } => {
                ContainerError::Unsupported { at: join(at), what }
            }
            ContainerError::Decompress { at, what } => {
                ContainerError::Decompress { at: join(at), what }
            }
            ContainerError::ExecutableGrow { at, old, new } => ContainerError::ExecutableGrow {
                at: join(at),
                old,
                new,
            },
            ContainerError::Edit { at, what } => ContainerError::Edit { at: join(at), what },
            other => other,
        }
    }

    /// The same error, named after the file it came from.
    pub(crate) fn in_file(self, path: impl Into<PathBuf>) -> Self {
        match self {
            e @ (ContainerError::Io { .. } | ContainerError::InFile { .. }) => e,
            e => ContainerError::InFile {
                path: path.into(),
                source: Box::new(e),
            },
        }
    }
}

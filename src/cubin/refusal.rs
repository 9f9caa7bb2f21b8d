//! Why the splice ([`super::splice`]) or the entry copy ([`super::entry`]) refused a kernel.
//! The caller falls back to a ptxas run; the reason is for tests and debugging, so each kind
//! is a variant a test can match, and its message is one line.

use super::CubinError;
use super::callgraph::CallGraphError;
use super::nvinfo::RecordError;

/// A refused splice or entry copy: the kernel (empty for the module as a whole) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("splice {kernel}: {what}")]
pub struct SpliceError {
    pub(crate) kernel: String,
    pub what: Refusal,
}

/// What about the module or the donor stands in the way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Reading or writing the ELF failed.
    #[error("{0}")]
    Cubin(#[from] CubinError),
    /// A `.nv.info` record list does not parse or encode.
    #[error("{}", .0.what)]
    Records(RecordError),
    /// A `.nv.info` record is shorter than the words it must hold.
    #[error("short record")]
    ShortRecord,
    /// A `.nv.callgraph` section does not parse.
    #[error("{section}: {error}")]
    CallGraph {
        section: String,
        error: CallGraphError,
    },
    /// A mapped symbol index does not fit the call graph's signed field.
    #[error("{0}")]
    SymbolIndex(#[from] std::num::TryFromIntError),
    /// The sm_100+ copy of the code (`.nv.merc.*`, `.nv.capmerc.*`) would keep the old code.
    #[error("{section} (the sm_100+ copy of the code) is not spliced")]
    Merc { section: String },
    /// Debug information that describes the code by address (issue 48).
    #[error("{section}: debug information would not describe the new code")]
    DebugInfo { section: String },
    /// A module constant bank of the donor does not read the same in the module.
    #[error("{bank}: {why}")]
    Bank { bank: String, why: Box<Refusal> },
    /// The bank is not in the module at all.
    #[error("not in the module")]
    BankMissing,
    /// The bank's bytes differ.
    #[error("other bytes in the module")]
    BankBytes,
    /// A relocation of the donor's bank the module's does not have.
    #[error("offset {offset:#x} holds `{symbol}` in the donor, not in the module")]
    BankRelocation { offset: u64, symbol: String },
    /// An object of the donor's bank sits elsewhere in the module's.
    #[error("`{symbol}` is placed elsewhere in the module")]
    BankObject { symbol: String },
    /// A relocation section does not parse.
    #[error("bad relocations")]
    BadRelocations,
    /// A symbol or section name offset past its string table (a damaged file).
    #[error("a name at {0:#x}, past its string table")]
    NameOutOfRange(u32),
    /// A relocation names a symbol index past the table.
    #[error("relocation symbol out of range")]
    RelocationSymbol,
    /// No function of the kernel's name (or it has no section).
    #[error("no such function")]
    NoSuchFunction,
    /// A donor symbol index past the table.
    #[error("symbol {0} out of range")]
    SymbolOutOfRange(u32),
    /// A donor symbol the module lacks.
    #[error("symbol `{0}` not in the base")]
    SymbolNotInBase(String),
    /// The two text sections define different symbols.
    #[error("different symbols in the text section")]
    TextSymbols,
    /// A kernel section of the donor the module lacks.
    #[error("{0} not in the base")]
    SectionNotInBase(String),
    /// A kernel section (bank, shared, local) that differs between the two.
    #[error("{0} differs")]
    SectionDiffers(String),
    /// A part (`.nv.info` section, code relocations, `.debug_frame`) only one side has.
    #[error("one side has no {0}")]
    OneSided(&'static str),
    /// REL on one side, RELA on the other.
    #[error("relocation kinds differ")]
    RelocationKinds,
    /// The donor's global `.nv.info` has fewer records of the kernel.
    #[error("fewer global records in the donor")]
    FewerGlobalRecords,
    /// The donor's global `.nv.info` has more records of the kernel.
    #[error("more global records in the donor")]
    MoreGlobalRecords,
    /// A global record of the kernel with another attribute, length or function.
    #[error("global records differ in shape")]
    GlobalRecordShape,
    /// A function of the kernel's code calls one compiled in a section of its own.
    #[error("{function} calls {callee}, which has a section of its own")]
    CallsOutside { function: String, callee: String },
    /// A relocation of the kernel's frame records that lies outside them or names a
    /// symbol not of the kernel's code.
    #[error("a relocation of the kernel's frame records this cannot copy")]
    FrameRelocation,
    /// A pointer or length runs past `.debug_frame`.
    #[error("short .debug_frame")]
    ShortDebugFrame,
    /// ptxas writes each FDE right after its CIE; this one is not.
    #[error("an FDE whose CIE is not right before it")]
    CieNotBeforeFde,
    /// A kernel's frame records are not one run of its own in `.debug_frame` (ptxas writes
    /// them together, each FDE after its CIE).
    #[error("the kernel's .debug_frame records are not one run of their own")]
    FrameRun,
    /// An FDE too short or running past its section.
    #[error("an FDE of an unknown shape")]
    FdeUnknownShape,
    /// An FDE's location has no relocation.
    #[error("an FDE location without a relocation")]
    FdeLocation,
    /// The donor's `.debug_frame` has no relocation section.
    #[error("no relocations for the donor's .debug_frame")]
    DonorFrameRelocations,
    /// The module's `.debug_frame` has no relocation section.
    #[error("no relocations for .debug_frame")]
    FrameRelocations,
    /// The module has no `.debug_frame` to add the kernel's frame to.
    #[error("the module has no .debug_frame")]
    NoDebugFrame,
    /// `-rdc` code: nvlink links it.
    #[error("relocatable device code is linked by nvlink, not here")]
    Relocatable,
    /// The new kernel's name is taken.
    #[error("the module already has a symbol of that name")]
    NameTaken,
    /// The kernel's code section holds a function other than the kernel and its local
    /// helpers `$<kernel>$<helper>` (e.g. a slow path `$__internal_<n>_$...`, numbered over
    /// the whole module).
    #[error("`{0}` shares the kernel's code section")]
    SharedCode(String),
    /// A section of the kernel of a kind the copy does not know.
    #[error("{0} is a part this cannot copy")]
    UnknownPart(String),
    /// A section whose name has none of the known kind prefixes.
    #[error("a section of no known kind")]
    NoKnownKind,
    /// The module has no section of the kind to place the copy's after.
    #[error("the module has no {0}* section to place one after")]
    NoPlaceFor(&'static str),
    /// A kernel's new shared section in a layout whose program headers this cannot extend
    /// as ptxas would (`shared_segment`).
    #[error("no shared memory segment can be added here: {0}")]
    NoSharedSegment(&'static str),
    /// The donor's kernel symbol is local.
    #[error("the kernel's symbol is not global")]
    KernelNotGlobal,
    /// The symbol table names no string table.
    #[error("no symbol name table")]
    NoStrtab,
    /// The string table outgrew 32-bit offsets.
    #[error(".strtab too large")]
    StrtabTooLarge,
    /// A section symbol that should have been added is missing.
    #[error("a section symbol was not added")]
    SectionSymbolMissing,
    /// The donor has no symbol for the kernel.
    #[error("no kernel symbol")]
    NoKernelSymbol,
    /// The added entry symbol is missing.
    #[error("the entry symbol was not added")]
    EntrySymbolMissing,
    /// One side has no global `.nv.info`.
    #[error("no global .nv.info")]
    NoGlobalInfo,
}

impl From<RecordError> for Refusal {
    fn from(e: RecordError) -> Self {
        Refusal::Records(e)
    }
}

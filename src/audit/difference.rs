//! What the assembly check found different between the shipped cubin and the cubin a
//! function's code came from ([`super::AuditError::Disagrees`]). Each is one line, as the
//! warnings and reports show it.

use std::collections::BTreeSet;

/// One disagreement (the first found for a function, or for the module).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Difference {
    /// The toolkit could not read the shipped cubin (or printed what cannot be read).
    #[error("{0}")]
    Unreadable(String),
    /// A function's line table (`nvdisasm -g -gp`) is not its origin's (`super::lines`).
    #[error("{0}")]
    LineTable(super::LineTableDifference),
    /// A function's call frame information (`.debug_frame`) is not its origin's
    /// (`super::frames`), or cannot be read.
    #[error("call frame information: {0}")]
    Frame(super::FrameError),
    #[error("not in the shipped cubin")]
    NotShipped,
    #[error("missing from the shipped cubin")]
    MissingFromShipped,
    #[error(
        "its register limit is not ptxas's, and it calls {callee}, which another module defines"
    )]
    CallsOutOfModule { callee: String },
    // The module's own parts.
    #[error("module section {0} is on one side only")]
    ModuleSectionOneSide(String),
    #[error("module section {0} differs")]
    ModuleSection(String),
    #[error("object `{0}` differs")]
    Object(String),
    #[error("module attributes differ")]
    ModuleAttributes,
    /// The writable segment is not what ptxas writes for the shipped sections (`segments`).
    #[error("program headers: {0}")]
    ProgramHeaders(String),
    // A function's section and what belongs to it.
    #[error("no code section .text.{0}")]
    NoCodeSection(String),
    #[error("no section {0:#x}")]
    NoSection(usize),
    #[error(
        "its code section differs (size {size:#x}/{origin_size:#x}, registers in sh_info {registers}/{origin_registers})"
    )]
    CodeSection {
        size: u64,
        origin_size: u64,
        registers: u64,
        origin_registers: u64,
    },
    #[error("its code section's alignment, flags or type differ")]
    CodeSectionShape,
    #[error("symbol `{0}` differs in its code section")]
    Symbol(String),
    /// The first of two lists (relocations, records) where they part: each side's entry as
    /// printed for debugging, `None` past its end.
    #[error("{what} differs: {shipped} where the code was compiled has {origin}")]
    List {
        what: String,
        shipped: String,
        origin: String,
    },
    #[error("its sections differ: {shipped:?} where the code was compiled has {origin:?}")]
    OwnSections {
        shipped: BTreeSet<String>,
        origin: BTreeSet<String>,
    },
    #[error("{section} differs in size or type ({size:#x}/{origin_size:#x})")]
    SectionShape {
        section: String,
        size: u64,
        origin_size: u64,
    },
    #[error("{0} holds other bytes")]
    SectionBytes(String),
    #[error("{0} shrank or holds bytes")]
    SharedShrank(String),
    #[error("{0} is missing")]
    SectionMissing(String),
    #[error("call {from} → {to} is on one side only")]
    CallOneSide { from: String, to: String },
    #[error("callgraph list {list} row {from} → {to} is on one side only")]
    CallgraphRow { list: i64, from: String, to: String },
    #[error("it calls {0}, whose code differs from the one it was compiled with")]
    CalleeCode(String),
    // Records the proof allows to change.
    #[error("{function}: launch bound raised")]
    LaunchBoundRaised { function: String },
    #[error("{function}: {attribute} raised ({shipped:#x} from {origin:#x})")]
    StackRaised {
        function: String,
        attribute: String,
        shipped: u64,
        origin: u64,
    },
    #[error("{function}: {attribute} is on one side only")]
    AttributeOneSide { function: String, attribute: String },
    #[error("{function}: its instruction-offset records differ")]
    OffsetRecords { function: String },
    #[error("no register count recorded")]
    NoRegisterCount,
    #[error("registers in sh_info {header}, in its attributes {attributes}")]
    RegisterCounts { header: u64, attributes: u64 },
    #[error("its code names R{highest}, with {count} registers")]
    RegisterAboveCount { highest: u64, count: u64 },
    #[error("its frame shrank, but `{instruction}` at {at:#x} still uses local memory")]
    FrameStillUsed { instruction: String, at: u64 },
    #[error("its frame shrank, but {caller} calls {callee} outside it")]
    FrameLeftByCall { caller: String, callee: String },
    // The code, instruction by instruction.
    #[error("nvdisasm lists no {0}")]
    NotListed(String),
    #[error("{shipped} instructions where the code was compiled has {origin}")]
    InstructionCount { shipped: usize, origin: usize },
    /// At a section offset of the shipped code.
    #[error("at {at:#x}: {what}")]
    At { at: u64, what: Box<Difference> },
    #[error("`{shipped}` where the code was compiled has `{origin}`")]
    Instruction { shipped: String, origin: String },
    #[error("`{instruction}` reads {shipped} where the code was compiled reads {origin}")]
    BankRead {
        instruction: String,
        shipped: String,
        origin: String,
    },
    #[error("`{0}`: two bank operands moved")]
    TwoBankOperands(String),
    #[error("`{instruction}` is encoded differently ({shipped:032x} / {origin:032x})")]
    Encoding {
        instruction: String,
        shipped: u128,
        origin: u128,
    },
    // Module-level constant banks.
    #[error("an indexed read of bank {bank}, laid out differently: {what}")]
    IndexedBank { bank: u32, what: Box<Difference> },
    #[error("{bank} offset {offset:#x} holds `{symbol}` where the code was compiled, {shipped}")]
    BankRelocation {
        bank: String,
        offset: u64,
        symbol: String,
        shipped: String,
    },
    #[error("{bank}: `{object}` is placed elsewhere")]
    BankObject { bank: String, object: String },
}

//! SASS: what the instructions of a cubin are. For now read-only: the control field of every
//! instruction (the same on sm_70 to sm_120), the toolkit's own disassembly of each function
//! (`listing`, the authority), a decoding straight from the bytes for the tuner's hot path
//! (`raw`: mnemonic, predicate, branch and call targets), and a class per mnemonic for the
//! stall predictor. Encoding, operand tables and re-layout
//! come with the SASS rewriting layer.

pub mod class;
pub mod control;
pub mod decode;
pub mod encode;
pub mod ir;
pub mod listing;
pub mod opcodes;
pub mod operands;
pub mod raw;
pub mod relayout;

pub use class::OpClass;
pub use control::Control;
pub use listing::{Function, Instr, ListingError};

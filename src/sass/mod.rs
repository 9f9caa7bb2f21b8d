//! SASS: what the instructions of a cubin are, in one IR ([`ir`]: the typed [`Opcode`] with
//! its modifiers, operands, targets, control bits). Two decoders fill it: `decode` from
//! nvdisasm with operand tables (rewrites, checker, `debug sass`) and `raw` from the bytes
//! alone (the predictor's hot path). Beside it: the control field of every instruction (the
//! same on sm_70 to sm_120), the toolkit's own text listing (`listing`, the authority tests
//! compare with), a class per mnemonic, encodings, operand tables and re-layout. What differs
//! per architecture is asked of [`crate::arch`].

pub mod access;
pub mod control;
pub mod decode;
pub mod encode;
pub mod ir;
pub mod listing;
pub(crate) mod opcode;
pub(crate) mod opcodes;
pub(crate) mod operands;
pub mod raw;
pub mod relayout;

pub use control::Control;
pub use ir::{Function, Instr};
pub use opcode::{Op, Opcode};

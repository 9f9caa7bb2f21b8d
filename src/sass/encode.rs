//! Encoding: patching register, predicate and immediate fields in the raw 128 bits, and
//! swapping opcodes within a family (STL↔STS, LDL↔LDS).

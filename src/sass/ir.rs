//! The instruction IR: address, raw 128 bits, opcode and modifiers, guard predicate, operands
//! with role, register file and width, branch and call targets, control bits.

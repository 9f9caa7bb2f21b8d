//! Operand tables, per architecture family: for each opcode and modifier, which operands are
//! written and read and how many registers each covers. Data, not code; an opcode or form not
//! here is unknown and its registers are pinned.

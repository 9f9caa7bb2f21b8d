//! Re-layout: inserting and deleting instructions in a function with every branch, call,
//! BSSY, BRX jump table, RET.REL, return-address immediate, offset attribute, symbol,
//! `.debug_frame` range and relocation moved to match.

//! `.debug_frame` (64-bit DWARF CFI).

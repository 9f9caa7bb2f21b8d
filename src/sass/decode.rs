//! Decoding a cubin's functions into the IR: nvdisasm's text for what each instruction is, our
//! operand tables for what it reads and writes.

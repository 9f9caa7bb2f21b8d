//! The CUDA device ELF (cubin): sections, symbols, relocations, `.nv.info` attributes,
//! shared-memory sections and program headers; read, edit, write.

#![no_main]
//! The assembly check's own readers (`audit::fuzz_readers`, built only under cargo-fuzz's
//! `--cfg fuzzing`): a cubin's program and section headers (compared with themselves) and
//! its `.debug_frame` (read through `object` and `gimli`, then each function's FDEs compared
//! with themselves), and the input as the text of cuobjdump's `-elf`, nvdisasm's `-g -gp` and
//! `-json` listings. Any bytes give a reading, a typed error or a difference, never a panic.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nvcc_orion::audit::fuzz_readers(data);
});

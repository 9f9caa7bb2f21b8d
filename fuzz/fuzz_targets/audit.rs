#![no_main]
//! The assembly check's own readers (`audit::fuzz_readers`, built only under cargo-fuzz's
//! `--cfg fuzzing`): a cubin's `.debug_frame` (read through `object` and `gimli`, then each
//! function's FDEs compared with themselves), and the input as the text of cuobjdump's `-elf`,
//! nvdisasm's `-g -gp` and `-json` listings. Any bytes give a reading or a typed error, never
//! a panic.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    nvcc_orion::audit::fuzz_readers(data);
});

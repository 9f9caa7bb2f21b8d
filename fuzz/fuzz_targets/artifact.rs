#![no_main]
// Placeholder: replaced by the parser's real target.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = data;
});

#![no_main]
//! The `.nv.info` record parser alone: never panics, and what it accepts re-encodes to the
//! same bytes.
use nvcc_orion::cubin::{encode_records, parse_records};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(records) = parse_records(data) {
        let out = encode_records(&records).expect("parsed records encode");
        assert_eq!(out, data);
    }
});

#![no_main]
//! nvdisasm's listings as the decoder and the oracle read them: `nvdisasm -json` with the
//! cubin it lists (`sass::listing::from_json`; the input split at the first NUL byte into the
//! two) and `nvdisasm -c -plr` (`verify::plr::parse`, the whole input as text). Any bytes
//! give listings or a typed error, never a panic.
use nvcc_orion::sass::listing;
use nvcc_orion::verify::plr;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (json, cubin) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let _ = listing::from_json(json, cubin);
    let _ = plr::parse(&String::from_utf8_lossy(data));
});

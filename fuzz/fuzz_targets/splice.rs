#![no_main]
//! Splicing kernels between two cubins (`cubin::splice::splice`, with the `.debug_frame`
//! re-layout and the shared sections it brings): the input is a base cubin and a donor
//! (a little-endian u32 giving the base's length, then the two). Each kernel of the donor,
//! then all of them at once, is spliced into the base: any bytes give a refusal or a cubin
//! that parses again, never a panic.
use nvcc_orion::cubin::Cubin;
use nvcc_orion::cubin::splice::splice;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let (a, b) = rest.split_at((u32::from_le_bytes(*len) as usize).min(rest.len()));
    let (Ok(base), Ok(donor)) = (Cubin::parse(a), Cubin::parse(b)) else {
        return;
    };
    let kernels: Vec<String> = donor.kernels().into_iter().map(|k| k.name).collect();
    let mut all = Vec::new();
    for k in &kernels {
        if let Ok(bytes) = splice(&base, &[(k.as_str(), &donor)]) {
            Cubin::parse(&bytes).expect("a spliced cubin parses");
        }
        all.push((k.as_str(), &donor));
    }
    if let Ok(bytes) = splice(&base, &all) {
        Cubin::parse(&bytes).expect("a spliced cubin parses");
    }
});

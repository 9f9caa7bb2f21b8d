#![no_main]
//! The measured-selection profile reader: never panics on any bytes; what it accepts
//! re-serialises to a profile it accepts again with the same entries, and the winner search
//! over it never panics.
use std::path::Path;

use nvcc_orion::profile::Profile;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let file = Path::new("fuzz.json");
    if let Ok(p) = Profile::parse(data, file) {
        let again = Profile::parse(p.to_json().as_bytes(), file).expect("re-serialised profile");
        assert_eq!(again.entries.len(), p.entries.len());
        for e in &p.entries {
            let names: Vec<&str> = (0..=e.variant).map(|_| e.variant_name.as_str()).collect();
            let _ = p.winner(&e.kernel, &e.arch, &names);
        }
    }
});

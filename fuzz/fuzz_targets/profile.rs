#![no_main]
//! The measured-selection profile reader: never panics on any bytes; what it accepts
//! re-serialises to a profile it accepts again with the same entries, and the winner search
//! and totals over it never panic. Each kernel is looked up once (the reader is linear; a
//! lookup per entry would make the target quadratic itself).
use std::path::Path;

use nvcc_orion::profile::Profile;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let file = Path::new("fuzz.json");
    if let Ok(p) = Profile::parse(data, file) {
        let again = Profile::parse(p.to_json().as_bytes(), file).expect("re-serialised profile");
        assert_eq!(again.entries.len(), p.entries.len());
        let mut seen = std::collections::BTreeSet::new();
        for e in &p.entries {
            if !seen.insert((e.kernel.as_str(), e.arch.as_str())) {
                continue;
            }
            let names: Vec<&str> = (0..=e.variant).map(|_| e.variant_name.as_str()).collect();
            let _ = p.winner(&e.kernel, &e.arch, &names);
            let _ = p.totals(&e.kernel, &e.arch, names.len());
        }
    }
});

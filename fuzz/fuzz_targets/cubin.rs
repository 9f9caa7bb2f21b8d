#![no_main]
//! Any bytes: `Cubin::parse` never panics; a cubin that parses answers its queries, writes,
//! and the written file parses again to the same functions. Edits on it never panic either.
use nvcc_orion::cubin::{Cubin, OffsetMap};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(c) = Cubin::parse(data) else { return };
    let funcs = c.functions();
    let _ = c.kernels();
    let out = c.write().expect("a parsed cubin writes");
    assert_eq!(out, data, "unedited write is byte-identical");
    let back = Cubin::parse(&out).expect("written cubin parses");
    assert_eq!(back.functions(), funcs);
    // Edits: must not panic; when they succeed the result must parse.
    if let Some(f) = funcs.first() {
        let mut e = c.clone();
        if e.set_register_count(&f.name, 40).is_ok() {
            if let Ok(b) = e.write() {
                let _ = Cubin::parse(&b);
            }
        }
        let mut e = c.clone();
        if e.set_shared_size(&f.name, 4096).is_ok() {
            if let Ok(b) = e.write() {
                let _ = Cubin::parse(&b);
            }
        }
        let mut e = c.clone();
        let code = vec![0u8; (f.text_size as usize).min(1 << 16) / 16 * 16 + 128];
        if e.replace_text(&f.name, code, &OffsetMap::shift_from(16, 128))
            .is_ok()
        {
            if let Ok(b) = e.write() {
                let _ = Cubin::parse(&b);
            }
        }
    }
});

#![no_main]
//! Bytes → `container::read` (fatbin, cubin, host ELF, archive). If it parses: list the images,
//! write it back (the identity), then replace every cubin by itself stored uncompressed and
//! write again. Nothing may panic.
use nvcc_orion::container;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(mut art) = container::read(data.to_vec()) else {
        return;
    };
    let _ = art.images();
    if let Ok(out) = art.write() {
        assert_eq!(out, data, "unedited write is not the identity");
    }
    let _ = art.kind_name();
    if art.edit_cubins(|_, img| Ok(Some(img.to_vec()))).is_ok()
        && let Ok(out) = art.write()
    {
        let _ = container::read(out).map(|a| a.images().map(|i| i.len()));
    }
});

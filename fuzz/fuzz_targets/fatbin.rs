#![no_main]
//! Bytes → fatbin (a sequence of containers with zero padding). If it parses: writing it back
//! gives the input exactly (a successful parse consumes every byte), every entry's image either
//! decodes or is an error, and storing each image uncompressed gives a fatbin that parses again
//! with the same images. `--concat` parts are listed and extracted (read-only).
use nvcc_orion::container::{EntryKind, Fatbin};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(mut fb) = Fatbin::parse(data) else {
        return;
    };
    assert_eq!(fb.write(), data, "unedited write is not the identity");
    let mut images = Vec::new();
    for c in fb.containers_mut() {
        for e in &mut c.entries {
            if let Ok(parts) = e.concat_parts() {
                for p in &parts {
                    let _ = e.concat_part_image(p);
                }
            }
            let img = e.image().map(|i| i.into_owned());
            if let Ok(img) = img
                && matches!(e.kind(), EntryKind::Elf | EntryKind::Ptx)
            {
                e.set_image(img.clone()).unwrap();
                images.push(e.image().unwrap().into_owned());
            }
        }
    }
    let out = fb.write();
    assert_eq!(out.len() as u64, fb.written_len());
    let again = Fatbin::parse(&out).expect("an edited fatbin parses again");
    let back: Vec<Vec<u8>> = again
        .entries()
        .filter(|(_, _, e)| matches!(e.kind(), EntryKind::Elf | EntryKind::Ptx))
        .filter_map(|(_, _, e)| e.image().ok().map(|i| i.into_owned()))
        .collect();
    if images.len() == back.len() {
        assert_eq!(images, back);
    }
});

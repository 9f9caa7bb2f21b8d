//! One static winner (issue 31): under `NVCC_ORION=adapt` the original kernel names ship
//! exactly what a default build ships. Adapt builds every cliff budget for the selector,
//! including those a default build prunes, but the static winner is chosen among the default
//! build's candidates alone: on every test kernel, example and build benchmark the report's
//! choice and the cubin's kernel code are the same in both builds.
//!
//! The default build is a `-cubin` (the device side alone) and the adapt build an object (its
//! host side carries the selector): nvcc-orion's choice and ptxas's code do not depend on the
//! host compile, which is most of an object build's time (issue 50: the test ran 168 s).
//! The kernel code is compared as the cubins' bytes (each function's section and relocations,
//! see [`code_of`]), which is what `cuobjdump -sass` listed, without its 54 runs.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Vec::new();
    for dir in [
        "examples/kernels",
        "bench/build",
        "tests/kernels/tune",
        "tests/kernels/multi",
        "tests/kernels/assembly",
        "tests/kernels/spill_corpus",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cu"))
            .collect();
        files.sort();
        v.extend(files);
    }
    v
}

/// Per kernel of the report: (chosen budget, chosen registers, reason).
fn choices(report: &Path) -> BTreeMap<String, (serde_json::Value, u64, String)> {
    std::fs::read_to_string(report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| {
            let chosen = r["chosen"].as_u64().unwrap() as usize;
            (
                r["kernel"].as_str().unwrap().to_string(),
                (
                    r["candidates"][chosen]["budget"].clone(),
                    r["chosen_registers"].as_u64().unwrap(),
                    r["reason"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// Each function's code in the cubins of `file` (a cubin, or an object whose cubins
/// `cuobjdump -xelf all` extracts into `scratch`): the bytes of its `.text.<name>` section and
/// its relocations, appended in image order for a name in several images.
///
/// This is what `cuobjdump -sass` prints of a function, read without the disassembler (issue
/// 50: its ~0.6 s a run was 54 runs here): every listing line is one 16-byte instruction of the
/// section with its encoding, and the only other input to the listing is the relocations, whose
/// targets it names. Equal bytes and relocations give equal listings, and equal listings
/// (encodings included) give equal bytes, so the comparison is the one the listing made.
fn code_of(file: &Path, scratch: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for cubin in cubins_in(file, scratch) {
        let bytes = std::fs::read(&cubin).unwrap();
        let parsed = nvcc_orion::cubin::Cubin::parse(&bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", cubin.display()));
        for s in &parsed.elf().sections {
            if let Some(name) = s.name.strip_prefix(".text.") {
                let code = out.entry(name.to_string()).or_default();
                code.extend_from_slice(&s.data);
                code.extend(relocations(&parsed, &format!(".rela{}", s.name), 24));
                code.extend(relocations(&parsed, &format!(".rel{}", s.name), 16));
            }
        }
    }
    out
}

/// The cubins of `file`: itself when it is one, else those `cuobjdump -xelf all` extracts.
fn cubins_in(file: &Path, scratch: &Path) -> Vec<PathBuf> {
    if file.extension().is_some_and(|e| e == "cubin") {
        return vec![file.to_path_buf()];
    }
    std::fs::create_dir_all(scratch).unwrap();
    let o = common::command(common::fixtures::tool("cuobjdump"))
        .args(["-xelf", "all"])
        .arg(file)
        .current_dir(scratch)
        .output()
        .unwrap();
    common::assert_ok(&o, &format!("cuobjdump -xelf all {}", file.display()));
    let mut found: Vec<PathBuf> = std::fs::read_dir(scratch)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cubin"))
        .collect();
    // Sorted by name (`<base>.<N>.sm_XX.cubin`) so that the order is the same every run.
    found.sort();
    assert!(!found.is_empty(), "{}: no cubin", file.display());
    found
}

/// The relocation section `name` of `cubin` (entries of `size` bytes: 24 RELA, 16 REL) as
/// bytes that compare across cubins: offset, type and addend as stored, the target by its
/// symbol's name (symbol indices differ between an adapt and a default cubin).
fn relocations(cubin: &nvcc_orion::cubin::Cubin, name: &str, size: usize) -> Vec<u8> {
    let Some(section) = cubin.elf().sections.iter().find(|s| s.name == name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in section.data.chunks(size) {
        assert_eq!(entry.len(), size, "{name}: a partial relocation entry");
        let info = u64::from_le_bytes(entry[8..16].try_into().unwrap());
        let target = &cubin.symbols()[(info >> 32) as usize].name;
        out.extend_from_slice(&entry[..8]);
        out.extend_from_slice(&(info as u32).to_le_bytes());
        out.extend_from_slice(&entry[16..]);
        out.extend_from_slice(target.as_bytes());
        out.push(0);
    }
    out
}

#[test]
fn adapt_originals_are_what_the_default_build_ships() {
    let Some(nvcc) = common::nvcc_or_skip("static_winner") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut compared = 0;
    for src in sources() {
        let name = src.file_stem().unwrap().to_string_lossy().into_owned();
        let build = |mode: &str| {
            let report = dir.path().join(format!("{name}.{mode}.jsonl"));
            // Adapt builds an object, not a -cubin: a -cubin under adapt has no host object for
            // the glue, so it gets no selector and is a default build (docs/selector.md). The
            // default build needs no host side: its cubin is what its object would embed.
            let (kind, ext) = if mode == "adapt" {
                ("-c", "o")
            } else {
                ("-cubin", "cubin")
            };
            let object = dir.path().join(format!("{name}.{mode}.{ext}"));
            let mut c = common::without_our_settings(common::orion(), &nvcc);
            if mode == "adapt" {
                c.env("NVCC_ORION", "adapt");
            }
            let o = c
                .env("NVCC_ORION_CACHE", &cache)
                .env("NVCC_ORION_REPORT", &report)
                .args([kind, "-arch=sm_90", "-I"])
                .arg(src.parent().unwrap())
                .arg(&src)
                .arg("-o")
                .arg(&object)
                .output()
                .unwrap();
            common::assert_ok(&o, &format!("{name} ({mode})"));
            let scratch = dir.path().join(format!("{name}.{mode}.cubins"));
            (choices(&report), code_of(&object, &scratch))
        };
        let (tune, tune_code) = build("tune");
        let (adapt, adapt_code) = build("adapt");
        assert_eq!(
            adapt, tune,
            "{name}: adapt's static winners are the default build's"
        );
        // Every kernel the report chose for has code in the default build's cubin, so the
        // comparison below covers them all.
        let missing: Vec<&String> = tune
            .keys()
            .filter(|k| !tune_code.contains_key(*k))
            .collect();
        assert!(missing.is_empty(), "{name}: no SASS for {missing:?}");
        for (k, code) in &tune_code {
            let got = adapt_code.get(k).map(Vec::as_slice).unwrap_or(&[]);
            let first = code.iter().zip(got).position(|(a, b)| a != b);
            assert!(
                got == code.as_slice(),
                "{name}: {k} ships other code under adapt: first differing byte {first:?} \
                 ({} / {} bytes)",
                code.len(),
                got.len()
            );
        }
        compared += tune.len();
    }
    assert!(compared >= 100, "only {compared} kernels compared");
}

//! One static winner (issue 31): under `NVCC_ORION=adapt` the original kernel names ship
//! exactly what a default build ships. Adapt builds every cliff budget for the selector,
//! including those a default build prunes, but the static winner is chosen among the default
//! build's candidates alone: on every test kernel, example and build benchmark the report's
//! choice and the cubin's kernel code are the same in both builds.
//!
//! The default build is a `-cubin` (the device side alone) and the adapt build an object (its
//! host side carries the selector): nvcc-orion's choice and ptxas's code do not depend on the
//! host compile, which is most of an object build's time (issue 50: the test ran 168 s).

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

/// `cuobjdump -sass` of each function in `object`: its instruction lines (with encodings).
fn sass_of(object: &Path) -> BTreeMap<String, String> {
    let text = common::fixtures::cuobjdump(&["-sass"], object).unwrap();
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            current = Some(name.to_string());
        } else if t.starts_with("....") {
            current = None;
        } else if let Some(k) = current.as_ref().filter(|_| t.starts_with("/*")) {
            // cuobjdump pads columns to the widest line of the file.
            let code: &mut String = out.entry(k.clone()).or_default();
            code.push_str(&t.split_whitespace().collect::<Vec<_>>().join(" "));
            code.push('\n');
        }
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
            (choices(&report), sass_of(&object))
        };
        let (tune, tune_sass) = build("tune");
        let (adapt, adapt_sass) = build("adapt");
        assert_eq!(
            adapt, tune,
            "{name}: adapt's static winners are the default build's"
        );
        // Every kernel the report chose for has code in the default build's cubin, so the
        // comparison below covers them all.
        let missing: Vec<&String> = tune
            .keys()
            .filter(|k| !tune_sass.contains_key(*k))
            .collect();
        assert!(missing.is_empty(), "{name}: no SASS for {missing:?}");
        for (k, code) in &tune_sass {
            let got = adapt_sass.get(k).map(String::as_str).unwrap_or("");
            let first = code.lines().zip(got.lines()).find(|(a, b)| a != b);
            assert!(
                got == code,
                "{name}: {k} ships other code under adapt: {first:?} ({} / {} lines)",
                code.lines().count(),
                got.lines().count()
            );
        }
        compared += tune.len();
    }
    assert!(compared >= 100, "only {compared} kernels compared");
}

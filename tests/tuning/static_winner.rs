//! One static winner (issue 31): under `NVCC_ORION=adapt` the original kernel names ship
//! exactly what a default build ships. Adapt builds every cliff budget for the selector,
//! including those a default build prunes, but the static winner is chosen among the default
//! build's candidates alone: on every test kernel, example and build benchmark the report's
//! choice and the cubin's kernel code are the same in both builds.
//!
//! The adapt build is an object (its host side carries the selector), built with `--keep`.
//! The default build is nvcc-orion's ptxas step (`nvcc-orion --ptxas`, nvcc's own ptxas
//! arguments for a `-cubin`) on the PTX that build kept: a default build tunes only its ptxas
//! step, and the front end before it does not depend on nvcc-orion's mode or the output kind,
//! so this is the cubin and report a default `-cubin` gives (checked on all these files when
//! the change was made, bench/results/suite.md "Seventh pass"). The driver's default build
//! against adapt's stays checked where it is built anyway: `multi_variant.rs`'s
//! `same_originals` on `walk.cu`, `two.cu` and the builds beside them. Issue 50: the front end
//! again per file was about a fifth of the test, the host compile of a default object most of
//! it before that.
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
/// its relocations, appended in architecture order for a name in several images.
///
/// This is what `cuobjdump -sass` prints of a function, read without the disassembler (issue
/// 50: its ~0.6 s a run was 54 runs here): every listing line is one 16-byte instruction of the
/// section with its encoding, and the only other input to the listing is the relocations, whose
/// targets it names. Equal bytes and relocations give equal listings, and equal listings
/// (encodings included) give equal bytes, so the comparison is the one the listing made.
fn code_of(file: &Path, scratch: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for ((_, name), code) in common::fixtures::code::code_by_function(file, scratch) {
        out.entry(name).or_default().extend(code);
    }
    out
}

/// nvcc's own ptxas arguments for a `-cubin` of `flags` (its `--dryrun`), without the PTX
/// and the output.
fn ptxas_args(nvcc: &Path, flags: &[&std::ffi::OsStr]) -> Vec<String> {
    let o = common::command(nvcc)
        .arg("-cubin")
        .args(flags)
        .args(["--dryrun", "-o", "dry.cubin"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("#$ ptxas "))
        .unwrap_or_else(|| panic!("no ptxas step in nvcc --dryrun:\n{text}"));
    let mut args = Vec::new();
    let mut words = line.split_whitespace().map(|w| w.trim_matches('"'));
    while let Some(w) = words.next() {
        match w {
            "-o" => {
                words.next();
            }
            w if w.ends_with(".ptx") => {}
            w => args.push(w.to_string()),
        }
    }
    args
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
        let flags = [
            "-arch=sm_90".as_ref(),
            "-I".as_ref(),
            src.parent().unwrap().as_os_str(),
            src.as_os_str(),
        ];
        let keep = dir.path().join(format!("{name}.keep"));
        std::fs::create_dir_all(&keep).unwrap();
        let build = |mode: &str| {
            let report = dir.path().join(format!("{name}.{mode}.jsonl"));
            let mut c = common::without_our_settings(common::orion(), &nvcc);
            c.env("NVCC_ORION_CACHE", &cache)
                .env("NVCC_ORION_REPORT", &report);
            let object = if mode == "adapt" {
                // An object, not a -cubin: a -cubin under adapt has no host object for the
                // glue, so it gets no selector and is a default build (docs/selector.md). Its
                // front end's PTX is kept for the default build below.
                c.env("NVCC_ORION", "adapt")
                    .arg("-c")
                    .args(flags)
                    .arg("--keep")
                    .arg("--keep-dir")
                    .arg(&keep);
                dir.path().join(format!("{name}.adapt.o"))
            } else {
                // The default build as nvcc-orion's ptxas step on that PTX, with nvcc's own
                // ptxas arguments: what a default `-cubin` runs after the front end, which
                // depends on neither the mode nor the output kind (issue 50: the front end
                // again per file was about a fifth of the test).
                c.arg("--ptxas")
                    .args(ptxas_args(&nvcc, &flags))
                    .arg(keep.join(format!("{name}.ptx")));
                dir.path().join(format!("{name}.tune.cubin"))
            };
            let o = c.arg("-o").arg(&object).output().unwrap();
            common::assert_ok(&o, &format!("{name} ({mode})"));
            let scratch = dir.path().join(format!("{name}.{mode}.cubins"));
            (choices(&report), code_of(&object, &scratch))
        };
        let (adapt, adapt_code) = build("adapt");
        let (tune, tune_code) = build("tune");
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

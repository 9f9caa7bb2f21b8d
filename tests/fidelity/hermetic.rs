//! Hermetic and deterministic outputs (issue 22, item 4): the same compile run in two
//! directories whose absolute paths differ (in length too), with different variant caches
//! (`NVCC_ORION_CACHE`), `TMPDIR`s and `--threads` levels, gives objects that differ at most
//! where plain nvcc's own objects differ under the same change; and no object names the
//! cache or the temporary directory (nor the build directory, unless plain nvcc's does).
//! The report names files relative to where the compile ran, as given.

use crate::common;

use std::path::{Path, PathBuf};

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

struct Run {
    build: PathBuf,
    cache: PathBuf,
    tmp: PathBuf,
    plain: Vec<u8>,
    orion: Vec<u8>,
    report: String,
}

/// One build folder under `root/place`: plain nvcc and nvcc-orion on `src/walk.cu` (relative,
/// as build systems name their sources) with `threads`.
fn build(nvcc: &Path, root: &Path, place: &str, threads: &str) -> Run {
    let base = root.join(place);
    let build = base.join("build");
    let (cache, tmp) = (base.join("orion-cache"), base.join("tmp"));
    for d in [&build.join("src"), &cache, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kernels/walk.cu"),
        build.join("src/walk.cu"),
    )
    .unwrap();
    let args = [
        "-c",
        "src/walk.cu",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=sm_90",
        "--threads",
        threads,
    ];
    let compile = |exe: &Path, out: &str, extra: &[&str]| -> Vec<u8> {
        let o = common::command(exe)
            .current_dir(&build)
            .args(args)
            .args(["-o", out])
            .args(extra)
            .env("NVCC_ORION_NVCC", nvcc)
            .env("NVCC_ORION_CACHE", &cache)
            .env("TMPDIR", &tmp)
            // The lowest budget: the object holds a variant built in a temporary folder.
            .env("NVCC_ORION_FORCE", "lowest")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{place}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read(build.join(out)).unwrap()
    };
    let plain = compile(nvcc, "plain.o", &[]);
    let orion = compile(
        Path::new(env!("CARGO_BIN_EXE_nvcc-orion")),
        "orion.o",
        &["--orion-report=report.jsonl"],
    );
    let report = std::fs::read_to_string(build.join("report.jsonl")).unwrap();
    Run {
        build,
        cache,
        tmp,
        plain,
        orion,
        report,
    }
}

#[test]
fn objects_do_not_depend_on_where_they_are_built() {
    let Some(nvcc) = common::nvcc_or_skip("hermetic") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let a = build(&nvcc, root.path(), "a", "1");
    let b = build(&nvcc, root.path(), "a-much-longer-place/x", "2");

    // The variant cache was used (so its path had a chance to leak).
    assert!(std::fs::read_dir(&a.cache).unwrap().next().is_some());
    for r in [&a, &b] {
        for dir in [&r.cache, &r.tmp] {
            let p = dir.to_string_lossy();
            assert!(
                !contains(&r.orion, p.as_bytes()),
                "{} appears in nvcc-orion's object",
                p
            );
        }
        let build = r.build.to_string_lossy();
        assert!(
            !contains(&r.orion, build.as_bytes()) || contains(&r.plain, build.as_bytes()),
            "nvcc-orion's object names the build folder {build}, plain nvcc's does not"
        );
        // Records name the source and object as the command line did, never absolutely.
        assert!(
            !r.report.contains(root.path().to_string_lossy().as_ref()),
            "{}",
            r.report
        );
        assert!(r.report.contains("walk_features"), "{}", r.report);
    }
    // nvcc names its temporaries after its process id (`tmpxft_<pid>_<n>`) and the host
    // object keeps the name (its file symbol, the static constructor's name): plain nvcc's
    // objects differ there from run to run, and so may nvcc-orion's. Masked, nothing else
    // may differ in nvcc-orion's objects unless it differs in plain nvcc's too.
    let (pa, pb) = (common::mask_tmpxft(&a.plain), common::mask_tmpxft(&b.plain));
    let (oa, ob) = (common::mask_tmpxft(&a.orion), common::mask_tmpxft(&b.orion));
    if pa == pb {
        assert!(
            oa == ob,
            "plain nvcc's objects agree across folders (tmpxft ids aside), nvcc-orion's do not"
        );
    } else {
        let diff = |x: &[u8], y: &[u8]| x.iter().zip(y).filter(|(p, q)| p != q).count();
        assert_eq!(oa.len() == ob.len(), pa.len() == pb.len());
        assert!(diff(&oa, &ob) <= diff(&pa, &pb));
    }
    // Both facts, for the record (`--nocapture`).
    eprintln!(
        "identical across folders: plain nvcc {} (tmpxft ids masked: {}), nvcc-orion {} (masked: {})",
        a.plain == b.plain,
        pa == pb,
        a.orion == b.orion,
        oa == ob
    );
}

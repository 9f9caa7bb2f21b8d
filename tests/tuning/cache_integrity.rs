//! The variant cache cannot ship damaged code (issue 48, point 3). A real cache is filled by
//! tuning `tests/kernels/tune/pressure.cu` for sm_90 (its kernels are spliced in from
//! variants), then damaged as disks, shared folders and CI cache restores damage it: a bit
//! flipped in an entry, an entry cut short, two entries swapped. Each time the next build
//! exits 0, ships exactly the bytes of a build without the cache, and says so in one warning
//! line. An entry rewritten whole with a valid checksum (a cache filled by another ptxas, or
//! forged) is caught because what ships and what the assembly check compares it with are
//! built by ptxas, never taken from the cache: the build ships the uncached bytes or
//! ptxas's own, never the entry's code. These builds search again (the damaged caches are
//! copies of the variant entries alone, no cached choice).
//!
//! A cached choice (issue 47, `tune/choice.rs`) supplies the budgets and the records; ptxas
//! still builds what ships, in one run per architecture, and it must be the first build's
//! bytes, which are whole-module ptxas's at those budgets (checked against the toolkit's
//! ptxas run here); a damaged choice is a miss with one warning line.

use crate::common;

use std::path::{Path, PathBuf};

use nvcc_orion::tune::cache_entry::{self, Entry};

/// What one build did: exit code, the cubin, stderr.
struct Build {
    code: Option<i32>,
    cubin: Vec<u8>,
    stderr: String,
}

/// `-cubin` for sm_90 of the tuning test kernel into `dir`, with `cache` as the cache root
/// (`None`: no cache) and `NVCC_ORION` set to `mode` when given.
fn build(nvcc: &Path, dir: &Path, cache: Option<&Path>, mode: Option<&str>) -> Build {
    let kernel = common::kernels_dir().join("tune").join("pressure.cu");
    let out = dir.join("out.cubin");
    let _ = std::fs::remove_file(&out);
    let mut cmd = common::without_our_settings(common::orion(), nvcc);
    cmd.current_dir(dir)
        .env(
            "NVCC_ORION_CACHE",
            cache.map_or("off".into(), |c| c.to_owned()),
        )
        .args(["-arch=sm_90", "-cubin"])
        .arg(&kernel)
        .arg("-o")
        .arg(&out);
    if let Some(m) = mode {
        cmd.env("NVCC_ORION", m);
    }
    let o = cmd.output().unwrap();
    Build {
        code: o.status.code(),
        cubin: std::fs::read(&out).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The entry files of the cache rooted at `root` (a variant's cubin, in an older layout).
fn entries(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("variants"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "entry" || e == "cubin"))
        .collect();
    v.sort();
    v
}

/// A copy of the cache `from` at `to`, variant entries only (no remembered verdicts).
fn copy_cache(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("variants")).unwrap();
    for e in std::fs::read_dir(from.join("variants")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join("variants").join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// A filled cache, the uncached build's bytes and ptxas's own (`NVCC_ORION=off`).
struct Setup {
    dir: tempfile::TempDir,
    filled: PathBuf,
    uncached: Vec<u8>,
    plain: Vec<u8>,
}

fn setup(nvcc: &Path) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let filled = dir.path().join("filled");
    let first = build(nvcc, dir.path(), Some(&filled), None);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert!(
        entries(&filled).len() >= 2,
        "the build caches variants: {:?}",
        entries(&filled)
    );
    let uncached = build(nvcc, dir.path(), None, None);
    assert_eq!(uncached.code, Some(0), "{}", uncached.stderr);
    assert_eq!(
        first.cubin, uncached.cubin,
        "a fresh cache gives the uncached bytes"
    );
    let plain = build(nvcc, dir.path(), None, Some("off")).cubin;
    assert_ne!(uncached.cubin, plain, "the kernel is retuned");
    Setup {
        dir,
        filled,
        uncached: uncached.cubin,
        plain,
    }
}

/// The lines of `stderr` that are nvcc-orion warnings.
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("nvcc-orion: warning"))
        .collect()
}

#[test]
fn damaged_entries_are_misses_with_one_warning() {
    let Some(nvcc) = common::nvcc_or_skip("cache_integrity") else {
        return;
    };
    let s = setup(&nvcc);
    type Damage = fn(&[PathBuf]);
    let damages: [(&str, Damage); 3] = [
        ("a bit flipped", |e| {
            let mut b = std::fs::read(&e[0]).unwrap();
            let at = b.len() / 2;
            b[at] ^= 0x02;
            std::fs::write(&e[0], b).unwrap();
        }),
        ("cut short", |e| {
            let b = std::fs::read(&e[0]).unwrap();
            std::fs::write(&e[0], &b[..b.len() * 3 / 4]).unwrap();
        }),
        ("two swapped", |e| {
            let (a, b) = (std::fs::read(&e[0]).unwrap(), std::fs::read(&e[1]).unwrap());
            std::fs::write(&e[0], b).unwrap();
            std::fs::write(&e[1], a).unwrap();
        }),
    ];
    for (i, (what, damage)) in damages.iter().enumerate() {
        let cache = s.dir.path().join(format!("damaged{i}"));
        copy_cache(&s.filled, &cache);
        damage(&entries(&cache));
        let b = build(&nvcc, s.dir.path(), Some(&cache), None);
        assert_eq!(b.code, Some(0), "{what}: {}", b.stderr);
        assert!(b.cubin == s.uncached, "{what}: the uncached bytes ship");
        let w = warnings(&b.stderr);
        assert_eq!(w.len(), 1, "{what}: one warning line: {}", b.stderr);
        assert!(w[0].contains("variant cache entr"), "{what}: {}", w[0]);
        // The rebuilt variants replaced what was damaged: the next build is silent.
        let again = build(&nvcc, s.dir.path(), Some(&cache), None);
        assert!(again.cubin == s.uncached, "{what}, again");
        assert_eq!(warnings(&again.stderr), Vec::<&str>::new(), "{what}, again");
    }
}

/// Flip bit 1 of the destination register (bits 16..23) of the first instruction of every
/// kernel's code in `cubin`: `MOV R1, ...` becomes `MOV R3, ...`, code that still reads.
fn other_code(cubin: &[u8]) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(cubin).unwrap();
    let mut out = cubin.to_vec();
    for sec in file.sections() {
        if sec.name().unwrap_or("").starts_with(".text.")
            && let Some((offset, size)) = sec.file_range()
            && size >= 16
        {
            out[offset as usize + 2] ^= 0x02;
        }
    }
    out
}

#[test]
fn entries_with_valid_checksums_never_ship_their_own_code() {
    let Some(nvcc) = common::nvcc_or_skip("cache_integrity") else {
        return;
    };
    let s = setup(&nvcc);
    let cache = s.dir.path().join("forged");
    copy_cache(&s.filled, &cache);
    for file in entries(&cache) {
        let key = file.file_stem().unwrap().to_str().unwrap().to_string();
        let entry = cache_entry::decode(&key, &std::fs::read(&file).unwrap()).unwrap();
        let forged = Entry {
            cubin: other_code(&entry.cubin),
            stderr: entry.stderr,
        };
        assert_ne!(forged.cubin, entry.cubin);
        std::fs::write(&file, cache_entry::encode(&key, &forged)).unwrap();
    }
    let b = build(&nvcc, s.dir.path(), Some(&cache), None);
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    assert!(
        b.cubin == s.uncached || b.cubin == s.plain,
        "neither the uncached build's nor ptxas's own bytes shipped"
    );
    assert_eq!(warnings(&b.stderr).len(), 1, "{}", b.stderr);
}

/// A toolkit at `at` that is `nvcc`'s but for a `ptxas` that logs each run's arguments, one
/// line each, to `at/ptxas.log` before running the real one: nvcc finds the tools beside
/// itself (`nvcc.profile`'s `_HERE_`), so a copy of nvcc there runs the counting ptxas. The
/// returned path is that nvcc.
fn counting_toolkit(nvcc: &Path, at: &Path) -> PathBuf {
    let log = at.join("ptxas.log");
    let ptxas = nvcc.with_file_name("ptxas");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        ptxas.display()
    );
    toolkit_with_ptxas(nvcc, at, &script)
}

/// A toolkit at `at` that is `nvcc`'s but for a `ptxas` that is the shell script `script`
/// (which runs the real one as it likes); the returned path is that toolkit's nvcc.
pub(crate) fn toolkit_with_ptxas(nvcc: &Path, at: &Path, script: &str) -> PathBuf {
    common::toolkit_with(nvcc, at, &|name, _| {
        (name == "ptxas").then(|| script.to_string())
    })
}

/// One build through a counting toolkit: what [`build`] gives, the report, and the
/// arguments of each ptxas run.
struct Counted {
    build: Build,
    report: String,
    ptxas: Vec<String>,
}

/// Build `tests/kernels/tune/pressure.cu` with `args`, into `out` in `dir`, through the
/// counting toolkit `nvcc` (made by [`counting_toolkit`] at `tk`), with `cache` as the cache.
fn counted(nvcc: &Path, tk: &Path, dir: &Path, cache: &Path, args: &[&str], out: &str) -> Counted {
    let log = tk.join("ptxas.log");
    let report = dir.join("report.jsonl");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(dir.join(out));
    let o = common::without_our_settings(common::orion(), nvcc)
        .current_dir(dir)
        .env("NVCC_ORION_CACHE", cache)
        .env("NVCC_ORION_REPORT", &report)
        .args(args)
        .arg(common::kernels_dir().join("tune").join("pressure.cu"))
        .args(["-o", out])
        .output()
        .unwrap();
    Counted {
        build: Build {
            code: o.status.code(),
            cubin: std::fs::read(dir.join(out)).unwrap_or_default(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
        report: std::fs::read_to_string(&report).unwrap_or_default(),
        ptxas: std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect(),
    }
}

/// Issue 47: a build whose choice is cached (one earlier build of the same file) runs ptxas
/// once per architecture, at the chosen budgets, and gives the earlier build's object, report
/// and messages (`-Xptxas -v`: each kernel's resource lines, the times aside). Before, it ran
/// the plain ptxas, then each chosen variant again, then the final assembly's run.
#[test]
fn a_cached_choice_builds_each_architecture_in_one_ptxas_run() {
    let Some(nvcc) = common::nvcc_or_skip("cache_integrity") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tk = counting_toolkit(&nvcc, &dir.path().join("tk"));
    let cache = dir.path().join("cache");
    let args = [
        "-c",
        "-O3",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=sm_90",
        "-Xptxas",
        "-v",
    ];
    let run = |out| counted(&tk, &dir.path().join("tk"), dir.path(), &cache, &args, out);
    let cold = run("a.o");
    assert_eq!(cold.build.code, Some(0), "{}", cold.build.stderr);
    assert!(
        cold.ptxas.len() > 2,
        "the first build tunes: {:?}",
        cold.ptxas
    );
    assert!(cold.report.contains("\"chosen\":1"), "a kernel is retuned");
    let cached = run("a.o");
    assert_eq!(cached.build.code, Some(0), "{}", cached.build.stderr);
    assert_eq!(
        cached.ptxas.len(),
        2,
        "one run per architecture: {:?}",
        cached.ptxas
    );
    for arch in ["sm_80", "sm_90"] {
        let at = format!("-arch={arch}");
        assert_eq!(cached.ptxas.iter().filter(|l| l.contains(&at)).count(), 1);
    }
    assert!(
        common::mask_tmpxft(&cached.build.cubin) == common::mask_tmpxft(&cold.build.cubin),
        "the object differs from the first build's"
    );
    let same = |s: &str| common::normalise_times(&common::normalise_tmpxft_text(s));
    assert_eq!(same(&cached.report), same(&cold.report), "the report");
    assert!(cold.build.stderr.contains("Used "), "{}", cold.build.stderr);
    assert_eq!(same(&cached.build.stderr), same(&cold.build.stderr));
}

/// The one run of a cached build is whole-module ptxas at the chosen budgets: its cubin is
/// the first build's byte for byte (which spliced the chosen kernels into ptxas's own cubin),
/// the report is the same bytes, and both equal what the toolkit's ptxas makes of nvcc's PTX
/// with the report's budgets written in, run here. A damaged choice entry is a miss with one
/// warning line (the step is tuned in full, the same bytes ship) and is replaced.
#[test]
fn a_cached_choice_ships_whole_module_ptxas_at_the_choice() {
    let Some(nvcc) = common::nvcc_or_skip("cache_integrity") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tk_dir = dir.path().join("tk");
    let tk = counting_toolkit(&nvcc, &tk_dir);
    let cache = dir.path().join("cache");
    let args = ["-arch=sm_90", "-cubin"];
    let run = || counted(&tk, &tk_dir, dir.path(), &cache, &args, "out.cubin");
    let cold = run();
    assert_eq!(cold.build.code, Some(0), "{}", cold.build.stderr);
    assert!(
        cold.report.contains("\"assembly\":\"spliced\""),
        "{}",
        cold.report
    );
    let cached = run();
    assert_eq!(cached.ptxas.len(), 1, "{:?}", cached.ptxas);
    assert!(cached.build.cubin == cold.build.cubin, "the cubin differs");
    assert_eq!(cached.report, cold.report);
    assert_eq!(cached.build.stderr, cold.build.stderr);
    assert!(
        reference(&nvcc, dir.path(), &cold.report) == cached.build.cubin,
        "not what whole-module ptxas makes at the chosen budgets"
    );

    let choices: Vec<PathBuf> = std::fs::read_dir(cache.join("variants").join("choices"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(choices.len(), 1, "{choices:?}");
    let mut b = std::fs::read(&choices[0]).unwrap();
    let at = b.len() / 2;
    b[at] ^= 0x04;
    std::fs::write(&choices[0], b).unwrap();
    let damaged = run();
    assert_eq!(damaged.build.code, Some(0), "{}", damaged.build.stderr);
    assert!(
        damaged.ptxas.len() > 1,
        "tuned in full: {:?}",
        damaged.ptxas
    );
    assert!(
        damaged.build.cubin == cold.build.cubin,
        "the same bytes ship"
    );
    assert_eq!(damaged.report, cold.report);
    let w = warnings(&damaged.build.stderr);
    assert_eq!(w.len(), 1, "one warning line: {}", damaged.build.stderr);
    assert!(w[0].contains("cached choice failed its check"), "{}", w[0]);
    let again = run();
    assert_eq!(
        again.ptxas.len(),
        1,
        "the entry was replaced: {:?}",
        again.ptxas
    );
    assert!(again.build.cubin == cold.build.cubin);
    assert_eq!(warnings(&again.build.stderr), Vec::<&str>::new());
}

/// The toolkit's own ptxas on nvcc's PTX of the test kernel for sm_90, each kernel's chosen
/// budget (from `report`) written in as nvcc-orion's variants are: a cubin we did not make.
fn reference(nvcc: &Path, dir: &Path, report: &str) -> Vec<u8> {
    let source = common::kernels_dir().join("tune").join("pressure.cu");
    whole_module_at_report(nvcc, dir, &source, report)
}

/// [`reference`] for any `source`: one whole-module ptxas run (sm_90) at the budgets `report`
/// chose, to compare what a build shipped with.
pub(crate) fn whole_module_at_report(
    nvcc: &Path,
    dir: &Path,
    source: &Path,
    report: &str,
) -> Vec<u8> {
    use nvcc_orion::tune::ptx::{Budget, with_budgets};
    let ptx = dir.join("reference.ptx");
    let o = common::command(nvcc)
        .args(["-arch=sm_90", "-ptx"])
        .arg(source)
        .arg("-o")
        .arg(&ptx)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc -ptx");
    let mut budgets = std::collections::BTreeMap::new();
    for line in report.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let chosen = &r["candidates"][r["chosen"].as_u64().unwrap() as usize]["budget"];
        if let Some(regs) = chosen["regs"].as_u64() {
            let budget = Budget {
                smem_spill: chosen["smem_spill"].as_bool().unwrap(),
                ..Budget::regs(regs as u32)
            };
            budgets.insert(r["kernel"].as_str().unwrap().to_string(), budget);
        }
    }
    assert!(!budgets.is_empty(), "a kernel is retuned: {report}");
    let text = with_budgets(&std::fs::read_to_string(&ptx).unwrap(), &budgets).unwrap();
    std::fs::write(&ptx, text).unwrap();
    let cubin = dir.join("reference.cubin");
    let o = common::command(common::toolkit_tool(nvcc, "ptxas"))
        .args(["-arch=sm_90", "-m64"])
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap();
    common::assert_ok(&o, "ptxas");
    std::fs::read(&cubin).unwrap()
}

/// The safety net of a cached choice: its one ptxas run ships only when the cubin is the
/// bytes the first build shipped. A toolkit whose ptxas adds a byte to the output of that
/// one run (recognised by the run's work folder, `nvcc-orion-choice-*`) makes other bytes: the
/// build still succeeds, tunes the step in full (more than one run per architecture) and ships
/// the first build's object, never the altered cubin.
#[test]
fn a_cached_choice_whose_run_makes_other_bytes_is_not_shipped() {
    use std::os::unix::fs::PermissionsExt;
    let Some(nvcc) = common::nvcc_or_skip("cache_integrity") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tk = dir.path().join("tk");
    let tk_nvcc = counting_toolkit(&nvcc, &tk);
    let cache = dir.path().join("cache");
    let args = ["-c", "-O3", "-arch=sm_90"];
    // The logging ptxas, altered once `tk/tamper` exists: the choice's run then gets one more
    // byte at the end of its cubin. (The same script for both builds: ptxas's identity is
    // part of the cache's key.)
    let ptxas = tk.join("bin").join("ptxas");
    let real = nvcc.parent().unwrap().join("ptxas");
    std::fs::write(
        &ptxas,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{log}'\n'{real}' \"$@\" || exit $?\n\
             [ -e '{flag}' ] || exit 0\n\
             case \"$*\" in *nvcc-orion-choice-*)\n\
               out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n\
               printf 'x' >> \"$out\" ;;\nesac\n",
            log = tk.join("ptxas.log").display(),
            real = real.display(),
            flag = tk.join("tamper").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cold = counted(&tk_nvcc, &tk, dir.path(), &cache, &args, "a.o");
    assert_eq!(cold.build.code, Some(0), "{}", cold.build.stderr);
    assert!(cold.report.contains("\"chosen\":1"), "a kernel is retuned");
    std::fs::write(tk.join("tamper"), "").unwrap();
    let cached = counted(&tk_nvcc, &tk, dir.path(), &cache, &args, "a.o");
    assert_eq!(cached.build.code, Some(0), "{}", cached.build.stderr);
    assert!(
        cached
            .ptxas
            .iter()
            .any(|l| l.contains("nvcc-orion-choice-")),
        "the cached choice was tried: {:?}",
        cached.ptxas
    );
    assert!(
        cached.ptxas.len() > 2,
        "tuned in full after the choice's run made other bytes: {:?}",
        cached.ptxas
    );
    assert!(
        common::mask_tmpxft(&cached.build.cubin) == common::mask_tmpxft(&cold.build.cubin),
        "the object differs from the first build's"
    );
}

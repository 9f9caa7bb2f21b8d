//! The variant cache cannot ship damaged code (issue 48, point 3). A real cache is filled by
//! tuning `tests/kernels/tune/pressure.cu` for sm_90 (its kernels are spliced in from
//! variants), then damaged as disks, shared folders and CI cache restores damage it: a bit
//! flipped in an entry, an entry cut short, two entries swapped. Each time the next build
//! exits 0, ships exactly the bytes of a build without the cache, and says so in one warning
//! line. An entry rewritten whole with a valid checksum (a cache filled by another ptxas, or
//! forged) is caught because what ships and what the assembly check compares it with are
//! built by ptxas, never taken from the cache: the build ships the uncached bytes or
//! ptxas's own, never the entry's code.

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

//! The shared fixture matrix: real nvcc outputs (cubins, fatbins, host objects, relocatable
//! objects, executables, an archive) built once into `target/fixtures/<key>/` and reused by
//! every test process and every later run until the kernels, the table below or the toolkit
//! change; plus the toolkit oracles (`cuobjdump`, `nvdisasm`, `ptxas -v`) that tests use to
//! check our parsers and rewrites against the toolkit.
//!
//! # Using it
//!
//! ```ignore
//! let Some(fx) = common::fixtures::fixtures() else { return }; // no nvcc: skipped (CI: panics)
//! let app = fx.get("app");
//! for ru in common::fixtures::res_usage(&app.path).unwrap() { /* ... */ }
//! ```
//!
//! # The matrix
//!
//! Kernels are in `tests/kernels/matrix/`: 57 distinct `__global__` symbols (52 kernels in the
//! sources, two of them templates instantiated 4 and 3 times), plus `__noinline__` device
//! functions:
//!
//! | file | what it exercises |
//! |---|---|
//! | `math.cu` | register pressure: unrolled FP32/FP64 chains, an 8x8 register tile, n-body, complex MAC, `horner_unrolled<T,N>` ×4, `__launch_bounds__(256, 4)`, `__launch_bounds__(128)`, `__maxnreg__(40)` |
//! | `calls.cu` | `__noinline__` calls: recursion (`fib_rec`, `tree_sum` with a local array per frame), a 4-deep call chain, values live across a call, indirect calls through a function-pointer table; dynamically indexed local arrays; 64-bit pointer math, splitmix64, 64-bit div/mod; loops |
//! | `memory.cu` | static `__shared__`, dynamic `extern __shared__`, both at once, atomics (shared, global, CAS loop on FP64), warp shuffles/ballot/vote, `__constant__`, `__device__` globals, `printf`, `block_reduce_sum<N>` ×3, `__ldg` |
//! | `spill.cu` | kernels that need more than 24 registers: built with `-maxrregcount=24` they spill (plus a real local array next to spills, and spills around a call) |
//! | `coop.cu` | a hand-written grid barrier (cooperative launch), sub-warp shuffles, `__activemask`, `__match_any_sync`, `__reduce_add_sync` (sm_80+); see the file for why not `<cooperative_groups.h>` |
//! | `rdc_lib.cu`, `rdc_use.cu` | relocatable device code: device functions (one recursive) and a `__device__` table defined in one file, used from the other |
//! | `main.cu` | host `main` for the executables; launches kernels of math.cu/memory.cu, or (with `-rdc`) of the rdc files |
//!
//! Each row of [`MATRIX`] is one nvcc call, `nvcc <flags> <inputs> -o <name>` run in the
//! fixture folder (sources are copied to `src/`), or `ar rcs <name> <inputs>` for the archive.
//! Every architecture and every flag appears at least once; several rows are multi-arch.
//!
//! | name | kind | inputs | flags (besides the mode) | for |
//! |---|---|---|---|---|
//! | `math_sm75.cubin` | Cubin | math.cu | sm_75 | plain whole-program cubin, oldest arch |
//! | `calls_sm80_lineinfo.cubin` | Cubin | calls.cu | sm_80, `-lineinfo` | calls, recursion, local memory; `.debug_line` without `.debug_info` |
//! | `memory_sm86.cubin` | Cubin | memory.cu | sm_86 | shared/constant/global memory, printf |
//! | `spill_sm89_r24.cubin` | Cubin | spill.cu | sm_89, `-maxrregcount=24` | spill code (`STL/LDL`, SpillRefill annotations) |
//! | `math_sm90_G.cubin` | Cubin | math.cu | sm_90, `-G` | device debug info, sm_90 reserved shared memory |
//! | `calls_sm100.cubin` | Cubin | calls.cu | sm_100 | sm_100 cubin (merc copy, `.nv.compat`) |
//! | `coop_sm120.cubin` | Cubin | coop.cu | sm_120 | sm_120 cubin |
//! | `rdc_lib_sm90_rdc.cubin` | Cubin | rdc_lib.cu | sm_90, `-rdc=true` | relocatable (ET_REL) standalone cubin |
//! | `math_multi.fatbin` | Fatbin | math.cu | sm_75, sm_86, sm_100 + compute_100 PTX | multi-arch fatbin, default compression |
//! | `memory_size.fatbin` | Fatbin | memory.cu | sm_80 + PTX, `-compress-mode=size` | ZSTD-compressed ELF and PTX |
//! | `memory_speed.fatbin` | Fatbin | memory.cu | sm_89 + PTX, `-compress-mode=speed` | LZ4 PTX, uncompressed ELF |
//! | `memory_none.fatbin` | Fatbin | memory.cu | sm_120 + PTX, `-compress-mode=none` | nothing compressed |
//! | `calls_all.o` | Object | calls.cu | all 7 archs + compute_120 PTX | one host object with every arch |
//! | `spill_r24.o` | Object | spill.cu | sm_80, sm_90, `-maxrregcount=24` | spills inside a host object |
//! | `memory_G.o` | Object | memory.cu | sm_75, sm_120, `-G` | debug host object (compressed ELF) |
//! | `coop_lineinfo.o` | Object | coop.cu | sm_90 + PTX, `-lineinfo` | line info in a host object |
//! | `rdc_lib.o` | RdcObject | rdc_lib.cu | sm_80, sm_100, `-c -rdc=true` | `__nv_relfatbin`, ET_REL cubins, exported device functions |
//! | `rdc_use.o` | RdcObject | rdc_use.cu | sm_80, sm_100, `-dc` | unresolved device calls and variable |
//! | `main_rdc.o` | RdcObject | main.cu | sm_80, sm_100, `-dc` | host main for the rdc executable |
//! | `rdc_dlink.o` | Object | the three rdc objects | sm_80, sm_100, `-dlink` | a device-link object, as CMake makes |
//! | `librdc.a` | Archive | rdc_lib.o rdc_use.o | (`ar rcs`) | device code inside an archive |
//! | `app` | Executable | main.cu math.cu memory.cu | sm_75, sm_90, sm_120 + PTX | whole-program executable, one fatbin per TU |
//! | `app_rdc` | Executable | the three rdc objects | sm_80, sm_100, `-rdc=true` | device-linked executable |
//!
//! Covered (nvcc calls per target): sm_75 ×5, sm_80 ×9, sm_86 ×3, sm_89 ×3, sm_90 ×6,
//! sm_100 ×8, sm_120 ×5; `-G` ×2, `-lineinfo` ×2, `-rdc=true` ×3 (plus `-dc` ×2, `-dlink` ×1),
//! `-compress-mode=size|speed|none` ×1 each (and the default), `-maxrregcount=24` ×2.
//!
//! Measured on the 2-core development machine (CUDA 13.5.37, 2 parallel nvcc calls, other
//! builds running beside it): a cold build takes 50–61 s of wall time (the nvcc calls add up to
//! 95–105 s; the longest are `app` 14–25 s, `calls_all.o` 18 s, `math_multi.fatbin` 7–9 s).
//! A warm start (stamp found) costs one `nvcc --version` and reading the manifest: a test
//! process that only loads the fixtures runs in about 0.2 s.
//!
//! # Cross-process safety
//!
//! `cargo nextest` runs every test in its own process, many at once. The first process to
//! need the fixtures takes an exclusive lock on `target/fixtures/<key>.lock` (`File::lock`),
//! checks again for the completion stamp, builds into `target/fixtures/<key>.tmp.<pid>`,
//! writes `manifest.tsv` and the stamp `COMPLETE` last, and renames the folder to
//! `target/fixtures/<key>`. The others wait on the lock and then find the stamp. A failed nvcc
//! call panics with its command and stderr; the failure is remembered in `<key>.failed` for
//! ten minutes so that the other waiting processes fail at once instead of rebuilding one
//! after another. `rm -rf target/fixtures` forces a rebuild (so does `cargo clean`).
//!
//! # What the toolkit prints (CUDA 13.5), as the oracles below parse it
//!
//! * `cuobjdump -res-usage`: per image, a `Fatbin elf code:` header (`arch = sm_XX`, and a line
//!   `compressed` when the entry is; a bare cubin has no header at all, so its arch comes from
//!   `e_flags`), then `Resource usage:`, ` Common:` with module-wide `GLOBAL:` and
//!   `CONSTANT[n]:`, then ` Function <mangled>:` and one line of `KEY:VALUE`. Whole-program
//!   images list kernels only, even with real `__noinline__` calls; relocatable images and
//!   device-linked executables list device functions too (with no `CONSTANT[0]`; on sm_100
//!   their `REG` is 0). `STACK:UNKNOWN` for recursion. Local arrays count in `STACK`; `LOCAL`
//!   stayed 0 in every fixture. `SHARED` is static shared memory plus, on sm_90 and later, the
//!   1 KB the system reserves (ptxas `-v` `smem` does not include it). Constant bank 2 appears
//!   for function-pointer tables and some constants. `TEXTURE/SURFACE/SAMPLER` are always
//!   printed. Archives add `member <archive path as given>:<member>:` lines.
//! * Executables hold several fatbins: whole-program `app` lists 4 × 3 images (one group per
//!   translation unit plus one group with no functions at all), and all of them under the
//!   one name `app.N.sm_XX.cubin`. A device-linked executable lists only the linked image, and
//!   the device link drops every kernel the host code does not launch (`app_rdc` keeps 4 of 7).
//! * `cuobjdump -lelf/-lptx` print `ELF file    N: <base>.N.sm_XX.cubin` (bare cubin: no
//!   index in the name: `ELF file    1: <base>.sm_XX.cubin`); with nothing to list, `-lptx`
//!   exits 0 and says so on stderr.
//! * Compression (fatbin flags 0x2000 LZ4 / 0x8000 ZSTD): default and `speed` leave ELF
//!   uncompressed, but `-G` and every relocatable (`-dc`) ELF are compressed by default.
//! * The top byte of a cubin's `e_flags` is 0x06 only without debug info: `-G` gives 0x0f
//!   (sm_75, sm_90) or 0x0e (sm_120), `-lineinfo` 0x09 (sm_80) or 0x0a (sm_90).
//! * `ptxas -v`: sm_90 and later print no `cmem[0]`; device functions get `Function properties`
//!   but no `Used N registers` line.
//!
//! Settings: `NVCC_ORION_FIXTURES_JOBS` (parallel nvcc calls; default: available cores,
//! clamped to 2..=8). Without nvcc, [`fixtures`] prints a skip message and returns `None`,
//! unless `CI` is set, where it panics.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Bump when the build procedure or the manifest format changes (it is part of the key).
const FORMAT_VERSION: u32 = 1;

/// What an nvcc call produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `-cubin`: a bare device ELF.
    Cubin,
    /// `-fatbin`: a bare fatbin container.
    Fatbin,
    /// `-c` (whole-program) host object with `.nv_fatbin`, or a `-dlink` object.
    Object,
    /// `-dc` / `-c -rdc=true` host object with `__nv_relfatbin`.
    RdcObject,
    /// A linked host executable.
    Executable,
    /// `ar rcs` of objects.
    Archive,
}

/// One row of the matrix: `nvcc <flags> <inputs> -o <name>` (or `ar rcs <name> <inputs>`).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Output file name in the fixture folder (also the artifact's name).
    pub name: &'static str,
    pub kind: Kind,
    /// `*.cu` files from `tests/kernels/matrix/`, or names of earlier rows.
    pub inputs: &'static [&'static str],
    /// The nvcc arguments, mode included (`-cubin`, `-c`, `-dc`, ...).
    pub flags: &'static [&'static str],
    /// Why the row exists.
    pub purpose: &'static str,
}

const fn row(
    name: &'static str,
    kind: Kind,
    inputs: &'static [&'static str],
    flags: &'static [&'static str],
    purpose: &'static str,
) -> Entry {
    Entry {
        name,
        kind,
        inputs,
        flags,
        purpose,
    }
}

use Kind::*;

/// The matrix. Rows may use earlier rows as inputs; rows that only use sources run in
/// parallel, then the rows that depend on them.
#[rustfmt::skip]
pub const MATRIX: &[Entry] = &[
    // --- standalone cubins: one per architecture -------------------------------------------
    row("math_sm75.cubin", Cubin, &["math.cu"], &["-cubin", "-arch=sm_75"], "plain whole-program cubin, oldest arch"),
    row("calls_sm80_lineinfo.cubin", Cubin, &["calls.cu"], &["-cubin", "-arch=sm_80", "-lineinfo"], "calls, recursion, local memory; line info only"),
    row("memory_sm86.cubin", Cubin, &["memory.cu"], &["-cubin", "-arch=sm_86"], "shared/constant/global memory, printf"),
    row("spill_sm89_r24.cubin", Cubin, &["spill.cu"], &["-cubin", "-arch=sm_89", "-maxrregcount=24"], "spill code under a 24-register cap"),
    row("math_sm90_G.cubin", Cubin, &["math.cu"], &["-cubin", "-arch=sm_90", "-G"], "device debug info"),
    row("calls_sm100.cubin", Cubin, &["calls.cu"], &["-cubin", "-arch=sm_100"], "sm_100 cubin"),
    row("coop_sm120.cubin", Cubin, &["coop.cu"], &["-cubin", "-arch=sm_120"], "sm_120 cubin"),
    row("rdc_lib_sm90_rdc.cubin", Cubin, &["rdc_lib.cu"], &["-cubin", "-rdc=true", "-arch=sm_90"], "relocatable (ET_REL) cubin"),
    // --- fatbins: multi-arch and every compression mode ------------------------------------
    row("math_multi.fatbin", Fatbin, &["math.cu"], &["-fatbin", "-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_86,code=sm_86", "-gencode=arch=compute_100,code=[sm_100,compute_100]"], "multi-arch fatbin, default compression"),
    row("memory_size.fatbin", Fatbin, &["memory.cu"], &["-fatbin", "-arch=sm_80", "-compress-mode=size"], "ZSTD ELF and PTX"),
    row("memory_speed.fatbin", Fatbin, &["memory.cu"], &["-fatbin", "-arch=sm_89", "-compress-mode=speed"], "LZ4 PTX, uncompressed ELF"),
    row("memory_none.fatbin", Fatbin, &["memory.cu"], &["-fatbin", "-arch=sm_120", "-compress-mode=none"], "nothing compressed"),
    // --- whole-program host objects ---------------------------------------------------------
    row("calls_all.o", Object, &["calls.cu"], &["-c", "-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_86,code=sm_86", "-gencode=arch=compute_89,code=sm_89", "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_100,code=sm_100", "-gencode=arch=compute_120,code=[sm_120,compute_120]"], "every arch in one host object"),
    row("spill_r24.o", Object, &["spill.cu"], &["-c", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90", "-maxrregcount=24"], "spills inside a host object"),
    row("memory_G.o", Object, &["memory.cu"], &["-c", "-G", "-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_120,code=sm_120"], "debug host object"),
    row("coop_lineinfo.o", Object, &["coop.cu"], &["-c", "-lineinfo", "-arch=sm_90"], "line info in a host object"),
    // --- relocatable device code ------------------------------------------------------------
    row("rdc_lib.o", RdcObject, &["rdc_lib.cu"], &["-c", "-rdc=true", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_100,code=sm_100"], "exported device functions and variable"),
    row("rdc_use.o", RdcObject, &["rdc_use.cu"], &["-dc", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_100,code=sm_100"], "unresolved device calls and variable"),
    row("main_rdc.o", RdcObject, &["main.cu"], &["-dc", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_100,code=sm_100"], "host main of the rdc executable"),
    // --- whole programs ---------------------------------------------------------------------
    row("app", Executable, &["main.cu", "math.cu", "memory.cu"], &["-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_120,code=[sm_120,compute_120]"], "whole-program executable, one fatbin per TU"),
    // --- built from the rows above ----------------------------------------------------------
    row("rdc_dlink.o", Object, &["main_rdc.o", "rdc_lib.o", "rdc_use.o"], &["-dlink", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_100,code=sm_100"], "device-link object"),
    row("librdc.a", Archive, &["rdc_lib.o", "rdc_use.o"], &[], "device code inside an archive"),
    row("app_rdc", Executable, &["main_rdc.o", "rdc_lib.o", "rdc_use.o"], &["-rdc=true", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_100,code=sm_100"], "device-linked executable"),
];

/// One built fixture and what it holds.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub name: &'static str,
    pub path: PathBuf,
    pub kind: Kind,
    /// SASS architectures (`sm_XX` → XX) the flags ask for, sorted.
    pub arches: Vec<u32>,
    /// PTX (`compute_XX`) the flags embed, sorted.
    pub ptx_arches: Vec<u32>,
    /// The row's flags (the nvcc command line without inputs and `-o`).
    pub flags: Vec<&'static str>,
    /// Direct inputs: sources or other artifacts.
    pub inputs: Vec<&'static str>,
    /// Every `.cu` file that went into it (through other artifacts too), sorted.
    pub sources: Vec<&'static str>,
    /// Kernels in its device ELFs (`FUNC` symbols with `ENTRY` in `cuobjdump -elf`), mangled.
    /// Device functions are not listed. A linked executable only keeps the kernels its host
    /// code references when it is device-linked (`app_rdc`).
    pub kernels: BTreeSet<String>,
    pub purpose: &'static str,
}

impl Artifact {
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }
}

/// The whole matrix, built.
#[derive(Debug)]
pub struct Fixtures {
    /// `target/fixtures/<key>`.
    pub dir: PathBuf,
    pub key: String,
    pub nvcc: PathBuf,
    /// In [`MATRIX`] order.
    pub artifacts: Vec<Artifact>,
    /// Wall time of the build that made `dir` (read back from `build-time.txt`).
    pub build_time: Option<Duration>,
}

impl Fixtures {
    /// The artifact named `name` (panics if the matrix has none).
    pub fn get(&self, name: &str) -> &Artifact {
        self.artifacts
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("the fixture matrix has no artifact `{name}`"))
    }

    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Artifact> {
        self.artifacts.iter().filter(move |a| a.kind == kind)
    }

    /// Every distinct kernel name across the matrix.
    pub fn all_kernels(&self) -> BTreeSet<&str> {
        self.artifacts
            .iter()
            .flat_map(|a| a.kernels.iter().map(String::as_str))
            .collect()
    }

    /// The kernel sources folder copied into the fixture folder (`<dir>/src`).
    pub fn src_dir(&self) -> PathBuf {
        self.dir.join("src")
    }
}

/// The kernels of the matrix in the repository.
pub fn matrix_sources_dir() -> PathBuf {
    super::kernels_dir().join("matrix")
}

/// The fixtures, built on first use (see the module doc). `None` (after printing why) when no
/// nvcc is found and `CI` is not set; with `CI` set a missing nvcc panics.
pub fn fixtures() -> Option<&'static Fixtures> {
    static FIXTURES: OnceLock<Option<Fixtures>> = OnceLock::new();
    FIXTURES
        .get_or_init(|| {
            let Some(nvcc) = super::find_nvcc() else {
                if std::env::var_os("CI").is_some() {
                    panic!(
                        "fixture matrix: no nvcc found (NVCC_ORION_NVCC, CUDA_HOME, PATH) and CI is set; \
                         run `eval \"$(scripts/setup.sh)\"`"
                    );
                }
                eprintln!(
                    "skipping: no nvcc found (NVCC_ORION_NVCC, CUDA_HOME, PATH), so no fixture matrix; \
                     run `eval \"$(scripts/setup.sh)\"` to enable this test"
                );
                return None;
            };
            Some(load_or_build(&nvcc))
        })
        .as_ref()
}

// ---------------------------------------------------------------------------------------------
// Build
// ---------------------------------------------------------------------------------------------

fn fixtures_root() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target>/tmp`; the fixtures live next to it.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .join("fixtures")
}

/// FNV-1a, 64 bits: stable across Rust versions (std's hasher is not promised to be).
struct Fnv(u64);
impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, bytes: &[u8]) {
        for b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The kernel sources (name, contents), sorted by name.
fn matrix_sources() -> Vec<(String, Vec<u8>)> {
    let dir = matrix_sources_dir();
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn nvcc_version(nvcc: &Path) -> String {
    let out = Command::new(nvcc)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} --version: {e}", nvcc.display()));
    assert!(
        out.status.success(),
        "{} --version failed:\n{}",
        nvcc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fixture_key(sources: &[(String, Vec<u8>)], version: &str) -> String {
    let mut h = Fnv::new();
    h.add(&FORMAT_VERSION.to_le_bytes());
    h.add(format!("{MATRIX:?}").as_bytes());
    for (name, data) in sources {
        h.add(name.as_bytes());
        h.add(data);
    }
    h.add(version.as_bytes());
    format!("{:016x}", h.0)
}

const STAMP: &str = "COMPLETE";
const MANIFEST: &str = "manifest.tsv";
/// A recorded failure is reused for this long (so one nextest run fails fast).
const FAILURE_MEMORY: Duration = Duration::from_secs(600);

fn load_or_build(nvcc: &Path) -> Fixtures {
    let sources = matrix_sources();
    let version = nvcc_version(nvcc);
    let key = fixture_key(&sources, &version);
    let root = fixtures_root();
    let dir = root.join(&key);
    if !dir.join(STAMP).is_file() {
        std::fs::create_dir_all(&root)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
        let lock_path = root.join(format!("{key}.lock"));
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", lock_path.display()));
        // Blocks while another process builds. Released when `lock` is dropped, also on panic
        // (unwinding) and when the process dies.
        lock.lock()
            .unwrap_or_else(|e| panic!("cannot lock {}: {e}", lock_path.display()));
        if !dir.join(STAMP).is_file() {
            let failed = root.join(format!("{key}.failed"));
            if let Some(msg) = recent_failure(&failed) {
                panic!(
                    "fixture matrix: a build with the same key failed less than {} s ago \
                     (delete {} to retry now):\n{msg}",
                    FAILURE_MEMORY.as_secs(),
                    failed.display()
                );
            }
            match build(nvcc, &root, &key, &sources) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&failed);
                }
                Err(msg) => {
                    let _ = std::fs::write(&failed, &msg);
                    panic!("fixture matrix build failed:\n{msg}");
                }
            }
        }
        drop(lock);
    }
    load(nvcc, &dir, &key)
}

fn recent_failure(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .unwrap_or_default();
    (age < FAILURE_MEMORY).then(|| std::fs::read_to_string(path).unwrap_or_default())
}

/// Rows in dependency levels: level 0 uses only sources, level n uses rows of levels < n.
fn levels() -> Vec<Vec<&'static Entry>> {
    let mut level: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out: Vec<Vec<&Entry>> = Vec::new();
    for e in MATRIX {
        let mut l = 0;
        for input in e.inputs {
            if !input.ends_with(".cu") {
                let dep = level.get(input).unwrap_or_else(|| {
                    panic!("matrix row `{}` uses `{input}` before it is built", e.name)
                });
                l = l.max(dep + 1);
            }
        }
        level.insert(e.name, l);
        if out.len() <= l {
            out.resize_with(l + 1, Vec::new);
        }
        out[l].push(e);
    }
    out
}

fn jobs() -> usize {
    std::env::var("NVCC_ORION_FIXTURES_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(2, 8)
        })
}

/// The command of one row, to run in the build folder.
fn command_for(nvcc: &Path, e: &Entry) -> Command {
    let inputs = e.inputs.iter().map(|i| {
        if i.ends_with(".cu") {
            format!("src/{i}")
        } else {
            i.to_string()
        }
    });
    if e.kind == Archive {
        let mut cmd = Command::new("ar");
        cmd.arg("rcs").arg(e.name).args(inputs);
        cmd
    } else {
        let mut cmd = Command::new(nvcc);
        cmd.args(e.flags).args(inputs).arg("-o").arg(e.name);
        // Flags from the environment would change every fixture behind the key's back.
        cmd.env_remove("NVCC_PREPEND_FLAGS")
            .env_remove("NVCC_APPEND_FLAGS");
        cmd
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&shell_words::quote(&a.to_string_lossy()));
    }
    s
}

fn build(nvcc: &Path, root: &Path, key: &str, sources: &[(String, Vec<u8>)]) -> Result<(), String> {
    let start = Instant::now();
    // Leftovers of builds that died (we hold the lock, so nobody else is building this key).
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("{key}.tmp.")) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let tmp = root.join(format!("{key}.tmp.{}", std::process::id()));
    let src = tmp.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("create {}: {e}", src.display()))?;
    for (name, data) in sources {
        std::fs::write(src.join(name), data).map_err(|e| format!("write {name}: {e}"))?;
    }
    eprintln!(
        "fixture matrix: building {} artifacts into {} ({} parallel nvcc calls)",
        MATRIX.len(),
        root.join(key).display(),
        jobs()
    );
    let result = build_in(nvcc, &tmp);
    let result = result.and_then(|log| {
        let mut manifest = String::new();
        for e in MATRIX {
            let kernels = kernel_names(&tmp.join(e.name))
                .map_err(|err| format!("listing the kernels of {}: {err}", e.name))?;
            let _ = writeln!(
                manifest,
                "{}\t{}",
                e.name,
                kernels.into_iter().collect::<Vec<_>>().join(" ")
            );
        }
        let elapsed = start.elapsed();
        std::fs::write(tmp.join(MANIFEST), manifest).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("commands.log"), log).map_err(|e| e.to_string())?;
        std::fs::write(
            tmp.join("build-time.txt"),
            format!("{:.3}\n", elapsed.as_secs_f64()),
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(tmp.join(STAMP), "").map_err(|e| e.to_string())?;
        let dir = root.join(key);
        if dir.exists() {
            // A folder without the stamp (interrupted by hand?): replace it.
            std::fs::remove_dir_all(&dir).map_err(|e| format!("remove {}: {e}", dir.display()))?;
        }
        std::fs::rename(&tmp, &dir)
            .map_err(|e| format!("rename {} → {}: {e}", tmp.display(), dir.display()))?;
        eprintln!("fixture matrix: built in {:.1} s", elapsed.as_secs_f64());
        // One line per build ever made here: lets a test (or a person) check that racing
        // processes built the matrix once.
        let mut history = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.join("builds.log"))
            .map_err(|e| e.to_string())?;
        std::io::Write::write_all(
            &mut history,
            format!(
                "{key} pid {} {:.3} s\n",
                std::process::id(),
                elapsed.as_secs_f64()
            )
            .as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// Run every row (level by level, `jobs()` at a time; the first failure stops the build after
/// the calls already running). Returns the command log, in matrix order.
fn build_in(nvcc: &Path, dir: &Path) -> Result<String, String> {
    let mut logs: BTreeMap<&str, String> = BTreeMap::new();
    for mut level in levels() {
        // Longest first, so that the last call to finish is a short one.
        level.sort_by_key(|e| std::cmp::Reverse(cost(e)));
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let results: Vec<(&str, Result<String, String>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..jobs().min(level.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut done = Vec::new();
                        while !failed.load(Ordering::SeqCst) {
                            let Some(e) = level.get(next.fetch_add(1, Ordering::SeqCst)) else {
                                break;
                            };
                            let r = run_row(nvcc, dir, e);
                            if r.is_err() {
                                failed.store(true, Ordering::SeqCst);
                            }
                            done.push((e.name, r));
                        }
                        done
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("fixture worker panicked"))
                .collect()
        });
        let mut errors = Vec::new();
        for (name, r) in results {
            match r {
                Ok(entry_log) => {
                    logs.insert(name, entry_log);
                }
                Err(err) => errors.push(err),
            }
        }
        if !errors.is_empty() {
            return Err(errors.join("\n\n"));
        }
    }
    Ok(MATRIX.iter().map(|e| logs[e.name].as_str()).collect())
}

/// A rough cost of a row, for scheduling: every source is compiled for every target, and a
/// host link costs about as much as one more target.
fn cost(e: &Entry) -> usize {
    let (sass, ptx) = targets(e);
    let sources = e.inputs.iter().filter(|i| i.ends_with(".cu")).count();
    let link = usize::from(e.kind == Executable);
    sources.max(1) * (sass.len() + ptx.len() + link)
}

fn run_row(nvcc: &Path, dir: &Path, e: &Entry) -> Result<String, String> {
    let mut cmd = command_for(nvcc, e);
    cmd.current_dir(dir);
    let text = describe(&cmd);
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|err| format!("[{}] cannot start `{text}`: {err}", e.name))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "[{}] `{text}` failed ({}) in {}:\n{}{stderr}",
            e.name,
            out.status,
            dir.display(),
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    let produced = dir.join(e.name);
    match std::fs::metadata(&produced) {
        Ok(m) if m.len() > 0 => {}
        _ => {
            return Err(format!(
                "[{}] `{text}` succeeded but did not write {}",
                e.name,
                produced.display()
            ));
        }
    }
    let mut log = format!(
        "# {} ({:.2} s)\n{text}\n",
        e.name,
        start.elapsed().as_secs_f64()
    );
    for line in stderr.lines() {
        let _ = writeln!(log, "#   {line}");
    }
    Ok(log)
}

fn load(nvcc: &Path, dir: &Path, key: &str) -> Fixtures {
    let manifest_path = dir.join(MANIFEST);
    let manifest = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest_path.display()));
    let mut kernels: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for line in manifest.lines() {
        let (name, names) = line.split_once('\t').unwrap_or((line, ""));
        kernels.insert(name, names.split_whitespace().map(str::to_string).collect());
    }
    let mut artifacts: Vec<Artifact> = Vec::new();
    for e in MATRIX {
        let path = dir.join(e.name);
        assert!(
            path.is_file(),
            "fixture {} is missing (delete {} to rebuild)",
            path.display(),
            dir.display()
        );
        let (mut arches, mut ptx_arches) = targets(e);
        let mut sources: BTreeSet<&'static str> = BTreeSet::new();
        for input in e.inputs {
            if input.ends_with(".cu") {
                sources.insert(input);
            } else {
                let dep = artifacts.iter().find(|a| a.name == *input).unwrap();
                sources.extend(dep.sources.iter().copied());
                if e.kind == Archive {
                    arches.extend(dep.arches.iter().copied());
                    ptx_arches.extend(dep.ptx_arches.iter().copied());
                }
            }
        }
        arches.sort_unstable();
        arches.dedup();
        ptx_arches.sort_unstable();
        ptx_arches.dedup();
        artifacts.push(Artifact {
            name: e.name,
            path,
            kind: e.kind,
            arches,
            ptx_arches,
            flags: e.flags.to_vec(),
            inputs: e.inputs.to_vec(),
            sources: sources.into_iter().collect(),
            kernels: kernels.remove(e.name).unwrap_or_else(|| {
                panic!(
                    "{} has no line for {} (delete {} to rebuild)",
                    manifest_path.display(),
                    e.name,
                    dir.display()
                )
            }),
            purpose: e.purpose,
        });
    }
    let build_time = std::fs::read_to_string(dir.join("build-time.txt"))
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .map(Duration::from_secs_f64);
    Fixtures {
        dir: dir.to_path_buf(),
        key: key.to_string(),
        nvcc: nvcc.to_path_buf(),
        artifacts,
        build_time,
    }
}

/// SASS and PTX architectures a row's flags ask for: `-arch=sm_XX` (SASS, plus PTX unless
/// `-cubin`) and `-gencode=arch=compute_XX,code=[sm_YY,compute_ZZ]`.
fn targets(e: &Entry) -> (Vec<u32>, Vec<u32>) {
    let mut sass = Vec::new();
    let mut ptx = Vec::new();
    let num = |s: &str| -> u32 {
        s.trim_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap_or_else(|_| panic!("bad arch `{s}` in row `{}`", e.name))
    };
    for f in e.flags {
        if let Some(a) = f.strip_prefix("-arch=sm_") {
            sass.push(num(a));
            if !e.flags.contains(&"-cubin") {
                ptx.push(num(a));
            }
        } else if let Some(g) = f.strip_prefix("-gencode=") {
            let code = g
                .split_once("code=")
                .map(|(_, c)| c)
                .unwrap_or_else(|| panic!("gencode without code= in row `{}`", e.name));
            for c in code.trim_matches(|c| c == '[' || c == ']').split(',') {
                if let Some(a) = c.strip_prefix("sm_") {
                    sass.push(num(a));
                } else if let Some(a) = c.strip_prefix("compute_") {
                    ptx.push(num(a));
                }
            }
        }
    }
    (sass, ptx)
}

// ---------------------------------------------------------------------------------------------
// Oracles
// ---------------------------------------------------------------------------------------------

/// A toolkit tool next to the nvcc in use (`cuobjdump`, `nvdisasm`, ...).
pub fn tool(name: &str) -> PathBuf {
    let nvcc = super::find_nvcc().expect("toolkit oracles need nvcc (see fixtures())");
    super::toolkit_tool(&nvcc, name)
}

/// Run a toolkit tool; `Ok(stdout)` on exit 0, else `Err` with the command, status and output.
pub fn run_tool(name: &str, args: &[&str], path: &Path) -> Result<String, String> {
    let exe = tool(name);
    let out = Command::new(&exe)
        .args(args)
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{name} {} {}` failed ({}):\n{}{}",
            args.join(" "),
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// `cuobjdump <args> <path>`.
pub fn cuobjdump(args: &[&str], path: &Path) -> Result<String, String> {
    run_tool("cuobjdump", args, path)
}

/// One function of `cuobjdump -res-usage`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResUsage {
    /// Mangled name, as printed after `Function `. Kernels and, in relocatable (`-rdc`) images
    /// and device-linked executables, device functions too (whole-program images list kernels
    /// only).
    pub function: String,
    /// SASS architecture of the image (`arch = sm_XX` of its fatbin header; for a bare cubin,
    /// which has no header, taken from the ELF `e_flags`).
    pub arch: u32,
    /// Index of the ELF image in the file, in cuobjdump's order (0-based).
    pub image: usize,
    /// Archive member (`member <archive>:<member>:` lines), for `.a` files.
    pub member: Option<String>,
    /// The fatbin header said `compressed`.
    pub compressed: bool,
    pub reg: u32,
    /// `None` for `STACK:UNKNOWN` (recursion, indirect calls).
    pub stack: Option<u32>,
    /// Static shared memory; on sm_90 and later it includes the 1 KB the system reserves.
    pub shared: u32,
    pub local: u32,
    /// `CONSTANT[bank]:bytes`, for each bank printed.
    pub constant: BTreeMap<u32, u32>,
    pub texture: Option<u32>,
    pub surface: Option<u32>,
    pub sampler: Option<u32>,
    /// Any other `KEY:VALUE` on the line (none seen with CUDA 13.5).
    pub other: BTreeMap<String, String>,
}

/// One ELF image of `cuobjdump -res-usage`: its `Common:` line and functions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResImage {
    pub arch: u32,
    pub image: usize,
    pub member: Option<String>,
    pub compressed: bool,
    /// `Common:` values: `GLOBAL` and `CONSTANT[n]` (module-wide constant banks).
    pub common: BTreeMap<String, u32>,
    pub functions: Vec<ResUsage>,
}

/// `cuobjdump -res-usage <path>`, one entry per function per image.
pub fn res_usage(path: &Path) -> Result<Vec<ResUsage>, String> {
    Ok(res_usage_images(path)?
        .into_iter()
        .flat_map(|i| i.functions)
        .collect())
}

/// `cuobjdump -res-usage <path>` by image.
pub fn res_usage_images(path: &Path) -> Result<Vec<ResImage>, String> {
    let text = cuobjdump(&["-res-usage"], path)?;
    let bare_arch = elf_arch(path);
    parse_res_usage(&text, bare_arch)
}

/// The SM number in a bare cubin's `e_flags` (bits 8..16, ABI v8), or `None` if `path` is not a
/// CUDA ELF.
pub fn elf_arch(path: &Path) -> Option<u32> {
    elf_flags(path).map(|flags| (flags >> 8) & 0xff)
}

/// A bare cubin's `e_flags`, or `None` if `path` is not a CUDA ELF (`e_machine` 190).
pub fn elf_flags(path: &Path) -> Option<u32> {
    let data = std::fs::read(path).ok()?;
    if data.len() < 64
        || !data.starts_with(b"\x7fELF")
        || u16::from_le_bytes([data[18], data[19]]) != 190
    {
        return None;
    }
    Some(u32::from_le_bytes(data[48..52].try_into().unwrap()))
}

/// Parse `cuobjdump -res-usage` text. `bare_arch` is used for images without a fatbin header.
pub fn parse_res_usage(text: &str, bare_arch: Option<u32>) -> Result<Vec<ResImage>, String> {
    let mut images: Vec<ResImage> = Vec::new();
    let mut member: Option<String> = None;
    // Header of the fatbin entry being read: (is ELF, arch, compressed).
    let mut header: Option<(bool, Option<u32>, bool)> = None;
    let mut pending_function: Option<String> = None;
    let mut in_common = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(m) = line.strip_prefix("member ") {
            member = Some(m.trim_end_matches(':').to_string());
        } else if t == "Fatbin elf code:" {
            header = Some((true, None, false));
        } else if t == "Fatbin ptx code:" {
            header = Some((false, None, false));
        } else if let Some(a) = t.strip_prefix("arch = sm_") {
            if let Some(h) = header.as_mut() {
                h.1 = Some(arch_number(a)?);
            }
        } else if t == "compressed" {
            if let Some(h) = header.as_mut() {
                h.2 = true;
            }
        } else if t == "Resource usage:" {
            let (is_elf, arch, compressed) = header.take().unwrap_or((true, bare_arch, false));
            if !is_elf {
                return Err(format!("resource usage under a PTX header:\n{text}"));
            }
            let arch = arch
                .or(bare_arch)
                .ok_or_else(|| format!("resource usage without an arch:\n{text}"))?;
            images.push(ResImage {
                arch,
                image: images.len(),
                member: member.clone(),
                compressed,
                ..ResImage::default()
            });
            in_common = false;
        } else if t == "Common:" {
            in_common = true;
        } else if let Some(f) = t.strip_prefix("Function ") {
            pending_function = Some(f.trim_end_matches(':').to_string());
            in_common = false;
        } else if t.contains(':') && (in_common || pending_function.is_some()) {
            let img = images
                .last_mut()
                .ok_or_else(|| format!("values before `Resource usage:`: {line}"))?;
            if in_common {
                for kv in t.split_whitespace() {
                    let (k, v) = kv
                        .split_once(':')
                        .ok_or_else(|| format!("bad Common value `{kv}`"))?;
                    img.common.insert(k.to_string(), parse_u32(v)?);
                }
                in_common = false;
            } else {
                let mut ru = ResUsage {
                    function: pending_function.take().unwrap(),
                    arch: img.arch,
                    image: img.image,
                    member: img.member.clone(),
                    compressed: img.compressed,
                    ..ResUsage::default()
                };
                for kv in t.split_whitespace() {
                    let (k, v) = kv
                        .split_once(':')
                        .ok_or_else(|| format!("bad value `{kv}` in `{line}`"))?;
                    match k {
                        "REG" => ru.reg = parse_u32(v)?,
                        "STACK" => {
                            ru.stack = if v == "UNKNOWN" {
                                None
                            } else {
                                Some(parse_u32(v)?)
                            }
                        }
                        "SHARED" => ru.shared = parse_u32(v)?,
                        "LOCAL" => ru.local = parse_u32(v)?,
                        "TEXTURE" => ru.texture = Some(parse_u32(v)?),
                        "SURFACE" => ru.surface = Some(parse_u32(v)?),
                        "SAMPLER" => ru.sampler = Some(parse_u32(v)?),
                        _ => {
                            if let Some(bank) = k
                                .strip_prefix("CONSTANT[")
                                .and_then(|b| b.strip_suffix(']'))
                            {
                                ru.constant.insert(parse_u32(bank)?, parse_u32(v)?);
                            } else {
                                ru.other.insert(k.to_string(), v.to_string());
                            }
                        }
                    }
                }
                img.functions.push(ru);
            }
        }
    }
    if let Some(f) = pending_function {
        return Err(format!("function `{f}` without values"));
    }
    Ok(images)
}

fn parse_u32(s: &str) -> Result<u32, String> {
    s.parse().map_err(|_| format!("not a number: `{s}`"))
}

fn arch_number(s: &str) -> Result<u32, String> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    parse_u32(&digits)
}

/// One line of `cuobjdump -lelf -lptx`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// 1-based number cuobjdump gives it (ELF and PTX are numbered separately).
    pub number: usize,
    /// The file name `-xelf`/`-xptx` would write, e.g. `app.3.sm_120.cubin`.
    pub file: String,
    /// SASS (`.cubin`) or PTX (`.ptx`) architecture, from the file name.
    pub arch: u32,
    pub member: Option<String>,
}

/// `cuobjdump -lelf <path>`.
pub fn list_elf(path: &Path) -> Result<Vec<Listed>, String> {
    list(path, "-lelf", "ELF file")
}

/// `cuobjdump -lptx <path>` (empty when there is none; cuobjdump then only says so on stderr).
pub fn list_ptx(path: &Path) -> Result<Vec<Listed>, String> {
    list(path, "-lptx", "PTX file")
}

fn list(path: &Path, flag: &str, prefix: &str) -> Result<Vec<Listed>, String> {
    let text = cuobjdump(&[flag], path)?;
    let mut out = Vec::new();
    let mut member = None;
    for line in text.lines() {
        if let Some(m) = line.strip_prefix("member ") {
            member = Some(m.trim_end_matches(':').to_string());
        } else if let Some(rest) = line.strip_prefix(prefix) {
            let (num, file) = rest
                .split_once(':')
                .ok_or_else(|| format!("bad listing line `{line}`"))?;
            let file = file.trim().to_string();
            let arch_part = file
                .rsplit_once(".sm_")
                .map(|(_, a)| a)
                .ok_or_else(|| format!("no `.sm_` in `{file}`"))?;
            out.push(Listed {
                number: parse_u32(num.trim())? as usize,
                arch: arch_number(arch_part)?,
                file,
                member: member.clone(),
            });
        }
    }
    Ok(out)
}

/// `cuobjdump -xelf all <path>` run in `dir`: the extracted cubins, in listing order.
pub fn extract_elfs(path: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let listed = list_elf(path)?;
    let abs = std::path::absolute(path).map_err(|e| e.to_string())?;
    let exe = tool("cuobjdump");
    let out = Command::new(&exe)
        .args(["-xelf", "all"])
        .arg(&abs)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`cuobjdump -xelf all {}` failed:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    listed
        .into_iter()
        .map(|l| {
            let p = dir.join(&l.file);
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "cuobjdump listed {} but did not extract it",
                    l.file
                ))
            }
        })
        .collect()
}

/// `cuobjdump -sass <path>`.
pub fn sass(path: &Path) -> Result<String, String> {
    cuobjdump(&["-sass"], path)
}

/// `(arch, function)` pairs of `cuobjdump -sass` (`code for sm_XX` / `Function : name`).
pub fn sass_functions(path: &Path) -> Result<Vec<(u32, String)>, String> {
    let text = sass(path)?;
    let mut arch = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(a) = t.strip_prefix("code for sm_") {
            arch = Some(arch_number(a)?);
        } else if let Some(f) = t.strip_prefix("Function : ") {
            let a = arch.ok_or_else(|| format!("`{t}` before any `code for`"))?;
            out.push((a, f.to_string()));
        }
    }
    Ok(out)
}

/// `cuobjdump -elf <path>`: the readable dump of every device ELF.
pub fn elf_dump(path: &Path) -> Result<String, String> {
    cuobjdump(&["-elf"], path)
}

/// A row of a `.symtab` in `cuobjdump -elf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfSymbol {
    pub name: String,
    /// `FUNC`, `CUDA_OBJECT`, `SECTION`, ...
    pub ty: String,
    pub bind: String,
    /// `ENTRY` for kernels, `-`, `CONSTANT`, `GLOBAL`, `RESERVED_SHARED`, ...
    pub other: String,
    pub size: u64,
}

/// Every symbol of every device ELF in `path` (images concatenated).
pub fn elf_symbols(path: &Path) -> Result<Vec<ElfSymbol>, String> {
    let text = elf_dump(path)?;
    let mut out = Vec::new();
    let mut in_symtab = false;
    for line in text.lines() {
        if line.starts_with(".section .symtab") {
            in_symtab = true;
            continue;
        }
        if !in_symtab {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.is_empty() {
            in_symtab = false;
            continue;
        }
        if cols[0] == "Num" {
            continue;
        }
        if cols.len() != 9 {
            return Err(format!("unexpected symtab row `{line}`"));
        }
        let size = u64::from_str_radix(cols[2].trim_start_matches("0x"), 16)
            .map_err(|_| format!("bad size in `{line}`"))?;
        out.push(ElfSymbol {
            name: cols[8].to_string(),
            ty: cols[3].to_string(),
            bind: cols[4].to_string(),
            other: cols[6].to_string(),
            size,
        });
    }
    Ok(out)
}

/// Kernels (`FUNC` + `ENTRY`) in the device ELFs of `path`.
pub fn kernel_names(path: &Path) -> Result<BTreeSet<String>, String> {
    Ok(elf_symbols(path)?
        .into_iter()
        .filter(|s| s.ty == "FUNC" && s.other == "ENTRY")
        .map(|s| s.name)
        .collect())
}

/// `nvdisasm <cubin>`: `Ok` when it disassembles without an error, else its message.
pub fn nvdisasm_ok(cubin: &Path) -> Result<(), String> {
    let exe = tool("nvdisasm");
    let out = Command::new(&exe)
        .arg(cubin)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() && !stderr.to_ascii_lowercase().contains("error") {
        Ok(())
    } else {
        Err(format!(
            "nvdisasm {} ({}): {stderr}",
            cubin.display(),
            out.status
        ))
    }
}

/// One function of a `ptxas -v` report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxasInfo {
    pub function: String,
    /// From the last `Compiling entry function '…' for 'sm_XX'`; `None` before any.
    pub arch: Option<u32>,
    /// A kernel (`Compiling entry function`), not a device function.
    pub entry: bool,
    /// `Used N registers` (printed for kernels, and for device functions only in some modes).
    pub registers: Option<u32>,
    pub barriers: Option<u32>,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub cumulative_stack: Option<u32>,
    pub smem: Option<u32>,
    /// `N bytes cmem[bank]` (not printed for sm_90 and later).
    pub cmem: BTreeMap<u32, u32>,
    /// Other parts of the `Used …` line.
    pub other: Vec<String>,
}

/// Parse `ptxas -v` output (as printed by `nvcc -Xptxas -v`).
pub fn parse_ptxas_v(text: &str) -> Vec<PtxasInfo> {
    let mut out: Vec<PtxasInfo> = Vec::new();
    let mut arch = None;
    let mut props_for: Option<usize> = None;
    let num = |s: &str| -> Option<u32> { s.split_whitespace().next()?.parse().ok() };
    for line in text.lines() {
        let info = line.strip_prefix("ptxas info").map(|r| {
            r.trim_start()
                .trim_start_matches(':')
                .trim_start()
                .to_string()
        });
        if let Some(props) = props_for.take() {
            // The line after `Function properties for`.
            if info.is_none() {
                for part in line.split(',') {
                    let part = part.trim();
                    let n = num(part).unwrap_or(0);
                    let f = &mut out[props];
                    if part.ends_with("stack frame") {
                        f.stack_frame = n;
                    } else if part.ends_with("spill stores") {
                        f.spill_stores = n;
                    } else if part.ends_with("spill loads") {
                        f.spill_loads = n;
                    }
                }
                continue;
            }
        }
        let Some(info) = info else { continue };
        if let Some(rest) = info.strip_prefix("Compiling entry function '") {
            let (name, tail) = rest.split_once('\'').unwrap_or((rest, ""));
            arch = tail
                .split_once("'sm_")
                .and_then(|(_, a)| arch_number(a).ok());
            out.push(PtxasInfo {
                function: name.to_string(),
                arch,
                entry: true,
                ..PtxasInfo::default()
            });
        } else if let Some(name) = info.strip_prefix("Function properties for ") {
            let name = name.trim();
            let idx = match out.last() {
                Some(last) if last.entry && last.function == name => out.len() - 1,
                _ => {
                    out.push(PtxasInfo {
                        function: name.to_string(),
                        arch,
                        entry: false,
                        ..PtxasInfo::default()
                    });
                    out.len() - 1
                }
            };
            props_for = Some(idx);
        } else if info.starts_with("Used ") {
            let Some(f) = out.last_mut() else { continue };
            for part in info.split(',') {
                let part = part.trim();
                let n = num(part.trim_start_matches("Used ").trim_start_matches("used "));
                if part.ends_with("registers") {
                    f.registers = n;
                } else if part.ends_with("barriers") {
                    f.barriers = n;
                } else if part.ends_with("cumulative stack size") {
                    f.cumulative_stack = n;
                } else if part.ends_with("bytes smem") {
                    f.smem = n;
                } else if let Some(bank) = part
                    .split_once("cmem[")
                    .and_then(|(_, b)| b.strip_suffix(']'))
                    .and_then(|b| b.parse().ok())
                {
                    f.cmem.insert(bank, n.unwrap_or(0));
                } else {
                    f.other.push(part.to_string());
                }
            }
        }
    }
    out
}

/// Compile `sources` with `nvcc <flags> -Xptxas -v` in a scratch folder and parse the report.
/// `-c` is added unless the flags already choose an output kind (`-c`, `-dc`, `-cubin`,
/// `-fatbin`, `-ptx`); outputs go to the scratch folder.
pub fn ptxas_v(sources: &[PathBuf], flags: &[&str]) -> Result<Vec<PtxasInfo>, String> {
    let nvcc = super::find_nvcc().ok_or("ptxas_v needs nvcc")?;
    let scratch = tempfile::Builder::new()
        .prefix("ptxas-v-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&nvcc);
    if !flags
        .iter()
        .any(|f| matches!(*f, "-c" | "-dc" | "-cubin" | "-fatbin" | "-ptx"))
    {
        cmd.arg("-c");
    }
    cmd.args(flags)
        .args(["-Xptxas", "-v", "-odir"])
        .arg(scratch.path())
        .args(sources)
        .current_dir(scratch.path())
        .env_remove("NVCC_PREPEND_FLAGS")
        .env_remove("NVCC_APPEND_FLAGS");
    let text = describe(&cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `{text}`: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("`{text}` failed ({}):\n{stderr}", out.status));
    }
    Ok(parse_ptxas_v(&stderr))
}

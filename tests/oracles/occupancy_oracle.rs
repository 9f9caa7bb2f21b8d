//! Ground truth for `predict::occupancy`: NVIDIA's `cuda_occupancy.h`, from the installed
//! toolkit, compiled with the machine's C++ compiler into a small driver
//! (`tests/oracle/cuda_occupancy_oracle.cpp`) that answers for every point this test generates.
//! Every point must agree: blocks per SM, each resource's own limit, the limiting factors, and
//! the registers and shared memory allocated per block.
//!
//! The points: a deterministic grid over every architecture (block sizes around warp and
//! sub-partition boundaries, register counts at and beside every allocation step, shared sizes
//! at and beside every limit, each dynamic-shared opt-in kind), a grid of carve-out preferences
//! and barrier counts, and pseudo-random points over all inputs. Some of the points give the
//! static size the way a linked sm_90+ cubin reports it (`SharedBytes::FromCubin`, 1 KB more
//! than declared) and must still match the header fed the declared size.
//!
//! Two documented departures are checked rather than ignored (see `src/predict/occupancy.rs`):
//! - 256 registers per thread: the header lets a block launch, this model does not;
//! - the header's `limitingFactors` keeps factors found before it applies the barrier limit,
//!   so it may hold more than the factors whose limit equals the result. The model must equal
//!   the set derived from the header's per-factor limits, and be a subset of its flags.
//!
//! Without a toolkit or C++ compiler the test is skipped with a message, unless `CI` is set.
//! `CXX` names the compiler (default `g++`).

use crate::common;

use nvcc_orion::predict::{
    Arch, Carveout, DynamicSharedLimit, KernelResources, Launch, Limiter, Limiters, Occupancy,
    SharedBytes, occupancy,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const KB: u32 = 1024;

/// One question for both calculators.
#[derive(Debug, Clone, Copy)]
struct Point {
    arch: Arch,
    threads: u32,
    regs: u32,
    /// What the header gets as `sharedSizeBytes`.
    declared_static: u32,
    /// What the model gets: `User(declared)`, or the same kernel as its cubin reports it.
    static_shared: SharedBytes,
    dynamic: u32,
    limit: DynamicSharedLimit,
    /// -1 for the default, else a percentage (101 is invalid on purpose).
    carveout: i32,
    barriers: u32,
    virtual_resources: u32,
}

impl Point {
    fn new(arch: Arch, threads: u32, regs: u32, declared_static: u32, dynamic: u32) -> Point {
        Point {
            arch,
            threads,
            regs,
            declared_static,
            static_shared: SharedBytes::User(declared_static),
            dynamic,
            limit: DynamicSharedLimit::Default,
            carveout: -1,
            barriers: 1,
            virtual_resources: 0,
        }
    }

    /// The same kernel with its static size as a linked cubin of `arch` reports it.
    fn as_cubin_reports_it(mut self) -> Point {
        let p = self.arch.params();
        let bytes = if p.cubin_shared_includes_reserved && self.declared_static > 0 {
            self.declared_static + p.reserved_smem_per_block
        } else {
            self.declared_static
        };
        self.static_shared = SharedBytes::FromCubin(bytes);
        self
    }

    fn oracle_line(&self, out: &mut String) {
        let (optin, max_dynamic) = match self.limit {
            DynamicSharedLimit::Default => (0, 0),
            DynamicSharedLimit::OptIn(n) => (1, n),
        };
        writeln!(
            out,
            "{} {} {} {} {} {} {} {} {} {} {}",
            self.arch.major(),
            self.arch.minor(),
            self.threads,
            self.regs,
            self.declared_static,
            self.dynamic,
            optin,
            max_dynamic,
            self.carveout,
            self.barriers,
            self.virtual_resources
        )
        .unwrap();
    }

    fn model(&self) -> Result<Occupancy, nvcc_orion::predict::OccupancyError> {
        let k = KernelResources {
            regs_per_thread: self.regs,
            static_shared: self.static_shared,
            barriers: self.barriers,
            virtual_resources: self.virtual_resources,
        };
        let launch = Launch {
            threads_per_block: self.threads,
            dynamic_shared: self.dynamic,
            dynamic_shared_limit: self.limit,
            carveout: match self.carveout {
                -1 => Carveout::Default,
                c => Carveout::Percent(u8::try_from(c).unwrap()),
            },
        };
        occupancy(self.arch, &k, &launch)
    }
}

/// The header's answer for one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    status: i64,
    blocks: u32,
    flags: u32,
    /// regs, smem, warps, blocks, barriers, virtual; `None` for INT_MAX.
    limits: [Option<u32>; 6],
    alloc_regs: u64,
    alloc_smem: u64,
}

impl Header {
    fn parse(line: &str) -> Header {
        let f: Vec<i64> = line
            .split_whitespace()
            .map(|w| w.parse().unwrap_or_else(|_| panic!("oracle line {line:?}")))
            .collect();
        assert_eq!(f.len(), 11, "oracle line {line:?}");
        let lim = |v: i64| (v >= 0).then(|| u32::try_from(v).unwrap());
        Header {
            status: f[0],
            blocks: u32::try_from(f[1]).unwrap(),
            flags: u32::try_from(f[2]).unwrap(),
            limits: [
                lim(f[3]),
                lim(f[4]),
                lim(f[5]),
                lim(f[6]),
                lim(f[7]),
                lim(f[8]),
            ],
            alloc_regs: u64::try_from(f[9]).unwrap(),
            alloc_smem: u64::try_from(f[10]).unwrap(),
        }
    }

    fn limit(&self, l: Limiter) -> Option<u32> {
        let i = match l {
            Limiter::Registers => 0,
            Limiter::SharedMemory => 1,
            Limiter::Warps => 2,
            Limiter::Blocks => 3,
            Limiter::Barriers => 4,
            Limiter::VirtualResources => 5,
        };
        self.limits[i]
    }

    /// The header's `cudaOccLimitingFactor` bits, as a set.
    fn flag_set(&self) -> Limiters {
        let bits = [
            (0x01, Limiter::Warps),
            (0x02, Limiter::Registers),
            (0x04, Limiter::SharedMemory),
            (0x08, Limiter::Blocks),
            (0x10, Limiter::Barriers),
            (0x20, Limiter::VirtualResources),
        ];
        bits.iter()
            .filter(|(b, _)| self.flags & b != 0)
            .map(|&(_, l)| l)
            .collect()
    }

    /// The factors whose own limit equals the result.
    fn derived_set(&self) -> Limiters {
        Limiter::ALL
            .into_iter()
            .filter(|&l| self.limit(l) == Some(self.blocks))
            .collect()
    }
}

/// splitmix64: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.range(1, 100) <= percent
    }
}

const THREADS: &[u32] = &[
    1, 31, 32, 33, 64, 96, 128, 160, 192, 256, 288, 384, 512, 640, 768, 1023, 1024, 1025,
];
const REGS: &[u32] = &[
    0, 1, 8, 16, 24, 32, 33, 40, 41, 48, 49, 56, 57, 64, 65, 72, 80, 88, 96, 97, 128, 129, 168,
    169, 200, 232, 255, 256,
];
/// (declared static, dynamic) pairs around the 48 KB default, the opt-in maxima, and the
/// allocation units.
const SHARED: &[(u32, u32)] = &[
    (0, 0),
    (1, 0),
    (0, 1),
    (100, 3000),
    (4 * KB, 0),
    (4 * KB, 4 * KB),
    (5 * KB + 1, 0),
    (16 * KB, 16 * KB),
    (47 * KB, 0),
    (47 * KB, KB),
    (47 * KB, KB + 1),
    (48 * KB, 0),
    (48 * KB, 1),
    (0, 48 * KB),
    (32 * KB, 64 * KB),
    (0, 99 * KB),
    (0, 99 * KB + 1),
    (0, 163 * KB),
    (0, 227 * KB),
    (0, 228 * KB),
];

fn grid() -> Vec<Point> {
    let mut points = Vec::new();
    for arch in Arch::all() {
        let optin_max = arch.params().smem_per_block_optin;
        for &threads in THREADS {
            for &regs in REGS {
                for &(s, d) in SHARED {
                    let base = Point::new(arch, threads, regs, s, d);
                    points.push(base);
                    points.push(Point {
                        limit: DynamicSharedLimit::OptIn(d),
                        ..base
                    });
                    points.push(
                        Point {
                            limit: DynamicSharedLimit::OptIn(optin_max),
                            ..base
                        }
                        .as_cubin_reports_it(),
                    );
                }
            }
        }
    }
    points
}

fn carveout_barrier_grid() -> Vec<Point> {
    const CARVEOUTS: &[i32] = &[-1, 0, 1, 10, 25, 33, 50, 67, 75, 99, 100, 101];
    let mut points = Vec::new();
    for arch in Arch::all() {
        for threads in [64, 256, 1024] {
            for regs in [32, 64, 128] {
                for &(s, d) in SHARED {
                    for &carveout in CARVEOUTS {
                        for barriers in [0, 1, 16] {
                            points.push(Point {
                                limit: DynamicSharedLimit::OptIn(d),
                                carveout,
                                barriers,
                                ..Point::new(arch, threads, regs, s, d)
                            });
                        }
                    }
                }
            }
        }
    }
    points
}

fn random_points(n: usize) -> Vec<Point> {
    let mut rng = Rng(0x6f63_6375_7061_6e63);
    let arches: Vec<Arch> = Arch::all().collect();
    (0..n)
        .map(|_| {
            let arch = rng.pick(&arches);
            let threads = if rng.chance(50) {
                32 * rng.range(1, 33)
            } else {
                // Now and then a block of no threads, which both must refuse.
                let lo = if rng.chance(1) { 0 } else { 1 };
                rng.range(lo, 1100)
            };
            let regs = rng.range(0, 256);
            let size = |rng: &mut Rng| match rng.range(0, 3) {
                0 => 0,
                1 => rng.range(0, 64 * KB),
                2 => rng.range(0, 240 * KB),
                _ => 48 * KB - 1024 + rng.range(0, 2048),
            };
            let s = size(&mut rng);
            let d = size(&mut rng);
            let limit = match rng.range(0, 4) {
                0 => DynamicSharedLimit::Default,
                1 => DynamicSharedLimit::OptIn(d),
                2 => DynamicSharedLimit::OptIn(d.saturating_sub(1)),
                3 => DynamicSharedLimit::OptIn(arch.params().smem_per_block_optin),
                _ => DynamicSharedLimit::OptIn(rng.range(0, 240 * KB)),
            };
            let p = Point {
                limit,
                carveout: if rng.chance(60) {
                    -1
                } else {
                    rng.range(0, 101) as i32
                },
                barriers: if rng.chance(70) {
                    rng.range(0, 1)
                } else {
                    rng.range(0, 17)
                },
                virtual_resources: if rng.chance(80) { 0 } else { rng.range(0, 130) },
                ..Point::new(arch, threads, regs, s, d)
            };
            if rng.chance(50) {
                p.as_cubin_reports_it()
            } else {
                p
            }
        })
        .collect()
}

/// `$CUDA_HOME/include` of the toolkit the other tests use, and a C++ compiler, or why not.
fn toolchain() -> Result<(PathBuf, String), String> {
    let nvcc = common::find_nvcc().ok_or("no nvcc found (NVCC_ORION_NVCC, CUDA_HOME, PATH)")?;
    let nvcc = std::fs::canonicalize(&nvcc).unwrap_or(nvcc);
    let include = nvcc
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("include"))
        .ok_or("nvcc has no parent directory")?;
    if !include.join("cuda_occupancy.h").is_file() {
        return Err(format!("{} has no cuda_occupancy.h", include.display()));
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_string());
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => Ok((include, cxx)),
        _ => Err(format!("no working C++ compiler {cxx:?} (set CXX)")),
    }
}

fn build_oracle(include: &Path, cxx: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/cuda_occupancy_oracle.cpp");
    let exe = dir.join("oracle");
    let out = Command::new(cxx)
        .args(["-std=c++17", "-O1", "-Wall", "-Wno-unused-function", "-I"])
        .arg(include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C++ compiler");
    assert!(
        out.status.success(),
        "{cxx} {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run_oracle(exe: &Path, dir: &Path, points: &[Point]) -> Vec<Header> {
    let mut input = String::with_capacity(points.len() * 40);
    for p in points {
        p.oracle_line(&mut input);
    }
    let input_path = dir.join("points.txt");
    std::fs::write(&input_path, input).unwrap();
    let out = Command::new(exe)
        .stdin(std::fs::File::open(&input_path).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<Header> = text.lines().map(Header::parse).collect();
    assert_eq!(
        answers.len(),
        points.len(),
        "the oracle answered only part of the points"
    );
    answers
}

/// Why the model's answer for `p` differs from the header's `h`; `None` when they agree.
/// `stale_flags` counts points where the header's flags hold a stale factor.
fn disagreement(p: &Point, h: &Header, stale_flags: &mut usize) -> Option<String> {
    let ours = match (p.model(), h.status) {
        (Err(_), s) if s != 0 => return None,
        (Err(e), _) => return Some(format!("model error {e:?}, header succeeded")),
        (Ok(_), s) if s != 0 => return Some(format!("header status {s}, model succeeded")),
        (Ok(o), _) => o,
    };
    // Departure 1: 256 registers cannot launch here; the header may let them.
    if p.regs > 255 {
        return (ours.blocks_per_sm != 0
            || ours.limits.registers != Some(0)
            || !ours.limiters.contains(Limiter::Registers))
        .then(|| format!("256 registers must not launch: {ours:?}"));
    }
    let mut why = Vec::new();
    if ours.blocks_per_sm != h.blocks {
        why.push(format!(
            "blocks {} vs header {}",
            ours.blocks_per_sm, h.blocks
        ));
    }
    for l in Limiter::ALL {
        if ours.limits.get(l) != h.limit(l) {
            why.push(format!(
                "{} limit {:?} vs header {:?}",
                l.name(),
                ours.limits.get(l),
                h.limit(l)
            ));
        }
    }
    // Departure 2: the model's set is exact; the header's flags may add stale factors.
    if ours.limiters != h.derived_set() {
        why.push(format!(
            "limiters {{{}}} vs header's limits {{{}}}",
            ours.limiters,
            h.derived_set()
        ));
    }
    let flags = h.flag_set();
    if ours.limiters.iter().any(|l| !flags.contains(l)) {
        why.push(format!(
            "limiters {{{}}} not within header flags {{{flags}}}",
            ours.limiters
        ));
    } else if flags != ours.limiters {
        *stale_flags += 1;
    }
    if ours.regs_per_block != h.alloc_regs {
        why.push(format!(
            "regs/block {} vs header {}",
            ours.regs_per_block, h.alloc_regs
        ));
    }
    if ours.shared_per_block != h.alloc_smem {
        why.push(format!(
            "smem/block {} vs header {}",
            ours.shared_per_block, h.alloc_smem
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[test]
fn occupancy_matches_cuda_occupancy_h() {
    let (include, cxx) = match toolchain() {
        Ok(t) => t,
        Err(why) => return common::skip("occupancy_oracle", &why),
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = build_oracle(&include, &cxx, dir.path());

    let mut points = grid();
    points.extend(carveout_barrier_grid());
    points.extend(random_points(60_000));
    let answers = run_oracle(&exe, dir.path(), &points);

    let mut failures = Vec::new();
    let mut stale_flags = 0;
    let mut header_launches_256 = 0;
    for (p, h) in points.iter().zip(&answers) {
        if p.regs > 255 && h.status == 0 && h.blocks > 0 {
            header_launches_256 += 1;
        }
        if let Some(why) = disagreement(p, h, &mut stale_flags) {
            failures.push(format!("{p:?}\n    {why}\n    header: {h:?}"));
        }
    }
    let arches: Vec<_> = Arch::all().map(|a| a.to_string()).collect();
    eprintln!(
        "occupancy_oracle: {} points over {} against {}; {} failures; header flags with a \
         stale factor: {stale_flags}; 256-register points the header launches: \
         {header_launches_256}",
        points.len(),
        arches.join(" "),
        include.join("cuda_occupancy.h").display(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} points disagree with cuda_occupancy.h; the first ones:\n{}",
        failures.len(),
        points.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

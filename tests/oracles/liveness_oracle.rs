//! Liveness against the toolkit, on the cubins of the repository's test kernels and of
//! generated programs.
//!
//! Every `.cu` under `tests/kernels/` and `examples/kernels/` (with the flags its tests use;
//! `tests/kernels/liveness/` adds `-maxrregcount` variants named in a `// liveness-oracle:`
//! line) and the programs of six generator seeds ([`SEEDS`]) are built with nvcc into a
//! folder keyed by the sources' hash and the plan, once (a lock and a completion stamp
//! make other test processes wait and reuse it), with their `nvdisasm -json` and
//! `-c -lrm narrow` listings (`-plr`'s table, one character per register). The
//! architectures come from [`plan`]: in CI each source on one of sm_75, 80, 86, 89 and 90
//! in turn (the liveness kernels on sm_90 or sm_80 too, `liveness/varlat.cu`'s
//! variable-latency kernels on all five), 94 cubins; with
//! `LIVENESS_ORACLE_ARCHS=all` every source on all five (340 cubins; sm_100 and later have
//! no operand tables). Then, at every instruction of every function:
//!
//! * `analysis::Liveness` (nvdisasm's convention, docs/sass.md §`nvdisasm -plr` and the
//!   oracle, its Liveness item): the count equals the GPR `#` column, and the registers the
//!   marked cells, of `-plr`; likewise the PRED, UGPR and UPRED files, calls included;
//! * regdem's liveness (`transform::regdem`, its own conservative convention) has
//!   every register live into the instruction that `-plr` marks live into it (`v`, `x`, `:`)
//!   except where the call models differ (see [`regdem_liveness_covers_nvdisasm`]);
//! * on two cubins, the narrow layout equals `-c -plr`'s wide one row for row and its `#`
//!   column `-c -lrm count`'s; `nvcc-orion debug sass --liveness` prints `-plr`'s sets.
//!
//! Any instruction where the analysis shows fewer general registers than `-plr` fails the
//! check; where it is known to show more (the safe side; [`KNOWN_OVER`]: one block of one
//! kernel on sm_80, 86 and 89, in the full check only) the difference is printed on every
//! run, not hidden.
//!
//! A failure names the cubin, function, offset, instruction and the differing registers
//! (`LIVENESS_ORACLE_ALL=1` prints every one). Without nvcc the tests print a skip line and
//! pass; with `CI` set they fail.
//!
//! Time, measured on 2 cores shared with another engineer's builds (load average about 3),
//! CUDA 13.5: cold, building the 78 cubins, 142 s wall for 148 s of CPU (nvcc and the two
//! nvdisasm runs, about 0.5 s each whatever the cubin's size, cost about 1.8 s of CPU a
//! cubin; the comparisons 5 s), so about 75 s on two idle cores; warm 5 s. It compares
//! 117,886 instructions in 389 functions (GPR), 353,658 (instruction, file) pairs (PRED,
//! UGPR, UPRED) and 98,660 instructions of 331 kernels (regdem). The full check: 340
//! cubins, 544,454 instructions in 1,695 functions, 606 s of CPU cold, 14 s warm.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use nvcc_orion::analysis::{Cfg, Liveness, Marked, RegFile};
use nvcc_orion::sass::decode::{self, Decoded, callee_saved};
use nvcc_orion::verify::plr;

const ARCHS: &[u32] = &[75, 80, 86, 89, 90];

/// Each check compares at least this many instructions (the default plan has about 80,000).
const MIN_INSTRUCTIONS: usize = 50_000;

/// Generated programs (`crates/nvcc-orion-gen`), each built from its `a.cu`: 228 has
/// recursion, calls through tables, printf, assert, textures and surfaces; 1006 is an `-rdc`
/// program with extern calls; the others are small programs with calls and loops. Seeds 895
/// and 43 (every feature with 541 and 228) are left out: nvdisasm 13.5 `-json` crashes
/// (SIGSEGV) on their `-rdc` cubins on every architecture, as on any `-rdc` kernel that
/// reads a static `__shared__` array (docs/sass.md §Other toolkit output the code reads).
const SEEDS: &[u64] = &[228, 541, 5, 1000, 1006, 2];

/// The variable-latency kernels (issue 46: conversions, MUFU, loads, `S2R`), built for every
/// architecture of [`ARCHS`] in every plan.
const VARIABLE_LATENCY: &str = "tests/kernels/liveness/varlat.cu";

/// Opcodes whose results arrive through a scoreboard that the check must see on every
/// architecture ([`variable_latency_instructions_are_compared`]).
const VARIABLE_LATENCY_OPS: &[&str] = &["I2F", "F2I", "F2F", "MUFU", "LDG", "LDS", "TEX", "S2R"];

/// Sources that are not built: they fail on purpose, or hold no device code.
const EXCLUDED: &[&str] = &[
    "tests/kernels/syntax_error.cu",
    "tests/kernels/main.cu",
    "tests/kernels/spill2smem/main.cu",
];

/// Flags a source needs to build on its own (what its tests pass).
fn flags_of(rel: &str, text: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match rel {
        "tests/kernels/defines.cu" => {
            let inc = root.join("tests/kernels/inc dir");
            return vec![vec![
                "-DNAME=two words".to_string(),
                format!("-I{}", inc.display()),
            ]];
        }
        "tests/kernels/rdc_a.cu"
        | "tests/kernels/rdc_b.cu"
        | "tests/kernels/matrix/rdc_lib.cu"
        | "tests/kernels/matrix/rdc_use.cu"
        | "tests/kernels/separable/fold.cu"
        | "tests/kernels/separable/walk.cu" => return vec![s(&["-rdc=true"])],
        _ => {}
    }
    if rel.starts_with("tests/kernels/spill_corpus/") {
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(root.join("tests/kernels/spill_corpus/manifest.json")).unwrap(),
        )
        .unwrap();
        let name = rel.rsplit('/').next().unwrap();
        if let Some(f) = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["file"] == name)
        {
            return vec![
                f["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect(),
            ];
        }
    }
    // `// liveness-oracle: -maxrregcount=32; -maxrregcount=48`: variants besides the
    // default build.
    let mut out = vec![Vec::new()];
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("// liveness-oracle:") {
            out.extend(
                v.split(';')
                    .map(|f| f.split_whitespace().map(str::to_string).collect()),
            );
        }
    }
    out
}

/// One source with one set of flags; built for one or more architectures.
#[derive(Debug, Clone)]
struct Unit {
    /// The source relative to the repository, or `gen:SEED` for a generated program.
    rel: String,
    /// Where the source is (generated programs are written into the build folder).
    path: PathBuf,
    flags: Vec<String>,
    /// File stem in the build folder, without the architecture.
    stem: String,
}

/// One cubin to build: a unit for one architecture.
#[derive(Debug, Clone)]
struct Job {
    rel: String,
    path: PathBuf,
    flags: Vec<String>,
    arch: u32,
    /// File stem in the build folder.
    stem: String,
    /// Also list it with `-plr` (wide) and `-lrm count`, to check them against the narrow
    /// layout the other checks read.
    wide: bool,
}

impl Job {
    fn label(&self) -> String {
        let mut s = format!("{} sm_{}", self.rel, self.arch);
        for f in &self.flags {
            s += " ";
            s += f;
        }
        s
    }
}

struct Built {
    dir: PathBuf,
    jobs: Vec<Job>,
}

fn sources() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "cu") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if !EXCLUDED.contains(&rel.as_str()) {
                    out.push(rel);
                }
            }
        }
    }
    walk(&root.join("tests/kernels"), root, &mut out);
    walk(&root.join("examples/kernels"), root, &mut out);
    out.sort();
    out
}

/// The architectures each unit is built for. `LIVENESS_ORACLE_ARCHS=all` builds every unit
/// for every architecture (the full check, 340 cubins). By default, for CI time (a cubin costs
/// about 1.7 s of CPU: nvcc, and two nvdisasm runs of about 0.5 s each whatever the size),
/// each unit is built for one architecture in turn (the unit's index plus
/// `LIVENESS_ORACLE_ROTATE`, default 0, modulo five), so each architecture sees a fifth of
/// the sources and five rotations cover the full check; the kernels written for the
/// liveness issue (`tests/kernels/liveness/`) are built for sm_90 as well (sm_80 when their
/// turn is sm_90), and [`VARIABLE_LATENCY`] for all five.
fn plan(units: &[Unit]) -> Vec<Job> {
    let all = std::env::var("LIVENESS_ORACLE_ARCHS").is_ok_and(|v| v == "all");
    let rotate: usize = std::env::var("LIVENESS_ORACLE_ROTATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut jobs = Vec::new();
    for (i, u) in units.iter().enumerate() {
        let turn = ARCHS[(i + rotate) % ARCHS.len()];
        let archs = if all || u.rel == VARIABLE_LATENCY {
            ARCHS.to_vec()
        } else if u.rel.starts_with("tests/kernels/liveness/") {
            vec![turn, if turn == 90 { 80 } else { 90 }]
        } else {
            vec![turn]
        };
        for arch in archs {
            jobs.push(Job {
                rel: u.rel.clone(),
                path: u.path.clone(),
                flags: u.flags.clone(),
                arch,
                stem: format!("{}_sm{arch}", u.stem),
                // Calls and recursion; more than 100 registers (a hundreds row).
                wide: u.flags.is_empty()
                    && ((u.rel == "tests/kernels/liveness/calls.cu" && arch == 90)
                        || u.rel == "tests/kernels/spill2smem/spills.cu"),
            });
        }
    }
    jobs
}

/// Run `f` over `items` on the machine's cores (at most 4 threads), results in order.
fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let next = Mutex::new(0usize);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        let i = *n;
                        *n += 1;
                        i
                    };
                    if i >= items.len() {
                        break;
                    }
                    let r = f(&items[i]);
                    out.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

fn run(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

/// Build every job once (cross-process: a lock file and a completion stamp) into a folder
/// keyed by the sources, flags and plan, with the listings of each cubin: `nvdisasm -json`
/// (decoded by `sass::decode`) and `-c -lrm narrow` (`-plr`'s marks, one character per
/// register), plus `-c -plr` and `-c -lrm count` for the `wide` jobs.
///
/// A failed build is kept as its message, so the other tests fail with it instead of
/// building again.
fn built() -> Option<&'static Built> {
    static B: OnceLock<Option<Result<Built, String>>> = OnceLock::new();
    let b = B.get_or_init(|| {
        let nvcc = common::nvcc_or_skip("liveness_oracle")?;
        let started = Instant::now();
        let nvdisasm = common::toolkit_tool(&nvcc, "nvdisasm");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut h = common::fnv(nvcc.to_string_lossy().as_bytes(), 0xcbf2_9ce4_8422_2325);
        // Every file of the kernel folders (headers included).
        let mut files = Vec::new();
        fn all(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    all(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        all(&root.join("tests/kernels"), &mut files);
        all(&root.join("examples/kernels"), &mut files);
        files.sort();
        for f in &files {
            h = common::fnv(
                f.strip_prefix(root).unwrap().as_os_str().as_encoded_bytes(),
                h,
            );
            h = common::fnv(&std::fs::read(f).unwrap(), h);
        }
        let mut units = Vec::new();
        for rel in sources() {
            let text = std::fs::read_to_string(root.join(&rel)).unwrap();
            for (v, flags) in flags_of(&rel, &text).into_iter().enumerate() {
                units.push(Unit {
                    path: root.join(&rel),
                    stem: format!("{}_v{v}", rel.replace(['/', ' '], "_")),
                    rel: rel.clone(),
                    flags,
                });
            }
        }
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let mut generated = Vec::new();
        for &seed in SEEDS {
            let p = nvcc_orion_gen::generate(seed);
            let (_, text) = nvcc_orion_gen::print::sources(&p).swap_remove(0);
            h = common::fnv(text.as_bytes(), h);
            units.push(Unit {
                rel: format!("gen:{seed}"),
                path: PathBuf::new(),
                flags: if p.rdc {
                    vec!["-rdc=true".into()]
                } else {
                    Vec::new()
                },
                stem: format!("gen_{seed}"),
            });
            generated.push(text);
        }
        let mut jobs = plan(&units);
        for j in &jobs {
            h = common::fnv(j.stem.as_bytes(), h);
            h = common::fnv(&[u8::from(j.wide)], h);
            for f in &j.flags {
                h = common::fnv(f.as_bytes(), h);
            }
        }
        let lock = common::Locked::new("liveness-oracle", &nvcc, &[&h.to_le_bytes()]);
        let dir = lock.dir.clone();
        for j in jobs.iter_mut().filter(|j| j.rel.starts_with("gen:")) {
            j.path = dir.join(format!("{}.cu", j.stem.rsplit_once('_').unwrap().0));
        }
        if !lock.complete() {
            for (seed, text) in SEEDS.iter().zip(&generated) {
                std::fs::write(dir.join(format!("gen_{seed}.cu")), text).unwrap();
            }
            let failed: Vec<String> = parallel(&jobs, |j| -> Result<(), String> {
                let cubin = dir.join(format!("{}.cubin", j.stem));
                run(
                    Command::new(&nvcc)
                        .arg("-cubin")
                        .arg(format!("-arch=sm_{}", j.arch))
                        .args(&j.flags)
                        .arg("-o")
                        .arg(&cubin)
                        .arg(&j.path),
                    &format!("nvcc for {}", j.label()),
                )?;
                let mut listings = vec![
                    ("json", &["-json"][..]),
                    ("narrow", &["-c", "-lrm", "narrow"][..]),
                ];
                if j.wide {
                    listings.push(("plr", &["-c", "-plr"][..]));
                    listings.push(("count", &["-c", "-lrm", "count"][..]));
                }
                for (ext, args) in listings {
                    let out = run(
                        Command::new(&nvdisasm).args(args).arg(&cubin),
                        &format!("nvdisasm {args:?} for {}", j.label()),
                    )?;
                    std::fs::write(dir.join(format!("{}.{ext}", j.stem)), out)
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            })
            .into_iter()
            .filter_map(Result::err)
            .collect();
            if !failed.is_empty() {
                return Some(Err(failed.join("\n")));
            }
            lock.finish();
            eprintln!(
                "liveness_oracle: built {} cubins in {:.1?}",
                jobs.len(),
                started.elapsed()
            );
        }
        drop(lock);
        // Folders of earlier sources, a day old, are stale: each holds hundreds of MB.
        if let Ok(rd) = std::fs::read_dir(tmp) {
            for e in rd.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > 86_400);
                if name.starts_with("liveness-oracle-") && p != dir && p.is_dir() && old {
                    let _ = std::fs::remove_dir_all(&p);
                }
            }
        }
        Some(Ok(Built { dir, jobs }))
    });
    match b {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => panic!("liveness_oracle: building the cubins failed:\n{e}"),
    }
}

/// One built cubin, decoded, with its `-lrm narrow` listing parsed.
struct Cubin {
    job: Job,
    decoded: Decoded,
    /// Section index → name.
    sections: Vec<String>,
    /// `-plr`'s rows (read from the narrow layout).
    plr: HashMap<(String, u64), plr::Row>,
}

fn load(b: &Built, j: &Job) -> Result<Cubin, String> {
    let read = |ext: &str| {
        std::fs::read(b.dir.join(format!("{}.{ext}", j.stem)))
            .map_err(|e| format!("{} ({ext}): {e}", j.label()))
    };
    let bytes = read("cubin")?;
    let decoded =
        decode::decode(&read("json")?, &bytes).map_err(|e| format!("decode {}: {e}", j.label()))?;
    let sections = {
        use object::{Object, ObjectSection};
        let elf = object::File::parse(&*bytes).unwrap();
        let mut names = vec![String::new(); elf.sections().count() + 1];
        for s in elf.sections() {
            names[s.index().0] = s.name().unwrap_or("").to_string();
        }
        names
    };
    let plr = plr::parse(&String::from_utf8_lossy(&read("narrow")?))
        .map_err(|e| format!("{} (narrow): {e}", j.label()))?;
    Ok(Cubin {
        job: j.clone(),
        decoded,
        sections,
        plr,
    })
}

/// Every cubin, loaded once per test process (in parallel).
fn cubins() -> Option<&'static [Cubin]> {
    static C: OnceLock<Option<Result<Vec<Cubin>, String>>> = OnceLock::new();
    let c = C.get_or_init(|| {
        let b = built()?;
        Some(parallel(&b.jobs, |j| load(b, j)).into_iter().collect())
    });
    match c {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => panic!("liveness_oracle: {e}"),
    }
}

/// nvdisasm's marks for the instructions of `f` the operand tables do not cover (textures,
/// surfaces): their effects are taken from `-plr`, as `debug sass --liveness` does.
fn marked(c: &Cubin, section: &str, f: &nvcc_orion::sass::ir::Function) -> HashMap<u64, Marked> {
    f.instrs
        .iter()
        .filter(|i| i.unknown)
        .filter_map(|i| {
            let row = c.plr.get(&(section.to_string(), i.offset))?;
            Some((i.offset, plr::marked(row)))
        })
        .collect()
}

fn regs(s: &BTreeSet<u8>, prefix: &str) -> String {
    let v: Vec<String> = s.iter().map(|r| format!("{prefix}{r}")).collect();
    format!("[{}]", v.join(" "))
}

fn instr_text(ins: &nvcc_orion::sass::ir::Instr) -> String {
    let pred = ins.predicate.map_or(String::new(), |p| format!("{p} "));
    let ops: Vec<&str> = ins.operands.iter().map(|o| o.text.as_str()).collect();
    format!("{pred}{} {}", ins.opcode, ops.join(", "))
}

/// Where `analysis::Liveness` is known to show more general registers than `-plr` (the
/// safe direction for a rewrite that picks a free register), with why: (job label,
/// function, the offset of the block's last instruction, the registers only the analysis
/// has there). Each is printed on every run and is not counted as a failure; a listed block
/// that differs otherwise, or no longer differs, fails the check, and so does any other
/// difference. There is no such list for fewer registers: an instruction where the
/// analysis misses a register `-plr` has live always fails.
///
/// `oracle_vote_match` on sm_80, 86 and 89 (the full check only): the block
/// `VOTE.ALL P0, !P0; @!P0 IMAD.MOV R9, ...` writes P0 above a guarded write of an R9 the
/// next block reads unguarded. `analysis::liveness`'s `Pending` keeps R9 live into the block
/// (the rule that makes issue 46's `lv_convert_mix` on sm_90 equal `-plr`, where `ISETP ...
/// P0` precedes `@P0 FFMA R23` and `@!P0 MUFU.RCP R23`); nvdisasm ends it here, so the
/// block above shows R9 at its last instruction and `-plr` does not. What tells the two
/// apart for nvdisasm (the writer reading P0 itself, or R23 being read only by the `RET`'s
/// calling convention) is not known yet.
const KNOWN_OVER: &[(&str, &str, u64, &[u8])] = &[
    (
        "tests/kernels/oracle/warp.cu sm_80",
        "_Z17oracle_vote_matchPKiPj",
        0x180,
        &[9],
    ),
    (
        "tests/kernels/oracle/warp.cu sm_86",
        "_Z17oracle_vote_matchPKiPj",
        0x180,
        &[9],
    ),
    (
        "tests/kernels/oracle/warp.cu sm_89",
        "_Z17oracle_vote_matchPKiPj",
        0x180,
        &[9],
    ),
];

/// How many [`KNOWN_OVER`] entries the cubins `cs` hold (the default plan builds each
/// source for one architecture only).
fn known_over_in(cs: &[&Cubin]) -> usize {
    KNOWN_OVER
        .iter()
        .filter(|(label, ..)| cs.iter().any(|c| c.job.label() == *label))
        .count()
}

/// Failures of one check, with the totals, reported together.
#[derive(Default)]
struct Tally {
    compared: usize,
    cubins: usize,
    bad: usize,
    /// Functions compared.
    functions: usize,
    /// Kernels not compared (regdem refuses to analyse them).
    refused: usize,
    by_class: BTreeMap<String, usize>,
    /// (class, message) of the differences shown.
    examples: Vec<(String, String)>,
    /// Instructions of the [`KNOWN_OVER`] blocks that differ as listed (not failures), and
    /// which entries were met.
    known: usize,
    known_met: BTreeSet<usize>,
}

impl Tally {
    fn fail(&mut self, class: String, msg: String) {
        if std::env::var_os("LIVENESS_ORACLE_ALL").is_some() {
            eprintln!("{msg}");
        }
        self.bad += 1;
        *self.by_class.entry(class.clone()).or_default() += 1;
        self.examples.push((class, msg));
    }

    fn merge(&mut self, o: Tally) {
        self.compared += o.compared;
        self.cubins += o.cubins;
        self.bad += o.bad;
        self.functions += o.functions;
        self.refused += o.refused;
        self.known += o.known;
        self.known_met.extend(o.known_met);
        for (k, v) in o.by_class {
            *self.by_class.entry(k).or_default() += v;
        }
        self.examples.extend(o.examples);
    }

    /// `unit`: what `compared` counts (instructions, or (instruction, file) pairs).
    fn assert_clean(&self, what: &str, unit: &str, at_least: usize) {
        eprintln!(
            "{what}: {} {unit} in {} functions of {} cubins compared{}",
            self.compared,
            self.functions,
            self.cubins,
            if self.refused > 0 {
                format!(
                    " ({} kernels refused by the analysis, not compared)",
                    self.refused
                )
            } else {
                String::new()
            }
        );
        // Up to three examples of each class, from different sources where there are, 80
        // in all.
        let mut per: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        fn source(m: &str) -> &str {
            m.split(' ').next().unwrap_or("")
        }
        let mut shown: Vec<&str> = Vec::new();
        for (c, m) in &self.examples {
            let seen = per.entry(c).or_default();
            if seen.len() < 3 && seen.insert(source(m)) {
                shown.push(m);
            }
        }
        for (c, m) in &self.examples {
            let seen = per.entry(c).or_default();
            if seen.len() < 3 && !shown.contains(&m.as_str()) {
                seen.insert(m);
                shown.push(m);
            }
        }
        shown.truncate(80);
        if self.known > 0 {
            eprintln!(
                "{what}: {} instructions in {} known block(s) show more registers than -plr \
                 (KNOWN_OVER, not counted as failures):",
                self.known,
                self.known_met.len()
            );
            for k in &self.known_met {
                eprintln!("  {:?}", KNOWN_OVER[*k]);
            }
        }
        assert!(
            self.bad == 0,
            "{what}: {} of {} instructions differ; where a difference starts, by opcode: {:#?}\n{}",
            self.bad,
            self.compared,
            self.by_class,
            shown.join("\n")
        );
        assert!(self.compared >= at_least, "{what}: only {}", self.compared);
    }
}

/// One instruction's difference: (registers only ours has, registers only nvdisasm has).
type Diff = (BTreeSet<u8>, BTreeSet<u8>);

/// Report the differences of one function: all are counted, and the *origins* (where a
/// difference starts, walking backwards: the last instruction of a block, or one whose
/// difference is not its successor's in the block) are the examples and the classes.
fn report_function(
    t: &mut Tally,
    c: &Cubin,
    f: &nvcc_orion::sass::ir::Function,
    cfg: &Cfg,
    diffs: &[Option<Diff>],
    what: &str,
    prefix: &str,
) {
    let mut shown = 0;
    for (_, b) in cfg.blocks() {
        let known = (prefix == "R")
            .then(|| {
                KNOWN_OVER.iter().position(|(label, func, end, _)| {
                    *label == c.job.label()
                        && *func == f.name
                        && *end == f.instrs[b.end() - 1].offset
                })
            })
            .flatten();
        for i in b.first..b.end() {
            let Some((ours, theirs)) = &diffs[i] else {
                continue;
            };
            if let Some(k) = known
                && theirs.is_empty()
                && ours.iter().eq(KNOWN_OVER[k].3.iter())
            {
                t.known += 1;
                t.known_met.insert(k);
                continue;
            }
            let origin = i + 1 == b.end() || diffs[i + 1].as_ref() != diffs[i].as_ref();
            if !origin {
                t.bad += 1;
                continue;
            }
            let ins = &f.instrs[i];
            let msg = format!(
                "{}: {} {:#06x} `{}`{}: {what}: only ours {}, only nvdisasm {}",
                c.job.label(),
                f.name,
                ins.offset,
                instr_text(ins),
                if i + 1 == b.end() { " (block end)" } else { "" },
                regs(ours, prefix),
                regs(theirs, prefix),
            );
            let class = format!(
                "{}{}",
                ins.opcode.as_str().split('.').next().unwrap_or(""),
                if i + 1 == b.end() { " (block end)" } else { "" }
            );
            if shown < 2 || std::env::var_os("LIVENESS_ORACLE_ALL").is_some() {
                t.fail(class, msg);
                shown += 1;
            } else {
                t.bad += 1;
                *t.by_class.entry(class).or_default() += 1;
            }
        }
    }
}

/// `analysis::Liveness` against `-lrm count` (the count) and `-plr` (count and registers).
#[test]
fn liveness_matches_nvdisasm() {
    let Some(cs) = cubins() else { return };
    let mut all = Tally::default();
    for t in parallel(cs, |c| {
        let mut t = Tally {
            cubins: 1,
            ..Tally::default()
        };
        for f in &c.decoded.functions {
            t.functions += 1;
            let cfg = Cfg::build(f);
            let section = &c.sections[f.section];
            let live = Liveness::compute_marked(f, &cfg, RegFile::Gpr, &marked(c, section, f));
            let mut diffs = vec![None; f.instrs.len()];
            for (i, ins) in f.instrs.iter().enumerate() {
                let key = (c.sections[f.section].clone(), ins.offset);
                // nvdisasm -c leaves out the NOP padding after a function's last instruction.
                let Some(p) = c.plr.get(&key) else {
                    assert_eq!(
                        ins.opcode.as_str(),
                        "NOP",
                        "{}: {} {:#06x}: no -plr line",
                        c.job.label(),
                        f.name,
                        ins.offset
                    );
                    continue;
                };
                t.compared += 1;
                let p = p.marks(plr::File::Gpr);
                let count = p.count;
                let ours: BTreeSet<u8> = live.occupied(i).iter().collect();
                assert_eq!(
                    p.count as usize,
                    p.occupied.len(),
                    "{}: {} {:#06x}: -plr's count is not its marked cells",
                    c.job.label(),
                    f.name,
                    ins.offset
                );
                if live.count(i) != count || ours != p.occupied {
                    diffs[i] = Some((
                        ours.difference(&p.occupied).copied().collect(),
                        p.occupied.difference(&ours).copied().collect(),
                    ));
                }
            }
            report_function(&mut t, c, f, &cfg, &diffs, "live registers differ", "R");
        }
        t
    }) {
        all.merge(t);
    }
    all.assert_clean(
        "liveness vs nvdisasm -plr / -lrm count",
        "instructions",
        MIN_INSTRUCTIONS,
    );
    assert_eq!(
        all.known_met.len(),
        known_over_in(&cs.iter().collect::<Vec<_>>()),
        "a KNOWN_OVER block no longer differs as listed: take it off the list"
    );
}

/// The liveness check above covers variable-latency instructions on every architecture:
/// each opcode of [`VARIABLE_LATENCY_OPS`] (those the issue-46 difference started at, around
/// `I2F` in imageDenoising's NLMdiag on sm_80) is among the instructions compared with
/// `-plr`, in [`VARIABLE_LATENCY`]'s cubins of sm_75, 80, 86, 89 and 90, and there every
/// instruction's live registers equal `-plr`'s.
#[test]
fn variable_latency_instructions_are_compared() {
    let Some(cs) = cubins() else { return };
    let mut seen: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    let mut t = Tally::default();
    for c in cs.iter().filter(|c| c.job.rel == VARIABLE_LATENCY) {
        t.cubins += 1;
        for f in &c.decoded.functions {
            t.functions += 1;
            let cfg = Cfg::build(f);
            let section = &c.sections[f.section];
            let live = Liveness::compute_marked(f, &cfg, RegFile::Gpr, &marked(c, section, f));
            let mut diffs = vec![None; f.instrs.len()];
            for (i, ins) in f.instrs.iter().enumerate() {
                let Some(p) = c.plr.get(&(section.clone(), ins.offset)) else {
                    continue;
                };
                t.compared += 1;
                let base = ins.opcode.as_str().split('.').next().unwrap_or("");
                if let Some(op) = VARIABLE_LATENCY_OPS.iter().find(|&&o| o == base) {
                    seen.entry(c.job.arch).or_default().insert(op);
                }
                let p = p.marks(plr::File::Gpr);
                let ours: BTreeSet<u8> = live.occupied(i).iter().collect();
                if live.count(i) != p.count || ours != p.occupied {
                    diffs[i] = Some((
                        ours.difference(&p.occupied).copied().collect(),
                        p.occupied.difference(&ours).copied().collect(),
                    ));
                }
            }
            report_function(&mut t, c, f, &cfg, &diffs, "live registers differ", "R");
        }
    }
    for arch in ARCHS {
        let missing: Vec<&&str> = VARIABLE_LATENCY_OPS
            .iter()
            .filter(|o| !seen.get(arch).is_some_and(|s| s.contains(**o)))
            .collect();
        assert!(
            missing.is_empty(),
            "{VARIABLE_LATENCY} on sm_{arch}: no {missing:?} compared"
        );
    }
    t.assert_clean(
        "variable-latency liveness vs nvdisasm -plr",
        "instructions",
        1,
    );
    assert_eq!(
        t.known_met.len(),
        known_over_in(
            &cs.iter()
                .filter(|c| c.job.rel == VARIABLE_LATENCY)
                .collect::<Vec<_>>()
        ),
        "a KNOWN_OVER block no longer differs as listed: take it off the list"
    );
}

/// The narrow layout the checks read is `-plr` itself: on the `wide` jobs (calls and
/// recursion; more than 100 registers) every row of `-c -lrm narrow` equals `-c -plr`'s in
/// every register file, and its `#` column equals `-c -lrm count`'s.
#[test]
fn narrow_listing_is_plr_and_lrm_count() {
    let Some(cs) = cubins() else { return };
    let b = built().unwrap();
    let mut rows = 0;
    for c in cs.iter().filter(|c| c.job.wide) {
        let read = |ext: &str| {
            let text = std::fs::read(b.dir.join(format!("{}.{ext}", c.job.stem))).unwrap();
            plr::parse(&String::from_utf8_lossy(&text))
                .unwrap_or_else(|e| panic!("{} ({ext}): {e}", c.job.label()))
        };
        let (wide, count) = (read("plr"), read("count"));
        assert_eq!(wide.len(), c.plr.len(), "{}: rows", c.job.label());
        for (key, row) in &c.plr {
            assert_eq!(Some(row), wide.get(key), "{}: {key:?}", c.job.label());
            for file in [
                plr::File::Gpr,
                plr::File::Pred,
                plr::File::UGpr,
                plr::File::UPred,
            ] {
                assert_eq!(
                    count.get(key).map(|r| r.marks(file).count),
                    Some(row.marks(file).count),
                    "{}: {key:?} {}",
                    c.job.label(),
                    file.name()
                );
            }
            rows += 1;
        }
    }
    assert!(rows > 5_000, "{rows}");
}

/// `regdem`'s liveness (`transform::regdem::kernel_liveness`) in its own convention
/// against nvdisasm's: every register `-plr` has live into an instruction (`:`, `v`, `x`)
/// is live before it for regdem too (regdem is conservative: a guarded write ends nothing),
/// except where the call models differ (docs/sass.md §`nvdisasm -plr` and the oracle,
/// Liveness): R1 (the stack pointer, live out of every exit for nvdisasm) and, in a kernel
/// with calls, R0 (nvdisasm's `CALL`
/// reads it whatever the callee does, a `CALL` to a label of the kernel included) and the
/// registers nvdisasm's ABI has a callee preserve (`callee_saved`) that a callee of the
/// kernel writes on every path (ptxas's own sub-functions return values in R2, R30, R36,
/// ...; regdem ends them at the call). Kernels regdem refuses to analyse
/// (recursion, calls through a register or leaving the section, unknown instructions) are
/// not compared.
#[test]
fn regdem_liveness_covers_nvdisasm() {
    let Some(cs) = cubins() else { return };
    let b = built().unwrap();
    let mut all = Tally::default();
    for t in parallel(cs, |c| {
        let mut t = Tally {
            cubins: 1,
            ..Tally::default()
        };
        let bytes = std::fs::read(b.dir.join(format!("{}.cubin", c.job.stem))).unwrap();
        let cubin = nvcc_orion::cubin::Cubin::parse(&bytes).unwrap();
        for k in c.decoded.functions.iter().filter(|f| f.kernel) {
            let Ok(kl) = nvcc_orion::transform::regdem::kernel_liveness(
                &cubin,
                &c.decoded.functions,
                &k.name,
            ) else {
                t.refused += 1;
                continue;
            };
            let (f, before) = (&kl.function, &kl.before);
            t.functions += 1;
            let cfg = Cfg::build(f);
            let calls = f.instrs.iter().any(|i| i.is_call());
            let abi = |r: u8| calls && (r == 0 || (callee_saved(r) && kl.call_writes.contains(&r)));
            let mut diffs = vec![None; f.instrs.len()];
            for (i, ins) in f.instrs.iter().enumerate() {
                let key = (c.sections[f.section].clone(), ins.offset);
                let Some(p) = c.plr.get(&key) else { continue };
                t.compared += 1;
                let m = p.marks(plr::File::Gpr);
                let nv_in: BTreeSet<u8> = m
                    .occupied
                    .iter()
                    .copied()
                    .filter(|r| !m.writes.contains(r) || m.reads.contains(r))
                    .filter(|&r| r != 1 && !abi(r))
                    .collect();
                let missing: BTreeSet<u8> = nv_in.difference(&before[i]).copied().collect();
                if !missing.is_empty() {
                    diffs[i] = Some((BTreeSet::new(), missing));
                }
            }
            report_function(
                &mut t,
                c,
                f,
                &cfg,
                &diffs,
                "live for nvdisasm, not for regdem",
                "R",
            );
        }
        t
    }) {
        all.merge(t);
    }
    all.assert_clean(
        "regdem liveness vs nvdisasm -plr",
        "instructions",
        MIN_INSTRUCTIONS,
    );
}

/// The predicate and uniform files too (`Liveness::compute_marked` per file), at every
/// instruction of every function, calls included (a `CALL` clobbers every predicate and
/// uniform predicate with a column, and UR4-UR35: `Function::abi_files`).
#[test]
fn other_register_files_match_nvdisasm() {
    let Some(cs) = cubins() else { return };
    let files = [
        (plr::File::Pred, RegFile::Pred),
        (plr::File::UGpr, RegFile::UGpr),
        (plr::File::UPred, RegFile::UPred),
    ];
    let mut all = Tally::default();
    for t in parallel(cs, |c| {
        let mut t = Tally {
            cubins: 1,
            ..Tally::default()
        };
        for f in c.decoded.functions.iter() {
            t.functions += 1;
            let cfg = Cfg::build(f);
            let section = &c.sections[f.section];
            let marked = marked(c, section, f);
            for (pf, rf) in files {
                let live = Liveness::compute_marked(f, &cfg, rf, &marked);
                let mut diffs = vec![None; f.instrs.len()];
                for (i, ins) in f.instrs.iter().enumerate() {
                    let Some(p) = c.plr.get(&(section.clone(), ins.offset)) else {
                        continue;
                    };
                    t.compared += 1;
                    let m = p.marks(pf);
                    let ours: BTreeSet<u8> = live.occupied(i).iter().collect();
                    if live.count(i) != m.count || ours != m.occupied {
                        diffs[i] = Some((
                            ours.difference(&m.occupied).copied().collect(),
                            m.occupied.difference(&ours).copied().collect(),
                        ));
                    }
                }
                report_function(&mut t, c, f, &cfg, &diffs, pf.name(), pf.prefix());
            }
        }
        t
    }) {
        all.merge(t);
    }
    all.assert_clean(
        "PRED, UGPR, UPRED vs nvdisasm -plr",
        "(instruction, file) pairs",
        MIN_INSTRUCTIONS,
    );
}

/// `nvcc-orion debug sass --liveness` prints, for every instruction, the count and the
/// registers `-plr` marks: on a cubin with textures and surfaces (whose effects it takes
/// from nvdisasm) and on one with calls and recursion.
#[test]
fn debug_sass_liveness_prints_nvdisasm_sets() {
    let Some(cs) = cubins() else { return };
    let b = built().unwrap();
    let pick = |rel: &str, arch: Option<u32>| {
        cs.iter()
            .find(|c| {
                c.job.rel == rel && arch.is_none_or(|a| a == c.job.arch) && c.job.flags.is_empty()
            })
            .unwrap_or_else(|| panic!("{rel} not built"))
    };
    let mut lines = 0;
    for c in [
        pick("tests/kernels/oracle/memory.cu", None),
        pick("tests/kernels/liveness/calls.cu", Some(90)),
    ] {
        let path = b.dir.join(format!("{}.cubin", c.job.stem));
        let out = common::orion()
            .args(["debug", "sass", "--liveness"])
            .arg(&path)
            .env("NVCC_ORION_NVCC", common::find_nvcc().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            c.job.label(),
            String::from_utf8_lossy(&out.stderr)
        );
        // `0x<offset> live=<n> <function> <opcode>  [R0 R1 ...]`
        let names: HashMap<&str, usize> = c
            .decoded
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.section))
            .collect();
        for l in String::from_utf8(out.stdout).unwrap().lines() {
            let mut it = l.split_whitespace();
            let off = u64::from_str_radix(it.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            let live: u32 = it.next().unwrap()[5..].parse().unwrap();
            let name = it.next().unwrap();
            let set: BTreeSet<u8> = l
                .rsplit_once('[')
                .unwrap()
                .1
                .trim_end_matches(']')
                .split_whitespace()
                .map(|r| r[1..].parse().unwrap())
                .collect();
            let key = (c.sections[names[name]].clone(), off);
            let Some(row) = c.plr.get(&key) else { continue };
            let m = row.marks(plr::File::Gpr);
            assert_eq!(
                (live, &set),
                (m.count, &m.occupied),
                "{}: debug sass --liveness line `{l}`",
                c.job.label()
            );
            lines += 1;
        }
    }
    assert!(lines > 500, "{lines}");
}

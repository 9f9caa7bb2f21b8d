//! Liveness against the toolkit, on every cubin of the repository's test kernels.
//!
//! Every `.cu` under `tests/kernels/` and `examples/kernels/` (with the flags its tests use;
//! `tests/kernels/liveness/` adds `-maxrregcount` variants named in a `// liveness-oracle:`
//! line) is built once per architecture (sm_75, 80, 86, 89, 90; the decoder has no operand
//! tables for sm_100 and later) into a folder keyed by the sources' hash, with its
//! `nvdisasm -json`, `-c -plr` and `-c -lrm count` listings. Then, at every instruction of
//! every function:
//!
//! * `analysis::Liveness` (nvdisasm's convention, docs/sass.md §Liveness): the count equals
//!   the GPR `#` column of `-lrm count` and of `-plr`, and the registers equal the marked
//!   cells of `-plr`;
//! * register demotion's liveness (`transform::regdem`, its own conservative convention) has
//!   every register live into the instruction that `-plr` marks live into it (`v`, `x`, `:`)
//!   where no call model differs (see [`regdem_covers_nvdisasm`]).
//!
//! A failure names the cubin, function, offset, instruction and the differing registers.
//! Without nvcc the tests print a skip line and pass; with `CI` set they fail.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use nvcc_orion::analysis::{Cfg, Liveness, Marked, RegFile};
use nvcc_orion::sass::decode::{self, Decoded, callee_saved};
use nvcc_orion::verify::plr;

const ARCHS: &[u32] = &[75, 80, 86, 89, 90];

/// Sources that are not built: they fail on purpose.
const EXCLUDED: &[&str] = &["tests/kernels/syntax_error.cu"];

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
        | "tests/kernels/matrix/rdc_use.cu" => return vec![s(&["-rdc=true"])],
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

/// One cubin to build: source (relative to the repository), flags, architecture.
#[derive(Debug, Clone)]
struct Job {
    rel: String,
    flags: Vec<String>,
    arch: u32,
    /// File stem in the build folder.
    stem: String,
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
    nvdisasm: PathBuf,
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

fn run(cmd: &mut Command, what: &str) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Build every job once (cross-process: a lock file and a completion stamp), with the three
/// listings of each cubin.
fn built() -> Option<&'static Built> {
    static B: OnceLock<Option<Built>> = OnceLock::new();
    B.get_or_init(|| {
        let Some(nvcc) = common::find_nvcc() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "liveness_oracle: no nvcc found and CI is set; run `eval \"$(scripts/setup.sh)\"`"
            );
            eprintln!("skipping: no nvcc found; run `eval \"$(scripts/setup.sh)\"` to enable");
            return None;
        };
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
        let mut jobs = Vec::new();
        for rel in sources() {
            let text = std::fs::read_to_string(root.join(&rel)).unwrap();
            for (v, flags) in flags_of(&rel, &text).into_iter().enumerate() {
                for &arch in ARCHS {
                    let stem = format!("{}_v{v}_sm{arch}", rel.replace(['/', ' '], "_"));
                    h = common::fnv(stem.as_bytes(), h);
                    for f in &flags {
                        h = common::fnv(f.as_bytes(), h);
                    }
                    jobs.push(Job {
                        rel: rel.clone(),
                        flags: flags.clone(),
                        arch,
                        stem,
                    });
                }
            }
        }
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(tmp).unwrap();
        let dir = tmp.join(format!("liveness-oracle-{h:016x}"));
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(tmp.join(format!("liveness-oracle-{h:016x}.lock")))
            .unwrap();
        lock.lock().unwrap();
        if !dir.join("COMPLETE").exists() {
            std::fs::create_dir_all(&dir).unwrap();
            parallel(&jobs, |j| {
                let cubin = dir.join(format!("{}.cubin", j.stem));
                run(
                    Command::new(&nvcc)
                        .arg("-cubin")
                        .arg(format!("-arch=sm_{}", j.arch))
                        .args(&j.flags)
                        .arg("-o")
                        .arg(&cubin)
                        .arg(root.join(&j.rel)),
                    &format!("nvcc for {}", j.label()),
                );
                for (ext, args) in [
                    ("json", &["-json"][..]),
                    ("plr", &["-c", "-plr"][..]),
                    ("lrm", &["-c", "-lrm", "count"][..]),
                ] {
                    let out = run(
                        Command::new(&nvdisasm).args(args).arg(&cubin),
                        &format!("nvdisasm {args:?} for {}", j.label()),
                    );
                    std::fs::write(dir.join(format!("{}.{ext}", j.stem)), out).unwrap();
                }
            });
            std::fs::write(dir.join("COMPLETE"), "").unwrap();
        }
        drop(lock);
        Some(Built {
            nvdisasm,
            dir,
            jobs,
        })
    })
    .as_ref()
}

/// One built cubin, decoded, with its listings parsed.
struct Cubin {
    job: Job,
    decoded: Decoded,
    /// Section index → name.
    sections: Vec<String>,
    plr: HashMap<(String, u64), plr::Row>,
    lrm: HashMap<(String, u64), plr::Row>,
}

fn load(b: &Built, j: &Job) -> Cubin {
    let read = |ext: &str| std::fs::read(b.dir.join(format!("{}.{ext}", j.stem))).unwrap();
    let bytes = read("cubin");
    let decoded = decode::decode(&read("json"), &bytes)
        .unwrap_or_else(|e| panic!("decode {}: {e}", j.label()));
    let sections = {
        use object::{Object, ObjectSection};
        let elf = object::File::parse(&*bytes).unwrap();
        let mut names = vec![String::new(); elf.sections().count() + 1];
        for s in elf.sections() {
            names[s.index().0] = s.name().unwrap_or("").to_string();
        }
        names
    };
    let parse = |ext: &str| {
        plr::parse(&String::from_utf8_lossy(&read(ext)))
            .unwrap_or_else(|e| panic!("{} ({ext}): {e}", j.label()))
    };
    Cubin {
        job: j.clone(),
        decoded,
        sections,
        plr: parse("plr"),
        lrm: parse("lrm"),
    }
}

/// Every cubin, loaded once per test process (in parallel).
fn cubins() -> Option<&'static [Cubin]> {
    static C: OnceLock<Option<Vec<Cubin>>> = OnceLock::new();
    C.get_or_init(|| {
        let b = built()?;
        let _ = &b.nvdisasm;
        Some(parallel(&b.jobs, |j| load(b, j)))
    })
    .as_deref()
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

/// Failures of one check, with the totals, reported together.
#[derive(Default)]
struct Tally {
    compared: usize,
    cubins: usize,
    bad: usize,
    /// Examples recorded (functions with a difference, up to two each).
    functions: usize,
    by_class: BTreeMap<String, usize>,
    /// (class, message) of the differences shown.
    examples: Vec<(String, String)>,
}

impl Tally {
    fn fail(&mut self, class: String, msg: String) {
        if std::env::var_os("LIVENESS_ORACLE_ALL").is_some() {
            eprintln!("{msg}");
        }
        self.bad += 1;
        self.functions += 1;
        *self.by_class.entry(class.clone()).or_default() += 1;
        self.examples.push((class, msg));
    }

    fn merge(&mut self, o: Tally) {
        self.compared += o.compared;
        self.cubins += o.cubins;
        self.bad += o.bad;
        self.functions += o.functions;
        for (k, v) in o.by_class {
            *self.by_class.entry(k).or_default() += v;
        }
        self.examples.extend(o.examples);
    }

    fn assert_clean(&self, what: &str, at_least: usize) {
        eprintln!(
            "{what}: {} instructions of {} cubins compared",
            self.compared, self.cubins
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
        for i in b.first..b.end() {
            let Some((ours, theirs)) = &diffs[i] else {
                continue;
            };
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
            let cfg = Cfg::build(f);
            let section = &c.sections[f.section];
            let live = Liveness::compute_marked(f, &cfg, RegFile::Gpr, &marked(c, section, f));
            let mut diffs = vec![None; f.instrs.len()];
            for (i, ins) in f.instrs.iter().enumerate() {
                let key = (c.sections[f.section].clone(), ins.offset);
                // nvdisasm -c leaves out the NOP padding after a function's last instruction.
                let (Some(p), Some(l)) = (c.plr.get(&key), c.lrm.get(&key)) else {
                    assert_eq!(
                        ins.opcode.as_str(),
                        "NOP",
                        "{}: {} {:#06x}: no -plr/-lrm line",
                        c.job.label(),
                        f.name,
                        ins.offset
                    );
                    continue;
                };
                t.compared += 1;
                let p = p.marks(plr::File::Gpr);
                let count = l.marks(plr::File::Gpr).count;
                let ours: BTreeSet<u8> = live.occupied(i).iter().collect();
                assert_eq!(
                    count,
                    p.count,
                    "{}: {} {:#06x}: -lrm count and -plr disagree",
                    c.job.label(),
                    f.name,
                    ins.offset
                );
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
    all.assert_clean("liveness vs nvdisasm -plr / -lrm count", 100_000);
}

/// Register demotion's liveness (`transform::regdem::kernel_liveness`) in its own convention
/// against nvdisasm's: every register `-plr` has live into an instruction (`:`, `v`, `x`)
/// is live before it for regdem too (regdem is conservative: a guarded write ends nothing),
/// R1 (the stack pointer) aside. Where the kernel's section has calls, R0 and the registers
/// nvdisasm's ABI has a callee preserve (`callee_saved`) are left out: regdem takes a call's
/// effect from the callee's code (ptxas's own sub-functions return values in R30, R36, ...
/// and need not read R0), nvdisasm from its ABI. Kernels regdem refuses to analyse
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
            let Ok((f, before, _)) = nvcc_orion::transform::regdem::kernel_liveness(
                &cubin,
                &c.decoded.functions,
                &k.name,
            ) else {
                continue;
            };
            let cfg = Cfg::build(&f);
            let calls = f.instrs.iter().any(|i| i.is_call());
            let abi = |r: u8| calls && (r == 0 || callee_saved(r));
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
                &f,
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
    all.assert_clean("regdem liveness vs nvdisasm -plr", 100_000);
}

/// The predicate and uniform files too (`Liveness::compute_file`), at every instruction of
/// every function without a `CALL`: nvdisasm's call model clobbers predicates and uniform
/// registers by rules not reproduced (tests/sass_decode.rs, `other_register_files_...`).
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
            if f.instrs.iter().any(|i| i.is_call()) {
                continue;
            }
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
    all.assert_clean("PRED, UGPR, UPRED vs nvdisasm -plr", 100_000);
}

/// `nvcc-orion debug sass --liveness` prints, for every instruction, the count and the
/// registers `-plr` marks: on a cubin with textures and surfaces (whose effects it takes
/// from nvdisasm) and on one with calls and recursion.
#[test]
fn debug_sass_liveness_prints_nvdisasm_sets() {
    let Some(cs) = cubins() else { return };
    let b = built().unwrap();
    let pick = |rel: &str, arch: u32| {
        cs.iter()
            .find(|c| c.job.rel == rel && c.job.arch == arch && c.job.flags.is_empty())
            .unwrap_or_else(|| panic!("{rel} sm_{arch} not built"))
    };
    let mut lines = 0;
    for c in [
        pick("tests/kernels/oracle/memory.cu", 80),
        pick("tests/kernels/liveness/calls.cu", 90),
    ] {
        let path = b.dir.join(format!("{}.cubin", c.job.stem));
        let out = Command::new(env!("CARGO_BIN_EXE_nvcc-orion"))
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

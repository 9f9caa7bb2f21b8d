//! The spill corpus (`tests/kernels/spill_corpus/`, listed in its `manifest.json`): kernels of
//! our own that spill under the limits users set (`-maxrregcount` 32, 40 and 64,
//! `__launch_bounds__(256, 4)` and `(128, 8)`, `__maxnreg__`), compiled as a user would,
//! `nvcc-orion -cubin -arch=sm_XX <the file's flags> --orion-transforms=spill2smem
//! --orion-force=spill2smem --orion-block-size=128 --orion-report=...`, once per file and
//! arch, next to plain nvcc's build of the same command.
//!
//! Each kernel is classified from the report and the cubin: every spill moved and proved,
//! partly moved, refused (the report's reason), or not offered (spills remain with no spill →
//! shared verdict). What must always hold is asserted: every build succeeds and prints nothing
//! of ours; the report has one record per kernel; every kernel respects its register limit
//! (`cuobjdump -res-usage`) and 48 KiB of shared memory; a moved kernel has no spill
//! `STL`/`LDL` left (nvdisasm's `SpillRefill` marks; a kernel's own local arrays stay in local
//! memory); a partly moved one keeps local accesses only to the words its summary says were
//! kept, and its hottest spill word moved ([`check_partly`]); a kernel left alone has plain
//! nvcc's code byte for byte; and the corpus itself spills under plain nvcc.
//! Beside it, `nvcc-orion rewrite --spill2smem` on plain nvcc's cubin at each kernel's
//! limit (ptxas's own code, the budget it ships with) must exit cleanly and stay within the
//! limit; its verdicts are a column of the table. The tally (per class and per reason) is
//! printed per arch (`--no-capture`); `bench/results/spill-corpus-orion.md` records it.
//!
//! Issue 23's "Done when" is asserted on every arch (sm_75, 80, 86, 89, 90): among the kernels whose spill area fits the
//! free shared memory, at least 90 % have every spill moved and proved, and every other kernel
//! is partly moved or kept by a reason naming a real limit ([`LIMITS`]; any other reason
//! fails). Without forcing, the report and `explain` show the spill2smem candidate at
//! each spilling kernel's shipped budget with its predicted cycles beside ptxas's
//! (`unforced_report_shows_the_candidate_at_the_shipped_budget_sm_86`, on the same builds'
//! caches).
//!
//! CI time: about 25–40 s wall per arch on an idle two-core machine (2 min for sm_75, 80, 89
//! and 90 together), the unforced report about 25 s more; the one-register-more diagnosis is
//! `#[ignore]`d (`cargo nextest run --release --test rewrites --run-ignored all -E 'test(/^spill_corpus::/)'`).
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::fixtures;
use nvcc_orion::cubin::Cubin;
use nvcc_orion::sass::Op;
use nvcc_orion::sass::decode::Decoded;
use nvcc_orion::sass::ir::OperandKind;
use nvcc_orion::transform::area::STATIC_SHARED_LIMIT;
use serde_json::Value;

/// Block size for kernels without launch bounds (docs/usage.md's `explain --html` example; the
/// default, when unset, sizes the shared area for 1024 threads).
const BLOCK: &str = "--orion-block-size=128";

/// Kernels moved or partly moved and proved, per arch (the floors of [`corpus`]'s second
/// count): all 40 on every arch (34 moved and 6 partly on sm_75, 33 and 7 on the others).
const PROVED_86: usize = 40;
const PROVED_75: usize = 40;
const PROVED_80: usize = 40;
const PROVED_89: usize = 40;
const PROVED_90: usize = 40;

fn corpus_dir() -> PathBuf {
    common::kernels_dir().join("spill_corpus")
}

/// One file of the manifest.
struct CorpusFile {
    file: String,
    flags: Vec<String>,
    /// Mangled kernel name → its register limit.
    kernels: BTreeMap<String, u32>,
}

fn manifest() -> Vec<CorpusFile> {
    let text = std::fs::read_to_string(corpus_dir().join("manifest.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| CorpusFile {
            file: f["file"].as_str().unwrap().to_string(),
            flags: f["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect(),
            kernels: f["kernels"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, l)| (k.clone(), l.as_u64().unwrap() as u32))
                .collect(),
        })
        .collect()
}

fn stem(file: &str) -> &str {
    file.strip_suffix(".cu").unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One arch's builds: the folder with `plain_<stem>.cubin`, `orion_<stem>.cubin`,
/// `<stem>.jsonl` (the report) and `<stem>.stderr` (what nvcc-orion printed).
struct Built {
    dir: PathBuf,
    /// Wall seconds the builds took (0 when reused from an earlier process).
    seconds: f64,
}

/// Build every file for `arch` once (across the test processes of a run: a lock and a
/// completion stamp, keyed by the sources, the manifest and our binary).
fn build(arch: u32) -> Option<Built> {
    let nvcc = common::nvcc_or_skip("spill_corpus")?;
    let orion = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    let files = manifest();
    let mut inputs: Vec<Vec<u8>> = vec![
        std::fs::read(corpus_dir().join("manifest.json")).unwrap(),
        std::fs::read(&orion).unwrap(),
        format!("sm_{arch} {BLOCK}").into_bytes(),
    ];
    for f in &files {
        inputs.push(std::fs::read(corpus_dir().join(&f.file)).unwrap());
    }
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let lock = common::Locked::new(&format!("spill-corpus-sm{arch}"), &nvcc, &refs);
    let dir = lock.dir.clone();
    let start = std::time::Instant::now();
    let mut seconds = 0.0;
    if !lock.complete() {
        // The files in parallel: each build has sequential steps (the front end, the final
        // assembly) that leave a core idle.
        std::thread::scope(|s| {
            for f in &files {
                let (nvcc, orion, dir) = (&nvcc, &orion, &dir);
                s.spawn(move || build_file(nvcc, orion, dir, arch, f));
            }
        });
        lock.finish();
        seconds = start.elapsed().as_secs_f64();
    }
    Some(Built { dir, seconds })
}

fn build_file(nvcc: &Path, orion: &Path, dir: &Path, arch: u32, f: &CorpusFile) {
    let src = corpus_dir().join(&f.file);
    let s = stem(&f.file);
    let arch_flag = format!("-arch=sm_{arch}");
    let plain = Command::new(nvcc)
        .current_dir(dir)
        .args(["-cubin", &arch_flag])
        .args(&f.flags)
        .arg(&src)
        .arg("-o")
        .arg(format!("plain_{s}.cubin"))
        .output()
        .unwrap();
    assert!(
        plain.status.success(),
        "plain nvcc, {} sm_{arch}:\n{}",
        f.file,
        text(&plain.stderr)
    );
    let mut cmd = common::command(orion);
    cmd.current_dir(dir)
        .args(["-cubin", &arch_flag])
        .args(&f.flags)
        .args([
            "--orion-transforms=spill2smem",
            "--orion-force=spill2smem",
            BLOCK,
            &format!("--orion-report={s}.jsonl"),
        ])
        .arg(&src)
        .arg("-o")
        .arg(format!("orion_{s}.cubin"));
    cmd.env("NVCC_ORION_CACHE", dir.join(format!("cache_{s}")));
    let out = cmd.output().unwrap();
    std::fs::write(dir.join(format!("{s}.stderr")), &out.stderr).unwrap();
    assert!(
        out.status.success(),
        "nvcc-orion, {} sm_{arch} (a build break):\n{}",
        f.file,
        text(&out.stderr)
    );
}

/// What happened to one kernel's spills.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// The spill2smem candidate was chosen, proved, and no spill `STL`/`LDL` is left.
    Moved,
    /// Chosen and proved, but some spill accesses remain in local memory (the count, and
    /// what [`check_partly`] found).
    Partly(usize, String),
    /// Offered and refused: the verdict's reason.
    Refused(String),
    /// Never offered: the tuner's reason for its choice.
    NotOffered(String),
}

impl Class {
    fn label(&self) -> &'static str {
        match self {
            Class::Moved => "moved and proved",
            Class::Partly(..) => "partly moved",
            Class::Refused(_) => "refused",
            Class::NotOffered(_) => "not offered",
        }
    }

    /// The reason with its numbers and addresses blanked, to group kernels by it.
    fn group(&self) -> String {
        let reason = match self {
            Class::Moved => return String::new(),
            Class::Partly(..) => return "spill accesses left".into(),
            Class::Refused(r) | Class::NotOffered(r) => r,
        };
        // A checker rejection names the kernel, the address and the instruction: keep the
        // kind of failure only.
        match reason.find(" at 0x") {
            Some(i) if reason.starts_with("the checker rejected") => {
                let rest = &reason[i..];
                let what = rest.split_once(": ").map_or("", |(_, w)| w);
                format!("the checker rejected the rewrite: {}", blank(what, true))
            }
            _ => blank(reason, true),
        }
    }
}

/// Numbers → `N`; with `words`, also backquoted operands → `…`.
fn blank(s: &str, words: bool) -> String {
    let mut out = String::new();
    let mut in_tick = false;
    let mut last_n = false;
    for c in s.chars() {
        if words && c == '`' {
            if !in_tick {
                out.push_str("`…`");
            }
            in_tick = !in_tick;
            continue;
        }
        if in_tick {
            continue;
        }
        if c.is_ascii_digit() || (last_n && c.is_ascii_hexdigit()) || (last_n && c == 'x') {
            if !last_n {
                out.push('N');
            }
            last_n = true;
        } else {
            last_n = false;
            out.push(c);
        }
    }
    out
}

/// Kernel → number of `STL`/`LDL` in its own `.text` section (nvdisasm); with `spills`,
/// only those nvdisasm marks as ptxas's spills (`(*"SpillRefill"*)`): a kernel's own local
/// memory (an array passed by address to a device function, one indexed at run time) is no
/// spill and stays in local memory.
fn local_accesses(cubin: &Path, spills: bool) -> BTreeMap<String, usize> {
    let listing = fixtures::run_tool("nvdisasm", &["-c"], cubin).unwrap();
    let mut out = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in listing.lines() {
        let t = line.trim_start();
        // `.section\t.text.<name>,"ax",@progbits` (not `.sectioninfo`).
        if let Some(rest) = t
            .strip_prefix(".section")
            .filter(|r| r.starts_with(char::is_whitespace))
        {
            cur = rest
                .trim()
                .split(',')
                .next()
                .and_then(|n| n.strip_prefix(".text."))
                .map(str::to_string);
            if let Some(k) = &cur {
                out.entry(k.clone()).or_insert(0);
            }
            continue;
        }
        if let Some(k) = &cur {
            let local = t.split(|c: char| c.is_whitespace() || c == ';').any(|w| {
                w == "STL" || w == "LDL" || w.starts_with("STL.") || w.starts_with("LDL.")
            });
            if local && (!spills || t.contains("(*\"SpillRefill\"*)")) {
                *out.get_mut(k).unwrap() += 1;
            }
        }
    }
    out
}

fn text_section(c: &Cubin, kernel: &str) -> Vec<u8> {
    let e = c.elf();
    let i = e
        .section_index_by_name(&format!(".text.{kernel}"))
        .unwrap_or_else(|| panic!("no .text.{kernel}"));
    e.sections[i].data.clone()
}

/// `nvcc-orion rewrite --spill2smem` on plain nvcc's cubin of `f` (ptxas's own code at
/// the user's limit), each kernel allowed its limit + `extra` registers: kernel → `Ok(summary)`
/// or `Err(reason left alone)`. With `extra` 0 the output must respect every limit.
fn probe(b: &Built, f: &CorpusFile, extra: u32) -> BTreeMap<String, Result<String, String>> {
    let s = stem(&f.file);
    let scratch = tempfile::Builder::new()
        .prefix("spill-corpus-probe-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut limits: BTreeMap<u32, Vec<&String>> = BTreeMap::new();
    for (k, &l) in &f.kernels {
        limits.entry(l).or_default().push(k);
    }
    let mut out = BTreeMap::new();
    for (limit, kernels) in limits {
        let cubin = scratch.path().join(format!("{s}_{limit}.cubin"));
        let mut cmd = common::orion();
        cmd.args(["rewrite", "--block-size", "128", "--max-registers"])
            .arg((limit + extra).to_string());
        for k in &kernels {
            cmd.args(["--spill2smem", k]);
        }
        cmd.arg(b.dir.join(format!("plain_{s}.cubin")))
            .arg("-o")
            .arg(&cubin);
        let r = cmd.output().unwrap();
        let stderr = text(&r.stderr);
        assert!(r.status.success(), "{cmd:?}:\n{stderr}");
        for line in stderr.lines() {
            let Some((k, said)) = line
                .strip_prefix("nvcc-orion: cubin: ")
                .and_then(|l| l.split_once(": "))
            else {
                panic!("{cmd:?}: unexpected line {line}");
            };
            let said = match said.strip_prefix("left alone: ") {
                Some(why) => Err(why.to_string()),
                None => Ok(said.to_string()),
            };
            out.insert(k.to_string(), said);
        }
        if extra == 0 {
            for r in fixtures::res_usage(&cubin).unwrap() {
                if kernels.contains(&&r.function) {
                    assert!(
                        r.reg <= limit,
                        "rewrite at the cap: {} has {} registers",
                        r.function,
                        r.reg
                    );
                }
            }
        }
    }
    for k in f.kernels.keys() {
        assert!(out.contains_key(k), "rewrite said nothing about {k}");
    }
    out
}

/// The numbers of a partial move's summary: `partly moved: M of N spill words, B bytes left
/// in local memory`.
fn partly_numbers(detail: &str) -> Option<(usize, usize, usize)> {
    let rest = &detail[detail.find("partly moved: ")? + "partly moved: ".len()..];
    let n: Vec<usize> = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .take(3)
        .map(|w| w.parse().unwrap())
        .collect();
    (n.len() == 3).then(|| (n[0], n[1], n[2]))
}

/// Every function of the cubin at `path`, decoded by our decoder over nvdisasm's listing.
fn decode(path: &Path) -> Decoded {
    nvcc_orion::sass::decode::decode_file(&fixtures::tool("nvdisasm"), path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loop-weighted accesses of a kernel's spill words in its rewritten code (our decoder over
/// nvdisasm's listing), by where they are now: `Ok(word)` for a word its remaining
/// `STL/LDL [R1+imm]` touch (imm / 4), `Err(imm)` for a shared slot `[base+imm]` of the area.
/// An access weighs 10 per backward `BRA` around it (up to 3), RegDem's weighting, computed
/// here from the branches apart from the transform's own. `decoded` is the whole cubin
/// ([`decode`]: one nvdisasm run per cubin, however many of its kernels are looked at).
fn spill_heat(decoded: &Decoded, kernel: &str) -> BTreeMap<Result<i64, i64>, f64> {
    let entry = decoded.functions.iter().find(|f| f.name == kernel).unwrap();
    // The base register: the prologue's `LEA Rb, R0, c[0x0][0x2c], 0x2` (none before the
    // rewrite).
    let base: Option<u8> = entry
        .instrs
        .iter()
        .find(|i| i.opcode.to_string().starts_with("LEA") && i.operands.len() > 2)
        .filter(|i| i.operands[2].text == "c[0x0][0x2c]")
        .and_then(|i| i.operands[0].text.strip_prefix('R')?.parse().ok());
    let mut heat = BTreeMap::new();
    for f in decoded
        .functions
        .iter()
        .filter(|f| f.section == entry.section)
    {
        let mut depth = vec![0u32; f.instrs.len()];
        for (i, ins) in f.instrs.iter().enumerate() {
            if ins.op() == Op::Bra
                && let Some(t) = ins.target.and_then(|t| f.index_of(t))
                && t < i
            {
                depth[t..=i].iter_mut().for_each(|d| *d += 1);
            }
        }
        for (ins, d) in f.instrs.iter().zip(depth) {
            let Some((reg, imm)) = ins.operands.iter().find_map(|o| match o.kind {
                OperandKind::Addr { reg, imm, .. } => Some((reg, imm)),
                _ => None,
            }) else {
                continue;
            };
            let weight = 10f64.powi(d.min(3) as i32);
            let words = if ins.has_mod("128") {
                4
            } else if ins.has_mod("64") {
                2
            } else {
                1
            };
            let key = match ins.op() {
                Op::Ldl | Op::Stl if reg == Some(1) => Ok(imm / 4),
                Op::Lds | Op::Sts if base.is_some() && reg == base => Err(imm),
                _ => continue,
            };
            for k in 0..words {
                let at = match key {
                    Ok(w) => Ok(w + k),
                    Err(i) => Err(i + 4 * k),
                };
                *heat.entry(at).or_default() += weight;
            }
        }
    }
    heat
}

/// A partly moved kernel (issue 23): its summary names a real partial move; the words its
/// remaining `STL/LDL` touch are exactly the words kept (their count is the summary's total
/// less the words moved, so none is a moved word: every kept word keeps its accesses), 4
/// bytes each; and the hottest spill location is a shared slot (the hottest word moved).
fn check_partly(decoded: &Decoded, kernel: &str, detail: &str) -> Result<String, String> {
    let (moved, words, bytes) =
        partly_numbers(detail).ok_or_else(|| format!("no partial move in: {detail}"))?;
    let heat = spill_heat(decoded, kernel);
    let kept: Vec<(&i64, f64)> = heat
        .iter()
        .filter_map(|(k, &h)| k.as_ref().ok().map(|w| (w, h)))
        .collect();
    let hottest_slot = heat
        .iter()
        .filter(|(k, _)| k.is_err())
        .map(|(_, &h)| h)
        .fold(0.0, f64::max);
    let hottest_kept = kept.iter().map(|&(_, h)| h).fold(0.0, f64::max);
    if moved == 0 || moved >= words || kept.len() != words - moved || bytes != 4 * kept.len() {
        return Err(format!(
            "{moved} of {words} words moved, {bytes} bytes left, but {} words still local: {detail}",
            kept.len()
        ));
    }
    if hottest_slot < hottest_kept {
        return Err(format!(
            "a local word (weight {hottest_kept}) is hotter than every moved one ({hottest_slot})"
        ));
    }
    Ok(format!(
        "{moved} of {words} words moved, {bytes} bytes left; hottest slot weighs {hottest_slot}, \
         hottest local word {hottest_kept}"
    ))
}

/// One kernel's row.
struct Row {
    file: String,
    kernel: String,
    limit: u32,
    regs: u32,
    shared: u32,
    plain_local: usize,
    class: Class,
    /// The rewrite of plain nvcc's code at the limit: `None` when moved, else why not.
    at_cap: Option<String>,
}

/// The real limits a kernel's spills may stay in local memory for (issue 23: "refused with a
/// reason that names a real limit"), each with the words of the reasons that name it (all of
/// one entry must appear). A refusal naming none of them (a proof failure, a code shape the
/// rewrite does not follow) fails the test.
const LIMITS: &[(&str, &[&str])] = &[
    (
        "the area does not fit the free shared memory",
        &["bytes of shared memory", "limited to"],
    ),
    (
        "a register cap with no room for the base",
        &["registers, above the limit of"],
    ),
    (
        "an instruction the checker does not cover",
        &["operand tables do not cover"],
    ),
    (
        "an instruction the checker does not cover",
        &["not covered by the operand tables"],
    ),
    (
        "an architecture the rewrite does not handle",
        &["code is not rewritten"],
    ),
];

/// The real limit `reason` names, if any ([`LIMITS`]).
fn limit(reason: &str) -> Option<&'static str> {
    LIMITS
        .iter()
        .find(|(_, words)| words.iter().all(|w| reason.contains(w)))
        .map(|&(name, _)| name)
}

/// The "Done when" over one arch's rows.
#[derive(Debug)]
struct DoneWhen {
    /// Kernels whose spill area fits the free shared memory: all but those refused because
    /// it does not and those partly moved (a partial move is made only where it does not).
    fits: usize,
    /// Of those, every spill moved and proved.
    moved: usize,
    /// Partly moved (outside `fits`).
    partly: usize,
    /// Refused or not offered, by the real limit their reason names.
    limits: BTreeMap<&'static str, usize>,
}

/// Count the rows for the "Done when" and print the numbers; every kernel not moved
/// must be partly moved or kept by a reason in [`LIMITS`] (listed in the panic otherwise).
fn done_when(arch: u32, rows: &[Row]) -> DoneWhen {
    let mut d = DoneWhen {
        fits: 0,
        moved: 0,
        partly: 0,
        limits: BTreeMap::new(),
    };
    let mut unexplained = Vec::new();
    for r in rows {
        match &r.class {
            Class::Moved => {
                d.fits += 1;
                d.moved += 1;
            }
            Class::Partly(..) => d.partly += 1,
            Class::Refused(why) | Class::NotOffered(why) => match limit(why) {
                Some(l) => {
                    if l != LIMITS[0].0 {
                        d.fits += 1;
                    }
                    *d.limits.entry(l).or_default() += 1;
                }
                None => unexplained.push(format!("{} `{}`: {why}", r.file, r.kernel)),
            },
        }
    }
    println!(
        "sm_{arch}, issue 23's done-when: {} of {} kernels whose area fits moved and proved \
         ({:.0} %); {} partly moved; kept by a real limit: {:?}",
        d.moved,
        d.fits,
        100.0 * d.moved as f64 / d.fits.max(1) as f64,
        d.partly,
        d.limits
    );
    assert!(
        unexplained.is_empty(),
        "sm_{arch}: spills kept in local memory for a reason that names no real limit:\n{}",
        unexplained.join("\n")
    );
    d
}

/// Build, check and classify every kernel for `arch`; print the tally. At least `floor`
/// kernels must have every spill moved and proved, and at least `proved_floor` moved or
/// partly moved (the area for every spill above 48 KiB: the hottest words moved), proved
/// (measured, issue 23). The "Done when" numbers are returned for the caller to
/// assert.
fn corpus(arch: u32, floor: usize, proved_floor: usize) -> Option<DoneWhen> {
    let b = build(arch)?;
    let check = std::time::Instant::now();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for f in manifest() {
        let s = stem(&f.file);
        let stderr = std::fs::read_to_string(b.dir.join(format!("{s}.stderr"))).unwrap();
        // Quiet as nvcc (which prints nothing of its own here but its warnings), and no
        // fallback to ptxas's cubin after an internal failure.
        if stderr.lines().any(|l| l.starts_with("nvcc-orion")) {
            failures.push(format!(
                "{} sm_{arch}: nvcc-orion printed:\n{stderr}",
                f.file
            ));
        }
        let plain_path = b.dir.join(format!("plain_{s}.cubin"));
        let orion_path = b.dir.join(format!("orion_{s}.cubin"));
        let plain = Cubin::parse(&std::fs::read(&plain_path).unwrap()).unwrap();
        let orion = Cubin::parse(&std::fs::read(&orion_path).unwrap()).unwrap();
        let plain_local = local_accesses(&plain_path, false);
        let orion_local = local_accesses(&orion_path, true);
        let usage: BTreeMap<String, (u32, u32)> = fixtures::res_usage(&orion_path)
            .unwrap()
            .into_iter()
            .map(|r| (r.function, (r.reg, r.shared)))
            .collect();
        let at_cap = probe(&b, &f, 0);
        // Decoded when a first kernel of the file is partly moved, then shared by the others.
        let mut orion_decoded: Option<Decoded> = None;
        let report: Vec<Value> = std::fs::read_to_string(b.dir.join(format!("{s}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let reported: Vec<&str> = report
            .iter()
            .map(|r| r["kernel"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = f.kernels.keys().map(String::as_str).collect();
        let mut got = reported.clone();
        want.sort_unstable();
        got.sort_unstable();
        if got != want {
            failures.push(format!(
                "{} sm_{arch}: report kernels {got:?}, manifest {want:?}",
                f.file
            ));
            continue;
        }
        for (kernel, &limit) in &f.kernels {
            let r = report
                .iter()
                .find(|r| r["kernel"] == kernel.as_str())
                .unwrap();
            let at = format!("{kernel} ({} sm_{arch})", f.file);
            let (regs, shared) = usage[kernel];
            if regs > limit {
                failures.push(format!("{at}: {regs} registers, above its limit {limit}"));
            }
            let plain_n = plain_local.get(kernel).copied().unwrap_or(0);
            if plain_n == 0 {
                failures.push(format!(
                    "{at}: no STL/LDL under plain nvcc: not a spill case"
                ));
            }
            // Issue 23: the spill2smem candidate at the budget the kernel ships with
            // (ptxas's own count, within the user's limit), or a refusal naming that budget.
            let shipped = r["candidates"][0]["registers"].as_u64().unwrap();
            let at_shipped = r["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["budget"]["spill2smem"] == true && c["budget"]["regs"] == shipped);
            let note = r["transform"].as_str().unwrap_or("");
            if !at_shipped && !note.contains(&format!("spill2smem at {shipped}: not applied")) {
                failures.push(format!(
                    "{at}: no spill2smem candidate at its shipped budget {shipped}: {r}"
                ));
            }
            let local = orion_local.get(kernel).copied().unwrap_or(0);
            let chosen = r["chosen"].as_u64().unwrap();
            let verdict = &r["verdict"];
            let class = if chosen == 0 {
                // ptxas's own code: what plain nvcc gives, byte for byte.
                if text_section(&plain, kernel) != text_section(&orion, kernel) {
                    failures.push(format!(
                        "{at}: kept, but its code differs from plain nvcc's"
                    ));
                }
                if verdict.is_object() && verdict["proved"] == false {
                    Class::Refused(verdict["detail"].as_str().unwrap().to_string())
                } else {
                    Class::NotOffered(r["reason"].as_str().unwrap().to_string())
                }
            } else if verdict["proved"] == true {
                if u64::from(shared) > STATIC_SHARED_LIMIT {
                    failures.push(format!("{at}: {shared} bytes of shared memory"));
                }
                // Every spill moved: none of ptxas's spill accesses left, and the rewrite
                // says it kept no spill word in local memory.
                let kept = verdict["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("partly moved"));
                if local == 0 && !kept {
                    Class::Moved
                } else {
                    let detail = verdict["detail"].as_str().unwrap_or("");
                    let decoded = orion_decoded.get_or_insert_with(|| decode(&orion_path));
                    match check_partly(decoded, kernel, detail) {
                        Ok(note) => Class::Partly(local, note),
                        Err(e) => {
                            failures.push(format!("{at}: partly moved: {e}"));
                            Class::Partly(local, e)
                        }
                    }
                }
            } else {
                failures.push(format!(
                    "{at}: forced spill2smem, yet candidate {chosen} was chosen without a \
                     proved rewrite: {r}"
                ));
                continue;
            };
            rows.push(Row {
                file: f.file.clone(),
                kernel: kernel.clone(),
                limit,
                regs,
                shared,
                plain_local: plain_n,
                class,
                at_cap: at_cap[kernel].clone().err(),
            });
        }
    }
    print_tally(arch, &rows, b.seconds, check.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let total: usize = manifest().iter().map(|f| f.kernels.len()).sum();
    assert_eq!(rows.len(), total, "every kernel classified");
    let moved = rows.iter().filter(|r| r.class == Class::Moved).count();
    let partly = rows
        .iter()
        .filter(|r| matches!(r.class, Class::Partly(..)))
        .count();
    println!(
        "sm_{arch}: {moved} of {total} kernels moved and proved (floor {floor}), {partly} partly \
         moved and proved ({} proved, floor {proved_floor})",
        moved + partly
    );
    assert!(
        moved >= floor,
        "sm_{arch}: {moved} moved, below the floor {floor}"
    );
    assert!(
        moved + partly >= proved_floor,
        "sm_{arch}: {moved} moved and {partly} partly moved, below the floor {proved_floor}"
    );
    Some(done_when(arch, &rows))
}

/// At least 90 % of the kernels whose spill area fits the free shared memory have every
/// spill moved and proved (issue 23); the rest are partly moved or kept by a real limit
/// ([`done_when`] fails on any other reason).
fn assert_ninety_percent(arch: u32, d: &DoneWhen) {
    assert!(
        d.moved * 10 >= d.fits * 9,
        "sm_{arch}: {} of {} kernels whose area fits moved and proved, below 90 %",
        d.moved,
        d.fits
    );
}

fn print_tally(arch: u32, rows: &[Row], build_s: f64, check_s: f64) {
    let mut out = format!(
        "spill corpus, sm_{arch}: {} kernels (builds {build_s:.1} s{}, checks {check_s:.1} s)\n",
        rows.len(),
        if build_s == 0.0 { ", reused" } else { "" }
    );
    out.push_str(
        "| file | kernel | limit | regs | smem | plain STL+LDL | class | reason | rewrite at the limit |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---:|---|---|---|\n");
    for r in rows {
        let reason = match &r.class {
            Class::Moved => String::new(),
            Class::Partly(n, note) => format!("{n} spill accesses left: {note}"),
            Class::Refused(s) | Class::NotOffered(s) => s.clone(),
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            r.file,
            r.kernel,
            r.limit,
            r.regs,
            r.shared,
            r.plain_local,
            r.class.label(),
            reason,
            r.at_cap.as_deref().unwrap_or("moved")
        ));
    }
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut groups: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for r in rows {
        *classes.entry(r.class.label()).or_default() += 1;
        if r.class != Class::Moved {
            *groups
                .entry((r.class.label(), r.class.group()))
                .or_default() += 1;
        }
    }
    out.push_str(&format!("\ntally sm_{arch}:"));
    for (c, n) in &classes {
        out.push_str(&format!(" {c} {n};"));
    }
    out.push('\n');
    for ((c, g), n) in &groups {
        out.push_str(&format!("  {n:3} {c}: {g}\n"));
    }
    let at_cap = tally(rows.iter().map(|r| r.at_cap.clone()));
    out.push_str(&format!(
        "rewrite of plain nvcc's cubin at the limit (`nvcc-orion rewrite --spill2smem`), sm_{arch}:\n{at_cap}"
    ));
    println!("{out}");
}

/// Counts of `None` (moved) and of each reason group, one per line.
fn tally(results: impl Iterator<Item = Option<String>>) -> String {
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for r in results {
        let g = r.map_or("moved and proved".to_string(), |why| {
            format!("left alone: {}", Class::Refused(why).group())
        });
        *groups.entry(g).or_default() += 1;
    }
    groups
        .iter()
        .map(|(g, n)| format!("  {n:3} {g}\n"))
        .collect()
}

#[test]
fn corpus_sm_86() {
    if let Some(d) = corpus(86, 33, PROVED_86) {
        assert_ninety_percent(86, &d);
    }
}

#[test]
fn corpus_sm_75() {
    if let Some(d) = corpus(75, 34, PROVED_75) {
        assert_ninety_percent(75, &d);
    }
}

#[test]
fn corpus_sm_80() {
    if let Some(d) = corpus(80, 33, PROVED_80) {
        assert_ninety_percent(80, &d);
    }
}

#[test]
fn corpus_sm_89() {
    if let Some(d) = corpus(89, 33, PROVED_89) {
        assert_ninety_percent(89, &d);
    }
}

#[test]
fn corpus_sm_90() {
    if let Some(d) = corpus(90, 33, PROVED_90) {
        assert_ninety_percent(90, &d);
    }
}

#[test]
fn reasons_group_by_kind() {
    let size = Class::Refused(
        "98 slots × 128 threads need 50176 bytes of shared memory beside the kernel's 0; static \
         shared memory is limited to 49152"
            .into(),
    );
    assert_eq!(
        size.group(),
        "N slots × N threads need N bytes of shared memory beside the kernel's N; static shared \
         memory is limited to N"
    );
    let proof = Class::Refused(
        "the checker rejected the rewrite: _Z1kPf at 0x690: the original `STL.64` at 0x630 \
         became `STS`"
            .into(),
    );
    assert_eq!(
        proof.group(),
        "the checker rejected the rewrite: the original `…` at N became `…`"
    );
}

/// Without forcing (issue 23's second "Done when"): `nvcc-orion` with
/// `--orion-transforms=spill2smem` only, on the files of [`build`] (its per-file cache, so the
/// variants are ptxas's runs already made): the `--orion-report` JSONL of every file, and
/// `explain` on it. Folder with `<stem>.jsonl` and `<stem>.explain`.
fn build_unforced(b: &Built) -> PathBuf {
    let orion = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    let nvcc = common::nvcc_or_skip("spill_corpus").unwrap();
    let stamp = std::fs::read(b.dir.join("COMPLETE")).unwrap();
    let key = b.dir.to_string_lossy().into_owned();
    let lock = common::Locked::new(
        "spill-corpus-unforced",
        &nvcc,
        &[key.as_bytes(), &stamp, &std::fs::read(&orion).unwrap()],
    );
    if lock.complete() {
        return lock.dir.clone();
    }
    let files = manifest();
    std::thread::scope(|s| {
        for f in &files {
            let (orion, dir, built) = (&orion, &lock.dir, &b.dir);
            s.spawn(move || {
                let st = stem(&f.file);
                let report = dir.join(format!("{st}.jsonl"));
                let mut cmd = common::command(orion);
                cmd.current_dir(dir)
                    .args(["-cubin", "-arch=sm_86"])
                    .args(&f.flags)
                    .args(["--orion-transforms=spill2smem", BLOCK])
                    .arg(format!("--orion-report={}", report.display()))
                    .arg(corpus_dir().join(&f.file))
                    .args(["-o", &format!("{st}.cubin")]);
                cmd.env("NVCC_ORION_CACHE", built.join(format!("cache_{st}")));
                let out = cmd.output().unwrap();
                // Quiet as nvcc: nothing of ours (nvcc's own warnings may pass through).
                let ours = text(&out.stderr)
                    .lines()
                    .any(|l| l.starts_with("nvcc-orion"));
                assert!(
                    out.status.success() && !ours,
                    "nvcc-orion unforced, {}:\n{}",
                    f.file,
                    text(&out.stderr)
                );
                let explain = common::command(orion)
                    .arg("explain")
                    .arg(&report)
                    .output()
                    .unwrap();
                assert!(explain.status.success(), "explain {}", report.display());
                std::fs::write(dir.join(format!("{st}.explain")), &explain.stdout).unwrap();
            });
        }
    });
    lock.finish();
    lock.dir.clone()
}

/// `explain`'s rows of `kernel`'s table: each row's words.
fn explain_rows<'a>(explain: &'a str, kernel: &str) -> Vec<Vec<&'a str>> {
    let mut rows = Vec::new();
    let mut mine = false;
    for line in explain.lines() {
        if !line.starts_with(' ') {
            mine = line.split_whitespace().nth(1) == Some(kernel);
            continue;
        }
        if mine {
            rows.push(line.split_whitespace().collect());
        }
    }
    rows
}

/// Without forcing, for every kernel of the corpus that spills at the budget it ships with
/// (ptxas's own count, within its limit), the report and `explain` show the spill2smem
/// candidate at that budget with its predicted cycles beside ptxas's, or its refusal at that
/// budget naming a real limit ([`LIMITS`]). sm_86, reusing [`build`]'s compiles.
#[test]
fn unforced_report_shows_the_candidate_at_the_shipped_budget_sm_86() {
    let Some(b) = build(86) else { return };
    let dir = build_unforced(&b);
    let mut failures = Vec::new();
    let (mut shown, mut refused) = (0, 0);
    for f in manifest() {
        let st = stem(&f.file);
        let explain = std::fs::read_to_string(dir.join(format!("{st}.explain"))).unwrap();
        let report: Vec<Value> = std::fs::read_to_string(dir.join(format!("{st}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for kernel in f.kernels.keys() {
            let at = format!("{kernel} ({})", f.file);
            let Some(r) = report.iter().find(|r| r["kernel"] == kernel.as_str()) else {
                failures.push(format!("{at}: no record"));
                continue;
            };
            let ptxas = &r["candidates"][0];
            if ptxas["spill_instructions"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let shipped = ptxas["registers"].as_u64().unwrap();
            let cycles = |c: &Value| c["cycles_per_warp"][0].as_f64().filter(|&x| x > 0.0);
            let rows = explain_rows(&explain, kernel);
            let baseline = rows
                .iter()
                .find(|w| w.starts_with(&["*", "ptxas"]) || w.starts_with(&["ptxas"]));
            let candidate = r["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["budget"]["spill2smem"] == true && c["budget"]["regs"] == shipped);
            // The chosen row starts with `*`.
            let row = rows
                .iter()
                .map(|w| &w[usize::from(w.first() == Some(&"*"))..])
                .find(|w| {
                    w.first() == Some(&shipped.to_string().as_str())
                        && w.get(1) == Some(&"spill2smem")
                });
            match (candidate, row) {
                (Some(c), Some(w)) => {
                    let c_cycles = cycles(c);
                    let p_cycles = cycles(ptxas);
                    let shown_cycles =
                        |w: &[&str]| w.get(w.len().wrapping_sub(2))?.parse::<f64>().ok();
                    if c_cycles.is_none()
                        || p_cycles.is_none()
                        || w.last() != Some(&"proved")
                        || shown_cycles(w).is_none()
                        || baseline.and_then(|b| shown_cycles(b)).is_none()
                    {
                        failures.push(format!(
                            "{at}: the candidate at {shipped} without predicted cycles beside \
                             ptxas's: report {c} / {ptxas}, explain {w:?} / {baseline:?}"
                        ));
                    } else {
                        shown += 1;
                    }
                }
                (None, Some(w)) => {
                    let v = &r["verdict"];
                    let detail = v["detail"].as_str().unwrap_or("");
                    if v["budget"] != shipped || v["proved"] != false || limit(detail).is_none() {
                        failures.push(format!(
                            "{at}: no candidate at {shipped}, and no refusal there naming a \
                             real limit: {v}"
                        ));
                    } else if !w.join(" ").contains(&format!(
                        "rejected: {}",
                        detail.split_whitespace().collect::<Vec<_>>().join(" ")
                    )) {
                        failures.push(format!("{at}: explain does not give the refusal: {w:?}"));
                    } else {
                        refused += 1;
                    }
                }
                _ => failures.push(format!(
                    "{at}: no spill2smem row at the shipped budget {shipped} in explain:\n{}",
                    rows.iter()
                        .map(|w| w.join(" "))
                        .collect::<Vec<_>>()
                        .join("\n")
                )),
            }
        }
    }
    println!(
        "unforced, sm_86: {shown} spilling kernels show the spill2smem candidate at their \
         shipped budget with predicted cycles, {refused} its refusal there naming a real limit"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(shown > 0, "no candidate shown at all");
}

#[test]
fn reasons_name_real_limits() {
    let room = "106 slots × 128 threads need 54272 bytes of shared memory beside the kernel's 0; \
                static shared memory is limited to 49152";
    assert_eq!(limit(room), Some(LIMITS[0].0));
    assert_eq!(
        limit("the base register needs 33 registers, above the limit of 32"),
        Some("a register cap with no room for the base")
    );
    // A proof failure or a code shape not followed names no limit: the test fails on it.
    assert_eq!(
        limit("the checker rejected the rewrite: scheduling: `STS` at 0x3220: no producer"),
        None
    );
    assert_eq!(
        limit("re-layout refused: the callee of the call at 0x9c0 returns through an address"),
        None
    );
}

/// What finding one register would do at the shipped budget: the rewrite of plain nvcc's code
/// with each kernel allowed its limit + 1 (never shipped: a user's limit is a promise). The
/// kernels it moves and proves are those a build at C − 1 plus the base, or the stack
/// pointer's register, would serve; the rest name the next obstacle. Prints the tally.
#[test]
#[ignore = "diagnosis: cargo nextest run --release --test rewrites --run-ignored all -E 'test(one_more)' --no-capture"]
fn one_more_register_at_the_limit_sm_86() {
    let Some(b) = build(86) else { return };
    let mut all = Vec::new();
    for f in manifest() {
        for (k, r) in probe(&b, &f, 1) {
            println!(
                "{} `{k}` (limit {}): {}",
                f.file,
                f.kernels[&k],
                match &r {
                    Ok(s) => s.clone(),
                    Err(e) => format!("left alone: {e}"),
                }
            );
            all.push(r.err());
        }
    }
    println!(
        "one register over the limit, sm_86:\n{}",
        tally(all.into_iter())
    );
}

/// A partial move through the library, on ptxas's own code for `c40_star_strip` (167 spill
/// words at 128 threads: 85 KiB, above the 48 KiB limit), with one register allocation unit
/// of room for the base (the corpus run checks the caps): the words it keeps are exactly those
/// the remaining `STL/LDL [R1+imm]` touch, every access of a moved word became `LDS/STS`, the
/// hottest word (loop-weighted accesses, counted here on the original code) moved, the area is
/// within 48 KiB, and the checker proves the mixed code yet rejects it once a kept reload is
/// pointed at a moved word (its local copy is stale there).
#[test]
fn a_partial_move_keeps_the_coldest_words_and_is_proved_sm_86() {
    use nvcc_orion::sass::encode;
    use nvcc_orion::transform::area::Options;
    use nvcc_orion::tune::proven;
    let Some(b) = build(86) else { return };
    let kernel = "_Z14c40_star_stripPKfPfiii";
    let plain = b.dir.join("plain_cap40.cubin");
    let bytes = std::fs::read(&plain).unwrap();
    let cubin = Cubin::parse(&bytes).unwrap();
    let mut opts = Options::for_kernel(&cubin, kernel, Some(128));
    opts.max_registers = Some(48);
    let outcome = proven::spill2smem(&bytes, &[(kernel.to_string(), opts)]).unwrap();
    let proved = outcome.kernels[0].1.as_ref().expect("proved");
    let r = &proved.rewrite;
    let part = r.partial.as_ref().expect("a partial move");
    let info = cubin.function_info(kernel).unwrap();
    assert!(info.static_shared + r.shared_added <= STATIC_SHARED_LIMIT);
    assert!(
        part.words_moved > 0 && part.words_moved < part.words,
        "{part:?}"
    );
    assert_eq!(part.kept.len(), part.words - part.words_moved);
    assert_eq!(part.local_bytes, 4 * part.kept.len() as u64);
    assert_eq!(r.frame_released, 0, "the frame still holds the kept words");
    let scratch = tempfile::Builder::new()
        .prefix("spill-corpus-partial-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let out = scratch.path().join("partial.cubin");
    std::fs::write(&out, &outcome.bytes).unwrap();
    // Words: the rewritten code's local words are exactly the kept ones.
    let kept: BTreeSet<i64> = part.kept.iter().map(|k| k / 4).collect();
    let (plain_decoded, out_decoded) = (decode(&plain), decode(&out));
    let after = spill_heat(&out_decoded, kernel);
    let local_after: BTreeSet<i64> = after.keys().filter_map(|k| k.ok()).collect();
    assert_eq!(local_after, kept);
    // Accesses: the original's spills of kept words are the local accesses left.
    let before = spill_heat(&plain_decoded, kernel);
    let instrs = |d: Decoded| {
        d.functions
            .into_iter()
            .filter(|f| f.section == info.text_section)
            .flat_map(|f| f.instrs)
            .collect::<Vec<_>>()
    };
    let r1_words = |i: &nvcc_orion::sass::ir::Instr| -> Option<i64> {
        matches!(i.op(), Op::Ldl | Op::Stl).then_some(())?;
        i.operands.iter().find_map(|o| match o.kind {
            OperandKind::Addr {
                reg: Some(1), imm, ..
            } => Some(imm / 4),
            _ => None,
        })
    };
    let spills: BTreeSet<u64> = cubin.spill_offsets(info.text_section).into_iter().collect();
    let kept_before = instrs(plain_decoded)
        .iter()
        .filter(|i| spills.contains(&i.offset))
        .filter(|i| r1_words(i).is_some_and(|w| kept.contains(&w)))
        .count();
    let after_instrs = instrs(out_decoded);
    let local_left = after_instrs
        .iter()
        .filter(|i| r1_words(i).is_some())
        .count();
    assert_eq!(local_left, kept_before);
    assert_eq!(local_left, r.kept_local);
    // The hottest word moved; no kept word is hotter than any moved one.
    let heat = |w: i64| before.get(&Ok(w)).copied().unwrap_or(0.0);
    let coldest_moved = before
        .keys()
        .filter_map(|k| k.ok())
        .filter(|w| !kept.contains(w))
        .map(heat)
        .fold(f64::INFINITY, f64::min);
    let hottest_kept = kept.iter().map(|&w| heat(w)).fold(0.0, f64::max);
    let hottest = before
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .unwrap();
    assert!(
        !kept.contains(hottest.0.as_ref().unwrap()),
        "the hottest word {hottest:?} stayed local"
    );
    assert!(
        hottest_kept <= coldest_moved,
        "{hottest_kept} > {coldest_moved}"
    );
    println!(
        "{kernel}: {} of {} words moved; moved words weigh at least {coldest_moved}, kept at most \
         {hottest_kept}; the hottest, word {:?}, weighs {}",
        part.words_moved, part.words, hottest.0, hottest.1
    );
    // Control, then a kept reload pointed at a moved word: rejected.
    proven::recheck_spill2smem(&bytes, &outcome.bytes, r).expect("control");
    let moved_word = before
        .keys()
        .filter_map(|k| k.ok())
        .find(|w| !kept.contains(w))
        .unwrap();
    let reload = after_instrs
        .iter()
        .find(|i| {
            i.op() == Op::Ldl && !i.has_mod("64") && !i.has_mod("128") && r1_words(i).is_some()
        })
        .expect("a kept 32-bit reload");
    let mut mutant = Cubin::parse(&outcome.bytes).unwrap();
    let mut code = mutant.elf().sections[info.text_section].data.clone();
    let at = reload.offset as usize;
    let w = encode::from_bytes(code[at..at + 16].try_into().unwrap());
    let w = encode::set_bits(w, 40, 24, (4 * moved_word) as u64);
    code[at..at + 16].copy_from_slice(&encode::to_bytes(w));
    mutant
        .replace_text(kernel, code, &nvcc_orion::cubin::OffsetMap::new())
        .unwrap();
    let mutant = mutant.write().unwrap();
    let mutant_path = scratch.path().join("mutant.cubin");
    std::fs::write(&mutant_path, &mutant).unwrap();
    let patched = instrs(decode(&mutant_path))
        .into_iter()
        .find(|i| i.offset == reload.offset)
        .unwrap();
    assert_eq!(r1_words(&patched), Some(moved_word), "{}", patched.opcode);
    let e = proven::recheck_spill2smem(&bytes, &mutant, r)
        .expect_err("a kept reload of a moved word must be rejected");
    assert!(
        matches!(e, proven::NotProved::Rejected(_)),
        "refused by a check, not by a failure to read the mutant: {e}"
    );
    println!("mutant rejected: {e}");
}

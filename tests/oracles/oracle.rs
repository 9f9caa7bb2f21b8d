//! The oracle check (issue 18): on every test kernel on every architecture, each
//! instruction's register reads and writes in our IR equal `nvdisasm -plr`'s, or the
//! function is refused for rewriting with the instruction named; ptxas' code never names a
//! misaligned register tuple; rewrites of tensor-core kernels (ldmatrix .x4/.x2.trans,
//! mma.sync, DMMA) are proved with every tuple aligned, or refused.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nvcc_orion::cubin::Cubin;
use nvcc_orion::sass::decode;
use nvcc_orion::transform::area::Options;
use nvcc_orion::tune::proven::{self, NotProved};
use nvcc_orion::verify::{oracle, tuples};

/// Every cubin the test looks at: the coverage kernels of `tests/kernels/oracle` (sm_75,
/// 80, 86, 89, 90, 90a) and the rewrite test kernels (`tests/kernels/{sass,regdem,
/// spill2smem}`) for sm_75-90.
struct Cubins {
    nvdisasm: PathBuf,
    /// (arch, name, path).
    all: Vec<(String, String, PathBuf)>,
}

fn cubins() -> Option<Cubins> {
    let k = common::oracle_kernels::oracle_kernels("oracle")?;
    let nvdisasm = common::toolkit_tool(&k.nvcc, "nvdisasm");
    let mut all: Vec<(String, String, PathBuf)> = k.cubins.clone();
    // `tests/kernels/sass`: the decoder's tests build the same plain `-cubin` per arch; one
    // build serves both (issue 50).
    for (arch, stem, cubin) in common::sass_kernels::built(&k.nvcc) {
        all.push((arch.to_string(), stem, cubin));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = [
        "tests/kernels/regdem/regdem.cu",
        "tests/kernels/spill2smem/spills.cu",
    ];
    let texts: Vec<Vec<u8>> = sources
        .iter()
        .map(|s| std::fs::read(root.join(s)).unwrap())
        .collect();
    let views: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    let mut jobs = Vec::new();
    for src in sources {
        for arch in common::sass_kernels::ARCHS.iter().map(u32::to_string) {
            let stem = Path::new(src).file_stem().unwrap().to_string_lossy();
            jobs.push((arch, stem.to_string(), root.join(src)));
        }
    }
    // Once per run for both tests of this file (a lock and a completion stamp).
    let dir = common::build_once("oracle-rewrite-kernels", &k.nvcc, &views, |dir| {
        // Two compiles at a time (CI has two cores).
        for chunk in jobs.chunks(2) {
            std::thread::scope(|s| {
                for (arch, stem, src) in chunk {
                    let (nvcc, out) = (&k.nvcc, dir.join(format!("{stem}_sm{arch}.cubin")));
                    s.spawn(move || {
                        let st = std::process::Command::new(nvcc)
                            .args(["-cubin", &format!("-arch=sm_{arch}"), "-o"])
                            .arg(out)
                            .arg(src)
                            .status()
                            .unwrap();
                        assert!(st.success(), "nvcc {}", src.display());
                    });
                }
            });
        }
    });
    for (arch, stem, _) in jobs {
        let out = dir.join(format!("{stem}_sm{arch}.cubin"));
        all.push((arch, stem, out));
    }
    Some(Cubins { nvdisasm, all })
}

/// Instruction families that must be seen and agreed, with the architectures where ptxas
/// emits them (`None`: every one).
const FAMILIES: &[(&str, Option<&[&str]>)] = &[
    ("LDSM.16.M88.4", None),
    ("LDSM.16.MT88.4", None),
    ("LDSM.16.M88.2", None),
    ("LDSM.16.MT88.2", None),
    ("LDSM.16.M88", None),
    ("STSM", Some(&["90", "90a"])),
    ("HMMA.1688.F32", None),
    ("HMMA.16816.F32", Some(&["80", "86", "89", "90", "90a"])),
    ("HMMA.1688.F32.TF32", Some(&["80", "86", "89", "90", "90a"])),
    (
        "HMMA.16816.F32.BF16",
        Some(&["80", "86", "89", "90", "90a"]),
    ),
    ("IMMA", None),
    ("DMMA", Some(&["80", "86", "89", "90", "90a"])),
    ("LDGSTS", Some(&["80", "86", "89", "90", "90a"])),
    ("LDGDEPBAR", Some(&["80", "86", "89", "90", "90a"])),
    ("DEPBAR", Some(&["80", "86", "89", "90", "90a"])),
    ("SHFL", None),
    ("VOTE", None),
    ("MATCH", None),
    ("REDUX", Some(&["80", "86", "89", "90", "90a"])),
    ("ATOMS", None),
    ("ATOMG", None),
    ("RED", Some(&["75", "80", "86", "89"])),
    ("REDG", Some(&["90", "90a"])),
    ("LDG.E.128", None),
    ("LDG.E.64", None),
    ("STS.128", None),
    ("LDS.64", Some(&["80", "86", "89", "90", "90a"])),
    ("LDS.U.64", Some(&["75"])),
    ("ULDC", None),
    ("UIADD3", None),
    ("PLOP3", None),
    ("BAR.SYNC", None),
    ("BSSY", None),
    ("BSYNC", None),
    ("WARPSYNC", None),
    ("CALL", None),
    ("RET", None),
    ("DFMA", None),
    ("F2F.F64.F32", None),
    ("IMAD.WIDE", None),
];

fn has_family(opcodes: &BTreeSet<String>, family: &str) -> bool {
    opcodes
        .iter()
        .any(|o| o == family || o.starts_with(&format!("{family}.")))
}

fn options(cubin: &Cubin, kernel: &str, target: Option<u32>) -> Options {
    let mut o = Options::for_kernel(cubin, kernel, Some(256));
    o.max_registers = target;
    o
}

/// Both rewrites refuse every kernel of `disagreeing` ((function, first disagreement, kernel)
/// of the cubin at `path`): regdem by the oracle, naming the instruction; spill2smem by the
/// oracle or the transform. One request per kernel, all of the cubin's in one call per rewrite:
/// a request's oracle verdict is its own section's (`proven::prove` decodes the cubin once for
/// all requests), so each kernel's answer is the one a call of its own gives, and a kernel
/// with several disagreeing functions is asked once (issue 50: each call decodes the whole
/// cubin twice).
fn rewrites_refuse(path: &Path, disagreeing: &[(String, String, String)]) {
    let mut kernels: Vec<&str> = disagreeing.iter().map(|(_, _, k)| k.as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    if kernels.is_empty() {
        return;
    }
    let bytes = std::fs::read(path).unwrap();
    let cubin = Cubin::parse(&bytes).unwrap();
    let req: Vec<(String, Options)> = kernels
        .iter()
        .map(|k| (k.to_string(), options(&cubin, k, None)))
        .collect();
    let first = |kernel: &str| {
        let (f, first, _) = disagreeing.iter().find(|(_, _, k)| k == kernel).unwrap();
        format!("{} {f}: {first}", path.display())
    };
    let regdem = proven::regdem(&bytes, &req).unwrap();
    assert_eq!(regdem.kernels.len(), kernels.len());
    for (kernel, r) in &regdem.kernels {
        match r {
            Err(NotProved::Oracle(why)) => {
                // The first disagreement of the section, with its instruction.
                assert!(
                    why.contains("nvdisasm -plr disagrees") && why.contains('`'),
                    "refusal names the instruction: {why}"
                );
            }
            other => panic!(
                "{}: disagrees but regdem of {kernel} gave {other:?}",
                first(kernel)
            ),
        }
    }
    let spill = proven::spill2smem(&bytes, &req).unwrap();
    assert_eq!(spill.kernels.len(), kernels.len());
    for (kernel, r) in &spill.kernels {
        assert!(
            matches!(r, Err(NotProved::Oracle(_)) | Err(NotProved::Transform(_))),
            "{}: spill2smem of {kernel} not refused: {r:?}",
            first(kernel)
        );
    }
}

/// Every function of every test cubin agrees with `nvdisasm -plr` or is refused, by both
/// rewrites, with the disagreeing instruction named; every listed family is seen and agrees
/// on every architecture that has it; ptxas never names a misaligned tuple.
#[test]
fn every_test_kernel_agrees_with_nvdisasm_plr_or_is_refused() {
    let Some(c) = cubins() else { return };
    // arch → opcodes agreed.
    let mut agreed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut compared = 0usize;
    let mut refused = Vec::new();
    for (arch, stem, path) in &c.all {
        let d = decode::decode_file(&c.nvdisasm, path)
            .unwrap_or_else(|e| panic!("decode {}: {e}", path.display()));
        let v = oracle::check_cubin(&c.nvdisasm, path, &d.functions).unwrap();
        tuples::check(&d.functions)
            .unwrap_or_else(|e| panic!("{}: ptxas' own code: {e}", path.display()));
        // Refused functions: (function, first disagreement, the kernel whose section holds it).
        let mut disagreeing = Vec::new();
        for f in &d.functions {
            match v.of(&f.name).expect("every function has a verdict") {
                Ok(a) => {
                    compared += a.instructions;
                    agreed
                        .entry(arch.clone())
                        .or_default()
                        .extend(a.opcodes.iter().cloned());
                }
                Err(ds) => {
                    assert!(!ds.is_empty());
                    // The kernel whose section holds f: f itself or the kernel it belongs to.
                    let Some(kernel) = d
                        .functions
                        .iter()
                        .find(|k| k.kernel && k.section == f.section)
                    else {
                        continue;
                    };
                    disagreeing.push((f.name.clone(), ds[0].to_string(), kernel.name.clone()));
                }
            }
        }
        if arch != "90a" {
            // The rewrites do not take sm_90a; there the refusal is the oracle's alone.
            rewrites_refuse(path, &disagreeing);
        }
        refused.extend(
            disagreeing
                .iter()
                .map(|(f, first, _)| format!("sm_{arch} {stem} {f}: {first}")),
        );
    }
    eprintln!("{compared} instructions agreed with nvdisasm -plr; refused functions:");
    for r in &refused {
        eprintln!("  {r}");
    }
    let archs: Vec<&String> = agreed.keys().collect();
    eprintln!(
        "{:<22} {}",
        "family",
        archs.iter().map(|a| format!("{a:>5}")).collect::<String>()
    );
    let mut missing = Vec::new();
    for (family, only) in FAMILIES {
        let mut row = format!("{family:<22} ");
        for arch in &archs {
            let want = only.is_none_or(|o| o.contains(&arch.as_str()));
            let seen = has_family(&agreed[*arch], family);
            row += &format!(
                "{:>5}",
                if seen {
                    "ok"
                } else if want {
                    "MISS"
                } else {
                    "-"
                }
            );
            if want && !seen {
                missing.push(format!("{family} on sm_{arch}"));
            }
        }
        eprintln!("{row}");
    }
    assert!(
        missing.is_empty(),
        "families not seen or not agreed: {missing:?}"
    );
    // The oracle refuses what our tables cannot describe (textures, surfaces, wgmma, ...),
    // so the check must actually bite on these kernels.
    assert!(
        refused
            .iter()
            .any(|r| r.contains("SULD") || r.contains("TEX") || r.contains("TLD"))
    );
}

/// Through the driver: a register-hungry kernel the oracle refuses (it reads a surface, which
/// our tables do not describe) keeps ptxas' code under `--orion-force=regdem`, the build succeeds, and the
/// report's one line for it names the refusal and the instruction.
#[test]
fn driver_keeps_ptxas_code_where_the_oracle_refuses() {
    let Some(k) = common::oracle_kernels::oracle_kernels("oracle driver") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let report = work.path().join("report.jsonl");
    let obj = work.path().join("refused.o");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/oracle_driver/refused.cu");
    let out = common::orion()
        .args([
            "-c",
            "-arch=sm_80",
            "--orion-force=regdem",
            "--orion-block-size=128",
        ])
        .arg(format!("--orion-report={}", report.display()))
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .env("NVCC_ORION_NVCC", &k.nvcc)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let mut refused = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let records = v
            .get("kernels")
            .and_then(|k| k.as_array())
            .cloned()
            .unwrap_or_else(|| vec![v.clone()]);
        for r in records {
            let t = r["transform"].as_str().unwrap_or("");
            if t.contains("nvdisasm -plr disagrees") {
                assert!(t.contains('`'), "names the instruction: {t}");
                // ptxas' own choice is kept.
                assert_eq!(r["chosen"].as_u64(), Some(0), "{r}");
                refused.push(r["kernel"].as_str().unwrap_or("").to_string());
            }
        }
    }
    assert!(
        refused.iter().any(|k| k.contains("surface")),
        "the surface kernel is refused by the oracle: {refused:?}\n{text}"
    );
}

/// `regdem` of the tensor-core kernels (ldmatrix .x1/.x2/.x4 and `.trans`, mma.sync
/// f16/bf16/tf32/int8, DMMA, stmatrix on sm_90) to eight registers below ptxas' count: each
/// is proved with every tuple aligned, the rewritten code agreeing with `nvdisasm -plr` and
/// every tensor instruction still there, or refused with a reason; never a rewrite that only
/// the transform vouches for.
/// Tensor kernels whose demotion the scheduling check once refused for the transform's own
/// control bits (sm_75: a reuse flag, printed `R11.reuse.COL`, left on an `IMMA` before an
/// inserted access; sm_90: a `NOP` ending a block that did not wait for an inserted store):
/// fixed in `transform::regdem`, they must now be proved.
const MUST_PROVE: &[(&str, &str)] = &[
    ("75", "_Z11t_wmma_int8PiPKaS1_"),
    ("90", "_Z15oracle_ldmatrixPKjPj"),
];

#[test]
fn tensor_kernel_rewrites_keep_tuples_aligned_or_are_refused() {
    let Some(c) = cubins() else { return };
    let tensor = |o: &str| {
        ["LDSM", "STSM", "HMMA", "IMMA", "DMMA"].contains(&o.split('.').next().unwrap_or(""))
    };
    let mut proved = 0;
    let mut proved_names = BTreeSet::new();
    let mut refused = Vec::new();
    for (arch, stem, path) in &c.all {
        if stem != "tensor" || arch == "90a" {
            continue;
        }
        let before = decode::decode_file(&c.nvdisasm, path).unwrap();
        let bytes = std::fs::read(path).unwrap();
        let cubin = Cubin::parse(&bytes).unwrap();
        for f in before.functions.iter().filter(|f| f.kernel) {
            let Some(regs) = cubin.function_info(&f.name).and_then(|i| i.registers) else {
                continue;
            };
            if regs <= 16 {
                continue;
            }
            let count = |fs: &[nvcc_orion::sass::ir::Function], section: usize| {
                fs.iter()
                    .filter(|g| g.section == section)
                    .flat_map(|g| g.instrs.iter())
                    .filter(|i| tensor(i.opcode.as_str()))
                    .count()
            };
            let req = vec![(f.name.clone(), options(&cubin, &f.name, Some(regs - 8)))];
            let out = proven::regdem(&bytes, &req).unwrap();
            match &out.kernels[0].1 {
                Ok(_) => {
                    let dir = tempfile::tempdir().unwrap();
                    let p = dir.path().join("k.cubin");
                    std::fs::write(&p, &out.bytes).unwrap();
                    let after = decode::decode_file(&c.nvdisasm, &p).unwrap();
                    let g = after.functions.iter().find(|g| g.name == f.name).unwrap();
                    let section: Vec<_> = after
                        .functions
                        .iter()
                        .filter(|h| h.section == g.section)
                        .cloned()
                        .collect();
                    tuples::check(&section).unwrap_or_else(|e| panic!("sm_{arch} {}: {e}", f.name));
                    let v = oracle::check_cubin(&c.nvdisasm, &p, &after.functions).unwrap();
                    assert!(v.first_in(&section.iter().collect::<Vec<_>>()).is_none());
                    assert_eq!(
                        count(&after.functions, g.section),
                        count(&before.functions, f.section),
                        "sm_{arch} {}: tensor instructions kept",
                        f.name
                    );
                    proved += 1;
                    proved_names.insert((arch.clone(), f.name.clone()));
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused.push(format!("sm_{arch} {}: {e}", f.name));
                }
            }
        }
    }
    eprintln!("{proved} tensor kernels demoted and proved; refused:");
    for r in &refused {
        eprintln!("  {r}");
    }
    // Some do go through (five on the last count), so the proof is not vacuous.
    assert!(proved > 0, "no tensor kernel was proved: {refused:?}");
    for (arch, k) in MUST_PROVE {
        assert!(
            proved_names.contains(&(arch.to_string(), k.to_string())),
            "sm_{arch} {k} not proved: {refused:?}"
        );
    }
}

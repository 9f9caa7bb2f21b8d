//! The SASS rewrites and the assembly check together (issue 46), on real toolchain output of
//! `tests/kernels/rewrite_audit/helpers.cu`: kernels that spill and call the compiler's
//! helper subroutines (the sqrt and double-division slow paths, which change with the
//! rewritten kernel in its section).
//!
//! * Forced spill2smem under `-maxrregcount=40` ships on sm_90 and sm_86: the sqrt
//!   kernel has no `STL`/`LDL` left, the division kernel its hottest spills in shared
//!   memory, and no assembly-check warning (before, the check compared the helpers with an
//!   `--entry` build that numbers them differently and kept ptxas's cubin for the whole
//!   architecture).
//! * The check itself, on a proved rewrite (`nvcc-orion rewrite`) of ptxas's whole-module
//!   cubin: it passes with the rewritten kernels named as proved, and a wrong edit of the
//!   rewritten section (a helper's frame raised, a register count below what the code names)
//!   is refused for that kernel only.
//!
//! * Helpers ptxas numbers apart (`$__internal_<n>_$`: the whole module and an `--entry`
//!   build of `tests/kernels/rewrite_audit/adapt.cu`) are matched by role and proved the same
//!   by their code: a budget or a helper's code that differs is still refused.
//! * Under adapt (`NVCC_ORION=adapt`) with the rewrite forced, the kernel with helpers keeps
//!   its variants, the rewritten ones included, each the code of a reference we did not
//!   build: ptxas's whole module at its budget, and the translation checker's proved rewrite
//!   of that module (`nvcc-orion rewrite`). Before, every variant was dropped.
//! * A rewrite the check refuses in a real build (`--orion-test-refuse-rewrite`, testing
//!   only) costs that kernel its rewrite alone: it ships ptxas's own code, the other
//!   kernel's rewrite ships, and the warning names the refused kernel.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::path::Path;
use std::process::Command;

use nvcc_orion::audit::{self, AuditError, Difference, Job, Origin, Tools};
use nvcc_orion::cubin::Cubin;

const K_SQRT: &str = "_Z6k_sqrtPKfPfi";
const K_DDIV: &str = "_Z6k_ddivPKdPdi";
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;

fn source() -> std::path::PathBuf {
    common::kernels_dir().join("rewrite_audit/helpers.cu")
}

/// `adapt.cu`: `k_ddiv` (the same name as in `helpers.cu`) small enough for three variants.
fn adapt_source() -> std::path::PathBuf {
    common::kernels_dir().join("rewrite_audit/adapt.cu")
}

/// `STL`/`LDL` instructions per function of `cubin`'s `cuobjdump -sass`.
fn local_accesses(nvcc: &Path, cubin: &Path, kernel: &str) -> usize {
    let o = Command::new(common::toolkit_tool(nvcc, "cuobjdump"))
        .arg("-sass")
        .arg(cubin)
        .output()
        .unwrap();
    common::assert_ok(&o, "cuobjdump -sass");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut current = String::new();
    let mut n = 0;
    for line in text.lines() {
        if let Some(f) = line.trim().strip_prefix("Function : ") {
            current = f.trim().to_string();
        } else if current == kernel && (line.contains(" STL") || line.contains(" LDL")) {
            n += 1;
        }
    }
    n
}

/// The static shared memory `cuobjdump -res-usage` gives `kernel` in `cubin`.
fn shared_bytes(nvcc: &Path, cubin: &Path, kernel: &str) -> u64 {
    let o = Command::new(common::toolkit_tool(nvcc, "cuobjdump"))
        .arg("-res-usage")
        .arg(cubin)
        .output()
        .unwrap();
    common::assert_ok(&o, "cuobjdump -res-usage");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.trim() == format!("Function {kernel}:") {
            let usage = lines.next().unwrap_or("");
            return usage
                .split_whitespace()
                .find_map(|w| w.strip_prefix("SHARED:")?.parse().ok())
                .unwrap_or_else(|| panic!("no SHARED in {usage}"));
        }
    }
    panic!("{kernel} not in cuobjdump -res-usage")
}

#[test]
fn forced_spill2smem_ships_through_helper_subroutines_sm_90() {
    ships_through_helpers(90);
}

/// sm_75-89 keep the register count in the code section's header too (`sh_info`).
#[test]
fn forced_spill2smem_ships_through_helper_subroutines_sm_86() {
    ships_through_helpers(86);
}

fn ships_through_helpers(sm: u32) {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_audit") else {
        return;
    };
    let arch = format!("-arch=sm_{sm}");
    let dir = tempfile::tempdir().unwrap();
    let (plain, ours) = (
        dir.path().join("plain.cubin"),
        dir.path().join("ours.cubin"),
    );
    let o = Command::new(&nvcc)
        .args(["-cubin", &arch, "-maxrregcount=40"])
        .arg(source())
        .arg("-o")
        .arg(&plain)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc");
    let o = common::without_our_settings(common::orion(), &nvcc)
        .env("NVCC_ORION_VERBOSE", "1")
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .args([
            "--orion-transforms=spill2smem",
            "--orion-force=spill2smem",
            "-maxrregcount=40",
            "-cubin",
            &arch,
        ])
        .arg(source())
        .arg("-o")
        .arg(&ours)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("assembly check") && stderr.contains("tuned cubin written"),
        "the rewrite did not ship:\n{stderr}"
    );
    let (before, after) = (
        local_accesses(&nvcc, &plain, K_SQRT),
        local_accesses(&nvcc, &ours, K_SQRT),
    );
    assert!(before > 0, "ptxas's k_sqrt spills at 40 registers");
    assert_eq!(after, 0, "k_sqrt's spills all moved to shared memory");
    // k_ddiv's spill area does not fit whole: forcing takes its lowest budget with the
    // hottest words moved, so it ships with shared memory ptxas's build has none of.
    assert_eq!(shared_bytes(&nvcc, &plain, K_DDIV), 0);
    assert!(
        shared_bytes(&nvcc, &ours, K_DDIV) > 0,
        "k_ddiv's rewrite shipped"
    );
}

/// ptxas's whole-module cubin at 32 registers, and its proved spill2smem rewrite.
fn rewrite_pair(nvcc: &Path, dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let (base, rewritten) = (dir.join("base.cubin"), dir.join("rewritten.cubin"));
    let o = Command::new(nvcc)
        .args(["-cubin", "-arch=sm_90", "-maxrregcount=32"])
        .arg(source())
        .arg("-o")
        .arg(&base)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc");
    let stderr = spill2smem_rewrite(nvcc, "all", &base, &rewritten);
    for k in [K_SQRT, K_DDIV] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(k) && l.contains("proved (")),
            "{k} rewritten and proved:\n{stderr}"
        );
    }
    (
        std::fs::read(base).unwrap(),
        std::fs::read(rewritten).unwrap(),
    )
}

/// The kernels the check finds disagreeing, each with why.
fn disagreements(tools: &Tools, job: &Job<'_>) -> Vec<(String, Difference)> {
    let (_, found) = audit::check_each(tools, job).unwrap();
    found
        .into_iter()
        .map(|e| match e {
            AuditError::Disagrees { kernel, what } => (kernel, what),
            other => panic!("not a disagreement: {other}"),
        })
        .collect()
}

#[test]
fn a_wrong_rewritten_section_is_refused_for_its_kernel_only() {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_audit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (base, rewritten) = rewrite_pair(&nvcc, dir.path());
    let tools = Tools::in_dir(nvcc.parent().unwrap());
    let job = |shipped: &'_ [u8], proved: Vec<&'static str>| -> Vec<(String, Difference)> {
        let j = Job {
            shipped,
            baseline: &base,
            module: &base,
            origins: Vec::new(),
            proved,
        };
        disagreements(&tools, &j)
    };
    // Control: the proved rewrite against the unrewritten whole module passes.
    assert_eq!(job(&rewritten, vec![K_SQRT, K_DDIV]), Vec::new());
    // Not named as proved, each rewritten kernel is code the check cannot vouch for.
    let unproved: Vec<String> = job(&rewritten, Vec::new())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(
        unproved.contains(&K_SQRT.to_string()) && unproved.contains(&K_DDIV.to_string()),
        "{unproved:?}"
    );
    // The sqrt helper claiming a frame larger than ptxas gave it: k_sqrt alone is refused.
    let helper = Cubin::parse(&rewritten)
        .unwrap()
        .symbols()
        .iter()
        .find(|s| s.name.contains("sqrt_rn_f32_slowpath"))
        .map(|s| s.name.clone())
        .expect("the sqrt helper");
    let mut wrong = rewritten.clone();
    let at = record(&wrong, ".nv.info", EIATTR_FRAME_SIZE, &helper) + 4;
    add_u32(&mut wrong, at, 0x100);
    let found = job(&wrong, vec![K_SQRT, K_DDIV]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, K_SQRT, "{found:?}");
    assert!(
        matches!(&found[0].1, Difference::StackRaised { attribute, .. } if attribute == "EIATTR_FRAME_SIZE"),
        "{found:?}"
    );
    // k_ddiv recording fewer registers than its code (its helpers included) names.
    let mut wrong = rewritten.clone();
    let at = record(&wrong, ".nv.info", EIATTR_REGCOUNT, K_DDIV) + 4;
    add_u32(&mut wrong, at, 16u32.wrapping_neg());
    let found = job(&wrong, vec![K_SQRT, K_DDIV]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, K_DDIV, "{found:?}");
}

/// The file offset and size of section `name`.
fn section(bytes: &[u8], name: &str) -> (usize, usize) {
    let c = Cubin::parse(bytes).unwrap();
    let s = c
        .elf()
        .sections
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no section {name}"));
    (s.sh_offset as usize, s.data.len())
}

/// The file offset of the value of the `.nv.info` record `attr` (EIFMT_SVAL) that names
/// `function`'s symbol first. Read with our own few lines, not the crate's record parser.
fn record(bytes: &[u8], name: &str, attr: u8, function: &str) -> usize {
    let c = Cubin::parse(bytes).unwrap();
    let sym = c.symbols().iter().position(|s| s.name == function).unwrap() as u32;
    let (at, len) = section(bytes, name);
    let mut i = 0;
    while i + 4 <= len {
        let (format, a) = (bytes[at + i], bytes[at + i + 1]);
        let size = u16::from_le_bytes([bytes[at + i + 2], bytes[at + i + 3]]) as usize;
        let value = at + i + 4;
        if format == 4 {
            if a == attr && bytes[value..value + 4] == sym.to_le_bytes() {
                return value;
            }
            i += 4 + size;
        } else {
            i += 4;
        }
    }
    panic!("no attribute {attr:#x} for {function} in {name}")
}

fn add_u32(bytes: &mut [u8], at: usize, delta: u32) {
    let v = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    bytes[at..at + 4].copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
}

/// nvcc's cubin of `src` for sm_90 with `args`, written to `dir/out`.
fn nvcc_cubin(nvcc: &Path, dir: &Path, src: &Path, args: &[&str], out: &str) -> Vec<u8> {
    let path = dir.join(out);
    let o = Command::new(nvcc)
        .args(["-cubin", "-arch=sm_90"])
        .args(args)
        .arg(src)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    common::assert_ok(&o, &format!("nvcc {args:?}"));
    std::fs::read(path).unwrap()
}

/// `function`'s instructions in `cuobjdump -sass` of `file` (its whole code section, the
/// helpers in it included), without the encodings: calls name helpers by offset, so two
/// modules that number the helpers apart list the same code alike.
fn sass_of(nvcc: &Path, file: &Path, function: &str) -> Vec<String> {
    let o = Command::new(common::toolkit_tool(nvcc, "cuobjdump"))
        .arg("-sass")
        .arg(file)
        .output()
        .unwrap();
    common::assert_ok(&o, "cuobjdump -sass");
    let mut current = String::new();
    let mut lines = Vec::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some(f) = line.trim().strip_prefix("Function : ") {
            current = f.trim().to_string();
        } else if current == function && line.trim_start().starts_with("/*") {
            let text = line.split(" /* 0x").next().unwrap_or(line);
            lines.push(text.trim().to_string());
        }
    }
    assert!(!lines.is_empty(), "{function} not in {}", file.display());
    lines
}

/// The names of the helper subroutines in `kernel`'s code section.
fn helpers_of(cubin: &[u8], kernel: &str) -> Vec<String> {
    let c = Cubin::parse(cubin).unwrap();
    let fs = c.functions();
    let section = fs.iter().find(|f| f.name == kernel).unwrap().text_section;
    fs.iter()
        .filter(|f| f.text_section == section && f.name.starts_with("$__internal_"))
        .map(|f| f.name.clone())
        .collect()
}

/// The assembly check matches the compiler's helper subroutines by role, not by ptxas's
/// per-module number, and what proves the match is their code: the whole module's `k_ddiv`
/// against an `--entry` build of it alone (helpers numbered 2 and 3 there, 0 and 1 here)
/// passes; the same at another budget, or with a helper's code changed, is refused for
/// `k_ddiv` only. Before, the first was refused for a symbol one side has.
#[test]
fn helpers_numbered_apart_are_matched_by_role_and_proved_by_their_code() {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_audit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = format!("--entry={K_DDIV}");
    let whole = nvcc_cubin(
        &nvcc,
        d,
        &adapt_source(),
        &["-maxrregcount=40"],
        "whole.cubin",
    );
    let alone = nvcc_cubin(
        &nvcc,
        d,
        &adapt_source(),
        &["-maxrregcount=40", "-Xptxas", &entry],
        "alone.cubin",
    );
    let at_32 = nvcc_cubin(
        &nvcc,
        d,
        &adapt_source(),
        &["-maxrregcount=32", "-Xptxas", &entry],
        "alone32.cubin",
    );
    let (ours, theirs) = (helpers_of(&whole, K_DDIV), helpers_of(&alone, K_DDIV));
    assert_eq!(ours.len(), 2, "{ours:?}");
    assert!(
        ours.iter().all(|h| !theirs.contains(h)),
        "numbered apart: {ours:?} {theirs:?}"
    );
    let tools = Tools::in_dir(nvcc.parent().unwrap());
    let check = |shipped: &[u8], origin: &[u8]| {
        disagreements(
            &tools,
            &Job {
                shipped,
                baseline: &whole,
                module: &whole,
                origins: vec![Origin {
                    shipped: K_DDIV,
                    name: K_DDIV,
                    cubin: origin,
                }],
                proved: Vec::new(),
            },
        )
    };
    assert_eq!(check(&whole, &alone), Vec::new());
    let other_budget = check(&whole, &at_32);
    assert!(
        !other_budget.is_empty() && other_budget.iter().all(|(k, _)| k == K_DDIV),
        "{other_budget:?}"
    );
    // The division helper's first two instructions swapped: matched by role, refused by code.
    let c = Cubin::parse(&whole).unwrap();
    let helper = c
        .functions()
        .into_iter()
        .find(|f| f.name == ours[0])
        .unwrap();
    let at = c.elf().sections[helper.text_section].sh_offset as usize + helper.text_offset as usize;
    let mut wrong = whole.clone();
    assert_ne!(wrong[at..at + 16], wrong[at + 16..at + 32]);
    let (first, second) = wrong[at..at + 32].split_at_mut(16);
    first.swap_with_slice(second);
    let found = check(&wrong, &alone);
    assert!(
        !found.is_empty() && found.iter().all(|(k, _)| k == K_DDIV),
        "{found:?}"
    );
}

/// Under adapt with spill → shared forced at `-maxrregcount=40`, `k_ddiv`, whose helpers
/// the multi-variant module numbers apart from every other build, keeps its variants: none
/// is dropped (the object-size cap may leave some out), ptxas's own build and a rewritten
/// one among them. Each embedded variant is the code of a reference we did not build:
/// ptxas's own at the user's cap is nvcc's whole module at 40; a spill → shared variant at R
/// registers (compiled one register lower, the rewrite's base register bringing it back) is
/// the translation checker's proved rewrite (`nvcc-orion rewrite`) of nvcc's whole module at
/// R - 1. Before, the check dropped every variant (a helper's symbol differed).
#[test]
fn adapt_keeps_the_variants_of_a_kernel_with_helper_subroutines() {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_audit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (obj, report) = (d.join("adapt.o"), d.join("adapt.jsonl"));
    let o = common::without_our_settings(common::orion(), &nvcc)
        .current_dir(d)
        .env("NVCC_ORION", "adapt")
        .env("NVCC_ORION_CACHE", d.join("cache"))
        .env("NVCC_ORION_REPORT", &report)
        .args(["-c", "-arch=sm_90", "-maxrregcount=40"])
        .args(["--orion-transforms=spill2smem", "--orion-force=spill2smem"])
        .arg(adapt_source())
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion (adapt)");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let record: serde_json::Value = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kernel"] == K_DDIV)
        .expect("k_ddiv's record");
    let variants = record["variants"].as_array().expect("variants");
    let dropped: Vec<_> = variants
        .iter()
        .filter(|v| v.get("dropped").is_some() && v.get("left_out").is_none())
        .collect();
    assert!(dropped.is_empty(), "{dropped:#?}");
    let budget = |v: &serde_json::Value| {
        record["candidates"][v["candidate"].as_u64().unwrap() as usize]["budget"].clone()
    };
    let embedded: Vec<(&str, serde_json::Value)> = variants
        .iter()
        .skip(1)
        .filter(|v| v.get("dropped").is_none())
        .map(|v| (v["name"].as_str().unwrap(), budget(v)))
        .collect();
    let rewritten = |b: &serde_json::Value| b["spill2smem"] == true;
    assert!(
        embedded.iter().any(|(_, b)| b.is_null()) && embedded.iter().any(|(_, b)| rewritten(b)),
        "ptxas's own and a rewritten variant embedded: {embedded:?}"
    );
    // The original too: the forced rewrite at its own budget.
    let mut all = vec![(K_DDIV, budget(&variants[0]))];
    all.extend(embedded);
    let mut compared = 0;
    for (name, b) in &all {
        let shipped = sass_of(&nvcc, &obj, name);
        let reference = if b.is_null() {
            nvcc_cubin(
                &nvcc,
                d,
                &adapt_source(),
                &["-maxrregcount=40"],
                "at40.cubin",
            );
            sass_of(&nvcc, &d.join("at40.cubin"), K_DDIV)
        } else if rewritten(b) {
            let regs = b["regs"].as_u64().unwrap();
            let below = format!("-maxrregcount={}", regs - 1);
            let out = format!("below{regs}.cubin");
            nvcc_cubin(&nvcc, d, &adapt_source(), &[&below], &out);
            let proved = d.join(format!("proved{regs}.cubin"));
            let o = common::without_our_settings(common::orion(), &nvcc)
                .args(["rewrite", "--spill-to-shared", "all"])
                .args(["--max-registers", &regs.to_string(), "-o"])
                .arg(&proved)
                .arg(d.join(&out))
                .output()
                .unwrap();
            common::assert_ok(&o, "nvcc-orion rewrite");
            let said = String::from_utf8_lossy(&o.stderr);
            assert!(
                said.lines()
                    .any(|l| l.contains(K_DDIV) && l.contains("proved (")),
                "{said}"
            );
            sass_of(&nvcc, &proved, K_DDIV)
        } else {
            // ptxas's shared-memory spilling (a pragma in the PTX) or a plain lower budget:
            // no rewrite, compared by the multi-variant tests.
            continue;
        };
        assert!(shipped == reference, "{name} ({b}) is not its reference");
        compared += 1;
    }
    assert!(compared >= 3, "{all:?}");
}

/// A rewrite the assembly check refuses in a real build costs its own kernel the rewrite
/// and nothing else. `--orion-test-refuse-rewrite` (testing only) hands the check k_sqrt's
/// rewritten section with a register count below what its code names: the warning names
/// k_sqrt, its code in the shipped cubin is nvcc's own (the whole module at the user's cap),
/// and k_ddiv's forced rewrite ships (its spill area in shared memory, code that is not
/// ptxas's).
#[test]
fn a_rewrite_the_check_refuses_costs_only_its_kernel() {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_audit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    nvcc_cubin(&nvcc, d, &source(), &["-maxrregcount=40"], "plain.cubin");
    let (plain, ours) = (d.join("plain.cubin"), d.join("ours.cubin"));
    let report = d.join("report.jsonl");
    let o = common::without_our_settings(common::orion(), &nvcc)
        .env("NVCC_ORION_CACHE", d.join("cache"))
        .env("NVCC_ORION_REPORT", &report)
        .args(["--orion-transforms=spill2smem", "--orion-force=spill2smem"])
        .arg(format!("--orion-test-refuse-rewrite={K_SQRT}"))
        .args(["-maxrregcount=40", "-cubin", "-arch=sm_90"])
        .arg(source())
        .arg("-o")
        .arg(&ours)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let refused: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("the assembly check refused"))
        .collect();
    assert_eq!(refused.len(), 1, "{stderr}");
    assert!(
        refused[0].contains(&format!("sm_90 {K_SQRT}:"))
            && refused[0].contains("the kernel keeps ptxas's code"),
        "{stderr}"
    );
    assert_eq!(
        sass_of(&nvcc, &ours, K_SQRT),
        sass_of(&nvcc, &plain, K_SQRT)
    );
    assert_ne!(
        sass_of(&nvcc, &ours, K_DDIV),
        sass_of(&nvcc, &plain, K_DDIV)
    );
    assert_eq!(shared_bytes(&nvcc, &plain, K_DDIV), 0);
    assert!(
        shared_bytes(&nvcc, &ours, K_DDIV) > 0,
        "k_ddiv's rewrite shipped"
    );
    let records = std::fs::read_to_string(&report).unwrap();
    let sqrt: serde_json::Value = records
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kernel"] == K_SQRT)
        .unwrap();
    assert_eq!(sqrt["chosen"], 0, "{sqrt}");
    assert!(
        sqrt["reason"]
            .as_str()
            .unwrap()
            .contains("the assembly check refused its rewrite"),
        "{sqrt}"
    );
}

/// `nvcc-orion rewrite --spill2smem KERNELS` of `input` into `output` (block size 128, at most
/// 40 registers), which must succeed: what it printed on stderr.
pub(super) fn spill2smem_rewrite(
    nvcc: &Path,
    kernels: &str,
    input: &Path,
    output: &Path,
) -> String {
    let o = common::without_our_settings(common::orion(), nvcc)
        .args(["rewrite", "--spill2smem", kernels, "--block-size", "128"])
        .args(["--max-registers", "40", "-o"])
        .arg(output)
        .arg(input)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion rewrite");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::path::Path;
use std::process::Command;

use nvcc_orion::audit::{self, AuditError, Difference, Job, Tools};
use nvcc_orion::cubin::Cubin;

const K_SQRT: &str = "_Z6k_sqrtPKfPfi";
const K_DDIV: &str = "_Z6k_ddivPKdPdi";
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;

fn source() -> std::path::PathBuf {
    common::kernels_dir().join("rewrite_audit/helpers.cu")
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
    let o = common::without_our_settings(common::orion(), nvcc)
        .args(["rewrite", "--spill2smem", "all", "--block-size", "128"])
        .args(["--max-registers", "40", "-o"])
        .arg(&rewritten)
        .arg(&base)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion rewrite");
    let stderr = String::from_utf8_lossy(&o.stderr);
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

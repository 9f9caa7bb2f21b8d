//! The measured path (issue 45) on real toolchain output. `tests/kernels/measured/*.cu`:
//! register-heavy kernels with data reuse the static model cannot see (a gather from a
//! table resident in L2, column and 27-point stencils, a banded product re-reading x), a DRAM
//! stream, an issue-bound polynomial and templated instantiations. Each file is built with
//! nvcc, with nvcc-orion's default mode and with `NVCC_ORION=adapt`, for sm_80 and sm_90, and
//! checked with cuobjdump:
//! - of the kernels whose occupancy a lower budget would raise (computed here from the
//!   registers nvcc gives them and the architectures' register file, warp and block limits),
//!   at least 80 % carry an `__orion_v` variant under adapt, the gather kernel among them on
//!   both architectures (before issue 45 the model's DRAM floor pruned every lower budget of
//!   most of them, and adapt embedded nothing);
//! - each original keeps the registers the default mode ships (the static winner), and the
//!   default mode embeds no variant;
//! - the default mode's report says per kernel which assumption kept ptxas's budget
//!   (`kept_by`, `pruned[].limit`) and what a training run would measure, and `explain` says
//!   it in words.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const GATHER: &str = "_Z11gather_rowsPK6float4PKiPS_ii";
const ARCHES: [&str; 2] = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
];

/// The test kernels, in name order.
fn sources() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(common::kernels_dir().join("measured"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    v.sort();
    v
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// nvcc-orion in `dir` in `mode`, reporting to `<out>.jsonl`, with no setting from the
/// caller's environment.
fn orion(nvcc: &Path, dir: &Path, mode: &str, out: &str) -> Command {
    let mut cmd = common::without_our_settings(common::orion(), nvcc);
    cmd.current_dir(dir)
        .env("NVCC_ORION", mode)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env("NVCC_ORION_REPORT", dir.join(format!("{out}.jsonl")))
        .args(["-c", "-O3", "-o", out])
        .args(ARCHES);
    cmd
}

/// Every source built by nvcc (`<stem>_nvcc.fatbin`), the default mode (`<stem>_tune.o`) and
/// adapt (`<stem>_adapt.o`), once per binary, nvcc and sources. nvcc's build is read for its
/// registers alone, so it is a `-fatbin`: the device code an object of it would embed, without
/// cudafe++ and the host compile (issue 50).
fn built() -> Option<&'static PathBuf> {
    static B: OnceLock<Option<PathBuf>> = OnceLock::new();
    B.get_or_init(|| {
        let nvcc = common::nvcc_or_skip("measured_path")?;
        let bin = std::fs::metadata(env!("CARGO_BIN_EXE_nvcc-orion")).unwrap();
        let stamp = format!("{}:{:?}", bin.len(), bin.modified().ok());
        let texts: Vec<Vec<u8>> = sources()
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let mut inputs: Vec<&[u8]> = vec![stamp.as_bytes(), include_bytes!("measured_path.rs")];
        inputs.extend(texts.iter().map(|t| &t[..]));
        Some(common::build_once("measured_path", &nvcc, &inputs, |d| {
            for src in sources() {
                let s = stem(&src);
                let o = Command::new(&nvcc)
                    .current_dir(d)
                    .args(["-fatbin", "-O3", "-o", &format!("{s}_nvcc.fatbin")])
                    .args(ARCHES)
                    .arg(&src)
                    .output()
                    .unwrap();
                common::assert_ok(&o, &format!("nvcc {s}"));
                for mode in ["tune", "adapt"] {
                    let out = format!("{s}_{mode}.o");
                    let o = orion(&nvcc, d, mode, &out).arg(&src).output().unwrap();
                    common::assert_ok(&o, &out);
                }
            }
        }))
    })
    .as_ref()
}

/// `cuobjdump -res-usage` registers per (sm, function) of `obj`.
fn registers(obj: &Path) -> BTreeMap<(u32, String), u32> {
    common::fixtures::res_usage(obj)
        .unwrap()
        .into_iter()
        .map(|u| ((u.arch, u.function), u.reg))
        .collect()
}

/// The report's records of `out`, by (sm, kernel).
fn records(dir: &Path, out: &str) -> BTreeMap<(u32, String), Value> {
    std::fs::read_to_string(dir.join(format!("{out}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kernel"].is_string())
        .map(|r| {
            let sm = r["arch"].as_str().unwrap()["sm_".len()..].parse().unwrap();
            ((sm, r["kernel"].as_str().unwrap().to_string()), r)
        })
        .collect()
}

/// Resident warps per SM of a kernel with `regs` registers per thread at `threads` per
/// block on sm_80 and sm_90 (no shared memory; these kernels use none): 64K registers
/// allocated 256 at a time per warp, 64 warps, 32 blocks (the CUDA occupancy calculator's
/// rules, written out here apart from the tuner's tables).
fn warps(regs: u32, threads: u32) -> u32 {
    let per_warp = (regs * 32).div_ceil(256) * 256;
    let warps_per_block = threads.div_ceil(32);
    let by_regs = (65536 / per_warp) / warps_per_block;
    let blocks = by_regs.min(64 / warps_per_block).min(32);
    blocks * warps_per_block
}

/// Whether some budget at or above 16 registers (the tuner's floor) buys more warps than
/// `regs` at one of the block sizes assumed for a kernel without launch bounds.
fn lower_budget_raises_occupancy(regs: u32) -> bool {
    [128, 256, 512]
        .iter()
        .any(|&t| warps(16, t) > warps(regs, t))
}

#[test]
fn adapt_measures_most_kernels_a_lower_budget_would_speed_up() {
    let Some(dir) = built() else {
        return;
    };
    let mut raisable = BTreeSet::new();
    let mut with_variant = BTreeSet::new();
    for src in sources() {
        let s = stem(&src);
        let nvcc = registers(&dir.join(format!("{s}_nvcc.fatbin")));
        let adapt = registers(&dir.join(format!("{s}_adapt.o")));
        for ((sm, f), regs) in &nvcc {
            if !lower_budget_raises_occupancy(*regs) {
                continue;
            }
            raisable.insert((*sm, f.clone()));
            let prefix = format!("{f}__orion_v");
            if adapt.keys().any(|(a, g)| a == sm && g.starts_with(&prefix)) {
                with_variant.insert((*sm, f.clone()));
            }
        }
    }
    assert!(raisable.len() >= 20, "too few test kernels: {raisable:?}");
    for sm in [80, 90] {
        assert!(
            with_variant.contains(&(sm, GATHER.to_string())),
            "sm_{sm}: the gather kernel carries no variant under adapt"
        );
    }
    let missing: Vec<_> = raisable.difference(&with_variant).collect();
    assert!(
        with_variant.len() * 100 >= raisable.len() * 80,
        "{} of {} kernels carry a variant; without: {missing:?}",
        with_variant.len(),
        raisable.len()
    );
}

#[test]
fn the_originals_ship_what_the_default_mode_ships() {
    let Some(dir) = built() else {
        return;
    };
    for src in sources() {
        let s = stem(&src);
        let tune = registers(&dir.join(format!("{s}_tune.o")));
        let adapt = registers(&dir.join(format!("{s}_adapt.o")));
        assert!(
            tune.keys().all(|(_, f)| !f.contains("__orion_v")),
            "{s}: the default mode embedded variants"
        );
        for (key, regs) in &tune {
            assert_eq!(adapt.get(key), Some(regs), "{s}: {key:?}");
        }
        // The reports agree on every static choice; adapt's extra candidates are marked.
        let (t, a) = (
            records(dir, &format!("{s}_tune.o")),
            records(dir, &format!("{s}_adapt.o")),
        );
        assert_eq!(t.keys().collect::<Vec<_>>(), a.keys().collect::<Vec<_>>());
        for (key, r) in &t {
            assert_eq!(
                r["chosen_registers"], a[key]["chosen_registers"],
                "{s}: {key:?}"
            );
            let chosen = a[key]["chosen"].as_u64().unwrap() as usize;
            assert_ne!(
                a[key]["candidates"][chosen]["measured_only"], true,
                "{s}: {key:?} ships a measured-only candidate"
            );
        }
    }
}

#[test]
fn the_default_report_says_which_assumption_kept_ptxas_budget() {
    let Some(dir) = built() else {
        return;
    };
    let tune = records(dir, "gather_tune.o");
    let adapt = records(dir, "gather_adapt.o");
    for sm in [80, 90] {
        let key = (sm, GATHER.to_string());
        let r = &tune[&key];
        assert_eq!(r["chosen"], 0, "sm_{sm}: {r}");
        // A model assumption decided, not a hardware limit, and training would measure.
        let by = r["kept_by"].as_str().unwrap();
        assert!(
            ["dram-without-reuse", "issue", "latency", "l1", "l2"].contains(&by),
            "sm_{sm}: kept_by {by}"
        );
        let limits: Vec<&str> = r["pruned"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["limit"].as_str().unwrap())
            .collect();
        assert!(limits.contains(&by), "sm_{sm}: {limits:?}");
        let measure: Vec<u64> = r["train_would_measure"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["regs"].as_u64().unwrap())
            .collect();
        assert!(!measure.is_empty() && measure.len() <= 2, "{measure:?}");
        // Those are the budgets adapt built and marked as only measured.
        let a = &adapt[&key];
        let measured: Vec<u64> = a["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["measured_only"] == true)
            .map(|c| c["budget"]["regs"].as_u64().unwrap())
            .collect();
        assert_eq!(measured, measure, "sm_{sm}");
        assert!(a["kept_by"].is_string(), "sm_{sm}");
        assert!(a["train_would_measure"].is_null(), "sm_{sm}");
    }
}

#[test]
fn explain_says_why_nothing_changed_and_what_training_would_measure() {
    let Some(_) = built() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = common::kernels_dir().join("measured/gather.cu");
    let out = common::orion()
        .current_dir(dir.path())
        .args(["explain", src.to_str().unwrap(), "-arch=sm_80"])
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .output()
        .unwrap();
    common::assert_ok(&out, "explain gather.cu");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("why ptxas's budget stays"))
        .unwrap_or_else(|| panic!("no reason line:\n{text}"));
    assert!(line.contains("pruned: "), "{line}");
    assert!(
        line.contains("; a training run (NVCC_ORION=train) would measure "),
        "{line}"
    );
    assert!(text.contains("not built: "), "{text}");
}

/// The object-size cap on variants (docs/selector.md §Ranking), where it binds: a
/// template-heavy file (`bench/build/instances.cu`, 48 instantiations, most of them kernels
/// the model keeps no budget of, so each gets a measured-only variant) for sm_80 and sm_90.
/// Checked with the toolkit against the rule written out here: each architecture's cubin in
/// the adapt object (`cuobjdump -xelf`) is at most 175 % of nvcc's, or the default build's
/// (the tuned originals) plus 64 KiB where that is more; the object is within 2x nvcc's
/// (issue 45's target). The variants the cap left out are reported as such
/// (`left_out: "object-size"`, measured-only ones among them), absent from the cubin while
/// every other listed variant is present, and `explain` says it in words.
#[test]
fn the_object_size_cap_holds_and_says_what_it_left_out() {
    let Some(nvcc) = common::nvcc_or_skip("the_object_size_cap_holds_and_says_what_it_left_out")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/build/instances.cu");
    let o = Command::new(&nvcc)
        .current_dir(d)
        .args(["-c", "-O3", "-o", "nvcc.o"])
        .args(ARCHES)
        .arg(&src)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc instances.cu");
    for mode in ["tune", "adapt"] {
        let out = format!("{mode}.o");
        let o = orion(&nvcc, d, mode, &out).arg(&src).output().unwrap();
        common::assert_ok(&o, &out);
    }
    // Cubin bytes per arch of each object, as cuobjdump extracts them.
    let cubins = |name: &str| -> BTreeMap<u32, u64> {
        common::fixtures::extract_elfs(&d.join(name), &d.join(format!("x-{name}")))
            .unwrap()
            .into_iter()
            .map(|p| {
                let arch = common::fixtures::elf_arch(&p).unwrap();
                (arch, std::fs::metadata(&p).unwrap().len())
            })
            .collect()
    };
    let (own, tuned, adapt) = (cubins("nvcc.o"), cubins("tune.o"), cubins("adapt.o"));
    assert_eq!(own.keys().collect::<Vec<_>>(), [&80, &90]);
    for (sm, bytes) in &adapt {
        let cap = (own[sm] * 175 / 100).max(tuned[sm] + 64 * 1024);
        assert!(
            *bytes <= cap,
            "sm_{sm}: {bytes} B shipped, the cap is {cap} B (nvcc {} B, tuned {} B)",
            own[sm],
            tuned[sm]
        );
    }
    let size = |name: &str| std::fs::metadata(d.join(name)).unwrap().len();
    assert!(
        size("adapt.o") <= 2 * size("nvcc.o"),
        "adapt object {} B, nvcc's {} B",
        size("adapt.o"),
        size("nvcc.o")
    );
    // What the cap left out: reported, typed, and not in the cubin; the rest is.
    let shipped = registers(&d.join("adapt.o"));
    let mut left_out = 0;
    let mut measured_left_out = 0;
    for ((sm, kernel), r) in records(d, "adapt.o") {
        for v in r["variants"].as_array().into_iter().flatten().skip(1) {
            let name = v["name"].as_str().unwrap();
            let present = shipped.contains_key(&(sm, name.to_string()));
            if v["left_out"] == "object-size" {
                left_out += 1;
                let candidate = v["candidate"].as_u64().unwrap() as usize;
                if r["candidates"][candidate]["measured_only"] == true {
                    measured_left_out += 1;
                }
                assert!(!present, "sm_{sm} {kernel}: {name} left out but shipped");
                let why = v["dropped"].as_str().unwrap();
                assert!(why.starts_with("left out by the object-size cap"), "{why}");
            } else if v["dropped"].is_null() {
                assert!(present, "sm_{sm} {kernel}: {name} listed but not shipped");
            }
        }
    }
    assert!(
        left_out > 0 && measured_left_out > 0,
        "the cap left out {left_out} variants ({measured_left_out} measured-only)"
    );
    let out = common::orion()
        .current_dir(d)
        .args(["explain", "adapt.o.jsonl"])
        .output()
        .unwrap();
    common::assert_ok(&out, "explain adapt.o.jsonl");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches("left out by the object-size cap").count(),
        left_out,
        "{text}"
    );
}

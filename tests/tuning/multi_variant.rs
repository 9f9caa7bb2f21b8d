//! Multi-variant code (issue 21, docs/selector.md §Variant names) on real toolchain output.
//! Under `NVCC_ORION=adapt`, each tuned kernel's ranked candidates ship as extra entry
//! functions `<kernel>__orion_v<k>` in the same cubin, per arch. The test compiles
//! `examples/kernels/walk.cu` (sm_90 and sm_120, and `-rdc` on sm_90) and
//! `tests/kernels/multi/two.cu` (two kernels, one under `__launch_bounds__`, with the
//! spill2smem rewrite offered on sm_90) through `nvcc-orion -c`. It checks, with
//! cuobjdump, the following:
//! - every variant the report lists is in the object, with exactly its registers;
//! - the original holds the static winner, with the registers and code of a plain
//!   `NVCC_ORION=tune` build, which has no `__orion_v` entry;
//! - two adapt builds are byte-identical;
//! - a rewrite-made variant is embedded, proved, and keeps its kernel's launch bounds;
//! - a rewritten original stays as plain tune ships it, and five variants at most ship;
//! - a step with `--entry` gets no variants, and a name the module already uses leaves
//!   plain tune's cubin with one warning;
//! - an original with no variant of its own that the multi-variant build compiled apart
//!   (`--orion-test-perturb-original`, testing only) ships plain tune's code with one
//!   warning, and the other kernel keeps its variants; where plain tune's copy cannot be
//!   taken in (`-lineinfo`), plain tune's cubin ships with one warning naming the kernel;
//!   likewise for an original that differs only where the assembly check looks (an
//!   attribute: `--orion-test-perturb-original=KERNEL:check`);
//! - `-cubin` and `-fatbin` outputs under adapt and train, which no glue can reach, ship the
//!   tuned winners alone, as a default build does.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const WALK: &str = "_Z13walk_featuresPKiPKfPfii";
const BOUNDED: &str = "_Z10mv_boundedPKfPfi";
const WALK_ARCHES: [&str; 2] = [
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_120,code=sm_120",
];

fn two_cu() -> PathBuf {
    common::kernels_dir().join("multi/two.cu")
}

/// nvcc-orion in `dir`, with the test's nvcc, `mode`, a report `<out>.jsonl` and the variant
/// cache `cache`, and no setting from the caller's environment.
fn orion(nvcc: &Path, dir: &Path, mode: &str, out: &str, cache: &str) -> Command {
    let mut cmd = common::without_our_settings(common::orion(), nvcc);
    cmd.current_dir(dir);
    cmd.env("NVCC_ORION", mode)
        .env("NVCC_ORION_CACHE", dir.join(cache))
        .env("NVCC_ORION_REPORT", dir.join(format!("{out}.jsonl")))
        .args(["-c", "-o", out]);
    cmd
}

/// The builds every test reads, made once per source, binary and nvcc (across the test
/// processes of a run).
fn built() -> Option<&'static PathBuf> {
    static B: OnceLock<Option<PathBuf>> = OnceLock::new();
    B.get_or_init(|| {
        let nvcc = common::nvcc_or_skip("multi_variant")?;
        let bin = std::fs::metadata(env!("CARGO_BIN_EXE_nvcc-orion")).unwrap();
        let stamp = format!("{}:{:?}", bin.len(), bin.modified().ok());
        let walk = std::fs::read(common::example("walk.cu")).unwrap();
        let two = std::fs::read(two_cu()).unwrap();
        let taken = std::fs::read(common::kernels_dir().join("multi/taken.cu")).unwrap();
        Some(common::build_once(
            "multi_variant",
            &nvcc,
            // This file too: the builds are made here.
            &[
                stamp.as_bytes(),
                &walk,
                &two,
                &taken,
                include_bytes!("multi_variant.rs"),
            ],
            |d| {
                // Two chains at a time (issue 50): every test of this file waits for these
                // builds, so under nextest another of them holds the second core idle
                // meanwhile. The chains share no source, so no cached variant of one is the
                // other's; within a chain the order (and so each build's cache hits) is as
                // before.
                std::thread::scope(|s| {
                    s.spawn(|| walk_builds(&nvcc, d));
                    s.spawn(|| two_builds(&nvcc, d));
                });
            },
        ))
    })
    .as_ref()
}

/// Runs `c` (the build of `what`), keeping its stderr as `<what>.stderr` in `d`.
fn run_build(d: &Path, mut c: Command, what: &str) {
    let o = c.output().unwrap();
    common::assert_ok(&o, what);
    std::fs::write(d.join(format!("{what}.stderr")), &o.stderr).unwrap();
}

/// The builds of `examples/kernels/walk.cu` and `tests/kernels/multi/taken.cu`, in order.
fn walk_builds(nvcc: &Path, d: &Path) {
    let walk = common::example("walk.cu");
    for (mode, out, cache) in [
        ("tune", "walk_tune.o", "cache_a"),
        ("adapt", "walk_adapt.o", "cache_a"),
        // Its own cache: the second build runs ptxas again.
        ("adapt", "walk_adapt2.o", "cache_b"),
    ] {
        let mut c = orion(nvcc, d, mode, out, cache);
        c.args(WALK_ARCHES).args(["-Xptxas", "-v"]).arg(&walk);
        run_build(d, c, out);
    }
    let mut c = orion(nvcc, d, "train", "walk_rdc.o", "cache_a");
    c.args(["-rdc=true", "-arch=sm_90"]).arg(&walk);
    run_build(d, c, "walk_rdc.o");
    let mut c = orion(nvcc, d, "adapt", "walk_entry.o", "cache_a");
    c.env("NVCC_ORION_VERBOSE", "1")
        .args(["-arch=sm_90", "-Xptxas", &format!("--entry={WALK}")])
        .arg(&walk);
    run_build(d, c, "walk_entry.o");
    let mut c = orion(nvcc, d, "adapt", "taken.o", "cache_a");
    c.arg("-arch=sm_90")
        .arg(common::kernels_dir().join("multi/taken.cu"));
    run_build(d, c, "taken.o");
}

/// The builds of `tests/kernels/multi/two.cu`, in order.
fn two_builds(nvcc: &Path, d: &Path) {
    for (mode, out) in [("tune", "two_tune.o"), ("adapt", "two_adapt.o")] {
        let mut c = orion(nvcc, d, mode, out, "cache_a");
        c.args(["-arch=sm_90", "--orion-transforms=spill2smem"])
            .arg(two_cu());
        run_build(d, c, out);
    }
    // mv_bounded, which has no variant of its own, differing in the multi-variant build (the
    // testing-only hook).
    let mut c = orion(nvcc, d, "adapt", "perturbed.o", "cache_a");
    c.args(["-arch=sm_90", "--orion-transforms=spill2smem"])
        .arg(format!("--orion-test-perturb-original={BOUNDED}"))
        .arg(two_cu());
    run_build(d, c, "perturbed.o");
    // mv_bounded differing only where the assembly check looks (an attribute of its .nv.info
    // section), not in its code or resources.
    let mut c = orion(nvcc, d, "adapt", "perturbed_check.o", "cache_a");
    c.args(["-arch=sm_90", "--orion-transforms=spill2smem"])
        .arg(format!("--orion-test-perturb-original={BOUNDED}:check"))
        .arg(two_cu());
    run_build(d, c, "perturbed_check.o");
    // The same where the splice refuses: -lineinfo's line program.
    let mut c = orion(nvcc, d, "adapt", "perturbed_lines.o", "cache_a");
    c.args(["-arch=sm_90", "-lineinfo"])
        .arg(format!("--orion-test-perturb-original={BOUNDED}"))
        .arg(two_cu());
    run_build(d, c, "perturbed_lines.o");
    // The rewrite forced on the originals: every budget is built, none pruned.
    for (mode, out) in [("tune", "forced_tune.o"), ("adapt", "forced_adapt.o")] {
        let mut c = orion(nvcc, d, mode, out, "cache_a");
        c.args([
            "-arch=sm_90",
            "--orion-force=spill2smem",
            "--orion-block-size=256",
        ])
        .arg(two_cu());
        run_build(d, c, out);
    }
}

/// The report's records of `out`.
fn records(dir: &Path, out: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(format!("{out}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `cuobjdump -res-usage` registers per (sm, function).
fn registers(obj: &Path) -> BTreeMap<(u32, String), u32> {
    common::fixtures::res_usage(obj)
        .unwrap()
        .into_iter()
        .map(|u| ((u.arch, u.function), u.reg))
        .collect()
}

/// `cuobjdump -sass` per (sm, function): the instruction lines.
fn sass(obj: &Path) -> BTreeMap<(u32, String), Vec<String>> {
    let text = common::fixtures::cuobjdump(&["-sass"], obj).unwrap();
    let mut out: BTreeMap<(u32, String), Vec<String>> = BTreeMap::new();
    let (mut arch, mut function) = (0, None::<String>);
    for line in text.lines() {
        if let Some(a) = line.split("arch = sm_").nth(1) {
            arch = a.trim().parse().unwrap();
        } else if let Some(f) = line.trim().strip_prefix("Function : ") {
            function = Some(f.to_string());
        } else if let Some(f) = &function
            && line.contains("/*0")
        {
            out.entry((arch, f.clone()))
                .or_default()
                // cuobjdump pads its columns to the longest line of the listing.
                .push(line.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    out
}

/// Each function's code per (sm, function) in the cubins of `obj` (a cubin, or an object or
/// fatbin whose cubins `cuobjdump -xelf all` extracts): the bytes of its `.text.<name>`
/// section, then its relocations, each part led by its length.
///
/// What `cuobjdump -sass` lists of a function, read without the disassembler (issue 50: 22
/// `-sass` runs here, about 14 s of CPU): every listing line is one 16-byte instruction of the
/// section, its encoding printed beside it, and the only other input to the listing is the
/// relocations, whose targets it names. Equal bytes and relocations give equal listings; the
/// bytes also hold each instruction's control half, which the listing's first line leaves out.
fn code(obj: &Path) -> BTreeMap<(u32, String), Vec<u8>> {
    let scratch = tempfile::tempdir().unwrap();
    common::fixtures::code::code_by_function(obj, scratch.path())
}

/// The arch number of a record (`sm_90` → 90).
fn sm(record: &Value) -> u32 {
    record["arch"].as_str().unwrap()[3..].parse().unwrap()
}

/// Every variant a record lists is in the object under its name with exactly the registers
/// the report gives, which are its candidate's, or is absent and says the object-size cap
/// left it out (docs/selector.md §Ranking); variant k is ranked candidate k. Returns how
/// many variants beyond the originals the object has.
fn check_listed(obj: &Path, recs: &[Value]) -> usize {
    let regs = registers(obj);
    let mut extra = 0;
    let mut left_out = 0;
    for r in recs {
        let Some(vs) = r["variants"].as_array() else {
            continue;
        };
        let kernel = r["kernel"].as_str().unwrap();
        assert_eq!(vs[0]["name"], r["kernel"], "{r}");
        assert_eq!(vs[0]["candidate"], r["chosen"], "{r}");
        for (k, v) in vs.iter().enumerate() {
            assert_eq!(v["variant"], k, "{r}");
            let name = v["name"].as_str().unwrap();
            if k > 0 {
                assert_eq!(name, format!("{kernel}__orion_v{k}"));
            }
            if v["left_out"] == "object-size" {
                assert!(!regs.contains_key(&(sm(r), name.to_string())), "{v}");
                left_out += 1;
                continue;
            }
            assert!(v.get("dropped").is_none(), "{v}");
            assert!(v["same_code"].is_boolean(), "{v}");
            let candidate = &r["candidates"][v["candidate"].as_u64().unwrap() as usize];
            assert_eq!(v["registers"], candidate["registers"], "{r}");
            assert_eq!(v["frame_bytes"], candidate["frame_bytes"], "{r}");
            assert_eq!(
                regs.get(&(sm(r), name.to_string())),
                v["registers"].as_u64().map(|n| n as u32).as_ref(),
                "{name} on {} in {}",
                r["arch"],
                obj.display()
            );
            extra += usize::from(k > 0);
        }
        // Five at most, and each candidate once.
        assert!(vs.len() <= 5, "{r}");
        let mut c: Vec<u64> = vs
            .iter()
            .map(|v| v["candidate"].as_u64().unwrap())
            .collect();
        c.sort_unstable();
        c.dedup();
        assert_eq!(c.len(), vs.len(), "{r}");
    }
    // No variant the report does not list.
    let listed: usize = recs
        .iter()
        .filter_map(|r| r["variants"].as_array())
        .map(|v| v.len() - 1)
        .sum();
    let present = regs.keys().filter(|(_, f)| f.contains("__orion_v")).count();
    assert_eq!(present, listed - left_out, "{regs:?}");
    extra
}

/// The originals of `adapt` are those of `tune`: the same registers and the same code (the
/// bytes `cuobjdump -sass` lists, [`code`]).
fn same_originals(tune: &Path, adapt: &Path) {
    let (rt, ra) = (registers(tune), registers(adapt));
    let (ct, ca) = (code(tune), code(adapt));
    assert!(!rt.is_empty() && !ct.is_empty());
    for (key, n) in &rt {
        assert_eq!(ra.get(key), Some(n), "{key:?}");
    }
    for (key, want) in &ct {
        let got = ca.get(key).unwrap_or_else(|| panic!("{key:?} missing"));
        let first = want.iter().zip(got).position(|(a, b)| a != b);
        assert!(
            first.is_none() && want.len() == got.len(),
            "{key:?}: the code differs ({} vs {} bytes with the relocations), first at byte \
             {first:?} (instruction {:?})",
            want.len(),
            got.len(),
            first.map(|b| b.saturating_sub(8) / 16)
        );
    }
    assert!(
        rt.keys().all(|(_, f)| !f.contains("__orion_v")),
        "a plain tune build has variants: {rt:?}"
    );
}

#[test]
fn walk_ships_its_ranked_variants_beside_the_static_winner() {
    let Some(d) = built() else { return };
    let recs = records(d, "walk_adapt.o");
    let extra = check_listed(&d.join("walk_adapt.o"), &recs);
    assert!(extra >= 2, "{recs:?}");
    same_originals(&d.join("walk_tune.o"), &d.join("walk_adapt.o"));
    // docs/selector.md §Ranking: on sm_90, v0 = 40 registers (the static winner: 40 and 32
    // tie at the DRAM ceiling, and the higher budget wins a tie), v1 = 32, v2 = 64 (ptxas's
    // own). 32 with ptxas's shared-memory spilling has an occupancy of its own but is
    // predicted 145 % slower at 128 threads, outside the band. 56, which the model's bound
    // prunes, is not built under adapt either: the kernel has budgets the model keeps, so it
    // is measured already (issue 45 builds pruned budgets only where nothing else would be).
    let r90 = recs
        .iter()
        .find(|r| r["arch"] == "sm_90" && r["kernel"] == WALK)
        .unwrap();
    let shape: Vec<(u64, bool)> = r90["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let c = &r90["candidates"][v["candidate"].as_u64().unwrap() as usize];
            (
                v["registers"].as_u64().unwrap(),
                c["budget"]["smem_spill"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(shape, [(40, false), (32, false), (64, false)], "{r90}");
    assert_eq!(r90["variants"][2]["candidate"], 0, "ptxas's own");
    let pruned: Vec<(u64, &str)> = r90["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["budget"]["regs"].as_u64().unwrap(),
                p["limit"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(pruned, [(56, "build-cost")], "{r90}");
    // Each variant was added to the tuned cubin from the cubin it was evaluated in, with no
    // ptxas run (`cubin::entry`; `check_listed` above read each entry's registers back with
    // cuobjdump, and the assembly check passed it).
    assert_eq!(r90["assembly"], "variants-added", "{r90}");
    // On sm_120 the model prunes every lower budget (DRAM-bound at ptxas's occupancy); adapt
    // builds those that buy warps to measure them, and embeds them where they were built.
    let r120 = recs.iter().find(|r| r["arch"] == "sm_120").unwrap();
    assert!(
        r120["candidates"].as_array().unwrap().len() > 1 || r120.get("variants").is_none(),
        "{r120}"
    );
    // ptxas's report (`-Xptxas -v`) is the plain tune build's: the variants' run is not shown.
    let ptxas_v = |out: &str| -> Vec<String> {
        std::fs::read_to_string(d.join(format!("{out}.stderr")))
            .unwrap()
            .lines()
            .filter(|l| !l.contains("Compile time"))
            .map(str::to_string)
            .collect()
    };
    let tuned = ptxas_v("walk_tune.o");
    assert!(
        tuned.iter().any(|l| l.contains("Used 40 registers")),
        "{tuned:#?}"
    );
    assert!(!tuned.iter().any(|l| l.contains("__orion_v")), "{tuned:#?}");
    assert_eq!(tuned, ptxas_v("walk_adapt.o"));
    // A plain tune build's report lists no variants.
    assert!(
        records(d, "walk_tune.o")
            .iter()
            .all(|r| r.get("variants").is_none())
    );
}

#[test]
fn two_adapt_builds_are_byte_identical() {
    let Some(d) = built() else { return };
    let a = std::fs::read(d.join("walk_adapt.o")).unwrap();
    let b = std::fs::read(d.join("walk_adapt2.o")).unwrap();
    assert!(common::mask_tmpxft(&a) == common::mask_tmpxft(&b));
    let strip = |out: &str| -> Vec<Value> {
        records(d, out)
            .into_iter()
            .map(|mut r| {
                r["output"] = Value::Null;
                r
            })
            .collect()
    };
    assert_eq!(strip("walk_adapt.o"), strip("walk_adapt2.o"));
}

#[test]
fn relocatable_train_build_embeds_variants() {
    let Some(d) = built() else { return };
    let recs = records(d, "walk_rdc.o");
    assert!(check_listed(&d.join("walk_rdc.o"), &recs) >= 1, "{recs:?}");
    // Relocatable code is nvlink's to lay out: its variants come from one more ptxas run.
    assert!(
        recs.iter()
            .filter(|r| r.get("variants").is_some())
            .all(|r| r["assembly"] == "multi-variant"),
        "{recs:?}"
    );
}

/// A proved rewrite ships in the multi-variant cubin, and every copy of its kernel keeps
/// `__launch_bounds__`. In the default ranking `mv_bounded`'s candidates all have ptxas's
/// occupancy (its 32 registers already give 64 warps), so none is a real alternative and it
/// gets no variants; forced, the rewrite is variant 0 and ptxas's own build variant 1.
#[test]
fn a_proved_rewrite_ships_as_a_variant_with_its_launch_bounds() {
    let Some(d) = built() else { return };
    let recs = records(d, "two_adapt.o");
    check_listed(&d.join("two_adapt.o"), &recs);
    same_originals(&d.join("two_tune.o"), &d.join("two_adapt.o"));
    let r = recs.iter().find(|r| r["kernel"] == BOUNDED).unwrap();
    assert!(r["transform"].as_str().unwrap().contains("proved"), "{r}");
    let candidates = r["candidates"].as_array().unwrap();
    assert!(
        candidates.len() > 1
            && candidates
                .iter()
                .all(|c| c["warps_per_sm"] == candidates[0]["warps_per_sm"]),
        "{r}"
    );
    assert!(
        r.get("variants").is_none(),
        "one occupancy, no variants: {r}"
    );

    let obj = d.join("forced_adapt.o");
    let recs = records(d, "forced_adapt.o");
    let r = recs.iter().find(|r| r["kernel"] == BOUNDED).unwrap();
    let variants = r["variants"].as_array().unwrap();
    let rewritten = variants
        .iter()
        .find(|v| {
            r["candidates"][v["candidate"].as_u64().unwrap() as usize]["budget"]["spill2smem"]
                == true
        })
        .unwrap_or_else(|| panic!("no spill2smem variant: {r}"));
    assert_eq!(rewritten["frame_bytes"], 0, "{r}");
    assert!(
        variants.iter().any(|v| v["candidate"] == 0),
        "ptxas's own build is embedded: {r}"
    );
    // Its spills are in shared memory: no local access left, shared ones added.
    let name = rewritten["name"].as_str().unwrap();
    let code = &sass(&obj)[&(90, name.to_string())];
    let has = |op: &str| code.iter().any(|l| l.contains(op));
    assert!(
        !has("STL") && !has("LDL") && has("STS") && has("LDS"),
        "{code:#?}"
    );
    // Every copy of the kernel keeps `__launch_bounds__(256, 8)`: EIATTR_MAX_THREADS.
    let elf = common::fixtures::cuobjdump(&["-elf"], &obj).unwrap();
    let bounds: BTreeMap<&str, bool> = elf
        .split("\n.nv.info.")
        .skip(1)
        .filter_map(|s| {
            let (f, rest) = s.split_once('\n')?;
            let max = rest
                .split("EIATTR_MAX_THREADS")
                .nth(1)
                .and_then(|t| t.lines().find(|l| l.contains("Value:")))
                .is_some_and(|l| l.contains("0x100 0x1 0x1"));
            Some((f.trim(), max))
        })
        .collect();
    let copies: Vec<_> = bounds
        .iter()
        .filter(|(f, _)| f.starts_with(BOUNDED))
        .collect();
    assert!(copies.len() >= 2, "{bounds:?}");
    assert_eq!(copies.len(), variants.len(), "{bounds:?}");
    assert!(copies.iter().all(|(_, m)| **m), "{bounds:?}");
}

#[test]
fn a_step_that_selects_its_entries_gets_no_variants() {
    let Some(d) = built() else { return };
    let stderr = std::fs::read_to_string(d.join("walk_entry.o.stderr")).unwrap();
    assert!(
        stderr.contains("sm_90: no variants embedded: the step selects its entries"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let regs = registers(&d.join("walk_entry.o"));
    assert!(regs.contains_key(&(90, WALK.to_string())), "{regs:?}");
    assert!(
        regs.keys().all(|(_, f)| !f.contains("__orion_v")),
        "{regs:?}"
    );
}

/// `taken.cu` already has a kernel named `hops__orion_v1`: the build succeeds with plain
/// tune's choice for `hops`, the user's own `hops__orion_v1`, and one warning line.
#[test]
fn a_taken_variant_name_leaves_plain_tune_with_one_warning() {
    let Some(d) = built() else { return };
    let warnings = warnings_of(d, "taken.o");
    assert_eq!(
        warnings,
        [
            "nvcc-orion: warning: sm_90: variants not embedded (the module already has a kernel \
          named hops__orion_v1); the tuned kernels ship alone"
        ]
    );
    let recs = records(d, "taken.o");
    let hops = recs.iter().find(|r| r["kernel"] == "hops").unwrap();
    assert!(hops["candidates"].as_array().unwrap().len() > 1, "{hops}");
    assert!(hops.get("variants").is_none(), "{hops}");
    let regs = registers(&d.join("taken.o"));
    let users = recs
        .iter()
        .find(|r| r["kernel"] == "hops__orion_v1")
        .unwrap();
    assert_eq!(
        regs.keys().map(|(_, f)| f.as_str()).collect::<Vec<_>>(),
        ["hops", "hops__orion_v1"]
    );
    assert_eq!(
        u64::from(regs[&(90, "hops".to_string())]),
        hops["chosen_registers"].as_u64().unwrap()
    );
    assert_eq!(
        u64::from(regs[&(90, "hops__orion_v1".to_string())]),
        users["chosen_registers"].as_u64().unwrap()
    );
}

/// An original kernel with no variant of its own whose copy in the multi-variant build differs
/// from what plain tune ships (`--orion-test-perturb-original`, testing only: its first
/// instruction changed before the checks) costs at most itself: the build succeeds with one
/// warning naming it, the object ships its code exactly as the default (tune) build does
/// (the code and `cuobjdump -res-usage` registers of the object plain tune made), and the
/// other kernel's variants are all embedded, as in the unperturbed adapt build. Before, the
/// embedding failed as a whole and every variant of the architecture was lost.
#[test]
fn a_differing_original_without_variants_costs_only_itself() {
    let Some(d) = built() else { return };
    let obj = d.join("perturbed.o");
    let warnings = warnings_of(d, "perturbed.o");
    assert_eq!(
        warnings,
        [format!(
            "nvcc-orion: warning: sm_90: kernel {BOUNDED} differs in the multi-variant build \
             (its code differs); it ships plain tune's code, taken into the multi-variant \
             cubin, and the other kernels keep their variants"
        )]
    );
    let recs = records(d, "perturbed.o");
    let bounded = recs.iter().find(|r| r["kernel"] == BOUNDED).unwrap();
    assert!(
        bounded.get("variants").is_none(),
        "no variant of its own: {bounded}"
    );
    // Its shipped code (and every other original's) is the default build's.
    same_originals(&d.join("two_tune.o"), &obj);
    // The other kernel keeps every variant, as where nothing differs.
    let extra = check_listed(&obj, &recs);
    assert!(extra >= 1, "{recs:?}");
    assert_eq!(
        variant_entries(&obj),
        variant_entries(&d.join("two_adapt.o"))
    );
    assert!(
        variant_entries(&obj)
            .iter()
            .all(|f| !f.starts_with(BOUNDED))
    );
}

/// The warning lines the build of `out` printed (its `.stderr` beside it in `dir`).
fn warnings_of(dir: &Path, out: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("{out}.stderr")))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("nvcc-orion: warning:"))
        .map(str::to_string)
        .collect()
}

/// The variant entries (`<kernel>__orion_v<k>`) of `obj`'s cubins.
fn variant_entries(obj: &Path) -> Vec<String> {
    registers(obj)
        .into_keys()
        .map(|(_, f)| f)
        .filter(|f| f.contains("__orion_v"))
        .collect()
}

/// The `.nv.info.<kernel>` section of `obj`'s sm_90 cubin as `cuobjdump -elf` prints it: its
/// attribute records, up to the next section, but for `EIATTR_PARAM_CBANK`'s first word: the
/// index of the parameter bank's section symbol, which the variants' added symbols shift.
fn info_section(obj: &Path, kernel: &str) -> String {
    let elf = common::fixtures::cuobjdump(&["-elf"], obj).unwrap();
    // At a line's start: the section table's rows end with the name too.
    let head = format!("\n.nv.info.{kernel}\n");
    let Some((_, rest)) = elf.split_once(&head) else {
        panic!("no {head:?} in {elf}")
    };
    let mut bank = false;
    let mut out = Vec::new();
    for l in rest.lines().take_while(|l| !l.starts_with('.')) {
        if l.contains("Attribute:") {
            bank = l.contains("EIATTR_PARAM_CBANK");
        }
        match l.trim().strip_prefix("Value:") {
            Some(v) if bank => {
                let words: Vec<&str> = v.split_whitespace().skip(1).collect();
                out.push(format!("\tValue:\t(symbol) {}", words.join(" ")));
            }
            _ => out.push(l.to_string()),
        }
    }
    out.join("\n")
}

/// An original with no variant of its own that differs from plain tune's only where the
/// assembly check looks (`--orion-test-perturb-original=KERNEL:check`, testing only: one
/// bit of a `.nv.info.<kernel>` value that the emitter's own comparison of code and
/// resources does not read) costs at most itself, as one whose code differs does: one
/// warning names it and the check's finding, its code, registers and attributes are the
/// default (tune) build's, and the other kernel keeps every variant. Before, the assembly
/// check's disagreement failed the embedding as a whole ("variants not embedded
/// (mv_bounded...: ...)") and every variant of the architecture was lost.
#[test]
fn an_original_only_the_assembly_check_finds_different_costs_only_itself() {
    let Some(d) = built() else { return };
    let obj = d.join("perturbed_check.o");
    let warnings = warnings_of(d, "perturbed_check.o");
    let head = format!(
        "nvcc-orion: warning: sm_90: kernel {BOUNDED} differs in the multi-variant build \
         (assembly check: "
    );
    let tail = "); it ships plain tune's code, taken into the multi-variant cubin, and the \
                other kernels keep their variants";
    assert!(
        warnings.len() == 1 && warnings[0].starts_with(&head) && warnings[0].ends_with(tail),
        "{warnings:#?}"
    );
    // The check's finding is the perturbed attribute, not the code.
    assert!(
        warnings[0].contains("EIATTR_MAXREG_COUNT"),
        "{}",
        warnings[0]
    );
    let recs = records(d, "perturbed_check.o");
    let bounded = recs.iter().find(|r| r["kernel"] == BOUNDED).unwrap();
    assert!(bounded.get("variants").is_none(), "{bounded}");
    // Its shipped code, registers and attributes are the default build's.
    let tune = d.join("two_tune.o");
    same_originals(&tune, &obj);
    let info = info_section(&obj, BOUNDED);
    assert!(info.contains("EIATTR_"), "{info}");
    assert_eq!(info, info_section(&tune, BOUNDED));
    // The other kernel keeps every variant, as where nothing differs.
    let extra = check_listed(&obj, &recs);
    assert!(extra >= 1, "{recs:?}");
    assert_eq!(
        variant_entries(&obj),
        variant_entries(&d.join("two_adapt.o"))
    );
}

/// The same differing original where plain tune's copy cannot be spliced in (`-lineinfo`: the
/// module's line program describes ptxas's code by address): the step ships plain tune's
/// cubin, and its one warning about the variants names the kernel and why.
#[test]
fn a_differing_original_that_cannot_take_plain_tunes_copy_is_named() {
    let Some(d) = built() else { return };
    let stderr = std::fs::read_to_string(d.join("perturbed_lines.o.stderr")).unwrap();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("nvcc-orion: warning: sm_90:"))
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "nvcc-orion: warning: sm_90: variants not embedded (original kernel {BOUNDED} \
             differs from what plain tune ships: its code differs; plain tune's copy could not \
             be taken in: .debug_line: debug information would not describe the new code); \
             the tuned kernels ship alone"
        )]
    );
    let regs = registers(&d.join("perturbed_lines.o"));
    assert!(regs.contains_key(&(90, BOUNDED.to_string())), "{regs:?}");
    assert!(
        regs.keys().all(|(_, f)| !f.contains("__orion_v")),
        "{regs:?}"
    );
    let recs = records(d, "perturbed_lines.o");
    assert!(recs.iter().all(|r| r.get("variants").is_none()), "{recs:?}");
}

/// With the spill2smem rewrite forced, the original name holds the rewritten kernel as
/// plain tune ships it, its variants are ptxas's builds, and a kernel with six candidates
/// embeds five.
#[test]
fn a_rewritten_original_and_five_variants_at_most() {
    let Some(d) = built() else { return };
    let obj = d.join("forced_adapt.o");
    let recs = records(d, "forced_adapt.o");
    check_listed(&obj, &recs);
    same_originals(&d.join("forced_tune.o"), &obj);
    let bounded = recs.iter().find(|r| r["kernel"] == BOUNDED).unwrap();
    let chosen = &bounded["candidates"][bounded["chosen"].as_u64().unwrap() as usize];
    assert_eq!(chosen["budget"]["spill2smem"], true, "{bounded}");
    assert_eq!(bounded["variants"][0]["frame_bytes"], 0, "{bounded}");
    let pressure = recs
        .iter()
        .find(|r| r["kernel"] == "_Z11mv_pressurePKfPfi")
        .unwrap();
    assert!(
        pressure["candidates"].as_array().unwrap().len() > 5,
        "{pressure}"
    );
    assert_eq!(
        pressure["variants"].as_array().unwrap().len(),
        5,
        "{pressure}"
    );
}

/// Under adapt and train, a `-cubin` or `-fatbin` output has no host object for the selector's
/// glue, so nothing could ever launch a variant (docs/selector.md §How the driver wires it
/// in): it ships the tuned winners alone, as a default build does. cuobjdump shows the same
/// kernels with the same registers and code as the default build's, no `__orion_v` entry,
/// and the tuned budget (not ptxas's); each record says why there is no selector, and nothing
/// is printed.
#[test]
fn device_only_outputs_ship_no_variants() {
    let Some(nvcc) = common::nvcc_or_skip("device_only_outputs_ship_no_variants") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let build = |mode: &str, kind: &str, out: &str, arches: &[&str]| -> Vec<Value> {
        let mut c = common::without_our_settings(common::orion(), &nvcc);
        c.current_dir(d)
            .env("NVCC_ORION", mode)
            .env("NVCC_ORION_CACHE", d.join("cache"))
            .env("NVCC_ORION_REPORT", d.join(format!("{out}.jsonl")))
            .args([kind, "-o", out])
            .args(arches)
            .arg(common::example("walk.cu"));
        let o = c.output().unwrap();
        common::assert_ok(&o, out);
        assert!(
            o.stderr.is_empty(),
            "{out}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        records(d, out)
    };
    let fat = ["-gencode=arch=compute_80,code=sm_80", WALK_ARCHES[0]];
    for (kind, ext, arches) in [
        ("-cubin", "cubin", &["-arch=sm_90"][..]),
        ("-fatbin", "fatbin", &fat[..]),
    ] {
        let plain = format!("walk_tune.{ext}");
        build("tune", kind, &plain, arches);
        for mode in ["adapt", "train"] {
            let out = format!("walk_{mode}.{ext}");
            let recs = build(mode, kind, &out, arches);
            let (got, want) = (registers(&d.join(&out)), registers(&d.join(&plain)));
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{out}: other entries than the default build's"
            );
            assert!(got.keys().all(|(_, f)| !f.contains("__orion_v")), "{got:?}");
            same_originals(&d.join(&plain), &d.join(&out));
            let r90 = recs
                .iter()
                .find(|r| r["arch"] == "sm_90" && r["kernel"] == WALK)
                .unwrap_or_else(|| panic!("{out}: {recs:?}"));
            // Tuned: the shipped kernel has the chosen budget, below ptxas's own.
            assert_eq!(
                got[&(90, WALK.to_string())],
                r90["chosen_registers"],
                "{r90}"
            );
            let chosen = r90["chosen_registers"].as_u64().unwrap();
            assert!(
                chosen < r90["candidates"][0]["registers"].as_u64().unwrap(),
                "{r90}"
            );
            for r in &recs {
                assert!(r.get("variants").is_none(), "{out}: {r}");
                let why = r["selector"].as_str().unwrap_or_default();
                assert!(
                    why.contains("a -cubin or -fatbin output has no host object"),
                    "{r}"
                );
            }
        }
    }
}

/// Issue 47: adapt descends (`tune::descent`'s `Rule::Variants`, docs/selector.md §Ranking)
/// where the full search (`NVCC_ORION_SEARCH=full`) built every budget, and embeds the same
/// variants. bench/build/retuned_huge.cu (most kernels retuned) for sm_90, cold: the descent
/// builds a subset of the full search's budgets, fewer in all; each one left out is in the
/// report as `stopped` or `outbid`; every embedded entry, originals and `__orion_v<k>`, has the
/// same registers (`cuobjdump -res-usage`) and the same code (the bytes `cuobjdump -sass`
/// lists) in both objects, and the objects are the same bytes (so are the selector's tables in
/// the glue).
#[test]
fn adapt_descends_yet_embeds_the_full_searchs_variants() {
    let Some(nvcc) = common::nvcc_or_skip("multi_variant") else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("multi-variant-search-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let d = dir.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/build/retuned_huge.cu");
    for search in ["descent", "full"] {
        let out = format!("{search}.o");
        let mut c = orion(&nvcc, d, "adapt", &out, "unused");
        c.env("NVCC_ORION_CACHE", "off")
            .env("NVCC_ORION_SEARCH", search)
            .args(["-O3", "-arch=sm_90"])
            .arg(&src);
        common::assert_ok(&c.output().unwrap(), &out);
    }
    let (descent, full) = (records(d, "descent.o"), records(d, "full.o"));
    let budgets = |r: &Value| -> Vec<Value> {
        r["candidates"].as_array().unwrap()[1..]
            .iter()
            .map(|c| c["budget"].clone())
            .collect()
    };
    let (mut built_descent, mut built_full) = (0, 0);
    assert_eq!(descent.len(), full.len());
    for (r, f) in descent.iter().zip(&full) {
        assert_eq!(r["kernel"], f["kernel"]);
        let (bd, bf) = (budgets(r), budgets(f));
        built_descent += bd.len();
        built_full += bf.len();
        assert!(bd.iter().all(|b| bf.contains(b)), "{bd:?} not in {bf:?}");
        // The same ranked variants, by budget (candidate indices differ).
        let ranked = |r: &Value| -> Vec<Value> {
            let cands = &r["candidates"];
            r["variants"].as_array().map_or(Vec::new(), |vs| {
                vs.iter()
                    .map(|v| cands[v["candidate"].as_u64().unwrap() as usize]["budget"].clone())
                    .collect()
            })
        };
        assert_eq!(ranked(r), ranked(f), "{r}\n{f}");
        for b in bf.iter().filter(|b| !bd.contains(b)) {
            assert!(
                r["pruned"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| &p["budget"] == b
                        && matches!(p["limit"].as_str(), Some("stopped" | "outbid"))),
                "{b} neither built nor reported left out: {r}"
            );
        }
    }
    assert!(
        built_descent < built_full,
        "adapt's descent built {built_descent} budgets, the full search {built_full}"
    );
    let (objd, objf) = (d.join("descent.o"), d.join("full.o"));
    let regs = registers(&objd);
    assert!(
        regs.keys().filter(|(_, f)| f.contains("__orion_v")).count() >= 4,
        "{regs:?}"
    );
    assert_eq!(regs, registers(&objf));
    assert_eq!(code(&objd), code(&objf));
    let bytes = |p: &Path| common::mask_tmpxft(&std::fs::read(p).unwrap());
    assert!(bytes(&objd) == bytes(&objf), "the objects differ");
}

/// Issue 47: where adding the variants to plain tune's cubin is sure to be refused whatever
/// that cubin turns out to be (`matrix/math.cu`'s kernels hold the division and square root
/// slow paths, `$__internal_<n>_$...`, numbered across the module: the copy refuses them),
/// the multi-variant cubin's whole-module ptxas run starts beside plain tune's final
/// assembly, not after it. Each kernel is forced to its lowest budget (so plain tune
/// assembles), and `-Xptxas -v` asks for ptxas's own messages, so the assembly is a
/// whole-module run too; the object-size cap leaves variants out, so its estimate of plain
/// tune's size matters. Through a toolkit whose ptxas logs each run's start and end: the
/// multi-variant run (the one with `--split-compile`) runs once, and starts before the
/// assembly's run ends. The object ships what the ranking lists, with the originals of a
/// plain tune build. Before, the multi-variant run started only once the assembly (and its
/// check) was done; with the cap estimated from ptxas's own cubin, it ran twice.
#[test]
fn the_multi_variant_run_starts_beside_the_final_assembly() {
    let Some(nvcc) = common::nvcc_or_skip("multi_variant") else {
        return;
    };
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        common::skipped(
            "the_multi_variant_run_starts_beside_the_final_assembly",
            "one core: no job slot for a second ptxas run",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("ptxas.log");
    let script = format!(
        "#!/bin/sh\necho \"start $*\" >> '{log}'\n'{ptxas}' \"$@\"\nrc=$?\n\
         echo \"end $*\" >> '{log}'\nexit $rc\n",
        log = log.display(),
        ptxas = nvcc.with_file_name("ptxas").display()
    );
    let tk = super::cache_integrity::toolkit_with_ptxas(&nvcc, &d.join("tk"), &script);
    let src = common::kernels_dir().join("matrix/math.cu");
    for (mode, out) in [("tune", "tune.o"), ("adapt", "adapt.o")] {
        let mut c = orion(&tk, d, mode, out, "unused");
        // Every extra job slot from the local pool, none from a caller's jobserver.
        for v in ["MAKEFLAGS", "MFLAGS", "CARGO_MAKEFLAGS"] {
            c.env_remove(v);
        }
        c.env("NVCC_ORION_CACHE", "off")
            .args(["-arch=sm_90", "-Xptxas", "-v", "--orion-force=lowest"])
            .arg(&src);
        // The log is the adapt build's runs alone.
        let _ = std::fs::remove_file(&log);
        common::assert_ok(&c.output().unwrap(), out);
    }
    let recs = records(d, "adapt.o");
    assert!(
        recs.iter().all(|r| r["assembly"] == "multi-variant"),
        "{recs:?}"
    );
    assert!(check_listed(&d.join("adapt.o"), &recs) >= 2, "{recs:?}");
    same_originals(&d.join("tune.o"), &d.join("adapt.o"));
    let text = std::fs::read_to_string(&log).unwrap();
    let runs: Vec<&str> = text.lines().collect();
    let whole = |l: &&str| !l.contains("--entry") && !l.contains("--split-compile");
    let multi: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].starts_with("start ") && runs[i].contains("--split-compile"))
        .collect();
    assert_eq!(multi.len(), 1, "one multi-variant run: {runs:#?}");
    // The final assembly: the last whole-module run without --split-compile (the first is
    // nvcc's own).
    let assembly = runs
        .iter()
        .rposition(|l| l.starts_with("start ") && whole(l))
        .unwrap();
    assert!(assembly > 0, "no final assembly run: {runs:#?}");
    let args = &runs[assembly]["start ".len()..];
    let assembly_end = runs
        .iter()
        .position(|l| l.strip_prefix("end ") == Some(args))
        .unwrap();
    assert!(
        multi[0] < assembly_end,
        "the multi-variant run started after the assembly's ended: {runs:#?}"
    );
}

//! Profile-guided builds (issue 21, docs/selector.md §Profile-guided builds) on real toolchain
//! output: `examples/kernels/walk.cu` on sm_90, whose tuned build ships a lower budget than
//! ptxas's own and also builds other budgets. A profile written the way a training run
//! writes it, naming the ranking's variant 1 as the fastest, makes the build ship variant 1
//! (cuobjdump shows its registers); two such builds are byte-identical; a malformed or a
//! mismatched profile (another name, or other registers than this build's variant 1: a
//! profile of another build of changed sources) gives one warning line naming the file and
//! the model's object; and the compiler caches' view changes with the profile's content.
//! The production path end to end (issue 45): a train build for sm_80 and sm_90, the profile
//! its run on two GPUs writes, and the guided build that ships each arch's winner with no
//! variant and no glue, ignoring another GPU's profile and a bad entry kernel by kernel.

use crate::common;

use std::path::Path;
use std::process::Command;

const KERNEL: &str = "_Z13walk_featuresPKiPKfPfii";

/// nvcc-orion with the test's nvcc and variant cache, and no setting from the caller's
/// environment.
fn orion(nvcc: &Path, dir: &Path) -> Command {
    let mut cmd = common::without_our_settings(common::orion(), nvcc);
    cmd.current_dir(dir);
    cmd.env("NVCC_ORION_CACHE", dir.join("cache"));
    cmd
}

/// One profile entry as the selector writes it: `variant` measured at one launch
/// configuration with median `median_us`.
fn entry(variant: u32, name: &str, median_us: f64) -> String {
    format!(
        r#"{{"kernel": "{KERNEL}", "arch": "sm_90", "device": "NVIDIA H100 80GB HBM3",
  "key": {{"kernel_id": 2166136261, "device": 0, "grid": [528, 1, 1], "block": [256, 1, 1], "shared": 0}},
  "variant": {variant}, "variant_name": "{name}", "launches": 11, "samples": 10,
  "median_us": {median_us:.3}, "spread": 0.0100}}"#
    )
}

/// `entry` with what the driver reported of the variant that ran, as the runtime writes it.
fn ran(entry: String, registers: u64, local_bytes: u64) -> String {
    entry.replace(
        r#""launches""#,
        &format!(r#""registers": {registers}, "local_bytes": {local_bytes}, "launches""#),
    )
}

fn profile(entries: &[String]) -> String {
    format!(
        "{{\"format\": \"nvcc-orion-profile\", \"version\": 1, \"entries\": [\n{}\n]}}\n",
        entries.join(",\n")
    )
}

struct Build {
    object: Vec<u8>,
    registers: u32,
    stderr: String,
    record: serde_json::Value,
}

/// Compile walk.cu for sm_90 into `out` under `env`, with a report.
fn build(nvcc: &Path, dir: &Path, out: &str, env: &[(&str, &str)]) -> Build {
    let report = dir.join(format!("{out}.jsonl"));
    let o = orion(nvcc, dir)
        .args(["-c", "-arch=sm_90", "-o", out])
        .arg(common::example("walk.cu"))
        .env("NVCC_ORION_REPORT", &report)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    common::assert_ok(&o, out);
    let obj = dir.join(out);
    let registers = common::fixtures::res_usage(&obj)
        .unwrap()
        .iter()
        .find(|u| u.function == KERNEL)
        .unwrap_or_else(|| panic!("{KERNEL} in {out}"))
        .reg;
    let record = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kernel"] == KERNEL)
        .expect("a record of the kernel");
    Build {
        object: std::fs::read(&obj).unwrap(),
        registers,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        record,
    }
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("nvcc-orion: warning:"))
        .collect()
}

#[test]
fn a_profile_ships_its_measured_variant() {
    let label = "profile_guided";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = build(&nvcc, d, "model.o", &[]);
    assert!(warnings(&model.stderr).is_empty(), "{}", model.stderr);
    assert!(model.record.get("measured").is_none(), "{}", model.record);

    // A profile without entries changes nothing, and the report lists the variants a
    // training build embeds, under the names a training run's profile uses.
    std::fs::write(d.join("empty.json"), profile(&[])).unwrap();
    let listed = build(&nvcc, d, "empty.o", &[("NVCC_ORION_PROFILE", "empty.json")]);
    assert!(warnings(&listed.stderr).is_empty(), "{}", listed.stderr);
    assert!(common::mask_tmpxft(&listed.object) == common::mask_tmpxft(&model.object));
    let m = &listed.record["measured"];
    assert!(
        m.get("winner").is_none() && m.get("rank_error").is_none(),
        "{m}"
    );
    let names: Vec<&str> = m["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], [KERNEL, &format!("{KERNEL}__orion_v1")], "{m}");
    // What a training run's driver reports of variants 0 and 1: this build's registers, and
    // local bytes equal to the stack frames.
    let resources: Vec<(u64, u64)> = m["variants"].as_array().unwrap()[..2]
        .iter()
        .map(|v| {
            let c = &listed.record["candidates"][v["candidate"].as_u64().unwrap() as usize];
            (
                v["registers"].as_u64().unwrap(),
                c["frame_bytes"].as_u64().unwrap(),
            )
        })
        .collect();

    // The training run measured variant 1 faster than the original (variant 0, the model's
    // pick): the guided build ships variant 1, against the model.
    let v1 = names[1].to_string();
    let [(r0, f0), (r1, f1)] = resources[..] else {
        panic!("{resources:?}")
    };
    let guided = profile(&[
        ran(entry(0, KERNEL, 120.5), r0, f0),
        ran(entry(1, &v1, 100.25), r1, f1),
    ]);
    std::fs::write(d.join("run.json"), &guided).unwrap();
    let a = build(&nvcc, d, "a.o", &[("NVCC_ORION_PROFILE", "run.json")]);
    assert!(warnings(&a.stderr).is_empty(), "{}", a.stderr);
    let m = &a.record["measured"];
    assert_eq!(m["winner"], 1, "{m}");
    assert_eq!(m["rank_error"], 1, "{m}");
    assert_eq!(m["configurations"], 1, "{m}");
    assert_eq!(m["profile"], "run.json", "{m}");
    let variants = m["variants"].as_array().unwrap();
    assert!((2..=5).contains(&variants.len()), "{m}");
    assert_eq!(variants[0]["name"], KERNEL);
    assert_eq!(variants[0]["registers"], model.registers, "{m}");
    assert_eq!(variants[0]["measured_us"], 120.5, "{m}");
    assert_eq!(variants[1]["name"], v1.as_str());
    assert_eq!(variants[1]["measured_us"], 100.25, "{m}");
    assert!(variants[1]["cycles_per_warp"].is_array(), "{m}");
    // Unmeasured variants say so.
    assert!(
        variants[2..].iter().all(|v| v["measured_us"].is_null()),
        "{m}"
    );
    let shipped = variants[1]["registers"].as_u64().unwrap() as u32;
    assert_ne!(shipped, model.registers, "variant 1 is another budget: {m}");
    assert_eq!(
        a.registers, shipped,
        "cuobjdump shows variant 1's registers"
    );
    assert_eq!(a.record["chosen_registers"], shipped);
    let reason = a.record["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("measured fastest: variant 1"),
        "{reason}"
    );

    // Deterministic: a second guided build gives the same bytes (nvcc's tmpxft names aside).
    let b = build(&nvcc, d, "b.o", &[("NVCC_ORION_PROFILE", "run.json")]);
    assert_eq!(b.registers, shipped);
    assert!(
        common::mask_tmpxft(&a.object) == common::mask_tmpxft(&b.object),
        "two guided builds differ"
    );

    // A malformed profile: one warning naming the file, and the model's object.
    std::fs::write(d.join("bad.json"), &guided[..guided.len() / 2]).unwrap();
    let bad = build(&nvcc, d, "bad.o", &[("NVCC_ORION_PROFILE", "bad.json")]);
    let w = warnings(&bad.stderr);
    assert_eq!(w.len(), 1, "{}", bad.stderr);
    assert!(
        w[0].contains("bad.json") && w[0].contains("profile ignored"),
        "{}",
        w[0]
    );
    assert_eq!(bad.registers, model.registers);
    assert!(common::mask_tmpxft(&bad.object) == common::mask_tmpxft(&model.object));

    // A profile from another build (variant 1 under another name): one warning naming the
    // file and the entry, and the model's object.
    let other = profile(&[
        entry(0, KERNEL, 120.5),
        entry(1, &format!("{KERNEL}__orion_v2"), 100.25),
    ]);
    std::fs::write(d.join("other.json"), other).unwrap();
    let mismatched = build(&nvcc, d, "other.o", &[("NVCC_ORION_PROFILE", "other.json")]);
    let w = warnings(&mismatched.stderr);
    assert_eq!(w.len(), 1, "{}", mismatched.stderr);
    assert!(
        w[0].contains("other.json: entry 1 (") && w[0].contains("in this build"),
        "{}",
        w[0]
    );
    assert_eq!(mismatched.registers, model.registers);
    assert!(mismatched.record.get("measured").is_none());
    assert!(common::mask_tmpxft(&mismatched.object) == common::mask_tmpxft(&model.object));

    // The same names, but variant 1 ran with other registers than this build's variant 1
    // (changed sources ranked another candidate there): refused with one line naming the
    // file, the entry, the kernel and both counts; the model's object.
    let changed = profile(&[
        ran(entry(0, KERNEL, 120.5), r0, f0),
        ran(entry(1, &v1, 100.25), r1 + 8, f1),
    ]);
    std::fs::write(d.join("changed.json"), changed).unwrap();
    let refused = build(
        &nvcc,
        d,
        "changed.o",
        &[("NVCC_ORION_PROFILE", "changed.json")],
    );
    let w = warnings(&refused.stderr);
    assert_eq!(w.len(), 1, "{}", refused.stderr);
    let want = format!(
        "changed.json: entry 1 ({KERNEL}, sm_90): variant 1 (`{v1}`) ran with {} registers but \
         has {r1} in this build; the model's choice stands for {KERNEL}",
        r1 + 8
    );
    assert!(w[0].ends_with(&want), "{}\nwanted: {want}", w[0]);
    assert_eq!(refused.registers, model.registers);
    assert!(refused.record.get("measured").is_none());
    assert!(common::mask_tmpxft(&refused.object) == common::mask_tmpxft(&model.object));
}

/// What compiler caches hash changes with the profile's content, not only its name: the
/// `cache-key` settings line and the `--dryrun` ptxas lines.
#[test]
fn the_caches_see_the_profile_content() {
    let label = "profile_cache_view";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("run.json");
    let view = |extra: &[&str]| -> (String, String) {
        let key = orion(&nvcc, d)
            .arg("cache-key")
            .env("NVCC_ORION_PROFILE", &file)
            .output()
            .unwrap();
        common::assert_ok(&key, label);
        let settings = String::from_utf8(key.stdout)
            .unwrap()
            .lines()
            .find(|l| l.starts_with("settings:"))
            .unwrap()
            .to_string();
        let o = orion(&nvcc, d)
            .args(["--dryrun", "-c", "-arch=sm_90", "-o", "w.o"])
            .arg(common::example("walk.cu"))
            .args(extra)
            .output()
            .unwrap();
        common::assert_ok(&o, label);
        let ptxas = String::from_utf8(o.stderr)
            .unwrap()
            .lines()
            .find(|l| l.starts_with("#$ ptxas "))
            .unwrap()
            .to_string();
        (settings, ptxas)
    };
    let flag = format!("--orion-profile={}", file.display());
    std::fs::write(&file, profile(&[entry(0, KERNEL, 120.5)])).unwrap();
    let (key_a, line_a) = view(&[&flag]);
    std::fs::write(&file, profile(&[entry(0, KERNEL, 99.0)])).unwrap();
    let (key_b, line_b) = view(&[&flag]);
    for (text, what) in [(&key_a, "cache-key"), (&line_a, "--dryrun")] {
        assert!(text.contains(&flag), "{what}: {text}");
        assert!(text.contains("--orion-profile-sha256="), "{what}: {text}");
    }
    assert_ne!(key_a, key_b, "an edited profile must change the cache key");
    assert_ne!(
        line_a, line_b,
        "an edited profile must change the ptxas line"
    );
    let (plain_key, plain_line) = {
        std::fs::remove_file(&file).unwrap();
        view(&[])
    };
    assert!(!plain_line.contains("--orion-profile"), "{plain_line}");
    // cache-key still names the (now unreadable) profile from the environment.
    assert!(plain_key.contains("sha256=unreadable"), "{plain_key}");
}

/// The second kernel of [`two_kernels`]: walk.cu's kernel again, renamed.
const KERNEL_B: &str = "_Z15walk_features_bPKiPKfPfii";
/// The training run's GPUs: (arch, device ordinal, device name).
const GPUS: [(&str, i32, &str); 2] = [
    ("sm_80", 0, "NVIDIA A100-SXM4-80GB"),
    ("sm_90", 1, "NVIDIA H100 80GB HBM3"),
];
/// Every build of the production path: sm_80 and sm_90, and no margin. With the default
/// margin the model prunes every lower budget of walk.cu's kernel on sm_80, so there would be
/// no variant to train there; the train and the guided builds take the same settings, so they
/// rank the same candidates (docs/selector.md §Ranking).
const TWO_ARCHES: [&str; 3] = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "--orion-margin=0",
];

/// walk.cu with a second kernel, a renamed copy of its own: two kernels that tune alike.
fn two_kernels(dir: &Path) -> std::path::PathBuf {
    let walk = std::fs::read_to_string(common::example("walk.cu")).unwrap();
    let start = walk.find("__global__ void walk_features(").unwrap();
    let end = start + walk[start..].find("\n}\n").unwrap() + 3;
    let copy = walk[start..end].replace("walk_features(", "walk_features_b(");
    let path = dir.join("walk2.cu");
    std::fs::write(&path, format!("{walk}\n{copy}")).unwrap();
    path
}

/// FNV-1a (32 bits) of a kernel's name: its `kernel_id`, as the runtime keys it.
fn kernel_id(name: &str) -> u32 {
    name.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// One variant of the train build as the runtime finds it: its number, name, and the
/// registers and local bytes the driver reports (here read with cuobjdump from the object).
#[derive(Debug, Clone)]
struct Trained {
    arch: &'static str,
    kernel: String,
    variant: u32,
    name: String,
    registers: u32,
    local_bytes: u32,
}

/// Every variant the train build `obj` embeds, per its report `records`: the names the report
/// lists, the resources from `cuobjdump -res-usage` of the object.
fn trained(obj: &Path, records: &[serde_json::Value]) -> Vec<Trained> {
    let usage = common::fixtures::res_usage(obj).unwrap();
    let mut out = Vec::new();
    for (arch, _, _) in GPUS {
        for r in records.iter().filter(|r| r["arch"] == arch) {
            for v in r["variants"].as_array().into_iter().flatten() {
                if v.get("dropped").is_some() {
                    continue;
                }
                let name = v["name"].as_str().unwrap();
                let u = usage
                    .iter()
                    .find(|u| format!("sm_{}", u.arch) == arch && u.function == name)
                    .unwrap_or_else(|| panic!("{name} on {arch} in {}", obj.display()));
                out.push(Trained {
                    arch,
                    kernel: r["kernel"].as_str().unwrap().to_string(),
                    variant: v["variant"].as_u64().unwrap() as u32,
                    name: name.to_string(),
                    registers: u.reg,
                    // The driver's local size covers the stack frame (cuobjdump's STACK).
                    local_bytes: u.stack.unwrap_or(0),
                });
            }
        }
    }
    out
}

/// The entry a training run writes for `t` measured at `median_us`.
fn written(t: &Trained, median_us: f64) -> String {
    let (_, device, device_name) = GPUS.iter().find(|g| g.0 == t.arch).unwrap();
    format!(
        r#"{{"kernel": "{}", "arch": "{}", "device": "{device_name}", "key": {{"kernel_id": {}, "device": {device}, "grid": [528, 1, 1], "block": [256, 1, 1], "shared": 0}}, "variant": {}, "variant_name": "{}", "registers": {}, "local_bytes": {}, "launches": 11, "samples": 10, "median_us": {median_us:.3}, "spread": 0.0100}}"#,
        t.kernel,
        t.arch,
        kernel_id(&t.kernel),
        t.variant,
        t.name,
        t.registers,
        t.local_bytes
    )
}

/// Compile `src` with `args` into `dir/out` under `env` (the test's settings only), with a
/// report; the records and stderr.
fn compile(
    nvcc: &Path,
    dir: &Path,
    src: &Path,
    out: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Vec<serde_json::Value>, String) {
    let report = dir.join(format!("{out}.jsonl"));
    let o = orion(nvcc, dir)
        .args(["-c", "-o", out])
        .args(args)
        .arg(src)
        .env("NVCC_ORION_REPORT", &report)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    common::assert_ok(&o, out);
    let records = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (records, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Registers per (arch, function) in `obj`, from `cuobjdump -res-usage`.
fn shipped(obj: &Path) -> std::collections::BTreeMap<(String, String), u32> {
    common::fixtures::res_usage(obj)
        .unwrap()
        .into_iter()
        .map(|u| ((format!("sm_{}", u.arch), u.function), u.reg))
        .collect()
}

/// The production path (issue 45): a train build (variants and glue in the object) for sm_80
/// and sm_90, the profile its run on an sm_80 and an sm_90 GPU writes (the names the train
/// build embeds, each variant's registers and local bytes as cuobjdump reads them from it;
/// the two archs' builds of one variant have other registers), then a default-mode build
/// guided by it, which ships each arch's measured winner under the original name, with no
/// `__orion_v` entry and no glue. A profile of another GPU's arch is one line for that arch,
/// whose kernels keep the model's choice; an entry from changed sources, or an unsound one,
/// is one line for its kernel on its arch, and the other kernels are still guided.
#[test]
fn train_then_a_guided_build_ships_each_archs_winner() {
    let label = "profile_production_path";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = two_kernels(d);

    // 1. The train build: each tuned kernel's variants, and the selector's glue.
    let (records, stderr) = compile(
        &nvcc,
        d,
        &src,
        "train.o",
        &TWO_ARCHES,
        &[("NVCC_ORION", "train")],
    );
    assert!(warnings(&stderr).is_empty(), "{stderr}");
    assert!(common::nm_symbols(&d.join("train.o")).contains("orion_rt_v1_"));
    let variants = trained(&d.join("train.o"), &records);
    let of = |arch: &str, kernel: &str| -> Vec<&Trained> {
        variants
            .iter()
            .filter(|t| t.arch == arch && t.kernel == kernel)
            .collect()
    };
    for (arch, _, _) in GPUS {
        for kernel in [KERNEL, KERNEL_B] {
            assert!(of(arch, kernel).len() >= 2, "{arch} {kernel}: {variants:?}");
        }
    }
    // The same variant number is other code on each arch: here, other registers.
    assert!(
        of("sm_80", KERNEL)
            .iter()
            .zip(of("sm_90", KERNEL))
            .any(|(a, b)| a.variant == b.variant && a.registers != b.registers),
        "{variants:?}"
    );

    // 2. The training run's profile. Each (arch, kernel) measured its last variant fastest,
    // a build with other registers than variant 0's.
    let winner = |arch: &str, kernel: &str| -> Trained {
        let vs = of(arch, kernel);
        let w = (*vs.last().unwrap()).clone();
        assert_ne!(w.registers, vs[0].registers, "{vs:?}");
        w
    };
    let entries = |arch_ok: &dyn Fn(&str) -> bool| -> Vec<String> {
        variants
            .iter()
            .filter(|t| arch_ok(t.arch))
            .map(|t| written(t, 100.0 - 10.0 * f64::from(t.variant)))
            .collect()
    };
    std::fs::write(d.join("run.json"), profile(&entries(&|_| true))).unwrap();

    // 3. The guided build (default mode): every arch's winner, no variants, no glue.
    let run = [("NVCC_ORION_PROFILE", "run.json")];
    let (records, stderr) = compile(&nvcc, d, &src, "guided.o", &TWO_ARCHES, &run);
    assert!(stderr.is_empty(), "{stderr}");
    let regs = shipped(&d.join("guided.o"));
    for (arch, _, _) in GPUS {
        for kernel in [KERNEL, KERNEL_B] {
            let w = winner(arch, kernel);
            assert_eq!(
                regs[&(arch.to_string(), kernel.to_string())],
                w.registers,
                "{arch} {kernel}"
            );
            let r = records
                .iter()
                .find(|r| r["arch"] == arch && r["kernel"] == kernel)
                .unwrap();
            assert_eq!(r["measured"]["winner"], w.variant, "{r}");
        }
    }
    assert!(
        regs.keys().all(|(_, f)| !f.contains("__orion_v")),
        "{regs:?}"
    );
    let bytes = std::fs::read(d.join("guided.o")).unwrap();
    assert!(
        !bytes.windows(12).any(|w| w == b"orion_rt_v1_"),
        "glue in the guided object"
    );

    // 4. A profile of another GPU: sm_80 entries only. sm_80 is guided; sm_90 says so in one
    // line and ships the model's choice.
    let (model, stderr) = compile(&nvcc, d, &src, "model.o", &TWO_ARCHES, &[]);
    assert!(stderr.is_empty(), "{stderr}");
    let model_regs = shipped(&d.join("model.o"));
    std::fs::write(d.join("a100.json"), profile(&entries(&|a| a == "sm_80"))).unwrap();
    let (records, stderr) = compile(
        &nvcc,
        d,
        &src,
        "a100.o",
        &TWO_ARCHES,
        &[("NVCC_ORION_PROFILE", "a100.json")],
    );
    let w = warnings(&stderr);
    assert_eq!(w.len(), 1, "{stderr}");
    assert!(
        w[0].contains("a100.json has no entries for sm_90 (it measured sm_80); the model's choices stand on sm_90"),
        "{}",
        w[0]
    );
    let regs = shipped(&d.join("a100.o"));
    for kernel in [KERNEL, KERNEL_B] {
        let k = |arch: &str| (arch.to_string(), kernel.to_string());
        assert_eq!(regs[&k("sm_80")], winner("sm_80", kernel).registers);
        assert_eq!(regs[&k("sm_90")], model_regs[&k("sm_90")]);
        let r = records
            .iter()
            .find(|r| r["arch"] == "sm_90" && r["kernel"] == kernel)
            .unwrap();
        assert!(r["measured"].get("winner").is_none(), "{r}");
        let m = model
            .iter()
            .find(|m| m["arch"] == "sm_90" && m["kernel"] == kernel)
            .unwrap();
        // The same candidate by its budget: the guided build builds the full set of budgets,
        // the default build descends (docs/DESIGN.md §Budgets at occupancy cliffs), so the
        // chosen candidate's index in each record's list may differ.
        let chosen = |x: &serde_json::Value| {
            x["candidates"][x["chosen"].as_u64().unwrap() as usize]["budget"].clone()
        };
        assert_eq!(chosen(r), chosen(m), "{r}");
    }

    // 5. Kernel by kernel: on sm_90 the second kernel's variant 1 ran with other registers
    // (a build of changed sources), and on sm_80 its variant 0 has an unsound entry. One line
    // each; that kernel keeps the model's choice on that arch, everything else is guided.
    let mixed: Vec<String> = variants
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let median = 100.0 - 10.0 * f64::from(t.variant);
            if t.kernel == KERNEL_B && t.arch == "sm_90" && t.variant == 1 {
                t.registers += 8;
            }
            let e = written(&t, median);
            if t.kernel == KERNEL_B && t.arch == "sm_80" && t.variant == 0 {
                e.replace(r#""launches": 11"#, r#""launches": 3"#)
            } else {
                e
            }
        })
        .collect();
    std::fs::write(d.join("mixed.json"), profile(&mixed)).unwrap();
    let (_, stderr) = compile(
        &nvcc,
        d,
        &src,
        "mixed.o",
        &TWO_ARCHES,
        &[("NVCC_ORION_PROFILE", "mixed.json")],
    );
    let w = warnings(&stderr);
    assert_eq!(w.len(), 2, "{stderr}");
    assert!(
        w[0].contains(&format!(
            "({KERNEL_B}): 10 samples but only 3 launches; the model's choice stands for {KERNEL_B}"
        )),
        "{}",
        w[0]
    );
    assert!(
        w[1].contains(&format!(
            "({KERNEL_B}, sm_90): variant 1 (`{KERNEL_B}__orion_v1`) ran with"
        )),
        "{}",
        w[1]
    );
    let regs = shipped(&d.join("mixed.o"));
    for (arch, _, _) in GPUS {
        let k = |kernel: &str| (arch.to_string(), kernel.to_string());
        assert_eq!(regs[&k(KERNEL)], winner(arch, KERNEL).registers, "{arch}");
        assert_eq!(regs[&k(KERNEL_B)], model_regs[&k(KERNEL_B)], "{arch}");
    }

    // 6. A file that does not parse: one line for the whole compile, and the model's object.
    std::fs::write(
        d.join("cut.json"),
        "{\"format\": \"nvcc-orion-profile\", \"entr",
    )
    .unwrap();
    let (_, stderr) = compile(
        &nvcc,
        d,
        &src,
        "cut.o",
        &TWO_ARCHES,
        &[("NVCC_ORION_PROFILE", "cut.json")],
    );
    let w = warnings(&stderr);
    assert_eq!(w.len(), 1, "{stderr}");
    assert!(
        w[0].contains("profile ignored: ") && w[0].contains("cut.json"),
        "{}",
        w[0]
    );
    assert_eq!(shipped(&d.join("cut.o")), model_regs);
}

/// The measured path end to end (issue 45): the gather kernel's lower budgets are all pruned
/// by the model's DRAM floor, so a default build ships ptxas's budget and a training build
/// adds one budget to measure (the nearest cliff). A profile that measured that variant
/// fastest makes the guided build ship it: the guided build builds the training build's
/// candidates, so the profile's variant number names the same budget (before, the guided
/// build had no such variant and ignored the kernel with a warning).
#[test]
fn train_then_guided_ships_a_measured_only_winner() {
    let label = "profile_measured_only";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = common::kernels_dir().join("measured").join("gather.cu");
    let sm90 = ["-gencode=arch=compute_90,code=sm_90"];
    const GATHER: &str = "_Z11gather_rowsPK6float4PKiPS_ii";

    // The default build: ptxas's budget, every lower one pruned by the model.
    let (model, stderr) = compile(&nvcc, d, &src, "model.o", &sm90, &[]);
    assert!(stderr.is_empty(), "{stderr}");
    let key = ("sm_90".to_string(), GATHER.to_string());
    let model_regs = shipped(&d.join("model.o"))[&key];
    let r = model.iter().find(|r| r["kernel"] == GATHER).unwrap();
    assert!(r["kept_by"].is_string(), "{r}");

    // The training build: the original and one budget built only to be measured.
    let (records, stderr) = compile(&nvcc, d, &src, "train.o", &sm90, &[("NVCC_ORION", "train")]);
    assert!(warnings(&stderr).is_empty(), "{stderr}");
    let variants: Vec<Trained> = trained(&d.join("train.o"), &records)
        .into_iter()
        .filter(|t| t.kernel == GATHER)
        .collect();
    assert!(variants.len() >= 2, "{variants:?}");
    let fastest = variants.last().unwrap().clone();
    assert!(fastest.registers < model_regs, "{variants:?}");

    // Its profile: the measured-only variant is fastest.
    let entries: Vec<String> = variants
        .iter()
        .map(|t| written(t, 100.0 - 10.0 * f64::from(t.variant)))
        .collect();
    std::fs::write(d.join("run.json"), profile(&entries)).unwrap();

    // The guided build ships it under the original name, with no variant and no glue.
    let (records, stderr) = compile(
        &nvcc,
        d,
        &src,
        "guided.o",
        &sm90,
        &[("NVCC_ORION_PROFILE", "run.json")],
    );
    assert!(stderr.is_empty(), "{stderr}");
    let regs = shipped(&d.join("guided.o"));
    assert_eq!(regs[&key], fastest.registers, "{regs:?}");
    assert!(
        regs.keys().all(|(_, f)| !f.contains("__orion_v")),
        "{regs:?}"
    );
    let r = records.iter().find(|r| r["kernel"] == GATHER).unwrap();
    assert_eq!(r["measured"]["winner"], fastest.variant, "{r}");
}

//! Profile-guided builds (issue 21, docs/selector.md §Profile-guided builds) on real toolchain
//! output: `examples/kernels/walk.cu` on sm_90, whose tuned build ships a lower budget than
//! ptxas's own and also builds other budgets. A profile written the way a training run
//! writes it, naming the ranking's variant 1 as the fastest, makes the build ship variant 1
//! (cuobjdump shows its registers); two such builds are byte-identical; a malformed or a
//! mismatched profile (another name, or other registers than this build's variant 1: a
//! profile of another build of changed sources) gives one warning line naming the file and
//! the model's object; and the compiler caches' view changes with the profile's content.

mod common;

use std::path::Path;
use std::process::Command;

const KERNEL: &str = "_Z13walk_featuresPKiPKfPfii";

/// nvcc-orion with the test's nvcc and variant cache, and no setting from the caller's
/// environment.
fn orion(nvcc: &Path, dir: &Path) -> Command {
    let mut cmd =
        common::without_our_settings(Command::new(env!("CARGO_BIN_EXE_nvcc-orion")), nvcc);
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

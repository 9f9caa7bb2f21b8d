//! The GPU harness (`bench/gpu`) without a GPU: `build.sh` builds every program through plain
//! nvcc, nvcc-orion's default and each forced variant (every budget candidate, the pragma,
//! spill2smem, regdem) and packs the archive; the manifest's registers are
//! `cuobjdump -res-usage`'s, and a forced budget ships at that budget. Every program's CPU
//! reference passes its self-check (`--cpu-only`), every program without a GPU says so in one
//! line and exits 3, and so does `run.sh` given the archive. The summary printer is checked
//! on `bench/gpu/testdata/sample.csv` (synthetic test data). On a machine with a GPU, set
//! `NVCC_ORION_TEST_GPU=1`: the nvcc and default builds are then run and must pass instead.
//!
//! The full build is the slow part (about 80 nvcc builds; see bench/results/gpu.md); it runs
//! once, in the first test that needs it. Without nvcc the tests print a skip line and pass
//! (with `CI` set they fail).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn gpu_dir() -> PathBuf {
    repo().join("bench/gpu")
}

/// The programs: every `bench/gpu/*.cu`.
fn programs() -> Vec<String> {
    let mut p: Vec<String> = std::fs::read_dir(gpu_dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".cu")?.to_string())
        })
        .collect();
    p.sort();
    p
}

fn python(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(gpu_dir().join("harness.py"))
        .args(args)
        .output()
        .expect("python3")
}

/// The built harness: `OUT` of build.sh, or `None` (skip) without the toolkit.
fn built() -> Option<&'static Path> {
    static OUT: OnceLock<Option<PathBuf>> = OnceLock::new();
    OUT.get_or_init(|| {
        let nvcc = common::nvcc_or_skip("gpu_harness")?;
        // nextest runs each test in a process of its own: the first builds, under a lock,
        // what the binary and bench/gpu's files make; the others reuse it.
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(gpu_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        inputs.sort();
        let mut bytes = vec![std::fs::read(env!("CARGO_BIN_EXE_nvcc-orion")).unwrap()];
        for p in &inputs {
            bytes.push(p.file_name().unwrap().as_encoded_bytes().to_vec());
            bytes.push(std::fs::read(p).unwrap());
        }
        let views: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let lock = common::Locked::new("gpu-harness", &nvcc, &views);
        let out = lock.dir.join("out");
        if lock.complete() {
            return Some(out);
        }
        let start = std::time::Instant::now();
        let o = common::without_our_settings(Command::new(gpu_dir().join("build.sh")), &nvcc)
            .env("NVCC_ORION_BIN", env!("CARGO_BIN_EXE_nvcc-orion"))
            .env("OUT", &out)
            .output()
            .expect("run build.sh");
        assert!(
            o.status.success(),
            "build.sh failed ({}):\n{}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        eprintln!(
            "gpu_harness: build.sh took {:.0} s: {}",
            start.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&o.stdout).trim()
        );
        lock.finish();
        Some(out)
    })
    .as_deref()
}

/// Manifest rows: (program, variant, kernel) → (registers, applied, flags).
fn manifest(out: &Path) -> BTreeMap<(String, String, String), (u32, bool, String)> {
    let text = std::fs::read_to_string(out.join("nvcc-orion-gpu-bench/manifest.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("program,variant,flags,kernel,registers,applied,reason")
    );
    lines
        .map(|l| {
            // program,variant,"flags",kernel,registers,applied,"reason"
            let (head, rest) = l.split_once(",\"").unwrap();
            let (flags, rest) = rest.split_once("\",").unwrap();
            let (p, v) = head.split_once(',').unwrap();
            let f: Vec<&str> = rest.splitn(4, ',').collect();
            (
                (p.to_string(), v.to_string(), f[0].to_string()),
                (f[1].parse().unwrap(), f[2] == "yes", flags.to_string()),
            )
        })
        .collect()
}

#[test]
fn every_program_and_variant_builds_and_the_manifest_is_right() {
    let Some(out) = built() else { return };
    let programs = programs();
    assert!(programs.len() >= 10, "{programs:?}");
    let rows = manifest(out);
    let bin = out.join("nvcc-orion-gpu-bench/bin");
    let report = |p: &str, v: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join(format!("obj/{p}.{v}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mut forced_budgets = 0;
    for p in &programs {
        // The variants the default build's candidates call for.
        let mut want: BTreeSet<String> = ["nvcc", "default", "adapt", "train"]
            .map(String::from)
            .into();
        let mut pragma = false;
        for r in report(p, "default") {
            let pruned = r["pruned"].as_array().unwrap().iter();
            for b in r["candidates"].as_array().unwrap()[1..]
                .iter()
                .chain(pruned)
                .map(|c| &c["budget"])
            {
                if b["smem_spill"] == true {
                    pragma = true;
                } else {
                    want.insert(format!("budget-{}", b["regs"]));
                }
            }
        }
        if want.len() > 4 {
            want.extend(["spill2smem", "regdem"].map(String::from));
            if pragma {
                want.insert("pragma".into());
            }
        }
        let have: BTreeSet<String> = rows
            .keys()
            .filter(|(rp, _, _)| rp == p)
            .map(|(_, v, _)| v.clone())
            .collect();
        assert_eq!(have, want, "{p}: variants in the manifest");
        for v in &want {
            assert!(bin.join(format!("{p}.{v}")).is_file(), "{p}.{v} missing");
        }
        // A forced budget ships at that budget: the report's choice is the candidate at N,
        // and cuobjdump's count (the manifest) is the count the report chose.
        for v in want.iter().filter(|v| v.starts_with("budget-")) {
            let n: u32 = v["budget-".len()..].parse().unwrap();
            for r in report(p, v) {
                let kernel = r["kernel"].as_str().unwrap();
                let (regs, applied, flags) = &rows[&(p.clone(), v.clone(), kernel.to_string())];
                assert!(
                    flags.contains(&format!("--orion-force=budget:{n}")),
                    "{flags}"
                );
                if !*applied {
                    continue;
                }
                let chosen = &r["candidates"][r["chosen"].as_u64().unwrap() as usize];
                assert_eq!(chosen["budget"]["regs"], n, "{p} {v} {kernel}");
                assert_eq!(u64::from(*regs), r["chosen_registers"].as_u64().unwrap());
                assert!(*regs <= n, "{p} {v} {kernel}: {regs} registers");
                forced_budgets += 1;
            }
        }
    }
    assert!(
        forced_budgets >= 20,
        "{forced_budgets} forced budgets applied"
    );
    // The control gets nothing to try (and no variants); the register-bound programs do.
    assert!(
        !rows
            .iter()
            .any(|((p, v, _), (_, applied, _))| p == "control"
                && !matches!(v.as_str(), "nvcc" | "default" | "adapt" | "train")
                || p == "control" && *applied && v == "adapt")
    );
    // The selector's builds: variant 0 is the default build's choice, the train build embeds
    // the same variants as the adapt build, and a kernel has some exactly where its adapt
    // report lists more than one variant (the model's real alternatives, docs/selector.md):
    // the latency-bound walk does; the kernels it sees bandwidth- or issue-bound need not.
    let with_variants = rows
        .iter()
        .filter(|((p, v, k), (regs, applied, _))| {
            if v != "adapt" {
                return false;
            }
            let default = &rows[&(p.clone(), "default".to_string(), k.clone())];
            assert_eq!(*regs, default.0, "{p}/{k}: adapt's variant 0");
            let train = &rows[&(p.clone(), "train".to_string(), k.clone())];
            assert_eq!(*applied, train.1, "{p}/{k}: train's variants");
            let listed = report(p, "adapt")
                .iter()
                .filter(|r| r["kernel"] == k.as_str())
                .any(|r| {
                    r["variants"]
                        .as_array()
                        .map_or(0, |v| v.iter().filter(|x| x["dropped"].is_null()).count())
                        > 1
                });
            assert_eq!(*applied, listed, "{p}/{k}: adapt's report and its cubin");
            *applied
        })
        .count();
    assert!(with_variants >= 1, "{with_variants} kernels with variants");
    let reasons = std::fs::read_to_string(out.join("nvcc-orion-gpu-bench/manifest.csv")).unwrap();
    assert!(
        reasons.lines().any(|l| l.starts_with("chase,adapt,")
            && l.contains(",chase_walk,")
            && l.contains("\"v1=")),
        "{reasons}"
    );
    // The selector's glue is in the adapt and train programs only.
    let nm = |exe: &str| {
        let o = Command::new("nm").arg(bin.join(exe)).output().unwrap();
        String::from_utf8_lossy(&o.stdout).contains("orion_rt_v1_")
    };
    assert!(nm("chase.adapt") && nm("nbody.train") && nm("control.adapt"));
    assert!(!nm("nbody.default") && !nm("nbody.nvcc"));
    assert!(rows.contains_key(&("nbody".into(), "pragma".into(), "nbody_forces".into())));
    // The calibration travels with the programs: its microbenchmarks, built for sm_90, and
    // the predictor.
    let tools = out.join("nvcc-orion-gpu-bench/tools");
    assert!(tools.join("orion-calibrate").is_file() && tools.join("nvcc-orion").is_file());
    let archive = out.join("nvcc-orion-gpu-bench.tar.xz");
    let size = std::fs::metadata(&archive).unwrap().len();
    assert!(size < 64 << 20, "{size} bytes");
}

/// build.sh builds the forced variants on one front end per program (nvcc's listing run to
/// cicc once, then per variant `nvcc-orion --ptxas`, fatbinary and the host compile): each is
/// the binary `nvcc-orion -c` with the manifest's flags and nvcc's link make, byte for byte
/// but for nvcc's temporary files' names (its process number, which differs between any two
/// runs of either path), and its report is the same but for the `unit` the driver adds (the
/// source file, which a ptxas step does not see). Checked on a forced budget and on the
/// spill2smem rewrite (the two ways a forced ptxas step ships: ptxas's output, a rewritten
/// cubin).
#[test]
fn forced_variants_on_a_shared_front_end_are_the_driver_builds() {
    let Some(out) = built() else { return };
    let nvcc = common::find_nvcc().unwrap();
    let rows = manifest(out);
    let dir = tempfile::tempdir().unwrap();
    let source = gpu_dir().join("stencil.cu");
    let without_unit = |path: &Path| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(path).unwrap();
        common::normalise_tmpxft_text(&text)
            .lines()
            .map(|l| {
                let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
                r.as_object_mut().unwrap().remove("unit");
                r
            })
            .collect()
    };
    for v in ["budget-32", "spill2smem"] {
        let (_, (_, applied, flags)) = rows
            .iter()
            .find(|((p, rv, _), _)| p == "stencil" && rv == v)
            .unwrap_or_else(|| panic!("stencil.{v} not in the manifest"));
        assert!(*applied, "stencil.{v}: the forced setting must apply");
        let (obj, exe, report) = (
            dir.path().join(format!("{v}.o")),
            dir.path().join(v),
            dir.path().join(format!("{v}.jsonl")),
        );
        let o = common::orion()
            .arg("-c")
            .args(flags.split_whitespace())
            .arg(format!("--orion-report={}", report.display()))
            .arg(&source)
            .arg("-o")
            .arg(&obj)
            .output()
            .unwrap();
        common::assert_ok(&o, &format!("nvcc-orion -c {flags}"));
        let o = common::command(&nvcc)
            .args(["-arch=sm_90", "-cudart", "static"])
            .arg(&obj)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        common::assert_ok(&o, "nvcc's link");
        let shared = out.join(format!("nvcc-orion-gpu-bench/bin/stencil.{v}"));
        assert!(
            common::mask_tmpxft(&std::fs::read(&exe).unwrap())
                == common::mask_tmpxft(&std::fs::read(&shared).unwrap()),
            "stencil.{v}: build.sh's binary is not nvcc-orion -c's"
        );
        let built_report = out.join(format!("obj/stencil.{v}.jsonl"));
        assert_eq!(
            without_unit(&report),
            without_unit(&built_report),
            "stencil.{v}: the reports"
        );
    }
}

/// `build.sh PROGRAM...` where no program given has forced variants (`control`) builds its
/// four binaries and runs no front end: an empty list of forced variants builds nothing (GNU
/// xargs without `-r` ran the front end once with no program, and the build failed). The
/// toolkit and nvcc-orion are stand-ins here (shell scripts that check their inputs, log each
/// call and write their outputs), so the check costs no real build: what it tests is
/// build.sh's own lists, which are the same with the real tools (the full run above covers
/// those, with every program).
#[test]
fn programs_without_forced_variants_build_alone() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let log = dir.path().join("calls.log");
    // Each stand-in fails on an input file that is not there, as the real tools do.
    let inputs_exist = r#"out=; prev=
for a in "$@"; do
  [ "$prev" = -o ] && out=$a
  case $prev:$a in -o:*) ;; *.cu|*.o) [ -f "$a" ] || { echo "$0: no input file $a" >&2; exit 1; } ;; esac
  prev=$a
done"#;
    let script = |name: &str, body: &str| {
        let path = tools.join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{name} $*\" >>\"$STANDIN_LOG\"\n{body}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let nvcc = script(
        "nvcc",
        &format!(
            "[ \"$1\" = --version ] && {{ printf 'stand-in nvcc\\nrelease 13\\n'; exit 0; }}\n\
             {inputs_exist}\necho \"$*\" >\"$out\""
        ),
    );
    script(
        "cuobjdump",
        "printf ' Function control_k:\\n  REG:16 STACK:0 SHARED:0\\n'",
    );
    // nvcc-orion's report: one kernel with no budget below ptxas's (no forced variant).
    let orion = script(
        "nvcc-orion",
        &format!(
            "[ \"$1\" = calibrate ] && {{ mkdir -p \"$3\" && : >\"$3/orion-calibrate\"; exit 0; }}\n\
             {inputs_exist}\nfor a in \"$@\"; do case $a in --orion-report=*) report=${{a#*=}} ;; esac; done\n\
             echo '{{\"kernel\":\"control_k\",\"reason\":\"no lower budget\",\"candidates\":[{{\"registers\":16}}],\"pruned\":[]}}' >\"$report\"\n\
             echo \"$*\" >\"$out\""
        ),
    );
    let out = dir.path().join("out");
    let o = common::command("bash")
        .arg(gpu_dir().join("build.sh"))
        .arg("control")
        .env("NVCC_ORION_NVCC", &nvcc)
        .env("NVCC_ORION_BIN", &orion)
        .env("OUT", &out)
        .env("STANDIN_LOG", &log)
        .output()
        .unwrap();
    common::assert_ok(&o, "build.sh control (stand-in tools)");
    let calls = std::fs::read_to_string(&log).unwrap();
    // Four compiles of control.cu (nvcc, default, adapt, train), four links, no front end.
    let compiles: Vec<&str> = calls.lines().filter(|l| l.contains(" -c ")).collect();
    assert_eq!(compiles.len(), 4, "{calls}");
    assert!(
        compiles.iter().all(|l| l.contains("bench/gpu/control.cu")),
        "{calls}"
    );
    assert!(
        !calls.contains("-dryrun") && !calls.contains("--ptxas"),
        "{calls}"
    );
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.contains("-cudart static"))
            .count(),
        4,
        "{calls}"
    );
    let stage = out.join("nvcc-orion-gpu-bench");
    let mut bins: Vec<String> = std::fs::read_dir(stage.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    bins.sort();
    assert_eq!(
        bins,
        [
            "control.adapt",
            "control.default",
            "control.nvcc",
            "control.train"
        ]
    );
    let manifest = std::fs::read_to_string(stage.join("manifest.csv")).unwrap();
    assert_eq!(
        manifest,
        "program,variant,flags,kernel,registers,applied,reason\n\
         control,adapt,\"-O3 -arch=sm_90 --orion-mode=adapt\",control_k,16,no,\"\"\n\
         control,default,\"-O3 -arch=sm_90 \",control_k,16,yes,\"no lower budget\"\n\
         control,nvcc,\"-O3 -arch=sm_90 \",control_k,16,yes,\"\"\n\
         control,train,\"-O3 -arch=sm_90 --orion-mode=train\",control_k,16,no,\"\"\n"
    );
    assert!(out.join("nvcc-orion-gpu-bench.tar.xz").is_file());
}

#[test]
fn cpu_references_pass_and_no_gpu_exits_3() {
    let Some(out) = built() else { return };
    let bin = out.join("nvcc-orion-gpu-bench/bin");
    let gpu = std::env::var_os("NVCC_ORION_TEST_GPU").is_some_and(|v| v == "1");
    for p in programs() {
        for v in ["nvcc", "default"] {
            let exe = bin.join(format!("{p}.{v}"));
            let o = Command::new(&exe).arg("--cpu-only").output().unwrap();
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success()
                    && stdout
                        == format!(
                            "CPU-OK {p}: CPU reference checked against an independent formulation\n"
                        ),
                "{p}.{v} --cpu-only: {}\n{stdout}{}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
            // No GPU here (no driver): one line, status 3, never a crash. Where there is one
            // (NVCC_ORION_TEST_GPU=1 says so), the nvcc and default builds must pass.
            let o = Command::new(&exe).output().unwrap();
            let stdout = String::from_utf8_lossy(&o.stdout);
            if gpu {
                assert!(o.status.success(), "{p}.{v}: {stdout}");
                assert!(stdout.lines().any(|l| l.starts_with("RESULT,")), "{stdout}");
                continue;
            }
            assert_eq!(o.status.code(), Some(3), "{p}.{v}: {stdout}");
            assert_eq!(stdout.lines().count(), 1, "{stdout}");
            assert!(stdout.starts_with(&format!("NO-GPU {p}: ")), "{stdout}");
            // A bad command line is status 4.
            let o = Command::new(&exe).arg("--bogus").output().unwrap();
            assert_eq!(o.status.code(), Some(4), "{p}.{v}");
        }
    }
    if gpu {
        return;
    }
    // run.sh given the archive unpacks it and calibrates first: no GPU, status 3, one line
    // from calibrate and one from run.sh, and no program is run.
    let scratch = tempfile::tempdir().unwrap();
    let archive = scratch.path().join("nvcc-orion-gpu-bench.tar.xz");
    std::fs::copy(out.join("nvcc-orion-gpu-bench.tar.xz"), &archive).unwrap();
    let o = Command::new("bash")
        .arg(gpu_dir().join("run.sh"))
        .arg(&archive)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("calibrate: no usable GPU here")
            && stderr.contains("run.sh: no usable GPU (calibrate)")
            && !stderr.contains("NO-GPU "),
        "{stderr}"
    );
    assert!(
        scratch
            .path()
            .join("nvcc-orion-gpu-bench/manifest.csv")
            .is_file()
    );
}

#[test]
fn the_summary_of_the_test_fixture() {
    let fixture = gpu_dir().join("testdata/sample.csv");
    let text = std::fs::read_to_string(&fixture).unwrap();
    assert!(
        text.starts_with("# data: SYNTHETIC TEST DATA"),
        "the fixture must say it is test data"
    );
    let f = fixture.to_str().unwrap();
    let o = python(&["summary", f]);
    let s = String::from_utf8_lossy(&o.stdout);
    // A mismatch: status 1.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{s}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // nbody 2.0/1.6 = 1.25x, control and oversize 1x: geomean 1.25^(1/3).
    assert!(
        s.contains("geomean speedup of the default choice over nvcc: 1.077x over 3 kernels"),
        "{s}"
    );
    // Best per kernel: nbody budget-48 (1.6/1.25), control the default itself, oversize regdem
    // (1.0/0.8; the faster pragma row did not take effect and does not count).
    assert!(
        s.contains("predictor fidelity: 1/3 kernels chose their best variant (within 2%); geomean of chosen/best speed 0.855"),
        "{s}"
    );
    assert!(
        s.contains("best budget-48 (48 registers) 1.600x; the choice runs at 78.1% of the best"),
        "{s}"
    );
    assert!(s.contains("best regdem (32 registers) 1.250x"), "{s}");
    assert!(
        s.contains("  spill2smem: geomean 1.111x over 1 kernels"),
        "{s}"
    );
    assert!(!s.contains("pragma oversize"), "{s}");
    // The selector: adapt and train rows are no candidates of their own (the fidelity lines
    // above are unchanged by them); adapt is judged against the exhaustive best, and its
    // cost where a kernel has no variants against the default build.
    assert!(
        s.contains("adapt within 2% of the exhaustive best: 1/2 kernels; geomean adapt/best 1.098"),
        "{s}"
    );
    assert!(
        s.contains("nbody/nbody_forces: adapt 1.2700 ms, 1.016x the best (budget-48)\n"),
        "{s}"
    );
    assert!(s.contains("oversize/oversize_chain: adapt 0.9500 ms, 1.187x the best (regdem); more than 2% slower"), "{s}");
    assert!(
        s.contains(
            "overhead on kernels without variants: geomean adapt/default 1.010 over 1 kernels"
        ),
        "{s}"
    );
    // The mismatch, plain when piped, red when forced; the refused oversized launch is a pass.
    assert!(
        s.contains("\nMISMATCH nbody/nbody_forces variant regdem: MISMATCH\n1 output mismatches"),
        "{s}"
    );
    assert!(
        !s.contains('\u{1b}') && !s.contains("launch-refused"),
        "{s}"
    );
    let o = python(&["summary", f, "--color=always"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("\u{1b}[31mMISMATCH nbody/nbody_forces variant regdem: MISMATCH\u{1b}[0m"),
        "{s}"
    );
}

/// The predictor's fidelity per program: Spearman's rank correlation between predicted cycles
/// and measured times of each kernel's timed variants, before and after calibration.
#[test]
fn fidelity_before_and_after_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.csv");
    std::fs::write(
        &results,
        "# device: Stand-in GPU\n\
         program,kernel,variant,registers,occupancy,median_ms,speedup_vs_nvcc,check,applied\n\
         p,k,nvcc,64,0.5,3.0,1.0,ok,yes\n\
         p,k,default,64,0.5,3.0,1.0,ok,yes\n\
         p,k,budget-48,48,0.6,2.0,1.5,ok,yes\n\
         p,k,budget-32,32,1.0,1.0,3.0,ok,yes\n\
         p,k,adapt,64,0.5,0.9,3.3,ok,yes\n",
    )
    .unwrap();
    // Before: the model ranks the three the wrong way round; after: the right way.
    let before = dir.path().join("before.csv");
    std::fs::write(
        &before,
        "p,nvcc,k,10\np,default,k,10\np,budget-48,k,20\np,budget-32,k,30\np,adapt,k,1\n",
    )
    .unwrap();
    let after = dir.path().join("after.csv");
    std::fs::write(
        &after,
        "p,nvcc,k,30\np,default,k,30\np,budget-48,k,20\np,budget-32,k,10\n",
    )
    .unwrap();
    let o = python(&[
        "fidelity",
        results.to_str().unwrap(),
        before.to_str().unwrap(),
        after.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    // Ties (nvcc and default) share a rank; the selector's build is no candidate.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().nth(1).unwrap(),
        "  p: before -1.000 (1 kernels), after +1.000 (1 kernels)"
    );
}

#[test]
fn budgets_from_a_report() {
    // Two kernels: built, pruned and pragma budgets; rewrites are not budgets of their own.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"kernel":"a","reason":"forced: budget 48","candidates":[{"budget":null},{"budget":{"regs":48,"smem_spill":false}},{"budget":{"regs":40,"smem_spill":false,"spill2smem":true}}],"pruned":[{"budget":{"regs":32,"smem_spill":true}}]}"#,
            "\n",
            r#"{"kernel":"b","reason":"no lower budget raises occupancy","candidates":[{"budget":null},{"budget":{"regs":40,"smem_spill":false,"regdem_from":56}}],"pruned":[{"budget":{"regs":64,"smem_spill":false}}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let o = python(&["budgets", path.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "budget:64\nbudget:48\npragma\n"
    );
    let o = python(&["applied", path.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "a\tyes\tforced: budget 48\nb\tno\tno lower budget raises occupancy\n"
    );
    // build.sh's form: every report in one run, each line led by its report's path.
    let other = dir.path().join("s.jsonl");
    std::fs::write(&other, r#"{"kernel":"c","reason":"forced: spill2smem"}"#).unwrap();
    let (p, q) = (path.to_str().unwrap(), other.to_str().unwrap());
    let o = python(&["applied-each", p, q]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!(
            "{p}\ta\tyes\tforced: budget 48\n{p}\tb\tno\tno lower budget raises occupancy\n\
             {q}\tc\tyes\tforced: spill2smem\n"
        )
    );
}

#[test]
fn run_sh_collects_stand_in_programs_into_one_csv() {
    // Stand-ins for the programs (shell scripts printing what the real ones print on a GPU),
    // so run.sh's collection is checked without a GPU: a speedup over the nvcc build, a
    // mismatch, and a crash with no result line.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nvcc-orion-gpu-bench");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    for f in ["run.sh", "harness.py"] {
        std::fs::copy(gpu_dir().join(f), root.join(f)).unwrap();
    }
    std::fs::write(
        root.join("manifest.csv"),
        "program,variant,flags,kernel,registers,applied,reason\n\
         alpha,nvcc,\"-O3\",alpha_k,64,yes,\"\"\n\
         alpha,default,\"-O3\",alpha_k,64,yes,\"no lower budget raises occupancy\"\n\
         alpha,budget-40,\"-O3 --orion-force=budget:40\",alpha_k,40,yes,\"forced: budget 40\"\n\
         alpha,adapt,\"-O3 --orion-mode=adapt\",alpha_k,64,yes,\"v1=40\"\n\
         alpha,train,\"-O3 --orion-mode=train\",alpha_k,64,yes,\"v1=40\"\n\
         beta,nvcc,\"-O3\",beta_k,32,yes,\"\"\n\
         beta,default,\"-O3\",beta_k,32,yes,\"\"\n\
         beta,regdem,\"-O3 --orion-force=regdem\",beta_k,32,no,\"forced regdem, but no proved candidate\"\n",
    )
    .unwrap();
    let stand_in = |name: &str, body: &str| {
        let path = root.join("bin").join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho DEVICE,Stand-in GPU,13050\n{body}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stand_in(
        "alpha.nvcc",
        "echo RESULT,alpha,alpha_k,64,0.5000,2.000000,ok",
    );
    stand_in(
        "alpha.default",
        "echo RESULT,alpha,alpha_k,64,0.5000,1.600000,ok",
    );
    stand_in(
        "alpha.budget-40",
        "echo RESULT,alpha,alpha_k,40,1.0000,1.000000,MISMATCH; exit 1",
    );
    // The selector's builds get their settings: untimed launches for the selector to measure
    // in, verbose lines (kept in selector.log), and train's profile path.
    stand_in(
        "alpha.adapt",
        "[ \"$BENCH_WARMUP_RUNS\" = 64 ] && [ -n \"$NVCC_ORION_VERBOSE\" ] || exit 9\n\
         echo 'nvcc-orion: stand-in selector line' >&2\n\
         echo RESULT,alpha,alpha_k,64,0.5000,1.010000,ok",
    );
    stand_in(
        "alpha.train",
        "printf '{}' > \"$NVCC_ORION_PROFILE_OUT\" || exit 9\n\
         echo RESULT,alpha,alpha_k,64,0.5000,1.900000,ok",
    );
    stand_in("beta.nvcc", "echo RESULT,beta,beta_k,32,1.0000,1.000000,ok");
    stand_in(
        "beta.default",
        "echo RESULT,beta,beta_k,32,1.0000,1.000000,ok",
    );
    stand_in("beta.regdem", "exit 7");
    // The calibration: nvcc-orion itself, and a stand-in for its microbenchmarks printing what
    // they would on an sm_90 GPU with 132 SMs.
    std::fs::create_dir_all(root.join("tools")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_nvcc-orion"),
        root.join("tools/nvcc-orion"),
    )
    .unwrap();
    let mut measurements = String::from("echo DEVICE,Stand-in GPU,90,132,52428800,13050\n");
    for (i, cycles) in [
        (12, 40),
        (17, 40),
        (20, 263),
        (24, 263),
        (26, 479),
        (27, 479),
    ] {
        measurements += &format!("echo CHASE,{},{cycles}\n", 1u64 << i);
    }
    for (level, rate) in [("L1", 128.0), ("L2", 47.0), ("DRAM", 12.8)] {
        for w in [1u32, 2, 4, 8, 16, 32, 64] {
            let y = (f64::from(w) * 4.0).min(rate);
            measurements += &format!("echo STREAM,{level},{w},{y}\n");
        }
    }
    let calibrate = root.join("tools/orion-calibrate");
    std::fs::write(&calibrate, format!("#!/bin/sh\n{measurements}")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&calibrate, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = Command::new("bash")
        .arg(root.join("run.sh"))
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let csv = std::fs::read_to_string(root.join("results.csv")).unwrap();
    let (meta, rows): (Vec<&str>, Vec<&str>) = csv.lines().partition(|l| l.starts_with('#'));
    if which::which("nvidia-smi").is_err() {
        assert_eq!(meta[0], "# device: Stand-in GPU");
        assert_eq!(meta[1], "# driver: CUDA driver API 13050");
    }
    assert!(meta[2].starts_with("# date: 20"), "{meta:?}");
    assert_eq!(
        rows,
        [
            "program,kernel,variant,registers,occupancy,median_ms,speedup_vs_nvcc,check,applied",
            "alpha,alpha_k,nvcc,64,0.5000,2.000000,1.0000,ok,yes",
            "alpha,alpha_k,default,64,0.5000,1.600000,1.2500,ok,yes",
            "alpha,alpha_k,budget-40,40,1.0000,1.000000,,MISMATCH,yes",
            "alpha,alpha_k,adapt,64,0.5000,1.010000,1.9802,ok,yes",
            "alpha,alpha_k,train,64,0.5000,1.900000,1.0526,ok,yes",
            "beta,beta_k,nvcc,32,1.0000,1.000000,1.0000,ok,yes",
            "beta,beta_k,default,32,1.0000,1.000000,1.0000,ok,yes",
            "beta,beta_k,regdem,32,,,,CRASH-rc7,no",
        ]
    );
    assert!(
        stdout.contains("geomean speedup of the default choice over nvcc: 1.118x over 2 kernels"),
        "{stdout}"
    );
    assert!(
        stdout.contains("MISMATCH alpha/alpha_k variant budget-40: MISMATCH"),
        "{stdout}"
    );
    assert!(
        stdout.contains("MISMATCH beta/beta_k variant regdem: CRASH-rc7"),
        "{stdout}"
    );
    // Calibrated first, keyed by the device and its driver; the stand-ins hold no cubins, so
    // no variant has a prediction to rank.
    let calibration = std::fs::read_to_string(root.join("calibration.json")).unwrap();
    if which::which("nvidia-smi").is_err() {
        assert!(
            calibration.contains("\"Stand-in GPU / driver 13050\""),
            "{calibration}"
        );
    }
    assert!(root.join("calibration.txt").is_file());
    assert!(
        stdout.contains(
            "predictor fidelity per program (Spearman rank correlation of predicted against measured variant times, mean over kernels):\n  no kernel with two timed and predicted variants"
        ),
        "{stdout}"
    );
    // The budget-40 mismatch is no candidate: adapt is judged against the default build.
    assert!(
        stdout.contains("alpha/alpha_k: adapt 1.0100 ms, 0.631x the best (default)\n"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("profiles/alpha.json")).unwrap(),
        "{}"
    );
    let log = std::fs::read_to_string(root.join("selector.log")).unwrap();
    assert_eq!(
        log,
        "== alpha adapt: exit 0\nnvcc-orion: stand-in selector line\n== alpha train: exit 0\n"
    );
    // Past the time limit nothing more runs, and every row left says so.
    let late = dir.path().join("late.csv");
    let o = Command::new("bash")
        .arg(root.join("run.sh"))
        .env("PATH", "/usr/bin:/bin")
        .env("TOTAL_SECONDS", "-1")
        .env("RESULTS", &late)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let csv = std::fs::read_to_string(&late).unwrap();
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 8, "{csv}");
    assert!(
        rows.iter().all(|r| r.contains(",,,NOT-RUN-time-limit,")),
        "{csv}"
    );
}

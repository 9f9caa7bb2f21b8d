//! What ptxas prints is what it would print for the shipped code (issue 48, point 2). With
//! `-Xptxas -warn-spills` (and `-v`, and `-Werror`) the tuned kernel of
//! `tests/kernels/tune/pressure.cu` used to be spliced into the untuned module, which kept the
//! untuned run's messages: the shipped kernel spilled and nothing said so. Here nvcc-orion's
//! stderr and cubin are compared with whole-module ptxas's on the same PTX with the budgets
//! the report says were chosen.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use nvcc_orion::tune::ptx::{Budget, with_budgets};

/// The chosen budget of every kernel the report says was retuned (plain register budgets:
/// a rewrite's code is not ptxas's, so has no ptxas messages to compare).
fn chosen(report: &Path) -> BTreeMap<String, Budget> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(report).unwrap().lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let c = &r["candidates"][r["chosen"].as_u64().unwrap() as usize];
        if c["budget"].is_null() {
            continue;
        }
        assert_eq!(c["budget"]["smem_spill"], false, "a plain budget: {c}");
        let regs = c["budget"]["regs"].as_u64().unwrap() as u32;
        out.insert(
            r["kernel"].as_str().unwrap().to_string(),
            Budget::regs(regs),
        );
    }
    out
}

#[test]
fn ptxas_messages_are_the_whole_modules() {
    let Some(nvcc) = common::nvcc_or_skip("diagnostics_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernel = common::kernels_dir().join("tune").join("pressure.cu");
    let ptx = dir.path().join("pressure.ptx");
    let o = Command::new(&nvcc)
        .args(["-arch=sm_90", "-ptx"])
        .arg(&kernel)
        .arg("-o")
        .arg(&ptx)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc -ptx");
    let ptxas = common::toolkit_tool(&nvcc, "ptxas");
    let mut spills_seen = false;
    for (i, flags) in [
        &["-warn-spills"][..],
        &["-warn-spills", "-v"],
        &["-warn-spills", "-Werror"],
    ]
    .iter()
    .enumerate()
    {
        let what = flags.join(" ");
        let report = dir.path().join(format!("report{i}.jsonl"));
        let out = dir.path().join(format!("orion{i}.cubin"));
        let o = common::without_our_settings(common::orion(), &nvcc)
            .current_dir(dir.path())
            .env("NVCC_ORION_CACHE", dir.path().join("cache"))
            .env("NVCC_ORION_REPORT", &report)
            .args(["-arch=sm_90", "-cubin"])
            .arg(&kernel)
            .arg("-o")
            .arg(&out)
            .arg(format!("-Xptxas={}", flags.join(",")))
            .output()
            .unwrap();
        common::assert_ok(&o, &format!("nvcc-orion {what}"));
        let budgets = chosen(&report);
        let edited = dir.path().join(format!("whole{i}.ptx"));
        let text = std::fs::read_to_string(&ptx).unwrap();
        std::fs::write(&edited, with_budgets(&text, &budgets).unwrap()).unwrap();
        let whole = dir.path().join(format!("whole{i}.cubin"));
        let w = Command::new(&ptxas)
            .args(["-arch=sm_90", "-m64"])
            .args(*flags)
            .arg(&edited)
            .arg("-o")
            .arg(&whole)
            .output()
            .unwrap();
        common::assert_ok(&w, &format!("whole-module ptxas {what}"));
        // `-v`'s "Compile time = ..." lines are the clock's.
        let got = common::normalise_times(&String::from_utf8_lossy(&o.stderr));
        let want = common::normalise_times(&String::from_utf8_lossy(&w.stderr));
        assert_eq!(got, want, "{what}: stderr (budgets {budgets:?})");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&whole).unwrap(),
            "{what}: the cubin is whole-module ptxas's"
        );
        spills_seen |= want.contains("spilled");
        if flags.contains(&"-Werror") {
            assert!(
                !want.contains("spilled"),
                "{what}: a spilling variant is no candidate"
            );
        }
    }
    assert!(
        spills_seen,
        "a tuned kernel spills, so there is a warning to see"
    );
}

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

/// nvcc's PTX of `kernel` for sm_90 (with `flags`) at `ptx`: the input every reference
/// build here starts from.
fn nvcc_ptx(nvcc: &Path, kernel: &Path, ptx: &Path, flags: &[&str]) {
    let o = Command::new(nvcc)
        .args(["-arch=sm_90", "-ptx"])
        .args(flags)
        .arg(kernel)
        .arg("-o")
        .arg(ptx)
        .output()
        .unwrap();
    common::assert_ok(&o, &format!("nvcc -ptx {}", flags.join(" ")));
}

/// nvcc-orion in `dir`, with a variant cache of its own and its report to `report`.
fn orion_in(dir: &Path, nvcc: &Path, report: &Path) -> Command {
    let mut c = common::without_our_settings(common::orion(), nvcc);
    c.current_dir(dir)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env("NVCC_ORION_REPORT", report);
    c
}

#[test]
fn ptxas_messages_are_the_whole_modules() {
    let Some(nvcc) = common::nvcc_or_skip("diagnostics_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernel = common::kernels_dir().join("tune").join("pressure.cu");
    let ptx = dir.path().join("pressure.ptx");
    nvcc_ptx(&nvcc, &kernel, &ptx, &[]);
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
        let o = orion_in(dir.path(), &nvcc, &report)
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

/// nvdisasm's listing of a cubin annotated with the line tables: `-g` reads `.debug_line`,
/// `-gp` reads `.nv_debug_line_sass` (the PTX lines).
fn line_listing(nvdisasm: &Path, cubin: &Path, flag: &str) -> String {
    let o = Command::new(nvdisasm)
        .arg(flag)
        .arg(cubin)
        .output()
        .unwrap();
    common::assert_ok(&o, &format!("nvdisasm {flag}"));
    String::from_utf8(o.stdout).unwrap()
}
/// A forced rewrite under `-lineinfo`: the line tables describe ptxas's code by address and
/// nothing rewrites them, so nothing is rewritten, the cubin is plain nvcc's, and one warning
/// says why. Without `-lineinfo` the same build does rewrite (so the warning is the cause).
#[test]
fn a_forced_rewrite_under_lineinfo_ships_nvccs_cubin_and_says_why() {
    let Some(nvcc) = common::nvcc_or_skip("diagnostics_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernel = common::kernels_dir().join("spill_corpus").join("cap40.cu");
    let build = |lineinfo: bool, orion: bool| {
        let out = dir
            .path()
            .join(format!("k{}{}.cubin", lineinfo as u8, orion as u8));
        let mut c = if orion {
            let mut c = orion_in(dir.path(), &nvcc, &dir.path().join("r.jsonl"));
            c.arg("--orion-force=spill2smem");
            c
        } else {
            let mut c = Command::new(&nvcc);
            c.current_dir(dir.path());
            c
        };
        c.args(["-arch=sm_90", "-cubin", "-maxrregcount=40"]);
        if lineinfo {
            c.arg("-lineinfo");
        }
        let o = c.arg(&kernel).arg("-o").arg(&out).output().unwrap();
        common::assert_ok(&o, "build");
        (
            std::fs::read(&out).unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (plain, _) = build(true, false);
    let (ours, stderr) = build(true, true);
    assert_eq!(ours, plain, "nothing rewritten under -lineinfo");
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("SASS rewrites are off for this module"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    let (plain, _) = build(false, false);
    let (ours, stderr) = build(false, true);
    assert_ne!(ours, plain, "without -lineinfo the forced rewrite ships");
    assert!(!stderr.contains("SASS rewrites are off"), "{stderr}");
}

/// `-lineinfo` (issue 48, point 1): the line tables that ship describe the shipped code. A
/// retuned kernel of `pressure.cu` (8 kernels) used to be spliced into the untuned module,
/// whose `.debug_line` and `.nv_debug_line_sass` then put the kernel's instructions at the
/// untuned code's lines. Here nvdisasm's line-annotated listings of nvcc-orion's cubin are
/// those of whole-module ptxas on the same PTX at the budgets the report says were chosen.
#[test]
fn line_tables_are_the_whole_modules() {
    let Some(nvcc) = common::nvcc_or_skip("diagnostics_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kernel = common::kernels_dir().join("tune").join("pressure.cu");
    let ptx = dir.path().join("pressure.ptx");
    nvcc_ptx(&nvcc, &kernel, &ptx, &["-lineinfo"]);
    let report = dir.path().join("report.jsonl");
    let out = dir.path().join("orion.cubin");
    let o = orion_in(dir.path(), &nvcc, &report)
        .args(["-arch=sm_90", "-cubin", "-lineinfo"])
        .arg(&kernel)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion -lineinfo");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let budgets = chosen(&report);
    assert!(!budgets.is_empty(), "a kernel of pressure.cu is retuned");
    let edited = dir.path().join("whole.ptx");
    let text = std::fs::read_to_string(&ptx).unwrap();
    std::fs::write(&edited, with_budgets(&text, &budgets).unwrap()).unwrap();
    let whole = dir.path().join("whole.cubin");
    let w = Command::new(common::toolkit_tool(&nvcc, "ptxas"))
        .args(["-arch=sm_90", "-m64", "--generate-line-info"])
        .arg(&edited)
        .arg("-o")
        .arg(&whole)
        .output()
        .unwrap();
    common::assert_ok(&w, "whole-module ptxas -lineinfo");
    let nvdisasm = common::toolkit_tool(&nvcc, "nvdisasm");
    for flag in ["-g", "-gp"] {
        let got = line_listing(&nvdisasm, &out, flag);
        let want = line_listing(&nvdisasm, &whole, flag);
        assert!(want.contains("line "), "{flag}: the listing has line info");
        assert!(
            got == want,
            "{flag}: line info (budgets {budgets:?}):\n{}",
            common::text_diff(&want, &got)
        );
    }
}

/// Adapt mode (issue 48, "for every way a cubin is assembled"): the object embeds each tuned
/// kernel's variants (`<kernel>__orion_v<k>`, built by one more ptxas run or copied in), and
/// the user still sees what ptxas prints for the kernels under their own names at the budgets
/// they ship with, once each: whole-module ptxas's messages on the PTX at the budgets the
/// report says were chosen, none for a variant. `pressure.cu` ships a spilling retuned kernel
/// with two variants; under `-Werror` each of its lower budgets spills, so `regpressure.cu`,
/// whose nearest cliff does not, carries a variant there.
#[test]
fn adapt_prints_ptxas_messages_for_the_original_kernels_once() {
    let Some(nvcc) = common::nvcc_or_skip("diagnostics_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cuobjdump = common::toolkit_tool(&nvcc, "cuobjdump");
    for (i, (file, flags)) in [
        ("tune/pressure.cu", &["-warn-spills", "-v"][..]),
        ("regpressure.cu", &["-warn-spills", "-Werror", "-v"]),
    ]
    .iter()
    .enumerate()
    {
        let what = format!("adapt {file} {}", flags.join(" "));
        let kernel = common::kernels_dir().join(file);
        let ptx = dir.path().join(format!("adapt{i}.ptx"));
        nvcc_ptx(&nvcc, &kernel, &ptx, &[]);
        let report = dir.path().join(format!("adapt{i}.jsonl"));
        let obj = dir.path().join(format!("adapt{i}.o"));
        let o = orion_in(dir.path(), &nvcc, &report)
            .env("NVCC_ORION", "adapt")
            .args(["-arch=sm_90", "-c"])
            .arg(&kernel)
            .arg("-o")
            .arg(&obj)
            .arg(format!("-Xptxas={}", flags.join(",")))
            .output()
            .unwrap();
        common::assert_ok(&o, &format!("nvcc-orion {what}"));
        let elf = Command::new(&cuobjdump)
            .arg("-elf")
            .arg(&obj)
            .output()
            .unwrap();
        common::assert_ok(&elf, "cuobjdump -elf");
        assert!(
            String::from_utf8_lossy(&elf.stdout).contains("__orion_v"),
            "{what}: the object embeds variants"
        );
        let budgets = chosen(&report);
        let edited = dir.path().join(format!("whole{i}.ptx"));
        let text = std::fs::read_to_string(&ptx).unwrap();
        std::fs::write(&edited, with_budgets(&text, &budgets).unwrap()).unwrap();
        let w = Command::new(common::toolkit_tool(&nvcc, "ptxas"))
            .args(["-arch=sm_90", "-m64"])
            .args(*flags)
            .arg(&edited)
            .arg("-o")
            .arg(dir.path().join(format!("whole{i}.cubin")))
            .output()
            .unwrap();
        common::assert_ok(&w, &format!("whole-module ptxas {what}"));
        let got = common::normalise_times(&String::from_utf8_lossy(&o.stderr));
        let want = common::normalise_times(&String::from_utf8_lossy(&w.stderr));
        assert!(want.contains("Used"), "{what}: ptxas has something to say");
        assert_eq!(got, want, "{what}: stderr (budgets {budgets:?})");
    }
}

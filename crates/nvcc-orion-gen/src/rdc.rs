//! `-rdc` programs: separate compilation, device link, host link and a static library, in
//! every mode; each step must succeed wherever it does with `NVCC_ORION=off`.

use std::path::Path;

use crate::ast::Program;
use crate::harness::{Harness, Mismatch, Mode, Outcome, tail};
use crate::tools::run;

/// The steps, in order: (name, arguments after `-arch=sm_XX`).
const STEPS: &[(&str, &[&str])] = &[
    ("compile a.cu", &["-rdc=true", "-c", "a.cu", "-o", "a.o"]),
    ("compile b.cu", &["-rdc=true", "-c", "b.cu", "-o", "b.o"]),
    (
        "compile main.cu",
        &["-rdc=true", "-c", "main.cu", "-o", "main.o"],
    ),
    (
        "device link",
        &["-dlink", "a.o", "b.o", "main.o", "-o", "dlink.o"],
    ),
    ("host link", &["a.o", "b.o", "main.o", "-o", "app"]),
    ("library", &["-lib", "a.o", "b.o", "-o", "libgen.a"]),
    (
        "link with the library",
        &["main.o", "libgen.a", "-o", "app2"],
    ),
];

pub fn check(h: &Harness, dir: &Path, p: &Program, arch: u32, out: &mut Outcome) {
    // Plain nvcc's chain is needed only where a mode's step fails (a step that fails with
    // nvcc-orion off too is not a finding), so it is built then, once.
    let mut off = None;
    for &mode in h.modes.iter().filter(|m| m.applies(arch)) {
        let env: &[(&str, &str)] = match mode {
            Mode::Adapt => &[("NVCC_ORION", "adapt")],
            Mode::Lowest => &[("NVCC_ORION_FORCE", "lowest")],
            Mode::Spill2Smem => &[("NVCC_ORION_FORCE", "spill2smem")],
            Mode::Regdem => &[("NVCC_ORION_FORCE", "regdem")],
            Mode::AdaptLowest => &[("NVCC_ORION", "adapt"), ("NVCC_ORION_FORCE", "lowest")],
            Mode::Train => &[("NVCC_ORION", "train")],
            Mode::Default => &[],
        };
        let got = steps(h, dir, arch, mode.name(), env);
        for (i, (name, ok, err)) in got.iter().enumerate() {
            if *ok {
                continue;
            }
            let off =
                off.get_or_insert_with(|| steps(h, dir, arch, "off", &[("NVCC_ORION", "off")]));
            if off[i].1 {
                out.mismatches.push(Mismatch {
                    seed: p.seed,
                    arch,
                    mode: mode.name().into(),
                    kernel: None,
                    kind: format!("rdc {name} failed"),
                    detail: err.clone(),
                });
            }
        }
    }
}

/// Run every step in a fresh folder; (step, succeeded, its error).
fn steps(
    h: &Harness,
    dir: &Path,
    arch: u32,
    label: &str,
    env: &[(&str, &str)],
) -> Vec<(&'static str, bool, String)> {
    let d = dir.join(format!("rdc-{}", label.replace('=', "-")));
    let _ = std::fs::create_dir_all(&d);
    for f in ["a.cu", "b.cu", "main.cu"] {
        let _ = std::fs::copy(dir.join(f), d.join(f));
    }
    let nvcc = h.tools.nvcc.to_string_lossy().into_owned();
    let cache = h
        .cache
        .as_ref()
        .map_or("off".to_string(), |c| c.to_string_lossy().into_owned());
    let mut e = vec![
        ("NVCC_ORION_NVCC", nvcc.as_str()),
        ("NVCC_ORION_CACHE", cache.as_str()),
    ];
    e.extend_from_slice(env);
    let a = format!("-arch=sm_{arch}");
    STEPS
        .iter()
        .map(|(name, args)| {
            let mut v = vec![a.as_str()];
            v.extend_from_slice(args);
            let r = run(&d, &h.tools.orion, &v, &e);
            (*name, r.ok, tail(&r.stderr))
        })
        .collect()
}

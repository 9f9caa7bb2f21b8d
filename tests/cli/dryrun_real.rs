//! The dry-run parser against the installed nvcc's real `--dryrun` output (never a frozen
//! string): every line of every trajectory we replay must be understood, with the steps we
//! rely on where we expect them.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use nvcc_orion::driver::dryrun::{self, Step};
use nvcc_orion::toolkit::Toolkit;

fn toolkit() -> Option<Toolkit> {
    let me = Path::new(env!("CARGO_BIN_EXE_nvcc-orion"));
    match Toolkit::locate(&|k| std::env::var_os(k), me) {
        Ok(tk) => Some(tk),
        Err(e) => {
            common::skip(module_path!(), &format!("no CUDA toolkit: {e}"));
            None
        }
    }
}

/// (arguments, ptxas steps that write a cubin, ptxas steps without -o, dependency steps)
const CASES: &[(&[&str], usize, usize, usize)] = &[
    (&["-c", "k.cu"], 1, 0, 0),
    (&["-c", "k.cu", "-arch=sm_90"], 1, 0, 0),
    (
        &[
            "-c",
            "k.cu",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
        ],
        2,
        0,
        0,
    ),
    (
        &[
            "-c",
            "k.cu",
            "--generate-code=arch=compute_86,code=[compute_86,sm_86]",
            "-gencode=arch=compute_120,code=compute_120",
        ],
        1,
        1,
        0,
    ),
    (
        &["-c", "k.cu", "-arch=compute_90", "-code=sm_90,sm_90a"],
        2,
        0,
        0,
    ),
    (&["-dc", "k.cu", "-arch=sm_80"], 1, 0, 0),
    (
        &["-c", "-rdc=true", "k.cu", "-arch=sm_89", "-lineinfo"],
        1,
        0,
        0,
    ),
    (&["-cubin", "k.cu", "-arch=sm_90"], 1, 0, 0),
    (&["-fatbin", "k.cu", "-arch=sm_80"], 1, 0, 0),
    (
        &["-c", "k.cu", "-MD", "-MF", "deps/k.d", "-MT", "t.o"],
        1,
        0,
        1,
    ),
    (&["-c", "k.cu", "k2.cu", "-MMD", "-MP"], 2, 0, 2),
    (
        &[
            "-c",
            "k.cu",
            "--keep",
            "--keep-dir",
            "kd",
            "-Xptxas",
            "-v,-warn-spills",
        ],
        1,
        0,
        0,
    ),
    (
        &[
            "-c",
            "k.cu",
            "-maxrregcount=32",
            "-Xcompiler",
            "-Wall,-fPIC",
            "-DX=\"a b\"",
            "-Ik dir",
        ],
        1,
        0,
        0,
    ),
    (
        &[
            "-c",
            "k.cu",
            "-odir",
            "out",
            "-arch=sm_75",
            "-use_fast_math",
        ],
        1,
        0,
        0,
    ),
    (&["k.cu", "-o", "app", "-arch=sm_90"], 1, 0, 0),
];

#[test]
fn every_line_of_real_dry_runs_is_understood() {
    let Some(tk) = toolkit() else { return };
    let dir = tempfile::tempdir().unwrap();
    for f in ["k.cu", "k2.cu"] {
        std::fs::write(
            dir.path().join(f),
            "__global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n",
        )
        .unwrap();
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut failures = Vec::new();
    for (args, cubins, checks, deps) in CASES {
        let out = Command::new(tk.nvcc())
            .args(*args)
            .arg("--dryrun")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stderr).unwrap();
        let plan = match dryrun::parse(&text, &env) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{args:?}: {e}"));
                continue;
            }
        };
        let ptxas: Vec<&Vec<String>> = plan
            .steps
            .iter()
            .filter(|s| s.tool() == Some("ptxas"))
            .map(|s| match s {
                Step::Run { argv, .. } => argv,
                _ => unreachable!(),
            })
            .collect();
        let with_o = ptxas.iter().filter(|a| a.iter().any(|x| x == "-o")).count();
        let filters = plan
            .steps
            .iter()
            .filter(|s| matches!(s, Step::FilterDeps { .. }))
            .count();
        if (with_o, ptxas.len() - with_o, filters) != (*cubins, *checks, *deps) {
            failures.push(format!(
                "{args:?}: got {with_o} cubin ptxas, {} check ptxas, {filters} dep steps",
                ptxas.len() - with_o
            ));
        }
        assert!(
            plan.env.iter().any(|(k, _)| k == "PATH"),
            "{args:?}: no PATH assignment"
        );
    }
    assert!(
        failures.is_empty(),
        "dry-run parsing failures:\n{}",
        failures.join("\n")
    );
}

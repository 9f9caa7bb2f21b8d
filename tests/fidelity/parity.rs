//! Acceptance test: nvcc-orion is a drop-in nvcc.
//!
//! Every case of the table below runs with the same inputs, each run in a fresh directory at
//! the same path: (1) the real nvcc, (2) nvcc-orion with `NVCC_ORION=replay` (with
//! `NVCC_ORION_NVCC` set to the real nvcc) and, for the cases of [`OFF_BUILDS`], (3) nvcc-orion
//! with `NVCC_ORION=off`. Runs 2 and 3 must match run 1: exit code, stdout, stderr
//! (normalised, see `common/mod.rs`), the set of files left in the work directory and in
//! `TMPDIR`, and every output file:
//!
//! * `.cubin` (and any file of an unknown kind): byte-identical after tmpxft normalisation;
//! * `.o`, executables, `.fatbin`: byte-identical after tmpxft normalisation; where they are
//!   not, first the device code `cuobjdump` lists and extracts (cubins byte-identical, PTX
//!   identical, so a mismatch names the image), then the whole file, byte for byte;
//! * `.d`, `.ptx`, `.ii`, and the `--keep` temporaries (`.cudafe1.*`, `.module_id`,
//!   `.fatbin.c`, ...): identical text after normalisation.
//!
//! Cases listed in `MUST_REPLAY` / `MUST_PASS_THROUGH` run replay mode with
//! `NVCC_ORION_VERBOSE=1` instead, to check that replay mode really replayed (a silent fallback
//! to nvcc would pass everything else) or really passed the invocation through: that run is
//! compared with run 1 as above, its stderr without the `nvcc-orion: ` lines (one run where
//! there were two, issue 50; replay's silence without the setting is checked on the other
//! cases, which include tunable compiles of every kind).
//!
//! Off mode is a hand-over, and every case checks it as one ([`off_hands_over`]): a stand-in
//! nvcc that records the arguments, working folder and environment it was started with records
//! the same when nvcc-orion hands it the case under `NVCC_ORION=off` as when the case starts it
//! directly, and nvcc-orion adds nothing to what it prints, its exit status or the files left.
//!
//! All cases run (in a small thread pool), then the test fails with the list of every
//! mismatch. `PARITY_FILTER=substr` runs only the cases whose name contains `substr`;
//! `PARITY_SELF_CHECK=1` adds a fourth variant, the real nvcc again, to check that the
//! normalisation removes all of nvcc's own nondeterminism; `PARITY_KEEP=1` keeps the work
//! directories for inspection.

use crate::common;

use common::{Case, Expect, RunResult, Variant, case};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");

const OPTS_FILE: &str = "-c -arch=sm_80\n-o from_opts.o\n";
const OPTS_QUOTED: &str = "-c \"-DNAME=quoted value\" -I \"inc dir\"\n";
const OPTS_TWO: &str = "-lineinfo -gencode arch=compute_90,code=sm_90\n";

/// The table. Kernels live in `tests/kernels/`; fixtures are objects built once by the real nvcc
/// (see `fixtures()`).
fn cases() -> Vec<Case> {
    const GC80: &str = "arch=compute_80,code=sm_80";
    const GC90: &str = "arch=compute_90,code=sm_90";
    vec![
        // --- targets ---
        case("c_default_arch", &["-c", "regpressure.cu"])
            .inputs(&["regpressure.cu"])
            .produces(&["regpressure.o"]),
        case(
            "c_sm80",
            &["-c", "-arch=sm_80", "regpressure.cu", "-o", "rp.o"],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["rp.o"]),
        case("c_sm90", &["-c", "-arch=sm_90", "devcall.cu", "-o", "dc.o"])
            .inputs(&["devcall.cu"])
            .produces(&["dc.o"]),
        case(
            "gencode_two",
            &["-c", "shmem.cu", "-gencode", GC80, "-gencode", GC90],
        )
        .inputs(&["shmem.cu"])
        .produces(&["shmem.o"]),
        case(
            "gencode_three",
            &[
                "-c",
                "regpressure.cu",
                "-gencode",
                "arch=compute_75,code=sm_75",
                "-gencode",
                GC80,
                "-gencode",
                "arch=compute_90,code=compute_90",
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "generate_code_long_list",
            &[
                "-c",
                "devcall.cu",
                "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
            ],
        )
        .inputs(&["devcall.cu"])
        .produces(&["devcall.o"]),
        case(
            "code_list",
            &[
                "-c",
                "regpressure.cu",
                "-arch=compute_80",
                "-code=sm_80,sm_86,compute_80",
                "-o",
                "cl.o",
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["cl.o"]),
        case(
            "ptx_only_target",
            &["-c", "shmem.cu", "-arch=compute_90", "-code=compute_90"],
        )
        .inputs(&["shmem.cu"])
        .produces(&["shmem.o"]),
        // --- output spellings ---
        case("output_o_separate", &["-c", "devcall.cu", "-o", "out.o"])
            .inputs(&["devcall.cu"])
            .produces(&["out.o"]),
        // nvcc rejects `-oout.o` ("Unknown option"): nvcc-orion must reject it the same way.
        case(
            "output_o_attached_rejected",
            &["-c", "devcall.cu", "-oout.o"],
        )
        .inputs(&["devcall.cu"])
        .fails(),
        case(
            "output_file_eq",
            &["-c", "devcall.cu", "--output-file=out.o", "-arch=sm_80"],
        )
        .inputs(&["devcall.cu"])
        .produces(&["out.o"]),
        case(
            "output_file_separate",
            &["-c", "--output-file", "out2.o", "shmem.cu", "-arch=sm_80"],
        )
        .inputs(&["shmem.cu"])
        .produces(&["out2.o"]),
        case(
            "odir_two_inputs",
            &[
                "-c",
                "devcall.cu",
                "shmem.cu",
                "-odir",
                "objs",
                "-arch=sm_80",
            ],
        )
        .inputs(&["devcall.cu", "shmem.cu"])
        .dir("objs")
        .produces(&["objs/devcall.o", "objs/shmem.o"]),
        case(
            "output_directory_eq",
            &[
                "-c",
                "--output-directory=objs",
                "regpressure.cu",
                "-arch=sm_90",
            ],
        )
        .inputs(&["regpressure.cu"])
        .dir("objs")
        .produces(&["objs/regpressure.o"]),
        case(
            "output_to_directory_error",
            &["-c", "devcall.cu", "-o", "objs", "-arch=sm_80"],
        )
        .inputs(&["devcall.cu"])
        .dir("objs")
        .fails(),
        case(
            "c_three_inputs",
            &[
                "-c",
                "devcall.cu",
                "shmem.cu",
                "regpressure.cu",
                "-arch=sm_80",
            ],
        )
        .inputs(&["devcall.cu", "shmem.cu", "regpressure.cu"])
        .produces(&["devcall.o", "shmem.o", "regpressure.o"]),
        // --- where the flags come from ---
        case(
            "options_file",
            &["--options-file", "opts.txt", "devcall.cu"],
        )
        .inputs(&["devcall.cu"])
        .file("opts.txt", OPTS_FILE)
        .produces(&["from_opts.o"]),
        case(
            "optf_comma_list",
            &["-optf", "quoted.txt,two.txt", "defines.cu"],
        )
        .inputs(&["defines.cu", "inc dir/defs.h"])
        .file("quoted.txt", OPTS_QUOTED)
        .file("two.txt", OPTS_TWO)
        .produces(&["defines.o"]),
        case("prepend_append_env", &["-c", "devcall.cu", "-o", "pa.o"])
            .inputs(&["devcall.cu"])
            .env("NVCC_PREPEND_FLAGS", "-arch=sm_80 -DPREPENDED=1")
            .env("NVCC_APPEND_FLAGS", "-lineinfo -Xptxas -v")
            .produces(&["pa.o"]),
        case(
            "x_cu_on_cpp",
            &["-x", "cu", "-c", "cu_in_cpp.cpp", "-arch=sm_80"],
        )
        .inputs(&["cu_in_cpp.cpp"])
        .produces(&["cu_in_cpp.o"]),
        case("host_only_cpp", &["-c", "host_only.cpp"])
            .inputs(&["host_only.cpp"])
            .produces(&["host_only.o"]),
        // --- dependency files ---
        case(
            "md_default_name",
            &["-c", "-MD", "arch_headers.cu", "-arch=sm_80"],
        )
        .inputs(&["arch_headers.cu", "device_only.cuh", "host_side.h"])
        .produces(&["arch_headers.o", "arch_headers.d"]),
        case(
            "md_with_o_subdir",
            &["-c", "-MD", "arch_headers.cu", "-o", "objs/ah.o"],
        )
        .inputs(&["arch_headers.cu", "device_only.cuh", "host_side.h"])
        .dir("objs")
        .produces(&["objs/ah.o"]),
        case(
            "mmd_mp",
            &[
                "-c",
                "-MMD",
                "-MP",
                "arch_headers.cu",
                "-o",
                "ah.o",
                "-arch=sm_90",
            ],
        )
        .inputs(&["arch_headers.cu", "device_only.cuh", "host_side.h"])
        .produces(&["ah.o"]),
        case(
            "md_mf_mt",
            &[
                "-c",
                "-MD",
                "-MF",
                "deps/ah.d",
                "-MT",
                "custom_target.o",
                "arch_headers.cu",
                "-arch=sm_80",
            ],
        )
        .inputs(&["arch_headers.cu", "device_only.cuh", "host_side.h"])
        .dir("deps")
        .produces(&["deps/ah.d", "arch_headers.o"]),
        case("m_alone", &["-M", "arch_headers.cu"]).inputs(&[
            "arch_headers.cu",
            "device_only.cuh",
            "host_side.h",
        ]),
        // --- keep, rdc, debug info, threads ---
        case("keep", &["-c", "--keep", "shmem.cu", "-arch=sm_80"])
            .inputs(&["shmem.cu"])
            .produces(&["shmem.o"]),
        case(
            "keep_dir_two_gencodes",
            &[
                "-c",
                "--keep",
                "--keep-dir",
                "kd",
                "devcall.cu",
                "-gencode",
                GC80,
                "-gencode",
                GC90,
            ],
        )
        .inputs(&["devcall.cu"])
        .dir("kd")
        .produces(&["devcall.o"]),
        case(
            "rdc_true_c",
            &["-rdc=true", "-c", "rdc_a.cu", "-arch=sm_80"],
        )
        .inputs(&["rdc_a.cu"])
        .produces(&["rdc_a.o"]),
        case("dc_sm90", &["-dc", "rdc_b.cu", "-arch=sm_90"])
            .inputs(&["rdc_b.cu"])
            .produces(&["rdc_b.o"]),
        case(
            "lineinfo",
            &["-lineinfo", "-c", "regpressure.cu", "-arch=sm_80"],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "threads_long",
            &[
                "--threads",
                "2",
                "-c",
                "regpressure.cu",
                "-gencode",
                GC80,
                "-gencode",
                GC90,
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "threads_short_ptxas_v",
            &[
                "-t",
                "2",
                "-c",
                "devcall.cu",
                "-gencode",
                GC80,
                "-gencode",
                GC90,
                "-Xptxas",
                "-v",
            ],
        )
        .inputs(&["devcall.cu"])
        .unordered_stderr()
        .produces(&["devcall.o"]),
        // --- tool options ---
        case(
            "xptxas_v",
            &["-Xptxas", "-v", "-c", "regpressure.cu", "-arch=sm_80"],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "xptxas_eq_list",
            &[
                "-Xptxas=-v,-warn-spills",
                "-c",
                "regpressure.cu",
                "-arch=sm_90",
                "-maxrregcount=40",
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "ptxas_options_long",
            &["--ptxas-options=-v", "-c", "shmem.cu", "-arch=sm_80"],
        )
        .inputs(&["shmem.cu"])
        .produces(&["shmem.o"]),
        case(
            "xcompiler_wall",
            &["-Xcompiler", "-Wall", "-c", "shmem.cu", "-arch=sm_80"],
        )
        .inputs(&["shmem.cu"])
        .produces(&["shmem.o"]),
        case(
            "xcompiler_eq_list",
            &["-Xcompiler=-O2,-fPIC", "-c", "devcall.cu", "-arch=sm_80"],
        )
        .inputs(&["devcall.cu"])
        .produces(&["devcall.o"]),
        case(
            "maxrregcount_32",
            &[
                "-maxrregcount=32",
                "-Xptxas",
                "-v",
                "-c",
                "regpressure.cu",
                "-arch=sm_80",
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case(
            "define_with_space",
            &[
                "-c",
                "defines.cu",
                "-DNAME=a b",
                "-I",
                "inc dir",
                "-arch=sm_80",
            ],
        )
        .inputs(&["defines.cu", "inc dir/defs.h"])
        .produces(&["defines.o"]),
        case(
            "define_with_quotes",
            &[
                "-c",
                "defines.cu",
                "-DNAME=\"a b\"",
                "-Iinc dir",
                "-arch=sm_80",
            ],
        )
        .inputs(&["defines.cu", "inc dir/defs.h"])
        .produces(&["defines.o"]),
        case(
            "include_absolute_path_with_space",
            &[
                "-c",
                "defines.cu",
                "-DNAME=abs",
                "-I{dir}/inc dir",
                "-arch=sm_90",
            ],
        )
        .inputs(&["defines.cu", "inc dir/defs.h"])
        .produces(&["defines.o"]),
        case(
            "file_name_with_space",
            &["-c", "with space.cu", "-arch=sm_80"],
        )
        .inputs(&["with space.cu"])
        .produces(&["with space.o"]),
        // --- other output kinds ---
        case(
            "cubin_default_name",
            &["-cubin", "-arch=sm_80", "devcall.cu"],
        )
        .inputs(&["devcall.cu"])
        .produces(&["devcall.cubin"]),
        case(
            "cubin_o",
            &["-cubin", "-arch=sm_90", "regpressure.cu", "-o", "rp.cubin"],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["rp.cubin"]),
        case(
            "fatbin_two_gencodes",
            &["-fatbin", "-gencode", GC80, "-gencode", GC90, "shmem.cu"],
        )
        .inputs(&["shmem.cu"])
        .produces(&["shmem.fatbin"]),
        case("ptx_passthrough", &["-ptx", "-arch=sm_80", "devcall.cu"])
            .inputs(&["devcall.cu"])
            .produces(&["devcall.ptx"]),
        case("device_debug_g", &["-G", "-c", "devcall.cu", "-arch=sm_80"])
            .inputs(&["devcall.cu"])
            .produces(&["devcall.o"]),
        case("preprocess_e", &["-E", "shmem.cu"]).inputs(&["shmem.cu"]),
        case("version", &["--version"]),
        case("dryrun", &["--dryrun", "-c", "devcall.cu", "-arch=sm_80"])
            .inputs(&["devcall.cu"])
            .shim_on_path(),
        case("list_gpu_arch", &["--list-gpu-arch"]),
        // --- linking ---
        case("link_exe", &["main.o", "shmem.o", "-o", "app"])
            .fixtures(&["main.o", "shmem.o"])
            .produces(&["app"]),
        case(
            "link_cudart_static",
            &["main.o", "shmem.o", "-cudart", "static", "-o", "app_static"],
        )
        .fixtures(&["main.o", "shmem.o"])
        .produces(&["app_static"]),
        case(
            "compile_and_link",
            &["main.cu", "shmem.cu", "-arch=sm_80", "-o", "app"],
        )
        .inputs(&["main.cu", "shmem.cu"])
        .produces(&["app"]),
        // One-call builds (compile and link, several sources, objects among the inputs,
        // `-lib`): replayed and tuned like `-c` builds.
        case(
            "compile_and_link_rdc",
            &[
                "-rdc=true",
                "rdc_a.cu",
                "rdc_b.cu",
                "-arch=sm_90",
                "-o",
                "rdc_one",
            ],
        )
        .inputs(&["rdc_a.cu", "rdc_b.cu"])
        .produces(&["rdc_one"]),
        case(
            "compile_and_link_with_object",
            &["main.cu", "shmem.o", "-arch=sm_80", "-o", "app_mixed"],
        )
        .inputs(&["main.cu"])
        .fixtures(&["shmem.o"])
        .produces(&["app_mixed"]),
        case(
            "compile_and_link_default_name",
            &["rdc_a.cu", "rdc_b.cu", "-rdc=true", "-Xptxas", "-v"],
        )
        .inputs(&["rdc_a.cu", "rdc_b.cu"])
        .produces(&["a.out"]),
        case(
            "lib_two_sources",
            &[
                "-lib",
                "devcall.cu",
                "shmem.cu",
                "-arch=sm_80",
                "-o",
                "libds.a",
            ],
        )
        .inputs(&["devcall.cu", "shmem.cu"])
        .produces(&["libds.a"]),
        case(
            "lib_rdc_gencodes",
            &[
                "--lib",
                "-rdc=true",
                "rdc_b.cu",
                "-gencode",
                GC80,
                "-gencode",
                GC90,
            ],
        )
        .inputs(&["rdc_b.cu"])
        .produces(&["a.a"]),
        case(
            "compile_and_link_undefined_symbol",
            &["main.cu", "-arch=sm_80", "-o", "app_missing"],
        )
        .inputs(&["main.cu"])
        .fails(),
        case(
            "compile_and_link_syntax_error",
            &["syntax_error.cu", "main.cu", "-o", "app_broken"],
        )
        .inputs(&["syntax_error.cu", "main.cu"])
        .fails(),
        case(
            "device_link_dc_pair",
            &["-dlink", "rdc_a.o", "rdc_b.o", "-o", "dlink.o"],
        )
        .fixtures(&["rdc_a.o", "rdc_b.o"])
        .produces(&["dlink.o"]),
        case(
            "rdc_link_exe",
            &["-rdc=true", "rdc_a.o", "rdc_b.o", "-o", "rdc_app"],
        )
        .fixtures(&["rdc_a.o", "rdc_b.o"])
        .produces(&["rdc_app"]),
        // --- errors ---
        case(
            "bad_option",
            &["--no-such-option", "-c", "devcall.cu", "-arch=sm_80"],
        )
        .inputs(&["devcall.cu"])
        .fails(),
        case("missing_input", &["-c", "missing.cu", "-arch=sm_80"]).fails(),
        case("syntax_error_default", &["-c", "syntax_error.cu"])
            .inputs(&["syntax_error.cu"])
            .fails(),
        case(
            "syntax_error_sm90_o",
            &["-c", "syntax_error.cu", "-arch=sm_90", "-o", "broken.o"],
        )
        .inputs(&["syntax_error.cu"])
        .fails(),
        // --- nvcc-orion's own options are stripped ---
        case(
            "orion_block_size_stripped",
            &["-c", "regpressure.cu", "-arch=sm_80", "-Xptxas", "-v"],
        )
        .inputs(&["regpressure.cu"])
        .orion_arg("--orion-block-size=256")
        .produces(&["regpressure.o"]),
        // --- more of what a replay must carry over exactly ---
        case(
            "xptxas_maxrregcount",
            &[
                "-Xptxas",
                "-maxrregcount=40",
                "-Xptxas",
                "-v",
                "-c",
                "regpressure.cu",
                "-arch=sm_80",
            ],
        )
        .inputs(&["regpressure.cu"])
        .produces(&["regpressure.o"]),
        case("ccbin", &["-ccbin", "g++", "-c", "shmem.cu", "-arch=sm_80"])
            .inputs(&["shmem.cu"])
            .produces(&["shmem.o"]),
        case(
            "save_temps",
            &["--save-temps", "-c", "devcall.cu", "-arch=sm_80"],
        )
        .inputs(&["devcall.cu"])
        .produces(&["devcall.o", "devcall.ptx"]),
        case(
            "absolute_output_path",
            &[
                "-c",
                "{dir}/devcall.cu",
                "-o",
                "{dir}/objs/abs.o",
                "-arch=sm_90",
            ],
        )
        .inputs(&["devcall.cu"])
        .dir("objs")
        .produces(&["objs/abs.o"]),
        case(
            "arch_sm_90a",
            &[
                "-c",
                "shmem.cu",
                "-arch=sm_90a",
                "-MD",
                "-MF",
                "deps dir/shmem.d",
            ],
        )
        .inputs(&["shmem.cu"])
        .dir("deps dir")
        .produces(&["shmem.o", "deps dir/shmem.d"]),
    ]
}

/// Cases checked for what replay mode really does (see `check_replayed`): a sample, since each
/// costs one more run. Tunable compiles (`-c`/`-dc`/`-cubin`/`-fatbin` of `.cu` with a real
/// `sm_` target) must be replayed ...
const MUST_REPLAY: &[&str] = &[
    "c_default_arch",
    "gencode_two",
    "generate_code_long_list",
    "odir_two_inputs",
    "options_file",
    "prepend_append_env",
    "x_cu_on_cpp",
    "md_mf_mt",
    "keep_dir_two_gencodes",
    "rdc_true_c",
    "dc_sm90",
    "threads_short_ptxas_v",
    "maxrregcount_32",
    "define_with_space",
    "file_name_with_space",
    "cubin_o",
    "fatbin_two_gencodes",
    "orion_block_size_stripped",
    "xptxas_maxrregcount",
    "ccbin",
    "absolute_output_path",
    "arch_sm_90a",
    "compile_and_link",
    "compile_and_link_rdc",
    "compile_and_link_with_object",
    "compile_and_link_default_name",
    "lib_two_sources",
    "lib_rdc_gencodes",
];
/// ... and everything else must go to nvcc unchanged.
const MUST_PASS_THROUGH: &[&str] = &[
    "ptx_only_target",
    "host_only_cpp",
    "m_alone",
    "ptx_passthrough",
    "device_debug_g",
    "preprocess_e",
    "version",
    "link_exe",
];

/// The cases whose `NVCC_ORION=off` run is a real build compared with nvcc's, as the replay's
/// is: a tunable compile, a compile and link, a compile nvcc fails, preprocessing, an option
/// nvcc refuses and one of ours taken out. Off mode hands every invocation to nvcc as it
/// is, which [`off_hands_over`] checks on every case; these end to end besides (issue 50: the
/// off builds of every case were about a quarter of the test's CPU).
const OFF_BUILDS: &[&str] = &[
    "c_default_arch",
    "compile_and_link",
    "syntax_error_default",
    "preprocess_e",
    "bad_option",
    "orion_block_size_stripped",
];

/// The table with the replay checks attached.
fn all_cases() -> Vec<Case> {
    let cases: Vec<Case> = cases()
        .into_iter()
        .map(|c| {
            if MUST_REPLAY.contains(&c.name) {
                c.replays()
            } else if MUST_PASS_THROUGH.contains(&c.name) {
                c.passes_through()
            } else {
                c
            }
        })
        .collect();
    for name in MUST_REPLAY
        .iter()
        .chain(MUST_PASS_THROUGH)
        .chain(OFF_BUILDS)
    {
        assert!(
            cases.iter().any(|c| c.name == *name),
            "a list names an unknown case `{name}`"
        );
    }
    cases
}

/// Objects compiled once per test run by the real nvcc, shared by the link cases. A static is
/// never dropped, so the folder lives under cargo's `CARGO_TARGET_TMPDIR` rather than `/tmp`.
fn fixtures(nvcc: &Path) -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("parity-fixtures-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        for f in ["main.cu", "shmem.cu", "rdc_a.cu", "rdc_b.cu"] {
            std::fs::copy(common::kernels_dir().join(f), dir.path().join(f)).unwrap();
        }
        let build = |args: &[&str]| {
            let out = Command::new(nvcc)
                .args(args)
                .current_dir(dir.path())
                .env_remove("NVCC_PREPEND_FLAGS")
                .env_remove("NVCC_APPEND_FLAGS")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "fixture build `nvcc {}` failed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        build(&["-c", "main.cu", "shmem.cu", "-arch=sm_80"]);
        build(&["-dc", "rdc_a.cu", "rdc_b.cu", "-arch=sm_80"]);
        dir
    })
    .path()
}

/// The runs of a case: the real nvcc, replay, and off where `off_build` ([`OFF_BUILDS`]); the
/// replay verbose where `verbose_replay` (the cases whose replay is checked by what it says,
/// [`check_replayed`]).
fn variants(nvcc: &Path, verbose_replay: bool, off_build: bool) -> Vec<Variant> {
    let mut v = vec![
        Variant {
            label: "real",
            exe: nvcc.to_path_buf(),
            orion_mode: None,
            verbose: false,
        },
        Variant {
            label: if verbose_replay { "rplv" } else { "rply" },
            exe: PathBuf::from(ORION),
            orion_mode: Some("replay"),
            verbose: verbose_replay,
        },
    ];
    if off_build {
        v.push(Variant {
            label: "offm",
            exe: PathBuf::from(ORION),
            orion_mode: Some("off"),
            verbose: false,
        });
    }
    if std::env::var_os("PARITY_SELF_CHECK").is_some() {
        v.push(Variant {
            label: "rea2",
            exe: nvcc.to_path_buf(),
            orion_mode: None,
            verbose: false,
        });
    }
    v
}

/// How an output file is compared, by name.
enum Kind {
    /// Byte-identical after same-length tmpxft normalisation.
    Bytes,
    /// Identical after text normalisation.
    Text,
    /// The whole file byte for byte after same-length tmpxft normalisation; where it differs,
    /// the device code (cuobjdump listing + extracted images) first, to name the image.
    Device,
}

fn kind_of(name: &str, path: &Path) -> Kind {
    // Sources, dependency files, options files, PTX, preprocessed files and the `--keep`
    // temporaries of cudafe++ (`.cudafe1.*`, `.module_id`, `.fatbin.c`).
    const TEXT: &[&str] = &[
        ".d",
        ".ptx",
        ".ii",
        ".txt",
        ".h",
        ".cuh",
        ".cu",
        ".cpp",
        ".c",
        ".gpu",
        ".module_id",
    ];
    if name.ends_with(".cubin") {
        Kind::Bytes
    } else if TEXT.iter().any(|e| name.ends_with(e)) {
        Kind::Text
    } else if name.ends_with(".fatbin") || name.ends_with(".o") || common::is_elf(path) {
        Kind::Device
    } else {
        Kind::Bytes
    }
}

/// Compare one run against the reference (real nvcc) run; push every mismatch into `problems`.
/// A `--dryrun` listing without nvcc-orion's ptxas shim directory at the head of its
/// `#$ PATH=` lines and without the `--orion-*` settings on its ptxas lines (the replay run
/// carries `--orion-mode=replay`), and how many lines had the shim.
fn strip_shim(text: &str) -> (String, usize) {
    let mut n = 0;
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| match line.strip_prefix("#$ PATH=") {
            Some(rest) => match rest.split_once(':') {
                Some((first, others)) if first.contains("/ptxas-shim-") => {
                    n += 1;
                    format!("#$ PATH={others}")
                }
                _ => line.to_string(),
            },
            None if line.starts_with("#$ ptxas ") => line
                .split(' ')
                .filter(|w| !w.starts_with("--orion-"))
                .collect::<Vec<_>>()
                .join(" "),
            None => line.to_string(),
        })
        .collect();
    (lines.join("\n"), n)
}

/// `reference_code` keeps what `cuobjdump` saw in the reference's files, by name: the same
/// files are compared with every other run of the case, so they are read once (issue 50).
fn compare(
    case: &Case,
    reference: &RunResult,
    run: &RunResult,
    case_dir: &Path,
    cuobjdump: &Path,
    reference_code: &mut BTreeMap<String, common::DeviceCode>,
    problems: &mut Vec<String>,
) {
    let who = format!("[{}] {} vs real nvcc", case.name, run.label);
    let header = |what: &str| {
        format!(
            "{who}: {what}\n  real: {}\n  this: {}",
            reference.command, run.command
        )
    };

    if reference.code != run.code {
        problems.push(format!(
            "{}\n  exit code {:?} vs {:?}\n  real stderr:\n{}\n  this stderr:\n{}",
            header("exit code differs"),
            reference.code,
            run.code,
            indent(&String::from_utf8_lossy(&reference.stderr)),
            indent(&String::from_utf8_lossy(&run.stderr))
        ));
    }
    for (what, l, r) in [
        ("stderr", &reference.stderr, &run.stderr),
        ("stdout", &reference.stdout, &run.stdout),
    ] {
        let (mut l, mut r) = (
            common::normalise_text(l, reference),
            common::normalise_text(r, run),
        );
        if what == "stderr" && run.label == "rplv" {
            // The verbose replay's own lines ([`check_replayed`] reads them); the rest must
            // be nvcc's.
            r = without_our_lines(&r);
        }
        if what == "stderr" && case.unordered_stderr {
            l = common::sorted_lines(&l);
            r = common::sorted_lines(&r);
        }
        if what == "stderr" && case.shim_on_path && run.label.starts_with("rpl") {
            let (text, shims) = strip_shim(&r);
            r = text;
            if shims == 0 {
                problems.push(header("no ptxas shim first on the listing's PATH"));
            }
        }
        if l != r {
            problems.push(format!(
                "{}\n{}",
                header(&format!("{what} differs (normalised)")),
                indent(&common::text_diff(&l, &r))
            ));
        }
    }

    let names = |r: &RunResult| -> BTreeMap<String, PathBuf> {
        r.files
            .iter()
            .map(|(k, v)| (common::normalise_name(k), v.clone()))
            .collect()
    };
    let (lf, rf) = (names(reference), names(run));
    let lset: BTreeSet<&String> = lf.keys().collect();
    let rset: BTreeSet<&String> = rf.keys().collect();
    if lset != rset {
        problems.push(format!(
            "{}\n  only from real nvcc: {:?}\n  only from this run: {:?}",
            header("different set of files in the work directory"),
            lset.difference(&rset).collect::<Vec<_>>(),
            rset.difference(&lset).collect::<Vec<_>>()
        ));
    }
    let (lt, rt): (Vec<String>, Vec<String>) = (
        reference
            .tmp_files
            .iter()
            .map(|n| common::normalise_name(n))
            .collect(),
        run.tmp_files
            .iter()
            .map(|n| common::normalise_name(n))
            .collect(),
    );
    if lt != rt {
        problems.push(format!(
            "{}\n  real left: {lt:?}\n  this left: {rt:?}",
            header("different files left in TMPDIR")
        ));
    }

    for (idx, (name, lpath)) in lf.iter().enumerate() {
        let Some(rpath) = rf.get(name) else { continue };
        let ldata = std::fs::read(lpath).unwrap();
        let rdata = std::fs::read(rpath).unwrap();
        match kind_of(name, lpath) {
            Kind::Bytes => {
                let (l, r) = (
                    common::normalise_binary(&ldata, reference),
                    common::normalise_binary(&rdata, run),
                );
                if l != r {
                    problems.push(format!(
                        "{}\n  {}",
                        header(&format!("`{name}` differs")),
                        common::binary_diff(&l, &r)
                    ));
                }
            }
            Kind::Text => {
                let (l, r) = (
                    common::normalise_text(&ldata, reference),
                    common::normalise_text(&rdata, run),
                );
                if l != r {
                    problems.push(format!(
                        "{}\n{}",
                        header(&format!("`{name}` differs (normalised text)")),
                        indent(&common::text_diff(&l, &r))
                    ));
                }
            }
            Kind::Device => {
                // cuobjdump reads nothing but the file's bytes, and the images and listing
                // are normalised as the file is: files equal after normalisation hold equal
                // device code. So the device code is read only where the files differ, to
                // name what differs (issue 50: most of the test's cuobjdump runs).
                if common::normalise_binary(&ldata, reference)
                    == common::normalise_binary(&rdata, run)
                {
                    continue;
                }
                let before = problems.len();
                let ld = reference_code.entry(name.clone()).or_insert_with(|| {
                    common::device_code(
                        cuobjdump,
                        lpath,
                        &case_dir.join(format!("x-{}/{idx}", reference.label)),
                        reference,
                    )
                });
                let rd = common::device_code(
                    cuobjdump,
                    rpath,
                    &case_dir.join(format!("x-{}/{idx}", run.label)),
                    run,
                );
                if ld.listing != rd.listing {
                    problems.push(format!(
                        "{}\n{}",
                        header(&format!("`{name}`: cuobjdump -lelf -lptx differs")),
                        indent(&common::text_diff(&ld.listing, &rd.listing))
                    ));
                }
                if ld.listing.starts_with("exit Some(0)") != rd.listing.starts_with("exit Some(0)")
                {
                    continue;
                }
                if ld.images.is_empty() && rd.images.is_empty() {
                    // No device code (host-only object): the whole file must match.
                    let (l, r) = (
                        common::normalise_binary(&ldata, reference),
                        common::normalise_binary(&rdata, run),
                    );
                    if l != r {
                        problems.push(format!(
                            "{}\n  {}",
                            header(&format!("host-only `{name}` differs")),
                            common::binary_diff(&l, &r)
                        ));
                    }
                    continue;
                }
                let lk: Vec<&String> = ld.images.keys().collect();
                let rk: Vec<&String> = rd.images.keys().collect();
                if lk != rk {
                    problems.push(format!(
                        "{}\n  real: {lk:?}\n  this: {rk:?}",
                        header(&format!("`{name}`: extracted images differ"))
                    ));
                }
                for (img, l) in &ld.images {
                    let Some(r) = rd.images.get(img) else {
                        continue;
                    };
                    if l != r {
                        let detail = if img.ends_with(".ptx") {
                            common::text_diff(
                                &String::from_utf8_lossy(l),
                                &String::from_utf8_lossy(r),
                            )
                        } else {
                            common::binary_diff(l, r)
                        };
                        problems.push(format!(
                            "{}\n{}",
                            header(&format!("`{name}`: embedded `{img}` differs")),
                            indent(&detail)
                        ));
                    }
                }
                // Same device code: then the whole file (host code, symbol tables, the
                // fatbin wrapper) must be identical too, tmpxft ids aside.
                if problems.len() == before && !ld.mentions_tmpxft && !rd.mentions_tmpxft {
                    let (l, r) = (
                        common::normalise_binary(&ldata, reference),
                        common::normalise_binary(&rdata, run),
                    );
                    if l != r {
                        problems.push(format!(
                            "{}\n  {}",
                            header(&format!("`{name}`: same device code, but the files differ")),
                            common::binary_diff(&l, &r)
                        ));
                    }
                }
            }
        }
    }
}

/// `text` without the lines nvcc-orion prints under `NVCC_ORION_VERBOSE=1`.
fn without_our_lines(text: &str) -> String {
    let kept: Vec<&str> = text
        .split('\n')
        .filter(|l| !l.starts_with("nvcc-orion: "))
        .collect();
    kept.join("\n")
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    | {l}\n")).collect()
}

/// Run one case in all variants; return its problems.
fn run_case(index: usize, case: &Case, root: &Path, nvcc: &Path, cuobjdump: &Path) -> Vec<String> {
    let case_dir = root.join(format!("c{index:02}"));
    let fixture_dir = (!case.fixtures.is_empty()).then(|| fixtures(nvcc));
    let off_build = OFF_BUILDS.contains(&case.name);
    let runs: Vec<RunResult> = variants(nvcc, case.replay_check.is_some(), off_build)
        .iter()
        .map(|v| common::run_variant(case, v, &case_dir, fixture_dir, nvcc))
        .collect();
    let reference = &runs[0];
    let mut problems = Vec::new();

    // The case itself must test what it says.
    let ok = reference.code == Some(0);
    if ok != (case.expect == Expect::Success) {
        problems.push(format!(
            "[{}] invalid case: real nvcc exited with {:?}, expected {:?}\n  {}\n{}",
            case.name,
            reference.code,
            case.expect,
            reference.command,
            indent(&String::from_utf8_lossy(&reference.stderr))
        ));
    }
    for p in &case.produces {
        if !reference.files.contains_key(*p) {
            problems.push(format!(
                "[{}] invalid case: real nvcc did not produce `{p}` (files: {:?})",
                case.name,
                reference.files.keys()
            ));
        }
    }
    let mut reference_code = BTreeMap::new();
    for run in &runs[1..] {
        compare(
            case,
            reference,
            run,
            &case_dir,
            cuobjdump,
            &mut reference_code,
            &mut problems,
        );
    }
    if let Some(must_replay) = case.replay_check {
        check_replayed(case, must_replay, &runs[1], &mut problems);
    }
    off_hands_over(case, &case_dir, fixture_dir, None, &mut problems);
    problems
}

/// A stand-in nvcc: it records the arguments, working folder and environment it was started
/// with (the environment as the kernel handed it over, in `/proc`) in `record` beside itself,
/// says one line on each stream and exits with 23.
const STAND_IN: &str = r#"#!/bin/bash
{
    printf 'argv'
    for a in "$@"; do printf '\0%s' "$a"; done
    printf '\ncwd %s\nenv ' "$(pwd -P)"
    cat /proc/$$/environ
} >"$(dirname "$0")/record"
echo "stand-in nvcc: out"
echo "stand-in nvcc: err" >&2
exit 23
"#;

/// `NVCC_ORION=off` hands the invocation to nvcc: nvcc-orion replaces itself with it, with
/// the same arguments (ours taken out), working folder and environment (ours taken out), so
/// nvcc's output and exit status are the user's. Checked with [`STAND_IN`] as the nvcc: started
/// by nvcc-orion under `off`, it must record what it records when the case starts it as the
/// reference run starts the real nvcc, and nvcc-orion must add nothing to what it printed, its
/// exit status, or the files left in the work folder and in `TMPDIR`. With `meddler` (a bash
/// script's body that ends by starting the stand-in beside it), nvcc-orion is pointed at that
/// script instead: how [`a_meddled_hand_over_is_caught`] shows the check fails.
fn off_hands_over(
    case: &Case,
    case_dir: &Path,
    fixture_dir: Option<&Path>,
    meddler: Option<&str>,
    problems: &mut Vec<String>,
) {
    use std::os::unix::fs::PermissionsExt;
    let folder = case_dir.join("stand-in");
    std::fs::create_dir_all(&folder).unwrap();
    let script = |name: &str, text: &str| {
        let path = folder.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let stand_in = script("nvcc", STAND_IN);
    let handed_to = match meddler {
        Some(body) => script("meddler", &format!("#!/bin/bash\n{body}\n")),
        None => stand_in.clone(),
    };
    let run = |label: &'static str, exe: &Path, orion_mode: Option<&'static str>, nvcc: &Path| {
        let v = Variant {
            label,
            exe: exe.to_path_buf(),
            orion_mode,
            verbose: false,
        };
        let r = common::run_variant(case, &v, case_dir, fixture_dir, nvcc);
        let record = std::fs::read(folder.join("record")).unwrap_or_default();
        let _ = std::fs::remove_file(folder.join("record"));
        (r, record)
    };
    let (direct, expected) = run("recd", &stand_in, None, &stand_in);
    let (handed, got) = run("reco", Path::new(ORION), Some("off"), &handed_to);
    let mut fail = |what: String| {
        problems.push(format!(
            "[{}] NVCC_ORION=off is not a hand-over to nvcc: {what}\n  direct: {}\n  handed: {}",
            case.name, direct.command, handed.command
        ))
    };
    if expected.is_empty() || direct.code != Some(23) {
        fail(format!(
            "the stand-in nvcc did not record, started directly (exit {:?})",
            direct.code
        ));
        return;
    }
    if let Some(why) = record_difference(&expected, &got) {
        fail(why);
    }
    if (handed.code, &handed.stdout, &handed.stderr)
        != (direct.code, &direct.stdout, &direct.stderr)
    {
        fail(format!(
            "exit {:?}, stdout {:?}, stderr {:?}; the stand-in's own: exit {:?}, {:?}, {:?}",
            handed.code,
            String::from_utf8_lossy(&handed.stdout),
            String::from_utf8_lossy(&handed.stderr),
            direct.code,
            String::from_utf8_lossy(&direct.stdout),
            String::from_utf8_lossy(&direct.stderr),
        ));
    }
    let contents = |r: &RunResult| -> BTreeMap<String, Vec<u8>> {
        r.files
            .iter()
            .map(|(name, path)| (name.clone(), std::fs::read(path).unwrap_or_default()))
            .collect()
    };
    if contents(&handed) != contents(&direct) || handed.tmp_files != direct.tmp_files {
        fail(format!(
            "files left: {:?} and in TMPDIR {:?}; directly: {:?} and {:?}",
            handed.files.keys(),
            handed.tmp_files,
            direct.files.keys(),
            direct.tmp_files
        ));
    }
}

/// Where two records of [`STAND_IN`] differ, if they do: the arguments and folder as recorded,
/// and the variables only one environment holds (their order is not compared).
fn record_difference(expected: &[u8], got: &[u8]) -> Option<String> {
    let parts = |r: &[u8]| -> (String, BTreeSet<Vec<u8>>) {
        let text = String::from_utf8_lossy(r).into_owned();
        let (head, env) = text.split_once("\nenv ").unwrap_or((&text, ""));
        let env = env
            .split('\0')
            .filter(|v| !v.is_empty())
            .map(|v| v.as_bytes().to_vec())
            .collect();
        (head.replace('\0', " | "), env)
    };
    let (eh, ee) = parts(expected);
    let (gh, ge) = parts(got);
    let mut out = Vec::new();
    if eh != gh {
        out.push(format!("recorded `{gh}`, directly `{eh}`"));
    }
    let only = |a: &BTreeSet<Vec<u8>>, b: &BTreeSet<Vec<u8>>| -> Vec<String> {
        a.difference(b)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect()
    };
    if ee != ge {
        out.push(format!(
            "environment only when handed: {:?}; only directly: {:?}",
            only(&ge, &ee),
            only(&ee, &ge)
        ));
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// A silent fallback to the real nvcc would pass every comparison above, so for the cases that
/// say so, replay mode runs with `NVCC_ORION_VERBOSE=1` (`run`, compared with nvcc by
/// [`compare`] apart from its own lines) and what nvcc-orion says it did is checked here:
/// `nvcc-orion: replayed N steps ...` for tunable invocations, `nvcc-orion: passing to nvcc
/// unchanged: ...` for the others, and none of its lines a warning or an error.
fn check_replayed(case: &Case, must_replay: bool, run: &RunResult, problems: &mut Vec<String>) {
    let stderr = common::normalise_text(&run.stderr, run);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("nvcc-orion: "))
        .collect();
    let replayed = ours.iter().any(|l| l.starts_with("nvcc-orion: replayed "));
    let passed = ours
        .iter()
        .any(|l| l.starts_with("nvcc-orion: passing to nvcc unchanged"));
    let bad: Vec<&&str> = ours
        .iter()
        .filter(|l| l.contains("warning") || l.contains("error") || l.contains("cannot"))
        .collect();
    let what = if must_replay {
        "must be replayed"
    } else {
        "must be passed to nvcc unchanged"
    };
    let mut fail = |why: String| {
        problems.push(format!(
            "[{}] {} (NVCC_ORION_VERBOSE=1): {why}\n  this: {}\n  its stderr:\n{}",
            case.name,
            run.label,
            run.command,
            indent(&stderr)
        ))
    };
    if must_replay && (!replayed || passed) {
        fail(format!(
            "{what}, but nvcc-orion did not say `nvcc-orion: replayed ...`"
        ));
    }
    if !must_replay && (replayed || !passed) {
        fail(format!(
            "{what}, but nvcc-orion did not say `nvcc-orion: passing to nvcc unchanged`"
        ));
    }
    if !bad.is_empty() {
        fail(format!("nvcc-orion warned: {bad:?}"));
    }
}

#[test]
fn nvcc_parity() {
    let Some(nvcc) = common::nvcc_or_skip("nvcc_parity") else {
        return;
    };
    let nvcc = nvcc.canonicalize().unwrap();
    let cuobjdump = common::toolkit_tool(&nvcc, "cuobjdump");
    let filter = std::env::var("PARITY_FILTER").unwrap_or_default();
    let cases: Vec<(usize, Case)> = all_cases()
        .into_iter()
        .enumerate()
        .filter(|(_, c)| c.name.contains(&filter))
        .collect();
    assert!(
        !cases.is_empty(),
        "PARITY_FILTER={filter:?} matches no case"
    );
    if filter.is_empty() {
        assert!(cases.len() >= 40, "the table must hold at least 40 cases");
        let names: BTreeSet<&str> = cases.iter().map(|(_, c)| c.name).collect();
        assert_eq!(names.len(), cases.len(), "case names must be unique");
    }

    let root_guard = tempfile::Builder::new()
        .prefix("parity-")
        .tempdir()
        .unwrap();
    let root = root_guard.path().canonicalize().unwrap();
    let jobs = std::env::var("PARITY_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(2, 8)
        });

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, &'static str, Vec<String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((index, case)) = cases.get(i) else {
                        break;
                    };
                    let started = std::time::Instant::now();
                    let problems = run_case(*index, case, &root, &nvcc, &cuobjdump);
                    eprintln!(
                        "parity: {:<36} {} ({:.1}s)",
                        case.name,
                        if problems.is_empty() {
                            "ok"
                        } else {
                            "MISMATCH"
                        },
                        started.elapsed().as_secs_f64()
                    );
                    results.lock().unwrap().push((*index, case.name, problems));
                }
            });
        }
    });

    if std::env::var_os("PARITY_KEEP").is_some() {
        eprintln!("parity: work directories kept in {}", root.display());
        let _ = root_guard.keep();
    }
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let failed: Vec<_> = results.iter().filter(|r| !r.2.is_empty()).collect();
    if !failed.is_empty() {
        let mut report = format!(
            "{} of {} parity cases failed:\n",
            failed.len(),
            results.len()
        );
        for (_, name, problems) in &failed {
            report.push_str(&format!("\n=== {name} ===\n"));
            for p in problems {
                report.push_str(p);
                report.push('\n');
            }
        }
        report.push_str("\nfailing cases: ");
        report.push_str(&failed.iter().map(|r| r.1).collect::<Vec<_>>().join(", "));
        panic!("{report}");
    }
}

/// The hand-over check itself ([`off_hands_over`]): an nvcc-orion that handed nvcc a variable
/// of its own, dropped an argument, printed a line or left a file under off mode would fail
/// it, each with the difference named. (The stand-in is started through a bash script that
/// meddles; no toolkit is needed.)
#[test]
fn a_meddled_hand_over_is_caught() {
    let case = all_cases()
        .into_iter()
        .find(|c| c.name == "c_sm80")
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let stand_in = r#""$(dirname "$0")/nvcc""#;
    let meddlers = [
        (
            format!("export ORION_MEDDLED=1; exec {stand_in} \"$@\""),
            "ORION_MEDDLED=1",
        ),
        (
            format!("exec {stand_in} \"${{@:1:$#-1}}\""),
            "recorded `argv",
        ),
        (
            format!("echo meddled >&2; exec {stand_in} \"$@\""),
            "meddled",
        ),
        (
            format!("touch \"$TMPDIR/meddled\"; exec {stand_in} \"$@\""),
            "files left",
        ),
    ];
    for (i, (meddler, names)) in meddlers.iter().enumerate() {
        let mut problems = Vec::new();
        let dir = root.path().join(format!("m{i}"));
        off_hands_over(&case, &dir, None, Some(meddler), &mut problems);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("is not a hand-over") && p.contains(names)),
            "`{meddler}` was not caught as {names:?}: {problems:?}"
        );
    }
}

/// The normalisation and diff helpers themselves: a comparator that normalises too much would
/// make every case pass.
#[test]
fn normalisation_helpers() {
    assert_eq!(
        common::normalise_tmpxft_text(
            "/tmp/tmpxft_00001c7b_00000000-6_k.cudafe1.cpp and tmpxft_zz"
        ),
        "/tmp/tmpxft_<ID>-6_k.cudafe1.cpp and tmpxft_zz"
    );
    assert_eq!(
        common::normalise_times("ptxas info    : Compile time = 3.201 ms\nCompile time = x"),
        "ptxas info    : Compile time = <T> ms\nCompile time = x"
    );
    // Register counts and anything else that is not a time or an id stay as they are.
    let v = "ptxas info    : Used 62 registers, used 0 barriers";
    assert_eq!(
        common::normalise_times(&common::normalise_tmpxft_text(v)),
        v
    );
    assert_eq!(common::sorted_lines("b\na\nc"), "a\nb\nc");

    let diff = common::text_diff("a\nb\nc\n", "a\nB\nc\n");
    assert!(diff.contains("first difference at line 2"), "{diff}");
    assert!(
        diff.contains("- b") && diff.contains("+ B") && diff.contains("  c"),
        "{diff}"
    );
    let bin = common::binary_diff(b"abcd", b"abxd");
    assert!(bin.contains("first at offset 0x2"), "{bin}");
}

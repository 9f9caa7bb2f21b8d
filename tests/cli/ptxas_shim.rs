//! `shims/ptxas` (`nvcc-orion --ptxas`) as Triton and other JIT callers run it, on PTX that
//! Triton 3.9 made (`tests/kernels/triton/`, from `bench/triton/kernels.py`: `.reqntid`, shared
//! memory sized at launch): a ptxas found with no CUDA toolkit, the `--version` banner Triton
//! parses and keys its cache on, Triton's three ptxas hooks, shared memory sized at launch,
//! `.reqntid` budgets, and `-g` debug information.
//!
//! Without a real ptxas the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The toolkit's real ptxas (not the suite's memo of it: these tests copy and link the file
/// itself), or `None` (skipped; a failure under CI).
fn real_ptxas(test: &str) -> Option<PathBuf> {
    let found = common::find_nvcc().map(|nvcc| common::real_tool(&nvcc, "ptxas"));
    match found.filter(|p| p.is_file()) {
        Some(p) => Some(p),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: no ptxas under CI"
            );
            common::skipped(test, "no CUDA toolkit (ptxas)");
            None
        }
    }
}

fn shim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shims/ptxas")
}

fn triton_ptx(name: &str) -> PathBuf {
    common::kernels_dir().join("triton").join(name)
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("ptxas-shim-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A command in `dir` with none of the caller's nvcc-orion or CUDA variables: only what
/// `vars` sets, `PATH` from the system folders unless `vars` names one.
fn bare(program: &Path, dir: &Path, vars: &[(&str, &str)]) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NVCC_ORION_BIN", env!("CARGO_BIN_EXE_nvcc-orion"))
        .env("NVCC_ORION_CACHE", dir.join("cache"));
    if let Some(home) = std::env::var_os("HOME") {
        c.env("HOME", home);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

/// `program --version`, bare.
fn version_of(program: &Path, dir: &Path) -> Command {
    let mut c = bare(program, dir, &[]);
    c.arg("--version");
    c
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

/// The first `release X.Y` in `banner`, as Triton reads it (`.*release (\d+\.\d+).*`).
fn release(banner: &str) -> Option<String> {
    banner.lines().find_map(|l| {
        let rest = &l[l.find("release ")? + "release ".len()..];
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let (major, minor) = v.split_once('.')?;
        (!major.is_empty() && minor.chars().next()?.is_ascii_digit()).then_some(v)
    })
}

/// Triton's ptxas command line for `add.ptx` in `dir`, through `program` (with `path` as
/// `PATH`) and through plain ptxas: nothing to retune, so the same cubin.
fn same_cubin_as_ptxas(program: &Path, ptxas: &Path, dir: &Path, path: &str) {
    let triton_args = [
        "-lineinfo",
        "-v",
        "--regAllocOptLevel=2",
        "--gpu-name=sm_90a",
        "add.ptx",
        "-o",
    ];
    let mut c = bare(program, dir, &[("PATH", path)]);
    c.args(triton_args).arg("through.cubin");
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut c = bare(ptxas, dir, &[]);
    c.args(triton_args).arg("plain.cubin");
    assert!(run(c).status.success());
    let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
    assert_eq!(
        read("through.cubin"),
        read("plain.cubin"),
        "nothing to retune: ptxas's cubin"
    );
}

/// A Python environment holding only a ptxas where Triton's wheel puts it (a link to the real
/// one), and a `python3` in its `bin`: what a Triton user without a CUDA toolkit has.
fn fake_triton_env(root: &Path, ptxas: &Path) -> PathBuf {
    let venv = root.join("venv");
    let bin = venv.join("lib/python3.12/site-packages/triton/backends/nvidia/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(ptxas, bin.join("ptxas")).unwrap();
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join("bin/python3"), "").unwrap();
    venv
}

/// With no nvcc and no `CUDA_HOME`, the shim runs the ptxas Triton bundles (found beside a
/// `python3` on `PATH`, or through `VIRTUAL_ENV`) and its cubin is plain ptxas's; with no
/// ptxas anywhere it says so in one line and exits 127, as a shell does for a missing program.
#[test]
fn works_with_only_a_ptxas_and_says_when_there_is_none() {
    let Some(ptxas) = real_ptxas("works_with_only_a_ptxas") else {
        return;
    };
    let dir = scratch("alone");
    let venv = fake_triton_env(dir.path(), &ptxas);
    std::fs::copy(triton_ptx("add_sm90.ptx"), dir.path().join("add.ptx")).unwrap();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        shim().parent().unwrap().display(),
        venv.join("bin").display()
    );
    let plain_version = run(version_of(&ptxas, dir.path())).stdout;
    for vars in [
        vec![("PATH", path.as_str())],
        vec![("VIRTUAL_ENV", venv.to_str().unwrap())],
    ] {
        let mut c = bare(&shim(), dir.path(), &vars);
        c.arg("--version");
        let out = run(c);
        assert!(out.status.success(), "{vars:?}: {}", text(&out.stderr));
        assert!(out.stdout.starts_with(&plain_version), "{vars:?}");
    }
    // Triton's command line, through the shim with nothing else found.
    same_cubin_as_ptxas(&shim(), &ptxas, dir.path(), &path);

    // Nothing: one line naming the setting, and 127.
    let mut c = bare(&shim(), dir.path(), &[]);
    c.arg("--version");
    let out = run(c);
    assert_eq!(out.status.code(), Some(127));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("NVCC_ORION_PTXAS"), "{err}");
    // Named explicitly, any ptxas will do.
    let mut c = bare(
        &shim(),
        dir.path(),
        &[("NVCC_ORION_PTXAS", ptxas.to_str().unwrap())],
    );
    c.arg("--version");
    assert!(run(c).status.success());
}

/// A link named `ptxas` to nvcc-orion is the shim without its shell script, what a JIT that
/// runs ptxas once per kernel is best pointed at: the same banner and the same cubin as ptxas,
/// and with the link's folder first on `PATH` it never takes itself for the real ptxas.
#[test]
fn a_link_named_ptxas_is_the_shim() {
    let Some(ptxas) = real_ptxas("a_link_named_ptxas") else {
        return;
    };
    let dir = scratch("link");
    let links = dir.path().join("links");
    std::fs::create_dir_all(&links).unwrap();
    let link = links.join("ptxas");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nvcc-orion"), &link).unwrap();
    std::fs::copy(triton_ptx("add_sm90.ptx"), dir.path().join("add.ptx")).unwrap();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        links.display(),
        ptxas.parent().unwrap().display()
    );

    let plain_version = run(version_of(&ptxas, dir.path())).stdout;
    let mut c = bare(&link, dir.path(), &[("PATH", &path)]);
    c.arg("--version");
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        out.stdout.starts_with(&plain_version),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("(ptxas mode)"),
        "{}",
        text(&out.stdout)
    );

    same_cubin_as_ptxas(&link, &ptxas, dir.path(), &path);
}

/// `--version` keeps ptxas's banner first, so the `release X.Y` Triton parses is ptxas's, and
/// adds one line that changes with every setting that changes the output: Triton keys its
/// kernel cache on this text.
#[test]
fn version_banner_parses_as_ptxas_and_follows_the_settings() {
    let Some(ptxas) = real_ptxas("version_banner") else {
        return;
    };
    let dir = scratch("version");
    let ptxas_s = ptxas.to_str().unwrap();
    let version = |vars: &[(&str, &str)]| {
        let mut all = vec![("NVCC_ORION_PTXAS", ptxas_s)];
        all.extend_from_slice(vars);
        let mut c = bare(&shim(), dir.path(), &all);
        c.arg("--version");
        let out = run(c);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let plain = text(&run(version_of(&ptxas, dir.path())).stdout);
    let default = version(&[]);
    assert!(default.starts_with(&plain), "{default}");
    assert_eq!(release(&default), release(&plain));
    assert!(release(&plain).is_some(), "{plain}");
    let extra: Vec<&str> = default[plain.len()..].lines().collect();
    assert_eq!(extra.len(), 1, "{default}");
    assert!(
        extra[0].starts_with(&format!(
            "nvcc-orion {} (ptxas mode), settings ",
            env!("CARGO_PKG_VERSION")
        )),
        "{default}"
    );
    assert_eq!(default, version(&[]), "deterministic");
    assert_eq!(default, version(&[("NVCC_ORION_VERBOSE", "1")]));
    for changed in [
        ("NVCC_ORION_MARGIN", "9"),
        ("NVCC_ORION", "off"),
        ("NVCC_ORION_DYNAMIC_SHARED", "4096"),
        ("NVCC_ORION_BLOCK_SIZE", "256"),
    ] {
        let v = version(&[changed]);
        assert_ne!(v, default, "{changed:?}");
        assert_eq!(release(&v), release(&plain));
    }
}

/// Triton 3.9's ptxas hooks: `TRITON_PTXAS_PATH` below sm_90, `TRITON_PTXAS_BLACKWELL_PATH`
/// from sm_90, and `PTXAS_OPTIONS` split at spaces onto ptxas's command line. With a Python
/// that has Triton (`NVCC_ORION_TRITON_PYTHON`, which `scripts/setup.sh` exports under
/// `NVCC_ORION_SETUP_TRITON=1`), Triton itself compiles a kernel for sm_80 and sm_90 with both
/// paths at the shim and `--orion-report` in `PTXAS_OPTIONS`: the report has both
/// architectures, so both went through the shim. Without Triton the same command lines are
/// run as Triton writes them.
#[test]
fn triton_hooks_reach_the_shim() {
    let Some(ptxas) = real_ptxas("triton_hooks") else {
        return;
    };
    let dir = scratch("hooks");
    let report = dir.path().join("r.jsonl");
    let options = format!("--orion-report={} --orion-margin=5", report.display());
    match triton_python() {
        Some(py) => compile_with_triton(&py, dir.path(), &ptxas, &options),
        None => {
            for (ptx, arch) in [("softmax_sm80.ptx", "sm_80"), ("add_sm90.ptx", "sm_90a")] {
                std::fs::copy(triton_ptx(ptx), dir.path().join(ptx)).unwrap();
                // make_cubin's command: ptxas, -lineinfo, -v, --regAllocOptLevel=2, then
                // PTXAS_OPTIONS split at spaces, then --gpu-name, the PTX, -o, the cubin.
                let mut c = bare(
                    &shim(),
                    dir.path(),
                    &[("NVCC_ORION_PTXAS", ptxas.to_str().unwrap())],
                );
                c.args(["-lineinfo", "-v", "--regAllocOptLevel=2"])
                    .args(options.split(' '))
                    .arg(format!("--gpu-name={arch}"))
                    .arg(ptx)
                    .args(["-o", &format!("{ptx}.o")]);
                let out = run(c);
                assert!(out.status.success(), "{}", text(&out.stderr));
            }
        }
    }
    let archs: std::collections::BTreeSet<String> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["arch"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        archs,
        ["sm_80", "sm_90"].map(String::from).into(),
        "both of Triton's paths ran the shim"
    );
}

/// The Python that has Triton, or `None` (a failure where CI asked setup for it).
fn triton_python() -> Option<PathBuf> {
    let Some(py) = std::env::var_os("NVCC_ORION_TRITON_PYTHON").map(PathBuf::from) else {
        let asked = std::env::var_os("CI").is_some()
            && std::env::var_os("NVCC_ORION_SETUP_TRITON").is_some_and(|v| v == "1");
        assert!(
            !asked,
            "NVCC_ORION_SETUP_TRITON=1 but scripts/setup.sh installed no Triton"
        );
        common::skipped(
            "",
            "no Triton (NVCC_ORION_TRITON_PYTHON); Triton's command lines instead",
        );
        return None;
    };
    let ok = Command::new(&py)
        .args(["-c", "import triton"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "NVCC_ORION_TRITON_PYTHON={} cannot import triton",
        py.display()
    );
    Some(py)
}

/// Triton compiles `bench/triton/kernels.py`'s vector add for sm_80 and sm_90 (no GPU needed)
/// with both ptxas paths at the shim and `PTXAS_OPTIONS`, and checks which ptxas it chose.
fn compile_with_triton(py: &Path, dir: &Path, ptxas: &Path, options: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/triton/kernels.py");
    let shim = shim();
    let mut c = Command::new(py);
    c.current_dir(dir)
        .arg(&script)
        .args(["--only", "add", "softmax", "matmul_64x64x32_s3", "--out"])
        .arg(dir.join("ptx"))
        .env("TRITON_PTXAS_PATH", &shim)
        .env("TRITON_PTXAS_BLACKWELL_PATH", &shim)
        .env("PTXAS_OPTIONS", options)
        .env("TRITON_CACHE_DIR", dir.join("triton-cache"))
        .env("NVCC_ORION_BIN", env!("CARGO_BIN_EXE_nvcc-orion"))
        .env("NVCC_ORION_PTXAS", ptxas)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env("TRITON_DEFAULT_FP_FUSION", "1");
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let said = text(&out.stdout);
    for arch in ["80", "90"] {
        assert!(
            said.contains(&format!("ptxas for {arch}: {}", shim.display())),
            "{said}"
        );
    }
    // Each kernel Triton made: the shim's cubin is plain ptxas's, and forced, ptxas's on
    // `.maxnreg N`.
    let mut forced = 0;
    for entry in std::fs::read_dir(dir.join("ptx")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let ptx = std::fs::read_to_string(&path).unwrap();
        forced += usize::from(same_as_ptxas(ptxas, &dir.join("same"), &name, &ptx).is_some());
    }
    assert!(
        forced > 0,
        "some kernel of Triton's has a lower budget to force"
    );
}

/// A report's records (one JSON object per line).
fn report(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Triton's matmul declares shared memory sized at launch (`global_smem`): without a size the
/// report says `"unknown"` and ptxas's budget stays, with no variant built; with
/// `NVCC_ORION_DYNAMIC_SHARED` the size is priced (100 000 bytes on sm_80: one 128-thread
/// block per SM, 4 warps).
#[test]
fn shared_memory_sized_at_launch_is_unknown_or_given() {
    let Some(ptxas) = real_ptxas("dynamic_shared") else {
        return;
    };
    let dir = scratch("dynamic");
    std::fs::copy(
        triton_ptx("matmul_64x64x32_sm80.ptx"),
        dir.path().join("mm.ptx"),
    )
    .unwrap();
    let compile = |vars: &[(&str, &str)], rep: &str| {
        let rep_path = dir.path().join(rep);
        let mut all = vec![
            ("NVCC_ORION_PTXAS", ptxas.to_str().unwrap()),
            ("NVCC_ORION_REPORT", rep_path.to_str().unwrap()),
            ("NVCC_ORION_VERBOSE", "1"),
        ];
        all.extend_from_slice(vars);
        let mut c = bare(&shim(), dir.path(), &all);
        c.args(["-v", "--gpu-name=sm_80", "mm.ptx", "-o", "mm.cubin"]);
        let out = run(c);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (report(&rep_path).remove(0), text(&out.stderr))
    };
    let (unknown, err) = compile(&[], "unknown.jsonl");
    assert_eq!(unknown["dynamic_shared"], "unknown", "{unknown}");
    assert_eq!(
        unknown["candidates"].as_array().unwrap().len(),
        1,
        "{unknown}"
    );
    assert!(
        unknown["reason"]
            .as_str()
            .unwrap()
            .contains("NVCC_ORION_DYNAMIC_SHARED"),
        "{unknown}"
    );
    assert!(err.contains("0 variant(s) built"), "{err}");
    let (given, _) = compile(&[("NVCC_ORION_DYNAMIC_SHARED", "100000")], "given.jsonl");
    assert_eq!(given["dynamic_shared"], 100000, "{given}");
    assert_eq!(
        given["candidates"][0]["warps_per_sm"],
        serde_json::json!([4])
    );
    // A kernel without such memory says nothing of it.
    std::fs::copy(triton_ptx("add_sm90.ptx"), dir.path().join("add.ptx")).unwrap();
    let rep = dir.path().join("add.jsonl");
    let mut c = bare(
        &shim(),
        dir.path(),
        &[
            ("NVCC_ORION_PTXAS", ptxas.to_str().unwrap()),
            ("NVCC_ORION_REPORT", rep.to_str().unwrap()),
        ],
    );
    c.args(["--gpu-name=sm_90a", "add.ptx", "-o", "add.cubin"]);
    assert!(run(c).status.success());
    assert!(report(&rep)[0].get("dynamic_shared").is_none());
}

/// Triton's kernels carry `.reqntid`, for which ptxas ignores `--maxrregcount`: a forced
/// budget through the shim must equal ptxas on the same PTX with `.maxnreg N`, and differ
/// from ptxas with `--maxrregcount N`, which leaves the kernel above N.
#[test]
fn reqntid_budget_equals_maxnreg_in_the_ptx() {
    let Some(ptxas) = real_ptxas("reqntid_budget") else {
        return;
    };
    let dir = scratch("reqntid");
    let ptx = std::fs::read_to_string(triton_ptx("matmul_64x64x32_sm80.ptx")).unwrap();
    assert!(ptx.contains("\n.reqntid 128\n"));
    let n = same_as_ptxas(&ptxas, dir.path(), "mm", &ptx).expect("a lower budget to force");
    let by_hand = dir.path().join("mm/by-hand");
    // `--maxrregcount N` does not bind this kernel.
    let mut c = bare(&ptxas, &by_hand, &[]);
    c.args(["-v", "--gpu-name=sm_80", "--maxrregcount", &n.to_string()])
        .args([
            by_hand.parent().unwrap().join("k.ptx").to_str().unwrap(),
            "-o",
            "flag.cubin",
        ]);
    let out = run(c);
    assert!(out.status.success());
    let used: u32 = text(&out.stderr)
        .split("Used ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(
        used > n,
        "--maxrregcount {n} ignored under .reqntid: {used}"
    );
}

/// Triton's PTX `ptx` (named `name`, in `dir/name/`) compiled as Triton runs ptxas, through the
/// shim and by plain ptxas: the cubins are the same bytes unless the report says a budget was
/// chosen. Then forced to its lowest budget N (`--orion-force=lowest`): the shim's cubin is
/// ptxas's on the same PTX with `.maxnreg N` (before `.reqntid`), under the same file names.
/// Returns N, or `None` where no lower budget exists.
fn same_as_ptxas(ptxas: &Path, dir: &Path, name: &str, ptx: &str) -> Option<u32> {
    let work = dir.join(name);
    let by_hand = work.join("by-hand");
    std::fs::create_dir_all(&by_hand).unwrap();
    std::fs::write(work.join("k.ptx"), ptx).unwrap();
    let target = ptx
        .lines()
        .find_map(|l| l.strip_prefix(".target "))
        .unwrap()
        .trim();
    let arch = if target == "sm_90" { "sm_90a" } else { target };
    let args = ["-lineinfo", "-v", "--regAllocOptLevel=2"];
    let gpu = format!("--gpu-name={arch}");
    let through_shim = |force: Option<&str>, out: &str| {
        let rep = work.join(format!("{}.jsonl", force.unwrap_or("tuned")));
        let mut vars = vec![
            ("NVCC_ORION_PTXAS", ptxas.to_str().unwrap()),
            ("NVCC_ORION_REPORT", rep.to_str().unwrap()),
        ];
        vars.extend(force.map(|f| ("NVCC_ORION_FORCE", f)));
        let mut c = bare(&shim(), &work, &vars);
        c.args(args).arg(&gpu).args(["k.ptx", "-o", out]);
        let o = run(c);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        report(&rep).remove(0)
    };
    let plain = |dir: &Path| {
        let mut c = bare(ptxas, dir, &[]);
        c.args(args).arg(&gpu).args(["k.ptx", "-o", "k.cubin"]);
        assert!(run(c).status.success(), "{name}");
        std::fs::read(dir.join("k.cubin")).unwrap()
    };
    let r = through_shim(None, "k.cubin");
    if r["chosen"] == 0 {
        let alone = work.join("plain");
        std::fs::create_dir_all(&alone).unwrap();
        std::fs::write(alone.join("k.ptx"), ptx).unwrap();
        assert_eq!(
            std::fs::read(work.join("k.cubin")).unwrap(),
            plain(&alone),
            "{name}: {r}"
        );
    }
    let r = through_shim(Some("lowest"), "k.cubin");
    let chosen = &r["candidates"][r["chosen"].as_u64().unwrap() as usize];
    let n = chosen["budget"]["regs"].as_u64()? as u32;
    assert!(
        ptx.contains("\n.reqntid "),
        "{name}: Triton's PTX has .reqntid"
    );
    std::fs::write(
        by_hand.join("k.ptx"),
        ptx.replacen("\n.reqntid ", &format!("\n.maxnreg {n}\n.reqntid "), 1),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(work.join("k.cubin")).unwrap(),
        plain(&by_hand),
        "{name}: forced budget {n} is ptxas's with .maxnreg {n}"
    );
    Some(n)
}

/// With `-g`, ptxas writes its input's and output's names into the cubin: a retuned cubin
/// names the caller's files, and equals ptxas's on the same PTX with `.maxnreg N`.
#[test]
fn debug_information_names_the_callers_files() {
    let Some(ptxas) = real_ptxas("debug_names") else {
        return;
    };
    let dir = scratch("debug");
    let ptx = std::fs::read_to_string(triton_ptx("softmax_sm80.ptx")).unwrap();
    std::fs::write(dir.path().join("soft.ptx"), &ptx).unwrap();
    let rep = dir.path().join("r.jsonl");
    let mut c = bare(
        &shim(),
        dir.path(),
        &[
            ("NVCC_ORION_PTXAS", ptxas.to_str().unwrap()),
            ("NVCC_ORION_REPORT", rep.to_str().unwrap()),
            ("NVCC_ORION_FORCE", "lowest"),
        ],
    );
    c.args(["-g", "--gpu-name=sm_80", "soft.ptx", "-o", "soft.cubin"]);
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = &report(&rep)[0];
    let chosen = &r["candidates"][r["chosen"].as_u64().unwrap() as usize];
    let Some(n) = chosen["budget"]["regs"].as_u64() else {
        panic!("no lower budget to force: {r}");
    };
    let cubin = std::fs::read(dir.path().join("soft.cubin")).unwrap();
    let has = |needle: &str| cubin.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        has("soft.ptx") && has("soft.cubin"),
        "names the caller's files"
    );
    assert!(!has("variant"), "names none of nvcc-orion's");
    let by_hand = dir.path().join("by-hand");
    std::fs::create_dir_all(&by_hand).unwrap();
    std::fs::write(
        by_hand.join("soft.ptx"),
        ptx.replacen("\n.reqntid ", &format!("\n.maxnreg {n}\n.reqntid "), 1),
    )
    .unwrap();
    let mut c = bare(&ptxas, &by_hand, &[]);
    c.args(["-g", "--gpu-name=sm_80", "soft.ptx", "-o", "soft.cubin"]);
    assert!(run(c).status.success());
    assert_eq!(cubin, std::fs::read(by_hand.join("soft.cubin")).unwrap());
}

//! The suite's toolkit (`scripts/toolkit-memo/`): the real CUDA toolkit with ptxas, nvdisasm,
//! cicc and cudafe++ behind memos of their clean results, which `scripts/test.sh` hands every
//! test process as `NVCC_ORION_NVCC`. What it gives back must be what the real tools give,
//! byte for byte: a test that compared the product with it would otherwise compare with
//! something we made.
//! Each test builds a toolkit of its own with empty memos, so a miss and a hit are both seen.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The real nvcc behind whatever the suite was given (a memo toolkit's ptxas leads to it).
fn real_nvcc(test: &str) -> Option<PathBuf> {
    common::nvcc_or_skip(test).map(|nvcc| common::real_nvcc(&nvcc))
}

/// The real nvcc, a scratch folder, and the nvcc of a memo toolkit built in it (`tk/`).
fn fresh(test: &str) -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    let real = real_nvcc(test)?;
    let d = tempfile::tempdir().unwrap();
    let nvcc = build(&real, &d.path().join("tk"));
    Some((real, d, nvcc))
}

fn build(real: &Path, dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/toolkit-memo/build.sh");
    let o = Command::new(script).arg(real).arg(dir).output().unwrap();
    common::assert_ok(&o, "build.sh");
    PathBuf::from(String::from_utf8(o.stdout).unwrap().trim_end())
}

/// `exe` as a command outside the memos' check mode, whatever the suite runs under (a test
/// here that wants the check sets it).
fn tool(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env_remove("ORION_TOOLKIT_MEMO_CHECK");
    c
}

fn run(exe: &Path, args: &[&str], cwd: &Path) -> Output {
    tool(exe).args(args).current_dir(cwd).output().unwrap()
}

/// [`run`] in the memos' check mode, differences logged to `log`.
fn checked(exe: &Path, args: &[&str], cwd: &Path, log: &Path) -> Output {
    tool(exe)
        .args(args)
        .current_dir(cwd)
        .env("ORION_TOOLKIT_MEMO_CHECK", log)
        .output()
        .unwrap()
}

/// The one kept entry's files in a memo folder: its key, and the path of its part `part`.
fn the_entry(memo: &Path, part: &str) -> (String, PathBuf) {
    assert_eq!(kept(memo), 1, "one entry kept");
    let done = std::fs::read_dir(memo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "done"))
        .unwrap();
    let key = done.file_stem().unwrap().to_str().unwrap().to_string();
    let path = memo.join(format!("{key}.{part}"));
    (key, path)
}

/// Executables named nvcc, ptxas and nvdisasm in `bin` that do nothing: enough for build.sh
/// to look at, never run.
fn stand_in_tools(bin: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for name in ["nvcc", "ptxas", "nvdisasm"] {
        std::fs::write(bin.join(name), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Stored compiles in a memo folder (`<key>.done` stamps).
fn kept(memo: &Path) -> usize {
    std::fs::read_dir(memo).map_or(0, |d| {
        d.filter(|e| {
            let p = e.as_ref().unwrap().path();
            p.extension().is_some_and(|x| x == "done")
        })
        .count()
    })
}

const KERNEL: &str = "__global__ void scale(float* a, int n) {\n\
    int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
    if (i < n) a[i] = a[i] * 3.0f + 1.0f;\n}\n";

/// ptxas through the memo: a compile, the same PTX under other names (a hit), the check mode
/// (on a true entry and a spoilt one), a debug build that records its paths, PTX ptxas
/// refuses, and PTX on standard input, against the real ptxas each time.
#[test]
fn the_suites_ptxas_writes_and_prints_what_ptxas_does() {
    let Some((real, d, nvcc)) = fresh("the_suites_ptxas_writes_and_prints_what_ptxas_does") else {
        return;
    };
    let (memo_ptxas, real_ptxas) = (nvcc.with_file_name("ptxas"), real.with_file_name("ptxas"));
    assert_eq!(
        common::listing_memo::real_behind(&memo_ptxas).as_deref(),
        Some(std::fs::canonicalize(&real_ptxas).unwrap().as_path())
    );
    let memo = nvcc.parent().unwrap().join("../memo/ptxas");
    let w = d.path();
    std::fs::write(w.join("k.cu"), KERNEL).unwrap();
    common::assert_ok(
        &run(
            &real,
            &["-ptx", "-arch=sm_90", "-lineinfo", "k.cu", "-o", "k.ptx"],
            w,
        ),
        "nvcc -ptx",
    );
    std::fs::copy(w.join("k.ptx"), w.join("other name.ptx")).unwrap();
    let args =
        |ptx: &'static str, out: &'static str| ["-arch=sm_90", "-v", "-lineinfo", ptx, "-o", out];
    let want = run(&real_ptxas, &args("k.ptx", "want.cubin"), w);
    common::assert_ok(&want, "ptxas");
    let want_cubin = std::fs::read(w.join("want.cubin")).unwrap();
    for (ptx, out, stored) in [("k.ptx", "a.cubin", 1), ("other name.ptx", "b.cubin", 1)] {
        let got = run(&memo_ptxas, &args(ptx, out), w);
        common::assert_ok(&got, "memo ptxas");
        assert_eq!(got.stdout, want.stdout, "{ptx}");
        assert_eq!(
            common::normalise_times(&String::from_utf8_lossy(&got.stderr)),
            common::normalise_times(&String::from_utf8_lossy(&want.stderr)),
            "{ptx}"
        );
        assert!(
            std::fs::read(w.join(out)).unwrap() == want_cubin,
            "{ptx}: another cubin"
        );
        assert_eq!(kept(&memo), stored, "{ptx}: one compile kept, then found");
    }
    // The check mode: a hit runs the real ptxas again and gives what it wrote; a kept part
    // that differs from it is logged, the compile's time aside.
    let log = w.join("differences");
    let check = || {
        let got = checked(&memo_ptxas, &args("k.ptx", "c.cubin"), w, &log);
        common::assert_ok(&got, "memo ptxas, checked");
        assert!(std::fs::read(w.join("c.cubin")).unwrap() == want_cubin);
        assert_eq!(got.stdout, want.stdout);
    };
    check();
    assert!(!log.exists(), "the kept compile is the real one");
    let (key, cubin) = the_entry(&memo, "cubin");
    std::fs::write(&cubin, b"not a cubin").unwrap();
    std::fs::write(
        memo.join(format!("{key}.err")),
        b"ptxas info: not what it said\n",
    )
    .unwrap();
    check();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("ptxas {key} cubin c.cubin\nptxas {key} err c.cubin\n")
    );
    // `-g` records the command line and the directory: each name gets its own, never another's.
    for ptx in ["k.ptx", "other name.ptx"] {
        let got = run(&memo_ptxas, &["-arch=sm_90", "-g", ptx, "-o", "g.cubin"], w);
        common::assert_ok(&got, "memo ptxas -g");
        let cubin = std::fs::read(w.join("g.cubin")).unwrap();
        assert!(
            cubin.windows(ptx.len()).any(|x| x == ptx.as_bytes()),
            "{ptx}"
        );
    }
    std::fs::write(w.join("bad.ptx"), ".version 9.0\n.target sm_90\nnot ptx\n").unwrap();
    for _ in 0..2 {
        let (want, got) = (
            run(
                &real_ptxas,
                &["-arch=sm_90", "bad.ptx", "-o", "bad.cubin"],
                w,
            ),
            run(
                &memo_ptxas,
                &["-arch=sm_90", "bad.ptx", "-o", "bad.cubin"],
                w,
            ),
        );
        assert_ne!(got.status.code(), Some(0));
        assert_eq!(
            (got.status.code(), &got.stdout, &got.stderr),
            (want.status.code(), &want.stdout, &want.stderr)
        );
        assert!(String::from_utf8_lossy(&got.stderr).contains("bad.ptx"));
    }
    // PTX on standard input (`-`): two modules under the same arguments, each its own cubin
    // (without line tables, which name the source's folder, so that a memo would keep them).
    common::assert_ok(
        &run(
            &real,
            &["-ptx", "-arch=sm_90", "k.cu", "-o", "plain.ptx"],
            w,
        ),
        "nvcc -ptx",
    );
    let plain = std::fs::read_to_string(w.join("plain.ptx")).unwrap();
    let other = plain.replace("0f40400000", "0f40A00000");
    std::fs::write(w.join("other.ptx"), &other).unwrap();
    for ptx in ["plain.ptx", "other.ptx"] {
        let stdin = || std::fs::File::open(w.join(ptx)).unwrap();
        let cubin = |exe: &Path, out: &str| {
            let o = tool(exe)
                .args(["-arch=sm_90", "-", "-o", out])
                .current_dir(w)
                .stdin(stdin())
                .output()
                .unwrap();
            common::assert_ok(&o, "ptxas -");
            std::fs::read(w.join(out)).unwrap()
        };
        assert!(
            cubin(&memo_ptxas, "in.cubin") == cubin(&real_ptxas, "want_in.cubin"),
            "{ptx} on standard input"
        );
    }
    assert_ne!(plain, other, "two modules");
    assert_eq!(
        kept(&memo),
        1,
        "a debug build, standard input or a refusal is never kept"
    );
}

/// nvcc started from the memo toolkit compiles, lists dependencies and plans its steps as the
/// real one does: the same cubin, the same depfile (the real include folder), the same
/// `--dryrun` but for where it was started from and the temporary files' names.
#[test]
fn the_suites_nvcc_is_the_real_one() {
    let Some((real, d, nvcc)) = fresh("the_suites_nvcc_is_the_real_one") else {
        return;
    };
    assert_ne!(nvcc, real);
    assert_eq!(build(&real, &d.path().join("tk")), nvcc, "built once");
    let w = d.path();
    std::fs::write(w.join("k.cu"), KERNEL).unwrap();
    for (exe, name) in [(&real, "real.cubin"), (&nvcc, "memo.cubin")] {
        common::assert_ok(
            &run(exe, &["-cubin", "-arch=sm_90", "k.cu", "-o", name], w),
            "nvcc",
        );
    }
    assert!(
        std::fs::read(w.join("real.cubin")).unwrap()
            == std::fs::read(w.join("memo.cubin")).unwrap()
    );
    let (want, got) = (
        run(&real, &["-M", "k.cu"], w),
        run(&nvcc, &["-M", "k.cu"], w),
    );
    common::assert_ok(&got, "nvcc -M");
    assert_eq!(
        String::from_utf8_lossy(&got.stdout),
        String::from_utf8_lossy(&want.stdout)
    );
    let plan = |exe: &Path| -> Vec<String> {
        let o = run(exe, &["--dryrun", "-arch=sm_90", "-c", "k.cu"], w);
        common::assert_ok(&o, "nvcc --dryrun");
        let started_from = [
            "#$ _HERE_=",
            "#$ _THERE_=",
            "#$ CUDA_ROOT=",
            "#$ PATH=",
            "#$ CICC_PATH=",
        ];
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| !started_from.iter().any(|s| l.starts_with(s)))
            .map(common::normalise_tmpxft_text)
            .collect()
    };
    let (want, got) = (plan(&real), plan(&nvcc));
    assert!(want.len() > 5 && got == want, "{got:#?}\n{want:#?}");
    let o = run(&nvcc, &["--dryrun", "-arch=sm_90", "-c", "k.cu"], w);
    let path = String::from_utf8_lossy(&o.stderr)
        .lines()
        .find(|l| l.starts_with("#$ PATH="))
        .unwrap()
        .to_string();
    let bin = nvcc.parent().unwrap().display().to_string();
    assert!(
        path.contains(&format!(":{bin}:")),
        "nvcc finds the memos first: {path}"
    );
    let cicc = nvcc.parent().unwrap().join("../nvvm/bin");
    assert!(
        String::from_utf8_lossy(&o.stderr).lines().any(|l| l
            .strip_prefix("#$ CICC_PATH=")
            .is_some_and(|p| Path::new(p) == cicc.canonicalize().unwrap())),
        "cicc is the memo's"
    );
}

/// cicc and cudafe++ through the memo, for four kinds of build (an object, a relocatable object
/// with line tables, a debug cubin and PTX, the last two made without cudafe++): a first compile, its answers
/// checked against the real tools run again (`ORION_TOOLKIT_MEMO_CHECK`, which must log
/// a kept answer made wrong), then the same
/// compiles with the real front end gone and the temporaries in another folder, so that only
/// the memo can answer. Each time the
/// output is the real nvcc's, but for the temporaries' names. A source the front end refuses
/// gets the real nvcc's messages and status, and nothing is kept.
#[test]
fn the_suites_front_end_gives_what_cicc_and_cudafe_give() {
    let test = "the_suites_front_end_gives_what_cicc_and_cudafe_give";
    let Some((real, d, nvcc)) = fresh(test) else {
        return;
    };
    let tk = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let w = d.path();
    let source = format!(
        "#include <cstdio>\n{KERNEL}\ntemplate <int N> __global__ void say(int* a) {{\n\
         if (a[0] < 0) printf(\"%d\\n\", N);\n}}\n\
         int main() {{ int* a; cudaMalloc(&a, 4); say<3><<<1, 1>>>(a); return 0; }}\n"
    );
    std::fs::write(w.join("k.cu"), source).unwrap();
    let builds: [&[&str]; 4] = [
        &["-c", "-arch=sm_90"],
        &["-c", "-rdc=true", "-arch=sm_80", "-lineinfo"],
        &["-cubin", "-G", "-arch=sm_80"],
        &["-ptx", "-arch=sm_90"],
    ];
    // One output name for all: a debug cubin records ptxas's command line.
    // `env`: ORION_TOOLKIT_MEMO_CHECK (the check), TMPDIR (another folder of temporaries).
    let compile = |exe: &Path, args: &[&str], env: Option<(&str, &Path)>| -> Vec<u8> {
        let mut c = tool(exe);
        c.args(args).args(["k.cu", "-o", "k.out"]).current_dir(w);
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        common::assert_ok(&c.output().unwrap(), &format!("{args:?}"));
        let mut b = std::fs::read(w.join("k.out")).unwrap();
        common::zero_tmpxft(&mut b);
        b
    };
    let want: Vec<Vec<u8>> = builds.iter().map(|a| compile(&real, a, None)).collect();
    for (args, want) in builds.iter().zip(&want) {
        assert!(compile(&nvcc, args, None) == *want, "{args:?}: a miss");
    }
    let kept_now = || (kept(&tk.join("memo/cicc")), kept(&tk.join("memo/cudafe++")));
    assert_eq!(
        kept_now(),
        (4, 2),
        "one cicc run per build, cudafe++ for objects"
    );
    let check = w.join("differences");
    for (args, want) in builds.iter().zip(&want) {
        assert!(
            compile(&nvcc, args, Some(("ORION_TOOLKIT_MEMO_CHECK", &check))) == *want,
            "{args:?}: checked"
        );
    }
    assert!(
        !check.exists(),
        "the memo gave what the real tools gave again"
    );
    // One kept answer made wrong (a cicc entry's output file): the check logs it, and the
    // builds still get the real tools' bytes.
    let cicc = tk.join("memo/cicc");
    let spoilt = std::fs::read_dir(&cicc)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "0"))
        .min()
        .unwrap();
    let kept_bytes = std::fs::read(&spoilt).unwrap();
    std::fs::write(&spoilt, b"not what cicc wrote").unwrap();
    for (args, want) in builds.iter().zip(&want) {
        assert!(
            compile(&nvcc, args, Some(("ORION_TOOLKIT_MEMO_CHECK", &check))) == *want,
            "{args:?}: checked, one entry spoilt"
        );
    }
    let key = spoilt.file_stem().unwrap().to_str().unwrap();
    let log = std::fs::read_to_string(&check).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.starts_with(&format!("cicc {key} 0 ")), "{log}");
    std::fs::write(&spoilt, kept_bytes).unwrap();
    std::fs::write(w.join("bad.cu"), "__global__ void k() { undeclared(); }\n").unwrap();
    for _ in 0..2 {
        let args = ["-c", "-arch=sm_90", "bad.cu", "-o", "bad.o"];
        let (want, got) = (run(&real, &args, w), run(&nvcc, &args, w));
        assert_ne!(got.status.code(), Some(0));
        let text = |o: &Output| common::normalise_tmpxft_text(&String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            (got.status.code(), &got.stdout, text(&got)),
            (want.status.code(), &want.stdout, text(&want))
        );
    }
    assert_eq!(kept_now(), (4, 2), "a refusal is never kept");
    for real_tool in ["nvvm/bin/.real/cicc", "bin/.real/cudafe++"] {
        let f = tk.join(real_tool);
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, "#!/bin/sh\nexit 1\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The temporaries elsewhere, as the product puts them: still the same run to the memo.
    let elsewhere = w.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for (args, want) in builds.iter().zip(&want) {
        let hit = compile(&nvcc, args, Some(("TMPDIR", &elsewhere)));
        assert!(hit == *want, "{args:?}: a hit");
    }
}

/// cudafe++ ends the module id of a source that defines only template instances with its own
/// process id (`_<hash>_<len>_<name>_<hash>_<pid>`), so no other run of it could give what it
/// wrote: the memo keeps no such run, and each build gets an id of its own, as from the real
/// nvcc. A source with a kernel of its own (an id without the process id) is kept as before.
#[test]
fn a_module_id_made_from_the_tools_process_id_is_not_kept() {
    let Some((real, d, nvcc)) = fresh("a_module_id_made_from_the_tools_process_id_is_not_kept")
    else {
        return;
    };
    let w = d.path();
    let cudafe = nvcc.parent().unwrap().join("../memo/cudafe++");
    std::fs::write(
        w.join("t.cu"),
        "template <int N> __global__ void t(int* a) { a[0] = N; }\n\
         template __global__ void t<1>(int*);\n",
    )
    .unwrap();
    std::fs::write(w.join("k.cu"), KERNEL).unwrap();
    // The module id each build used: nvcc's `--keep` leaves it as `<name>.module_id`.
    let module_id = |exe: &Path, name: &str| -> String {
        let keep = w.join("keep");
        std::fs::create_dir_all(&keep).unwrap();
        let source = format!("{name}.cu");
        let args = ["-c", "-arch=sm_90", "--keep", "--keep-dir"];
        let o = tool(exe)
            .args(args)
            .arg(&keep)
            .args([source.as_str(), "-o", "out.o"])
            .current_dir(w)
            .output()
            .unwrap();
        common::assert_ok(&o, &source);
        let id = std::fs::read_to_string(keep.join(format!("{name}.module_id"))).unwrap();
        std::fs::remove_dir_all(&keep).unwrap();
        id
    };
    let real_ids = [module_id(&real, "t"), module_id(&real, "t")];
    assert_ne!(
        real_ids[0], real_ids[1],
        "the real cudafe++ names its process"
    );
    // Through the memo, twice each (without --keep, which the memo leaves to the tool).
    let twice = |args: &[&str]| {
        for _ in 0..2 {
            common::assert_ok(&run(&nvcc, args, w), &format!("{args:?}"));
        }
    };
    twice(&["-c", "-arch=sm_90", "t.cu", "-o", "t.o"]);
    assert_eq!(kept(&cudafe), 0, "no run that named its process is kept");
    // cicc makes the id where cudafe++ does not run (a cubin): the same rule.
    let cicc = nvcc.parent().unwrap().join("../memo/cicc");
    let before = kept(&cicc);
    assert!(
        before > 0,
        "the objects' cicc runs (which read the id) are kept"
    );
    twice(&["-cubin", "-arch=sm_90", "t.cu", "-o", "t.cubin"]);
    assert_eq!(kept(&cicc), before, "nor a cicc run that did");
    let want = ["-cubin", "-arch=sm_90", "t.cu", "-o", "want.cubin"];
    common::assert_ok(&run(&real, &want, w), "real t.cu -cubin");
    // nvcc records its temporaries' names in an object: those are made alike.
    let bytes = |name: &str| {
        let mut b = std::fs::read(w.join(name)).unwrap();
        common::zero_tmpxft(&mut b);
        b
    };
    assert!(
        bytes("t.cubin") == bytes("want.cubin"),
        "the real nvcc's cubin"
    );
    twice(&["-c", "-arch=sm_90", "k.cu", "-o", "k.o"]);
    assert_eq!(kept(&cudafe), 1, "a run that did not is kept");
}

/// A toolkit that does not look like one (no nvcc.profile beside the nvcc) is used as it is.
#[test]
fn an_unknown_nvcc_is_used_as_it_is() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    stand_in_tools(&bin);
    for nvcc in [bin.join("nvcc"), d.path().join("missing/nvcc")] {
        assert_eq!(build(&nvcc, &d.path().join("tk")), nvcc);
    }
    assert!(!d.path().join("tk").exists());
}

/// [`fresh`], with `KERNEL` written as `k.cu` in the working folder, where `/dev/shm` exists.
fn fresh_with_shm(test: &str) -> Option<(PathBuf, tempfile::TempDir, PathBuf, &'static Path)> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        common::skipped(test, "no /dev/shm");
        return None;
    }
    let (real, d, nvcc) = fresh(test)?;
    std::fs::write(d.path().join("k.cu"), KERNEL).unwrap();
    Some((real, d, nvcc, shm))
}

/// nvdisasm through the memo keeps a listing of a regular file wherever it is: the product
/// lists its cubins from `/dev/shm`, and a guard on `/dev` once sent all of them to the tool.
/// The check mode runs the real tool on a hit and logs a kept listing that differs.
#[test]
fn a_cubin_in_dev_shm_is_listed_once() {
    let Some((real, d, nvcc, shm)) = fresh_with_shm("a_cubin_in_dev_shm_is_listed_once") else {
        return;
    };
    let w = d.path();
    let cubin = tempfile::Builder::new()
        .suffix(".cubin")
        .tempfile_in(shm)
        .unwrap();
    let out = cubin.path().to_str().unwrap();
    common::assert_ok(
        &run(&real, &["-cubin", "-arch=sm_90", "k.cu", "-o", out], w),
        "nvcc",
    );
    let want = run(&real.with_file_name("nvdisasm"), &["-c", out], w);
    common::assert_ok(&want, "nvdisasm");
    for _ in 0..2 {
        let got = run(&nvcc.with_file_name("nvdisasm"), &["-c", out], w);
        assert_eq!((&got.stdout, &got.stderr), (&want.stdout, &want.stderr));
    }
    let memo = nvcc.parent().unwrap().join("../memo/nvdisasm");
    assert_eq!(kept(&memo), 1, "one listing kept, then found");
    // The check mode: a hit runs the real nvdisasm again and gives its listing; a kept one
    // that differs from it is logged.
    let log = w.join("differences");
    let check = || {
        let got = checked(&nvcc.with_file_name("nvdisasm"), &["-c", out], w, &log);
        assert_eq!((&got.stdout, &got.stderr), (&want.stdout, &want.stderr));
    };
    check();
    assert!(!log.exists(), "the kept listing is the real one");
    let (key, listing) = the_entry(&memo, "out");
    std::fs::write(&listing, "not the listing\n").unwrap();
    check();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("nvdisasm {key} out {out}\n")
    );
}

/// ptxas writing its cubin into `/dev/shm` (a regular file there) compiles once and gives
/// back the real ptxas's bytes on the hit; only an output that is not a regular file goes to
/// the tool every time.
#[test]
fn a_cubin_written_to_dev_shm_is_compiled_once() {
    let Some((real, d, nvcc, shm)) = fresh_with_shm("a_cubin_written_to_dev_shm_is_compiled_once")
    else {
        return;
    };
    let w = d.path();
    common::assert_ok(
        &run(&real, &["-ptx", "-arch=sm_90", "k.cu"], w),
        "nvcc -ptx",
    );
    let want = w.join("want.cubin");
    let args = ["-arch=sm_90", "-m64", "k.ptx", "-o"];
    let o = run(
        &real.with_file_name("ptxas"),
        &[&args[..], &[want.to_str().unwrap()]].concat(),
        w,
    );
    common::assert_ok(&o, "ptxas");
    for _ in 0..2 {
        let cubin = tempfile::Builder::new()
            .suffix(".cubin")
            .tempfile_in(shm)
            .unwrap();
        let out = cubin.path().to_str().unwrap();
        let o = run(
            &nvcc.with_file_name("ptxas"),
            &[&args[..], &[out]].concat(),
            w,
        );
        common::assert_ok(&o, "the memo's ptxas");
        assert!(
            std::fs::read(out).unwrap() == std::fs::read(&want).unwrap(),
            "the real cubin"
        );
    }
    let memo = nvcc.parent().unwrap().join("../memo/ptxas");
    assert_eq!(kept(&memo), 1, "one compile kept, then found");
}

/// What the key must not collapse: options whose values name files of the same bytes (each
/// entry gets its own cubin). And an output that is not a regular file (`-o /dev/stdout` into
/// a file) gives what ptxas gives, twice (ptxas 13.5 writes nothing there, so this part holds
/// with or without the script's guard on such outputs: it pins the behaviour, not the guard).
#[test]
fn option_values_and_odd_outputs_are_not_confused() {
    let Some((real, d, nvcc)) = fresh("option_values_and_odd_outputs_are_not_confused") else {
        return;
    };
    let (memo_ptxas, real_ptxas) = (nvcc.with_file_name("ptxas"), real.with_file_name("ptxas"));
    let w = d.path();
    let two = "extern \"C\" __global__ void ka(float* a) { a[threadIdx.x] *= 2.0f; }\n\
               extern \"C\" __global__ void kb(float* a) { a[threadIdx.x] += 7.0f; }\n";
    std::fs::write(w.join("two.cu"), two).unwrap();
    common::assert_ok(
        &run(
            &real,
            &["-ptx", "-arch=sm_90", "two.cu", "-o", "two.ptx"],
            w,
        ),
        "nvcc -ptx",
    );
    // Files named like the entries, with the same bytes: `--entry ka` is not `--entry kb`.
    for name in ["ka", "kb"] {
        std::fs::write(w.join(name), "same bytes\n").unwrap();
    }
    for entry in ["ka", "kb"] {
        let args = |out: &'static str| ["-arch=sm_90", "--entry", entry, "two.ptx", "-o", out];
        common::assert_ok(&run(&real_ptxas, &args("want.cubin"), w), "ptxas --entry");
        common::assert_ok(&run(&memo_ptxas, &args("got.cubin"), w), "memo --entry");
        assert!(
            std::fs::read(w.join("got.cubin")).unwrap()
                == std::fs::read(w.join("want.cubin")).unwrap(),
            "--entry {entry}: another entry's cubin"
        );
    }
    // `-o /dev/stdout` with standard output a regular file, twice.
    let to_file = |exe: &Path, name: &str| {
        let file = std::fs::File::create(w.join(name)).unwrap();
        let o = tool(exe)
            .args(["-arch=sm_90", "two.ptx", "-o", "/dev/stdout"])
            .current_dir(w)
            .stdout(file)
            .output()
            .unwrap();
        common::assert_ok(&o, "ptxas -o /dev/stdout");
        std::fs::read(w.join(name)).unwrap()
    };
    // (ptxas 13.5 leaves such a file empty; whatever it does, the memo does the same.)
    let want = to_file(&real_ptxas, "want.out");
    for _ in 0..2 {
        assert!(to_file(&memo_ptxas, "got.out") == want, "-o /dev/stdout");
    }
}

/// The real folder is written into the copy's `nvcc.profile` as it is, whatever it holds
/// (`&` and `|` mean something to the `sed` that writes it).
#[test]
fn a_toolkit_folder_with_odd_characters_keeps_its_top() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("cuda & co|13").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    stand_in_tools(&bin);
    std::fs::write(
        bin.join("nvcc.profile"),
        "\nTOP              = $(_HERE_)/..\n",
    )
    .unwrap();
    let nvcc = build(&bin.join("nvcc"), &d.path().join("tk"));
    let profile = std::fs::read_to_string(nvcc.with_file_name("nvcc.profile")).unwrap();
    let real = std::fs::canonicalize(&bin).unwrap();
    assert_eq!(
        profile,
        format!("\nTOP              = {}/..\n", real.display())
    );
}

/// The same run asked for three times at once (nvcc's ptxas beside the product's own, two
/// tests side by side) reaches the real tool once: the others wait for it and take what it
/// kept, the real tools' bytes. Each real tool is put behind a stand-in that counts its runs
/// and takes a second, so the three overlap.
#[test]
fn the_same_run_side_by_side_runs_the_tool_once() {
    let Some((real, d, nvcc)) = fresh("the_same_run_side_by_side_runs_the_tool_once") else {
        return;
    };
    let w = d.path();
    let tk = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let runs = w.join("runs");
    for link in [
        "bin/.real/ptxas",
        "bin/.real/nvdisasm",
        "bin/.real/cudafe++",
        "nvvm/bin/.real/cicc",
    ] {
        counted(&tk.join(link), &runs, 1);
    }
    std::fs::write(w.join("k.cu"), KERNEL).unwrap();
    common::assert_ok(
        &run(&real, &["-ptx", "-arch=sm_90", "k.cu", "-o", "k.ptx"], w),
        "nvcc -ptx",
    );
    let want_cubin = run(
        &real.with_file_name("ptxas"),
        &["-arch=sm_90", "k.ptx", "-o", "want.cubin"],
        w,
    );
    common::assert_ok(&want_cubin, "ptxas");
    let want_listing = run(&real.with_file_name("nvdisasm"), &["-c", "want.cubin"], w);
    common::assert_ok(&want_listing, "nvdisasm");
    common::assert_ok(
        &run(&real, &["-c", "-arch=sm_90", "k.cu", "-o", "want.o"], w),
        "nvcc -c",
    );
    // nvcc records its temporaries' names in an object: those are made alike.
    let bytes = |name: &str| {
        let mut b = std::fs::read(w.join(name)).unwrap();
        common::zero_tmpxft(&mut b);
        b
    };
    // Three at once, `{}` in an argument standing for which of the three.
    let three = |exe: &Path, args: &[&str]| -> Vec<Output> {
        let started: Vec<_> = (0..3)
            .map(|i| {
                let mut c = tool(exe);
                c.args(args.iter().map(|a| a.replace("{}", &i.to_string())));
                c.current_dir(w)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                c.spawn().unwrap()
            })
            .collect();
        started
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect()
    };
    let tally = || std::fs::read_to_string(&runs).unwrap_or_default();

    for o in three(
        &nvcc.with_file_name("ptxas"),
        &["-arch=sm_90", "k.ptx", "-o", "a{}.cubin"],
    ) {
        common::assert_ok(&o, "memo ptxas");
    }
    assert_eq!(tally(), "ptxas\n", "one ptxas run for three");
    for i in 0..3 {
        assert!(
            bytes(&format!("a{i}.cubin")) == bytes("want.cubin"),
            "a{i}.cubin"
        );
    }

    for o in three(&nvcc.with_file_name("nvdisasm"), &["-c", "want.cubin"]) {
        assert_eq!(
            (&o.stdout, &o.stderr),
            (&want_listing.stdout, &want_listing.stderr)
        );
    }
    assert_eq!(tally(), "ptxas\nnvdisasm\n", "one nvdisasm run for three");

    for o in three(&nvcc, &["-c", "-arch=sm_90", "k.cu", "-o", "o{}.o"]) {
        common::assert_ok(&o, "memo nvcc -c");
    }
    let mut after: Vec<_> = tally().lines().skip(2).map(str::to_string).collect();
    after.sort();
    assert_eq!(
        after,
        ["cicc", "cudafe++", "ptxas"],
        "one of each for three builds"
    );
    for i in 0..3 {
        assert!(bytes(&format!("o{i}.o")) == bytes("want.o"), "o{i}.o");
    }
}

/// Puts the tool behind the link `link` behind a stand-in that appends the tool's name to
/// `runs` and sleeps `pause` seconds before it becomes the tool (same process, so the front
/// end's process id rule still sees the tool's).
fn counted(link: &Path, runs: &Path, pause: u32) {
    use std::os::unix::fs::PermissionsExt;
    let target = std::fs::canonicalize(link).unwrap();
    let name = link.file_name().unwrap().to_str().unwrap();
    std::fs::remove_file(link).unwrap();
    std::fs::write(
        link,
        format!(
            "#!/bin/sh\necho '{name}' >>'{}'\nsleep {pause}\nexec '{}' \"$@\"\n",
            runs.display(),
            target.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(link, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// One source built alike from two working directories (tests build the repository's kernels
/// from folders of their own) runs the front end once; a debug build, whose PTX holds the
/// directory as bytes, runs it in each, and each gets its own; so does a build whose output
/// names the first directory as text. Against the real nvcc in each.
#[test]
fn a_build_from_another_folder_reuses_the_front_end_unless_its_output_holds_the_folder() {
    let test =
        "a_build_from_another_folder_reuses_the_front_end_unless_its_output_holds_the_folder";
    let Some((real, d, nvcc)) = fresh(test) else {
        return;
    };
    let w = d.path();
    let tk = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let runs = w.join("runs");
    counted(&tk.join("bin/.real/cudafe++"), &runs, 0);
    counted(&tk.join("nvvm/bin/.real/cicc"), &runs, 0);
    let folders = [w.join("a"), w.join("b")];
    for f in &folders {
        std::fs::create_dir(f).unwrap();
    }
    // One source beside the folders, one inside the first: the line table names it.
    let (beside, inside) = (w.join("k.cu"), folders[0].join("in.cu"));
    std::fs::write(&beside, KERNEL).unwrap();
    std::fs::write(&inside, KERNEL).unwrap();
    let build = |exe: &Path, args: &[&str], source: &Path, cwd: &Path| -> Vec<u8> {
        let mut c = tool(exe);
        c.args(args)
            .arg(source)
            .args(["-o", "out"])
            .current_dir(cwd);
        common::assert_ok(
            &c.output().unwrap(),
            &format!("{args:?} in {}", cwd.display()),
        );
        let mut b = std::fs::read(cwd.join("out")).unwrap();
        common::zero_tmpxft(&mut b);
        b
    };
    let lineinfo: &[&str] = &["-ptx", "-arch=sm_90", "-lineinfo"];
    let cases: [(&[&str], &Path, &str); 4] = [
        (&["-c", "-arch=sm_90"], &beside, "cudafe++\ncicc\n"),
        (lineinfo, &beside, "cicc\n"),
        (&["-ptx", "-arch=sm_90", "-G"], &beside, "cicc\ncicc\n"),
        // The PTX names the first folder as text: kept under that folder alone.
        (lineinfo, &inside, "cicc\ncicc\n"),
    ];
    for (args, source, once) in cases {
        let want: Vec<_> = folders
            .iter()
            .map(|f| build(&real, args, source, f))
            .collect();
        let _ = std::fs::remove_file(&runs);
        for (f, want) in folders.iter().zip(&want) {
            assert!(
                build(&nvcc, args, source, f) == *want,
                "{args:?} {} in {}",
                source.display(),
                f.display()
            );
        }
        let ran = std::fs::read_to_string(&runs).unwrap_or_default();
        assert_eq!(
            ran,
            once,
            "{args:?} {}: the front end's runs from two folders",
            source.display()
        );
        if args.contains(&"-G") {
            assert!(want[0] != want[1], "a debug build's PTX holds its folder");
        }
    }
}

//! `nvcc-orion inspect` and `nvcc-orion rewrite` on the real fixture matrix
//! (`tests/common/fixtures.rs`: cubins, fatbins, objects, executables and an archive built by
//! nvcc 13.5 for sm_75 to sm_120, with -G, -lineinfo, -rdc and every compression mode), checked
//! against the toolkit: `cuobjdump -res-usage`, `nvdisasm`, and linking with nvcc.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use common::fixtures::{self, Fixtures, ResImage};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn orion(args: &[&std::ffi::OsStr]) -> Output {
    common::orion().args(args).output().expect("run nvcc-orion")
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("commands-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `nvcc-orion inspect --json <path>`, which must succeed.
fn inspect_json(path: &Path) -> Value {
    let out = orion(&["inspect".as_ref(), "--json".as_ref(), path.as_os_str()]);
    assert!(
        out.status.success(),
        "inspect {} failed: {}",
        path.display(),
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON");
    v.as_array().expect("an array of files")[0].clone()
}

/// `nvcc-orion rewrite --identity in -o out`; the bytes written.
fn rewrite_identity(input: &Path, dir: &Path) -> Vec<u8> {
    let out_path = dir.join(format!(
        "{}.identity",
        input.file_name().unwrap().to_string_lossy()
    ));
    let out = orion(&[
        "rewrite".as_ref(),
        "--identity".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        out_path.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "rewrite --identity {}: {}",
        input.display(),
        text(&out.stderr)
    );
    std::fs::read(&out_path).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    let Some(fx) = fx() else { return };
    let dir = scratch("identity");
    let mut kernels = BTreeSet::new();
    for a in &fx.artifacts {
        let original = std::fs::read(&a.path).unwrap();
        let written = rewrite_identity(&a.path, dir.path());
        assert!(
            written == original,
            "{}: rewrite --identity changed the file ({} -> {} bytes)",
            a.name,
            original.len(),
            written.len()
        );
        // Every image of every kind was really parsed: inspect saw the kernels the toolkit sees.
        let v = inspect_json(&a.path);
        let ours: BTreeSet<String> = functions(&v)
            .filter(|f| f["is_kernel"] == true)
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect();
        // cuobjdump (which lists the fixture's kernels) skips an executable's
        // `__nv_relfatbin`; we list its kernels too.
        if a.kind == fixtures::Kind::Executable {
            assert!(ours.is_superset(&a.kernels), "{}: kernels {ours:?}", a.name);
        } else {
            assert_eq!(ours, a.kernels, "{}: kernels", a.name);
        }
        kernels.extend(ours);
    }
    assert!(
        kernels.len() >= 40,
        "only {} distinct kernels in the matrix",
        kernels.len()
    );
    // Executables keep their mode through a rewrite.
    let app = dir.path().join("app.identity");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(app).unwrap().permissions());
    assert_ne!(
        mode & 0o111,
        0,
        "the rewritten executable is not executable"
    );
}

fn images(v: &Value) -> impl Iterator<Item = &Value> {
    v["images"].as_array().unwrap().iter()
}

fn functions(v: &Value) -> impl Iterator<Item = &Value> {
    images(v).flat_map(|i| i["functions"].as_array().into_iter().flatten())
}

// ---------------------------------------------------------------------------------------------
// inspect against cuobjdump -res-usage
// ---------------------------------------------------------------------------------------------

/// Whether our image `img` shows every function of cuobjdump's `ru` with the same numbers.
fn same_numbers(img: &Value, ru: &ResImage) -> Result<(), String> {
    if img["arch"] != format!("sm_{}", ru.arch) {
        return Err(format!("arch {} vs sm_{}", img["arch"], ru.arch));
    }
    let fs = img["functions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for f in &ru.functions {
        let Some(ours) = fs.iter().find(|o| o["name"] == f.function.as_str()) else {
            return Err(format!("no function {}", f.function));
        };
        // cuobjdump prints a device function's count from its section header, where sm_90
        // and later keep none (REG:0); kernels' counts come from EIATTR_REGCOUNT.
        let reg = if ours["is_kernel"] == true {
            ours["registers"].as_u64()
        } else {
            Some(ours["section_registers"].as_u64().unwrap_or(0))
        };
        let shared = ours["static_shared"].as_u64();
        let stack = ours["min_stack"].as_u64();
        if reg != Some(u64::from(f.reg))
            || shared != Some(u64::from(f.shared))
            || stack != f.stack.map(u64::from)
        {
            return Err(format!(
                "{}: ours REG {reg:?} SHARED {shared:?} STACK {stack:?}, cuobjdump REG {} SHARED {} STACK {:?}",
                f.function, f.reg, f.shared, f.stack
            ));
        }
    }
    Ok(())
}

#[test]
fn inspect_agrees_with_cuobjdump_res_usage() {
    let Some(fx) = fx() else { return };
    let mut checked = 0;
    for a in &fx.artifacts {
        let oracle = fixtures::res_usage_images(&a.path).unwrap();
        let v = inspect_json(&a.path);
        let ours: Vec<&Value> = images(&v).filter(|i| i["kind"] == "elf").collect();
        // cuobjdump lists the ELF images in file order but skips some (an executable's
        // `__nv_relfatbin`), so match in order, allowing ours to have extra images.
        let mut next = 0;
        for ru in &oracle {
            let mut why = Vec::new();
            let found = ours[next..]
                .iter()
                .position(|img| match same_numbers(img, ru) {
                    Ok(()) => true,
                    Err(e) => {
                        why.push(format!("{}: {e}", img["location"]));
                        false
                    }
                });
            let Some(k) = found else {
                panic!(
                    "{}: cuobjdump image {} (sm_{}) has no match in inspect:\n{}",
                    a.name,
                    ru.image,
                    ru.arch,
                    why.join("\n")
                );
            };
            next += k + 1;
            checked += ru.functions.len();
        }
        // A compressed entry is reported as compressed.
        let compressed = oracle.iter().filter(|i| i.compressed).count();
        let ours_compressed = ours.iter().filter(|i| i["compression"] != "none").count();
        assert!(
            ours_compressed >= compressed,
            "{}: cuobjdump sees {compressed} compressed ELF images, inspect {ours_compressed}",
            a.name
        );
    }
    assert!(checked >= 100, "only {checked} functions compared");
}

#[test]
fn inspect_shows_spills_launch_bounds_and_ptx() {
    let Some(fx) = fx() else { return };
    let spill = inspect_json(&fx.get("spill_sm89_r24.cubin").path);
    let spills: u64 = functions(&spill)
        .map(|f| f["spill_instructions"].as_u64().unwrap())
        .sum();
    let sass =
        fixtures::run_tool("nvdisasm", &["-c"], &fx.get("spill_sm89_r24.cubin").path).unwrap();
    let annotated = sass.matches("SpillRefill").count() as u64;
    assert!(annotated > 0, "the spill fixture has no spills");
    assert_eq!(
        spills, annotated,
        "spill instructions vs nvdisasm's SpillRefill marks"
    );

    // math.cu has __launch_bounds__(256, 4) and __launch_bounds__(128) kernels.
    let math = inspect_json(&fx.get("math_sm75.cubin").path);
    let bounded: BTreeSet<u64> = functions(&math)
        .filter_map(|f| f["max_threads"].as_array())
        .map(|d| d.iter().map(|x| x.as_u64().unwrap().max(1)).product())
        .collect();
    assert!(
        bounded.contains(&256) && bounded.contains(&128),
        "{bounded:?}"
    );
    for f in functions(&math).filter(|f| f["is_kernel"] == true) {
        let occ = &f["occupancy"];
        assert!(occ["blocks_per_sm"].as_u64().unwrap() > 0, "{f}");
        if f["max_threads"].is_array() {
            assert_eq!(occ["block_from"], "launch bounds");
        }
    }

    // A fatbin with PTX: the entries are listed, and the text form names the compression.
    let size = &fx.get("memory_size.fatbin").path;
    let v = inspect_json(size);
    let ptx: Vec<&Value> = images(&v).filter(|i| i["kind"] == "ptx").collect();
    assert_eq!(ptx.len(), 1);
    assert_eq!(ptx[0]["compression"], "zstd");
    let entries: BTreeSet<&str> = ptx[0]["ptx_entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let kernels: BTreeSet<&str> = fx
        .get("memory_size.fatbin")
        .kernels
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(entries, kernels);
    let out = orion(&["inspect".as_ref(), size.as_os_str()]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    assert!(t.contains("PTX compute_80") && t.contains("zstd"), "{t}");
}

// ---------------------------------------------------------------------------------------------
// Edits: registers and shared memory, checked by the toolkit and a link
// ---------------------------------------------------------------------------------------------

fn nvcc() -> PathBuf {
    fixtures::tool("nvcc")
}

#[test]
fn edited_object_is_accepted_and_links() {
    let Some(fx) = fx() else { return };
    let obj = &fx.get("calls_all.o").path;
    let before = fixtures::res_usage(obj).unwrap();
    // Every arch of calls_all.o: one kernel with shared memory, one without (its section is
    // created).
    let kernel_with = before
        .iter()
        .find(|r| r.shared > 0 && r.arch < 90)
        .map(|r| r.function.clone());
    let kernel_without = before
        .iter()
        .find(|r| {
            before
                .iter()
                .filter(|o| o.function == r.function)
                .all(|o| o.shared == 0)
        })
        .map(|r| r.function.clone())
        .expect("a kernel without shared memory");
    let mut targets = vec![kernel_without];
    targets.extend(kernel_with);
    let dir = scratch("edit");
    let edited = dir.path().join("calls_edited.o");
    let mut args: Vec<String> = vec!["rewrite".into()];
    let new_regs = |k: &str| {
        before
            .iter()
            .filter(|r| r.function == k)
            .map(|r| r.reg)
            .max()
            .unwrap()
            + 16
    };
    const SHARED: u32 = 12 * 1024;
    for k in &targets {
        args.push(format!("--set-regs={k}={}", new_regs(k)));
        args.push(format!("--set-shared={k}={SHARED}"));
    }
    args.extend([
        obj.display().to_string(),
        "-o".into(),
        edited.display().to_string(),
    ]);
    let out = orion(&args.iter().map(|s| s.as_ref()).collect::<Vec<_>>());
    assert!(out.status.success(), "rewrite: {}", text(&out.stderr));
    // A section is created only where ptxas's layout of it is known: not beside sm_100+'s
    // copy of the code, where the kernel keeps its shared memory (none), one line each.
    let created = |k: &str, arch: u32| arch < 100 || k != targets[0];
    let shared_of = |k: &str, arch: u32| if created(k, arch) { SHARED } else { 0 };
    let left = text(&out.stderr)
        .lines()
        .filter(|l| l.contains(&targets[0]) && l.contains("shared memory left alone"))
        .count();
    assert_eq!(left, 2, "sm_100 and sm_120: {}", text(&out.stderr));

    // cuobjdump reports the new numbers for the edited kernels in every image, and the old
    // ones for everything else.
    let after = fixtures::res_usage(&edited).unwrap();
    assert_eq!(after.len(), before.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!((&b.function, b.arch), (&a.function, a.arch));
        if targets.contains(&b.function) {
            assert_eq!(a.reg, new_regs(&b.function), "{} sm_{}", a.function, a.arch);
            let want = shared_of(&a.function, a.arch);
            assert_eq!(a.shared, want, "{} sm_{}", a.function, a.arch);
            assert_eq!(a.stack, b.stack);
        } else {
            assert_eq!(a, b);
        }
    }
    // Our own reading agrees.
    let v = inspect_json(&edited);
    for img in images(&v) {
        // The PTX image (`compute_120`) has no functions to look at.
        let sm = img["arch"].as_str().and_then(|a| a.strip_prefix("sm_"));
        let Some(arch) = sm.and_then(|a| a.parse::<u32>().ok()) else {
            continue;
        };
        let fs = img["functions"].as_array().into_iter().flatten();
        for f in fs.filter(|f| targets.iter().any(|t| f["name"] == t.as_str())) {
            let want = shared_of(f["name"].as_str().unwrap(), arch);
            assert_eq!(f["static_shared"].as_u64(), Some(u64::from(want)), "{f}");
        }
    }
    // nvdisasm accepts every edited cubin and shows the new register count where the
    // section carries it (sm_75-89).
    let cubins = dir.path().join("cubins");
    std::fs::create_dir_all(&cubins).unwrap();
    let extracted = fixtures::extract_elfs(&edited, &cubins).unwrap();
    assert_eq!(extracted.len(), 7, "one cubin per arch");
    for c in &extracted {
        fixtures::nvdisasm_ok(c).unwrap_or_else(|e| panic!("{}: {e}", c.display()));
    }

    // The edited object links into an executable, which carries the edited kernels.
    let main = dir.path().join("stub_main.cu");
    std::fs::write(&main, "int main() { return 0; }\n").unwrap();
    let app = dir.path().join("app_edited");
    let link = Command::new(nvcc())
        .arg(&main)
        .arg(&edited)
        .arg("-o")
        .arg(&app)
        .output()
        .unwrap();
    assert!(link.status.success(), "link: {}", text(&link.stderr));
    let linked = fixtures::res_usage(&app).unwrap();
    for k in &targets {
        let rows: Vec<_> = linked.iter().filter(|r| &r.function == k).collect();
        assert_eq!(rows.len(), 7, "{k} in every arch of the executable");
        assert!(
            rows.iter()
                .all(|r| r.reg == new_regs(k) && r.shared == shared_of(k, r.arch))
        );
    }
    let sass = fixtures::cuobjdump(&["-sass"], &app).unwrap();
    for k in &targets {
        assert!(
            sass.matches(&format!("Function : {k}")).count() == 7,
            "cuobjdump -sass of the executable shows {k} for every arch"
        );
    }
}

#[test]
fn rewrite_refuses_unknown_kernel_and_bad_usage() {
    let Some(fx) = fx() else { return };
    let dir = scratch("refuse");
    let out_path = dir.path().join("x.o");
    let obj = &fx.get("calls_all.o").path;
    let out = orion(&[
        "rewrite".as_ref(),
        "--set-regs=_Z9no_such_kv=32".as_ref(),
        obj.as_os_str(),
        "-o".as_ref(),
        out_path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no cubin has kernel _Z9no_such_kv"), "{err}");
    assert!(!out_path.exists());
    // Neither --identity nor an edit: a usage error from clap, exit 2.
    let out = orion(&[
        "rewrite".as_ref(),
        obj.as_os_str(),
        "-o".as_ref(),
        out_path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--spill-to-shared`, `rewrite`'s flag before the rewrite had one spelling (issue 50), is still
/// accepted as `--spill2smem`: the same answer for an input that does not exist (the file's
/// error, not clap's), and `rewrite --help` lists it as the alias. Needs no toolkit.
#[test]
fn the_spill_flags_old_name_is_an_alias_of_spill2smem() {
    let dir = scratch("alias");
    let missing = dir.path().join("missing.o");
    let out_path = dir.path().join("out.o");
    let run = |flag: &str| {
        let out = orion(&[
            "rewrite".as_ref(),
            flag.as_ref(),
            "all".as_ref(),
            missing.as_os_str(),
            "-o".as_ref(),
            out_path.as_os_str(),
        ]);
        (out.status.code(), text(&out.stderr))
    };
    let new = run("--spill2smem");
    assert_eq!(new.0, Some(1), "{}", new.1);
    assert!(new.1.contains("missing.o"), "{}", new.1);
    assert_eq!(run("--spill-to-shared"), new);
    // A name never accepted is clap's usage error.
    assert_eq!(run("--spill-to-smem").0, Some(2));
    let help = orion(&["rewrite".as_ref(), "--help".as_ref()]);
    let help = text(&help.stdout);
    assert!(help.contains("--spill2smem <KERNEL>"), "{help}");
    assert!(help.contains("[alias: --spill-to-shared]"), "{help}");
}

// ---------------------------------------------------------------------------------------------
// Bad input: one line naming the file, never a panic
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn check_bad(path: &Path, what: &str) {
    for cmd in [&["inspect"][..], &["inspect", "--json"][..]] {
        let mut args: Vec<&std::ffi::OsStr> = cmd.iter().map(|s| s.as_ref()).collect();
        args.push(path.as_os_str());
        let out = orion(&args);
        let err = text(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)) && !err.contains("panicked"),
            "{what}: exit {:?}: {err}",
            out.status.code()
        );
        if out.status.code() == Some(1) {
            let prefix = format!("nvcc-orion: error: {}", path.display());
            assert!(
                !err.is_empty() && err.lines().all(|l| l.starts_with(&prefix)),
                "{what}: every error line must name the file: {err}"
            );
        } else {
            assert!(err.is_empty(), "{what}: {err}");
        }
    }
}

#[test]
fn bad_input_gives_one_line_errors_never_panics() {
    let Some(fx) = fx() else { return };
    let dir = scratch("bad");
    let empty = dir.path().join("empty.o");
    std::fs::write(&empty, b"").unwrap();
    check_bad(&empty, "zero-length");
    let out = orion(&["inspect".as_ref(), empty.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).lines().count(), 1);
    let missing = dir.path().join("missing.o");
    check_bad(&missing, "missing file");

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for name in [
        "math_sm75.cubin",
        "memory_size.fatbin",
        "memory_speed.fatbin",
        "rdc_lib.o",
        "librdc.a",
    ] {
        let data = std::fs::read(&fx.get(name).path).unwrap();
        let bad = dir.path().join(format!("bad_{name}"));
        // Truncations at every 1/16 of the file and inside the first headers.
        let mut cuts: Vec<usize> = (1..16).map(|i| data.len() * i / 16).collect();
        cuts.extend([1, 4, 16, 63, 64, 65, 100, 200]);
        for cut in cuts {
            std::fs::write(&bad, &data[..cut.min(data.len() - 1)]).unwrap();
            check_bad(&bad, &format!("{name} truncated to {cut}"));
        }
        // Bit flips: half in the first 4 KB (headers), half anywhere.
        for i in 0..24 {
            let mut d = data.clone();
            let span = if i % 2 == 0 {
                d.len().min(4096)
            } else {
                d.len()
            };
            let pos = (rng.next() as usize) % span;
            d[pos] ^= 1 << (rng.next() % 8);
            std::fs::write(&bad, &d).unwrap();
            check_bad(&bad, &format!("{name} with a bit flipped at {pos:#x}"));
        }
    }
}

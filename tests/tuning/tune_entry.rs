//! Compiling only what varies (issue 24), on real ptxas output:
//! - a kernel built with `ptxas --entry` (alone or with some other entries, the others' budgets
//!   unset) has the same code and attributes as in a whole-module build at the same budget
//!   (whole-program code: `ptxas -c` ignores `--entry`, so relocatable variants stay whole),
//!   except in a module that uses functions as values, which is therefore built whole;
//! - on the build benchmark (`bench/build/*.cu`, sm_80 and sm_90) nvcc-orion makes the choices
//!   today's code made (`bench/build/choices.json`, recorded with the code before this
//!   change), and every kernel it ships equals the kernel of a whole-module ptxas run at the
//!   chosen budgets made here;
//! - budgets whose best case cannot clear the margin are not built: no variant cubin holds a
//!   kernel whose budgets were all pruned, and `explain` lists them as "not built", each with
//!   its bound and what decided.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::audit;
use nvcc_orion::cubin::Cubin;
use nvcc_orion::cubin::eiattr::Attr;
use nvcc_orion::tune::function_pointers;
use nvcc_orion::tune::ptx::{self, Budget};
use serde_json::Value;

/// The real nvcc, or `None` after a skip line (a failure with `CI` set).
fn nvcc() -> Option<PathBuf> {
    common::nvcc_or_skip("tune_entry")
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tune-entry-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `nvcc -ptx -O3 -arch=sm_<sm>` of `src`.
fn ptx_of(nvcc: &Path, src: &Path, sm: u32, out: &Path) -> String {
    let mut cmd = Command::new(nvcc);
    cmd.args(["-ptx", "-O3", &format!("-arch=sm_{sm}")]);
    run(cmd.arg(src).arg("-o").arg(out));
    std::fs::read_to_string(out).unwrap()
}

/// ptxas on `ptx` with `budgets` (`.maxnreg`), `--entry` for each of `only` (none: the whole
/// module); files `<stem>.ptx` and `<stem>.cubin`.
fn ptxas(
    nvcc: &Path,
    stem: &Path,
    ptx_text: &str,
    sm: u32,
    budgets: &BTreeMap<String, Budget>,
    only: &[&str],
) -> Cubin {
    ptxas_with(&["-O3"], nvcc, stem, ptx_text, sm, budgets, only)
}

/// [`ptxas`] with `options` after `-arch=sm_<sm> -m64` instead of `-O3`.
fn ptxas_with(
    options: &[&str],
    nvcc: &Path,
    stem: &Path,
    ptx_text: &str,
    sm: u32,
    budgets: &BTreeMap<String, Budget>,
    only: &[&str],
) -> Cubin {
    let p = stem.with_extension("ptx");
    let out = stem.with_extension("cubin");
    std::fs::write(&p, ptx::with_budgets(ptx_text, budgets).unwrap()).unwrap();
    let mut cmd = Command::new(common::toolkit_tool(nvcc, "ptxas"));
    cmd.args([&format!("-arch=sm_{sm}"), "-m64"]).args(options);
    for e in only {
        cmd.args(["--entry", e]);
    }
    run(cmd.arg(&p).arg("-o").arg(&out));
    Cubin::parse(&std::fs::read(&out).unwrap()).unwrap()
}

/// What a kernel is in a cubin: the code of the kernel and of its own sub-functions
/// (`$kernel$...`), and its attributes: the records of `.nv.info.<kernel>` and the records of
/// the global `.nv.info` that name it or a sub-function, with symbol indices (which depend on
/// what else the module holds) replaced by symbol names.
type Parts = (Vec<(String, Vec<u8>)>, Vec<(Attr, Option<String>, Vec<u8>)>);

fn kernel_parts(c: &Cubin, kernel: &str) -> Parts {
    let prefix = format!("${kernel}$");
    let ours = |n: &str| n == kernel || n.starts_with(&prefix);
    let sections = &c.elf().sections;
    let code: Vec<(String, Vec<u8>)> = c
        .functions()
        .into_iter()
        .filter(|f| ours(&f.name))
        .map(|f| {
            let d = &sections[f.text_section].data;
            let (s, e) = (
                f.text_offset as usize,
                (f.text_offset + f.text_size) as usize,
            );
            (f.name.clone(), d[s..e].to_vec())
        })
        .collect();
    let sym_name = |i: u32| c.symbols().get(i as usize).map(|s| s.name.clone());
    let mut attrs = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        let own = s.name == format!(".nv.info.{kernel}");
        if !own && s.name != ".nv.info" {
            continue;
        }
        for r in c.records(i) {
            // SVAL records whose first word is a symbol index: the per-function ones of the
            // global section, and the parameter bank of the kernel's own.
            let first = (r.format == 4 && r.data.len() >= 4).then(|| r.word(0).unwrap());
            let named = first.and_then(sym_name);
            if own {
                if r.attr == Attr::ParamCbank {
                    attrs.push((r.attr, named, r.data[4..].to_vec()));
                } else {
                    attrs.push((r.attr, None, r.data.clone()));
                }
            } else if named.as_deref().is_some_and(ours) {
                attrs.push((r.attr, named, r.data[4..].to_vec()));
            }
        }
    }
    assert!(!code.is_empty(), "{kernel}: no code");
    (code, attrs)
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// docs/DESIGN.md §Per-kernel budgets, extended to `--entry`: a kernel's SASS and attributes do
/// not depend on the other kernels' limits, nor on which other entries are compiled. Every
/// kernel of tests/kernels/tune/pressure.cu (device calls, local arrays, static and dynamic
/// shared memory, launch bounds, `__maxnreg__`) at a budget of its own, in a whole-module build
/// against a build of some entries only (each alone, or half the module together). Relocatable
/// code (`ptxas -c`) compiles every entry whatever `--entry` says: the tuner does not use it
/// there.
#[test]
fn entry_builds_equal_whole_module_builds() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("exact");
    let src = source("tests/kernels/tune/pressure.cu");
    let text = ptx_of(&nvcc, &src, 90, &dir.path().join("source.ptx"));
    let names: Vec<String> = ptx::entries(&text)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.len() >= 8, "{names:?}");
    // A different budget for each kernel (some below what ptxas picks, so they spill).
    let all: BTreeMap<String, Budget> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), Budget::regs([32, 40, 56, 72][i % 4])))
        .collect();
    let module = ptxas(&nvcc, &dir.path().join("module"), &text, 90, &all, &[]);
    let mut compared = 0;
    // Each odd kernel alone (only its own budget in the PTX); the even ones together.
    let mut groups: Vec<Vec<&str>> = names
        .iter()
        .skip(1)
        .step_by(2)
        .map(|n| vec![n.as_str()])
        .collect();
    groups.push(names.iter().step_by(2).map(String::as_str).collect());
    for (g, only) in groups.iter().enumerate() {
        let budgets: BTreeMap<String, Budget> =
            only.iter().map(|n| (n.to_string(), all[*n])).collect();
        let part = ptxas(
            &nvcc,
            &dir.path().join(format!("g{g}")),
            &text,
            90,
            &budgets,
            only,
        );
        assert_eq!(
            part.kernels().len(),
            only.len(),
            "--entry {only:?} built other kernels too"
        );
        for k in only {
            assert_eq!(
                kernel_parts(&part, k),
                kernel_parts(&module, k),
                "{k}: --entry build differs from the whole-module build"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, names.len());
}

/// The exception (docs/DESIGN.md §Per-kernel budgets): in a module that uses functions as
/// values, ptxas compiles a called function by which entries it compiles. Generated program
/// 10439 (the long run's finding, issue 30): `k4` calls `f0`, which `tbl0` also holds; built
/// with `--entry` for `k4` and `k1`, `k4` is not what the whole module makes at the same budgets,
/// so the tuner builds such modules whole (`tune::function_pointers`, checked end to end by
/// tests/oracles/generated.rs on this seed).
#[test]
fn entry_builds_differ_where_functions_are_values() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("values");
    let src = dir.path().join("a.cu");
    let program = nvcc_orion_gen::generate(10439);
    let (_, text) = nvcc_orion_gen::print::sources(&program)
        .into_iter()
        .find(|(n, _)| *n == "a.cu")
        .unwrap();
    assert!(
        text.contains("tbl0[2])(float, unsigned) = {f1, f0}"),
        "{text}"
    );
    std::fs::write(&src, text).unwrap();
    let text = ptx_of(&nvcc, &src, 90, &dir.path().join("source.ptx"));
    let (k4, k1) = ("_Z2k4PfPKfj", "_Z2k1PfPKfj");
    let budgets: BTreeMap<String, Budget> = [(k4, 56), (k1, 64)]
        .into_iter()
        .map(|(k, r)| (k.to_string(), Budget::regs(r)))
        .collect();
    let module = ptxas(&nvcc, &dir.path().join("module"), &text, 90, &budgets, &[]);
    let part = ptxas(
        &nvcc,
        &dir.path().join("part"),
        &text,
        90,
        &budgets,
        &[k4, k1],
    );
    let frame = |c: &Cubin| c.function_info(k4).unwrap().frame_size;
    assert_eq!((frame(&module), frame(&part)), (Some(80), Some(16)));
    assert_ne!(kernel_parts(&part, k4), kernel_parts(&module, k4));
}

/// Which modules are built whole, on programs not written for it: across a range of generated
/// programs (those without `-rdc`, which never uses `--entry`), nvcc's PTX uses a function as
/// a value exactly where the program has a function-pointer table, the generator's only source
/// of function values. This is also why the long run's results on programs without tables
/// stand across the fix (bench/results/generator.md). `TUNE_ENTRY_SEEDS=FROM..TO` checks
/// another range (the long run's, for its record), on two threads.
#[test]
fn function_values_are_found_exactly_in_programs_with_tables() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("tables");
    let seeds: Vec<u64> = match std::env::var("TUNE_ENTRY_SEEDS") {
        Ok(r) => {
            let (from, to) = r.split_once("..").expect("TUNE_ENTRY_SEEDS=FROM..TO");
            (from.parse().unwrap()..to.parse().unwrap()).collect()
        }
        Err(_) => (10_000..10_032).collect(),
    };
    // (seed, has tables) for every program without `-rdc`, checked.
    let check = |seed: u64| -> Option<bool> {
        let program = nvcc_orion_gen::generate(seed);
        if program.rdc {
            return None;
        }
        let tables =
            nvcc_orion_gen::features::features(&program).contains("function-pointer tables");
        let (_, text) = nvcc_orion_gen::print::sources(&program)
            .into_iter()
            .find(|(n, _)| *n == "a.cu")
            .unwrap();
        let src = dir.path().join(format!("s{seed}.cu"));
        std::fs::write(&src, text).unwrap();
        let ptx_text = ptx_of(&nvcc, &src, 90, &src.with_extension("ptx"));
        assert_eq!(
            function_pointers::uses_functions_as_values(&ptx_text),
            tables,
            "seed {seed}"
        );
        Some(tables)
    };
    let found: Vec<bool> = std::thread::scope(|s| {
        let halves: Vec<_> = seeds
            .chunks(seeds.len().div_ceil(2).max(1))
            .map(|half| {
                s.spawn(|| {
                    half.iter()
                        .filter_map(|&seed| check(seed))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let with = found.iter().filter(|t| **t).count();
    let without = found.len() - with;
    eprintln!("{with} programs with tables, {without} without, all found exactly");
    assert!(
        with >= 5 && without >= 5,
        "{with} with tables, {without} without"
    );
}

/// Final assembly without a whole-module run: the baseline cubin with the chosen kernels
/// spliced in from `--entry` builds is byte-identical to a whole-module ptxas run at the
/// chosen budgets (the benchmark's sm_90 choices for chem.cu, linalg.cu, particles.cu and
/// stencil.cu, which tune at least three kernels each; sm_80 keeps ptxas's budgets), and a
/// budget for every kernel of pressure.cu: device calls, local arrays, shared memory, and
/// frame records of other lengths than the base's).
#[test]
fn splice_equals_whole_module_run() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("splice");
    let expected: BTreeMap<String, BTreeMap<String, BTreeMap<String, Option<u32>>>> =
        serde_json::from_str(&std::fs::read_to_string(source("bench/build/choices.json")).unwrap())
            .unwrap();
    let cases = [
        ("chem", source("bench/build/chem.cu"), 90),
        ("linalg", source("bench/build/linalg.cu"), 90),
        ("particles", source("bench/build/particles.cu"), 90),
        ("stencil", source("bench/build/stencil.cu"), 90),
        ("pressure", source("tests/kernels/tune/pressure.cu"), 90),
    ];
    for (name, src, sm) in cases {
        let stem = dir.path().join(format!("{name}{sm}"));
        let text = ptx_of(&nvcc, &src, sm, &stem.with_extension("ptx"));
        let budgets: BTreeMap<String, Budget> = if name != "pressure" {
            expected[name][&format!("sm_{sm}")]
                .iter()
                .filter_map(|(k, b)| Some((k.clone(), Budget::regs((*b)?))))
                .collect()
        } else {
            ptx::entries(&text)
                .unwrap()
                .into_iter()
                .enumerate()
                .map(|(i, e)| (e.name, Budget::regs([32, 40, 56][i % 3])))
                .collect()
        };
        assert!(budgets.len() >= 3, "{name}: {budgets:?}");
        let base = ptxas(
            &nvcc,
            &dir.path().join(format!("{name}{sm}-base")),
            &text,
            sm,
            &BTreeMap::new(),
            &[],
        );
        let donors: Vec<(String, Cubin)> = budgets
            .iter()
            .map(|(k, b)| {
                let one = BTreeMap::from([(k.clone(), *b)]);
                let stem = dir.path().join(format!("{name}{sm}-{}", donors_name(k)));
                (
                    k.clone(),
                    ptxas(&nvcc, &stem, &text, sm, &one, &[k.as_str()]),
                )
            })
            .collect();
        let parts: Vec<(&str, &Cubin)> = donors.iter().map(|(k, c)| (k.as_str(), c)).collect();
        // pressure.cu's spilling kernels get frame programs of other lengths (issue 47): the
        // splice re-lays `.debug_frame` out around them.
        let spliced = nvcc_orion::cubin::splice::splice(&base, &parts)
            .unwrap_or_else(|e| panic!("{name} sm_{sm}: {e}"));
        let full_stem = dir.path().join(format!("{name}{sm}-full"));
        let whole = ptxas(&nvcc, &full_stem, &text, sm, &budgets, &[]);
        if name == "pressure" {
            // The case the splice once refused: frame records of other lengths.
            assert_ne!(debug_frame(&base).len(), debug_frame(&whole).len());
        }
        let full = std::fs::read(full_stem.with_extension("cubin")).unwrap();
        if spliced != full {
            let kept = dir.keep();
            let at = kept.join(format!("{name}{sm}-spliced.cubin"));
            std::fs::write(&at, &spliced).unwrap();
            panic!(
                "{name} sm_{sm}: the splice {} differs from a whole-module run",
                at.display()
            );
        }
    }
}

/// Issue 47: a plain variant round is handed PTX that holds only the entries it builds (the
/// module's header, globals and functions kept), so ptxas does not parse the other kernels;
/// and each kernel it builds has the code and attributes of a whole-module ptxas run of the
/// module nvcc makes, at the budgets the round gave (a reference this tool did not make).
/// Read from a toolkit whose ptxas keeps every run's input and output: bench/build/chem.cu on
/// sm_90, in the default mode, which retunes three of its kernels. Before, every round's
/// input held all of the module's entries.
#[test]
fn a_round_is_given_only_the_entries_it_builds() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("trim");
    let d = dir.path();
    let log = d.join("runs");
    std::fs::create_dir_all(&log).unwrap();
    let script = format!(
        "#!/bin/sh\nrun=$(mktemp -d '{log}/run.XXXXXX')\necho \"$@\" > \"$run/args\"\n\
         for a in \"$@\"; do case \"$a\" in *.ptx) cp \"$a\" \"$run/in.ptx\";; esac; done\n\
         '{ptxas}' \"$@\"\nrc=$?\nprev=\n\
         for a in \"$@\"; do [ \"$prev\" = -o ] && cp \"$a\" \"$run/out.cubin\"; prev=\"$a\"; done\n\
         exit $rc\n",
        log = log.display(),
        ptxas = common::toolkit_tool(&nvcc, "ptxas").display()
    );
    let tk = super::cache_integrity::toolkit_with_ptxas(&nvcc, &d.join("tk"), &script);
    let src = source("bench/build/chem.cu");
    let mut cmd = common::orion();
    cmd.env("NVCC_ORION_NVCC", &tk)
        .env("NVCC_ORION_CACHE", "off")
        .args(["-c", "-O3", "-arch=sm_90"])
        .arg(&src)
        .arg("-o")
        .arg(d.join("chem.o"));
    run(&mut cmd);
    let module = ptx_of(&nvcc, &src, 90, &d.join("module.ptx"));
    let all = ptx::entries(&module).unwrap().len();
    let mut rounds = 0;
    for e in std::fs::read_dir(&log).unwrap() {
        let run = e.unwrap().path();
        let args = std::fs::read_to_string(run.join("args")).unwrap();
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut only: Vec<&str> = words
            .windows(2)
            .filter(|w| w[0] == "--entry")
            .map(|w| w[1])
            .collect();
        if only.is_empty() {
            continue;
        }
        only.sort();
        let text = std::fs::read_to_string(run.join("in.ptx")).unwrap();
        let given = ptx::entries(&text).unwrap();
        if text.contains("enable_smem_spilling") {
            // A pragma round stays whole (ptxas refuses the pragma by what the module holds).
            assert_eq!(given.len(), all, "{args}");
            continue;
        }
        let mut names: Vec<&str> = given.iter().map(|g| g.name.as_str()).collect();
        names.sort();
        assert_eq!(names, only, "a round's PTX holds other entries: {args}");
        assert!(given.len() < all, "{args}");
        let budgets: BTreeMap<String, Budget> = given
            .iter()
            .filter_map(|g| Some((g.name.clone(), Budget::regs(g.maxnreg?))))
            .collect();
        assert_eq!(budgets.len(), only.len(), "{args}");
        let stem = run.join("whole");
        let whole = ptxas_with(&[], &nvcc, &stem, &module, 90, &budgets, &[]);
        let round = Cubin::parse(&std::fs::read(run.join("out.cubin")).unwrap()).unwrap();
        for k in &only {
            assert!(
                kernel_parts(&round, k) == kernel_parts(&whole, k),
                "{k}: the round's code or attributes differ from a whole-module run ({args})"
            );
        }
        rounds += 1;
    }
    assert!(rounds >= 1, "no plain --entry round was run");
}

/// Issue 47: kernels tuned below ptxas's budget whose `.debug_frame` records change length
/// (tests/kernels/assembly/frames.cu: values live across calls to a `__noinline__` helper,
/// whose frame program saves other registers at 32) are spliced into ptxas's cubin, with no
/// whole-module ptxas run at the end, and what ships on sm_80 and sm_90 is byte for byte
/// the cubin of a whole-module ptxas run at the chosen budgets. (Before, the splice refused
/// frame records of another length and the report said "whole-module".)
#[test]
fn frames_of_other_lengths_are_spliced_exactly() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("frames");
    let src = source("tests/kernels/assembly/frames.cu");
    let report = dir.path().join("report.jsonl");
    let obj = dir.path().join("frames.o");
    let mut cmd = common::orion();
    cmd.env("NVCC_ORION_NVCC", &nvcc)
        .env("NVCC_ORION_CACHE", "off")
        .env("NVCC_ORION_REPORT", &report)
        // The model keeps ptxas's budgets here; a forced budget is a retuned kernel all the
        // same (chosen, built with `--entry`, spliced, checked).
        .args(["--orion-force=budget:32", "-c", "-O3"])
        .args(["-gencode", "arch=compute_80,code=sm_80"])
        .args(["-gencode", "arch=compute_90,code=sm_90"])
        .arg(&src)
        .arg("-o")
        .arg(&obj);
    run(&mut cmd);
    let lines = report_lines(&report);
    let assemblies: Vec<&str> = lines
        .iter()
        .map(|r| r["assembly"].as_str().unwrap())
        .collect();
    assert!(
        assemblies.iter().all(|a| *a == "spliced"),
        "a whole-module run or another assembly: {assemblies:?}"
    );
    let got = choices(&report);
    let cubins = common::fixtures::extract_elfs(&obj, &dir.path().join("elf")).unwrap();
    assert_eq!(cubins.len(), 2, "{cubins:?}");
    for path in cubins {
        let shipped_bytes = std::fs::read(&path).unwrap();
        let shipped = Cubin::parse(&shipped_bytes).unwrap();
        let sm = shipped.arch();
        let budgets: BTreeMap<String, Budget> = got[&format!("sm_{sm}")]
            .iter()
            .filter_map(|(k, b)| Some((k.clone(), Budget::regs((*b)?))))
            .collect();
        assert_eq!(
            budgets.len(),
            3,
            "sm_{sm}: the three keep_live kernels at 32: {budgets:?}"
        );
        let text = ptx_of(&nvcc, &src, sm, &dir.path().join(format!("sm{sm}.ptx")));
        let stem = |n: &str| dir.path().join(format!("{n}{sm}"));
        let base = ptxas(&nvcc, &stem("base"), &text, sm, &BTreeMap::new(), &[]);
        // As `nvcc -c -O3` runs ptxas (`nvcc -dryrun`), so the cubins' notes of the ptxas
        // command line agree too.
        let full = ptxas_with(&[], &nvcc, &stem("full"), &text, sm, &budgets, &[]);
        // The case at hand: the chosen budgets' frame records have other lengths.
        assert_ne!(
            debug_frame(&base).len(),
            debug_frame(&full).len(),
            "sm_{sm}"
        );
        assert_eq!(
            debug_frame(&shipped),
            debug_frame(&full),
            "sm_{sm}: .debug_frame"
        );
        let full_bytes = std::fs::read(stem("full").with_extension("cubin")).unwrap();
        if shipped_bytes != full_bytes {
            let kept = dir.keep();
            panic!(
                "sm_{sm}: {} differs from a whole-module run ({})",
                path.display(),
                kept.display()
            );
        }
        frames_pass_the_check(&nvcc, &dir, &text, sm, &budgets, &shipped_bytes);
    }
}

/// The assembly check, which reads `.debug_frame` on its own (gimli's encoding, the
/// `object` crate's ELF), passes `shipped`: each retuned kernel's frames are those of its
/// `--entry` build at its budget, every other function's those of ptxas's module.
fn frames_pass_the_check(
    nvcc: &Path,
    dir: &tempfile::TempDir,
    text: &str,
    sm: u32,
    budgets: &BTreeMap<String, Budget>,
    shipped: &[u8],
) {
    let build = |name: &str, budgets: &BTreeMap<String, Budget>, only: &[&str]| {
        let stem = dir.path().join(format!("{name}{sm}"));
        ptxas_with(&[], nvcc, &stem, text, sm, budgets, only);
        std::fs::read(stem.with_extension("cubin")).unwrap()
    };
    let base = build("base-plain", &BTreeMap::new(), &[]);
    let donors: Vec<(String, Vec<u8>)> = budgets
        .iter()
        .map(|(k, b)| {
            let one = BTreeMap::from([(k.clone(), *b)]);
            let name = format!("donor-{}-", donors_name(k));
            (k.clone(), build(&name, &one, &[k.as_str()]))
        })
        .collect();
    let job = audit::Job {
        proved: Vec::new(),
        shipped,
        baseline: &base,
        module: &base,
        origins: donors
            .iter()
            .map(|(k, cubin)| audit::Origin {
                shipped: k,
                name: k,
                cubin,
            })
            .collect(),
    };
    let tools = audit::Tools::in_dir(nvcc.parent().unwrap());
    if let Err(e) = audit::check(&tools, &job) {
        panic!("sm_{sm}: the assembly check rejects the splice: {e}");
    }
}

/// The bytes of a cubin's `.debug_frame`.
fn debug_frame(c: &Cubin) -> &[u8] {
    let s = c.elf().sections.iter().find(|s| s.name == ".debug_frame");
    &s.expect("a .debug_frame").data
}

/// A short file name for a kernel.
fn donors_name(k: &str) -> String {
    format!("{:016x}", common::fnv(k.as_bytes(), 0xcbf2_9ce4_8422_2325))
}

/// (arch, kernel) → chosen budget (`None`: ptxas's own) from a report.
fn choices(report: &Path) -> BTreeMap<String, BTreeMap<String, Option<u32>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Option<u32>>> = BTreeMap::new();
    for l in std::fs::read_to_string(report).unwrap().lines() {
        let r: Value = serde_json::from_str(l).unwrap();
        let b = &r["candidates"][r["chosen"].as_u64().unwrap() as usize]["budget"];
        out.entry(r["arch"].as_str().unwrap().to_string())
            .or_default()
            .insert(
                r["kernel"].as_str().unwrap().to_string(),
                b["regs"].as_u64().map(|n| n as u32),
            );
    }
    out
}

/// The build benchmark: nvcc-orion's builds make today's choices, and every kernel shipped
/// is the kernel of a whole-module ptxas run at the chosen budgets. Each build is a `-fatbin`:
/// the choices and the shipped cubins are the device side's, which an object embeds as they
/// are, and the host side of these files (cudafe++, the host compile at -O3) was a third of
/// each build's CPU time (issue 50, bench/results/suite.md).
#[test]
fn benchmark_objects_match_todays_choices() {
    let Some(nvcc) = nvcc() else { return };
    let expected: BTreeMap<String, BTreeMap<String, BTreeMap<String, Option<u32>>>> =
        serde_json::from_str(&std::fs::read_to_string(source("bench/build/choices.json")).unwrap())
            .unwrap();
    assert_eq!(expected.len(), 5);
    let dir = scratch("bench");
    for (file, want) in &expected {
        let src = source(&format!("bench/build/{file}.cu"));
        let work = dir.path().join(file);
        std::fs::create_dir_all(&work).unwrap();
        let report = work.join("report.jsonl");
        let obj = work.join(format!("{file}.fatbin"));
        let mut cmd = common::orion();
        cmd.env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", "off")
            .env("NVCC_ORION_REPORT", &report)
            .args(["-fatbin", "-O3"])
            .args(["-gencode", "arch=compute_80,code=sm_80"])
            .args(["-gencode", "arch=compute_90,code=sm_90"])
            .arg(&src)
            .arg("-o")
            .arg(&obj);
        run(&mut cmd);
        let got = choices(&report);
        assert_eq!(&got, want, "{file}: choices differ from today's");
        let tuned: usize = got
            .values()
            .flat_map(|k| k.values())
            .filter(|b| b.is_some())
            .count();
        // Each file's dependent-load chains are tuned on sm_90; on sm_80 the model sees them
        // DRAM-bound at ptxas's occupancy and keeps its budget (bench/results/model.md).
        assert!(tuned >= 3, "{file}: only {tuned} kernels tuned");
        let cubins = common::fixtures::extract_elfs(&obj, &work.join("elf")).unwrap();
        assert_eq!(cubins.len(), 2, "{file}: {cubins:?}");
        for path in cubins {
            let shipped = Cubin::parse(&std::fs::read(&path).unwrap()).unwrap();
            let sm = shipped.arch();
            let chosen = &got[&format!("sm_{sm}")];
            let text = ptx_of(&nvcc, &src, sm, &work.join(format!("sm{sm}.ptx")));
            let budgets: BTreeMap<String, Budget> = chosen
                .iter()
                .filter_map(|(k, b)| Some((k.clone(), Budget::regs((*b)?))))
                .collect();
            let reference = ptxas(
                &nvcc,
                &work.join(format!("ref{sm}")),
                &text,
                sm,
                &budgets,
                &[],
            );
            assert_eq!(shipped.kernels().len(), chosen.len(), "{file} sm_{sm}");
            for k in chosen.keys() {
                assert_eq!(
                    kernel_parts(&shipped, k),
                    kernel_parts(&reference, k),
                    "{file} sm_{sm} {k}: shipped kernel differs from a whole-module build at the chosen budgets"
                );
            }
        }
    }
}

/// Budgets whose best case (more warps, no added instructions) cannot clear the margin are not
/// built: the kept variant cubins hold only kernels with a budget left to try, and `explain`
/// lists the others as "not built", each with its bound.
#[test]
fn pruned_kernels_are_never_built() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("pruned");
    let keep = dir.path().join("kept");
    let report = dir.path().join("report.jsonl");
    let mut cmd = common::orion();
    cmd.env("NVCC_ORION_NVCC", &nvcc)
        .env("NVCC_ORION_CACHE", "off")
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_KEEP_CUBINS", &keep)
        .args(["-c", "-O3", "-arch=sm_90"])
        .arg(source("bench/build/particles.cu"))
        .arg("-o")
        .arg(dir.path().join("p.o"));
    run(&mut cmd);
    let recs = report_lines(&report);
    let pruned_only: Vec<&str> = recs
        .iter()
        .filter(|r| r["candidates"].as_array().unwrap().len() == 1)
        .filter(|r| !r["pruned"].as_array().unwrap().is_empty())
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    let built: Vec<&str> = recs
        .iter()
        .filter(|r| r["candidates"].as_array().unwrap().len() > 1)
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    assert!(pruned_only.len() >= 4, "{pruned_only:?}");
    assert!(!built.is_empty());
    for r in &recs {
        for p in r["pruned"].as_array().unwrap() {
            // The bound is below the 5% margin (or not a number: nothing to gain); the
            // budgets the descent left out (`stopped`, `outbid`) are pruned for another reason.
            if matches!(p["limit"].as_str(), Some("stopped" | "outbid")) {
                continue;
            }
            assert!(p["bound_percent"].as_f64().is_none_or(|b| b < 5.0), "{r}");
        }
    }
    let mut variants = 0;
    for e in std::fs::read_dir(&keep).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("baseline") {
            continue;
        }
        variants += 1;
        let c = Cubin::parse(&std::fs::read(&path).unwrap()).unwrap();
        for k in c.kernels() {
            assert!(
                !pruned_only.contains(&k.name.as_str()),
                "{name} holds {}, whose budgets were all pruned",
                k.name
            );
        }
    }
    assert!(variants >= 1);
    // The candidates table says why.
    let out = common::orion()
        .args(["explain"])
        .arg(&report)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with("not built: ") && l.contains("(at best ")),
        "{table}"
    );
}

/// A report's records, one per line, in its order.
fn report_lines(report: &Path) -> Vec<Value> {
    std::fs::read_to_string(report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A report's records by (arch, kernel).
fn records(report: &Path) -> BTreeMap<(String, String), Value> {
    report_lines(report)
        .into_iter()
        .map(|r| {
            let key = (
                r["arch"].as_str().unwrap().to_string(),
                r["kernel"].as_str().unwrap().to_string(),
            );
            (key, r)
        })
        .collect()
}

/// A candidate's predicted gain over ptxas's own code (`base`) in percent, worst case over
/// the block sizes, as the tuner reads it (`None`: it cannot launch where `base` can).
fn gain_over(base: &Value, c: &Value) -> Option<f64> {
    let cycles = |v: &Value| -> Vec<Option<f64>> {
        v["cycles_per_warp"]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::as_f64)
            .collect()
    };
    let mut worst = f64::INFINITY;
    for (b, v) in cycles(base).into_iter().zip(cycles(c)) {
        let g = match (b, v) {
            (None, _) => 0.0,
            (Some(b), Some(v)) if v > 0.0 => 100.0 * (b / v - 1.0),
            _ => return None,
        };
        worst = worst.min(g);
    }
    Some(if worst.is_finite() { worst } else { 0.0 })
}

/// `NVCC_ORION_SEARCH=full` or the default descent (`None`) of `src` for sm_90 (`-c -O3`):
/// the report's records.
fn search(
    nvcc: &Path,
    src: &Path,
    mode: Option<&str>,
    dir: &Path,
) -> BTreeMap<(String, String), Value> {
    let name = mode.unwrap_or("descent");
    let report = dir.join(format!("{name}.jsonl"));
    let mut cmd = common::orion();
    cmd.env("NVCC_ORION_NVCC", nvcc)
        .env("NVCC_ORION_CACHE", "off")
        .env("NVCC_ORION_REPORT", &report)
        .args(["-c", "-O3", "-arch=sm_90"])
        .arg(src)
        .arg("-o")
        .arg(dir.join(format!("{name}.o")));
    if let Some(m) = mode {
        cmd.env("NVCC_ORION_SEARCH", m);
    }
    run(&mut cmd);
    records(&report)
}

/// The default mode's descent (issue 47, docs/DESIGN.md §Budgets at occupancy cliffs) on a
/// file where most kernels are retuned: it builds a subset of the full search's budgets,
/// fewer in all; every budget it leaves out is in the report as `stopped` or `outbid`; the
/// plain budgets it built descend from the highest, each one but the last improving on the
/// best before it once one has beaten ptxas's own code, and the last not improving where the
/// descent stopped (the rule, read back from the predictions); and where the full search's
/// winner was built, both choose the same budget with the same gain.
#[test]
fn descent_builds_fewer_budgets_and_reports_the_rest() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("descent");
    let src = source("bench/build/retuned_huge.cu");
    let full = search(&nvcc, &src, Some("full"), dir.path());
    let descent = search(&nvcc, &src, None, dir.path());
    assert_eq!(
        full.keys().collect::<Vec<_>>(),
        descent.keys().collect::<Vec<_>>()
    );
    let budgets = |r: &Value| -> Vec<Value> {
        r["candidates"].as_array().unwrap()[1..]
            .iter()
            .map(|c| c["budget"].clone())
            .collect()
    };
    let (mut built_full, mut built_descent, mut stopped) = (0, 0, 0);
    for (key, d) in &descent {
        let f = &full[key];
        let (bf, bd) = (budgets(f), budgets(d));
        built_full += bf.len();
        built_descent += bd.len();
        assert!(
            bd.iter().all(|b| bf.contains(b)),
            "{key:?}: {bd:?} not in {bf:?}"
        );
        let left_out: Vec<&Value> = d["pruned"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| matches!(p["limit"].as_str(), Some("stopped" | "outbid")))
            .collect();
        for b in bf.iter().filter(|b| !bd.contains(b)) {
            assert!(
                left_out.iter().any(|p| &p["budget"] == b),
                "{key:?}: {b} neither built nor reported left out: {d}"
            );
        }
        stopped += left_out.iter().filter(|p| p["limit"] == "stopped").count();
        // The rule, read back: once a budget has beaten ptxas's own code (0 %), each plain
        // budget built improves on the best before it, but the last where the descent stopped.
        let cands = d["candidates"].as_array().unwrap();
        let gains: Vec<Option<f64>> = cands[1..]
            .iter()
            .filter(|c| c["budget"]["smem_spill"] == false)
            .map(|c| gain_over(&cands[0], c))
            .collect();
        let mut best = 0.0_f64;
        for (i, g) in gains.iter().enumerate() {
            let improved = g.is_some_and(|g| g > best);
            let last = i + 1 == gains.len();
            assert!(
                improved || last || best <= 0.0,
                "{key:?}: built past a budget that did not improve: {gains:?}"
            );
            if last && left_out.iter().any(|p| p["limit"] == "stopped") {
                assert!(
                    !improved,
                    "{key:?}: stopped after an improvement: {gains:?}"
                );
            }
            best = best.max(g.unwrap_or(best));
        }
        let chosen =
            |r: &Value| r["candidates"][r["chosen"].as_u64().unwrap() as usize]["budget"].clone();
        if f["chosen"] == 0 || bd.contains(&chosen(f)) {
            assert_eq!(chosen(d), chosen(f), "{key:?}");
            assert_eq!(d["gain_percent"], f["gain_percent"], "{key:?}");
        }
    }
    assert!(
        built_descent < built_full && stopped > 0,
        "descent built {built_descent} budgets, the full search {built_full} ({stopped} stopped)"
    );
}

/// The descent's two cases on tests/kernels/tune/descent.cu (sm_90): `hop_sum<54, 12>`'s
/// nearest cliff (64 registers) is predicted slower than ptxas's own code and the next (40)
/// much faster, so a lower budget after one that did not improve wins: it is built, since
/// nothing had beaten ptxas's code yet, and chosen as the full search chooses it.
/// `chase_acc<80, 16>`'s 80 registers beat ptxas's code and 48 does not improve on 80: the
/// descent stops there, and 32 and the pragma's candidate at 32 are reported `stopped`, not
/// built (the full search builds them, and still chooses 80).
#[test]
fn descent_goes_on_until_a_budget_beats_ptxas_then_stops() {
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("descent-cases");
    let src = source("tests/kernels/tune/descent.cu");
    let full = search(&nvcc, &src, Some("full"), dir.path());
    let descent = search(&nvcc, &src, None, dir.path());
    let of = |records: &BTreeMap<(String, String), Value>, prefix: &str| -> Value {
        records
            .iter()
            .find(|((_, k), _)| k.starts_with(prefix))
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("no record of {prefix}"))
    };
    let budget = |b: &Value| {
        (
            b["regs"].as_u64().unwrap(),
            b["smem_spill"].as_bool().unwrap(),
        )
    };
    let regs = |r: &Value| -> Vec<(u64, bool)> {
        r["candidates"].as_array().unwrap()[1..]
            .iter()
            .map(|c| budget(&c["budget"]))
            .collect()
    };
    let chosen = |r: &Value| r["chosen_registers"].as_u64().unwrap();
    let gain = |r: &Value, i: usize| {
        let c = r["candidates"].as_array().unwrap();
        gain_over(&c[0], &c[i]).unwrap()
    };
    // hop_sum<54, 12>: 64 slower than ptxas's code, 40 built all the same and chosen.
    let (h, hf) = (of(&descent, "_Z7hop_sum"), of(&full, "_Z7hop_sum"));
    assert_eq!(regs(&h)[..2], [(64, false), (40, false)], "{h}");
    assert!(gain(&h, 1) <= 0.0 && gain(&h, 2) > gain(&h, 1) + 5.0, "{h}");
    assert_eq!(chosen(&h), 40, "{h}");
    assert_eq!(chosen(&hf), 40, "{hf}");
    assert_eq!(hf["gain_percent"], h["gain_percent"]);
    // chase_acc<80, 16>: 80 beats ptxas's code, 48 does not improve on it: stopped there.
    let (c, cf) = (of(&descent, "_Z9chase_acc"), of(&full, "_Z9chase_acc"));
    assert_eq!(regs(&c), [(80, false), (48, false)], "{c}");
    assert!(gain(&c, 1) > 5.0 && gain(&c, 2) <= gain(&c, 1), "{c}");
    let stopped: Vec<(u64, bool)> = c["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["limit"] == "stopped")
        .map(|p| budget(&p["budget"]))
        .collect();
    assert_eq!(stopped, [(32, false), (32, true)], "{c}");
    assert_eq!(regs(&cf).len(), 4, "{cf}");
    assert_eq!((chosen(&c), chosen(&cf)), (80, 80));
}

/// (arch, kernel) → the chosen candidate's budget, ptxas's shared-memory spilling flag
/// included, from a report; kernels at ptxas's own budget are left out.
fn chosen_budgets(report: &Path) -> BTreeMap<String, BTreeMap<String, Budget>> {
    let mut out: BTreeMap<String, BTreeMap<String, Budget>> = BTreeMap::new();
    for r in report_lines(report) {
        let b = &r["candidates"][r["chosen"].as_u64().unwrap() as usize]["budget"];
        let Some(regs) = b["regs"].as_u64() else {
            continue;
        };
        let mut budget = Budget::regs(regs as u32);
        budget.smem_spill = b["smem_spill"].as_bool().unwrap();
        out.entry(r["arch"].as_str().unwrap().to_string())
            .or_default()
            .insert(r["kernel"].as_str().unwrap().to_string(), budget);
    }
    out
}

/// Issue 47: a kernel tuned to ptxas's shared-memory spilling candidate (32 registers and
/// `enable_smem_spilling`) has a `.nv.shared.<kernel>` that ptxas's own build has not
/// (tests/kernels/assembly/smem_spill.cu, the held-out file's shape: values live across a
/// `__noinline__` helper). It is spliced beside the other retuned kernels, with no
/// whole-module ptxas run at the end, and what ships on sm_80 and sm_90 is byte for byte
/// the cubin of a whole-module ptxas run at the chosen budgets. (Before, the splice refused
/// the section and the report said "whole-module" for that architecture.)
#[test]
fn shared_spill_sections_are_spliced_exactly() {
    let Some(nvcc) = nvcc() else { return };
    let src = source("tests/kernels/assembly/smem_spill.cu");
    let built = SplicedBuild::cold(&nvcc, "smem", &src, &[80, 90]);
    let chosen = built.chosen.clone();
    let smem: Vec<(&String, &String)> = chosen
        .iter()
        .flat_map(|(arch, ks)| {
            ks.iter()
                .filter(|(_, b)| b.smem_spill)
                .map(move |(k, _)| (arch, k))
        })
        .collect();
    assert!(
        !smem.is_empty(),
        "no kernel took the shared-memory spilling candidate, so this tests nothing: {chosen:?}"
    );
    built.each_is_the_whole_module_run(&nvcc, &src, |arch, _, base, full| {
        // The case at hand: a shared section only the chosen budgets' build has.
        for (_, k) in smem.iter().filter(|(a, _)| *a == arch) {
            let name = format!(".nv.shared.{k}");
            assert!(
                base.elf().section_index_by_name(&name).is_none(),
                "{arch}: {name}"
            );
            assert!(
                full.elf().section_index_by_name(&name).is_some(),
                "{arch}: {name}"
            );
        }
    });
}

/// Issue 47: a module with no shared memory at all (tests/kernels/assembly/smem_first.cu)
/// whose half-precision kernel wins at 32 registers and `enable_smem_spilling` on sm_80.
/// Before sm_90 ptxas's own build then has no NOBITS section and no writable segment; a
/// whole-module run at the chosen budgets writes the module's first `.nv.shared.<k>` and
/// one more program header for it (a writable `LOAD`). The splice adds both, so no
/// architecture is assembled by a whole-module run, and what ships is byte for byte that
/// run's cubin. (Before, the splice refused with `NoPlaceFor` and the report said
/// "whole-module" for sm_80; bench/build/instances.cu's `attn_tile<__half, 64>` likewise.)
#[test]
fn a_first_shared_section_and_its_segment_are_spliced_exactly() {
    let Some(nvcc) = nvcc() else { return };
    let src = source("tests/kernels/assembly/smem_first.cu");
    let built = SplicedBuild::cold(&nvcc, "smem-first", &src, &[80, 86]);
    let chosen = built.chosen.clone();
    let smem_80: Vec<&String> = chosen["sm_80"]
        .iter()
        .filter(|(_, b)| b.smem_spill)
        .map(|(k, _)| k)
        .collect();
    assert!(
        !smem_80.is_empty(),
        "no sm_80 kernel took the shared-memory spilling candidate, so this tests nothing: {chosen:?}"
    );
    let shared = |c: &Cubin| {
        let e = c.elf();
        let n = e
            .sections
            .iter()
            .filter(|s| s.name.starts_with(".nv.shared."));
        (n.count(), e.phdrs.len())
    };
    built.each_is_the_whole_module_run(&nvcc, &src, |arch, sm, base, full| {
        if sm == 80 {
            // The case at hand: no shared memory before, one section and segment more after.
            let (sections, segments) = shared(base);
            assert_eq!(sections, 0, "{arch}: ptxas's own build has shared memory");
            assert_eq!(shared(full), (smem_80.len(), segments + 1), "{arch}");
        }
    });
}

/// A cold default-mode build of `src` for `archs` whose every architecture was spliced (no
/// whole-module ptxas run at the end), with the budgets its report chose.
struct SplicedBuild {
    dir: tempfile::TempDir,
    obj: PathBuf,
    chosen: BTreeMap<String, BTreeMap<String, Budget>>,
}

impl SplicedBuild {
    fn cold(nvcc: &Path, tag: &str, src: &Path, archs: &[u32]) -> SplicedBuild {
        let dir = scratch(tag);
        let report = dir.path().join("report.jsonl");
        let obj = dir.path().join(format!("{tag}.o"));
        let mut cmd = common::orion();
        cmd.env("NVCC_ORION_NVCC", nvcc)
            .env("NVCC_ORION_CACHE", "off")
            .env("NVCC_ORION_REPORT", &report)
            .args(["-c", "-O3"]);
        for a in archs {
            cmd.args(["-gencode", &format!("arch=compute_{a},code=sm_{a}")]);
        }
        run(cmd.arg(src).arg("-o").arg(&obj));
        let assemblies: Vec<(String, String)> = report_lines(&report)
            .iter()
            .map(|r| (r["arch"].to_string(), r["assembly"].to_string()))
            .collect();
        assert!(
            assemblies.iter().all(|(_, a)| a == "\"spliced\""),
            "a whole-module run or another assembly: {assemblies:?}"
        );
        let chosen = chosen_budgets(&report);
        SplicedBuild { dir, obj, chosen }
    }

    /// Each shipped cubin is byte for byte what a whole-module ptxas run at the chosen budgets
    /// writes; `also(arch, sm, ptxas's own build, that run)` looks at the case at hand first.
    fn each_is_the_whole_module_run(
        self,
        nvcc: &Path,
        src: &Path,
        also: impl Fn(&str, u32, &Cubin, &Cubin),
    ) {
        let dir = self.dir;
        let cubins = common::fixtures::extract_elfs(&self.obj, &dir.path().join("elf")).unwrap();
        assert_eq!(cubins.len(), 2, "{cubins:?}");
        for path in cubins {
            let shipped_bytes = std::fs::read(&path).unwrap();
            let sm = Cubin::parse(&shipped_bytes).unwrap().arch();
            let arch = format!("sm_{sm}");
            let budgets = self.chosen.get(&arch).cloned().unwrap_or_default();
            let text = ptx_of(nvcc, src, sm, &dir.path().join(format!("sm{sm}.ptx")));
            let stem = |n: &str| dir.path().join(format!("{n}{sm}"));
            let base = ptxas(nvcc, &stem("base"), &text, sm, &BTreeMap::new(), &[]);
            let full = ptxas_with(&[], nvcc, &stem("full"), &text, sm, &budgets, &[]);
            also(&arch, sm, &base, &full);
            let full_bytes = std::fs::read(stem("full").with_extension("cubin")).unwrap();
            if shipped_bytes != full_bytes {
                let kept = dir.keep();
                panic!(
                    "{arch}: {} differs from a whole-module run ({})",
                    path.display(),
                    kept.display()
                );
            }
        }
    }
}

//! Differential testing with generated programs (`crates/nvcc-orion-gen`): a fixed set of
//! seeds that together use every feature of the generator, each compiled by nvcc-orion for
//! some of sm_75…sm_120 in every mode (default, adapt, forced lowest budget, forced
//! spill2smem; forced regdem on one program or more per architecture it
//! applies to, [`REGDEM`]), every shipped kernel compared with ptxas's own whole-module build
//! of the same PTX at that kernel's budget. A finding prints the seed and a reduced program.
//!
//! The driver's path (`nvcc-orion -cubin a.cu`, the front end again per mode) runs on the
//! pairs of [`DRIVER`]: every architecture, every mode and both programs of the feature cover
//! (895, 541); the plan's other pairs compile each mode with `nvcc-orion --ptxas` on nvcc's
//! kept PTX (the same tuned step, where what ships is chosen and assembled, one front end per
//! pair; issue 50), with the same comparisons.
//!
//! Each (program, architecture) result is computed once per run under a lock (the tests that
//! need the same one wait for it) and kept under `CARGO_TARGET_TMPDIR` by the program's
//! sources, the modes, and the bytes of nvcc-orion and of this test binary, so a rerun with
//! nothing changed costs no compile. The long run is `orion-gen run` (bench/results/generator.md).

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nvcc_orion_gen::features::{ALL, features};
use nvcc_orion_gen::harness::{ARCHS, Harness, Mode, Outcome, Through};
use nvcc_orion_gen::tools::Tools;
use sha2::{Digest, Sha256};

/// Seeds and the architectures each runs on. 895 and 541 are `orion-gen cover`'s set for
/// seeds 0–999 (every feature between them); 5 is small and retunes a kernel next to
/// printf/assert users on most architectures. Every architecture appears at least twice.
/// 10439 on sm_90 is the long run's finding: a kernel calling a function that a table also
/// holds, whose `--entry` build was not the whole module's code. 1000000 (the first seed
/// with helper subroutines, `nvcc_orion_gen::generate::HELPERS_FROM`): register-hungry
/// kernels and `__noinline__` functions that divide and take square roots the IEEE way, so
/// the forced rewrites (spill2smem, regdem) meet the compiler's slow-path
/// subroutines in the kernels' sections (issue 46).
const PLAN: &[(u64, &[u32])] = &[
    (895, &[75, 90, 120]),
    (541, &[80, 89, 100]),
    (5, &[75, 86, 90, 100, 120]),
    (1000, &[80, 86, 89]),
    (10439, &[90]),
    (1_000_000, &[80, 90]),
];

/// Where forced regdem runs: on every architecture it applies to (sm_75–90), with
/// the helper-subroutine program on both of its architectures (issue 46's case), not on every
/// (seed, architecture) of [`PLAN`]. Demotion is a whole tuning run per pair, and the rest of
/// the plan's pairs add programs it has already met on that architecture (issue 50: it was
/// the plan's largest single cost). Seed 5 on sm_86 also carries it through the ptxas path
/// ([`the_ptxas_path_checks_what_the_driver_path_checks`]). The other modes run on every pair.
const REGDEM: &[(u64, u32)] = &[
    (895, 75),
    (1_000_000, 80),
    (5, 86),
    (541, 89),
    (1_000_000, 90),
];

/// The pairs of [`PLAN`] compiled through the whole driver in every mode: one or more per
/// architecture, every mode on every architecture it applies to, the helper program wherever
/// it runs, seeds 895 and 541 (between them every feature) and the pairs the other tests of
/// this file read ((5, 86) and (5, 90) against the ptxas path, (895, 90) the wrong-cubin
/// test's honest control). The rest of the plan goes through `nvcc-orion --ptxas`
/// ([`Through::Ptxas`]): the front end, the same for every mode of a pair, ran once per mode
/// on the driver's path, 28-64 % of a moved pair's CPU time where measured (2 % on seed 1000,
/// whose forced rewrites' proofs are most of it; bench/results/suite.md, issue 50);
/// [`the_ptxas_path_checks_what_the_driver_path_checks`] shows both paths compare the same.
const DRIVER: &[(u64, u32)] = &[
    (895, 75),
    (1_000_000, 80),
    (5, 86),
    (541, 89),
    (5, 90),
    (895, 90),
    (1_000_000, 90),
    (541, 100),
    (895, 120),
];

/// How [`PLAN`] compiles `seed` on `arch`: the driver on [`DRIVER`]'s pairs, else ptxas's path.
fn through(seed: u64, arch: u32) -> Through {
    if DRIVER.contains(&(seed, arch)) {
        Through::Nvcc
    } else {
        Through::Ptxas
    }
}

/// The modes [`PLAN`] runs `seed` on `arch` in: every mode, regdem where [`REGDEM`]
/// says.
fn modes(seed: u64, arch: u32) -> Vec<Mode> {
    Mode::ALL
        .iter()
        .copied()
        .filter(|&m| m != Mode::Regdem || REGDEM.contains(&(seed, arch)))
        .collect()
}

/// The harness for one (seed, architecture) of the plan: the path [`through`] gives, every
/// listing read, nvcc-orion's variant cache shared under `root`.
fn plan_harness(tools: &Tools, work: PathBuf, root: &Path, seed: u64, arch: u32) -> Harness {
    Harness {
        tools: tools.clone(),
        work,
        modes: modes(seed, arch),
        cache: Some(root.join("variants")),
        through: through(seed, arch),
        every_listing: true,
        flags: Vec::new(),
    }
}

/// What checking `seed` on `arch` (on [`through`]'s path) found, computed once per run for every
/// test that asks (a lock across the test processes: one computes, the others wait and read
/// it), and kept while nvcc-orion, this test binary, the program and the modes are the same.
fn plan_outcome(nvcc: &Path, tools: &Tools, seed: u64, arch: u32) -> Outcome {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated");
    let p = nvcc_orion_gen::generate(seed);
    let src: String = nvcc_orion_gen::print::sources(&p)
        .into_iter()
        .map(|(n, t)| format!("{n}\n{t}"))
        .collect();
    let identity = format!(
        "{}{}{arch}{:?}{:?}{src}",
        sha(&tools.orion),
        sha(&std::env::current_exe().unwrap()),
        modes(seed, arch),
        through(seed, arch)
    );
    let lock = common::Locked::new(
        &format!("generated-{seed}-sm{arch}"),
        nvcc,
        &[identity.as_bytes()],
    );
    let saved = lock.dir.join("outcome.txt");
    if lock.complete()
        && let Some(o) = std::fs::read_to_string(&saved)
            .ok()
            .and_then(|t| Outcome::from_text(&t))
    {
        return o;
    }
    let work = lock.dir.join("work");
    let o = plan_harness(tools, work.clone(), &root, seed, arch)
        .check(&p, arch)
        .unwrap_or_else(|e| panic!("seed {seed} sm_{arch}: {e}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::write(&saved, o.to_text()).unwrap();
    lock.finish();
    o
}

/// Time one reduction may take when the test finds a mismatch.
const REDUCE: Duration = Duration::from_secs(90);

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sha(path: &Path) -> String {
    hex(&std::fs::read(path).unwrap_or_default())
}

#[test]
fn generated_programs_ship_ptxas_own_code() {
    let Some(nvcc) = common::nvcc_or_skip("generated_programs_ship_ptxas_own_code") else {
        return;
    };
    let started = Instant::now();
    let orion = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    let tools = Tools::find(orion.clone()).expect("the toolkit next to nvcc");
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated");

    // Coverage: every feature, architecture and mode is exercised by the plan.
    let mut used = std::collections::BTreeMap::new();
    for (seed, _) in PLAN {
        for f in features(&nvcc_orion_gen::generate(*seed)) {
            *used.entry(f).or_insert(0) += 1;
        }
    }
    eprintln!("feature coverage (programs using each):");
    for f in ALL {
        eprintln!("  {f}: {}", used.get(f).copied().unwrap_or(0));
    }
    let missing: Vec<&&str> = ALL.iter().filter(|f| !used.contains_key(*f)).collect();
    assert!(
        missing.is_empty(),
        "the plan misses features {missing:?}: pick seeds with `orion-gen cover`"
    );
    for a in ARCHS {
        assert!(
            PLAN.iter().filter(|(_, archs)| archs.contains(a)).count() >= 2,
            "sm_{a} is not in the plan twice"
        );
    }
    plan_runs_every_mode_on_every_architecture();
    driver_runs_every_mode_architecture_and_feature();

    let work_items: Vec<(u64, u32)> = PLAN
        .iter()
        .flat_map(|(s, archs)| archs.iter().map(move |a| (*s, *a)))
        .collect();
    let results = Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                while let Some(&(seed, arch)) =
                    work_items.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
                {
                    let t = Instant::now();
                    let outcome = plan_outcome(&nvcc, &tools, seed, arch);
                    eprintln!(
                        "seed {seed} sm_{arch} ({:?}): {} modes, {} kernel comparisons, {} mismatches ({:.0?})",
                        through(seed, arch),
                        outcome.modes,
                        outcome.kernels,
                        outcome.mismatches.len(),
                        t.elapsed()
                    );
                    results.lock().unwrap().push((seed, arch, outcome));
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let (modes, kernels): (usize, usize) = results
        .iter()
        .fold((0, 0), |(m, k), (_, _, o)| (m + o.modes, k + o.kernels));
    let mismatches: Vec<_> = results
        .iter()
        .flat_map(|(_, _, o)| o.mismatches.iter().cloned())
        .collect();
    eprintln!(
        "{} programs × architectures, {modes} modes compiled, {kernels} kernel comparisons, {} mismatches in {:.0?}",
        results.len(),
        mismatches.len(),
        started.elapsed()
    );
    if mismatches.is_empty() {
        return;
    }
    for m in &mismatches {
        eprintln!("MISMATCH {m}");
    }
    // The first finding, reduced (cached beside the results).
    let first = &mismatches[0];
    let identity = format!("{}{}", sha(&orion), sha(&std::env::current_exe().unwrap()));
    let key = hex(format!("{identity}{first}").as_bytes());
    let cached = root.join(format!("reduced-{}.cu", &key[..16]));
    let work = root.join(format!("work-{}", std::process::id()));
    let reduced = std::fs::read_to_string(&cached).unwrap_or_else(|_| {
        let p = nvcc_orion_gen::generate(first.seed);
        let h = plan_harness(&tools, work.clone(), &root, first.seed, first.arch);
        let r = nvcc_orion_gen::reduce::reduce(&h, &p, first, REDUCE);
        let text: String = nvcc_orion_gen::print::sources(&r.program)
            .into_iter()
            .map(|(n, t)| format!("// ---- {n}\n{t}"))
            .collect();
        let text = format!("// {}\n{text}", r.finding);
        let _ = std::fs::write(&cached, &text);
        text
    });
    let _ = std::fs::remove_dir_all(&work);
    panic!(
        "{} mismatches between nvcc-orion and ptxas's whole-module builds; the first, seed {} \
         sm_{} {}, reduced:\n{reduced}\nreduce further with `cargo run --release -p \
         nvcc-orion-gen --bin orion-gen -- reduce --seed {} --arch {} --mode {}`",
        mismatches.len(),
        first.seed,
        first.arch,
        first.mode,
        first.seed,
        first.arch,
        first.mode.trim_start_matches("force="),
    );
}

/// [`DRIVER`]'s pairs are the plan's and take the whole driver through every (architecture,
/// mode) the plan runs and every feature of the generator: what moved to the ptxas path is
/// only the driver's front end run again on programs and architectures it already covers.
fn driver_runs_every_mode_architecture_and_feature() {
    for &(seed, arch) in DRIVER {
        assert!(
            PLAN.iter()
                .any(|(s, archs)| *s == seed && archs.contains(&arch)),
            "DRIVER's seed {seed} sm_{arch} is not in the plan"
        );
    }
    for (seed, archs) in PLAN {
        for &arch in *archs {
            for m in modes(*seed, arch).into_iter().filter(|m| m.applies(arch)) {
                assert!(
                    DRIVER
                        .iter()
                        .any(|&(s, a)| a == arch && modes(s, a).contains(&m)),
                    "{} on sm_{arch} never runs through the driver",
                    m.name()
                );
            }
        }
    }
    let seeds: std::collections::BTreeSet<u64> = DRIVER.iter().map(|(s, _)| *s).collect();
    let used: std::collections::BTreeSet<&str> = seeds
        .iter()
        .flat_map(|s| features(&nvcc_orion_gen::generate(*s)))
        .collect();
    let missing: Vec<&&str> = ALL.iter().filter(|f| !used.contains(*f)).collect();
    assert!(missing.is_empty(), "no driver build uses {missing:?}");
    for (seed, archs) in [(5, &[86, 90][..]), (895, &[90])] {
        for a in archs {
            assert_eq!(through(seed, *a), Through::Nvcc, "seed {seed} sm_{a}");
        }
    }
}

/// [`REGDEM`] keeps regdem on every architecture it applies to, on the helper
/// program wherever the plan builds it, and only on pairs the plan has.
fn plan_runs_every_mode_on_every_architecture() {
    for &(seed, arch) in REGDEM {
        assert!(
            PLAN.iter()
                .any(|(s, archs)| *s == seed && archs.contains(&arch)),
            "REGDEM's seed {seed} sm_{arch} is not in the plan"
        );
    }
    for a in ARCHS.iter().filter(|a| Mode::Regdem.applies(**a)) {
        assert!(
            REGDEM.iter().any(|(_, arch)| arch == a),
            "regdem never runs on sm_{a}"
        );
    }
    let helpers = PLAN.iter().find(|(s, _)| *s == 1_000_000).unwrap().1;
    for a in helpers.iter().filter(|a| Mode::Regdem.applies(**a)) {
        assert!(
            modes(1_000_000, *a).contains(&Mode::Regdem),
            "the helper program without regdem on sm_{a}"
        );
    }
}

/// The campaign's fast path (`orion-gen run --through ptxas`: `nvcc-orion --ptxas` on nvcc's
/// kept PTX, no front end per mode) compares the same kernels in the same modes as the
/// driver's path, and finds nothing either, on one program and two architectures (register
/// demotion on the first). The driver path's outcome is the plan's own
/// ([`plan_outcome`]: computed once for both tests).
#[test]
fn the_ptxas_path_checks_what_the_driver_path_checks() {
    let Some(nvcc) = common::nvcc_or_skip("generated (through ptxas)") else {
        return;
    };
    let orion = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    let tools = Tools::find(orion).expect("the toolkit next to nvcc");
    let root = fresh("generated-through");
    let p = nvcc_orion_gen::generate(5);
    for arch in [86, 90] {
        let via_ptxas = Harness {
            tools: tools.clone(),
            work: root.join("ptxas"),
            modes: modes(5, arch),
            cache: None,
            through: Through::Ptxas,
            every_listing: false,
            flags: Vec::new(),
        }
        .check(&p, arch)
        .unwrap();
        let via_nvcc = plan_outcome(&nvcc, &tools, 5, arch);
        assert!(via_ptxas.kernels > 0, "sm_{arch}: nothing compared");
        assert_eq!(
            (via_ptxas.modes, via_ptxas.kernels),
            (via_nvcc.modes, via_nvcc.kernels),
            "sm_{arch}"
        );
        assert!(
            via_ptxas.mismatches.is_empty() && via_nvcc.mismatches.is_empty(),
            "sm_{arch}: {:?} / {:?}",
            via_ptxas.mismatches,
            via_nvcc.mismatches
        );
    }
    assert!(
        modes(5, 86).contains(&Mode::Regdem),
        "the ptxas path runs regdem"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The separable chain's check (`-rdc -c`, `-dlink`, host link, `-lib`): a step that fails
/// under a mode is a finding where it succeeds with nvcc-orion off, and only there. The
/// stand-ins for nvcc-orion fail the device link, one under the forced lowest budget only,
/// the other always (plain nvcc's chain too).
#[test]
fn a_failing_separable_step_is_found_where_plain_nvcc_links() {
    let Some(_) = common::nvcc_or_skip("generated (separable chain)") else {
        return;
    };
    let real = env!("CARGO_BIN_EXE_nvcc-orion");
    let root = fresh("generated-rdc");
    let stand_in = |name: &str, when: &str| -> PathBuf {
        let body = format!(
            "case \" $* \" in *\" -dlink \"*) if {when}; then \
             echo 'nvlink error : made up' >&2; exit 1; fi;; esac\nexec '{real}' \"$@\"\n"
        );
        script(&root.join(name), &body)
    };
    let p = nvcc_orion_gen::generate(43);
    assert!(p.rdc, "seed 43 is an -rdc program");
    let chain = |orion: PathBuf, dir: &str| -> Outcome {
        let h = Harness {
            tools: Tools::find(orion).expect("the toolkit next to nvcc"),
            work: root.join(dir),
            modes: vec![Mode::Default, Mode::Lowest],
            cache: None,
            through: Through::Ptxas,
            every_listing: false,
            flags: Vec::new(),
        };
        let d = h.work.clone();
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in nvcc_orion_gen::print::sources(&p) {
            std::fs::write(d.join(name), text).unwrap();
        }
        let mut out = Outcome::default();
        nvcc_orion_gen::rdc::check(&h, &d, &p, 80, &mut out);
        out
    };

    let lowest = chain(
        stand_in("orion-lowest", "[ \"$NVCC_ORION_FORCE\" = lowest ]"),
        "lowest",
    );
    let found: Vec<(&str, &str)> = lowest
        .mismatches
        .iter()
        .map(|m| (m.mode.as_str(), m.kind.as_str()))
        .collect();
    assert_eq!(found, [("force=lowest", "rdc device link failed")]);
    assert!(lowest.mismatches[0].detail.contains("made up"));

    let always = chain(stand_in("orion-always", "true"), "always");
    assert!(
        always.mismatches.is_empty(),
        "a step plain nvcc fails too is not a finding: {:?}",
        always.mismatches
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// An executable shell script at `path` with `body`.
fn script(path: &Path, body: &str) -> PathBuf {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    let mut perm = std::fs::metadata(path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(path, perm).unwrap();
    path.to_path_buf()
}

/// The harness is not blind: a stand-in for nvcc-orion that reports what the real one chose
/// but ships plain ptxas's cubin (the retuned kernel at ptxas's own budget, no variants) is
/// caught in default mode and under adapt, naming the retuned kernel; one whose train build
/// is not its adapt build is caught too.
///
/// The stand-ins are checked in their modes only ([`Harness::check_modes`]): seed 895 is an
/// `-rdc` program, and its separable chain (every unit compiled again per mode through the
/// driver, twice per step under the wrong-cubin stand-in) finds nothing about a wrong cubin;
/// the real nvcc-orion's chain is checked in the honest outcome below and the chain's own
/// check in [`a_failing_separable_step_is_found_where_plain_nvcc_links`]. The stand-ins'
/// builds share one variant cache (each mode's tuning is the same real nvcc-orion's on the
/// same PTX; what ships is then the stand-in's). Issue 50: three quarters of the test's CPU.
#[test]
fn a_cubin_that_is_not_what_the_report_says_is_found() {
    let Some(nvcc) = common::nvcc_or_skip("generated (a wrong cubin)") else {
        return;
    };
    let real = env!("CARGO_BIN_EXE_nvcc-orion");
    let root = fresh("generated-wrong");
    let body = format!(
        "'{real}' \"$@\" || exit $?\nNVCC_ORION=off exec env -u NVCC_ORION_REPORT '{real}' \"$@\"\n"
    );
    let h = |orion: PathBuf, dir: &str| Harness {
        tools: Tools::find(orion).expect("the toolkit next to nvcc"),
        work: root.join(dir),
        modes: vec![Mode::Default, Mode::Adapt],
        cache: Some(root.join("variants")),
        through: Through::Ptxas,
        every_listing: false,
        flags: Vec::new(),
    };
    let p = nvcc_orion_gen::generate(895);
    // The real nvcc-orion on the same program and architecture passes: the plan's outcome
    // ([`plan_outcome`], every mode through the driver, computed once for both tests).
    let tools = Tools::find(PathBuf::from(real)).expect("the toolkit next to nvcc");
    let honest = plan_outcome(&nvcc, &tools, 895, 90);
    assert!(honest.mismatches.is_empty(), "{:?}", honest.mismatches);
    let retuned = honest
        .assembled
        .iter()
        .filter(|((mode, how), _)| {
            ["default", "adapt"].contains(&mode.as_str()) && how != "ptxas's own"
        })
        .count();
    assert!(
        retuned > 0,
        "seed 895 retunes a kernel on sm_90: {honest:?}"
    );

    let (wrong, _) = h(script(&root.join("orion-plain"), &body), "wrong")
        .check_modes(&p, 90)
        .unwrap();
    for mode in ["default", "adapt"] {
        let found: Vec<&str> = wrong
            .mismatches
            .iter()
            .filter(|m| m.mode == mode && m.kernel.is_some())
            .map(|m| m.kind.as_str())
            .collect();
        assert!(
            found
                .iter()
                .any(|k| ["text", "res-usage", "sections"].contains(k)),
            "{mode}: the plain cubin passed for the retuned one: {:?}",
            wrong.mismatches
        );
    }

    // Under adapt, train's cubin is built too: one that forces the lowest budgets is caught.
    let body = format!(
        "if [ \"$NVCC_ORION\" = train ]; then export NVCC_ORION_FORCE=lowest; fi\n\
         exec '{real}' \"$@\"\n"
    );
    let harness = Harness {
        modes: vec![Mode::Adapt],
        ..h(script(&root.join("orion-train"), &body), "train")
    };
    let (train, _) = harness.check_modes(&p, 90).unwrap();
    let found: Vec<(&str, &str)> = train
        .mismatches
        .iter()
        .map(|m| (m.mode.as_str(), m.kind.as_str()))
        .collect();
    assert_eq!(found, [("train", "train is not adapt")]);
    let _ = std::fs::remove_dir_all(&root);
}

/// An empty scratch folder `name` under the target's temporary folder.
fn fresh(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// Issue 48: with `-lineinfo`, `-Xptxas -warn-spills` and `-Xptxas -warn-spills,-Werror` on
/// every build, each shipped kernel is still whole-module ptxas's code at its budget, what
/// ptxas printed is what it prints for that whole-module build, and under `-lineinfo` every
/// kernel carries the reference's source lines (`nvcc_orion_gen::flagged`). Seeds 5 and 1000
/// on sm_90 in default, adapt and forced-lowest mode (the last retunes every kernel it can,
/// so `-lineinfo` and `-warn-spills` have retuned kernels to compare); a program nvcc
/// refuses under `-Werror` is refused by nvcc-orion with the same messages. The long run is
/// `orion-gen run --flag ...` (bench/results/generator.md).
#[test]
fn generated_programs_under_lineinfo_and_ptxas_warnings() {
    let Some(_nvcc) = common::nvcc_or_skip("generated_programs_under_lineinfo_and_ptxas_warnings")
    else {
        return;
    };
    let orion = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    let tools = Tools::find(orion).expect("the toolkit next to nvcc");
    let root = fresh("generated-flags");
    for flags in [
        &["-lineinfo"][..],
        &["-Xptxas", "-warn-spills"],
        &["-Xptxas", "-warn-spills,-Werror"],
    ] {
        let h = Harness {
            tools: tools.clone(),
            work: root.clone(),
            modes: vec![Mode::Default, Mode::Adapt, Mode::Lowest],
            cache: Some(root.join("variants")),
            through: Through::Nvcc,
            every_listing: false,
            flags: flags.iter().map(|f| f.to_string()).collect(),
        };
        let mut retuned = 0;
        for seed in [5, 1000] {
            let o = match h.check(&nvcc_orion_gen::generate(seed), 90) {
                Ok(o) => o,
                Err(e) if e.starts_with("nvcc refused") && flags[1].contains("-Werror") => {
                    fails_as_nvcc(&h, seed, 90);
                    continue;
                }
                Err(e) => panic!("seed {seed} {flags:?}: {e}"),
            };
            let found: Vec<String> = o.mismatches.iter().map(|m| m.to_string()).collect();
            assert!(found.is_empty(), "{flags:?}: {found:#?}");
            assert_eq!(o.modes, 3, "seed {seed} {flags:?}: every mode compiled");
            retuned += o
                .assembled
                .keys()
                .filter(|(_, how)| how != "ptxas's own")
                .count();
        }
        // Under -Werror seed 5 spills at ptxas's own budgets (nvcc refuses it: checked
        // above) and seed 1000's lower budgets all spill, so nothing is retuned there.
        let werror = flags[1..].iter().any(|f| f.contains("-Werror"));
        assert!(werror || retuned > 0, "{flags:?}: some kernel is retuned");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A program nvcc refuses under the harness's options (`-Werror` with a kernel that spills
/// at ptxas's own budget): nvcc-orion fails too, with ptxas's same messages.
fn fails_as_nvcc(h: &Harness, seed: u64, arch: u32) {
    let dir = h.work.join(format!("s{seed}-sm{arch}"));
    let arch = format!("-arch=sm_{arch}");
    let run = |tool: &Path| {
        let mut args = vec!["-cubin", arch.as_str()];
        args.extend(h.flags.iter().map(String::as_str));
        args.extend(["a.cu", "-o", "refused.cubin"]);
        let nvcc = h.tools.nvcc.to_string_lossy();
        let env = [
            ("NVCC_ORION_NVCC", nvcc.as_ref()),
            ("NVCC_ORION_CACHE", "off"),
        ];
        nvcc_orion_gen::tools::run(&dir, tool, &args, &env)
    };
    let (nvcc, orion) = (run(&h.tools.nvcc), run(&h.tools.orion));
    assert!(!nvcc.ok && !orion.ok, "seed {seed}: both fail");
    assert!(nvcc.stderr.contains("ptxas error"), "{}", nvcc.stderr);
    let differs = nvcc_orion_gen::flagged::messages(&orion.stderr, &nvcc.stderr);
    assert!(differs.is_none(), "seed {seed}: {differs:?}");
}

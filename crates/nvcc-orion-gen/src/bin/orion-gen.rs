//! `orion-gen print|check|reduce|run`: generated programs against nvcc-orion, by hand or in
//! bulk (bench/results/generator.md).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use nvcc_orion_gen::campaign;
use nvcc_orion_gen::harness::{ARCHS, Harness, Mode, Through};
use nvcc_orion_gen::tools::Tools;

#[derive(Parser)]
#[command(about = "Random CUDA programs, differentially tested against ptxas")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct Common {
    /// Architectures (numbers such as 90); all seven by default.
    #[arg(long = "arch", value_delimiter = ',')]
    archs: Vec<u32>,
    /// Modes (default, adapt, lowest, spill2smem, regdem); all by default.
    #[arg(long = "mode", value_delimiter = ',')]
    modes: Vec<String>,
    /// The nvcc-orion binary under test (default: next to this one).
    #[arg(long)]
    orion: Option<PathBuf>,
    /// Scratch folder (default: a temporary one).
    #[arg(long)]
    work: Option<PathBuf>,
    /// How each mode is compiled: `nvcc` (the whole driver) or `ptxas` (`nvcc-orion --ptxas`
    /// on nvcc's kept PTX: the same tuned step, no front end per mode).
    #[arg(long, default_value = "nvcc")]
    through: String,
    /// Read every kernel's listing with nvdisasm, also where its dumped bytes already prove it
    /// the same, and report where that shortcut would have missed a difference.
    #[arg(long)]
    every_listing: bool,
    /// An nvcc option every build adds, repeated for more (`--flag=-lineinfo`,
    /// `--flag=-Xptxas=-warn-spills,-Werror`): ptxas's messages and line tables are then
    /// compared with the reference's too.
    #[arg(long = "flag", allow_hyphen_values = true)]
    flags: Vec<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print a program's sources.
    Print {
        #[arg(long)]
        seed: u64,
    },
    /// Seeds from a range that together use every feature (greedy set cover).
    Cover {
        #[arg(long, default_value_t = 0)]
        from: u64,
        #[arg(long, default_value_t = 1000)]
        count: u64,
    },
    /// Check one program and print every mismatch.
    Check {
        #[arg(long)]
        seed: u64,
        #[command(flatten)]
        c: Common,
    },
    /// Reduce a failing program: its first mismatch (or the first of `--kind`).
    Reduce {
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        kind: Option<String>,
        /// Minutes to spend.
        #[arg(long, default_value_t = 15)]
        minutes: u64,
        #[command(flatten)]
        c: Common,
    },
    /// Check N programs from seed S and write a markdown summary.
    Run {
        #[arg(long, default_value_t = 0)]
        from: u64,
        #[arg(long, default_value_t = 100)]
        count: u64,
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop starting programs after this many minutes.
        #[arg(long)]
        minutes: Option<u64>,
        /// Reduce the first finding of each kind (minutes each).
        #[arg(long)]
        reduce: Option<u64>,
        /// Only the programs of the range that use this feature (as `orion-gen cover` names
        /// them): to recheck what a fix touched.
        #[arg(long)]
        with: Option<String>,
        #[command(flatten)]
        c: Common,
    },
}

/// The seeds of `range` whose programs use `feature` (all of them without one); an unknown
/// feature is an error, not an empty run.
fn seeds_with(range: std::ops::Range<u64>, feature: Option<&str>) -> Vec<u64> {
    let Some(f) = feature else {
        return range.collect();
    };
    if !nvcc_orion_gen::features::ALL.contains(&f) {
        eprintln!(
            "orion-gen: no feature `{f}`; the features are: {}",
            nvcc_orion_gen::features::ALL.join(", ")
        );
        std::process::exit(2)
    }
    range
        .filter(|s| nvcc_orion_gen::features::features(&nvcc_orion_gen::generate(*s)).contains(f))
        .collect()
}

fn harness(c: &Common) -> (Harness, Vec<u32>, tempfile::TempDir) {
    let orion = c.orion.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .expect("own path")
            .with_file_name("nvcc-orion")
    });
    // Every compile runs in its own folder, so a relative path is made absolute here.
    let orion = std::path::absolute(&orion).unwrap_or(orion);
    let tools = Tools::find(orion).unwrap_or_else(|| {
        eprintln!("orion-gen: no nvcc found (CUDA_HOME, NVCC_ORION_NVCC or PATH)");
        std::process::exit(2)
    });
    let work = c.work.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = std::fs::create_dir_all(&work)
        .and_then(|()| {
            tempfile::Builder::new()
                .prefix("orion-gen")
                .tempdir_in(&work)
        })
        .unwrap_or_else(|e| {
            eprintln!("orion-gen: scratch folder in {}: {e}", work.display());
            std::process::exit(2)
        });
    let modes = if c.modes.is_empty() {
        Mode::ALL.to_vec()
    } else {
        c.modes
            .iter()
            .map(|m| {
                Mode::parse(m).unwrap_or_else(|| {
                    eprintln!("orion-gen: unknown mode {m}");
                    std::process::exit(2)
                })
            })
            .collect()
    };
    let archs = if c.archs.is_empty() {
        ARCHS.to_vec()
    } else {
        c.archs.clone()
    };
    let through = Through::parse(&c.through).unwrap_or_else(|| {
        eprintln!("orion-gen: --through is nvcc or ptxas, not {}", c.through);
        std::process::exit(2)
    });
    let h = Harness {
        tools,
        work: tmp.path().to_path_buf(),
        modes,
        cache: Some(tmp.path().join("cache")),
        through,
        every_listing: c.every_listing,
        flags: c.flags.clone(),
    };
    (h, archs, tmp)
}

fn main() {
    match Cli::parse().cmd {
        Cmd::Print { seed } => print(seed),
        Cmd::Cover { from, count } => cover(from, count),
        Cmd::Check { seed, c } => check(seed, &c),
        Cmd::Reduce {
            seed,
            kind,
            minutes,
            c,
        } => reduce(seed, kind.as_deref(), minutes, &c),
        Cmd::Run {
            from,
            count,
            jobs,
            out,
            minutes,
            reduce,
            with,
            c,
        } => {
            let plan = RunPlan {
                seeds: seeds_with(from..from + count, with.as_deref()),
                jobs,
                minutes,
                reduce,
            };
            run(&plan, out.as_deref(), &c)
        }
    }
}

/// `print`: the program's sources, each under a `////` line naming its file.
fn print(seed: u64) {
    let p = nvcc_orion_gen::generate(seed);
    for (name, text) in nvcc_orion_gen::print::sources(&p) {
        println!("//// {name}\n{text}");
    }
}

/// `cover`: each seed of the set cover with its features.
fn cover(from: u64, count: u64) {
    for s in nvcc_orion_gen::features::cover(from..from + count) {
        let f = nvcc_orion_gen::features::features(&nvcc_orion_gen::generate(s));
        println!("{s}: {}", f.into_iter().collect::<Vec<_>>().join(", "));
    }
}

/// `check`: one program on every architecture; exits 1 on a mismatch or a program the
/// harness could not check.
fn check(seed: u64, c: &Common) {
    let (h, archs, _tmp) = harness(c);
    let p = nvcc_orion_gen::generate(seed);
    let mut bad = false;
    for a in archs {
        match h.check(&p, a) {
            Ok(o) => {
                println!(
                    "seed {seed} sm_{a}: {} modes, {} kernel comparisons, {} mismatches",
                    o.modes,
                    o.kernels,
                    o.mismatches.len()
                );
                for m in &o.mismatches {
                    println!("  {m}");
                }
                bad |= !o.mismatches.is_empty();
            }
            Err(e) => {
                println!("seed {seed} sm_{a}: not checked: {e}");
                bad = true;
            }
        }
    }
    std::process::exit(i32::from(bad));
}

/// `reduce`: the first mismatch (of `kind`, if given) on any architecture, reduced.
fn reduce(seed: u64, kind: Option<&str>, minutes: u64, c: &Common) {
    let (h, archs, _tmp) = harness(c);
    let p = nvcc_orion_gen::generate(seed);
    let found = archs.iter().find_map(|&a| {
        h.check(&p, a)
            .ok()?
            .mismatches
            .into_iter()
            .find(|m| kind.is_none_or(|k| m.kind == k))
    });
    let Some(m) = found else {
        println!("seed {seed}: no mismatch to reduce");
        return;
    };
    println!("reducing: {m}");
    let r = nvcc_orion_gen::reduce::reduce(&h, &p, &m, Duration::from_secs(minutes * 60));
    println!("after {} checks: {}\n", r.checks, r.finding);
    for (name, text) in nvcc_orion_gen::print::sources(&r.program) {
        println!("//// {name}\n{text}");
    }
}

/// What `run` checks and for how long.
struct RunPlan {
    seeds: Vec<u64>,
    jobs: usize,
    /// Start no program after this many minutes.
    minutes: Option<u64>,
    /// Reduce one mismatch of each kind for at most this many minutes.
    reduce: Option<u64>,
}

/// `run`: a campaign over the plan's seeds, its summary rewritten to `out` after every pair
/// (stdout at the end without one); exits 1 on any mismatch.
fn run(plan: &RunPlan, out: Option<&std::path::Path>, c: &Common) {
    let (h, archs, _tmp) = harness(c);
    let deadline = plan
        .minutes
        .map(|m| Instant::now() + Duration::from_secs(m * 60));
    let modes: Vec<&str> = h.modes.iter().map(|m| m.name()).collect();
    let command = format!(
        "orion-gen {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let write = |s: &campaign::Summary| {
        let md = campaign::markdown(s, &archs, &modes, &command);
        match out {
            Some(path) => std::fs::write(path, md).map_err(|e| format!("{}: {e}", path.display())),
            None => Ok(()),
        }
    };
    let snapshot = |s: &campaign::Summary| {
        let _ = write(s);
    };
    let progress = |l: &str| eprintln!("{l}");
    let mut s = campaign::run(
        &h,
        &plan.seeds,
        &archs,
        plan.jobs,
        deadline,
        &progress,
        &snapshot,
    );
    if let Some(mins) = plan.reduce {
        reduce_each_kind(&h, &mut s, Duration::from_secs(mins * 60));
    }
    if out.is_none() {
        print!("{}", campaign::markdown(&s, &archs, &modes, &command));
    }
    if let Err(e) = write(&s) {
        eprintln!("orion-gen: the summary: {e}");
        std::process::exit(2);
    }
    std::process::exit(i32::from(!s.mismatches.is_empty()));
}

/// Reduce the first mismatch of each kind, adding the reduced sources to the summary.
fn reduce_each_kind(h: &Harness, s: &mut campaign::Summary, limit: Duration) {
    for ((_, kind), ms) in campaign::kinds(&s.mismatches.clone()) {
        let m = ms[0];
        eprintln!("reducing {m}");
        let p = nvcc_orion_gen::generate(m.seed);
        let r = nvcc_orion_gen::reduce::reduce(h, &p, m, limit);
        let src = nvcc_orion_gen::print::sources(&r.program)
            .into_iter()
            .map(|(n, t)| format!("// ---- {n}\n{t}"))
            .collect();
        s.reduced
            .push((format!("{} / {kind}", m.mode), m.seed, m.arch, src));
    }
}

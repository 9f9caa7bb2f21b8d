//! Many programs: seeds × architectures through the harness on a few threads, and the
//! markdown summary bench/results keeps (seeds, counts, mismatches, time, the command).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{Harness, Mismatch};

#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub seeds: Vec<u64>,
    /// Programs × architectures checked.
    pub checked: usize,
    /// Programs × architectures × modes compiled and compared.
    pub modes: usize,
    pub kernels: usize,
    pub mismatches: Vec<Mismatch>,
    /// Cubins compiled, by mode and how nvcc-orion put each together.
    pub assembled: BTreeMap<(String, String), usize>,
    /// Programs nvcc itself refused, or the harness could not run: (seed, arch, why).
    pub errors: Vec<(u64, u32, String)>,
    pub features: BTreeMap<&'static str, usize>,
    pub wall: Duration,
    /// The program of each mismatch kind's first seed, reduced: (kind, seed, arch, source).
    pub reduced: Vec<(String, u64, u32, String)>,
}

/// Check every seed on every arch with `jobs` threads; `deadline` ends early (a time
/// budget). `progress` gets a line per finding and per pair checked, `snapshot` the summary so
/// far after each pair (so a campaign stopped any other way still leaves its record).
pub fn run(
    h: &Harness,
    seeds: &[u64],
    archs: &[u32],
    jobs: usize,
    deadline: Option<Instant>,
    progress: &(dyn Fn(&str) + Sync),
    snapshot: &(dyn Fn(&Summary) + Sync),
) -> Summary {
    let start = Instant::now();
    let work: Vec<(u64, u32)> = seeds
        .iter()
        .flat_map(|&s| archs.iter().map(move |&a| (s, a)))
        .collect();
    let next = AtomicUsize::new(0);
    let sum = Mutex::new(Summary::default());
    std::thread::scope(|sc| {
        for _ in 0..jobs.max(1) {
            sc.spawn(|| {
                loop {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(seed, arch)) = work.get(i) else {
                        return;
                    };
                    let p = crate::generate(seed);
                    let r = h.check(&p, arch);
                    let mut s = sum.lock().unwrap();
                    match r {
                        Ok(o) => {
                            s.checked += 1;
                            s.modes += o.modes;
                            s.kernels += o.kernels;
                            for (k, n) in o.assembled {
                                *s.assembled.entry(k).or_default() += n;
                            }
                            for m in &o.mismatches {
                                progress(&format!("MISMATCH {m}"));
                            }
                            s.mismatches.extend(o.mismatches);
                        }
                        Err(e) => {
                            progress(&format!("ERROR seed {seed} sm_{arch}: {e}"));
                            s.errors.push((seed, arch, e));
                        }
                    }
                    if !s.seeds.contains(&seed) {
                        s.seeds.push(seed);
                        for f in crate::features::features(&p) {
                            *s.features.entry(f).or_default() += 1;
                        }
                    }
                    progress(&format!(
                        "checked seed {seed} sm_{arch} ({} done, {} mismatches, {:.0?})",
                        s.checked,
                        s.mismatches.len(),
                        start.elapsed()
                    ));
                    snapshot(&finished(s.clone(), start));
                    let _ = std::fs::remove_dir_all(h.work.join(format!("s{seed}-sm{arch}")));
                }
            });
        }
    });
    finished(sum.into_inner().unwrap(), start)
}

fn finished(mut s: Summary, start: Instant) -> Summary {
    s.seeds.sort();
    s.wall = start.elapsed();
    s
}

/// Mismatches grouped by (mode, kind): the seeds and archs of each.
pub fn kinds(ms: &[Mismatch]) -> BTreeMap<(String, String), Vec<&Mismatch>> {
    let mut k: BTreeMap<(String, String), Vec<&Mismatch>> = BTreeMap::new();
    for m in ms {
        k.entry((m.mode.clone(), m.kind.clone()))
            .or_default()
            .push(m);
    }
    k
}

fn ranges(seeds: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j + 1] == seeds[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            seeds[i].to_string()
        } else {
            format!("{}–{}", seeds[i], seeds[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

pub fn markdown(s: &Summary, archs: &[u32], modes: &[&str], command: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Differential testing with generated programs\n");
    let _ = writeln!(
        o,
        "Every program (`nvcc-orion-gen`, one per seed) is compiled by nvcc-orion for each \
         architecture in each mode, and every shipped kernel is compared with the same kernel \
         of a whole-module ptxas build of nvcc's own PTX at that kernel's chosen budget \
         (`.maxnreg`), read with `cuobjdump -elf`, `cuobjdump -res-usage` and `nvdisasm`.\n"
    );
    let _ = writeln!(o, "Command: `{command}`\n");
    let _ = writeln!(o, "| what | count |\n|---|---|");
    let _ = writeln!(
        o,
        "| programs (seeds {}) | {} |",
        ranges(&s.seeds),
        s.seeds.len()
    );
    let arch_list: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
    let _ = writeln!(
        o,
        "| programs × architectures ({}) | {} |",
        arch_list.join(", "),
        s.checked
    );
    let _ = writeln!(
        o,
        "| programs × architectures × modes compared ({}) | {} |",
        modes.join(", "),
        s.modes
    );
    let _ = writeln!(o, "| kernel comparisons | {} |", s.kernels);
    let _ = writeln!(o, "| mismatches | {} |", s.mismatches.len());
    let _ = writeln!(
        o,
        "| programs the harness could not check | {} |",
        s.errors.len()
    );
    let _ = writeln!(o, "| wall time | {:.0} s |\n", s.wall.as_secs_f64());
    if !s.assembled.is_empty() {
        let _ = writeln!(o, "## How nvcc-orion put each cubin together\n");
        let _ = writeln!(
            o,
            "| mode | assembly (the report's) | cubins |\n|---|---|---|"
        );
        for ((mode, how), n) in &s.assembled {
            let _ = writeln!(o, "| {mode} | {how} | {n} |");
        }
        o.push('\n');
    }
    let _ = writeln!(o, "## Mismatches by kind\n");
    if s.mismatches.is_empty() {
        let _ = writeln!(o, "None.\n");
    } else {
        let _ = writeln!(
            o,
            "| mode | kind | findings | seeds | example |\n|---|---|---|---|---|"
        );
        for ((mode, kind), ms) in kinds(&s.mismatches) {
            let mut seeds: Vec<u64> = ms.iter().map(|m| m.seed).collect();
            seeds.sort();
            seeds.dedup();
            let ex = ms[0];
            let detail: String = ex.detail.chars().take(200).collect();
            let _ = writeln!(
                o,
                "| {mode} | {kind} | {} | {} | seed {} sm_{} {}: {} |",
                ms.len(),
                ranges(&seeds),
                ex.seed,
                ex.arch,
                ex.kernel.as_deref().unwrap_or("module"),
                detail.replace('|', "\\|").replace('\n', " ")
            );
        }
        o.push('\n');
    }
    if !s.errors.is_empty() {
        let _ = writeln!(o, "## Not checked\n");
        for (seed, arch, e) in s.errors.iter().take(20) {
            let e: String = e.chars().take(200).collect();
            let _ = writeln!(o, "- seed {seed} sm_{arch}: {}", e.replace('\n', " "));
        }
        o.push('\n');
    }
    for (kind, seed, arch, src) in &s.reduced {
        let _ = writeln!(
            o,
            "## Reduced: {kind} (seed {seed}, sm_{arch})\n\n```cuda\n{src}```\n"
        );
    }
    let _ = writeln!(o, "## Feature coverage (programs using each)\n");
    let _ = writeln!(o, "| feature | programs |\n|---|---|");
    for f in crate::features::ALL {
        let _ = writeln!(o, "| {f} | {} |", s.features.get(f).copied().unwrap_or(0));
    }
    o
}

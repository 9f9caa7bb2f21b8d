//! Which steps of nvcc's plan may run side by side (issue 47). Each architecture's front end
//! (its `gcc -E -D__CUDA_ARCH__=...` and `cicc`) and then its ptxas step read only what the
//! steps before them wrote, so the chains of two architectures are independent, yet nvcc
//! lists them one after another.
//!
//! The plan is cut into stretches of consecutive steps that may overlap at all
//! ([`may_overlap`]: preprocessing to a file, `cicc`, ptxas); every other step (`cudafe++`,
//! `fatbinary`, `rm`, the host compile, the dependency file) stays a fence that waits for
//! everything before it. Within a stretch, the steps fall into groups by the files they name:
//! a step joins the group of every earlier step that writes a file it names, or that names a
//! file it writes. The group holding a stretch's first step stays on the driver's thread; each
//! other group is a [`Chain`] that may run on a thread of its own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::dryrun::{RunKind, Step};

/// Steps that run in plan order on a thread of their own, beside the driver's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// The plan index of its stretch's first step, where the chain is started.
    pub(crate) start_at: usize,
    /// Its steps' plan indices, ascending.
    pub(crate) steps: Vec<usize>,
}

/// The plan's chains, in plan order, for a replay that runs in `cwd`.
pub(crate) fn side_chains(steps: &[Step], cwd: &Path) -> Vec<Chain> {
    let mut chains = Vec::new();
    for stretch in stretches(steps) {
        let mut groups = groups(steps, &stretch, cwd).into_iter();
        // The first group holds the stretch's first step: the driver runs it, as nvcc would.
        groups.next();
        chains.extend(groups.map(|steps| Chain {
            start_at: stretch[0],
            steps,
        }));
    }
    chains
}

/// Whether a step may run beside others: one whose files are all known from its arguments.
/// A preprocessing run that writes dependency output (`-M...`) names more than it shows.
pub(crate) fn may_overlap(step: &Step) -> bool {
    match step {
        Step::Run { kind, argv, .. } => match kind {
            RunKind::Ptxas | RunKind::FrontEnd { .. } => true,
            RunKind::Preprocess { output: Some(_) } => !argv.iter().any(|a| a.starts_with("-M")),
            _ => false,
        },
        _ => false,
    }
}

/// The runs of two or more consecutive steps that may overlap.
fn stretches(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if may_overlap(step) {
            current.push(i);
            continue;
        }
        if current.len() > 1 {
            out.push(std::mem::take(&mut current));
        }
        current.clear();
    }
    if current.len() > 1 {
        out.push(current);
    }
    out
}

/// What a step names, and which of those it writes.
struct Files {
    named: BTreeSet<PathBuf>,
    written: BTreeSet<PathBuf>,
}

/// Options whose value is a file the tool writes: `-o` for every tool; `cicc`'s generated
/// C, stub and device files.
const WRITES: [&str; 5] = [
    "-o",
    "--output-file",
    "--gen_c_file_name",
    "--stub_file_name",
    "--gen_device_file_name",
];

impl Files {
    fn of(argv: &[String], cwd: &Path) -> Files {
        let mut written = BTreeSet::new();
        for pair in argv.windows(2) {
            let writes = WRITES.contains(&pair[0].as_str())
                // `cudafe++` writes the module id; `cicc` only reads it.
                || (pair[0] == "--module_id_file_name"
                    && argv.iter().any(|a| a == "--gen_module_id_file"));
            if writes {
                written.insert(cwd.join(&pair[1]));
            }
        }
        let mut named: BTreeSet<PathBuf> =
            super::files_of(argv).iter().map(|f| cwd.join(f)).collect();
        named.extend(written.iter().cloned());
        Files { named, written }
    }

    /// Whether this step, later in the plan, must wait for `earlier`.
    fn depends_on(&self, earlier: &Files) -> bool {
        !self.named.is_disjoint(&earlier.written) || !self.written.is_disjoint(&earlier.named)
    }
}

/// The stretch's steps grouped by dependence, each group ascending, the groups in the order
/// of their first steps.
fn groups(steps: &[Step], stretch: &[usize], cwd: &Path) -> Vec<Vec<usize>> {
    let files: Vec<Files> = stretch
        .iter()
        .map(|&i| match &steps[i] {
            Step::Run { argv, .. } => Files::of(argv, cwd),
            _ => unreachable!("a stretch holds only Run steps"),
        })
        .collect();
    // group[k]: the group of the stretch's k-th step, by the position of its first step.
    let mut group: Vec<usize> = Vec::with_capacity(stretch.len());
    for (k, f) in files.iter().enumerate() {
        let joined: BTreeSet<usize> = (0..k)
            .filter(|&e| f.depends_on(&files[e]))
            .map(|e| group[e])
            .collect();
        let into = joined.first().copied().unwrap_or(k);
        for g in group.iter_mut() {
            if joined.contains(g) {
                *g = into;
            }
        }
        group.push(into);
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut firsts: Vec<usize> = Vec::new();
    for (k, &g) in group.iter().enumerate() {
        match firsts.iter().position(|&f| f == g) {
            Some(at) => out[at].push(stretch[k]),
            None => {
                firsts.push(g);
                out.push(vec![stretch[k]]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Step {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        Step::Run {
            kind: RunKind::of(&argv),
            line: line.to_string(),
            argv,
        }
    }

    /// nvcc's plan for `-gencode` sm_80 and sm_90 (options shortened).
    fn two_arches() -> Vec<Step> {
        vec![
            run("gcc -E -x c++ a.cu -o /t/x-5.cpp4.ii"),
            run(
                "cudafe++ --gen_c_file_name /t/x-6.cudafe1.cpp --gen_module_id_file --module_id_file_name /t/x-4.module_id /t/x-5.cpp4.ii",
            ),
            run(
                "gcc -D__CUDA_ARCH__=800 -E -x c++ -include cuda_runtime.h a.cu -o /t/x-8.compute_80.cpp1.ii",
            ),
            run(
                "cicc -arch compute_80 --include_file_name x-3.fatbin.c --module_id_file_name /t/x-4.module_id --gen_c_file_name /t/x-7.compute_80.cudafe1.c --stub_file_name /t/x-7.compute_80.cudafe1.stub.c /t/x-8.compute_80.cpp1.ii -o /t/x-7.compute_80.ptx",
            ),
            run("ptxas -arch=sm_80 -m64 /t/x-7.compute_80.ptx -o /t/x-9.compute_80.cubin"),
            run(
                "gcc -D__CUDA_ARCH__=900 -E -x c++ -include cuda_runtime.h a.cu -o /t/x-10.compute_90.cpp1.ii",
            ),
            run(
                "cicc -arch compute_90 --include_file_name x-3.fatbin.c --module_id_file_name /t/x-4.module_id --gen_c_file_name /t/x-6.compute_90.cudafe1.c --stub_file_name /t/x-6.compute_90.cudafe1.stub.c /t/x-10.compute_90.cpp1.ii -o /t/x-6.compute_90.ptx",
            ),
            run("ptxas -arch=sm_90 -m64 /t/x-6.compute_90.ptx -o /t/x-11.compute_90.cubin"),
            run(
                "fatbinary -64 --image3=kind=elf,sm=80,file=/t/x-9.compute_80.cubin --embedded-fatbin=/t/x-3.fatbin.c",
            ),
        ]
    }

    #[test]
    fn each_further_architecture_is_a_chain_of_its_own() {
        let steps = two_arches();
        assert_eq!(
            side_chains(&steps, Path::new("/w")),
            vec![Chain {
                start_at: 2,
                steps: vec![5, 6, 7]
            }]
        );
    }

    #[test]
    fn a_step_that_reads_what_another_writes_joins_its_chain() {
        let mut steps = two_arches();
        // sm_90's preprocessing now reads sm_80's PTX: one chain, on the driver's thread.
        steps[5] =
            run("gcc -D__CUDA_ARCH__=900 -E /t/x-7.compute_80.ptx -o /t/x-10.compute_90.cpp1.ii");
        assert!(side_chains(&steps, Path::new("/w")).is_empty());
        // A step that overwrites what an earlier one reads waits for it too.
        let mut steps = two_arches();
        steps[7] = run("ptxas -arch=sm_90 /t/x-6.compute_90.ptx -o /t/x-8.compute_80.cpp1.ii");
        assert!(side_chains(&steps, Path::new("/w")).is_empty());
    }

    #[test]
    fn relative_and_absolute_names_of_one_file_are_the_same_file() {
        let mut steps = two_arches();
        steps[5] =
            run("gcc -D__CUDA_ARCH__=900 -E x-7.compute_80.ptx -o /t/x-10.compute_90.cpp1.ii");
        assert!(side_chains(&steps, Path::new("/t")).is_empty());
        assert_eq!(side_chains(&steps, Path::new("/w")).len(), 1);
    }

    #[test]
    fn one_architecture_and_dependency_output_make_no_chain() {
        let steps = two_arches();
        assert!(side_chains(&steps[..5], Path::new("/w")).is_empty());
        let mut steps = two_arches();
        steps[5] = run("gcc -D__CUDA_ARCH__=900 -E -MD -MF d.d a.cu -o /t/x-10.compute_90.cpp1.ii");
        // The fenced step cuts the stretch: sm_90's cicc and ptxas form a stretch of their own,
        // which the driver runs.
        assert!(side_chains(&steps, Path::new("/w")).is_empty());
    }
}

//! Which steps of nvcc's plan may run side by side (issue 47). Each architecture's front end
//! (its `gcc -E -D__CUDA_ARCH__=...` and `cicc`) and then its ptxas step read only what the
//! steps before them wrote, so the chains of two architectures are independent, yet nvcc
//! lists them one after another; and `cudafe++` reads only the host preprocessing's output,
//! while the device preprocessing needs nothing of it (only `cicc` reads its module-id file).
//!
//! The plan is cut into stretches of consecutive steps that may overlap at all
//! ([`may_overlap`]: preprocessing to a file, `cudafe++`, `cicc`, ptxas); every other step
//! (`fatbinary`, `rm`, the host compile, the dependency file) stays a fence that waits for
//! everything before it. Within a stretch, a step depends on every earlier step that writes a
//! file it names, or that names a file it writes. The steps fall into groups, each run in plan
//! order: a step extends the group whose last step so far is its latest such dependency, else
//! it starts a group of its own; it waits for its dependencies in other groups
//! ([`Sides::waits`]). The group holding a stretch's first step stays on the driver's thread;
//! each other group is a [`Chain`] that may run on a thread of its own. Every wait names an
//! earlier step, and each thread runs its steps in plan order, so the earliest unfinished step
//! can always run: no set of threads waits on each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use super::dryrun::{RunKind, Step, tool_of};

/// Steps that run in plan order on a thread of their own, beside the driver's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// The plan index of its stretch's first step, where the chain is started.
    pub(crate) start_at: usize,
    /// Its steps' plan indices, ascending.
    pub(crate) steps: Vec<usize>,
}

/// The plan's side chains and the waits between groups.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Sides {
    /// The chains in the order they are offered a job slot: by stretch, and within one the
    /// last first. Without a slot a chain is run by the driver in plan order, so the chain it
    /// would reach last gains the most from starting at once (it is also the last
    /// architecture's, whose tuning ends the build when the architectures' rounds are alike).
    pub(crate) chains: Vec<Chain>,
    /// For a step, the steps of other groups it waits for (plan indices).
    pub(crate) waits: BTreeMap<usize, Vec<usize>>,
}

/// The plan's chains and waits, for a replay that runs in `cwd`.
pub(crate) fn side_chains(steps: &[Step], cwd: &Path) -> Sides {
    let mut sides = Sides::default();
    for stretch in stretches(steps) {
        let (groups, waits) = groups(steps, &stretch, cwd);
        sides.waits.extend(waits);
        // The first group holds the stretch's first step: the driver runs it, as nvcc would.
        sides
            .chains
            .extend(groups.into_iter().skip(1).rev().map(|steps| Chain {
                start_at: stretch[0],
                steps,
            }));
    }
    sides
}

/// Whether a step may run beside others: one whose files are all known from its arguments.
/// A preprocessing run that writes dependency output (`-M...`) names more than it shows.
pub(crate) fn may_overlap(step: &Step) -> bool {
    match step {
        Step::Run { kind, argv, .. } => match kind {
            RunKind::Ptxas | RunKind::FrontEnd { .. } => true,
            RunKind::Preprocess { output: Some(_) } => !argv.iter().any(|a| a.starts_with("-M")),
            // Its input, generated C, stub and module-id files are all named by its options.
            RunKind::Other => tool_of(argv) == Some("cudafe++"),
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

/// The stretch's steps grouped as the module docs say, each group ascending, the groups in
/// the order of their first steps; and each step's waits on other groups (plan indices).
fn groups(
    steps: &[Step],
    stretch: &[usize],
    cwd: &Path,
) -> (Vec<Vec<usize>>, BTreeMap<usize, Vec<usize>>) {
    let files: Vec<Files> = stretch
        .iter()
        .map(|&i| match &steps[i] {
            Step::Run { argv, .. } => Files::of(argv, cwd),
            _ => unreachable!("a stretch holds only Run steps"),
        })
        .collect();
    // group[k]: the group of the stretch's k-th step, by the position of its first step;
    // last[g]: the position of group g's last step so far.
    let mut group: Vec<usize> = Vec::with_capacity(stretch.len());
    let mut last: BTreeMap<usize, usize> = BTreeMap::new();
    let mut waits = BTreeMap::new();
    for (k, f) in files.iter().enumerate() {
        let deps: Vec<usize> = (0..k).filter(|&e| f.depends_on(&files[e])).collect();
        let into = deps
            .iter()
            .rev()
            .find(|&&e| last.get(&group[e]) == Some(&e))
            .map_or(k, |&e| group[e]);
        let elsewhere: Vec<usize> = deps
            .iter()
            .filter(|&&e| group[e] != into)
            .map(|&e| stretch[e])
            .collect();
        if !elsewhere.is_empty() {
            waits.insert(stretch[k], elsewhere);
        }
        group.push(into);
        last.insert(into, k);
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
    (out, waits)
}

/// Which steps of the replay have finished, shared by the driver and its chains' threads: a
/// step with waits ([`Sides::waits`]) starts once they have.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    finished: BTreeSet<usize>,
    /// A step failed (or the replay ended): nothing more starts.
    stopped: bool,
}

impl Progress {
    /// Step `step` has finished, its files written.
    pub(crate) fn finish(&self, step: usize) {
        self.lock().finished.insert(step);
        self.changed.notify_all();
    }

    /// Nothing more is to start: a step failed, or the replay is over.
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    /// Whether every step of `steps` has finished.
    pub(crate) fn finished(&self, steps: &[usize]) -> bool {
        let state = self.lock();
        steps.iter().all(|s| state.finished.contains(s))
    }

    /// Wait until every step of `steps` has finished: false if the replay stopped first.
    pub(crate) fn wait_for(&self, steps: &[usize]) -> bool {
        let mut state = self.lock();
        loop {
            if steps.iter().all(|s| state.finished.contains(s)) {
                return true;
            }
            if state.stopped {
                return false;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Stops a [`Progress`] when dropped: a replay that returns early (an error) releases every
/// chain waiting on a step it will not run, before the chains are joined.
pub(crate) struct StopOnDrop<'a>(pub(crate) &'a Progress);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Stops a [`Progress`] when its thread panics: a step that will never finish must not leave
/// the driver or a chain waiting for it (a hung build is worse than a failed one, which falls
/// back to plain nvcc).
pub(crate) struct StopOnPanic<'a>(pub(crate) &'a Progress);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_step_releases_whoever_waits_for_it() {
        let progress = Progress::default();
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let _stop = StopOnPanic(&progress);
                panic!("a step's thread panics before step 3 finishes");
            });
            assert!(!progress.wait_for(&[3]), "the wait ends, step 3 unfinished");
            assert!(worker.join().is_err());
        });
    }

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

    fn chains(sides: &Sides) -> Vec<(usize, Vec<usize>)> {
        sides
            .chains
            .iter()
            .map(|c| (c.start_at, c.steps.clone()))
            .collect()
    }

    #[test]
    fn each_architecture_is_a_chain_that_starts_beside_cudafe() {
        let sides = side_chains(&two_arches(), Path::new("/w"));
        // The driver keeps the host preprocessing and cudafe++; sm_90's chain is offered a
        // slot first (the driver would reach it last), then sm_80's; each cicc waits for
        // cudafe++'s module-id file.
        assert_eq!(chains(&sides), vec![(0, vec![5, 6, 7]), (0, vec![2, 3, 4])]);
        assert_eq!(sides.waits, BTreeMap::from([(3, vec![1]), (6, vec![1])]));
    }

    #[test]
    fn a_step_that_reads_what_another_writes_waits_for_it() {
        let mut steps = two_arches();
        // sm_90's preprocessing now reads sm_80's PTX: it follows it on sm_80's chain.
        steps[5] =
            run("gcc -D__CUDA_ARCH__=900 -E /t/x-7.compute_80.ptx -o /t/x-10.compute_90.cpp1.ii");
        // ptxas sm_80 is sm_80's last step so far: sm_90's chain is its own, and waits.
        let sides = side_chains(&steps, Path::new("/w"));
        assert_eq!(chains(&sides), vec![(0, vec![5, 6, 7]), (0, vec![2, 3, 4])]);
        assert_eq!(sides.waits.get(&5), Some(&vec![3]));
        // Right after cicc sm_80, it extends sm_80's chain instead.
        let mut steps = two_arches();
        steps[5] =
            run("gcc -D__CUDA_ARCH__=900 -E /t/x-7.compute_80.ptx -o /t/x-10.compute_90.cpp1.ii");
        steps.swap(4, 5);
        let sides = side_chains(&steps, Path::new("/w"));
        assert_eq!(
            sides.waits.get(&4),
            None,
            "it extends the chain of cicc sm_80"
        );
        // A step that overwrites what an earlier one reads waits for it too.
        let mut steps = two_arches();
        steps[7] = run("ptxas -arch=sm_90 /t/x-6.compute_90.ptx -o /t/x-8.compute_80.cpp1.ii");
        let sides = side_chains(&steps, Path::new("/w"));
        assert_eq!(sides.waits.get(&7), Some(&vec![2, 3]));
    }

    #[test]
    fn relative_and_absolute_names_of_one_file_are_the_same_file() {
        let mut steps = two_arches();
        steps[5] =
            run("gcc -D__CUDA_ARCH__=900 -E x-7.compute_80.ptx -o /t/x-10.compute_90.cpp1.ii");
        let waits = |cwd: &str| side_chains(&steps, Path::new(cwd)).waits.get(&5).cloned();
        assert_eq!(waits("/t"), Some(vec![3]));
        assert_eq!(waits("/w"), None);
    }

    #[test]
    fn one_architecture_and_dependency_output_fence_as_before() {
        let steps = two_arches();
        // One architecture: its chain still starts beside cudafe++.
        let sides = side_chains(&steps[..5], Path::new("/w"));
        assert_eq!(chains(&sides), vec![(0, vec![2, 3, 4])]);
        let mut steps = two_arches();
        steps[5] = run("gcc -D__CUDA_ARCH__=900 -E -MD -MF d.d a.cu -o /t/x-10.compute_90.cpp1.ii");
        // The fenced step cuts the plan: sm_90's cicc and ptxas form a stretch of their own,
        // which the driver runs, with nothing to wait for across groups.
        let sides = side_chains(&steps, Path::new("/w"));
        assert_eq!(chains(&sides), vec![(0, vec![2, 3, 4])]);
        assert_eq!(sides.waits, BTreeMap::from([(3, vec![1])]));
    }

    #[test]
    fn chains_after_cudafe_wait_for_it_and_not_for_each_other() {
        // `-MD`'s plan: the preprocessing runs come first, then cudafe++ and the two
        // architectures' cicc and ptxas, each cicc reading only cudafe++'s module id.
        let steps: Vec<Step> = [0, 1, 3, 4, 6, 7]
            .iter()
            .map(|&i| two_arches()[i].clone())
            .collect();
        let sides = side_chains(&steps, Path::new("/w"));
        assert_eq!(chains(&sides), vec![(0, vec![4, 5])]);
        assert_eq!(sides.waits, BTreeMap::from([(4, vec![1])]));
    }

    #[test]
    fn progress_releases_waiters_when_their_steps_finish_or_the_replay_stops() {
        let progress = Progress::default();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| progress.wait_for(&[1, 2]));
            progress.finish(1);
            assert!(!progress.finished(&[1, 2]));
            progress.finish(2);
            assert!(waiter.join().unwrap());
            let stopped = s.spawn(|| progress.wait_for(&[3]));
            drop(StopOnDrop(&progress));
            assert!(!stopped.join().unwrap());
        });
        assert!(progress.wait_for(&[]), "nothing to wait for");
    }
}

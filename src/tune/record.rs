//! What tuning one step gives: the report's record per kernel (`NVCC_ORION_REPORT`, one JSON
//! object per line; `explain` reads it back), the step's outcome and why tuning failed.

use super::candidates::{self, BlockFrom};
use super::ptx::Budget;
use super::select::Evaluated;
use super::variants::VariantError;
use crate::cubin::Cubin;

/// One kernel's record in the report (`NVCC_ORION_REPORT`, one JSON object per line).
#[derive(Debug, Clone)]
pub struct KernelRecord {
    pub arch: String,
    pub(crate) kernel: String,
    /// The cubin nvcc asked ptxas for: relative to where the step ran, or the file name of
    /// one of nvcc's temporaries (never a folder of the build machine).
    pub(crate) output: String,
    pub(crate) block_sizes: Vec<u32>,
    pub(crate) block_from: BlockFrom,
    /// The baseline first, then each budget tried that ptxas built.
    pub(crate) candidates: Vec<Evaluated>,
    /// Budgets not built: in the default mode, those whose optimistic bound on the gain was
    /// below the margin; under adapt/train, those no measurement needs (no warps to gain) or
    /// that the build's cost leaves out ([`super::plan`]).
    pub(crate) pruned: Vec<Pruned>,
    /// Index into `candidates`.
    pub(crate) chosen: usize,
    pub(crate) chosen_registers: u32,
    pub(crate) gain_percent: f64,
    pub(crate) reason: String,
    /// The SASS transform tried on this kernel and what came of it (the checker's verdict,
    /// or why the kernel was left alone).
    pub(crate) transform: Option<String>,
    /// The same outcome, structured, for the candidates table's checker column.
    pub(crate) verdict: Option<Verdict>,
    /// With [`crate::settings::Settings::keep_cubins`]: where each candidate's cubin was kept.
    pub(crate) cubins: Option<KeptCubins>,
    /// With a profile (`NVCC_ORION_PROFILE`) that measured this kernel: measured beside
    /// predicted per variant, and the predictor's rank error.
    pub(crate) measured: Option<super::guided::Measured>,
    /// Under `NVCC_ORION=adapt|train`: the variants embedded in the cubin beside the
    /// original ([`super::multi`]), variant 0 (the original name) first; empty otherwise.
    pub(crate) variants: Vec<Embedded>,
    /// How the step's tuned cubin was put together, when it is not ptxas's own (every such
    /// cubin passed the assembly check, [`crate::audit`]).
    pub(crate) assembly: Option<Assembly>,
    /// Under adapt/train: why the compile has no launch-time selector (`-flto`), when so.
    pub(crate) selector: Option<String>,
    /// When the kernel uses shared memory sized at launch: the bytes priced with every
    /// launch (`NVCC_ORION_DYNAMIC_SHARED`), or `"unknown"` (then its `warps_per_sm` count
    /// none of it, and its budget is ptxas's).
    pub(crate) dynamic_shared: Option<candidates::DynamicShared>,
    /// When ptxas's choice stays (nothing forced or held): the assumption that decided, so a
    /// user sees why nothing changed.
    pub(crate) kept_by: Option<Limit>,
    /// Where the model's bound pruned lower budgets (the default mode, a profile-guided
    /// build): the budgets a training run (`NVCC_ORION=train`) would build and measure.
    pub(crate) train_would_measure: Vec<Budget>,
}

/// What decided that a lower budget was not built, or that ptxas's choice stayed (the
/// report's `pruned[].limit` and `kept_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// A hardware limit: the budget buys no more resident warps (the architecture's
    /// occupancy limits) at the block size that decided; or no lower budget raises
    /// occupancy at all.
    NoOccupancyGain,
    /// The model's DRAM floor: every global byte a thread loads counted as DRAM traffic, no
    /// reuse between threads, warps or blocks.
    DramWithoutReuse,
    /// The model's issue bound: the warps' own instructions already fill the issue slots.
    Issue,
    /// The model's latency estimate: the warps the budget adds hide too little of it.
    Latency,
    /// The model's L1 or L2 bandwidth floor.
    L1,
    L2,
    /// Built and predicted, but no candidate clears the margin.
    BelowMargin,
    /// Under adapt/train: a budget the measured build's cost rule leaves out
    /// (docs/selector.md §Ranking).
    BuildCost,
    /// The descent ([`super::descent`]): not built, because the budget built above it did
    /// not improve on the best prediction built so far (under adapt/train: was predicted
    /// outside the variants' band of it).
    Stopped,
    /// The descent ([`super::descent`]): not built, because its bound (the most it can be
    /// predicted to gain) does not beat the best prediction built (under adapt/train: cannot
    /// come within the variants' band of it).
    Outbid,
    /// Under adapt/train: a variant built and ranked, but left out of the cubin by the
    /// per-step object-size cap ([`super::cap`]; an [`Embedded`]'s `left_out`).
    ObjectSize,
}

impl Limit {
    /// The limit a bound's deciding term names.
    pub(crate) fn of_term(t: crate::predict::price::Term) -> Limit {
        use crate::predict::price::Term;
        match t {
            Term::Dram => Limit::DramWithoutReuse,
            Term::Issue => Limit::Issue,
            Term::L1 => Limit::L1,
            Term::L2 => Limit::L2,
            // A bound is ptxas's own code priced alone: never held at a bound.
            Term::Latency | Term::Bound => Limit::Latency,
        }
    }
}

/// How the cubin that ships was put together (the report's `assembly`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Assembly {
    /// A whole-module variant built at exactly the chosen budgets.
    Variant,
    /// The chosen kernels spliced into ptxas's own cubin.
    Spliced,
    /// One more whole-module ptxas run at the chosen budgets.
    WholeModule,
    /// Under adapt/train: one more ptxas run with each variant's entry copied in
    /// ([`super::multi`]).
    MultiVariant,
    /// Under adapt/train: each variant's entry added to the tuned cubin from the cubin its
    /// candidate was built in ([`crate::cubin::entry`]), no ptxas run.
    VariantsAdded,
}

/// One variant of a multi-variant cubin (docs/selector.md §Variant names): which ranked
/// candidate it is, what the cubin says of it, or why it was left out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Embedded {
    /// `k` of `__orion_v<k>` (0: the original name).
    pub(crate) variant: u32,
    pub(crate) name: String,
    /// Index into the record's `candidates`.
    pub(crate) candidate: usize,
    /// As the cubin records it (those of the standalone candidate when dropped).
    pub(crate) registers: u32,
    pub(crate) frame_bytes: u32,
    pub(crate) spill_instructions: u32,
    /// Its code is byte for byte its standalone build's (absent when dropped).
    pub(crate) same_code: Option<bool>,
    /// Why it is not in the cubin: its build differed from the standalone candidate, or
    /// the object-size cap left it out.
    pub(crate) dropped: Option<String>,
    /// When a limit, not its build, kept it out of the cubin: which ([`Limit::ObjectSize`]).
    pub(crate) left_out: Option<Limit>,
}

/// What the checker said about the spill2smem rewrite of one kernel.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// The budget of the spill2smem candidate.
    pub(crate) budget: u32,
    pub(crate) proved: bool,
    /// The proof's summary, or why the rewrite was refused.
    pub(crate) detail: String,
}

/// Cubins kept for `explain --html` (paths).
#[derive(Debug, Clone)]
pub struct KeptCubins {
    /// One per candidate, in the record's order (the baseline first).
    pub(crate) candidates: Vec<String>,
    /// The spill2smem candidate's variant as ptxas made it, before the rewrite.
    pub(crate) before_rewrite: Option<String>,
}

/// A budget skipped before building: its gain if the variant had the baseline's own latency
/// and issue cycles per warp, only more warps (a lower budget adds spills; it does not make a
/// warp's own work shorter), was below the margin.
#[derive(Debug, Clone)]
pub(crate) struct Pruned {
    pub(crate) budget: Budget,
    /// The bound on the gain, in percent, worst case over the block sizes.
    pub(crate) bound_percent: f64,
    /// What decided: the bound's term at the block size where it is worst, no warps to gain
    /// there, or (adapt/train) the build's cost.
    pub(crate) limit: Limit,
}

/// What tuning did to one step.
#[derive(Debug, Default)]
pub struct Tuned {
    /// ptxas's diagnostics for the cubin that was kept (the final run's when it changed).
    pub(crate) stderr: Option<Vec<u8>>,
    pub(crate) records: Vec<KernelRecord>,
    pub(crate) changed: bool,
    /// Variants built, and how many came from the cache.
    pub(crate) built: usize,
    pub(crate) cached: usize,
    /// Warning lines (without the `nvcc-orion: warning: ` prefix), e.g. a profile ignored.
    pub(crate) warnings: Vec<String>,
    /// Lines for verbose mode (with their `nvcc-orion: ` prefix).
    pub(crate) notes: Vec<String>,
    /// The one warning line about damaged variant cache entries, if any: shown, never kept
    /// with a cached choice ([`super::choice`]).
    pub(crate) cache_warning: Option<String>,
    /// When what ships is exactly what one whole-module ptxas run makes at these budgets
    /// (none: ptxas's own cubin), so that a cached choice can stand for this search.
    pub(crate) one_run: Option<super::variants::Budgets>,
}

#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("cubin {0}: {1}")]
    Cubin(String, crate::cubin::CubinError),
    #[error(transparent)]
    Variant(#[from] VariantError),
    /// A file, folder or program of the step (`what`) could not be used.
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// A bug of ours (a panic while tuning), with its message.
    #[error("internal error: {0}")]
    Internal(String),
    #[error(
        "the final ptxas run gave kernel {0} different SASS from the variant that was evaluated"
    )]
    Mismatch(String),
    #[error("assembly check: {0}")]
    Audit(#[from] crate::audit::AuditError),
    /// A registered rewrite (its report name) failed where it had to hold.
    #[error("{rewrite}: {what}")]
    Transform { rewrite: &'static str, what: String },
    #[error(transparent)]
    Variants(#[from] VariantsRefused),
}

/// Why no multi-variant cubin was assembled (the plain tuned cubin ships instead).
#[derive(Debug, thiserror::Error)]
pub enum VariantsRefused {
    #[error("the module already has a kernel named {0}")]
    NameTaken(String),
    /// A kernel's code still differs from its standalone build on the last attempt.
    #[error("{kernel} still differs from its standalone build without the dropped variants: {why}")]
    StillDiffers { kernel: String, why: String },
    #[error("no attempt left")]
    NoAttemptLeft,
    /// An original kernel with no variant left to drop differs from what plain tune ships,
    /// and plain tune's copy of it could not be put in its place.
    #[error("original kernel {kernel} differs from what plain tune ships: {why}")]
    OriginalDiffers { kernel: String, why: String },
}

/// Records for the kernels of an architecture the tuner has no occupancy table for: ptxas's
/// own result, nothing tried.
pub fn untuned_records(baseline: &Cubin, arch_name: &str, out: &str) -> Vec<KernelRecord> {
    baseline
        .kernels()
        .iter()
        .filter_map(|f| {
            let info = baseline.function_info(&f.name)?;
            let registers = info.registers?;
            Some(KernelRecord {
                arch: arch_name.to_string(),
                kernel: f.name.clone(),
                output: out.to_string(),
                block_sizes: Vec::new(),
                block_from: candidates::BlockFrom::Assumed,
                candidates: vec![Evaluated {
                    budget: None,
                    registers,
                    spill_instructions: info.spill_instructions,
                    frame_bytes: info.frame_size.unwrap_or(0),
                    static_shared: info.static_shared,
                    ..Evaluated::default()
                }],
                pruned: Vec::new(),
                chosen: 0,
                chosen_registers: registers,
                gain_percent: 0.0,
                reason: format!(
                    "not tuned: no occupancy table for {arch_name} (its limits are not in the \
                     tuner's verified data); ptxas's own code kept"
                ),
                transform: None,
                verdict: None,
                cubins: None,
                measured: None,
                variants: Vec::new(),
                assembly: None,
                selector: None,
                dynamic_shared: None,
                kept_by: None,
                train_would_measure: Vec::new(),
            })
        })
        .collect()
}

//! The report's schema: one JSON object a line in `NVCC_ORION_REPORT`, either a kernel's
//! [`Record`] (what the tuner tried and chose) or a [`PassedThrough`] compile. The tuner writes
//! these types, `explain` (src/report) and the program generator's harness read them back.
//!
//! Reading is tolerant of reports from other nvcc-orion versions: every field an older version
//! did not write takes its default (`#[serde(default)]`), fields this version does not know are
//! ignored, and the kebab-case names of [`Limit`], [`Assembly`], [`BlockFrom`], [`Level`] and
//! [`Term`] keep a name this version does not know (`Other`) instead of failing the line.
//!
//! Writing keeps the bytes the report has always had: fields in this order, optional ones left
//! out when absent (`skip_serializing_if`), `unit` last.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One line of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Line {
    /// A compile passed to nvcc untuned (no kernel of its own).
    Passed(PassedThrough),
    /// One kernel on one architecture.
    Kernel(Box<Record>),
}

impl Line {
    /// The line from its JSON: a `passed_through` object, else a kernel's record. The error
    /// names the field that does not read (an untagged enum's would not).
    pub fn from_value(v: Value) -> Result<Line, serde_json::Error> {
        if v.get("passed_through").is_some() {
            serde_json::from_value(v).map(Line::Passed)
        } else {
            serde_json::from_value(v).map(|r| Line::Kernel(Box::new(r)))
        }
    }

    /// One line of a report file.
    pub fn parse(text: &str) -> Result<Line, serde_json::Error> {
        Line::from_value(serde_json::from_str(text)?)
    }

    /// The kernel's record, `None` for a passed-through compile.
    pub fn kernel(&self) -> Option<&Record> {
        match self {
            Line::Kernel(r) => Some(r),
            Line::Passed(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Line, D::Error> {
        Line::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A compile nvcc-orion passed to nvcc untuned although it builds device code (`-G`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassedThrough {
    #[serde(default)]
    pub inputs: Vec<String>,
    pub passed_through: String,
}

/// One kernel's record: the candidates built, those pruned, the choice and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Record {
    pub arch: String,
    pub kernel: String,
    /// The cubin nvcc asked ptxas for: relative to where the step ran, or the file name of
    /// one of nvcc's temporaries.
    pub output: String,
    /// `"file"` for the records `explain` makes of an already built file (never written to a
    /// report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub block_sizes: Vec<u32>,
    pub block_from: BlockFrom,
    /// The baseline first, then each budget tried that ptxas built.
    pub candidates: Vec<Candidate>,
    /// Budgets not built.
    pub pruned: Vec<Pruned>,
    /// Index into `candidates`.
    pub chosen: usize,
    pub chosen_registers: u32,
    pub gain_percent: f64,
    pub reason: String,
    /// The SASS rewrite tried on this kernel and what came of it, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
    /// The same outcome, structured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cubins: Option<KeptCubins>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Embedded>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assembly: Option<Assembly>,
    /// Under adapt/train: why the compile has no launch-time selector, when so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_shared: Option<DynamicShared>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_by: Option<Limit>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub train_would_measure: Vec<Budget>,
    /// The translation unit, when the step knew it (always the last field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Record {
    /// The shipped candidate (the baseline when `chosen` is out of range).
    pub fn chosen_candidate(&self) -> Option<&Candidate> {
        self.candidates
            .get(self.chosen)
            .or_else(|| self.candidates.first())
    }

    /// ptxas's own choice.
    pub fn baseline(&self) -> Option<&Candidate> {
        self.candidates.first()
    }

    /// A record of an already built file (one candidate: the code it holds).
    pub fn is_built_file(&self) -> bool {
        self.source.as_deref() == Some("file")
    }
}

/// One candidate: its budget and what ptxas and the model made of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Candidate {
    /// `None` (JSON `null`): ptxas's own choice.
    pub budget: Option<Budget>,
    pub registers: u32,
    pub spill_instructions: u32,
    pub frame_bytes: u32,
    pub static_shared: u64,
    pub warps_per_sm: Vec<u32>,
    /// Per block size; `None`: cannot launch.
    pub cycles_per_warp: Vec<Option<f64>>,
    pub latency: f64,
    pub issue: f64,
    pub local_accesses: f64,
    pub bytes: Traffic,
    pub memory: Vec<Option<MemoryTerms>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_percent: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub measured_only: bool,
}

/// A register budget as the report writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// `.maxnreg`, or the registers a rewrite brings the kernel to.
    pub regs: u32,
    pub smem_spill: bool,
    /// Made by the `spill2smem` rewrite (reports before issue 50 named the field by the
    /// rewrite's old name: still read).
    #[serde(skip_serializing_if = "std::ops::Not::not", alias = "spill_to_shared")]
    pub spill2smem: bool,
    /// Made by `regdem`, from ptxas's build at this many registers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regdem_from: Option<u32>,
}

/// Which of our SASS rewrites made a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    Spill2Smem,
    /// `regdem` of ptxas's build at `from` registers.
    Regdem {
        from: u32,
    },
}

impl Rewrite {
    /// The rewrite's one name (its key on the command line, in reports and in messages).
    pub fn key(&self) -> &'static str {
        match self {
            Rewrite::Spill2Smem => "spill2smem",
            Rewrite::Regdem { .. } => "regdem",
        }
    }
}

/// The name each rewrite's notes in [`Record::transform`] began with in reports written before
/// issue 50 (`<name> at <regs>: ...`), by key: such reports still read.
const OLD_NOTE_NAMES: &[(&str, &str)] = &[
    ("spill2smem", "spill → shared"),
    ("regdem", "register demotion"),
];

/// The names the notes of the rewrite `key` begin with in [`Record::transform`]: the key,
/// then the name reports before issue 50 wrote.
pub fn note_names(key: &str) -> impl Iterator<Item = &str> {
    let old = OLD_NOTE_NAMES
        .iter()
        .filter(move |(k, _)| *k == key)
        .map(|(_, old)| *old);
    std::iter::once(key).chain(old)
}

impl Budget {
    /// The rewrite that made this budget, `None` for ptxas alone.
    pub fn rewrite(&self) -> Option<Rewrite> {
        if self.spill2smem {
            Some(Rewrite::Spill2Smem)
        } else {
            self.regdem_from.map(|from| Rewrite::Regdem { from })
        }
    }

    /// The `.maxnreg` ptxas compiled this budget's code with (a rewrite's own).
    pub fn ptxas_regs(&self) -> u32 {
        self.regdem_from.unwrap_or(self.regs)
    }
}

/// Loop-weighted bytes per warp to global, local and shared memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Traffic {
    pub global: f64,
    pub local: f64,
    pub shared: f64,
}

/// A candidate's memory terms at one block size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryTerms {
    pub working_set: u64,
    pub l1_bytes: u32,
    pub spills_hit: Level,
    pub l1_hit: f64,
    pub l2_hit: f64,
    pub latency: f64,
    pub issue: f64,
    pub l1: f64,
    pub l2: f64,
    pub dram: f64,
    pub l2_bytes: f64,
    pub dram_bytes: f64,
    pub bound_by: Term,
    pub own_cycles: f64,
}

/// A budget not built, and what decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pruned {
    pub budget: Budget,
    pub bound_percent: f64,
    /// Absent in reports from before the typed limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
}

/// What the checker said about the spill2smem rewrite of one kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Verdict {
    pub budget: u32,
    pub proved: bool,
    pub detail: String,
}

/// Cubins kept for `explain --html` (paths).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeptCubins {
    /// One per candidate, in the record's order.
    pub candidates: Vec<String>,
    /// The spill2smem candidate as ptxas made it, before the rewrite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_rewrite: Option<String>,
}

/// What a profile measured of one kernel, beside what the model predicted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Measured {
    pub profile: String,
    pub configurations: usize,
    pub variants: Vec<MeasuredVariant>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winner: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank_error: Option<u32>,
}

/// One variant, measured beside predicted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MeasuredVariant {
    pub variant: u32,
    pub name: String,
    pub candidate: usize,
    pub registers: u32,
    pub cycles_per_warp: Vec<Option<f64>>,
    /// `None` (JSON `null`): not measured at every configuration.
    pub measured_us: Option<f64>,
}

/// One variant of a multi-variant cubin, or why it was left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Embedded {
    pub variant: u32,
    pub name: String,
    /// Index into the record's `candidates`.
    pub candidate: usize,
    pub registers: u32,
    pub frame_bytes: u32,
    pub spill_instructions: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_code: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// When a limit, not its build, kept it out of the cubin: which (`object-size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<Limit>,
}

/// Shared memory a kernel sizes at launch: the bytes given, or `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamicShared {
    Given(u32),
    Unknown,
}

impl Serialize for DynamicShared {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DynamicShared::Given(n) => s.serialize_u32(*n),
            DynamicShared::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for DynamicShared {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DynamicShared, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map_or(DynamicShared::Unknown, DynamicShared::Given),
            _ => DynamicShared::Unknown,
        })
    }
}

/// Kebab-case names that read back whatever their spelling: a name this version does not know
/// is kept as `Other` (a report from another version), never an error.
macro_rules! named {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vm])* $v,)*
            /// A name this version does not know.
            Other(String),
        }

        impl $name {
            /// The name the report writes.
            pub fn name(&self) -> &str {
                match self {
                    $($name::$v => $s,)*
                    $name::Other(s) => s,
                }
            }

            pub fn from_name(s: &str) -> $name {
                match s {
                    $($s => $name::$v,)*
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::Other(String::new())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                Ok($name::from_name(&String::deserialize(d)?))
            }
        }
    };
}

named! {
    /// Where the block size came from.
    BlockFrom {
        /// `.reqntid`: the only size the kernel launches with.
        Reqntid = "reqntid",
        /// `__launch_bounds__`: its largest block.
        LaunchBounds = "launch-bounds",
        /// `--orion-block-size` / `NVCC_ORION_BLOCK_SIZE`.
        Setting = "setting",
        /// Nothing said: the default sizes.
        Assumed = "assumed",
    }
}

named! {
    /// What decided that a lower budget was not built, or that ptxas's choice stayed.
    Limit {
        /// No lower budget buys more resident warps.
        NoOccupancyGain = "no-occupancy-gain",
        /// The model's DRAM floor, no reuse between threads, warps or blocks.
        DramWithoutReuse = "dram-without-reuse",
        /// The warps' own instructions already fill the issue slots.
        Issue = "issue",
        /// The warps a lower budget adds hide too little latency.
        Latency = "latency",
        L1 = "l1",
        L2 = "l2",
        /// Built and predicted, but no candidate clears the margin.
        BelowMargin = "below-margin",
        /// Under adapt/train: left out by the measured build's cost rule.
        BuildCost = "build-cost",
        /// The default mode's descent: not built, the budget above it did not improve on the
        /// best built prediction.
        Stopped = "stopped",
        /// The default mode's descent: not built, its bound does not beat the best built
        /// prediction.
        Outbid = "outbid",
        /// Under adapt/train: a built variant left out of the cubin by the object-size cap.
        ObjectSize = "object-size",
    }
}

named! {
    /// How the cubin that ships was put together.
    Assembly {
        /// A whole-module variant built at exactly the chosen budgets.
        Variant = "variant",
        /// The chosen kernels spliced into ptxas's own cubin.
        Spliced = "spliced",
        /// One more whole-module ptxas run at the chosen budgets.
        WholeModule = "whole-module",
        /// Under adapt/train: one more ptxas run with each variant's entry copied in.
        MultiVariant = "multi-variant",
        /// Under adapt/train: each variant's entry added from the cubin it was built in.
        VariantsAdded = "variants-added",
    }
}

named! {
    /// The memory level most of a variant's local accesses hit.
    Level {
        L1 = "l1",
        L2 = "l2",
        Dram = "dram",
    }
}

named! {
    /// Which term sets a prediction.
    Term {
        Latency = "latency",
        Issue = "issue",
        L1 = "l1",
        L2 = "l2",
        Dram = "dram",
        /// Held at the bound of its budget.
        Bound = "bound",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"arch":"sm_90","kernel":"k","output":"a.cubin","block_sizes":[256],"block_from":"launch-bounds","candidates":[{"budget":null,"registers":64,"spill_instructions":0,"frame_bytes":0,"static_shared":0,"warps_per_sm":[32],"cycles_per_warp":[5828.4],"latency":1.5,"issue":1.0,"local_accesses":0.0,"bytes":{"global":4096.0,"local":0.0,"shared":0.0},"memory":[{"working_set":0,"l1_bytes":262144,"spills_hit":"l1","l1_hit":1.0,"l2_hit":1.0,"latency":180.0,"issue":40.0,"l1":128.0,"l2":346.0,"dram":1278.0,"l2_bytes":0.0,"dram_bytes":0.0,"bound_by":"dram","own_cycles":0.0}]},{"budget":{"regs":32,"smem_spill":false,"spill2smem":true},"registers":32,"spill_instructions":0,"frame_bytes":0,"static_shared":4096,"warps_per_sm":[64],"cycles_per_warp":[null],"latency":1.0,"issue":1.0,"local_accesses":0.0,"bytes":{"global":0.0,"local":0.0,"shared":0.0},"memory":[null],"bound_percent":12.5,"measured_only":true}],"pruned":[{"budget":{"regs":40,"smem_spill":false,"regdem_from":48},"bound_percent":1.0,"limit":"issue"}],"chosen":1,"chosen_registers":32,"gain_percent":44.5,"reason":"predicted 44.5% faster","verdict":{"budget":32,"proved":true,"detail":"ok"},"variants":[{"variant":0,"name":"k","candidate":1,"registers":32,"frame_bytes":0,"spill_instructions":0,"same_code":true}],"assembly":"spliced","dynamic_shared":"unknown","kept_by":"dram-without-reuse","train_would_measure":[{"regs":40,"smem_spill":false}],"unit":"a.cu"}"#;

    #[test]
    fn a_record_reads_and_writes_back_the_same_bytes() {
        let line = Line::parse(LINE).unwrap();
        let r = line.kernel().unwrap();
        assert_eq!(
            r.candidates[1].budget.unwrap().rewrite(),
            Some(Rewrite::Spill2Smem)
        );
        assert_eq!(
            r.pruned[0].budget.rewrite(),
            Some(Rewrite::Regdem { from: 48 })
        );
        assert_eq!(r.pruned[0].limit, Some(Limit::Issue));
        assert_eq!(r.assembly, Some(Assembly::Spliced));
        assert_eq!(r.dynamic_shared, Some(DynamicShared::Unknown));
        assert_eq!(serde_json::to_string(&line).unwrap(), LINE);
    }

    /// A report `nvcc-orion -c --orion-force=spill2smem` wrote before issue 50 (the
    /// rewrite's old field and note names) of `tests/kernels/explain/rewrite.cu` on sm_90.
    const BEFORE_ISSUE_50: &str =
        include_str!("../../../tests/kernels/explain/rewrite-before-issue50.jsonl");

    #[test]
    fn a_report_from_before_one_spelling_per_rewrite_reads() {
        let records: Vec<Line> = BEFORE_ISSUE_50
            .lines()
            .map(|l| Line::parse(l).unwrap())
            .collect();
        let chain = records
            .iter()
            .filter_map(Line::kernel)
            .find(|r| r.kernel == "_Z11s_chain_f32PKfPfi")
            .unwrap();
        let chosen = chain.chosen_candidate().unwrap().budget.unwrap();
        assert_eq!(chosen.rewrite(), Some(Rewrite::Spill2Smem));
        assert_eq!(Rewrite::Spill2Smem.key(), "spill2smem");
        // Written back under the one name.
        let out = serde_json::to_string(&chosen).unwrap();
        assert_eq!(out, r#"{"regs":32,"smem_spill":false,"spill2smem":true}"#);
        // The old notes are found under the key.
        let note = chain.transform.as_deref().unwrap();
        let found: Vec<&str> = note_names("spill2smem")
            .filter(|n| note.starts_with(&format!("{n} at 32: ")))
            .collect();
        assert_eq!(found.len(), 1, "{note}");
        assert_eq!(note_names("regdem").count(), 2);
        assert_eq!(note_names("unknown").collect::<Vec<_>>(), ["unknown"]);
    }

    #[test]
    fn an_older_or_newer_report_still_reads() {
        // Fields missing (an older version), unknown fields and names (a newer one).
        let r = Line::parse(
            r#"{"arch":"sm_80","kernel":"k","candidates":[{"budget":null,"registers":40}],"pruned":[{"budget":{"regs":32,"smem_spill":false},"bound_percent":2.5}],"kept_by":"bandwidth","assembly":"stitched","later":{"x":1}}"#,
        )
        .unwrap();
        let r = r.kernel().unwrap();
        assert_eq!(r.candidates[0].registers, 40);
        assert_eq!(r.pruned[0].limit, None);
        assert_eq!(r.kept_by.as_ref().map(Limit::name), Some("bandwidth"));
        assert_eq!(r.assembly, Some(Assembly::Other("stitched".into())));
        assert_eq!(r.block_from, BlockFrom::Other(String::new()));
    }

    #[test]
    fn a_passed_through_compile_and_a_bad_line() {
        let text = r#"{"inputs":["a.cu"],"passed_through":"-G (device debug)"}"#;
        let l = Line::parse(text).unwrap();
        assert!(l.kernel().is_none());
        assert_eq!(serde_json::to_string(&l).unwrap(), text);
        let e = Line::parse(r#"{"kernel":"k","chosen":"first"}"#).unwrap_err();
        assert!(e.to_string().contains("invalid type"), "{e}");
    }
}

//! Measured-selection profiles (issue 21): the JSON that the launch-time selector
//! (`runtime/orion_select.h`) writes at exit under `NVCC_ORION=train` to
//! `NVCC_ORION_PROFILE_OUT`, read back here for profile-guided builds. This module owns the
//! format, its validation (`check`: a file that does not read is refused whole, anything else
//! leaves out one kernel on one arch) and the choice of the measured winner per kernel and
//! arch; it never panics, and every error names the file and, where there is one, the entry.
//! Format and rules: `docs/selector.md`.

mod check;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `format` field of every profile.
pub(crate) const FORMAT: &str = "nvcc-orion-profile";
/// The only version this reader understands.
pub(crate) const VERSION: u64 = 1;
/// A kernel has at most this many variants (Orion keeps five candidates).
pub(crate) const MAX_VARIANTS: u32 = 5;
/// Bounds that no real measurement reaches (a day; a spread of a million times the median):
/// beyond them an entry is corrupt, and sums over entries stay finite.
const MAX_MEDIAN_US: f64 = 86_400e6;
const MAX_SPREAD: f64 = 1e6;
/// Profiles above this size are refused whole (one warning line, the model's choices stand):
/// a training run writes one entry per kernel, variant and launch configuration, about 300
/// bytes each, so this is some 900,000 entries, far beyond any real program's.
pub const MAX_PROFILE_BYTES: u64 = 256 << 20;
/// A thread has at most 255 registers and 512 KiB of local memory on every arch (the arch
/// table's `max_regs_per_thread` says the same; this leaf module reads no other, and
/// `tests/house/layers.rs` forbids the sideways arrow).
const MAX_REGISTERS: u32 = 255;
const MAX_LOCAL_BYTES: u32 = 512 * 1024;

/// One launch configuration as the selector keys it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchKey {
    /// The kernel's id: the FNV-1a hash of its mangled name (the same in every run; docs/selector.md).
    pub(crate) kernel_id: u32,
    /// The CUDA device ordinal.
    pub device: i32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared: u32,
}

/// The measurements of one variant at one launch configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The kernel's (mangled) name.
    pub kernel: String,
    /// The SASS arch that ran, `sm_90`.
    pub arch: String,
    /// The device's name as the driver reports it.
    pub device: String,
    pub key: LaunchKey,
    /// 0 is the kernel under its original name; 1.. the candidates in the model's order.
    pub variant: u32,
    /// The variant's entry-function name; empty when the runtime did not know it.
    #[serde(default)]
    pub variant_name: String,
    /// Registers per thread of the variant that ran, as the driver reported them
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`); absent in profiles of older runtimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    /// Local memory per thread of the variant that ran, bytes
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`); absent in profiles of older runtimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_bytes: Option<u32>,
    /// Launches made while the key was measured (warm-up included).
    pub launches: u64,
    /// Timed launches that completed.
    pub samples: u64,
    /// Median of the samples, microseconds.
    pub median_us: f64,
    /// Median absolute deviation over the median.
    pub spread: f64,
}

/// One variant of the build a profile is applied to, as [`Profile::winner`] checks the
/// profile against it: the entry-function name and, where known, what it uses.
pub trait BuildVariant {
    fn name(&self) -> &str;
    /// Registers per thread in this build; `None`: not compared.
    fn registers(&self) -> Option<u32> {
        None
    }
    /// Its stack frame in this build, bytes per thread; `None`: not compared.
    fn frame_bytes(&self) -> Option<u32> {
        None
    }
}

/// A variant known by name alone (nothing but the name is compared).
impl BuildVariant for &str {
    fn name(&self) -> &str {
        self
    }
}

/// A variant with the resources the build gave it (what profile-guided builds compare).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant<'a> {
    pub name: &'a str,
    pub registers: u32,
    pub frame_bytes: u32,
}

impl BuildVariant for Variant<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn registers(&self) -> Option<u32> {
        Some(self.registers)
    }
    fn frame_bytes(&self) -> Option<u32> {
        Some(self.frame_bytes)
    }
}

/// A validated profile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    /// Where it was read from (the name in errors).
    pub(crate) file: PathBuf,
    /// The entries a guided build can use, in file order: every entry but those of a
    /// (kernel, arch) with an unsound one.
    pub entries: Vec<Entry>,
    /// Each usable entry's position in the file (the index errors name).
    positions: Vec<usize>,
    /// The positions in `entries` of each (kernel, arch), so that a kernel's lookup reads
    /// its own entries only.
    by_kernel: BTreeMap<(String, String), Vec<usize>>,
    /// The entries left out, in file order, and where each kernel's are in that list.
    unsound: Vec<Unsound>,
    unsound_of: BTreeMap<String, Vec<usize>>,
    /// Every arch an entry names (usable or not).
    archs: BTreeSet<String>,
}

/// An entry a guided build cannot use, and why: it leaves out its kernel's measurements on its
/// arch, or on every arch where it names none that reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsound {
    /// Its position in the file's `entries`.
    pub index: usize,
    pub kernel: String,
    pub arch: Option<String>,
    pub problem: String,
}

/// The measured choice for one kernel and arch.
#[derive(Debug, Clone, PartialEq)]
pub struct Winner {
    pub variant: u32,
    /// Launch configurations (device, key) that every compared variant was measured at.
    pub configurations: usize,
    /// The winner's medians summed over those configurations, microseconds.
    pub(crate) total_us: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{}: cannot read the profile: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {bytes} bytes, above the {} MiB a profile may have", file.display(), MAX_PROFILE_BYTES >> 20)]
    TooLarge { file: PathBuf, bytes: u64 },
    #[error("{}: not JSON: {source}", file.display())]
    Json {
        file: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: {problem}", file.display())]
    Header { file: PathBuf, problem: String },
    /// An entry that does not read or is unsound: from [`Profile::parse`] when it names no
    /// kernel (the whole file is refused), else from [`Profile::winner`] for its kernel alone.
    #[error("{}: entry {index} ({kernel}): {problem}", file.display())]
    Entry {
        file: PathBuf,
        index: usize,
        kernel: String,
        problem: String,
    },
    /// The profile names a variant this build does not have, has under another name, or has
    /// with other registers (or a larger stack frame) than the one that ran.
    #[error("{}: entry {index} ({kernel}, {arch}): {detail}", file.display())]
    Mismatch {
        file: PathBuf,
        index: usize,
        kernel: String,
        arch: String,
        detail: String,
    },
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'a str,
    version: u64,
    entries: &'a [Entry],
}

impl Profile {
    /// Reads and validates `file`; a file above [`MAX_PROFILE_BYTES`] is refused unread.
    pub fn read(file: &Path) -> Result<Profile, ProfileError> {
        let read = |source| ProfileError::Read {
            file: file.to_path_buf(),
            source,
        };
        let bytes = std::fs::metadata(file).map_err(read)?.len();
        if bytes > MAX_PROFILE_BYTES {
            return Err(ProfileError::TooLarge {
                file: file.to_path_buf(),
                bytes,
            });
        }
        Profile::parse(&std::fs::read(file).map_err(read)?, file)
    }

    /// Validates `bytes`; `file` names them in errors. Linear in the entries. Only a file that
    /// does not read as a profile is an error; an entry that is unsound, or disagrees with
    /// another of its kernel and arch, leaves that kernel's measurements on that arch out
    /// ([`Profile::winner`] says why) and the others stand (`check`).
    pub fn parse(bytes: &[u8], file: &Path) -> Result<Profile, ProfileError> {
        Ok(Profile::new(
            file,
            check::usable(check::entries(bytes, file)?),
        ))
    }

    fn new(file: &Path, sorted: check::Sorted) -> Profile {
        let check::Sorted {
            usable,
            unsound,
            archs,
        } = sorted;
        let mut by_kernel: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        let (positions, entries): (Vec<usize>, Vec<Entry>) = usable.into_iter().unzip();
        for (i, e) in entries.iter().enumerate() {
            by_kernel
                .entry((e.kernel.clone(), e.arch.clone()))
                .or_default()
                .push(i);
        }
        let mut unsound_of: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, u) in unsound.iter().enumerate() {
            unsound_of.entry(u.kernel.clone()).or_default().push(i);
        }
        Profile {
            file: file.to_path_buf(),
            entries,
            positions,
            by_kernel,
            unsound,
            unsound_of,
            archs,
        }
    }

    /// The profile as the selector writes it (entries in their order).
    pub fn to_json(&self) -> String {
        let out = FileOut {
            format: FORMAT,
            version: VERSION,
            entries: &self.entries,
        };
        serde_json::to_string_pretty(&out).unwrap_or_default()
    }

    /// The measured winner for `kernel` on `arch`, given this build's variants of that kernel
    /// by number k (index 0 the original). Only entries of `arch` are read: a profile of
    /// several GPUs holds each arch's build of the kernel, other code with other registers.
    /// `None` when the profile has no comparable measurements of it. A
    /// [`ProfileError::Entry`] when an entry of it on `arch` was left out as unsound (the
    /// file's other kernels stand). An entry whose variant this build does not have, has under another
    /// name, or has with another register count than the one that ran is a
    /// [`ProfileError::Mismatch`]: the profile came from another build (names are index names,
    /// so changed sources can rank other candidates under the same names). Local bytes are
    /// compared one way: the driver's local size of a function covers at least its own stack
    /// frame, so a profile's below this build's frame is a mismatch.
    ///
    /// The winner is the variant with the least sum of medians over the launch configurations
    /// at which every compared variant was measured (ties: the lower index, the original
    /// first); a variant missing at some configuration is not compared.
    pub fn winner<V: BuildVariant>(
        &self,
        kernel: &str,
        arch: &str,
        variants: &[V],
    ) -> Result<Option<Winner>, ProfileError> {
        if let Some(u) = self.unsound_for(kernel, arch) {
            return Err(self.error(u));
        }
        // (device name, key) -> variant -> median
        let mut configs: BTreeMap<(&str, &LaunchKey), BTreeMap<u32, f64>> = BTreeMap::new();
        for (index, e) in self.of(kernel, arch) {
            if let Some(detail) = mismatch(e, variants.get(e.variant as usize)) {
                return Err(ProfileError::Mismatch {
                    file: self.file.clone(),
                    index,
                    kernel: e.kernel.clone(),
                    arch: e.arch.clone(),
                    detail,
                });
            }
            if e.samples > 0 {
                configs
                    .entry((e.device.as_str(), &e.key))
                    .or_default()
                    .insert(e.variant, e.median_us);
            }
        }
        let mut best: Option<Winner> = None;
        for (v, total) in totals(&configs, variants.len()) {
            if best.as_ref().is_none_or(|b| total < b.total_us) {
                best = Some(Winner {
                    variant: v,
                    configurations: configs.len(),
                    total_us: total,
                });
            }
        }
        Ok(best)
    }

    /// What [`Profile::winner`] compares, per variant of `kernel` on `arch` (this build has
    /// `n_variants`): its medians summed over the launch configurations, for each variant
    /// measured at all of them, in variant order. Call it after `winner` has accepted the
    /// build's names.
    pub fn totals(&self, kernel: &str, arch: &str, n_variants: usize) -> Vec<(u32, f64)> {
        let mut configs: BTreeMap<(&str, &LaunchKey), BTreeMap<u32, f64>> = BTreeMap::new();
        for (_, e) in self.of(kernel, arch) {
            if e.samples > 0 {
                configs
                    .entry((e.device.as_str(), &e.key))
                    .or_default()
                    .insert(e.variant, e.median_us);
            }
        }
        totals(&configs, n_variants)
    }

    /// The profile's file, as it was named.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The entries of `kernel` on `arch`, with their positions.
    fn of<'a>(&'a self, kernel: &str, arch: &str) -> impl Iterator<Item = (usize, &'a Entry)> {
        self.by_kernel
            .get(&(kernel.to_string(), arch.to_string()))
            .into_iter()
            .flatten()
            .map(|&i| (self.positions[i], &self.entries[i]))
    }

    /// The first entry that leaves out `kernel`'s measurements on `arch`, if any.
    fn unsound_for(&self, kernel: &str, arch: &str) -> Option<&Unsound> {
        self.unsound_of
            .get(kernel)
            .into_iter()
            .flatten()
            .map(|&i| &self.unsound[i])
            .find(|u| u.arch.as_deref().is_none_or(|a| a == arch))
    }

    /// Why `u` was left out, naming the file, the entry and its kernel.
    fn error(&self, u: &Unsound) -> ProfileError {
        ProfileError::Entry {
            file: self.file.clone(),
            index: u.index,
            kernel: u.kernel.clone(),
            problem: u.problem.clone(),
        }
    }

    /// The entries left out, in file order, each as the error that names it.
    pub fn unsound(&self) -> impl Iterator<Item = ProfileError> + '_ {
        self.unsound.iter().map(|u| self.error(u))
    }

    /// Every arch the profile's entries name (`sm_90`), usable or not: a guided build for an
    /// arch it lacks says so once (the profile of another GPU).
    pub fn archs(&self) -> &BTreeSet<String> {
        &self.archs
    }
}

/// How entry `e` disagrees with this build's variant of its number; `None` when it agrees.
fn mismatch<V: BuildVariant>(e: &Entry, built: Option<&V>) -> Option<String> {
    let Some(built) = built else {
        return Some(format!(
            "variant {} is `{}` in the profile but `(no such variant)` in this build",
            e.variant, e.variant_name
        ));
    };
    let name = built.name();
    if !e.variant_name.is_empty() && e.variant_name != name {
        return Some(format!(
            "variant {} is `{}` in the profile but `{name}` in this build",
            e.variant, e.variant_name
        ));
    }
    if let (Some(ran), Some(has)) = (e.registers, built.registers())
        && ran != has
    {
        return Some(format!(
            "variant {} (`{name}`) ran with {ran} registers but has {has} in this build",
            e.variant
        ));
    }
    if let (Some(ran), Some(frame)) = (e.local_bytes, built.frame_bytes())
        && ran < frame
    {
        return Some(format!(
            "variant {} (`{name}`) ran with {ran} bytes of local memory but has a {frame}-byte \
             stack frame in this build",
            e.variant
        ));
    }
    None
}

/// Per variant measured at every configuration of `configs`: the sum of its medians.
fn totals(
    configs: &BTreeMap<(&str, &LaunchKey), BTreeMap<u32, f64>>,
    n_variants: usize,
) -> Vec<(u32, f64)> {
    if configs.is_empty() {
        return Vec::new();
    }
    (0..n_variants.min(MAX_VARIANTS as usize) as u32)
        .filter_map(|v| {
            let total: Option<f64> = configs.values().map(|m| m.get(&v).copied()).sum();
            Some((v, total?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn entry(kernel: &str, grid: u32, variant: u32, name: &str, median: f64) -> Value {
        serde_json::json!({
            "kernel": kernel, "arch": "sm_90", "device": "GPU", "variant": variant,
            "key": {"kernel_id": 3, "device": 0, "grid": [grid, 1, 1], "block": [128, 1, 1], "shared": 0},
            "variant_name": name, "launches": 11, "samples": 10, "median_us": median, "spread": 0.01
        })
    }

    fn doc(entries: Vec<Value>) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"format": FORMAT, "version": 1, "entries": entries}))
            .unwrap()
    }

    fn parse(bytes: &[u8]) -> Result<Profile, ProfileError> {
        Profile::parse(bytes, Path::new("run.json"))
    }

    /// The error's one line, which must name the file.
    fn fails(bytes: &[u8]) -> String {
        let msg = parse(bytes).unwrap_err().to_string();
        assert!(msg.starts_with("run.json: "), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        msg
    }

    fn with(field: &str, value: Value) -> Vec<u8> {
        let mut e = entry("k", 64, 1, "k_v1", 50.0);
        e[field] = value;
        doc(vec![entry("k", 64, 0, "k", 60.0), e])
    }

    #[test]
    fn reads_what_the_selector_writes() {
        // the shape runtime/orion_select.h prints: fixed decimals, keys in this order
        let text = br#"{
  "format": "nvcc-orion-profile",
  "version": 1,
  "entries": [
    {"kernel": "_Z4walkPfi", "arch": "sm_90", "device": "NVIDIA H200", "key": {"kernel_id": 0, "device": 0, "grid": [64, 1, 1], "block": [128, 1, 1], "shared": 0}, "variant": 0, "variant_name": "_Z4walkPfi", "launches": 11, "samples": 10, "median_us": 104.500, "spread": 0.0048}
  ]
}
"#;
        let p = parse(text).unwrap();
        assert_eq!(p.entries.len(), 1);
        let e = &p.entries[0];
        assert_eq!(
            (e.kernel.as_str(), e.arch.as_str()),
            ("_Z4walkPfi", "sm_90")
        );
        assert_eq!(e.key.grid, [64, 1, 1]);
        assert_eq!((e.launches, e.samples), (11, 10));
        assert_eq!((e.median_us, e.spread), (104.5, 0.0048));
        let again = parse(p.to_json().as_bytes()).unwrap();
        assert_eq!(again.entries, p.entries);
        assert!(parse(&doc(vec![])).unwrap().entries.is_empty());
    }

    #[test]
    fn a_profile_above_the_cap_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_PROFILE_BYTES + 1).unwrap(); // sparse: nothing is written
        let e = Profile::read(&big).unwrap_err().to_string();
        assert!(e.ends_with("above the 256 MiB a profile may have"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn malformed_files_name_the_file() {
        assert!(fails(b"{\"format\": ").contains("not JSON"));
        assert!(fails(b"[]").contains("not an object"));
        assert!(fails(br#"{"format": "x", "version": 1, "entries": []}"#).contains("`format`"));
        assert!(
            fails(br#"{"format": "nvcc-orion-profile", "version": 2, "entries": []}"#)
                .contains("version 2")
        );
        assert!(fails(br#"{"format": "nvcc-orion-profile", "version": 1}"#).contains("`entries`"));
        assert!(
            fails(br#"{"format": "nvcc-orion-profile", "version": 1, "entries": [], "x": 1}"#)
                .contains("unknown field `x`")
        );
        let missing = Profile::read(Path::new("/nonexistent/run.json")).unwrap_err();
        assert!(matches!(missing, ProfileError::Read { .. }));
        assert!(
            missing
                .to_string()
                .starts_with("/nonexistent/run.json: cannot read")
        );
    }

    /// The first entry left out of a profile that reads, as its one line.
    fn left_out(bytes: &[u8]) -> (Profile, String) {
        let p = parse(bytes).unwrap_or_else(|e| panic!("{e}"));
        let msg = p.unsound().next().expect("an entry left out").to_string();
        assert!(msg.starts_with("run.json: entry "), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        (p, msg)
    }

    /// Two `static` kernels of one name in two files are measured apart by the runtime (two
    /// kernel ids): a build finds entries by name, so that kernel is left out, not summed.
    #[test]
    fn static_twins_leave_out_their_name() {
        let mut twin = entry("k", 64, 1, "k_v1", 40.0);
        twin["key"]["kernel_id"] = 7.into();
        let bytes = doc(vec![
            entry("k", 64, 0, "k", 60.0),
            entry("k", 64, 1, "k_v1", 50.0),
            twin,
            entry("other", 64, 0, "other", 60.0),
        ]);
        let (p, msg) = left_out(&bytes);
        assert!(
            msg.starts_with("run.json: entry 2 (k): kernel id 7 here but 3 in entry 0"),
            "{msg}"
        );
        let names = ["k", "k_v1"];
        assert!(p.winner("k", "sm_90", &names[..]).is_err());
        assert!(p.winner("other", "sm_90", &["other"][..]).is_ok());
    }

    #[test]
    fn a_bad_entry_leaves_out_its_kernel_on_its_arch() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with("kernel", "".into()), "`kernel` is empty"),
            (with("variant", 5.into()), "variant 5 is beyond"),
            (with("launches", 3.into()), "10 samples but only 3 launches"),
            (
                with("median_us", (-1.0).into()),
                "median_us -1 is not a time",
            ),
            (with("median_us", 1e300.into()), "is not a time"),
            (with("spread", (-0.5).into()), "spread -0.5"),
            (with("spread", 1e7.into()), "spread 10000000 is not"),
            (with("samples", "ten".into()), "invalid type"),
            (with("extra", 1.into()), "unknown field `extra`"),
            (
                with("registers", 256.into()),
                "registers 256 is beyond the 255",
            ),
            (with("registers", (-1).into()), "invalid value"),
            (
                with("local_bytes", (600 * 1024).into()),
                "local_bytes 614400 is beyond",
            ),
            (with("local_bytes", "none".into()), "invalid type"),
            (with("arch", 90.into()), "invalid type"),
        ];
        for (bytes, want) in &cases {
            let (p, msg) = left_out(bytes);
            assert!(msg.starts_with("run.json: entry 1 ("), "{msg}");
            assert!(msg.contains(want), "{msg} lacks {want}");
            assert_eq!(p.unsound().count(), 1, "{msg}");
            // The other entry, of the same kernel and arch, goes with it; an empty kernel
            // name is a kernel of its own (no build has it).
            if !msg.contains("`kernel` is empty") {
                assert!(p.entries.is_empty(), "{msg}");
                let err = p.winner("k", "sm_90", &["k", "k_v1"]).unwrap_err();
                assert_eq!(err.to_string(), msg);
            }
        }
        // An arch that is no sm_<number> leaves out that arch's entries, which no build has.
        let (p, msg) = left_out(&with("arch", "compute_90".into()));
        assert!(msg.contains("entry 1 (k): arch `compute_90`"), "{msg}");
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.winner("k", "sm_90", &["k"]).unwrap().unwrap().variant, 0);
        let mut e = entry("k", 64, 0, "k", 60.0);
        e["key"]["grid"][1] = 0.into();
        assert!(
            left_out(&doc(vec![e]))
                .1
                .contains("entry 0 (k): the grid or block has a zero")
        );
        let mut e = entry("k", 64, 0, "k", 60.0);
        e["samples"] = 0.into();
        assert!(
            left_out(&doc(vec![e]))
                .1
                .contains("a median without samples")
        );
        let dup = doc(vec![
            entry("k", 64, 0, "k", 60.0),
            entry("k", 64, 0, "k", 61.0),
        ]);
        assert!(left_out(&dup).1.contains("entry 1 (k): repeats entry 0"));
        let renamed = doc(vec![
            entry("k", 64, 1, "k_a", 60.0),
            entry("k", 32, 1, "k_b", 61.0),
        ]);
        assert!(
            left_out(&renamed)
                .1
                .contains("variant 1 is `k_b` here but `k_a` in entry 0")
        );
        let mut a = entry("k", 64, 1, "k_v1", 60.0);
        a["registers"] = 40.into();
        let mut b = entry("k", 32, 1, "k_v1", 61.0);
        b["registers"] = 32.into();
        assert!(
            left_out(&doc(vec![a, b]))
                .1
                .contains("entry 1 (k): variant 1 has 32 registers here but 40 in entry 0")
        );
    }

    #[test]
    fn only_an_entry_naming_no_kernel_refuses_the_file() {
        let not_object = doc(vec![entry("k", 64, 0, "k", 60.0), Value::from(3)]);
        assert!(fails(&not_object).contains("entry 1 (?): invalid type"));
        let mut nameless = entry("k", 64, 0, "k", 60.0);
        nameless.as_object_mut().unwrap().remove("kernel");
        assert!(fails(&doc(vec![nameless])).contains("entry 0 (?): missing field `kernel`"));
        let mut numbered = entry("k", 64, 0, "k", 60.0);
        numbered["kernel"] = 7.into();
        assert!(fails(&doc(vec![numbered])).contains("entry 0 (?): invalid type"));
    }

    #[test]
    fn one_kernels_bad_entry_leaves_the_others_and_its_other_archs() {
        let mut bad = entry("b", 64, 1, "b_v1", 50.0);
        bad["launches"] = 3.into();
        let mut b80 = entry("b", 64, 1, "b_v1", 30.0);
        b80["arch"] = "sm_80".into();
        let mut b80_0 = entry("b", 64, 0, "b", 40.0);
        b80_0["arch"] = "sm_80".into();
        let p = parse(&doc(vec![
            entry("a", 64, 0, "a", 60.0),
            entry("a", 64, 1, "a_v1", 50.0),
            entry("b", 64, 0, "b", 60.0),
            bad,
            b80_0,
            b80,
        ]))
        .unwrap();
        let w = p.winner("a", "sm_90", &["a", "a_v1"]).unwrap().unwrap();
        assert_eq!(w.variant, 1);
        assert_eq!(
            p.winner("b", "sm_90", &["b", "b_v1"])
                .unwrap_err()
                .to_string(),
            "run.json: entry 3 (b): 10 samples but only 3 launches"
        );
        let w = p.winner("b", "sm_80", &["b", "b_v1"]).unwrap().unwrap();
        assert_eq!((w.variant, w.total_us), (1, 30.0));
        // Entries keep their positions in the file: a mismatch names entry 5.
        let e = p.winner("b", "sm_80", &["b", "b_x"]).unwrap_err();
        assert!(
            e.to_string().starts_with("run.json: entry 5 (b, sm_80)"),
            "{e}"
        );
        // An entry whose arch does not read leaves out its kernel on every arch.
        let mut archless = entry("b", 64, 2, "b_v2", 50.0);
        archless.as_object_mut().unwrap().remove("arch");
        let mut b80 = entry("b", 64, 0, "b", 40.0);
        b80["arch"] = "sm_80".into();
        let p = parse(&doc(vec![entry("a", 64, 0, "a", 60.0), b80, archless])).unwrap();
        for arch in ["sm_80", "sm_90"] {
            let e = p.winner("b", arch, &["b"]).unwrap_err().to_string();
            assert!(e.contains("entry 2 (b): missing field `arch`"), "{e}");
        }
        assert_eq!(p.winner("a", "sm_90", &["a"]).unwrap().unwrap().variant, 0);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.archs().iter().collect::<Vec<_>>(), ["sm_80", "sm_90"]);
    }

    /// `entry` of `kernel` on `arch`, device `device` (its ordinal and name), with the
    /// registers and local bytes the driver reported.
    fn on(arch: &str, device: i32, variant: u32, registers: u32, median: f64) -> Value {
        let name = match variant {
            0 => "k".to_string(),
            v => format!("k__orion_v{v}"),
        };
        let mut e = entry("k", 64, variant, &name, median);
        e["arch"] = arch.into();
        e["device"] = format!("GPU {device}").into();
        e["key"]["device"] = device.into();
        e["registers"] = registers.into();
        e["local_bytes"] = 0.into();
        e
    }

    #[test]
    fn each_arch_reads_its_own_entries() {
        // One training run on an sm_80 and an sm_90 GPU: variant 1 is another build on each,
        // with other registers, and each arch has its own winner.
        let p = parse(&doc(vec![
            on("sm_80", 0, 0, 64, 100.0),
            on("sm_80", 0, 1, 40, 120.0),
            on("sm_90", 1, 0, 72, 100.0),
            on("sm_90", 1, 1, 48, 80.0),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.entries.len(), 4);
        assert_eq!(p.unsound().count(), 0);
        let sm80 = [built("k", 64, 0), built("k__orion_v1", 40, 0)];
        let sm90 = [built("k", 72, 0), built("k__orion_v1", 48, 0)];
        let w = p.winner("k", "sm_80", &sm80).unwrap().unwrap();
        assert_eq!((w.variant, w.configurations), (0, 1));
        let w = p.winner("k", "sm_90", &sm90).unwrap().unwrap();
        assert_eq!((w.variant, w.configurations, w.total_us), (1, 1, 80.0));
        // Each arch's registers are checked against that arch's build only.
        let e = p.winner("k", "sm_90", &sm80).unwrap_err().to_string();
        assert!(
            e.contains("(k, sm_90): variant 0 (`k`) ran with 72 registers but has 64"),
            "{e}"
        );
        // An arch the profile lacks: nothing measured, no error.
        assert_eq!(p.winner("k", "sm_100", &sm90).unwrap(), None);
        assert_eq!(p.archs().iter().collect::<Vec<_>>(), ["sm_80", "sm_90"]);
    }

    #[test]
    fn devices_of_one_arch_add_up_whatever_their_count() {
        // Four GPUs of one arch: each device's launch configuration counts.
        let mut entries = Vec::new();
        for device in 0..4 {
            entries.push(on("sm_90", device, 0, 72, 100.0));
            entries.push(on("sm_90", device, 1, 48, 90.0 + f64::from(device)));
        }
        let p = parse(&doc(entries)).unwrap();
        let build = [built("k", 72, 0), built("k__orion_v1", 48, 0)];
        let w = p.winner("k", "sm_90", &build).unwrap().unwrap();
        assert_eq!((w.variant, w.configurations, w.total_us), (1, 4, 366.0));
        // A profile of another device count (the second GPU alone) guides the same build.
        let p = parse(&doc(vec![
            on("sm_90", 1, 0, 72, 100.0),
            on("sm_90", 1, 1, 48, 91.0),
        ]))
        .unwrap();
        let w = p.winner("k", "sm_90", &build).unwrap().unwrap();
        assert_eq!((w.variant, w.configurations), (1, 1));
    }

    #[test]
    fn winner_is_the_least_summed_median() {
        let p = parse(&doc(vec![
            entry("k", 64, 0, "k", 100.0),
            entry("k", 64, 1, "k_r40", 80.0),
            entry("k", 64, 2, "k_r32", 70.0),
            entry("k", 256, 0, "k", 400.0),
            entry("k", 256, 1, "k_r40", 300.0),
            entry("k", 256, 2, "k_r32", 320.0),
            entry("other", 64, 0, "", 5.0),
        ]))
        .unwrap();
        let w = p
            .winner("k", "sm_90", &["k", "k_r40", "k_r32"])
            .unwrap()
            .unwrap();
        assert_eq!((w.variant, w.configurations, w.total_us), (1, 2, 380.0));
        // What was compared, per variant: the same sums.
        assert_eq!(
            p.totals("k", "sm_90", 3),
            [(0, 500.0), (1, 380.0), (2, 390.0)]
        );
        assert_eq!(p.totals("k", "sm_90", 2), [(0, 500.0), (1, 380.0)]);
        assert!(p.totals("absent", "sm_90", 3).is_empty());
        // unnamed variants are matched by index
        let w = p
            .winner("other", "sm_90", &["other", "x"])
            .unwrap()
            .unwrap();
        assert_eq!(w.variant, 0);
        assert_eq!(p.winner("k", "sm_80", &["k"]).unwrap(), None);
        assert_eq!(p.winner("absent", "sm_90", &["absent"]).unwrap(), None);
    }

    #[test]
    fn a_variant_missing_somewhere_is_not_compared() {
        let p = parse(&doc(vec![
            entry("k", 64, 0, "k", 100.0),
            entry("k", 64, 1, "k_r40", 10.0),
            entry("k", 256, 0, "k", 400.0),
            entry("k", 256, 2, "k_r32", 390.0),
        ]))
        .unwrap();
        let w = p
            .winner("k", "sm_90", &["k", "k_r40", "k_r32"])
            .unwrap()
            .unwrap();
        assert_eq!(w.variant, 0);
        // Only the original was measured at both configurations.
        assert_eq!(p.totals("k", "sm_90", 3), [(0, 500.0)]);
    }

    #[test]
    fn another_builds_profile_is_a_mismatch() {
        let p = parse(&doc(vec![
            entry("k", 64, 0, "k", 100.0),
            entry("k", 64, 2, "k_r32", 70.0),
        ]))
        .unwrap();
        let renamed = p
            .winner("k", "sm_90", &["k", "k_r40", "k_r24"])
            .unwrap_err();
        assert_eq!(
            renamed.to_string(),
            "run.json: entry 1 (k, sm_90): variant 2 is `k_r32` in the profile but `k_r24` in this build"
        );
        let fewer = p.winner("k", "sm_90", &["k"]).unwrap_err().to_string();
        assert!(
            fewer.contains("but `(no such variant)` in this build"),
            "{fewer}"
        );
    }

    /// An entry with the resources the selector records (registers, local bytes).
    fn ran(grid: u32, variant: u32, name: &str, median: f64, registers: u32, local: u32) -> Value {
        let mut e = entry("k", grid, variant, name, median);
        e["registers"] = registers.into();
        e["local_bytes"] = local.into();
        e
    }

    fn built(name: &str, registers: u32, frame_bytes: u32) -> Variant<'_> {
        Variant {
            name,
            registers,
            frame_bytes,
        }
    }

    #[test]
    fn resources_round_trip_and_are_optional() {
        let p = parse(&doc(vec![
            ran(64, 0, "k", 100.0, 32, 224),
            entry("k", 64, 1, "k_v1", 80.0),
        ]))
        .unwrap();
        let e = &p.entries;
        assert_eq!((e[0].registers, e[0].local_bytes), (Some(32), Some(224)));
        assert_eq!((e[1].registers, e[1].local_bytes), (None, None));
        let json = p.to_json();
        assert!(json.contains("\"registers\": 32"), "{json}");
        // an entry without them writes none (an older runtime's profile reads back the same)
        assert_eq!(json.matches("\"registers\"").count(), 1, "{json}");
        assert_eq!(parse(json.as_bytes()).unwrap().entries, p.entries);
    }

    #[test]
    fn the_build_must_have_the_registers_that_ran() {
        let p = parse(&doc(vec![
            ran(64, 0, "k", 100.0, 32, 224),
            ran(64, 1, "k_v1", 80.0, 40, 96),
            ran(64, 2, "k_v2", 90.0, 64, 0),
        ]))
        .unwrap();
        // The build that ran: the same registers (frames at most the local sizes).
        let same = [
            built("k", 32, 224),
            built("k_v1", 40, 0),
            built("k_v2", 64, 0),
        ];
        let w = p.winner("k", "sm_90", &same).unwrap().unwrap();
        assert_eq!(w.variant, 1);
        // Changed sources, another ranking under the same index names: refused, naming the
        // file, the entry, the kernel and both counts.
        let other = [
            built("k", 32, 224),
            built("k_v1", 64, 0),
            built("k_v2", 40, 96),
        ];
        let err = p.winner("k", "sm_90", &other).unwrap_err();
        assert!(matches!(err, ProfileError::Mismatch { index: 1, .. }));
        assert_eq!(
            err.to_string(),
            "run.json: entry 1 (k, sm_90): variant 1 (`k_v1`) ran with 40 registers but has 64 \
             in this build"
        );
        // Same registers, but this build's variant has a larger stack frame than ran.
        let spills = [
            built("k", 32, 224),
            built("k_v1", 40, 128),
            built("k_v2", 64, 0),
        ];
        assert_eq!(
            p.winner("k", "sm_90", &spills).unwrap_err().to_string(),
            "run.json: entry 1 (k, sm_90): variant 1 (`k_v1`) ran with 96 bytes of local memory \
             but has a 128-byte stack frame in this build"
        );
        // A profile without resources is matched by name alone, as before.
        let old = parse(&doc(vec![
            entry("k", 64, 0, "k", 100.0),
            entry("k", 64, 1, "k_v1", 80.0),
        ]))
        .unwrap();
        assert_eq!(
            old.winner("k", "sm_90", &other).unwrap().unwrap().variant,
            1
        );
    }
}

//! nvcc-orion's own settings: `NVCC_ORION_*` environment variables and `--orion-*` options
//! (the command line wins). None of them ever reaches nvcc.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Exec the real nvcc unchanged.
    Off,
    /// Split with `--dryrun` and replay every step, changing nothing.
    Replay,
    /// Replay, tuning each ptxas step.
    #[default]
    Tune,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    /// `NVCC_ORION_VERBOSE=1`: say on stderr what was done per invocation and kernel.
    pub verbose: bool,
    /// `NVCC_ORION_REPORT` / `--orion-report`: where to write the JSON report.
    pub(crate) report: Option<PathBuf>,
    /// `--orion-block-size=N` or `kernel:N` (repeatable) / `NVCC_ORION_BLOCK_SIZE`, in the
    /// order given (environment first); read with [`block_size_for`].
    pub(crate) block_sizes: Vec<(Option<String>, u32)>,
    /// `--orion-dynamic-shared=BYTES` or `kernel:BYTES` (repeatable) /
    /// `NVCC_ORION_DYNAMIC_SHARED`: the shared memory kernels size at launch (`extern
    /// __shared__`, Triton's `global_smem`), which ptxas never sees; read like the block sizes
    /// ([`block_size_for`]). A kernel that has some and is not given a size keeps ptxas's
    /// budget.
    pub(crate) dynamic_shared: Vec<(Option<String>, u32)>,
    /// `--orion-transforms=KEY,...` / `NVCC_ORION_TRANSFORMS`: the SASS rewrites the tuner may
    /// offer (`spill2smem`, `regdem`, ...: the keys of `transform::REGISTERED`, each rewrite
    /// proved by the checker), without repeats, in registration order. Off by default until the
    /// rewrites have run on a GPU (bench/gpu): a grown static shared size could also make a
    /// launch that asks for nearly all the dynamic shared memory fail, which no static check
    /// can rule out.
    pub(crate) transforms: Vec<String>,
    /// `--orion-force=KIND` (testing, and bench/gpu's exhaustive variants): `baseline`,
    /// `lowest` (the lowest budget that built), `budget:N` (the plain candidate at N
    /// registers), `pragma` (ptxas's shared-memory spilling candidate), `spill2smem` (its
    /// proved candidate), `regdem` (its lowest proved candidate), or `panic` (an internal
    /// error while tuning, to exercise the fallback).
    pub(crate) force: Option<Force>,
    /// `--orion-margin=PCT` / `NVCC_ORION_MARGIN`: the predicted gain a variant must clear to
    /// replace ptxas's own choice, in percent.
    pub(crate) margin_percent: f64,
    /// `--orion-search=descent|full` / `NVCC_ORION_SEARCH`: how the default mode searches a
    /// kernel's lower budgets (docs/DESIGN.md §Budgets at occupancy cliffs): `descent` (the
    /// default) builds them highest first and, once one beats ptxas's own code, stops at the
    /// first that does not improve on the best built; `full` builds every budget the model's bound keeps. adapt, train and a
    /// profile-guided build always build the full set.
    pub(crate) search: Search,
    /// Where built variants are cached (`NVCC_ORION_CACHE`, `off` for none).
    pub(crate) cache: Option<PathBuf>,
    /// `NVCC_ORION_KEEP_CUBINS=DIR` (set by `explain --html`): keep each kernel's candidate
    /// cubins there and name them in the report, so the page can show their SASS.
    pub(crate) keep_cubins: Option<PathBuf>,
    /// `NVCC_ORION_PROFILE=FILE` / `--orion-profile=FILE`: a training run's profile; the
    /// tuner ships each kernel's measured winner where the profile has one
    /// (`tune::guided`, docs/selector.md).
    pub(crate) profile: Option<ProfileSetting>,
    /// `NVCC_ORION=adapt|train` (tune mode with a launch-time selector): each tuned kernel
    /// ships its ranked variants as extra entries and the host object carries the selector
    /// (docs/selector.md).
    pub selector: Option<Selector>,
    /// `NVCC_ORION_CALIBRATION=FILE` / `--orion-calibration=FILE`: parameters `nvcc-orion
    /// calibrate` measured on a GPU; the predictor prices the architectures the file has a
    /// device of with them (`predict::calibration`). Default: the published parameters.
    pub(crate) calibration: Option<FileSetting>,
    /// `--orion-test-refuse-rewrite=KERNEL,...` (testing only, command line only): the
    /// assembly check is handed each named kernel's rewritten section with a register count
    /// below what its code names, so that it refuses that kernel's rewrite and the driver's
    /// per-kernel refusal can be tested on a real build. It never changes a kernel no
    /// rewrite made, and no environment variable sets it.
    pub(crate) refuse_in_check: Vec<String>,
    /// `--orion-test-perturb-original=KERNEL,...` (testing only, command line only): under
    /// adapt and train, the multi-variant cubin's copy of each named original kernel has one
    /// byte of its code changed before the checks, as if that build had compiled it apart
    /// from plain tune's (`tune::multi`), so that the per-kernel remedy can be tested on a
    /// real build; `KERNEL:check` changes an attribute only the assembly check compares.
    /// Like the refusal hook, no environment variable sets it.
    pub(crate) perturb_originals: Vec<String>,
}

/// What the selector compiled into an object does at launch time (docs/selector.md §Modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// Orion's runtime adaptation: measure the ranked alternatives in order, lock the best.
    Adapt,
    /// Round-robin every variant and write a profile at exit.
    Train,
}

impl Selector {
    /// The `NVCC_ORION` value that asks for it.
    pub fn name(self) -> &'static str {
        match self {
            Selector::Adapt => "adapt",
            Selector::Train => "train",
        }
    }
}

/// A file a setting names (a profile, a calibration): where it is and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileSetting {
    pub(crate) path: PathBuf,
    /// SHA-256 of its bytes when the settings were read (`unreadable` when it could not be
    /// read): what compiler caches hash, so an edited file is a miss.
    pub(crate) sha256: String,
}

/// The profile a build is guided by.
pub(crate) type ProfileSetting = FileSetting;

impl FileSetting {
    /// `path` made absolute (steps may run in other folders) and hashed.
    fn at(path: PathBuf) -> FileSetting {
        use sha2::{Digest, Sha256};
        let path = std::path::absolute(&path).unwrap_or(path);
        let sha256 = std::fs::read(&path).map_or_else(
            |_| "unreadable".to_string(),
            |b| {
                Sha256::digest(&b)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect()
            },
        );
        FileSetting { path, sha256 }
    }
}

/// The default margin: a predicted gain below this is within the model's noise.
pub(crate) const DEFAULT_MARGIN_PERCENT: f64 = 5.0;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::default(),
            verbose: false,
            report: None,
            block_sizes: Vec::new(),
            dynamic_shared: Vec::new(),
            transforms: Vec::new(),
            force: None,
            margin_percent: DEFAULT_MARGIN_PERCENT,
            search: Search::default(),
            cache: None,
            keep_cubins: None,
            profile: None,
            selector: None,
            calibration: None,
            refuse_in_check: Vec::new(),
            perturb_originals: Vec::new(),
        }
    }
}

/// How the default mode searches a kernel's lower budgets ([`Settings::search`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Search {
    /// Highest budget first, stopping at the first that does not improve on the best built.
    #[default]
    Descent,
    /// Every budget the model's bound keeps.
    Full,
}

impl Search {
    /// The value `--orion-search` and `NVCC_ORION_SEARCH` take for it.
    pub fn name(self) -> &'static str {
        match self {
            Search::Descent => "descent",
            Search::Full => "full",
        }
    }
}

/// `--orion-force=KIND`: which candidate the tuner must choose (testing, and bench/gpu's
/// exhaustive variants), read once here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Force {
    /// ptxas's own code.
    Baseline,
    /// The lowest budget that built.
    Lowest,
    /// The plain candidate at this many registers (1..=255).
    Budget(u32),
    /// ptxas's shared-memory spilling candidate.
    Pragma,
    /// The proved candidate of the rewrite with this key (`spill2smem`, `regdem`, ...).
    Rewrite(String),
    /// An internal error while tuning, to exercise the fallback.
    Panic,
}

impl Force {
    /// `v` as a force, the rewrites known by their `keys`; `None` when it is none.
    pub(crate) fn parse(v: &str, keys: &[&str]) -> Option<Force> {
        Some(match v {
            "baseline" => Force::Baseline,
            "lowest" => Force::Lowest,
            "pragma" => Force::Pragma,
            "panic" => Force::Panic,
            _ if keys.contains(&v) => Force::Rewrite(v.to_string()),
            _ => Force::Budget(
                v.strip_prefix("budget:")?
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=255).contains(n))?,
            ),
        })
    }
}

impl std::fmt::Display for Force {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Force::Baseline => f.write_str("baseline"),
            Force::Lowest => f.write_str("lowest"),
            Force::Budget(n) => write!(f, "budget:{n}"),
            Force::Pragma => f.write_str("pragma"),
            Force::Rewrite(key) => f.write_str(key),
            Force::Panic => f.write_str("panic"),
        }
    }
}

/// Environment variables that belong to nvcc-orion and are removed before running nvcc.
pub fn is_ours(var: &str) -> bool {
    var == "NVCC_ORION" || var.starts_with("NVCC_ORION_")
}

/// The block size the settings `entries` give `kernel`: a per-kernel entry (`kernel:N`) wins
/// over a global one (`N`); among entries of the same kind the last one given wins (the
/// command line after the environment, a later option after an earlier one). The one reading
/// every part of the tool uses.
pub(crate) fn block_size_for(entries: &[(Option<String>, u32)], kernel: &str) -> Option<u32> {
    let last = |want: Option<&str>| {
        entries
            .iter()
            .rev()
            .find(|(k, _)| k.as_deref() == want)
            .map(|(_, n)| *n)
    };
    last(Some(kernel)).or_else(|| last(None))
}

impl Settings {
    /// Read settings; returns them and one warning line per setting that was not understood
    /// (a typo must not break a build, but must not pass silently either). `transforms` are
    /// the keys of the registered rewrites in registration order (`transform::keys()`: this
    /// leaf cannot look them up itself), the names `--orion-transforms` and `--orion-force`
    /// accept.
    pub fn read(
        env: &dyn Fn(&str) -> Option<String>,
        orion_args: &[(String, Option<String>)],
        transforms: &[&str],
    ) -> (Settings, Vec<String>) {
        // "a, b or c", the way the warnings list the names they accept.
        let known = transforms.join(", ");
        let mut asked: BTreeSet<&str> = BTreeSet::new();
        let mut s = Settings {
            cache: cache_dir(env),
            ..Settings::default()
        };
        let mut warnings = Vec::new();
        let mut pairs: Vec<(String, Option<String>, &str)> = Vec::new();
        for (var, key) in [
            ("NVCC_ORION", "mode"),
            ("NVCC_ORION_VERBOSE", "verbose"),
            ("NVCC_ORION_REPORT", "report"),
            ("NVCC_ORION_BLOCK_SIZE", "block-size"),
            ("NVCC_ORION_DYNAMIC_SHARED", "dynamic-shared"),
            ("NVCC_ORION_FORCE", "force"),
            ("NVCC_ORION_MARGIN", "margin"),
            ("NVCC_ORION_SEARCH", "search"),
            ("NVCC_ORION_TRANSFORMS", "transforms"),
            ("NVCC_ORION_KEEP_CUBINS", "keep-cubins"),
            ("NVCC_ORION_PROFILE", "profile"),
            ("NVCC_ORION_CALIBRATION", "calibration"),
        ] {
            if let Some(v) = env(var).filter(|v| !v.is_empty()) {
                pairs.push((key.to_string(), Some(v), "environment"));
            }
        }
        pairs.extend(
            orion_args
                .iter()
                .map(|(k, v)| (k.clone(), v.clone(), "command line")),
        );
        for (key, value, origin) in pairs {
            let bad =
                |what: &str| format!("nvcc-orion: warning: ignoring {what} from the {origin}");
            match (key.as_str(), value.as_deref()) {
                ("mode", Some(v)) => match v {
                    "off" | "0" | "false" | "no" => (s.mode, s.selector) = (Mode::Off, None),
                    "replay" => (s.mode, s.selector) = (Mode::Replay, None),
                    "tune" | "on" | "1" | "true" | "yes" => {
                        (s.mode, s.selector) = (Mode::Tune, None)
                    }
                    "adapt" => (s.mode, s.selector) = (Mode::Tune, Some(Selector::Adapt)),
                    "train" => (s.mode, s.selector) = (Mode::Tune, Some(Selector::Train)),
                    _ => warnings.push(bad(&format!(
                        "unknown mode {v:?} (use off, replay, tune, adapt or train)"
                    ))),
                },
                ("off", None) => (s.mode, s.selector) = (Mode::Off, None),
                ("verbose", None) => s.verbose = true,
                ("verbose", Some(v)) => s.verbose = !matches!(v, "0" | "false" | "no" | "off"),
                ("report", Some(v)) => s.report = Some(PathBuf::from(v)),
                ("keep-cubins", Some(v)) => s.keep_cubins = Some(PathBuf::from(v)),
                ("profile", Some(v)) => s.profile = Some(ProfileSetting::at(PathBuf::from(v))),
                ("profile", None) => warnings.push(bad("--orion-profile without a file (use --orion-profile=FILE)")),
                // Restated by `output_options` for compiler caches only: the hash that counts
                // is the one of the file `--orion-profile` names, taken when it is read.
                ("profile-sha256", Some(_)) => {}
                ("calibration", Some(v)) => {
                    s.calibration = Some(FileSetting::at(PathBuf::from(v)))
                }
                ("calibration", None) => warnings.push(bad(
                    "--orion-calibration without a file (use --orion-calibration=FILE)",
                )),
                ("calibration-sha256", Some(_)) => {}
                ("block-size", Some(v)) => {
                    for item in v.split(',') {
                        let (kernel, n) = match item.rsplit_once(':') {
                            Some((k, n)) => (Some(k.to_string()), n),
                            None => (None, item),
                        };
                        match n.parse::<u32>() {
                            Ok(n) if (1..=1024).contains(&n) => s.block_sizes.push((kernel, n)),
                            _ => warnings.push(bad(&format!(
                                "block size {item:?} (use N or kernel:N, 1..1024)"
                            ))),
                        }
                    }
                }
                ("dynamic-shared", Some(v)) => {
                    for item in v.split(',') {
                        match per_kernel(item, MAX_DYNAMIC_SHARED) {
                            Some(entry) => s.dynamic_shared.push(entry),
                            None => warnings.push(bad(&format!(
                                "dynamic shared size {item:?} (use BYTES or kernel:BYTES, 0..={MAX_DYNAMIC_SHARED})"
                            ))),
                        }
                    }
                }
                ("force", Some(v)) => match Force::parse(v, transforms) {
                    Some(f) => s.force = Some(f),
                    None => warnings.push(bad(&format!(
                        "unknown --orion-force={v} (use baseline, lowest, budget:N, pragma, {known} or panic)"
                    ))),
                },
                ("transforms", Some(v)) => {
                    for t in v.split(',') {
                        match transforms.iter().find(|k| **k == t) {
                            Some(k) => {
                                asked.insert(k);
                            }
                            None if t == "none" => asked.clear(),
                            None => warnings.push(bad(&format!(
                                "unknown transform {t:?} (use {known} or none)"
                            ))),
                        }
                    }
                }
                ("test-refuse-rewrite", Some(v)) if origin == "command line" => s
                    .refuse_in_check
                    .extend(v.split(',').filter(|k| !k.is_empty()).map(str::to_string)),
                ("test-perturb-original", Some(v)) if origin == "command line" => s
                    .perturb_originals
                    .extend(v.split(',').filter(|k| !k.is_empty()).map(str::to_string)),
                ("margin", Some(v)) => match v.trim_end_matches('%').parse::<f64>() {
                    Ok(m) if (0.0..=1000.0).contains(&m) => s.margin_percent = m,
                    _ => warnings.push(bad(&format!("margin {v:?} (use a percentage, 0 to 1000)"))),
                },
                ("search", Some(v)) => match v {
                    "descent" => s.search = Search::Descent,
                    "full" => s.search = Search::Full,
                    _ => warnings.push(bad(&format!("search {v:?} (use descent or full)"))),
                },
                _ => warnings.push(bad(&format!(
                    "unknown setting --orion-{key}{}",
                    value.map(|v| format!("={v}")).unwrap_or_default()
                ))),
            }
        }
        s.transforms = transforms
            .iter()
            .filter(|k| asked.contains(*k))
            .map(|k| k.to_string())
            .collect();
        (s, warnings)
    }
}

impl Settings {
    /// Whether the tuner may offer the SASS rewrite named `key` (`--orion-transforms`), or
    /// must (`--orion-force`).
    pub fn offers_transform(&self, key: &str) -> bool {
        self.transforms.iter().any(|t| t == key)
            || matches!(&self.force, Some(Force::Rewrite(k)) if k == key)
    }

    /// The `--orion-*` options that restate every setting which changes the output (mode,
    /// block sizes, margin, transforms, force, profile, calibration), each only where it
    /// differs from the default,
    /// in a fixed order. `--dryrun` puts them on its ptxas lines and `cache-key` prints them,
    /// so compiler caches hash the settings whether they came from the environment or the
    /// command line. A new setting that changes the output belongs here too.
    pub fn output_options(&self) -> Vec<String> {
        let mut o = Vec::new();
        match self.mode {
            Mode::Tune => {
                if let Some(sel) = self.selector {
                    o.push(format!("--orion-mode={}", sel.name()));
                }
            }
            Mode::Replay => o.push("--orion-mode=replay".to_string()),
            Mode::Off => o.push("--orion-mode=off".to_string()),
        }
        if !self.block_sizes.is_empty() {
            let list: Vec<String> = self
                .block_sizes
                .iter()
                .map(|(k, n)| match k {
                    Some(k) => format!("{k}:{n}"),
                    None => n.to_string(),
                })
                .collect();
            o.push(format!("--orion-block-size={}", list.join(",")));
        }
        if !self.dynamic_shared.is_empty() {
            o.push(format!(
                "--orion-dynamic-shared={}",
                restate(&self.dynamic_shared).join(",")
            ));
        }
        if self.margin_percent != DEFAULT_MARGIN_PERCENT {
            o.push(format!("--orion-margin={}", self.margin_percent));
        }
        if self.search != Search::default() {
            o.push(format!("--orion-search={}", self.search.name()));
        }
        if !self.transforms.is_empty() {
            o.push(format!("--orion-transforms={}", self.transforms.join(",")));
        }
        if let Some(f) = &self.force {
            o.push(format!("--orion-force={f}"));
        }
        if let Some(p) = &self.profile {
            // The (absolute) path, so that the ptxas steps a cache runs read the same file,
            // and its content hash, so that an edited profile is a miss.
            o.push(format!("--orion-profile={}", p.path.display()));
            o.push(format!("--orion-profile-sha256={}", p.sha256));
        }
        if !self.refuse_in_check.is_empty() {
            o.push(format!(
                "--orion-test-refuse-rewrite={}",
                self.refuse_in_check.join(",")
            ));
        }
        if !self.perturb_originals.is_empty() {
            o.push(format!(
                "--orion-test-perturb-original={}",
                self.perturb_originals.join(",")
            ));
        }
        if let Some(c) = &self.calibration {
            // Likewise: the predictor's parameters change what the tuner chooses.
            o.push(format!("--orion-calibration={}", c.path.display()));
            o.push(format!("--orion-calibration-sha256={}", c.sha256));
        }
        o
    }
}

/// The most dynamic shared memory a launch can ask for on any architecture nvcc-orion knows
/// (sm_90's 227 KiB opt-in, rounded up to 256 KiB).
const MAX_DYNAMIC_SHARED: u32 = 256 * 1024;

/// `N` or `kernel:N` with N in 0..=`max`.
fn per_kernel(item: &str, max: u32) -> Option<(Option<String>, u32)> {
    let (kernel, n) = match item.rsplit_once(':') {
        Some((k, n)) => (Some(k.to_string()), n),
        None => (None, item),
    };
    let n = n.parse::<u32>().ok().filter(|n| *n <= max)?;
    Some((kernel, n))
}

/// Per-kernel entries as they were given: `N` or `kernel:N`.
fn restate(entries: &[(Option<String>, u32)]) -> Vec<String> {
    entries
        .iter()
        .map(|(k, n)| match k {
            Some(k) => format!("{k}:{n}"),
            None => n.to_string(),
        })
        .collect()
}

/// Where variants are cached: `$NVCC_ORION_CACHE/variants`, else
/// `$XDG_CACHE_HOME/nvcc-orion/variants`, else `~/.cache/nvcc-orion/variants`. `None` when
/// there is no home to put it in, or `NVCC_ORION_CACHE=off`.
pub(crate) fn cache_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = match env("NVCC_ORION_CACHE").filter(|v| !v.is_empty()) {
        Some(v) if v == "off" => return None,
        Some(v) => PathBuf::from(v),
        None => env("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|h| Path::new(&h).join(".cache")))?
            .join("nvcc-orion"),
    };
    Some(base.join("variants"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registered rewrites' keys, as `transform::keys()` gives them.
    const KEYS: &[&str] = &["spill2smem", "regdem"];

    impl Settings {
        fn read_test(
            env: &dyn Fn(&str) -> Option<String>,
            orion_args: &[(String, Option<String>)],
        ) -> (Settings, Vec<String>) {
            Settings::read(env, orion_args, KEYS)
        }
    }

    #[test]
    fn output_options_restate_the_settings() {
        assert!(Settings::default().output_options().is_empty());
        let env = |k: &str| match k {
            "NVCC_ORION_MARGIN" => Some("7.5".to_string()),
            "NVCC_ORION_SEARCH" => Some("full".to_string()),
            "NVCC_ORION_BLOCK_SIZE" => Some("k:128,256".to_string()),
            "NVCC_ORION_DYNAMIC_SHARED" => Some("40960,k:0".to_string()),
            "NVCC_ORION_TRANSFORMS" => Some("regdem,spill2smem".to_string()),
            "NVCC_ORION_REPORT" => Some("r.jsonl".to_string()),
            _ => None,
        };
        let (s, w) = Settings::read_test(&env, &[("force".into(), Some("lowest".into()))]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(block_size_for(&s.dynamic_shared, "k"), Some(0));
        assert_eq!(block_size_for(&s.dynamic_shared, "other"), Some(40960));
        let o = s.output_options();
        assert_eq!(
            o,
            [
                "--orion-block-size=k:128,256",
                "--orion-dynamic-shared=40960,k:0",
                "--orion-margin=7.5",
                "--orion-search=full",
                "--orion-transforms=spill2smem,regdem",
                "--orion-force=lowest"
            ]
        );
        // Read back, they give the same settings (the report aside, which is not output).
        let args: Vec<(String, Option<String>)> = o
            .iter()
            .map(|a| {
                let (k, v) = a["--orion-".len()..].split_once('=').unwrap();
                (k.to_string(), Some(v.to_string()))
            })
            .collect();
        let (back, w) = Settings::read_test(&|_| None, &args);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(back, Settings { report: None, ..s });
    }

    /// The testing-only check hooks are read from the command line alone (no variable names
    /// them) and restated, so that `--dryrun`'s ptxas lines carry them.
    #[test]
    fn the_testing_hooks_come_from_the_command_line_only() {
        let args = [
            ("test-refuse-rewrite".into(), Some("_Z1kv,_Z1jv".into())),
            ("test-perturb-original".into(), Some("_Z1jv".into())),
        ];
        let (s, w) = Settings::read_test(&|_| None, &args);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.refuse_in_check, ["_Z1kv", "_Z1jv"]);
        assert_eq!(s.perturb_originals, ["_Z1jv"]);
        assert_eq!(
            s.output_options(),
            [
                "--orion-test-refuse-rewrite=_Z1kv,_Z1jv",
                "--orion-test-perturb-original=_Z1jv"
            ]
        );
        let env = |k: &str| k.starts_with("NVCC_ORION").then(|| "_Z1kv".to_string());
        let (s, _) = Settings::read_test(&env, &[]);
        assert!(s.refuse_in_check.is_empty());
        assert!(s.perturb_originals.is_empty());
    }

    #[test]
    fn bad_dynamic_shared_sizes_warn() {
        let env = |k: &str| (k == "NVCC_ORION_DYNAMIC_SHARED").then(|| "k:-1,300000,x".to_string());
        let (s, w) = Settings::read_test(&env, &[]);
        assert!(s.dynamic_shared.is_empty());
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("kernel:BYTES"), "{w:?}");
    }

    #[test]
    fn a_profile_is_restated_with_its_content_hash() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.json");
        let read = |file: &Path| {
            let f = file.display().to_string();
            let env = move |k: &str| (k == "NVCC_ORION_PROFILE").then(|| f.clone());
            let (s, w) = Settings::read_test(&env, &[]);
            assert!(w.is_empty(), "{w:?}");
            s.output_options()
        };
        std::fs::write(&file, "a").unwrap();
        let a = read(&file);
        std::fs::write(&file, "b").unwrap();
        let b = read(&file);
        assert_eq!(a[0], format!("--orion-profile={}", file.display()));
        assert_eq!(a[0], b[0]);
        // sha256("a") and sha256("b").
        assert!(
            a[1].ends_with("=ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb")
        );
        assert!(
            b[1].ends_with("=3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d")
        );
        // Read back, the restated options name the same profile; a missing one hashes as such.
        let (back, w) = Settings::read_test(
            &|_| None,
            &[
                ("profile".into(), Some(file.display().to_string())),
                ("profile-sha256".into(), Some("x".into())),
            ],
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(back.output_options(), b);
        assert_eq!(
            read(&dir.path().join("none.json"))[1],
            "--orion-profile-sha256=unreadable"
        );
        let (s, w) = Settings::read_test(&|_| None, &[("profile".into(), None)]);
        assert_eq!(s.profile, None);
        assert_eq!(
            w,
            [
                "nvcc-orion: warning: ignoring --orion-profile without a file (use --orion-profile=FILE) from the command line"
            ]
        );
    }

    #[test]
    fn a_calibration_is_restated_with_its_content_hash() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.json");
        std::fs::write(&file, "a").unwrap();
        let f = file.display().to_string();
        let env = |k: &str| (k == "NVCC_ORION_CALIBRATION").then(|| f.clone());
        let (s, w) = Settings::read_test(&env, &[]);
        assert!(w.is_empty(), "{w:?}");
        let o = s.output_options();
        assert_eq!(
            o,
            [
                format!("--orion-calibration={f}"),
                "--orion-calibration-sha256=ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb".to_string()
            ]
        );
        // Read back from the restated options: the same setting.
        let (back, w) = Settings::read_test(
            &|_| None,
            &[
                ("calibration".into(), Some(f.clone())),
                ("calibration-sha256".into(), Some("x".into())),
            ],
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(back.output_options(), o);
        let (s, w) = Settings::read_test(&|_| None, &[("calibration".into(), None)]);
        assert_eq!((s.calibration, w.len()), (None, 1));
    }

    #[test]
    fn env_then_command_line() {
        let env = |k: &str| match k {
            "NVCC_ORION" => Some("replay".to_string()),
            "NVCC_ORION_BLOCK_SIZE" => Some("256".to_string()),
            _ => None,
        };
        let (s, w) = Settings::read_test(
            &env,
            &[
                ("mode".into(), Some("off".into())),
                ("block-size".into(), Some("k:128".into())),
            ],
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.mode, Mode::Off);
        assert_eq!(s.block_sizes, [(None, 256), (Some("k".to_string()), 128)]);
        let (s, _) = Settings::read_test(&env, &[]);
        assert_eq!(s.mode, Mode::Replay);
    }

    #[test]
    fn adapt_and_train_are_tune_mode_with_a_selector_and_are_restated() {
        let env = |k: &str| (k == "NVCC_ORION").then(|| "adapt".to_string());
        let (s, w) = Settings::read_test(&env, &[]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((s.mode, s.selector), (Mode::Tune, Some(Selector::Adapt)));
        assert_eq!(s.output_options(), ["--orion-mode=adapt"]);
        let (s, _) = Settings::read_test(&env, &[("mode".into(), Some("train".into()))]);
        assert_eq!((s.mode, s.selector), (Mode::Tune, Some(Selector::Train)));
        assert_eq!(s.output_options(), ["--orion-mode=train"]);
        // A later plain mode drops the selector.
        let (s, _) = Settings::read_test(&env, &[("mode".into(), Some("tune".into()))]);
        assert_eq!((s.mode, s.selector), (Mode::Tune, None));
        assert!(s.output_options().is_empty());
        let (s, _) = Settings::read_test(&env, &[("off".into(), None)]);
        assert_eq!((s.mode, s.selector), (Mode::Off, None));
    }

    #[test]
    fn block_size_per_kernel_wins_and_the_last_entry_counts() {
        let env = |k: &str| (k == "NVCC_ORION_BLOCK_SIZE").then(|| "512,k:64".to_string());
        let (s, w) = Settings::read_test(
            &env,
            &[
                ("block-size".into(), Some("k:32,128".into())),
                ("block-size".into(), Some("other:16,256".into())),
            ],
        );
        assert!(w.is_empty(), "{w:?}");
        // Per-kernel before global; the last of each kind: the command line's k:32 over the
        // environment's k:64, the later 256 over 128 and 512.
        assert_eq!(block_size_for(&s.block_sizes, "k"), Some(32));
        assert_eq!(block_size_for(&s.block_sizes, "other"), Some(16));
        assert_eq!(block_size_for(&s.block_sizes, "third"), Some(256));
        assert_eq!(block_size_for(&s.block_sizes[..2], "third"), Some(512));
        assert_eq!(block_size_for(&[], "k"), None);
        let only_named = [(Some("k".to_string()), 8)];
        assert_eq!(block_size_for(&only_named, "k"), Some(8));
        assert_eq!(block_size_for(&only_named, "kk"), None);
    }

    #[test]
    fn typos_warn_and_are_ignored() {
        let (s, w) = Settings::read_test(
            &|_| None,
            &[
                ("blok-size".into(), Some("1".into())),
                ("mode".into(), Some("fast".into())),
            ],
        );
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("--orion-blok-size=1"), "{w:?}");
        assert!(
            is_ours("NVCC_ORION") && is_ours("NVCC_ORION_NVCC") && !is_ours("NVCC_APPEND_FLAGS")
        );
    }

    #[test]
    fn transforms_are_opt_in() {
        assert!(Settings::default().transforms.is_empty());
        let env = |k: &str| (k == "NVCC_ORION_TRANSFORMS").then(|| "spill2smem".to_string());
        let (s, w) = Settings::read_test(&env, &[]);
        assert!(w.is_empty() && s.transforms == ["spill2smem"], "{w:?}");
        assert!(s.offers_transform("spill2smem") && !s.offers_transform("regdem"));
        let (s, w) = Settings::read_test(&env, &[("transforms".into(), Some("none".into()))]);
        assert!(w.is_empty() && s.transforms.is_empty(), "{w:?}");
        let (s, w) =
            Settings::read_test(&|_| None, &[("transforms".into(), Some("regdem".into()))]);
        assert!(w.is_empty() && s.transforms == ["regdem"], "{w:?}");
        let (s, w) = Settings::read_test(&|_| None, &[("force".into(), Some("regdem".into()))]);
        assert!(
            w.is_empty() && s.force == Some(Force::Rewrite("regdem".into())),
            "{w:?}"
        );
        let (_, w) =
            Settings::read_test(&|_| None, &[("transforms".into(), Some("regdemx".into()))]);
        assert_eq!(
            w,
            [
                "nvcc-orion: warning: ignoring unknown transform \"regdemx\" (use spill2smem, regdem or none) from the command line"
            ]
        );
        let (_, w) = Settings::read_test(&|_| None, &[("force".into(), Some("x".into()))]);
        assert_eq!(
            w,
            [
                "nvcc-orion: warning: ignoring unknown --orion-force=x (use baseline, lowest, budget:N, pragma, spill2smem, regdem or panic) from the command line"
            ]
        );
        // A name only some other registry knows is unknown here: the names come from the caller.
        let (s, w) = Settings::read(
            &|_| None,
            &[("transforms".into(), Some("regdem".into()))],
            &["spill2smem"],
        );
        assert!(s.transforms.is_empty() && w.len() == 1, "{w:?}");
    }

    #[test]
    fn forcing_a_budget_or_the_pragma() {
        for (v, want) in [
            ("budget:40", Force::Budget(40)),
            ("budget:255", Force::Budget(255)),
            ("pragma", Force::Pragma),
        ] {
            let (s, w) = Settings::read_test(&|_| None, &[("force".into(), Some(v.into()))]);
            assert!(
                w.is_empty() && s.force.as_ref() == Some(&want),
                "{v}: {w:?}"
            );
            assert_eq!(want.to_string(), v, "restated as given");
        }
        assert_eq!(Force::parse("lowest", &[]), Some(Force::Lowest));
        assert_eq!(
            Force::parse("regdem", &[]),
            None,
            "a key the caller does not know"
        );
        for v in ["budget:0", "budget:256", "budget:", "budget:x", "budget:-1"] {
            let (s, w) = Settings::read_test(&|_| None, &[("force".into(), Some(v.into()))]);
            assert!(s.force.is_none() && w.len() == 1, "{v}: {w:?}");
            assert!(w[0].contains("budget:N"), "{w:?}");
        }
    }

    #[test]
    fn cache_location() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            cache_dir(&env(&[("NVCC_ORION_CACHE", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/variants"))
        );
        assert_eq!(cache_dir(&env(&[("NVCC_ORION_CACHE", "off")])), None);
        assert_eq!(
            cache_dir(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/nvcc-orion/variants"))
        );
        assert_eq!(cache_dir(&env(&[])), None);
    }
}

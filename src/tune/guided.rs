//! Profile-guided builds (issue 21, docs/selector.md §Profile-guided builds): with
//! `NVCC_ORION_PROFILE` / `--orion-profile`, each kernel whose profile has a measured winner
//! ships that candidate instead of the model's pick; elsewhere the model's choice stands. The
//! candidates and their names come from [`ranked`](super::ranked), the same ranking a
//! training build embeds. A profile never fails a build: one that cannot be read is one
//! warning line and ignored whole; one of other archs only (another GPU's) is one line per
//! ptxas step; an entry that is unsound or does not match the build is one line for its
//! kernel, whose model's choice stands, and the other kernels are still guided.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::ranked::{self, Ranked};
use super::select::{Choice, Evaluated, gain_percent};
use crate::profile::{Profile, ProfileError, Variant};
use crate::settings::Settings;

/// The profile of one tuned step, and the warnings it gave.
#[derive(Debug, Default)]
pub(crate) struct Guide {
    profile: Option<Arc<Profile>>,
    /// One line each, without the `nvcc-orion: warning: ` prefix.
    pub(crate) warnings: Vec<String>,
}

/// `file` read and validated once per process: every ptxas step of a compile (one per
/// architecture) uses the same profile. Keyed by the file's size and time as well, so a
/// profile rewritten meanwhile is read again.
fn read_once(file: &std::path::Path) -> Result<Arc<Profile>, Arc<ProfileError>> {
    type Key = (PathBuf, u64, Option<std::time::SystemTime>);
    type Read = HashMap<Key, Result<Arc<Profile>, Arc<ProfileError>>>;
    static READ: Mutex<Option<Read>> = Mutex::new(None);
    let meta = std::fs::metadata(file).ok();
    let key = (
        file.to_path_buf(),
        meta.as_ref().map_or(0, |m| m.len()),
        meta.and_then(|m| m.modified().ok()),
    );
    let mut cache = READ.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| Profile::read(file).map(Arc::new).map_err(Arc::new))
        .clone()
}

/// What the profile measured of one kernel, beside what the model predicted (the report's
/// `measured` field).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// The profile's file name (never a folder of the build machine).
    pub(crate) profile: String,
    /// Launch configurations (device, launch key) every compared variant was measured at.
    pub(crate) configurations: usize,
    /// The variants in the ranking's order (variant 0 is the model's pick).
    pub(crate) variants: Vec<MeasuredVariant>,
    /// The measured winner's variant index; `None` when the profile has no comparable
    /// measurement of this kernel (the variants are still listed, with their names).
    pub(crate) winner: Option<u32>,
    /// The predictor's rank error: where the measured winner stands in the model's order
    /// (0: the model's pick was measured fastest).
    pub(crate) rank_error: Option<u32>,
}

/// One variant, measured beside predicted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MeasuredVariant {
    pub(crate) variant: u32,
    pub(crate) name: String,
    /// Index into the record's `candidates`.
    pub(crate) candidate: usize,
    pub(crate) registers: u32,
    /// The model's prediction, as in the candidate's record.
    pub(crate) cycles_per_warp: Vec<Option<f64>>,
    /// Its medians summed over the configurations, µs; `None` when it was not measured at
    /// all of them.
    pub(crate) measured_us: Option<f64>,
}

impl Guide {
    /// The profile `settings` name, read and validated, for the ptxas step of `arch`. A file
    /// that does not read becomes one warning and is ignored whole; a profile with entries
    /// but none of `arch` (another GPU's) is one warning line too, and every kernel keeps
    /// the model's choice on this arch. Anything else is one kernel's ([`Guide::apply`]).
    pub(crate) fn load(settings: &Settings, arch: &str) -> Guide {
        let Some(p) = &settings.profile else {
            return Guide::default();
        };
        match read_once(&p.path) {
            Ok(profile) => Guide {
                warnings: other_archs(&profile, arch).into_iter().collect(),
                profile: Some(profile),
            },
            Err(e) => Guide {
                profile: None,
                warnings: vec![ignored(&e)],
            },
        }
    }

    /// Where the profile has a measured winner for `kernel` on `arch`, make it the choice
    /// (even against the model). With a profile that matches the build, say what was
    /// measured (the variants and their names, even when nothing of this kernel was); `None`
    /// without a profile, or when it does not match (a warning). `options`: the kernel's evaluated candidates, ptxas's own first.
    pub(crate) fn apply(
        &mut self,
        kernel: &str,
        arch: &str,
        options: &[Evaluated],
        choice: &mut Choice,
    ) -> Option<Measured> {
        let profile = self.profile.as_ref()?;
        let ranking = ranked::ranked(kernel, options, choice.index);
        // Names and what each uses: index names alone cannot tell this build's variant k from
        // another build's (changed sources rank other candidates), its registers can.
        let built: Vec<Variant> = ranking
            .iter()
            .map(|r| Variant {
                name: &r.name,
                registers: options[r.candidate].registers,
                frame_bytes: options[r.candidate].frame_bytes,
            })
            .collect();
        let winner = match profile.winner(kernel, arch, &built) {
            Ok(w) => w,
            Err(e) => {
                self.warnings.push(format!(
                    "profile entry ignored: {e}; the model's choice stands for {kernel}"
                ));
                return None;
            }
        };
        let totals = profile.totals(kernel, arch, built.len());
        let measured = Measured {
            profile: profile.file().file_name().map_or_else(
                || profile.file().display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            configurations: winner.as_ref().map_or(0, |w| w.configurations),
            variants: ranking
                .iter()
                .enumerate()
                .map(|(k, r)| variant(k, r, options, &totals))
                .collect(),
            winner: winner.as_ref().map(|w| w.variant),
            rank_error: winner.as_ref().map(|w| w.variant),
        };
        let Some(winner) = winner else {
            return Some(measured);
        };
        let to = ranking[winner.variant as usize].candidate;
        let model = &options[choice.index];
        choice.reason = format!(
            "measured fastest: variant {} ({} registers) over {} launch configuration(s) in {}; \
             the model's pick ({} registers): {}",
            winner.variant,
            options[to].registers,
            winner.configurations,
            measured.profile,
            model.registers,
            choice.reason
        );
        if to != choice.index {
            choice.index = to;
            choice.gain_percent = if to == 0 {
                0.0
            } else {
                gain_percent(&options[0], &options[to]).unwrap_or(f64::NEG_INFINITY)
            };
        }
        Some(measured)
    }
}

/// The warning for a profile that cannot be read or parsed, which is ignored whole.
fn ignored(error: &ProfileError) -> String {
    format!("profile ignored: {error}; the model's choices stand")
}

/// Where `settings` name a profile that cannot be read or parsed: its one warning line. A
/// compile says it once and then runs its ptxas steps without the profile; a ptxas step on
/// its own (`--ptxas`) says it from [`Guide::load`].
pub(crate) fn unreadable(settings: &Settings) -> Option<String> {
    let p = settings.profile.as_ref()?;
    read_once(&p.path).err().map(|e| ignored(&e))
}

/// The line for a profile that measured other archs only (it came from another GPU): `None`
/// when it has entries of `arch`, or none at all.
fn other_archs(profile: &Profile, arch: &str) -> Option<String> {
    let archs = profile.archs();
    if archs.is_empty() || archs.contains(arch) {
        return None;
    }
    let measured: Vec<&str> = archs.iter().map(String::as_str).collect();
    Some(format!(
        "profile {} has no entries for {arch} (it measured {}); the model's choices stand on \
         {arch}",
        profile.file().display(),
        measured.join(", ")
    ))
}

fn variant(k: usize, r: &Ranked, options: &[Evaluated], totals: &[(u32, f64)]) -> MeasuredVariant {
    let c = &options[r.candidate];
    MeasuredVariant {
        variant: k as u32,
        name: r.name.clone(),
        candidate: r.candidate,
        registers: c.registers,
        cycles_per_warp: c.cycles_per_warp.clone(),
        measured_us: totals
            .iter()
            .find(|(v, _)| *v as usize == k)
            .map(|(_, t)| *t),
    }
}

//! Which entries of a profile a guided build can use (docs/selector.md §The profile). A file
//! that does not read as a profile at all (not JSON, another format or version, an entry that
//! names no kernel) is refused whole. Anything else wrong is one kernel's: an entry that is
//! unsound on its own, repeats another, or disagrees with another entry of its kernel and arch
//! over a variant's name or registers makes that kernel's measurements on that arch unusable,
//! and the other kernels' and archs' stand. A training run on several GPUs writes one
//! profile, so a kernel's entries are only ever compared within one arch: its sm_80 and sm_90
//! builds are other code, with other registers.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{
    Entry, FORMAT, LaunchKey, MAX_LOCAL_BYTES, MAX_MEDIAN_US, MAX_REGISTERS, MAX_SPREAD,
    MAX_VARIANTS, ProfileError, Unsound, VERSION,
};

/// A profile as its file spells it, for the fast path of [`entries`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    format: String,
    version: u64,
    entries: Vec<Entry>,
}

/// Each entry of the file, in order: read, or why not. Linear: a well-formed profile is read
/// straight into entries; only a malformed one is read again as plain JSON, entry by entry.
pub(super) fn entries(
    bytes: &[u8],
    file: &Path,
) -> Result<Vec<Result<Entry, Unsound>>, ProfileError> {
    match serde_json::from_slice::<FileIn>(bytes) {
        Ok(f) if f.format == FORMAT && f.version == VERSION => {
            Ok(f.entries.into_iter().map(Ok).collect())
        }
        _ => one_by_one(bytes, file),
    }
}

/// The slow path of [`entries`]: the header's problem refuses the file, and so does an entry
/// that names no kernel (nothing it says can be put to a kernel); an entry of a named kernel
/// that does not read is that kernel's problem.
fn one_by_one(bytes: &[u8], file: &Path) -> Result<Vec<Result<Entry, Unsound>>, ProfileError> {
    let header = |problem: String| ProfileError::Header {
        file: file.to_path_buf(),
        problem,
    };
    let top: Value = serde_json::from_slice(bytes).map_err(|source| ProfileError::Json {
        file: file.to_path_buf(),
        source,
    })?;
    let Value::Object(top) = top else {
        return Err(header("the top level is not an object".into()));
    };
    if let Some(k) = top
        .keys()
        .find(|k| !matches!(k.as_str(), "format" | "version" | "entries"))
    {
        return Err(header(format!("unknown field `{k}`")));
    }
    if top.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(header(format!("`format` is not \"{FORMAT}\"")));
    }
    match top.get("version").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(v) => return Err(header(format!("version {v}, this build reads {VERSION}"))),
        None => return Err(header("`version` is missing or not a number".into())),
    }
    let Some(Value::Array(raw)) = top.get("entries") else {
        return Err(header("`entries` is missing or not a list".into()));
    };
    let mut out = Vec::with_capacity(raw.len());
    let mut any_unread = false;
    for (index, value) in raw.iter().enumerate() {
        match Entry::deserialize(value) {
            Ok(e) => out.push(Ok(e)),
            Err(e) => {
                any_unread = true;
                let Some(kernel) = value.get("kernel").and_then(Value::as_str) else {
                    return Err(ProfileError::Entry {
                        file: file.to_path_buf(),
                        index,
                        kernel: "?".to_string(),
                        problem: e.to_string(),
                    });
                };
                out.push(Err(Unsound {
                    index,
                    kernel: kernel.to_string(),
                    arch: value
                        .get("arch")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    problem: e.to_string(),
                }));
            }
        }
    }
    // Every entry reads alone but the whole did not (a field given twice): not a profile.
    if !any_unread {
        return Err(header("not a profile".into()));
    }
    Ok(out)
}

/// What [`usable`] sorted the entries into.
pub(super) struct Sorted {
    /// The usable entries with their positions in the file.
    pub(super) usable: Vec<(usize, Entry)>,
    /// The unsound ones, in file order.
    pub(super) unsound: Vec<Unsound>,
    /// Every arch an entry names, usable or not.
    pub(super) archs: BTreeSet<String>,
}

/// The usable entries and the unsound ones. A (kernel, arch) with an unsound entry keeps none
/// of its entries (an entry that names no arch spoils its kernel on every arch).
pub(super) fn usable(read: Vec<Result<Entry, Unsound>>) -> Sorted {
    let mut sound = Vec::with_capacity(read.len());
    let mut unsound = Vec::new();
    for (index, r) in read.into_iter().enumerate() {
        match r {
            Ok(e) => match check_alone(&e) {
                None => sound.push((index, e)),
                Some(problem) => unsound.push(Unsound {
                    index,
                    arch: Some(e.arch.clone()),
                    kernel: e.kernel,
                    problem,
                }),
            },
            Err(u) => unsound.push(u),
        }
    }
    unsound.extend(disagreements(&sound));
    unsound.sort_by_key(|u| u.index);
    let archs = (sound.iter().map(|(_, e)| e.arch.clone()))
        .chain(unsound.iter().filter_map(|u| u.arch.clone()))
        .collect();
    {
        let spoiled: HashSet<(&str, Option<&str>)> = unsound
            .iter()
            .map(|u| (u.kernel.as_str(), u.arch.as_deref()))
            .collect();
        sound.retain(|(_, e)| {
            !spoiled.contains(&(e.kernel.as_str(), None))
                && !spoiled.contains(&(e.kernel.as_str(), Some(e.arch.as_str())))
        });
    }
    Sorted {
        usable: sound,
        unsound,
        archs,
    }
}

/// The entries that repeat an earlier one, name another kernel id than the first entry of
/// their kernel and arch did, or give a variant another name or register count than an
/// earlier entry of the same kernel, arch and variant did. Linear: what an entry must
/// agree with is kept in maps as they go by.
fn disagreements(sound: &[(usize, Entry)]) -> Vec<Unsound> {
    // (kernel, arch, variant, device, key) -> the entry's position.
    let mut seen: HashMap<(&str, &str, u32, &str, &LaunchKey), usize> = HashMap::new();
    // (kernel, arch, variant) -> the first entry with a name, and with registers.
    let mut named: HashMap<(&str, &str, u32), (usize, &str)> = HashMap::new();
    let mut counted: HashMap<(&str, &str, u32), (usize, u32)> = HashMap::new();
    // (kernel, arch) -> the first entry's kernel id.
    let mut ids: HashMap<(&str, &str), (usize, u32)> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in sound {
        let v = (e.kernel.as_str(), e.arch.as_str(), e.variant);
        let (j, first_id) = *ids.entry((v.0, v.1)).or_insert((*i, e.key.kernel_id));
        let problem = if first_id != e.key.kernel_id {
            // The runtime keys two host functions of one name apart (`static` kernels of
            // two files); a build finds entries by name and cannot tell which is its own.
            Some(format!(
                "kernel id {} here but {first_id} in entry {j}: two kernels of this name were \
                 measured (`static` kernels of one name in two files), and a build cannot tell \
                 which is its own",
                e.key.kernel_id
            ))
        } else if let Some(&j) = seen.get(&(v.0, v.1, v.2, e.device.as_str(), &e.key)) {
            Some(format!("repeats entry {j}"))
        } else {
            seen.insert((v.0, v.1, v.2, e.device.as_str(), &e.key), *i);
            name_or_count(e, *i, named.entry(v), counted.entry(v))
        };
        if let Some(problem) = problem {
            out.push(Unsound {
                index: *i,
                kernel: e.kernel.clone(),
                arch: Some(e.arch.clone()),
                problem,
            });
        }
    }
    out
}

type Slot<'m, 'e, T> = std::collections::hash_map::Entry<'m, (&'e str, &'e str, u32), (usize, T)>;

/// How entry `e` (at `i`) names or counts its variant otherwise than the first entry that did
/// (`named`, `counted`: that entry's slot, filled here when `e` is the first).
fn name_or_count<'e>(
    e: &'e Entry,
    i: usize,
    named: Slot<'_, 'e, &'e str>,
    counted: Slot<'_, 'e, u32>,
) -> Option<String> {
    use std::collections::hash_map::Entry::{Occupied, Vacant};
    if !e.variant_name.is_empty() {
        match named {
            Occupied(o) if o.get().1 != e.variant_name => {
                let (j, there) = *o.get();
                return Some(format!(
                    "variant {} is `{}` here but `{there}` in entry {j}",
                    e.variant, e.variant_name
                ));
            }
            Occupied(_) => {}
            Vacant(s) => {
                s.insert((i, &e.variant_name));
            }
        }
    }
    if let Some(here) = e.registers {
        match counted {
            Occupied(o) if o.get().1 != here => {
                let (j, there) = *o.get();
                return Some(format!(
                    "variant {} has {here} registers here but {there} in entry {j}",
                    e.variant
                ));
            }
            Occupied(_) => {}
            Vacant(s) => {
                s.insert((i, here));
            }
        }
    }
    None
}

/// What is wrong with `e` on its own; `None` when it is sound.
fn check_alone(e: &Entry) -> Option<String> {
    let arch_ok = e
        .arch
        .strip_prefix("sm_")
        .map(|n| n.trim_end_matches(['a', 'f']))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let problem = if e.kernel.is_empty() {
        "`kernel` is empty".to_string()
    } else if !arch_ok {
        format!("arch `{}` is not sm_<number>", e.arch)
    } else if e.variant >= MAX_VARIANTS {
        format!(
            "variant {} is beyond the {MAX_VARIANTS} a kernel can have",
            e.variant
        )
    } else if e.key.grid.contains(&0) || e.key.block.contains(&0) {
        "the grid or block has a zero dimension".to_string()
    } else if e.samples > e.launches {
        format!("{} samples but only {} launches", e.samples, e.launches)
    } else if !(0.0..=MAX_MEDIAN_US).contains(&e.median_us) {
        format!("median_us {} is not a time", e.median_us)
    } else if e.samples == 0 && e.median_us != 0.0 {
        "a median without samples".to_string()
    } else if !(0.0..=MAX_SPREAD).contains(&e.spread) {
        format!("spread {} is not a relative deviation", e.spread)
    } else if let Some(r) = e.registers.filter(|&r| r > MAX_REGISTERS) {
        format!("registers {r} is beyond the {MAX_REGISTERS} a thread can have")
    } else if let Some(l) = e.local_bytes.filter(|&l| l > MAX_LOCAL_BYTES) {
        format!("local_bytes {l} is beyond the 512 KiB a thread can have")
    } else {
        return None;
    };
    Some(problem)
}

//! Building register-budget variants: the step's PTX with `.maxnreg` edits, through the same
//! ptxas command line, in parallel within the build's job budget (the GNU make / cargo
//! jobserver when there is one), and cached on disk by everything that decides the output.
//!
//! A variant that sets budgets for only some kernels of a module is compiled with
//! `ptxas --entry` for those kernels alone (the device functions they call come along): a
//! kernel's SASS does not depend on the other entries of the module, nor on their limits
//! (docs/DESIGN.md §Per-kernel budgets; guarded by a test on real ptxas output), so the kernels
//! that do not vary need not be compiled again. Not in a module that uses functions as values
//! ([`super::function_pointers`]): there it does. A plain round is given only the entries it
//! compiles, besides everything else the module holds ([`super::trim`]): an `--entry` run
//! still parses every entry of the text it is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::cache_entry::{self, Entry};
use super::ptxas_args::PtxasArgs;
use crate::jobs::Slots;
use crate::process::StepContext;

/// One variant to build: a budget per kernel (kernels not named keep ptxas's own choice).
pub type Budgets = BTreeMap<String, super::ptx::Budget>;

/// A built variant.
#[derive(Debug, Clone)]
pub struct Built {
    pub(crate) budgets: Budgets,
    pub(crate) cubin: Vec<u8>,
    /// ptxas's diagnostics for this variant (`-v` output included).
    pub(crate) stderr: Vec<u8>,
    pub(crate) cached: bool,
    /// Whether ptxas compiled every entry of the module (no `--entry`), so that the cubin
    /// can ship as it is.
    pub(crate) whole_module: bool,
    /// How to run ptxas for it again, when it came from the cache ([`Builder::refresh`]).
    pub(crate) request: Option<Arc<Request>>,
}

/// What [`Builder::build_text`] was asked for: enough to build a cached variant again.
#[derive(Debug)]
pub struct Request {
    index: usize,
    ptx: String,
    only: Vec<String>,
    extra: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    #[error("variant PTX: {0}")]
    Ptx(#[from] super::ptx::PtxError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("ptxas refused a variant ({budgets}): {stderr}")]
    Refused { budgets: String, stderr: String },
    /// A cache entry that passed its checksum is not what ptxas makes of its input now.
    #[error("the variant cache's entry for {0} is not what ptxas makes of it")]
    Stale(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> VariantError {
    let what = what.into();
    move |source| VariantError::Io { what, source }
}

/// The ptxas command line of a variant: `argv` with its PTX input and output replaced. `-v`
/// stays, so each variant's stderr says what ptxas made of it.
pub fn variant_argv(argv: &[String], files: &PtxasArgs, ptx: &Path, out: &Path) -> Vec<String> {
    files.with_files(argv, &ptx.display().to_string(), &out.display().to_string())
}

/// What makes a variant's output what it is: the PTX, the ptxas binary and its arguments (the
/// input and output paths aside), and this tool's version.
pub(crate) fn cache_key(argv: &[String], files: &PtxasArgs, ptxas_id: &str, ptx: &str) -> String {
    // `argv` is the variant's own command line: `--entry` options, when added, are part of it.
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update([0]);
    h.update(ptxas_id.as_bytes());
    h.update([0]);
    let debug = names_files(argv);
    for (i, a) in argv.iter().enumerate().skip(1) {
        if !files.is_file_arg(i) {
            h.update(a.as_bytes());
        } else if debug {
            // The file's name, not its folder: what `-g` debug information records.
            h.update(
                Path::new(a)
                    .file_name()
                    .map_or(&[][..], |n| n.as_encoded_bytes()),
            );
        }
        h.update([0]);
    }
    h.update(ptx.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Identify the ptxas binary without running it: its path, size and modification time.
pub fn ptxas_id(ptxas: &Path) -> String {
    crate::toolkit::program_identity(ptxas)
}

/// A step's private folder for variant inputs and outputs, made on first use: a step that
/// builds no variant (a JIT's usual call, where the model rules every budget out) pays for no
/// folder made and removed.
#[derive(Debug, Default)]
pub struct WorkDir {
    dir: std::sync::OnceLock<std::io::Result<tempfile::TempDir>>,
}

impl WorkDir {
    /// The folder, made now if it is not yet.
    pub fn path(&self) -> Result<&Path, VariantError> {
        let made = self.dir.get_or_init(|| {
            tempfile::Builder::new()
                .prefix("nvcc-orion-variants-")
                .tempdir()
        });
        match made {
            Ok(d) => Ok(d.path()),
            Err(e) => Err(VariantError::Io {
                what: "temporary folder".to_string(),
                // The first caller's error again: `io::Error` is not `Clone`.
                source: std::io::Error::new(e.kind(), e.to_string()),
            }),
        }
    }
}

/// Everything a batch of variants shares.
pub struct Builder<'a> {
    pub(crate) ctx: &'a StepContext,
    /// The step's ptxas argv, exactly as nvcc's dry run printed it.
    pub(crate) argv: &'a [String],
    /// Where the input and output are in `argv`.
    pub(crate) files: PtxasArgs,
    pub(crate) ptx: &'a str,
    pub(crate) ptxas_id: String,
    pub(crate) cache: Option<PathBuf>,
    /// A private folder for variant inputs and outputs, made when the first variant needs it.
    pub(crate) work: &'a WorkDir,
    /// How many ptxas runs may go at once at most (the machine's cores).
    pub(crate) jobs: usize,
    /// Where the slots of all but the first come from (the build's jobserver or the local
    /// pool, shared with the driver).
    pub(crate) slots: &'a Slots,
    /// Show a progress line on stderr (verbose mode on a terminal), labelled with this.
    pub(crate) progress: Option<String>,
    /// The module's entries, when variants may be compiled for the entries they set a budget
    /// for alone (`--entry`); `None` compiles every variant as a whole module.
    pub(crate) entries: Option<Vec<String>>,
    /// Whether variants may still come from the cache: not once the choice is made, so that
    /// what ships and what the assembly check compares it with come from ptxas.
    pub(crate) reads_cache: AtomicBool,
    /// Cache entries that failed their check, each as `file: why` ([`Builder::cache_warning`]).
    pub(crate) bad_entries: Mutex<Vec<String>>,
}

/// Whether ptxas may be given `--entry` for a variant of the step `argv`: not when the
/// step already selects its entries (`--entry`, `-e`); the user's selection stays whole.
pub fn entries_allowed(argv: &[String]) -> bool {
    !argv.iter().skip(1).any(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        matches!(name, "--entry" | "-e")
    })
}

/// How often a waiting worker asks for a free job slot: polled, not waited for, since a worker
/// blocked on the jobserver would hold up the batch after its work is done.
const SLOT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

impl Builder<'_> {
    /// Build every variant of `all`, in parallel; results in the same order.
    pub fn build_all(&self, all: &[Budgets]) -> Vec<Result<Built, VariantError>> {
        self.build_all_from(0, all)
    }

    /// [`Builder::build_all`] for variants numbered from `first` on (a descent's later
    /// stages, [`super::descent`]: each variant has a folder of its own).
    pub fn build_all_from(
        &self,
        first: usize,
        all: &[Budgets],
    ) -> Vec<Result<Built, VariantError>> {
        if all.is_empty() {
            // No worker thread to start and join for nothing: the usual JIT call.
            return Vec::new();
        }
        let results: Vec<Mutex<Option<Result<Built, VariantError>>>> =
            all.iter().map(|_| Mutex::new(None)).collect();
        let _timed = crate::timings::span(crate::timings::Phase::VariantBatches);
        let next = Mutex::new(0usize);
        let workers = self.jobs.clamp(1, all.len().max(1));
        std::thread::scope(|s| {
            for w in 0..workers {
                let (results, next) = (&results, &next);
                s.spawn(move || {
                    // The first worker runs on the caller's slot; the others on an extra
                    // slot as soon as one is free (another step's background work may hold
                    // it at first), never blocking: they give up when no work is left.
                    let _slot = match w {
                        0 => None,
                        _ => loop {
                            if let Some(s) = self.slots.try_extra() {
                                break Some(s);
                            }
                            if *next.lock().unwrap_or_else(|e| e.into_inner()) >= all.len() {
                                return;
                            }
                            std::thread::sleep(SLOT_POLL);
                        },
                    };
                    loop {
                        let i = {
                            let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                            let i = *n;
                            *n += 1;
                            i
                        };
                        let Some(budgets) = all.get(i) else { break };
                        if let Some(label) = &self.progress {
                            // One line, rewritten in place; cleared when the batch is done.
                            eprint!("\r{}\x1b[K", progress_line(label, i, all.len(), budgets));
                        }
                        let r = crate::timings::timed(crate::timings::Phase::Variants, || {
                            self.build_varying(first + i, budgets)
                        });
                        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    }
                });
            }
        });
        if self.progress.is_some() {
            eprint!("\r\x1b[K");
        }
        results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| {
                        Err(VariantError::Io {
                            what: "job slots".into(),
                            source: std::io::Error::other("no job slot for the variant"),
                        })
                    })
            })
            .collect()
    }

    /// Build one variant as a whole module (from the cache when it is there).
    pub fn build(&self, i: usize, budgets: &Budgets) -> Result<Built, VariantError> {
        self.build_with(i, budgets, &[])
    }

    /// Build one variant: only the entries `budgets` names when [`Builder::entries`] allows
    /// it and they are not all of the module's, else the whole module.
    pub fn build_varying(&self, i: usize, budgets: &Budgets) -> Result<Built, VariantError> {
        let only: Vec<&str> = match &self.entries {
            Some(all) if all.iter().any(|e| !budgets.contains_key(e)) => all
                .iter()
                .filter(|e| budgets.contains_key(*e))
                .map(String::as_str)
                .collect(),
            _ => Vec::new(),
        };
        self.build_with(i, budgets, &only)
    }

    /// Build one variant, with `--entry` for each of `only` (none: the whole module). A
    /// plain round's PTX holds only the entries it builds ([`super::trim`]), so ptxas does
    /// not parse the others; a pragma round's is the whole module, since ptxas refuses the
    /// pragma by what the module holds (a refusal decides which candidates exist).
    fn build_with(
        &self,
        i: usize,
        budgets: &Budgets,
        only: &[&str],
    ) -> Result<Built, VariantError> {
        let ptx = super::ptx::with_budgets(self.ptx, budgets)?;
        let plain = budgets.values().all(|b| !b.smem_spill);
        let ptx = match plain.then(|| super::trim::only_entries(&ptx, only)) {
            Some(Some(trimmed)) => trimmed,
            _ => ptx,
        };
        self.build_text(i, budgets, &ptx, only, &[])
    }

    /// Build `ptx` (the step's PTX as edited by the caller, e.g. with the variants' entries
    /// added) as variant `i`, labelled `budgets`, with `--entry` for each of `only` and the
    /// ptxas options `extra`; cached by the text and the options like any variant.
    pub fn build_text(
        &self,
        i: usize,
        budgets: &Budgets,
        ptx: &str,
        only: &[&str],
        extra: &[String],
    ) -> Result<Built, VariantError> {
        let request = Request {
            index: i,
            ptx: ptx.to_string(),
            only: only.iter().map(|s| s.to_string()).collect(),
            extra: extra.to_vec(),
        };
        let (argv, key) = self.command(&request)?;
        if self.reads_cache.load(Ordering::Relaxed)
            && let Some(entry) = self.lookup(&key)
        {
            return Ok(Built {
                budgets: budgets.clone(),
                cubin: entry.cubin,
                stderr: self.input_named(&entry.stderr),
                cached: true,
                whole_module: only.is_empty(),
                request: Some(Arc::new(request)),
            });
        }
        self.run_ptxas(budgets, &request, &argv, &key)
    }

    /// `built` as ptxas makes it now: itself when it did not come from the cache, else a
    /// new ptxas run, which must give the same bytes ([`VariantError::Stale`] if not). What
    /// ships, and what the assembly check compares it with, never comes from the cache alone.
    pub fn refresh(&self, built: &Built) -> Result<Built, VariantError> {
        let Some(request) = built.request.as_deref().filter(|_| built.cached) else {
            return Ok(built.clone());
        };
        let (argv, key) = self.command(request)?;
        let fresh = self.run_ptxas(&built.budgets, request, &argv, &key)?;
        if fresh.cubin != built.cubin {
            return Err(VariantError::Stale(describe(&built.budgets)));
        }
        Ok(fresh)
    }

    /// The one warning line for the cache entries that failed their check, if any did.
    pub fn cache_warning(&self) -> Option<String> {
        let bad = self.bad_entries.lock().unwrap_or_else(|e| e.into_inner());
        let first = bad.first()?;
        Some(format!(
            "{} variant cache entr{} failed {} check and ptxas ran again ({first})",
            bad.len(),
            if bad.len() == 1 { "y" } else { "ies" },
            if bad.len() == 1 { "its" } else { "their" },
        ))
    }

    /// ptxas's messages for a variant as they read for this step: the input named as the
    /// step's ptxas command line names it, as in what whole-module ptxas prints.
    fn input_named(&self, stderr: &[u8]) -> Vec<u8> {
        let input = self.argv.get(self.files.input).map_or("", String::as_str);
        replace(stderr, INPUT_MARK, input.as_bytes())
    }

    /// The variant's ptxas command line and cache key.
    fn command(&self, r: &Request) -> Result<(Vec<String>, String), VariantError> {
        let (ptx_path, out) = self.variant_files(r.index)?;
        let mut argv = variant_argv(self.argv, &self.files, &ptx_path, &out);
        for e in &r.only {
            argv.push("--entry".to_string());
            argv.push(e.clone());
        }
        argv.extend_from_slice(&r.extra);
        let key = cache_key(&argv, &self.files, &self.ptxas_id, &r.ptx);
        Ok((argv, key))
    }

    /// The cache's entry for `key`: `None` when there is none or it fails its check (then
    /// remembered for [`Builder::cache_warning`]; the rebuilt variant replaces it).
    fn lookup(&self, key: &str) -> Option<Entry> {
        let file = self.cache.as_ref()?.join(format!("{key}.{ENTRY}"));
        let bytes = std::fs::read(&file).ok()?;
        match cache_entry::decode(key, &bytes) {
            Ok(entry) => Some(entry),
            Err(why) => {
                let mut bad = self.bad_entries.lock().unwrap_or_else(|e| e.into_inner());
                bad.push(format!("{}: {why}", file.display()));
                None
            }
        }
    }

    /// Run ptxas for `request` and store the result in the cache.
    fn run_ptxas(
        &self,
        budgets: &Budgets,
        request: &Request,
        argv: &[String],
        key: &str,
    ) -> Result<Built, VariantError> {
        let (ptx_path, out) = self.variant_files(request.index)?;
        if let Some(dir) = ptx_path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir.display().to_string()))?;
        }
        std::fs::write(&ptx_path, &request.ptx).map_err(io(ptx_path.display().to_string()))?;
        let run = self.ctx.run(argv).map_err(io("ptxas"))?;
        if !run.status.success() {
            return Err(VariantError::Refused {
                budgets: describe(budgets),
                stderr: String::from_utf8_lossy(&run.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            });
        }
        // Stored with the variant's PTX path as a placeholder: the key leaves paths out, and
        // a message that names the input must name this step's (`input_named`).
        let entry = Entry {
            cubin: std::fs::read(&out).map_err(io(out.display().to_string()))?,
            stderr: replace(
                &run.stderr,
                ptx_path.display().to_string().as_bytes(),
                INPUT_MARK,
            ),
        };
        if let Some(dir) = &self.cache {
            // A cache that cannot be written is only slower, never wrong.
            let _ = store(
                dir,
                &format!("{key}.{ENTRY}"),
                &cache_entry::encode(key, &entry),
            );
        }
        Ok(Built {
            budgets: budgets.clone(),
            stderr: self.input_named(&entry.stderr),
            cubin: entry.cubin,
            cached: false,
            whole_module: request.only.is_empty(),
            request: None,
        })
    }
}

impl Builder<'_> {
    /// Variant `i`'s input and output: a folder of its own, the files named as the step's.
    /// ptxas writes its input's and output's names into `-g` debug information, so a variant
    /// that ships names the caller's files as ptxas alone would, not ours.
    /// The folder is made by [`Builder::run_ptxas`].
    fn variant_files(&self, i: usize) -> Result<(PathBuf, PathBuf), VariantError> {
        let dir = self.work.path()?.join(format!("variant{i}"));
        let name = |p: &Path| p.file_name().map(std::ffi::OsStr::to_os_string);
        let input = name(Path::new(&self.argv[self.files.input]));
        let output = name(&self.files.output_path(self.argv));
        Ok(match (input, output) {
            (Some(a), Some(b)) if a != b => (dir.join(a), dir.join(b)),
            _ => (dir.join("variant.ptx"), dir.join("variant.cubin")),
        })
    }
}

/// Whether ptxas writes debug information naming its files (`-g`): then a variant's cached
/// cubin is only right for a step whose files have its names.
fn names_files(argv: &[String]) -> bool {
    argv.iter()
        .skip(1)
        .any(|a| matches!(a.as_str(), "-g" | "--device-debug"))
}
/// Stands for the variant's PTX path in stored messages (no path contains it).
pub(crate) const INPUT_MARK: &[u8] = b"\x01ptx-input\x01";

/// `bytes` with every `from` replaced by `to`.
pub(crate) fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The extension of cache entries ([`cache_entry`]'s format; the `.cubin` and `.stderr`
/// pairs of earlier versions, which carried no checksum, are never read).
const ENTRY: &str = "entry";

/// `k1=32 k2=40+smem`, for messages.
pub fn describe(b: &Budgets) -> String {
    b.iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The progress line for variant `i` of `n`: what is built (kernels by their short names)
/// and how many are left, cut to the terminal's width (`COLUMNS`, else 100) so that `\r`
/// rewrites one line rather than leaving wrapped pieces behind.
pub fn progress_line(label: &str, i: usize, n: usize, budgets: &Budgets) -> String {
    let what = budgets
        .iter()
        .map(|(k, b)| format!("{}={b}", crate::cubin::symbols::short_name(k)))
        .collect::<Vec<_>>()
        .join(" ");
    let left = n.saturating_sub(i + 1);
    let line = format!(
        "nvcc-orion: {label}: variant {}/{n} ({left} left): {what}",
        i + 1
    );
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|&c| c > 20)
        .unwrap_or(100);
    match line.char_indices().nth(width - 1) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Write `name` in `dir` through a temporary file and a rename, so that concurrent builds
/// never read half a file.
fn store(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::atomic_file::write(&dir.join(name), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines() {
        let mut b = Budgets::new();
        b.insert(
            "_Z13walk_featuresPKiPKfPfii".into(),
            super::super::ptx::Budget::regs(40),
        );
        assert_eq!(
            progress_line("sm_90", 1, 5, &b),
            "nvcc-orion: sm_90: variant 2/5 (3 left): walk_features=40"
        );
        for k in 0..20 {
            b.insert(format!("kernel_{k}"), super::super::ptx::Budget::regs(32));
        }
        let long = progress_line("sm_90", 4, 5, &b);
        assert_eq!(long.chars().count(), 100, "{long}");
        assert!(long.ends_with('…') && long.contains("(0 left)"), "{long}");
    }

    #[test]
    fn argv_and_key() {
        let argv: Vec<String> = [
            "ptxas",
            "-arch=sm_90",
            "-m64",
            "/t/a.ptx",
            "-o",
            "/t/a.cubin",
        ]
        .map(String::from)
        .to_vec();
        let files = PtxasArgs::parse(&argv).unwrap();
        let v = variant_argv(
            &argv,
            &files,
            Path::new("/w/v0.ptx"),
            Path::new("/w/v0.cubin"),
        );
        assert_eq!(v[3], "/w/v0.ptx");
        assert_eq!(v[5], "/w/v0.cubin");
        // Paths of the input and output do not change the key; arguments and PTX do.
        let k = cache_key(&argv, &files, "id", "ptx");
        assert_eq!(k, cache_key(&v, &files, "id", "ptx"));
        assert_ne!(k, cache_key(&argv, &files, "id", "ptx2"));
        assert_ne!(k, cache_key(&argv, &files, "id2", "ptx"));
        let mut o3 = argv.clone();
        o3[2] = "-O2".into();
        assert_ne!(k, cache_key(&o3, &files, "id", "ptx"));
        assert_eq!(k.len(), 64);
        // Under -g, ptxas records the files' names (not their folders): those are keyed too.
        let g: Vec<String> = argv.iter().cloned().chain(["-g".to_string()]).collect();
        let files_g = PtxasArgs::parse(&g).unwrap();
        let moved = files_g.with_files(&g, "/elsewhere/a.ptx", "/elsewhere/a.cubin");
        let renamed = files_g.with_files(&g, "/t/b.ptx", "/t/a.cubin");
        let kg = cache_key(&g, &files_g, "id", "ptx");
        assert_eq!(kg, cache_key(&moved, &files_g, "id", "ptx"));
        assert_ne!(kg, cache_key(&renamed, &files_g, "id", "ptx"));
    }
}

//! The cached choice (issue 47): what a default-mode build of one ptxas step decided, so that
//! building the same step again runs ptxas once, at the chosen budgets, in place of the plain
//! run nvcc asked for and the variant rounds after it.
//!
//! An entry holds the chosen budgets, a SHA-256 of the cubin the first build shipped, what
//! ptxas printed for it, the build's warning lines and the report's records. It is keyed like
//! a variant (the PTX, ptxas's identity and its arguments, this tool's version) and also by
//! this binary's identity (the choice is this code's decision, not ptxas's) and every setting
//! that changes the output ([`Settings::output_options`]). It is stored in
//! [`cache_entry`]'s format, so a damaged entry is a miss with one warning line.
//!
//! The cache supplies the choice and the records only: what ships is built by ptxas in this
//! build, and must hash to what the first build shipped and print what it printed; anything
//! else (ptxas refusing, other bytes, other messages) goes the full way, the plain run first
//! ([`super::ptxas_step`]). The default mode ships exactly what whole-module ptxas makes at
//! the chosen budgets (spliced or not), so the one run gives the first build's bytes.

use std::path::{Path, PathBuf};

use nvcc_orion_schema as schema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cache_entry::{self, Entry};
use super::ptx::Budget;
use super::ptxas_args::PtxasArgs;
use super::variants::{self, Budgets, INPUT_MARK, replace};
use crate::process::{Captured, StepContext};
use crate::settings::{Mode, Settings};

/// What one build decided for a step, as the cache holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Choice {
    /// Per kernel not keeping ptxas's own budget: `(kernel, registers, shared-memory
    /// spilling)`. Empty: ptxas's own cubin shipped.
    budgets: Vec<(String, u32, bool)>,
    /// SHA-256 of the cubin that shipped.
    shipped: String,
    /// What ptxas printed for it, the step's input named [`INPUT_MARK`].
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The build's warning lines (not those about the cache itself).
    warnings: Vec<String>,
    /// The report's records, as the report writes them (without `unit`).
    records: Vec<schema::Record>,
    /// The verbose mode's line per kernel.
    verbose: Vec<String>,
}

/// What the first build shipped and printed, for [`Lookup::store`].
pub(crate) struct Shipped<'a> {
    pub(crate) budgets: &'a Budgets,
    pub(crate) cubin: &'a [u8],
    /// ptxas's messages for the shipped cubin, before any warning line of ours.
    pub(crate) captured: &'a Captured,
    pub(crate) warnings: &'a [String],
    pub(crate) records: &'a [schema::Record],
    pub(crate) verbose: &'a [String],
}

/// A step's place in the cache, and what was found there.
pub(crate) struct Lookup {
    file: PathBuf,
    key: String,
    /// The entry, when there is a good one.
    pub(crate) found: Option<Choice>,
    /// Why the entry there is not good, when it is not (one warning line).
    pub(crate) damaged: Option<String>,
}

/// Where cached choices live: beside the variants, in a folder of their own.
const FOLDER: &str = "choices";
const EXTENSION: &str = "choice";

/// Whether a cached choice may stand for this build's search: the default mode, no selector
/// (nor a refused one: [`super::ptxas_step`] asks only without),
/// no profile, nothing forced, no cubins kept for `explain` (their records name files this
/// build would not write), and a cache to keep it in.
fn applies(settings: &Settings) -> bool {
    settings.mode == Mode::Tune
        && settings.selector.is_none()
        && settings.profile.is_none()
        && settings.force.is_none()
        && settings.keep_cubins.is_none()
        && settings.cache.is_some()
}

/// The cache's choice for the ptxas step `argv`, before ptxas runs: `None` when no cached
/// choice applies to it (see [`applies`]), or its input cannot be read (ptxas says why).
pub(crate) fn lookup(argv: &[String], ctx: &StepContext, settings: &Settings) -> Option<Lookup> {
    if !applies(settings) {
        return None;
    }
    let files = PtxasArgs::parse(argv)?;
    let ptx = std::fs::read_to_string(ctx.cwd.join(&argv[files.input])).ok()?;
    let ptxas = ctx.resolve(&argv[0]).ok()?;
    let key = key(argv, &files, &variants::ptxas_id(&ptxas), &ptx, settings);
    let file = settings
        .cache
        .as_ref()?
        .join(FOLDER)
        .join(format!("{key}.{EXTENSION}"));
    let mut lookup = Lookup {
        file,
        key,
        found: None,
        damaged: None,
    };
    match std::fs::read(&lookup.file) {
        Err(_) => {}
        Ok(bytes) => match decode(&lookup.key, &bytes) {
            Ok(choice) => lookup.found = Some(choice),
            Err(why) => lookup.damaged = Some(format!("{}: {why}", lookup.file.display())),
        },
    }
    Some(lookup)
}

/// Everything that decides a step's choice: the variant key's material, this binary, and the
/// settings that change the output.
fn key(
    argv: &[String],
    files: &PtxasArgs,
    ptxas_id: &str,
    ptx: &str,
    settings: &Settings,
) -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"choice");
    field(variants::cache_key(argv, files, ptxas_id, ptx).as_bytes());
    field(crate::toolkit::program_identity(&exe).as_bytes());
    for o in settings.output_options() {
        field(o.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a cached choice did not ship.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Missed {
    #[error("its PTX: {0}")]
    Ptx(#[from] super::ptx::PtxError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("ptxas refused it")]
    Refused,
    #[error("the output is not a file that can be read back")]
    Output,
    #[error("ptxas made other bytes than the first build shipped")]
    OtherBytes,
    #[error("ptxas printed other messages than the first build")]
    OtherMessages,
}

impl Choice {
    /// The chosen budgets.
    fn budgets(&self) -> Budgets {
        self.budgets
            .iter()
            .map(|(k, regs, smem_spill)| {
                let b = Budget {
                    smem_spill: *smem_spill,
                    ..Budget::regs(*regs)
                };
                (k.clone(), b)
            })
            .collect()
    }

    /// The one ptxas run of a cached build: the step at the chosen budgets, its output where
    /// nvcc expects it. `Ok` with what ptxas printed (the step's input named as nvcc named it)
    /// only when the cubin is the first build's, byte for byte, and so are the messages.
    pub(crate) fn run(&self, argv: &[String], ctx: &StepContext) -> Result<Captured, Missed> {
        let files = PtxasArgs::parse(argv).ok_or(Missed::Output)?;
        let step_input = argv[files.input].clone();
        let work = tempfile::Builder::new()
            .prefix("nvcc-orion-choice-")
            .tempdir()?;
        let (run_argv, input) = self.command(argv, &files, ctx, work.path())?;
        let mut captured =
            crate::timings::timed(crate::timings::Phase::Ptxas, || ctx.run(&run_argv))?;
        if !captured.status.success() {
            return Err(Missed::Refused);
        }
        let out = ctx.cwd.join(files.output_path(argv));
        if !super::tunable_output(&out) {
            return Err(Missed::Output);
        }
        if sha256(&std::fs::read(&out)?) != self.shipped {
            return Err(Missed::OtherBytes);
        }
        let stdout = replace(&captured.stdout, input.as_bytes(), INPUT_MARK);
        let stderr = replace(&captured.stderr, input.as_bytes(), INPUT_MARK);
        if without_times(&stdout) != without_times(&self.stdout)
            || without_times(&stderr) != without_times(&self.stderr)
        {
            return Err(Missed::OtherMessages);
        }
        captured.stdout = replace(&stdout, INPUT_MARK, step_input.as_bytes());
        captured.stderr = replace(&stderr, INPUT_MARK, step_input.as_bytes());
        Ok(captured)
    }

    /// The one run's command line and the input it names: the step's own when ptxas's
    /// budgets stand, else the PTX at the chosen budgets in `work`, under the step's input's
    /// file name (as the variants are built: `-g` records it).
    fn command(
        &self,
        argv: &[String],
        files: &PtxasArgs,
        ctx: &StepContext,
        work: &Path,
    ) -> Result<(Vec<String>, String), Missed> {
        let step_input = &argv[files.input];
        if self.budgets.is_empty() {
            return Ok((argv.to_vec(), step_input.clone()));
        }
        let ptx = std::fs::read_to_string(ctx.cwd.join(step_input))?;
        let edited = super::ptx::with_budgets(&ptx, &self.budgets())?;
        let name = Path::new(step_input)
            .file_name()
            .map_or_else(|| "input.ptx".into(), std::ffi::OsStr::to_os_string);
        let input = work.join(name);
        std::fs::write(&input, edited)?;
        let input = input.display().to_string();
        let output = files.output_path(argv).display().to_string();
        Ok((files.with_files(argv, &input, &output), input))
    }

    /// The build's warning lines, to show again.
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The verbose mode's lines per kernel.
    pub(crate) fn verbose(&self) -> &[String] {
        &self.verbose
    }

    /// The report's records, naming `output` as the cubin (nvcc's temporaries differ from
    /// build to build).
    pub(crate) fn records(&self, output: &str) -> Vec<schema::Record> {
        let mut records = self.records.clone();
        for r in &mut records {
            r.output = output.to_string();
        }
        records
    }
}

impl Lookup {
    /// Keep what the first build shipped as this step's choice. Nothing is kept when a
    /// record would not read back as the same line (then the report could differ), and a
    /// cache that cannot be written is only slower, never wrong.
    pub(crate) fn store(&self, argv: &[String], shipped: &Shipped<'_>) {
        let Some(files) = PtxasArgs::parse(argv) else {
            return;
        };
        let input = argv[files.input].as_bytes();
        let choice = Choice {
            budgets: shipped
                .budgets
                .iter()
                .map(|(k, b)| (k.clone(), b.regs, b.smem_spill))
                .collect(),
            shipped: sha256(shipped.cubin),
            stdout: replace(&shipped.captured.stdout, input, INPUT_MARK),
            stderr: replace(&shipped.captured.stderr, input, INPUT_MARK),
            warnings: shipped.warnings.to_vec(),
            records: shipped.records.to_vec(),
            verbose: shipped.verbose.to_vec(),
        };
        let Ok(json) = serde_json::to_vec(&choice) else {
            return;
        };
        if decode_json(&json).as_ref() != Some(&choice) || !same_lines(shipped.records) {
            return;
        }
        let bytes = cache_entry::encode(
            &self.key,
            &Entry {
                cubin: json,
                stderr: Vec::new(),
            },
        );
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::create_dir_all(dir)
                .and_then(|()| crate::atomic_file::write(&self.file, &bytes));
        }
    }
}

/// Whether every record reads back from its line as the same line: a number JSON cannot hold
/// (an infinite gain) would not.
fn same_lines(records: &[schema::Record]) -> bool {
    records.iter().all(|r| {
        let Ok(line) = serde_json::to_string(r) else {
            return false;
        };
        serde_json::from_str::<schema::Record>(&line)
            .ok()
            .and_then(|back| serde_json::to_string(&back).ok())
            .is_some_and(|again| again == line)
    })
}

/// What ptxas printed, less the times `-v` reports (`Compile time = 43.212 ms`), which
/// differ from run to run: two runs that print the same thing otherwise printed the same.
fn without_times(messages: &[u8]) -> Vec<u8> {
    const TIME: &[u8] = b"Compile time = ";
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        if messages[i..].starts_with(TIME) {
            out.extend_from_slice(TIME);
            i += TIME.len();
            while i < messages.len() && (messages[i].is_ascii_digit() || messages[i] == b'.') {
                i += 1;
            }
        } else {
            out.push(messages[i]);
            i += 1;
        }
    }
    out
}

/// Why a file where a choice should be cannot be used (it is then rebuilt, with one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Damaged {
    #[error("{0}")]
    Entry(#[from] cache_entry::EntryError),
    /// A good entry that holds no choice (a variant's cubin, or other JSON).
    #[error("not a choice entry")]
    NotAChoice,
}

/// An entry's choice: [`cache_entry`]'s checks, then the JSON it holds in its first part.
fn decode(key: &str, bytes: &[u8]) -> Result<Choice, Damaged> {
    let entry = cache_entry::decode(key, bytes)?;
    if !entry.stderr.is_empty() {
        return Err(Damaged::NotAChoice);
    }
    decode_json(&entry.cubin).ok_or(Damaged::NotAChoice)
}

fn decode_json(json: &[u8]) -> Option<Choice> {
    serde_json::from_slice(json).ok()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice() -> Choice {
        Choice {
            budgets: vec![("k".to_string(), 40, false), ("j".to_string(), 32, true)],
            shipped: sha256(b"cubin"),
            stdout: Vec::new(),
            stderr: b"ptxas info : \x01ptx-input\x01\n".to_vec(),
            warnings: vec!["a warning".to_string()],
            records: vec![schema::Record {
                arch: "sm_90".to_string(),
                kernel: "k".to_string(),
                gain_percent: 0.1 + 0.2,
                ..schema::Record::default()
            }],
            verbose: vec!["nvcc-orion: sm_90 k: ...".to_string()],
        }
    }

    #[test]
    fn round_trip_and_damage() {
        let c = choice();
        let bytes = cache_entry::encode(
            "key",
            &Entry {
                cubin: serde_json::to_vec(&c).unwrap(),
                stderr: Vec::new(),
            },
        );
        assert_eq!(decode("key", &bytes), Ok(c.clone()));
        let other_key = Err(Damaged::Entry(cache_entry::EntryError::OtherKey));
        assert_eq!(decode("other", &bytes), other_key);
        let mut bad = bytes.clone();
        let at = bad.len() - 3;
        bad[at] ^= 1;
        let checksum = Err(Damaged::Entry(cache_entry::EntryError::Checksum));
        assert_eq!(decode("key", &bad), checksum);
        let foreign = cache_entry::encode(
            "key",
            &Entry {
                cubin: b"\x7fELF".to_vec(),
                stderr: Vec::new(),
            },
        );
        assert_eq!(decode("key", &foreign), Err(Damaged::NotAChoice));
        let budgets = c.budgets();
        assert_eq!(budgets["k"], Budget::regs(40));
        assert!(budgets["j"].smem_spill && budgets["j"].regs == 32);
        assert_eq!(c.records("a.cubin")[0].output, "a.cubin");
    }

    #[test]
    fn run_times_are_not_messages() {
        let a = b"ptxas info    : Compile time = 43.212 ms\nptxas info    : Used 40 registers\n";
        let b = b"ptxas info    : Compile time = 3.2 ms\nptxas info    : Used 40 registers\n";
        let c = b"ptxas info    : Compile time = 3.2 ms\nptxas info    : Used 48 registers\n";
        assert_eq!(without_times(a), without_times(b));
        assert_ne!(without_times(a), without_times(c));
    }

    #[test]
    fn records_that_would_not_read_back_are_not_kept() {
        let mut r = choice().records;
        assert!(same_lines(&r));
        r[0].gain_percent = f64::INFINITY;
        assert!(!same_lines(&r));
    }
}

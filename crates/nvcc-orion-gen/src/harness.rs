//! One program on one architecture: nvcc-orion's cubin in every mode against ptxas's own
//! whole-module build of the same PTX with each kernel's chosen budget as `.maxnreg`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nvcc_orion_schema as schema;

use crate::ast::Program;
use crate::compare::{self, Diff};
use crate::elf::{self, Elf};
use crate::flagged;
use crate::refptx::{RefBudget, with_maxnreg};
use crate::tools::{Tools, run, split_words};

/// Every architecture the harness covers.
pub const ARCHS: &[u32] = &[75, 80, 86, 89, 90, 100, 120];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// No settings: the tuner's own choice.
    Default,
    /// `NVCC_ORION=adapt`: the choice plus ranked variants as extra entries.
    Adapt,
    /// `--orion-force=lowest`.
    Lowest,
    /// `--orion-force=spill2smem`: proved or refused, sm_75–90 only.
    Spill2Smem,
    /// `--orion-force=regdem`: regdem, proved or refused, sm_75–90 only.
    Regdem,
    /// `NVCC_ORION=adapt` with `--orion-force=lowest`: every tuned kernel has variants, so
    /// the way they are added (`cubin::entry`, or one more ptxas run) is compared on every
    /// program. Asked for by name (`--mode adapt+lowest`), not in [`Mode::ALL`].
    AdaptLowest,
    /// `NVCC_ORION=train`: adapt's variants with the training selector, whose difference is
    /// host glue. Under [`Mode::Adapt`] its cubin is built too and must be adapt's, byte for
    /// byte; by name (`--mode train`) it is compared as adapt's is.
    Train,
}

impl Mode {
    pub const ALL: &[Mode] = &[
        Mode::Default,
        Mode::Adapt,
        Mode::Lowest,
        Mode::Spill2Smem,
        Mode::Regdem,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Adapt => "adapt",
            Mode::Lowest => "force=lowest",
            Mode::Spill2Smem => "force=spill2smem",
            Mode::Regdem => "force=regdem",
            Mode::AdaptLowest => "adapt+lowest",
            Mode::Train => "train",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL
            .iter()
            .chain(&[Mode::AdaptLowest, Mode::Train])
            .copied()
            .find(|m| m.name() == s || m.name().trim_start_matches("force=") == s)
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Lowest | Mode::AdaptLowest => &["--orion-force=lowest"],
            Mode::Spill2Smem => &["--orion-force=spill2smem"],
            Mode::Regdem => &["--orion-force=regdem"],
            _ => &[],
        }
    }

    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Mode::Adapt | Mode::AdaptLowest => &[("NVCC_ORION", "adapt")],
            Mode::Train => &[("NVCC_ORION", "train")],
            _ => &[],
        }
    }

    /// Ships ranked variants beside the originals.
    fn embeds(self) -> bool {
        matches!(self, Mode::Adapt | Mode::AdaptLowest | Mode::Train)
    }

    /// The rewrites are for sm_75 to sm_90 (docs/DESIGN.md §Architectures).
    pub fn applies(self, arch: u32) -> bool {
        !matches!(self, Mode::Spill2Smem | Mode::Regdem) || arch <= 90
    }
}

/// A difference between what nvcc-orion shipped and the reference, or a step that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub seed: u64,
    pub arch: u32,
    pub mode: String,
    /// The kernel (as the cubin names it), `None` for the module or a step.
    pub kernel: Option<String>,
    /// What differs: the key the reducer keeps while shrinking.
    pub kind: String,
    pub detail: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} sm_{} {}: {}{}: {}",
            self.seed,
            self.arch,
            self.mode,
            self.kind,
            self.kernel
                .as_ref()
                .map(|k| format!(" in {k}"))
                .unwrap_or_default(),
            self.detail
        )
    }
}

/// What checking one program on one architecture found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Modes compiled and compared.
    pub modes: usize,
    /// Kernel comparisons made (a kernel per mode, a variant each).
    pub kernels: usize,
    pub mismatches: Vec<Mismatch>,
    /// Cubins compiled, by mode and how nvcc-orion put each together (its report's
    /// `assembly`; "ptxas's own" where nothing changed).
    pub assembled: BTreeMap<(String, String), usize>,
}

/// The harness: tools, a scratch folder, the modes to run.
#[derive(Debug, Clone)]
pub struct Harness {
    pub tools: Tools,
    pub work: PathBuf,
    pub modes: Vec<Mode>,
    /// nvcc-orion's variant cache (shared by the modes of a run; `None`: off).
    pub cache: Option<PathBuf>,
    /// How each mode's build reaches nvcc-orion.
    pub through: Through,
    /// Read every listing with `nvdisasm`, also where the dumped bytes already prove two
    /// kernels' code the same, and report the shortcut if it would have missed a difference
    /// (the CI subset runs so; a long campaign saves the calls).
    pub every_listing: bool,
    /// nvcc options every build of the run adds (`-lineinfo`, `-Xptxas -warn-spills`,
    /// `-Xptxas -Werror`): nvcc's own compile, so its kept PTX and ptxas step, nvcc-orion's and
    /// the reference's. With any, what ptxas printed and the kernels' line tables are compared
    /// with the reference's too ([`crate::flagged`]).
    pub flags: Vec<String>,
}

/// How the harness compiles a program in a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Through {
    /// `nvcc-orion -cubin a.cu`: the whole driver, the front end run again per mode.
    #[default]
    Nvcc,
    /// `nvcc-orion --ptxas` on nvcc's own kept PTX with its ptxas arguments: the same tuned
    /// step (what ships is decided and assembled there) without a front end per mode, for
    /// long campaigns (bench/results/generator.md); the driver's path is left to the CI subset.
    Ptxas,
}

impl Through {
    pub fn parse(s: &str) -> Option<Through> {
        match s {
            "nvcc" => Some(Through::Nvcc),
            "ptxas" => Some(Through::Ptxas),
            _ => None,
        }
    }
}

/// Where a step's PTX is kept (nvcc's `--keep`), relative to its folder.
const KEPT_PTX: &str = "keep/a.ptx";

/// The PTX and ptxas arguments of nvcc's own step for one architecture.
struct Step {
    dir: PathBuf,
    ptx: String,
    /// ptxas's arguments without the input and `-o`.
    args: Vec<String>,
    /// Compile arguments common to nvcc and nvcc-orion.
    compile: Vec<String>,
    /// Reference builds by budgets.
    refs: BTreeMap<Vec<(String, RefBudget)>, (PathBuf, Elf)>,
    /// What ptxas printed for each reference build, by budgets.
    ref_messages: BTreeMap<Vec<(String, RefBudget)>, String>,
    /// The line-table listings read so far (`-lineinfo`), by the cubins' bytes.
    lines: flagged::LineListings,
}

/// A report record, reduced to what the harness needs.
#[derive(Debug, Clone)]
struct Record {
    kernel: String,
    /// The chosen candidate's budget (`None`: ptxas's own).
    budget: Option<RefBudget>,
    /// The chosen candidate is a rewrite of ours; `Some(proved)`.
    rewrite: Option<bool>,
    /// Embedded variants `(name, budget)` (adapt): `None` for a rewrite (not compared),
    /// `Some(None)` for ptxas's own budget.
    variants: Vec<(String, Option<Option<RefBudget>>)>,
    /// How the cubin was put together (the report's `assembly`).
    assembly: Option<String>,
}

impl Harness {
    /// Check `p` on `arch` in every mode of the harness ([`Harness::check`] adds the `-rdc`
    /// steps): the findings, and the folder the program was written to. `Err`: the program
    /// itself (nvcc refused it) or the harness could not run, not a finding about nvcc-orion.
    /// Public for a check that is about the modes' cubins alone (a stand-in's wrong cubin):
    /// the `-rdc` chain compiles every unit again per mode through the driver.
    pub fn check_modes(&self, p: &Program, arch: u32) -> Result<(Outcome, PathBuf), String> {
        let dir = self.work.join(format!("s{}-sm{arch}", p.seed));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, text) in crate::print::sources(p) {
            std::fs::write(dir.join(name), text).map_err(|e| e.to_string())?;
        }
        let mut step = self.step(&dir, p, arch)?;
        let mut out = Outcome::default();
        let mut default_budgets = None;
        for &mode in self.modes.iter().filter(|m| m.applies(arch)) {
            let at = Where {
                seed: p.seed,
                arch,
                mode,
            };
            self.check_mode(&mut step, at, &mut default_budgets, &mut out)?;
        }
        Ok((out, dir))
    }

    /// One mode: compile, then compare every shipped kernel with the reference at its budget
    /// (symbolically where the mode embeds variants), and the rest of the module.
    fn check_mode(
        &self,
        step: &mut Step,
        at: Where,
        default_budgets: &mut Option<Budgets>,
        out: &mut Outcome,
    ) -> Result<(), String> {
        let mis = |kernel: Option<&str>, d: Diff| at.mismatch(kernel, d);
        let cubin = step
            .dir
            .join(format!("{}.cubin", at.mode.name().replace('=', "-")));
        let (records, messages) = match self.orion(step, at.mode, &cubin) {
            Ok(r) => r,
            Err(d) => {
                out.mismatches.push(mis(None, d));
                return Ok(());
            }
        };
        out.modes += 1;
        let how = records.iter().find_map(|r| r.assembly.clone());
        *out.assembled
            .entry((
                at.mode.name().to_string(),
                how.unwrap_or("ptxas's own".into()),
            ))
            .or_default() += 1;
        let shipped = elf::read(&self.tools, &cubin)?;
        let chosen: Budgets = records
            .iter()
            .map(|r| (r.kernel.clone(), r.budget))
            .collect();
        let reference = self.reference(step, &chosen)?;
        let kernels = entries(&reference.1);
        let skip = rewrites(&records, &mis, out);
        if !self.flags.is_empty() {
            // What ptxas printed: a rewrite's code is not ptxas's, so has no messages to compare.
            let want = step.ref_messages.get(&reference_key(&chosen));
            let ptxas_code = records.iter().all(|r| r.rewrite.is_none());
            if let Some(d) =
                flagged::messages(&messages, want.map_or("", String::as_str)).filter(|_| ptxas_code)
            {
                out.mismatches.push(mis(None, d));
            }
            if flagged::line_tables(&self.flags) {
                for (k, d) in flagged::lines(
                    &self.tools,
                    &mut step.lines,
                    &cubin,
                    &reference.0,
                    &kernels,
                    &skip,
                ) {
                    out.mismatches.push(mis(k.as_deref(), d));
                }
            }
        }
        if at.mode == Mode::Adapt {
            out.mismatches
                .extend(self.train_is_adapt(step, &cubin, &mis));
        }
        if at.mode.embeds() {
            if let Some(d) = default_budgets.as_ref().filter(|_| at.mode == Mode::Adapt) {
                out.mismatches.extend(budgets_disagree(d, &chosen, &mis));
            }
            return self.adapt(
                step, &shipped, &cubin, &reference, &records, &kernels, out, &mis,
            );
        }
        if at.mode == Mode::Default {
            *default_budgets = Some(chosen);
        }
        for k in kernels.iter().filter(|k| !skip.contains(k)) {
            out.kernels += 1;
            for d in compare::kernel_exact(&shipped, &reference.1, k) {
                out.mismatches.push(mis(Some(k), d));
            }
        }
        let mut all = kernels.clone();
        all.extend(entries(&shipped));
        for d in compare::module_exact(&shipped, &reference.1, &all, &skip) {
            out.mismatches.push(mis(None, d));
        }
        Ok(())
    }

    /// Train's cubin against adapt's (`adapt`): the same bytes.
    fn train_is_adapt(
        &self,
        step: &Step,
        adapt: &Path,
        mis: &dyn Fn(Option<&str>, Diff) -> Mismatch,
    ) -> Option<Mismatch> {
        let cubin = step.dir.join("train.cubin");
        let d = match self.orion(step, Mode::Train, &cubin) {
            Err(d) => d,
            Ok(_) if std::fs::read(&cubin).ok() == std::fs::read(adapt).ok() => return None,
            Ok(_) => Diff {
                kind: "train is not adapt".into(),
                detail: "train's cubin differs from adapt's".into(),
            },
        };
        Some(Mismatch {
            mode: Mode::Train.name().into(),
            ..mis(None, d)
        })
    }

    /// nvcc's own PTX and ptxas arguments for `arch`, checked: ptxas on them gives nvcc's cubin.
    fn step(&self, dir: &Path, p: &Program, arch: u32) -> Result<Step, String> {
        let mut compile = vec!["-cubin".to_string(), format!("-arch=sm_{arch}")];
        compile.extend(self.flags.iter().cloned());
        if p.rdc {
            compile.push("-rdc=true".into());
        }
        let args = |extra: &[&str]| -> Vec<String> {
            let mut a = compile.clone();
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let dry = self.nvcc(dir, &args(&["--dryrun", "a.cu", "-o", "plain.cubin"]));
        let line = (dry.stdout + &dry.stderr)
            .lines()
            .find_map(|l| l.strip_prefix("#$ ptxas ").map(str::to_string))
            .ok_or("no ptxas step in nvcc --dryrun")?;
        let mut ptxas = Vec::new();
        let mut words = split_words(&line).into_iter();
        while let Some(w) = words.next() {
            match w.as_str() {
                "-o" => {
                    words.next();
                }
                w if w.ends_with(".ptx") => {}
                _ => ptxas.push(w),
            }
        }
        let _ = std::fs::create_dir_all(dir.join("keep"));
        let kept = self.nvcc(
            dir,
            &args(&["--keep", "--keep-dir", "keep", "a.cu", "-o", "plain.cubin"]),
        );
        if !kept.ok {
            return Err(format!("nvcc refused the program: {}", tail(&kept.stderr)));
        }
        let ptx = std::fs::read_to_string(dir.join(KEPT_PTX)).map_err(|e| e.to_string())?;
        let mut step = Step {
            dir: dir.to_path_buf(),
            ptx,
            args: ptxas,
            compile,
            refs: BTreeMap::new(),
            ref_messages: BTreeMap::new(),
            lines: flagged::LineListings::default(),
        };
        let plain = self.reference(&mut step, &BTreeMap::new())?.0;
        if std::fs::read(&plain).ok() != std::fs::read(dir.join("plain.cubin")).ok() {
            return Err("ptxas on the kept PTX does not give nvcc's own cubin".into());
        }
        Ok(step)
    }

    fn nvcc(&self, dir: &Path, args: &[String]) -> crate::tools::Ran {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(dir, &self.tools.nvcc, &a, &[])
    }

    /// The whole-module ptxas build with `budgets` written as `.maxnreg` (cached per step).
    fn reference(&self, step: &mut Step, budgets: &Budgets) -> Result<(PathBuf, Elf), String> {
        let key = reference_key(budgets);
        if let Some(r) = step.refs.get(&key) {
            return Ok(r.clone());
        }
        let n = step.refs.len();
        let ptx = step.dir.join(format!("ref{n}.ptx"));
        let cubin = step.dir.join(format!("ref{n}.cubin"));
        std::fs::write(&ptx, with_maxnreg(&step.ptx, &key)?).map_err(|e| e.to_string())?;
        let mut a: Vec<&str> = step.args.iter().map(String::as_str).collect();
        let (p, c) = (ptx.to_string_lossy(), cubin.to_string_lossy());
        a.extend([p.as_ref(), "-o", c.as_ref()]);
        let r = run(&step.dir, &self.tools.ptxas, &a, &[]);
        if !r.ok {
            return Err(format!("reference ptxas with {key:?}: {}", tail(&r.stderr)));
        }
        let e = elf::read(&self.tools, &cubin)?;
        step.ref_messages.insert(key.clone(), r.stderr);
        step.refs.insert(key, (cubin.clone(), e.clone()));
        Ok((cubin, e))
    }

    /// Compile through nvcc-orion in `mode`; its report's records for this step.
    fn orion(&self, step: &Step, mode: Mode, cubin: &Path) -> Result<(Vec<Record>, String), Diff> {
        let report = cubin.with_extension("jsonl");
        let _ = std::fs::remove_file(&report);
        let c = cubin.to_string_lossy();
        let ptx = step.dir.join(KEPT_PTX).to_string_lossy().into_owned();
        let mut args: Vec<&str> = Vec::new();
        if self.through == Through::Ptxas {
            args.push("--ptxas");
        }
        args.extend(mode.args());
        match self.through {
            Through::Nvcc => {
                args.extend(step.compile.iter().map(String::as_str));
                args.extend(["a.cu", "-o", c.as_ref()]);
            }
            Through::Ptxas => {
                args.extend(step.args.iter().map(String::as_str));
                args.extend([ptx.as_str(), "-o", c.as_ref()]);
            }
        }
        let rep = report.to_string_lossy().into_owned();
        let nvcc = self.tools.nvcc.to_string_lossy().into_owned();
        let cache = self
            .cache
            .as_ref()
            .map_or("off".to_string(), |c| c.to_string_lossy().into_owned());
        let mut env = vec![
            ("NVCC_ORION_REPORT", rep.as_str()),
            ("NVCC_ORION_NVCC", nvcc.as_str()),
            ("NVCC_ORION_CACHE", cache.as_str()),
        ];
        env.extend_from_slice(mode.env());
        let r = run(&step.dir, &self.tools.orion, &args, &env);
        if !r.ok {
            return Err(Diff {
                kind: "nvcc-orion failed".into(),
                detail: tail(&r.stderr),
            });
        }
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let records = text
            .lines()
            .map(|l| {
                schema::Line::parse(l)
                    .map_err(|e| Diff {
                        kind: "report unreadable".into(),
                        detail: e.to_string(),
                    })
                    // A passed-through compile reads as a kernel with nothing chosen.
                    .map(|line| record(line.kernel().unwrap_or(&schema::Record::default())))
            })
            .collect::<Result<_, _>>()?;
        Ok((records, r.stderr))
    }

    /// Under adapt: each original kernel and each `K__orion_v<k>` against kernel K of a
    /// whole-module build at that candidate's budget, symbolically (the module's bank 4 may be
    /// laid out differently with the extra entries).
    #[allow(clippy::too_many_arguments)]
    fn adapt(
        &self,
        step: &mut Step,
        shipped: &Elf,
        cubin: &Path,
        reference: &(PathBuf, Elf),
        records: &[Record],
        kernels: &[String],
        out: &mut Outcome,
        mis: &dyn Fn(Option<&str>, Diff) -> Mismatch,
    ) -> Result<(), String> {
        let mut listings = Listings::default();
        let ship = (shipped, cubin);
        for k in kernels {
            if records
                .iter()
                .any(|r| &r.kernel == k && r.rewrite.is_some())
            {
                continue;
            }
            out.kernels += 1;
            let refe = (&reference.1, reference.0.as_path());
            for d in self.symbolic(&mut listings, ship, refe, k, k)? {
                out.mismatches.push(mis(Some(k), d));
            }
        }
        let chosen: Budgets = records
            .iter()
            .map(|r| (r.kernel.clone(), r.budget))
            .collect();
        for r in records {
            for (name, budget) in r.variants.iter().skip(1) {
                let Some(b) = budget else { continue };
                let mut at = chosen.clone();
                at.insert(r.kernel.clone(), *b);
                let refv = self.reference(step, &at)?;
                out.kernels += 1;
                let refe = (&refv.1, refv.0.as_path());
                for d in self.symbolic(&mut listings, ship, refe, name, &r.kernel)? {
                    out.mismatches.push(mis(Some(name), d));
                }
            }
        }
        // Module level: the same constants and objects, whatever the bank-4 layout. A cubin
        // from one more ptxas run is that run's module: a device function's address in
        // initialized data can be a number ptxas gives it in the module (seen on sm_90 and
        // sm_100), which the variants' copies change, so it is compared with ptxas's own
        // build of the module with them.
        let module = match records.iter().find_map(|r| r.assembly.as_deref()) {
            Some("multi-variant") => self.with_variants(step, records)?,
            _ => None,
        };
        let module = module.as_ref().unwrap_or(&reference.1);
        for s in [".nv.constant3", ".nv.global.init"] {
            if shipped.blocks.get(s) != module.blocks.get(s) {
                out.mismatches.push(mis(
                    None,
                    Diff {
                        kind: "module section".into(),
                        detail: format!("{s} differs"),
                    },
                ));
            }
        }
        Ok(())
    }
}

impl Harness {
    /// `ship`'s function `ship_k` against `refe`'s kernel `ref_k` symbolically (each cubin
    /// with its path): the code, read as listings only where its bytes differ, and the
    /// attributes.
    fn symbolic(
        &self,
        listings: &mut Listings,
        ship: (&Elf, &Path),
        refe: (&Elf, &Path),
        ship_k: &str,
        ref_k: &str,
    ) -> Result<Vec<Diff>, String> {
        let same = compare::text_identical(ship.0, refe.0, ship_k, ref_k);
        let mut out = Vec::new();
        if !same || self.every_listing {
            listings.read(&self.tools, ship.1)?;
            listings.read(&self.tools, refe.1)?;
            let text = compare::text_symbolic(
                (ship.0, listings.of(ship.1)),
                (refe.0, listings.of(refe.1)),
                ship_k,
                ref_k,
            );
            if same && !text.is_empty() {
                out.push(Diff {
                    kind: "harness shortcut".into(),
                    detail: format!("{ship_k}: equal bytes, yet the listings differ"),
                });
            }
            out.extend(text);
        }
        out.extend(compare::attributes_symbolic(ship.0, refe.0, ship_k, ref_k));
        Ok(out)
    }

    /// ptxas's whole-module build of the step's PTX with each embedded variant copied in right
    /// after its kernel, every kernel and copy at its budget (what nvcc-orion's extra run
    /// compiles); `None` where a variant is a rewrite (its PTX budget is not in the report).
    fn with_variants(&self, step: &Step, records: &[Record]) -> Result<Option<Elf>, String> {
        let mut copies = Vec::new();
        let mut key = Vec::new();
        for r in records {
            if let Some(b) = r.budget {
                key.push((r.kernel.clone(), b));
            }
            for (name, budget) in r.variants.iter().skip(1) {
                let Some(budget) = budget else {
                    return Ok(None);
                };
                copies.push((r.kernel.clone(), name.clone()));
                if let Some(b) = budget {
                    key.push((name.clone(), *b));
                }
            }
        }
        let text =
            crate::refptx::with_copies(&step.ptx, &copies).and_then(|t| with_maxnreg(&t, &key))?;
        let ptx = step.dir.join("variants.ptx");
        let cubin = step.dir.join("variants.cubin");
        std::fs::write(&ptx, text).map_err(|e| e.to_string())?;
        let mut a: Vec<&str> = step.args.iter().map(String::as_str).collect();
        let (p, c) = (ptx.to_string_lossy(), cubin.to_string_lossy());
        a.extend([p.as_ref(), "-o", c.as_ref()]);
        let r = run(&step.dir, &self.tools.ptxas, &a, &[]);
        if !r.ok {
            return Err(format!(
                "reference ptxas with the variants: {}",
                tail(&r.stderr)
            ));
        }
        elf::read(&self.tools, &cubin).map(Some)
    }
}

/// `nvdisasm` listings read so far, by the cubin's bytes: a file with the bytes of one already
/// listed gets that listing without another run, which would print the same lines (adapt's
/// cubin is, byte for byte, the default choice's reference where no kernel has a variant;
/// issue 50: nvdisasm costs ~0.4 s of CPU a run whatever the cubin's size).
#[derive(Default)]
struct Listings {
    by_bytes: BTreeMap<Vec<u8>, BTreeMap<String, Vec<String>>>,
    bytes_of: BTreeMap<PathBuf, Vec<u8>>,
}

impl Listings {
    fn read(&mut self, tools: &Tools, cubin: &Path) -> Result<(), String> {
        if self.bytes_of.contains_key(cubin) {
            return Ok(());
        }
        let bytes = std::fs::read(cubin).map_err(|e| format!("{}: {e}", cubin.display()))?;
        if !self.by_bytes.contains_key(&bytes) {
            let listing = elf::listing(tools, cubin)?;
            self.by_bytes.insert(bytes.clone(), listing);
        }
        self.bytes_of.insert(cubin.to_path_buf(), bytes);
        Ok(())
    }

    /// The listing of `cubin`, [`Listings::read`] before.
    fn of(&self, cubin: &Path) -> &BTreeMap<String, Vec<String>> {
        &self.by_bytes[&self.bytes_of[cubin]]
    }
}

/// Each kernel's chosen budget (`None`: ptxas's own).
type Budgets = BTreeMap<String, Option<RefBudget>>;

/// Which program, architecture and mode a finding is about.
#[derive(Clone, Copy)]
struct Where {
    seed: u64,
    arch: u32,
    mode: Mode,
}

impl Where {
    fn mismatch(self, kernel: Option<&str>, d: Diff) -> Mismatch {
        Mismatch {
            seed: self.seed,
            arch: self.arch,
            mode: self.mode.name().into(),
            kernel: kernel.map(str::to_string),
            kind: d.kind,
            detail: d.detail,
        }
    }
}

/// The kernels whose chosen candidate is a rewrite of ours (compared by the checker's proof,
/// not with ptxas); an unproved one is a finding.
/// The key of a reference build: the kernels given a budget.
fn reference_key(budgets: &Budgets) -> Vec<(String, RefBudget)> {
    budgets
        .iter()
        .filter_map(|(k, b)| Some((k.clone(), (*b)?)))
        .collect()
}

fn rewrites(
    records: &[Record],
    mis: &dyn Fn(Option<&str>, Diff) -> Mismatch,
    out: &mut Outcome,
) -> Vec<String> {
    let mut skip = Vec::new();
    for r in records.iter().filter(|r| r.rewrite.is_some()) {
        if r.rewrite == Some(false) {
            out.mismatches.push(mis(
                Some(&r.kernel),
                Diff {
                    kind: "unproved rewrite shipped".into(),
                    detail: "the chosen candidate is a rewrite without a proof".into(),
                },
            ));
        }
        skip.push(r.kernel.clone());
    }
    skip
}

/// Adapt's chosen budgets against default's: the static winner must be tune's.
fn budgets_disagree(
    default: &Budgets,
    adapt: &Budgets,
    mis: &dyn Fn(Option<&str>, Diff) -> Mismatch,
) -> Vec<Mismatch> {
    let show = |b: &Option<RefBudget>| {
        b.map_or("ptxas's own".to_string(), |b| {
            format!("{}{}", b.regs, if b.pragma { "+smem" } else { "" })
        })
    };
    adapt
        .iter()
        .filter_map(|(k, b)| {
            let db = default.get(k).filter(|db| *db != b)?;
            Some(mis(
                Some(k),
                Diff {
                    kind: "adapt chose another budget".into(),
                    detail: format!("adapt ships {} / default ships {}", show(b), show(db)),
                },
            ))
        })
        .collect()
}

/// The kernels (`ENTRY` symbols) of a cubin.
pub fn entries(e: &Elf) -> Vec<String> {
    let mut v: Vec<String> = e
        .symbols
        .iter()
        .filter(|s| s.ty == "FUNC" && s.other.contains("ENTRY"))
        .map(|s| s.name.clone())
        .collect();
    v.sort();
    v
}

fn budget(b: &schema::Budget) -> RefBudget {
    RefBudget {
        // A rewrite's ptxas budget is `regdem_from` where it has one.
        regs: b.ptxas_regs(),
        pragma: b.smem_spill,
    }
}

fn is_rewrite(b: Option<&schema::Budget>) -> bool {
    b.is_some_and(|b| b.rewrite().is_some())
}

/// Whether the report says the chosen rewrite (budget `cb`) was proved: its `verdict` where
/// it has one (spill2smem, which `explain` shows), else the `transform` note at the
/// chosen budget (regdem records no verdict): `regdem at <regs>: ... proved (...)`, not
/// `... at <regs>: not applied: ...` (the rewrite's old name in older reports).
fn proved(v: &schema::Record, cb: &schema::Budget) -> bool {
    if let Some(d) = &v.verdict {
        return d.proved;
    }
    let at = format!("{}: ", cb.regs);
    let text = v.transform.as_deref().unwrap_or("");
    let key = cb.rewrite().map_or("", |r| r.key());
    schema::note_names(key).any(|name| {
        text.split(&format!("{name} at "))
            .skip(1)
            .filter_map(|note| note.strip_prefix(&at))
            .any(|note| !note.starts_with("not applied") && note.contains("proved ("))
    })
}

fn record(v: &schema::Record) -> Record {
    let cb = v.candidates.get(v.chosen).and_then(|c| c.budget.as_ref());
    let rewrite = cb.filter(|b| is_rewrite(Some(b))).map(|b| proved(v, b));
    let variants = v
        .variants
        .iter()
        .filter(|e| e.dropped.is_none())
        .map(|e| {
            let c = v.candidates[e.candidate].budget.as_ref();
            let b = (!is_rewrite(c)).then(|| c.map(budget));
            (e.name.clone(), b)
        })
        .collect();
    Record {
        kernel: v.kernel.clone(),
        budget: cb.map(budget),
        rewrite,
        variants,
        assembly: v.assembly.as_ref().map(|a| a.name().to_string()),
    }
}

/// The last lines of a tool's output, for a finding.
pub fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

impl Outcome {
    /// One line per field, tabs between, for a cache file: the counts (the assemblies as
    /// `mode/how=n` joined by `;`), then a line per mismatch.
    pub fn to_text(&self) -> String {
        let assembled: Vec<String> = self
            .assembled
            .iter()
            .map(|((m, h), n)| format!("{m}/{h}={n}"))
            .collect();
        let mut s = format!(
            "{}\t{}\t{}\n",
            self.modes,
            self.kernels,
            assembled.join(";")
        );
        for m in &self.mismatches {
            let esc = |x: &str| {
                x.replace('\\', "\\\\")
                    .replace('\n', "\\n")
                    .replace('\t', "\\t")
            };
            s.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\n",
                m.seed,
                m.arch,
                esc(&m.mode),
                esc(m.kernel.as_deref().unwrap_or("")),
                esc(&m.kind),
                esc(&m.detail)
            ));
        }
        s
    }

    pub fn from_text(t: &str) -> Option<Outcome> {
        let unesc = |x: &str| {
            let mut out = String::new();
            let mut it = x.chars();
            while let Some(c) = it.next() {
                if c == '\\' {
                    match it.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(o) => out.push(o),
                        None => {}
                    }
                } else {
                    out.push(c);
                }
            }
            out
        };
        let mut lines = t.lines();
        let counts: Vec<&str> = lines.next()?.split('\t').collect();
        let [m, k, a] = counts[..] else {
            return None;
        };
        let mut assembled = BTreeMap::new();
        for part in a.split(';').filter(|p| !p.is_empty()) {
            let (key, n) = part.rsplit_once('=')?;
            let (mode, how) = key.split_once('/')?;
            assembled.insert((mode.to_string(), how.to_string()), n.parse().ok()?);
        }
        let mut o = Outcome {
            modes: m.parse().ok()?,
            kernels: k.parse().ok()?,
            mismatches: Vec::new(),
            assembled,
        };
        for l in lines {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() != 6 {
                return None;
            }
            o.mismatches.push(Mismatch {
                seed: f[0].parse().ok()?,
                arch: f[1].parse().ok()?,
                mode: unesc(f[2]),
                kernel: Some(unesc(f[3])).filter(|k| !k.is_empty()),
                kind: unesc(f[4]),
                detail: unesc(f[5]),
            });
        }
        Some(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `regdem`'s proof is read from the report's note at the chosen budget (it
    /// records no verdict); a refusal there, or a proof at another budget, is no proof.
    #[test]
    fn a_regdem_rewrite_is_proved_by_its_note_at_the_chosen_budget() {
        let line = |regs: u32, note: &str, verdict: &str| {
            let text = format!(
                r#"{{"kernel":"k","chosen":1,"candidates":[{{"budget":null}},{{"budget":{{"regs":{regs},"smem_spill":false,"regdem_from":64}}}}],"transform":{note:?}{verdict}}}"#
            );
            schema::Line::parse(&text)
                .unwrap()
                .kernel()
                .unwrap()
                .clone()
        };
        let note = "regdem at 48: 64 → 48 registers: 11 register(s) demoted; \
                    proved (551 instructions checked); base proved for 4774 block shapes; \
                    regdem at 40: not applied: 21 slots need 86016 bytes";
        assert_eq!(record(&line(48, note, "")).rewrite, Some(true));
        assert_eq!(record(&line(40, note, "")).rewrite, Some(false));
        assert_eq!(record(&line(32, note, "")).rewrite, Some(false));
        // A report from before issue 50 named the rewrite by its old name.
        let old_name = schema::note_names("regdem").nth(1).unwrap();
        let old = note.replace("regdem at", &format!("{old_name} at"));
        assert_eq!(record(&line(48, &old, "")).rewrite, Some(true));
        assert_eq!(record(&line(40, &old, "")).rewrite, Some(false));
        // A verdict, where there is one, decides.
        let refused = r#","verdict":{"budget":48,"proved":false,"detail":"x"}"#;
        assert_eq!(record(&line(48, note, refused)).rewrite, Some(false));
    }

    #[test]
    fn an_outcome_reads_back_as_written() {
        let o = Outcome {
            modes: 4,
            kernels: 17,
            mismatches: vec![Mismatch {
                seed: 7,
                arch: 90,
                mode: "adapt".into(),
                kernel: Some("_Z1kv".into()),
                kind: "code".into(),
                detail: "a\tb\nc".into(),
            }],
            assembled: BTreeMap::from([
                (("adapt".into(), "variants-added".into()), 1),
                (("default".into(), "ptxas's own".into()), 2),
            ]),
        };
        let back = Outcome::from_text(&o.to_text()).unwrap();
        assert_eq!(back.to_text(), o.to_text());
        assert_eq!(back.assembled, o.assembled);
        assert_eq!(back.mismatches[0].detail, "a\tb\nc");
        // A cache file of the earlier format (two counts) is not read.
        assert!(Outcome::from_text("4\t17\n").is_none());
    }
}

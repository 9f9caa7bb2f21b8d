//! Helpers for the nvcc parity test (`tests/fidelity/parity.rs`): locating the real toolkit, describing a
//! case, running one invocation in a fresh directory, normalising what nvcc randomises, and
//! comparing two runs output by output.
//!
//! # What is normalised, and why
//!
//! Every variant of a case (real nvcc, nvcc-orion `off`, nvcc-orion `replay`) runs in the same
//! directory `<root>/cNN/w` with `TMPDIR` `<root>/cNN/t`, one after the other; after each run
//! they are renamed to `<root>/cNN/<label>` and `tmp-<label>`. nvcc writes the absolute source
//! path into places no normalisation can reach: the PTX compressed inside `.nv_fatbin`, and the
//! DWARF strings that `-G` spells as `.b8 47,116,109,...` byte lists split across PTX lines.
//! Running every variant under the same path makes all of those identical. The paths are still
//! replaced by `<WORK>`/`<TMP>` in text (nvcc prints them in diagnostics, `--dryrun`, `.d`
//! files) and by a run of `#` of the same length in binaries.
//!
//! nvcc names its temporaries `tmpxft_<pid in hex>_<counter>-N_...`: the pid differs from run to
//! run, so `tmpxft_[0-9a-f]+_[0-9a-f]+` becomes `tmpxft_<ID>` in text (and the hex digits become
//! `0` in binaries). `ptxas -v` prints `Compile time = 1.234 ms`, a wall-clock time: the number
//! is replaced by `<T>`.
//!
//! Checked with two runs of the real nvcc on every case (`PARITY_SELF_CHECK=1`): with the same
//! path and after these normalisations, every output is byte-identical, objects and
//! executables included (the module id nvcc embeds does not depend on the pid), with two
//! exceptions: the order of `ptxas -v` reports under `--threads` (see
//! [`Case::unordered_stderr`]), and objects built with `-G`, whose device debug info names
//! tmpxft temporaries inside the compressed fatbin (see [`DeviceCode::mentions_tmpxft`]); those
//! are compared by their extracted, normalised images only.

#![allow(dead_code)]

pub mod fixtures;
pub mod listing_memo;
pub mod oracle_kernels;
pub mod sass_kernels;
pub mod sccache;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether the heaviest property tests run in full (`NVCC_ORION_FULL_TESTS=1`), not on the
/// fixed subset that keeps CI within its time (each such test says which subset, and
/// `bench/results/` records the full runs).
#[allow(dead_code)]
pub fn full_tests() -> bool {
    std::env::var_os("NVCC_ORION_FULL_TESTS").is_some_and(|v| v == "1")
}

/// The kernels and headers the cases compile.
/// FNV-1a over `bytes`, continuing from `h` (start with `0xcbf2_9ce4_8422_2325`): the key of
/// a test's build-once folder.
pub fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

pub fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("kernels")
}

/// A tool the distribution packages (ccache, sccache) that `scripts/setup.sh` installs under
/// CI (`NVCC_ORION_SETUP_CCACHE=1`): its path, or `None` with a skip line where it is missing
/// and cannot be installed (not root, no apt-get). Missing where it could be, under CI: a
/// failure.
pub fn packaged_tool(name: &str, test: &str) -> Option<PathBuf> {
    if let Ok(p) = which::which(name) {
        return Some(p);
    }
    let installable = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        && which::which("apt-get").is_ok();
    assert!(
        std::env::var_os("CI").is_none() || !installable,
        "{test}: {name} missing although scripts/setup.sh could install it (NVCC_ORION_SETUP_CCACHE=1)"
    );
    skipped(
        test,
        &format!("{name} is not installed and cannot be installed here"),
    );
    None
}

/// The real nvcc: `NVCC_ORION_NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on `PATH`.
pub fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC_ORION_NVCC").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(home).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

/// A toolkit tool next to nvcc (`cuobjdump`, ...), else the name (looked up on `PATH`).
/// nvdisasm comes behind the suite's memo of its listings ([`listing_memo`]).
pub fn toolkit_tool(nvcc: &Path, name: &str) -> PathBuf {
    let sibling = nvcc.with_file_name(name);
    if sibling.is_file() && name == "nvdisasm" {
        listing_memo::nvdisasm(&sibling)
    } else if sibling.is_file() {
        sibling
    } else {
        PathBuf::from(name)
    }
}

/// The toolkit's own `name` beside `nvcc`: behind the suite's memos (`scripts/toolkit-memo/`),
/// the real tool they run, for a test whose subject is the tool's file itself (copied into a
/// Triton layout, packed for a compile farm); else the sibling itself.
pub fn real_tool(nvcc: &Path, name: &str) -> PathBuf {
    let sibling = nvcc.with_file_name(name);
    listing_memo::real_behind(&sibling).unwrap_or(sibling)
}

/// The real nvcc behind the suite's toolkit (its ptxas memo leads to it), else `nvcc` itself:
/// for a test whose subject is the toolkit's folder (where CMake finds it, what a farm packs).
pub fn real_nvcc(nvcc: &Path) -> PathBuf {
    match listing_memo::real_behind(&nvcc.with_file_name("ptxas")) {
        Some(ptxas) => ptxas.with_file_name("nvcc"),
        None => nvcc.to_path_buf(),
    }
}

/// What the real nvcc must do on a case: a guard against a case that silently tests nothing
/// (an invocation meant to compile that fails for an unrelated reason, or the reverse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Success,
    Failure,
}

/// One row of the table: an nvcc command line and what it needs around it.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    /// Arguments after `nvcc`. `{dir}` is replaced by the variant's absolute work directory.
    pub args: Vec<String>,
    /// Files copied from `tests/kernels/` (relative paths kept) into the work directory.
    pub inputs: Vec<&'static str>,
    /// Files copied from the shared fixture folder (objects compiled once by the real nvcc).
    pub fixtures: Vec<&'static str>,
    /// Extra files written into the work directory: (relative path, contents).
    pub files: Vec<(&'static str, String)>,
    /// Directories created in the work directory before the run.
    pub dirs: Vec<&'static str>,
    /// Environment for all three runs (`{dir}` substituted as in `args`).
    pub env: Vec<(&'static str, String)>,
    /// Arguments appended only for nvcc-orion (they must be stripped before nvcc sees them).
    pub orion_args: Vec<String>,
    pub expect: Expect,
    /// Files the real nvcc must have produced (relative to the work directory).
    pub produces: Vec<&'static str>,
    /// Compare stderr as a sorted list of lines: with `--threads`/`-t`, nvcc runs the ptxas
    /// of each target in parallel and their `-v` reports come out in either order (seen with
    /// two runs of the real nvcc).
    pub unordered_stderr: bool,
    /// A `--dryrun` listing: nvcc-orion's ptxas shim directory must come first on the
    /// `#$ PATH=` line (for compiler caches that run the steps); it is then compared without.
    pub shim_on_path: bool,
    /// `Some(true)`: nvcc-orion must really replay this invocation in replay mode (checked with
    /// an extra verbose run); `Some(false)`: it must pass it to nvcc unchanged; `None`: no check.
    pub replay_check: Option<bool>,
}

/// Shorthand to start a case: `case("name", &["-c", "k.cu"])`.
pub fn case(name: &'static str, args: &[&str]) -> Case {
    Case {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        inputs: Vec::new(),
        fixtures: Vec::new(),
        files: Vec::new(),
        dirs: Vec::new(),
        env: Vec::new(),
        orion_args: Vec::new(),
        expect: Expect::Success,
        produces: Vec::new(),
        unordered_stderr: false,
        shim_on_path: false,
        replay_check: None,
    }
}

impl Case {
    pub fn inputs(mut self, inputs: &[&'static str]) -> Self {
        self.inputs.extend_from_slice(inputs);
        self
    }
    pub fn fixtures(mut self, fixtures: &[&'static str]) -> Self {
        self.fixtures.extend_from_slice(fixtures);
        self
    }
    pub fn file(mut self, path: &'static str, contents: &str) -> Self {
        self.files.push((path, contents.to_string()));
        self
    }
    pub fn dir(mut self, path: &'static str) -> Self {
        self.dirs.push(path);
        self
    }
    pub fn env(mut self, key: &'static str, value: &str) -> Self {
        self.env.push((key, value.to_string()));
        self
    }
    pub fn orion_arg(mut self, arg: &str) -> Self {
        self.orion_args.push(arg.to_string());
        self
    }
    pub fn fails(mut self) -> Self {
        self.expect = Expect::Failure;
        self
    }
    pub fn replays(mut self) -> Self {
        self.replay_check = Some(true);
        self
    }
    pub fn passes_through(mut self) -> Self {
        self.replay_check = Some(false);
        self
    }
    pub fn shim_on_path(mut self) -> Self {
        self.shim_on_path = true;
        self
    }

    pub fn unordered_stderr(mut self) -> Self {
        self.unordered_stderr = true;
        self
    }
    pub fn produces(mut self, files: &[&'static str]) -> Self {
        self.produces.extend_from_slice(files);
        self
    }
}

/// Who runs a case.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Name of the directory the run is kept in.
    pub label: &'static str,
    pub exe: PathBuf,
    /// `NVCC_ORION` value, or `None` for the real nvcc.
    pub orion_mode: Option<&'static str>,
    /// Set `NVCC_ORION_VERBOSE=1` (used to check that replay really replays).
    pub verbose: bool,
}

/// Environment variables that would change nvcc's behaviour if inherited from the shell
/// running the tests (nvcc-orion's own settings are cleared as for every command: see
/// [`command`]).
const SCRUBBED_ENV: &[&str] = &[
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "NVCC_CCBIN",
    "TMPDIR",
];

/// Everything one run left behind.
#[derive(Debug)]
pub struct RunResult {
    pub label: &'static str,
    /// The command line, shell-quoted, for failure messages.
    pub command: String,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The directory the command ran in (renamed since; see `files`).
    pub work: PathBuf,
    /// The `TMPDIR` the command ran with.
    pub tmp: PathBuf,
    /// Where `work` and `tmp` are kept after the run.
    pub kept: PathBuf,
    pub kept_tmp: PathBuf,
    /// Files under the work directory after the run (inputs included), relative path → path.
    pub files: BTreeMap<String, PathBuf>,
    /// Files left in `TMPDIR` after the run.
    pub tmp_files: Vec<String>,
}

fn substitute(s: &str, work: &Path) -> String {
    s.replace("{dir}", &work.to_string_lossy())
}

fn copy_into(src: &Path, dst: &Path) {
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::copy(src, dst)
        .unwrap_or_else(|e| panic!("copy {} → {}: {e}", src.display(), dst.display()));
}

/// Prepare the work directory of one variant and run the case there.
///
/// Every variant runs in the same directory, `<case_dir>/w` (with `TMPDIR` `<case_dir>/t`),
/// which is renamed to `<case_dir>/<label>` (`tmp-<label>`) afterwards: nvcc embeds the
/// absolute source path in places no normalisation can reach (compressed PTX in `.nv_fatbin`,
/// DWARF strings spelt as `.b8` byte lists under `-G`), so the variants must see the same path.
pub fn run_variant(
    case: &Case,
    variant: &Variant,
    case_dir: &Path,
    fixture_dir: Option<&Path>,
    real_nvcc: &Path,
) -> RunResult {
    let work = case_dir.join("w");
    let tmp = case_dir.join("t");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    for input in &case.inputs {
        copy_into(&kernels_dir().join(input), &work.join(input));
    }
    for fixture in &case.fixtures {
        let dir = fixture_dir.expect("case uses fixtures but none were built");
        copy_into(&dir.join(fixture), &work.join(fixture));
    }
    for (path, contents) in &case.files {
        let p = work.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, substitute(contents, &work)).unwrap();
    }
    for d in &case.dirs {
        std::fs::create_dir_all(work.join(d)).unwrap();
    }

    let mut args: Vec<String> = case.args.iter().map(|a| substitute(a, &work)).collect();
    if variant.orion_mode.is_some() {
        args.extend(case.orion_args.iter().map(|a| substitute(a, &work)));
    }
    let mut cmd = Command::new(&variant.exe);
    cmd.args(&args).current_dir(&work);
    for key in SCRUBBED_ENV {
        cmd.env_remove(key);
    }
    clear_our_settings(&mut cmd);
    cmd.env("TMPDIR", &tmp);
    let mut env_desc = String::new();
    if let Some(mode) = variant.orion_mode {
        cmd.env("NVCC_ORION", mode)
            .env("NVCC_ORION_NVCC", real_nvcc);
        let _ = write!(
            env_desc,
            "NVCC_ORION={mode} NVCC_ORION_NVCC={} ",
            real_nvcc.display()
        );
        if variant.verbose {
            cmd.env("NVCC_ORION_VERBOSE", "1");
            env_desc.push_str("NVCC_ORION_VERBOSE=1 ");
        }
    }
    for (k, v) in &case.env {
        let v = substitute(v, &work);
        let _ = write!(env_desc, "{k}={} ", shell_words::quote(&v));
        cmd.env(k, v);
    }
    let command = format!(
        "cd {} && {env_desc}{} {}",
        shell_words::quote(&work.to_string_lossy()),
        variant.exe.display(),
        shell_words::join(&args)
    );
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "[{}] cannot start {}: {e}",
            case.name,
            variant.exe.display()
        )
    });

    let kept = case_dir.join(variant.label);
    let kept_tmp = case_dir.join(format!("tmp-{}", variant.label));
    std::fs::rename(&work, &kept).unwrap();
    std::fs::rename(&tmp, &kept_tmp).unwrap();
    let mut files = BTreeMap::new();
    list_files(&kept, &kept, &mut files);
    let mut tmp_map = BTreeMap::new();
    list_files(&kept_tmp, &kept_tmp, &mut tmp_map);
    RunResult {
        label: variant.label,
        command,
        code: out.status.code(),
        stdout: out.stdout,
        stderr: out.stderr,
        work,
        tmp,
        kept,
        kept_tmp,
        files,
        tmp_files: tmp_map.into_keys().collect(),
    }
}

fn list_files(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            // Directories matter only through the files in them (empty ones are created by the
            // case setup, e.g. for `-odir`).
            list_files(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(rel, path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------

/// Replace each `tmpxft_<hex>_<hex>` by `tmpxft_<ID>` (text).
pub fn normalise_tmpxft_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find("tmpxft_") {
        out.push_str(&rest[..pos + 7]);
        rest = &rest[pos + 7..];
        let bytes = rest.as_bytes();
        let hex = |b: u8| b.is_ascii_hexdigit();
        let a = bytes.iter().take_while(|&&b| hex(b)).count();
        if a > 0 && bytes.get(a) == Some(&b'_') {
            let b = bytes[a + 1..].iter().take_while(|&&b| hex(b)).count();
            if b > 0 {
                out.push_str("<ID>");
                rest = &rest[a + 1 + b..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replace the number in `Compile time = 1.234 ms` (ptxas `-v`) by `<T>`.
pub fn normalise_times(s: &str) -> String {
    const KEY: &str = "Compile time = ";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find(KEY) {
        out.push_str(&rest[..pos + KEY.len()]);
        rest = &rest[pos + KEY.len()..];
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if n > 0 {
            out.push_str("<T>");
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

/// The full text normalisation (paths, tmpxft names, times).
pub fn normalise_text(bytes: &[u8], run: &RunResult) -> String {
    let s = String::from_utf8_lossy(bytes);
    // The TMPDIR path first: it is not a prefix of the work path, but be explicit.
    let s = s.replace(&*run.tmp.to_string_lossy(), "<TMP>");
    let s = s.replace(&*run.work.to_string_lossy(), "<WORK>");
    let s = s.replace(&*run.kept_tmp.to_string_lossy(), "<TMP>");
    let s = s.replace(&*run.kept.to_string_lossy(), "<WORK>");
    normalise_times(&normalise_tmpxft_text(&s))
}

fn replace_same_len(data: &mut [u8], needle: &[u8]) {
    if needle.is_empty() || data.len() < needle.len() {
        return;
    }
    let mut i = 0;
    while i + needle.len() <= data.len() {
        if &data[i..i + needle.len()] == needle {
            data[i..i + needle.len()].fill(b'#');
            i += needle.len();
        } else {
            i += 1;
        }
    }
}

/// The lines of `s`, sorted (for output whose line order nvcc itself does not fix).
pub fn sorted_lines(s: &str) -> String {
    let mut lines: Vec<&str> = s.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// Binary normalisation that keeps every offset: paths become `#…#` of the same length and the
/// hex digits of tmpxft names become `0`.
pub fn normalise_binary(data: &[u8], run: &RunResult) -> Vec<u8> {
    let mut d = data.to_vec();
    replace_same_len(&mut d, run.tmp.to_string_lossy().as_bytes());
    replace_same_len(&mut d, run.work.to_string_lossy().as_bytes());
    zero_tmpxft(&mut d);
    d
}

/// The hex digits of every tmpxft name in `d` made `0` (offsets kept): two nvcc runs of the
/// same work differ in them alone.
pub fn zero_tmpxft(d: &mut [u8]) {
    let key = b"tmpxft_";
    let mut i = 0;
    while i + key.len() <= d.len() {
        if &d[i..i + key.len()] == key {
            i += key.len();
            while i < d.len() && (d[i].is_ascii_hexdigit() || d[i] == b'_') {
                if d[i] != b'_' {
                    d[i] = b'0';
                }
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}

/// Normalise a relative file name (`--keep` temporaries may carry tmpxft ids).
pub fn normalise_name(name: &str) -> String {
    normalise_tmpxft_text(name)
}

// ---------------------------------------------------------------------------------------------
// Diffs
// ---------------------------------------------------------------------------------------------

/// A readable diff of two texts (`-` real nvcc, `+` the other run, ` ` both), limited to a
/// window around the first differing line: some outputs, e.g. `-E`, are megabytes long.
pub fn text_diff(left: &str, right: &str) -> String {
    let l: Vec<&str> = left.lines().collect();
    let r: Vec<&str> = right.lines().collect();
    let first = l
        .iter()
        .zip(&r)
        .position(|(a, b)| a != b)
        .unwrap_or(l.len().min(r.len()));
    const WINDOW: usize = 40;
    let start = first.saturating_sub(3);
    let lw = &l[start.min(l.len())..(start + WINDOW).min(l.len())];
    let rw = &r[start.min(r.len())..(start + WINDOW).min(r.len())];
    let mut s = format!(
        "first difference at line {} ({} vs {} lines; `-` real nvcc, `+` this run):\n",
        first + 1,
        l.len(),
        r.len()
    );
    // Longest common subsequence of the two windows (at most 40 × 40).
    let mut lcs = vec![vec![0usize; rw.len() + 1]; lw.len() + 1];
    for i in (0..lw.len()).rev() {
        for j in (0..rw.len()).rev() {
            lcs[i][j] = if lw[i] == rw[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < lw.len() || j < rw.len() {
        if i < lw.len() && j < rw.len() && lw[i] == rw[j] {
            let _ = writeln!(s, "  {}", lw[i]);
            i += 1;
            j += 1;
        } else if j < rw.len() && (i == lw.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            let _ = writeln!(s, "+ {}", rw[j]);
            j += 1;
        } else {
            let _ = writeln!(s, "- {}", lw[i]);
            i += 1;
        }
    }
    if l.len() > start + WINDOW || r.len() > start + WINDOW {
        s.push_str("  [...]\n");
    }
    if left.ends_with('\n') != right.ends_with('\n') {
        s.push_str("(one ends with a newline, the other does not)\n");
    }
    s
}

/// First differing byte of two buffers, for binary mismatches.
pub fn binary_diff(left: &[u8], right: &[u8]) -> String {
    let first = left.iter().zip(right).position(|(a, b)| a != b);
    let count = left.iter().zip(right).filter(|(a, b)| a != b).count();
    match first {
        Some(i) => format!(
            "{} vs {} bytes; {count} differing bytes in the common part, first at offset {i:#x} ({:#04x} vs {:#04x})",
            left.len(),
            right.len(),
            left[i],
            right[i]
        ),
        None => format!(
            "{} vs {} bytes; one is a prefix of the other",
            left.len(),
            right.len()
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Device code inside objects, executables and fatbins
// ---------------------------------------------------------------------------------------------

/// What `cuobjdump` sees in one file.
#[derive(Debug)]
pub struct DeviceCode {
    /// `cuobjdump -lelf -lptx` exit code and output (normalised): the list of images.
    pub listing: String,
    /// Extracted images: name → normalised contents (cubins bytes, PTX text bytes).
    pub images: BTreeMap<String, Vec<u8>>,
    /// Some image names a tmpxft temporary (`-G` debug info does): the fatbin holds the images
    /// compressed, so the containing file cannot be normalised byte for byte.
    pub mentions_tmpxft: bool,
}

fn cuobjdump(cuobjdump: &Path, args: &[&str], file: &Path, cwd: &Path) -> (Option<i32>, String) {
    let out = Command::new(cuobjdump)
        .args(args)
        .arg(file)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cuobjdump.display()));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// Extract the device code of `file` (an object, executable or fatbin of `run`) into
/// `scratch` and read it back normalised.
pub fn device_code(tool: &Path, file: &Path, scratch: &Path, run: &RunResult) -> DeviceCode {
    std::fs::create_dir_all(scratch).unwrap();
    let (code, list) = cuobjdump(tool, &["-lelf", "-lptx"], file, scratch);
    let listing = format!("exit {code:?}\n{}", normalise_text(list.as_bytes(), run));
    let mut images = BTreeMap::new();
    let mut mentions_tmpxft = false;
    if code == Some(0) {
        // The extraction messages only repeat the listing; the images are what matters.
        let (c1, t1) = cuobjdump(tool, &["-xelf", "all"], file, scratch);
        let (c2, t2) = cuobjdump(tool, &["-xptx", "all"], file, scratch);
        assert!(
            c1 == Some(0) && c2 == Some(0),
            "cuobjdump extraction failed on {}:\n{t1}\n{t2}",
            file.display()
        );
        let mut found = BTreeMap::new();
        list_files(scratch, scratch, &mut found);
        for (name, path) in found {
            let data = std::fs::read(&path).unwrap();
            mentions_tmpxft |= data.windows(7).any(|w| w == b"tmpxft_");
            images.insert(name, normalise_binary(&data, run));
        }
    }
    DeviceCode {
        listing,
        images,
        mentions_tmpxft,
    }
}

/// Is this an ELF file (object or executable)?
pub fn is_elf(path: &Path) -> bool {
    std::fs::read(path)
        .map(|d| d.starts_with(b"\x7fELF"))
        .unwrap_or(false)
}

/// A kernel with a dense 24-case `switch` on a runtime value: ptxas compiles it to a `BRX`
/// through a jump table in `.nv.constant2.<k>` (the matrix fixtures have none).
pub fn switch_kernel_source() -> String {
    let mut cases = String::new();
    for i in 0..24 {
        cases.push_str(&format!(
            "        case {i}: v = v * {} + {}; v ^= v >> {}; break;\n",
            i + 3,
            i * 7 + 1,
            i % 5 + 1
        ));
    }
    format!(
        "__global__ void sw2(const int* in, int* out, int n) {{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    int v = in[i + n];\n    switch (in[i]) {{\n{cases}        default: v = -1; break;\n    }}\n    out[i] = v;\n}}\n"
    )
}

/// `bytes` with the hex digits after every `tmpxft_` (nvcc's temporaries, named after its
/// process id, which differ between any two runs) set to `0`.
pub fn mask_tmpxft(bytes: &[u8]) -> Vec<u8> {
    let mut d = bytes.to_vec();
    let key = b"tmpxft_";
    let mut i = 0;
    while i + key.len() <= d.len() {
        if &d[i..i + key.len()] != key {
            i += 1;
            continue;
        }
        i += key.len();
        while i < d.len() && (d[i].is_ascii_hexdigit() || d[i] == b'_') {
            if d[i] != b'_' {
                d[i] = b'0';
            }
            i += 1;
        }
    }
    d
}

/// An example kernel source, `examples/kernels/<name>`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/kernels")
        .join(name)
}

/// nvcc-orion, the binary under test.
pub const ORION_BIN: &str = env!("CARGO_BIN_EXE_nvcc-orion");

/// The one command builder for every test that runs nvcc-orion, its shims, a program built
/// with its glue, or a build tool that runs them (cmake, cargo, sccache, ccache, python, a
/// script): `program` with every nvcc-orion setting of the caller's environment (`NVCC_ORION`,
/// `NVCC_ORION_*`) removed and the real nvcc this suite found (see [`find_nvcc`]) as
/// `NVCC_ORION_NVCC`. What a test sets afterwards is all that counts: a developer's shell
/// (`NVCC_ORION=off`, a report file, a forced budget) cannot change a test's outcome.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    clear_our_settings(&mut cmd);
    if let Some(nvcc) = find_nvcc() {
        cmd.env("NVCC_ORION_NVCC", nvcc);
    }
    cmd
}

/// [`command`] for nvcc-orion itself.
pub fn orion() -> Command {
    command(ORION_BIN)
}

/// Remove from `cmd` every nvcc-orion setting the test process inherited.
fn clear_our_settings(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(nvcc_orion::settings::is_ours) {
            cmd.env_remove(k);
        }
    }
}

/// `cmd` with every nvcc-orion setting of the caller's environment (`NVCC_ORION*`) removed and
/// `nvcc` as the real compiler, as [`command`] makes it (for a command built elsewhere).
pub fn without_our_settings(mut cmd: Command, nvcc: &Path) -> Command {
    clear_our_settings(&mut cmd);
    cmd.env("NVCC_ORION_NVCC", nvcc);
    cmd
}

/// Fail with what `o` printed unless it succeeded.
pub fn assert_ok(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The variable naming the file where skip lines are also appended (`scripts/test.sh` sets it,
/// then counts and lists them): a skipped test passes, and nextest shows a passing test's
/// output only on request, so a missing tool would otherwise go unseen.
pub const SKIP_LOG: &str = "ORION_TEST_SKIP_LOG";

/// Record that (part of) the running test did not run here, and why: one line
/// `SKIP <binary>::<test> [<label>]: <why>` on stderr, and appended to the file [`SKIP_LOG`]
/// names. Every skip goes through here (under `CI` most are failures instead: see [`skip`]).
pub fn skipped(label: &str, why: &str) {
    let line = skip_line(label, why);
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG).filter(|p| !p.is_empty()) {
        use std::io::Write as _;
        // One append of the whole line: test processes run side by side.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// The skip line: the test binary and the test's name (libtest names each test's thread
/// after it), then the caller's label where it adds something, on one line.
fn skip_line(label: &str, why: &str) -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.bytes().all(|b| b.is_ascii_hexdigit()) => name.to_string(),
            _ => s,
        })
        .unwrap_or_default();
    let thread = std::thread::current().name().unwrap_or("").to_string();
    let test = if thread.is_empty() || thread == "main" {
        format!("{binary}::{label}")
    } else {
        format!("{binary}::{thread}")
    };
    let label = if thread.ends_with(label) || label.is_empty() {
        String::new()
    } else {
        format!(" [{label}]")
    };
    format!("SKIP {test}{label}: {}", why.replace('\n', " "))
}

/// A test that cannot run here: a failure under `CI` (which installs everything a test needs),
/// else one skip line.
pub fn skip(test: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {why}, and CI is set"
    );
    skipped(test, why);
}

/// The real nvcc, or `None` (with a skip line) when there is none; with `CI` set a missing
/// toolkit is a failure.
pub fn nvcc_or_skip(test: &str) -> Option<PathBuf> {
    let nvcc = find_nvcc();
    if nvcc.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: no nvcc found and CI is set; run `eval \"$(scripts/setup.sh)\"`"
        );
        skipped(
            test,
            "no nvcc found; run `eval \"$(scripts/setup.sh)\"` to enable",
        );
    }
    nvcc
}

/// `nm`'s listing of `file` (the symbols of an object, archive or executable).
pub fn nm_symbols(file: &Path) -> String {
    let o = Command::new("nm").arg(file).output().expect("run nm");
    assert_ok(&o, "nm");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `clang++` is installed (the selector glue must link with it, issue 21); with `CI`
/// set a missing one is a failure (`.ci/run` sets `NVCC_ORION_SETUP_CLANG=1`).
pub fn clang_or_skip(test: &str) -> bool {
    let found = which::which("clang++").is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: clang++ not installed and CI is set; run `NVCC_ORION_SETUP_CLANG=1 scripts/setup.sh`"
        );
        skipped(test, "clang++ not installed; its links are skipped");
    }
    found
}

/// A folder under `CARGO_TARGET_TMPDIR` named after `tag` and the hash of `inputs` (and of
/// nvcc's path), held under a lock file across the test processes of a run: the first to
/// find it incomplete builds it and calls [`Locked::finish`]; the others wait on the lock
/// and reuse it.
pub struct Locked {
    pub dir: PathBuf,
    _lock: std::fs::File,
}

impl Locked {
    pub fn new(tag: &str, nvcc: &Path, inputs: &[&[u8]]) -> Locked {
        let mut h = fnv(nvcc.to_string_lossy().as_bytes(), 0xcbf2_9ce4_8422_2325);
        for i in inputs {
            h = fnv(&(i.len() as u64).to_le_bytes(), h);
            h = fnv(i, h);
        }
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(root).unwrap();
        let dir = root.join(format!("{tag}-{h:016x}"));
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(format!("{tag}-{h:016x}.lock")))
            .unwrap();
        lock.lock().unwrap();
        Locked { dir, _lock: lock }
    }

    /// Built before: the completion stamp is there. Otherwise the folder is made empty.
    pub fn complete(&self) -> bool {
        if self.dir.join("COMPLETE").exists() {
            return true;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::create_dir_all(&self.dir).unwrap();
        false
    }

    /// Stamp the folder as built.
    pub fn finish(&self) {
        std::fs::write(self.dir.join("COMPLETE"), "").unwrap();
    }
}

/// [`Locked`] filled by `build` once.
pub fn build_once(tag: &str, nvcc: &Path, inputs: &[&[u8]], build: impl FnOnce(&Path)) -> PathBuf {
    let l = Locked::new(tag, nvcc, inputs);
    if !l.complete() {
        build(&l.dir);
        l.finish();
    }
    l.dir.clone()
}

/// The toolkit's root: the folder above nvcc's `bin`.
pub fn cuda_home(nvcc: &Path) -> PathBuf {
    nvcc.parent().unwrap().parent().unwrap().to_path_buf()
}

/// A folder with the runtime libraries for `-lcudart`, `-lcudart_static` and `-lcudadevrt`,
/// and for the loader: the PyPI toolkit ships `libcudart.so.N` without the `libcudart.so` link.
pub fn cudart_dir(nvcc: &Path, scratch: &Path) -> PathBuf {
    let lib = cuda_home(nvcc).join("lib");
    let lib = if lib.join("libcudart_static.a").exists() {
        lib
    } else {
        cuda_home(nvcc).join("lib64")
    };
    let link = scratch.join("cudart");
    std::fs::create_dir_all(&link).unwrap();
    for entry in std::fs::read_dir(&lib).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("libcudart") || name.starts_with("libcudadevrt") {
            std::os::unix::fs::symlink(&path, link.join(&name)).unwrap();
            if name.starts_with("libcudart.so.") && !link.join("libcudart.so").exists() {
                std::os::unix::fs::symlink(&path, link.join("libcudart.so")).unwrap();
            }
        }
    }
    link
}

/// A copy of `nvcc`'s toolkit at `at` in which each tool that `script` names (it is given the
/// tool's name and the real tool's path) is that shell script instead: the rest are links to
/// the real ones, and nvcc itself is a copy, since it finds its tools beside itself
/// (`nvcc.profile`'s `_HERE_`). The returned path is that toolkit's nvcc.
pub fn toolkit_with(
    nvcc: &Path,
    at: &Path,
    script: &dyn Fn(&str, &Path) -> Option<String>,
) -> PathBuf {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let bin = nvcc.parent().unwrap();
    let home = bin.parent().unwrap();
    std::fs::create_dir_all(at.join("bin")).unwrap();
    for e in std::fs::read_dir(home).unwrap() {
        let p = e.unwrap().path();
        if p != bin {
            symlink(&p, at.join(p.file_name().unwrap())).unwrap();
        }
    }
    for e in std::fs::read_dir(bin).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let to = at.join("bin").join(&name);
        if let Some(text) = script(&name, &p) {
            std::fs::write(&to, text).unwrap();
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        } else if name == "nvcc" || name == "nvcc.profile" {
            if std::fs::hard_link(&p, &to).is_err() {
                std::fs::copy(&p, &to).unwrap();
            }
        } else {
            symlink(&p, &to).unwrap();
        }
    }
    at.join("bin").join("nvcc")
}

/// A host compiler at `dir/cc/gcc`: the gcc on PATH, run after the shell `case " $* " in`
/// branches `cases` (each with its `;;`), which may mark or wait on files in `dir` to show
/// the order of the build's host steps. None: no gcc on PATH.
pub fn gcc_with_cases(dir: &Path, cases: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let gcc = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("gcc"))
            .find(|g| g.is_file())
    })?;
    let wrapper = format!(
        "#!/bin/sh\ncase \" $* \" in\n{cases}\nesac\nexec \"{}\" \"$@\"\n",
        gcc.display()
    );
    std::fs::create_dir(dir.join("cc")).unwrap();
    let cc = dir.join("cc/gcc");
    std::fs::write(&cc, wrapper).unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(cc)
}

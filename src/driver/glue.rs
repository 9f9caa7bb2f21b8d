//! The launch-time selector's glue in the user's objects (issue 21,
//! docs/selector.md §How the driver wires it in). Under `NVCC_ORION=adapt|train` the object
//! of nvcc's `.cudafe1.cpp` host compilation gets its references to the CUDA runtime's launch
//! entry points (and the few calls whose answers must hold for the variants too, issue 45)
//! renamed to the glue's (an `objcopy --redefine-sym` of undefined symbols only)
//! and is merged (`ld -r`) with the glue object right away, before any later step (nvlink,
//! the host link, `ar`) reads it. Renaming symbols, not source text, touches nothing the user
//! names: a `trace::cudaLaunchKernel` of their own is another (mangled) symbol, and an object
//! that defines a launch function (an interposer) keeps it (issue 31). The glue object is
//! built once per host compiler, its version, the mode and the `-m64` flag, and cached.
//!
//! Never a failed build: the host compilation runs as nvcc printed it; when the glue cannot
//! be built, or the renaming or the merge fails, the plain object stands with one warning
//! line. A failure of the compilation itself is the user's, reported as nvcc reports it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::dryrun::HostCompile;
use crate::jobs::Slots;
use crate::process::{Captured, StepContext};
use crate::settings::Selector;

/// The runtime sources, shipped in the binary (users have no repository); written to the
/// cache under the hash of them all, so a new nvcc-orion never reads an older copy.
const SOURCES: [(&str, &str); 3] = [
    (
        "orion_runtime.cpp",
        include_str!("../../runtime/orion_runtime.cpp"),
    ),
    (
        "orion_runtime.h",
        include_str!("../../runtime/orion_runtime.h"),
    ),
    (
        "orion_select.h",
        include_str!("../../runtime/orion_select.h"),
    ),
];

/// How the glue is compiled, besides the compiler, the mode, `-m64` and the include paths:
/// C++11 and no C++ runtime (any final link works, `gcc` included), position-independent (the
/// object may end up in a shared library). `-O1`, not `-O2` (issue 47): without a cache the
/// glue is compiled for every file, at the end beside the host compilation, and g++ -O2 took
/// 1.1 s of CPU where -O1 takes 0.7 s (-O0 0.3 s), while its launch path costs about 3 ns more
/// per launch at -O1 (of ~50 ns; a real launch costs microseconds) and 2-5x more at -O0
/// (bench/results/build.md).
const GLUE_FLAGS: [&str; 5] = ["-std=c++11", "-O1", "-fPIC", "-fno-exceptions", "-fno-rtti"];

/// The CUDA runtime's entry points the glue stands in for. The launches: the `<<<>>>` stubs
/// (`__cudaGetKernel`, `__cudaLaunchKernel`), `cudaLaunchKernel` and the C++ wrappers built on
/// it, `cudaLaunchKernelEx`, and the per-thread-stream forms. And what must hold for the
/// variants as for the original (issue 45): the attributes a program sets on a kernel, the
/// questions it asks about a kernel's resources and occupancy (the runtime's C++ templates,
/// `cudaOccupancyMaxPotentialBlockSize` among them, are inline and call these), and the device
/// reset that destroys the context the glue's handles live in. An object that references none
/// of them needs no glue.
const ENTRY_POINTS: [&str; 16] = [
    "cudaLaunchKernel",
    "cudaLaunchKernel_ptsz",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz",
    "__cudaGetKernel",
    "__cudaLaunchKernel",
    "__cudaLaunchKernel_ptsz",
    "cudaFuncSetAttribute",
    "cudaFuncSetCacheConfig",
    "cudaFuncGetAttributes",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyAvailableDynamicSMemPerBlock",
    "cudaOccupancyMaxPotentialClusterSize",
    "cudaOccupancyMaxActiveClusters",
    "cudaDeviceReset",
];

/// What a renamed entry point is called: the glue defines `orion_rt_v1_<name>`.
const RENAMED_PREFIX: &str = "orion_rt_v1_";

#[derive(Debug, thiserror::Error)]
enum GlueError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("`{what}` failed ({status}){detail}")]
    Tool {
        what: String,
        status: std::process::ExitStatus,
        detail: String,
    },
    #[error("no CUDA include directory (with cuda.h) on the host compiler's command line")]
    NoCudaInclude,
    #[error("link-time optimisation (-flto) objects cannot be merged")]
    Lto,
    #[error("{0} is not an ELF relocatable object")]
    NotElf(String),
    /// Building the glue object failed (once per replay and toolchain; every host compile
    /// that needs it reports the same).
    #[error(transparent)]
    Earlier(Arc<GlueError>),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> GlueError {
    let what = what.into();
    move |source| GlueError::Io { what, source }
}

/// Run `argv` in the step's environment; its stdout when it succeeded.
fn tool(ctx: &StepContext, argv: &[String]) -> Result<Vec<u8>, GlueError> {
    let what = argv.join(" ");
    let c = ctx.run(argv).map_err(io(format!("running `{what}`")))?;
    if !c.status.success() {
        // The compiler's first line says why (a missing header, an unknown option).
        let first = String::from_utf8_lossy(&c.stderr)
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default();
        return Err(GlueError::Tool {
            what: argv[0].clone(),
            status: c.status,
            detail: first,
        });
    }
    Ok(c.stdout)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A path made unique to this process, thread-safe call and moment, for writing a file or
/// folder that is then renamed into place (atomic: a concurrent build sees all of it or none;
/// the prefetch and the host compile may write side by side).
fn scratch_name(path: &Path) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}-{n}-{nanos}", std::process::id()));
    path.with_file_name(name)
}

/// What the glue of one host compiler needs: its object, and the binutils that rename a
/// unit's symbols and merge the two.
#[derive(Debug, Clone)]
struct Built {
    object: PathBuf,
    ld: String,
    objcopy: String,
}

/// What one glue object is built for: the host compiler, its `-m64`/`-m32`, and the CUDA
/// include directory (the compiler's version and the mode enter the cache key when built).
type Toolchain = (String, Option<String>, String);

/// One glue object built, or why not, once.
type GlueCell = OnceLock<Result<Built, Arc<GlueError>>>;

/// The glue of one replay: where it lives and what was built for which compiler.
pub(crate) struct Glue {
    selector: Selector,
    /// `<cache>/runtime`, or a folder of the replay's own when there is no cache.
    root: PathBuf,
    /// Per (compiler, its `-m` flag, CUDA include directory): the glue built, or why not;
    /// built once, by the prefetch or the first host compile (the other waits for it).
    built: Mutex<HashMap<Toolchain, Arc<GlueCell>>>,
}

/// What a host compilation under the glue left: the step's output, and a line for the
/// verbose notes.
pub(crate) struct Compiled {
    pub(crate) captured: Captured,
    pub(crate) note: Option<String>,
}

impl Glue {
    pub(crate) fn new(selector: Selector, root: PathBuf) -> Glue {
        Glue {
            selector,
            root,
            built: Mutex::new(HashMap::new()),
        }
    }

    /// Build the glue object for the host compilation `argv` ahead of it, on a job slot of
    /// its own while the front ends run: the glue depends on the host compiler only, so the
    /// host compile finds it ready. A failure is remembered and reported by that compile.
    pub(crate) fn prefetch(&self, argv: &[String], ctx: &StepContext) {
        if argv.iter().any(|a| a.starts_with("-flto")) {
            return;
        }
        if let Ok(sources) = self.sources() {
            let _ = self.built(argv, ctx, &sources);
        }
    }

    /// Run the host compilation `argv` (see [`HostCompile::of`]) as nvcc printed it, then
    /// send its launches to the glue; on any failure of ours the plain object stands, with
    /// one warning line on the step's stderr. A glue object nobody has begun yet is built
    /// beside the compilation on an extra slot of `slots` when one is free: on a build whose
    /// front ends took every slot (two architectures on two cores), this is where a core is
    /// idle, and the compilation takes about as long as the glue (issue 47).
    pub(crate) fn compile(
        &self,
        argv: &[String],
        host: &HostCompile,
        ctx: &StepContext,
        slots: &Slots,
    ) -> std::io::Result<Compiled> {
        let ran = std::thread::scope(|scope| {
            if !self.begun(argv)
                && let Some(slot) = slots.try_extra()
            {
                scope.spawn(move || {
                    let _slot = slot;
                    self.prefetch(argv, ctx);
                });
            }
            // The scope waits for the glue at its end; `attach` below would wait anyway.
            ctx.run(argv)
        });
        let mut captured = ran?;
        if !captured.status.success() {
            return Ok(Compiled {
                captured,
                note: None,
            });
        }
        let object = ctx.cwd.join(&host.object);
        let note = match self.attach(argv, ctx, &object) {
            Ok(true) => format!(
                "nvcc-orion: launch-time selector ({}) merged into {}",
                self.selector.name(),
                host.object
            ),
            Ok(false) => format!(
                "nvcc-orion: no kernel launch in {}: no selector needed",
                host.object
            ),
            Err(why) => {
                captured.warn(&format!(
                    "no launch-time selector in {}: {why}; the plain object stands",
                    host.object
                ));
                return Ok(Compiled {
                    captured,
                    note: None,
                });
            }
        };
        Ok(Compiled {
            captured,
            note: Some(note),
        })
    }

    /// Whether the glue object of `argv`'s toolchain has been asked for (built, being built,
    /// or failed) in this replay.
    fn begun(&self, argv: &[String]) -> bool {
        let Some(memo) = toolchain(argv) else {
            return false;
        };
        self.built.lock().is_ok_and(|b| b.contains_key(&memo))
    }

    /// Rename `object`'s references to the runtime's entry points the glue stands in for and
    /// merge the glue into it: whether it was merged (not when the unit references none). The object is replaced
    /// in one rename, or not at all.
    fn attach(&self, argv: &[String], ctx: &StepContext, object: &Path) -> Result<bool, GlueError> {
        if argv.iter().any(|a| a.starts_with("-flto")) {
            return Err(GlueError::Lto);
        }
        let names = launch_references(object)?;
        if names.is_empty() {
            return Ok(false);
        }
        let sources = self.sources()?;
        let built = self.built(argv, ctx, &sources)?;
        let renamed = scratch_name(object);
        let merged = scratch_name(object);
        let mut objcopy = vec![built.objcopy.clone()];
        for n in &names {
            objcopy.push(format!("--redefine-sym={n}={RENAMED_PREFIX}{n}"));
        }
        objcopy.extend([object.display().to_string(), renamed.display().to_string()]);
        let merge = [
            built.ld.clone(),
            "-r".into(),
            renamed.display().to_string(),
            built.object.display().to_string(),
            "-o".into(),
            merged.display().to_string(),
        ];
        let result = tool(ctx, &objcopy)
            .and_then(|_| tool(ctx, &merge))
            .and_then(|_| {
                std::fs::rename(&merged, object).map_err(io("renaming the merged object"))
            });
        let _ = std::fs::remove_file(&renamed);
        if result.is_err() {
            let _ = std::fs::remove_file(&merged);
        }
        result.map(|()| true)
    }

    /// The runtime sources in `<root>/<hash>/`, written once (atomically) by whichever build
    /// needs them first.
    fn sources(&self) -> Result<PathBuf, GlueError> {
        let mut h = Sha256::new();
        for (name, text) in SOURCES {
            h.update(name.as_bytes());
            h.update([0]);
            h.update(text.as_bytes());
            h.update([0]);
        }
        let dir = self.root.join(&hex(&h.finalize())[..16]);
        let complete = |dir: &Path| SOURCES.iter().all(|(name, _)| dir.join(name).is_file());
        if complete(&dir) {
            return Ok(dir);
        }
        // Written whole or not at all, so only a user's hand can have emptied it: write anew.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&self.root)
            .map_err(io(format!("creating {}", self.root.display())))?;
        let tmp = scratch_name(&dir);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir(&tmp)?;
            for (name, text) in SOURCES {
                std::fs::write(tmp.join(name), text)?;
            }
            std::fs::rename(&tmp, &dir)
        };
        match write() {
            Ok(()) => Ok(dir),
            // Another build got there first: its copy is the same bytes.
            Err(_) if complete(&dir) => {
                let _ = std::fs::remove_dir_all(&tmp);
                Ok(dir)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                Err(io(format!(
                    "writing the runtime sources to {}",
                    dir.display()
                ))(e))
            }
        }
    }

    /// The glue object for the compiler of `argv`, built on first use (per replay, and per
    /// cache across builds).
    fn built(
        &self,
        argv: &[String],
        ctx: &StepContext,
        sources: &Path,
    ) -> Result<Built, GlueError> {
        let memo = toolchain(argv).ok_or(GlueError::NoCudaInclude)?;
        let cell = match self.built.lock() {
            Ok(mut b) => b.entry(memo.clone()).or_default().clone(),
            Err(_) => Arc::default(),
        };
        cell.get_or_init(|| self.build(&memo, ctx, sources).map_err(Arc::new))
            .clone()
            .map_err(GlueError::Earlier)
    }

    fn build(
        &self,
        (cc, m, include): &Toolchain,
        ctx: &StepContext,
        sources: &Path,
    ) -> Result<Built, GlueError> {
        let version = tool(ctx, &[cc.clone(), "--version".into()])?;
        let resolved = ctx.resolve(cc).map_err(io(format!("finding {cc}")))?;
        let mode = match self.selector {
            Selector::Adapt => "1",
            Selector::Train => "2",
        };
        let cuda_h = Path::new(include).join("cuda.h");
        let stamp = std::fs::metadata(&cuda_h)
            .map(|md| format!("{} {:?}", md.len(), md.modified().ok()))
            .map_err(io(format!("reading {}", cuda_h.display())))?;
        let mut h = Sha256::new();
        for part in [
            resolved.display().to_string().as_bytes(),
            &version,
            mode.as_bytes(),
            m.as_deref().unwrap_or("").as_bytes(),
            include.as_bytes(),
            stamp.as_bytes(),
            GLUE_FLAGS.join(" ").as_bytes(),
        ] {
            h.update(part);
            h.update([0]);
        }
        let object = sources.join(format!("glue-{}.o", &hex(&h.finalize())[..16]));
        let ld = prog_name(ctx, cc, "ld")?;
        let objcopy = prog_name(ctx, cc, "objcopy")?;
        if object.is_file() {
            return Ok(Built {
                object,
                ld,
                objcopy,
            });
        }
        let tmp = scratch_name(&object);
        let mut compile: Vec<String> = vec![cc.clone()];
        compile.extend(GLUE_FLAGS.iter().map(|f| f.to_string()));
        compile.extend(m.iter().cloned());
        compile.extend([
            format!("-DORION_RT_DEFAULT_MODE={mode}"),
            format!("-I{include}"),
            format!("-I{}", sources.display()),
            "-c".into(),
            sources.join("orion_runtime.cpp").display().to_string(),
            "-o".into(),
            tmp.display().to_string(),
        ]);
        let done = tool(ctx, &compile).and_then(|_| {
            std::fs::rename(&tmp, &object).map_err(io(format!("writing {}", object.display())))
        });
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done.map(|()| Built {
            object,
            ld,
            objcopy,
        })
    }
}

/// What the glue object for the host compilation `argv` is built for: its compiler, its
/// `-m64`/`-m32` and the CUDA include directory; none without that directory.
fn toolchain(argv: &[String]) -> Option<Toolchain> {
    let cc = argv[0].clone();
    let m = argv.iter().find(|a| *a == "-m64" || *a == "-m32").cloned();
    Some((cc, m, cuda_include(argv)?))
}

/// The binutils program `name` the host compiler `cc` uses (`-print-prog-name`), else `name`.
fn prog_name(ctx: &StepContext, cc: &str, name: &str) -> Result<String, GlueError> {
    let out = tool(ctx, &[cc.to_string(), format!("-print-prog-name={name}")])?;
    let found = String::from_utf8_lossy(&out).trim().to_string();
    Ok(if found.is_empty() {
        name.to_string()
    } else {
        found
    })
}

/// The first `-I` directory of `argv` that holds `cuda.h`: the toolkit headers the user's
/// object is compiled against.
fn cuda_include(argv: &[String]) -> Option<String> {
    let mut dirs = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        if a == "-I" || a == "-isystem" {
            dirs.extend(argv.get(i + 1).cloned());
        } else if let Some(d) = a.strip_prefix("-I") {
            dirs.push(d.to_string());
        }
    }
    dirs.into_iter()
        .find(|d| Path::new(d).join("cuda.h").is_file())
}

/// The entry points of [`ENTRY_POINTS`] `object` references and does not define itself (an
/// object that defines one, an interposer, keeps its own).
fn launch_references(object: &Path) -> Result<Vec<&'static str>, GlueError> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(object).map_err(io(format!("reading {}", object.display())))?;
    let not_elf = || GlueError::NotElf(object.display().to_string());
    let file = object::File::parse(&*data).map_err(|_| not_elf())?;
    if file.format() != object::BinaryFormat::Elf || file.kind() != object::ObjectKind::Relocatable
    {
        return Err(not_elf());
    }
    let named = |n: &str, undefined: bool| {
        file.symbols()
            .any(|s| s.is_undefined() == undefined && s.name().is_ok_and(|x| x == n))
    };
    Ok(ENTRY_POINTS
        .into_iter()
        .filter(|n| named(n, true) && !named(n, false))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn finds_the_host_compilation_of_the_cudafe_output_only() {
        let host = argv(
            "gcc -D__CUDA_ARCH__=900 -c -x c++ -Wno-psabi -I/cuda/include -m64 /t/x-6_k.cudafe1.cpp -o k.o",
        );
        assert_eq!(
            HostCompile::of(&host),
            Some(HostCompile {
                input: 8,
                object: "k.o".into()
            })
        );
        for other in [
            "gcc -E -x c++ -D__CUDACC__ -m64 k.cu -o /t/k.cpp4.ii",
            "cudafe++ --gen_c_file_name /t/x-6_k.cudafe1.cpp /t/k.cpp4.ii",
            "gcc -c -x c++ -m64 k.cpp -o k.o",
            "gcc -c -x c++ -E /t/x-6_k.cudafe1.cpp -o k.ii",
        ] {
            assert_eq!(HostCompile::of(&argv(other)), None, "{other}");
        }
    }

    #[test]
    fn the_cuda_include_is_the_directory_with_cuda_h() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("include");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(inc.join("cuda.h"), "").unwrap();
        let with = |a: &str| argv(&format!("gcc -I/nowhere {a} -c x.cudafe1.cpp"));
        let want = Some(inc.display().to_string());
        assert_eq!(cuda_include(&with(&format!("-I{}", inc.display()))), want);
        assert_eq!(cuda_include(&with(&format!("-I {}", inc.display()))), want);
        assert_eq!(cuda_include(&with("-I/also/nowhere")), None);
    }

    #[test]
    fn sources_are_written_once_under_their_hash() {
        let dir = tempfile::tempdir().unwrap();
        let glue = Glue::new(Selector::Adapt, dir.path().join("runtime"));
        let a = glue.sources().unwrap();
        let b = glue.sources().unwrap();
        assert_eq!(a, b);
        for (name, text) in SOURCES {
            assert_eq!(std::fs::read_to_string(a.join(name)).unwrap(), text);
        }
        // Nothing half-written is left beside it.
        let entries: Vec<_> = std::fs::read_dir(dir.path().join("runtime"))
            .unwrap()
            .collect();
        assert_eq!(entries.len(), 1);
        // A copy missing a file is written anew.
        std::fs::remove_file(a.join("orion_select.h")).unwrap();
        assert_eq!(glue.sources().unwrap(), a);
        assert!(a.join("orion_select.h").is_file());
        // A cache that cannot be written is an error (the caller warns and builds plain).
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let glue = Glue::new(Selector::Adapt, file.join("runtime"));
        assert!(glue.sources().is_err());
    }
}

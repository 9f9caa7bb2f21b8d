//! From tokenised items to [`Facts`] and the tunable/pass-through decision.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use super::parse::{Item, Origin};
use super::reason::{Blocker, PassReason};
use super::{Class, Facts};

/// Options that make an invocation pass-through, by long name, with how the reason shows them
/// and whether nvcc still builds SASS under them.
static BLOCKERS: &[Blocker] = &[
    blocker("preprocess", "-E", false),
    blocker("generate-dependencies", "-M", false),
    blocker("generate-nonsystem-dependencies", "-MM", false),
    blocker("version", "--version", false),
    blocker("help", "--help", false),
    blocker("verbose", "-v", false),
    blocker("verbose2", "-v2", false),
    blocker("dryrun", "--dryrun", false),
    blocker("list-gpu-code", "--list-gpu-code", false),
    blocker("list-gpu-arch", "--list-gpu-arch", false),
    blocker("device-debug", "-G (device debug)", true),
    blocker("ptx", "-ptx", false),
    blocker("device-link", "-dlink", false),
    blocker("run", "--run", true),
    blocker("run-args", "--run-args", true),
    blocker("link", "-link", true),
    blocker("optix-ir", "-optix-ir", false),
    blocker("ltoir", "-ltoir", false),
    blocker("dlink-time-opt", "-dlto", true),
    blocker("lto", "-lto", true),
    blocker("gen-opt-lto", "-gen-opt-lto", true),
    blocker("time", "-time", true),
    blocker("fdevice-time-trace", "-fdevice-time-trace", true),
    blocker("fdevice-syntax-only", "-fdevice-syntax-only", false),
    blocker("cuda", "-cuda", false),
    blocker("enable-tile", "-enable-tile", true),
    blocker("tile-preview", "-tile-preview", true),
    blocker("tile-only", "-tile-only", true),
    blocker("tilebc", "-tilebc", true),
    blocker("tilecubin", "-tilecubin", true),
    blocker("tilefatbin", "-tilefatbin", true),
    blocker("tileiras-options", "-Xtileiras", true),
    blocker("clean-targets", "-clean", true),
    blocker("relocatable-link", "-r", true),
    blocker("shared", "-shared", true),
    blocker("compile-as-tools-patch", "-astoolspatch", true),
    blocker("fdevice-sanitize", "-fdevice-sanitize", true),
];

const fn blocker(long: &'static str, shown: &'static str, builds_sass: bool) -> Blocker {
    Blocker {
        long,
        shown,
        builds_sass,
    }
}

/// Input extensions a tunable compile may have.
const SOURCES: &[&str] = &["cu", "c", "cc", "cpp", "cxx"];

/// What else a one-call build (compile and link, or `-lib`) may take: objects and libraries,
/// which only its link or archive step reads.
const LINKED: &[&str] = &["o", "obj", "a", "so", "lib"];

const MODES: &[&str] = &["compile", "device-c", "device-w", "cubin", "fatbin"];

/// Classify the expanded items. `nvcc_args` is the user's argv minus `--orion-*`.
pub(crate) fn classify(items: &[Item], nvcc_args: &[OsString]) -> (Class, Facts) {
    let mut f = Facts::default();
    let mut block: Option<PassReason> = None;
    let mut blocked = |r: PassReason| {
        if block.is_none() {
            block = Some(r);
        }
    };
    let mut modes = BTreeSet::new();
    let mut lang: Option<String> = None;
    let mut arch: Option<String> = None;
    let mut codes: Vec<String> = Vec::new();
    let mut gencodes: Vec<String> = Vec::new();
    let mut rdc: Option<bool> = None;
    let mut own_maxrreg: Option<u32> = None;
    let mut ptxas: Vec<String> = Vec::new();
    let mut strip = vec![false; nvcc_args.len()];
    let mut depfile = false;
    let mut lib = false;

    for item in items {
        let (spec, value, origin) = match item {
            Item::Input { path, .. } => {
                f.inputs.push(PathBuf::from(path));
                continue;
            }
            Item::Opt {
                spec,
                value,
                origin,
            } => (spec, value.clone().unwrap_or_default(), *origin),
        };
        let long = spec.long.as_str();
        if let Some(b) = BLOCKERS.iter().find(|b| b.long == long) {
            blocked(PassReason::Option(b));
        }
        match long {
            m if MODES.contains(&m) => {
                modes.insert(m);
            }
            "lib" => lib = true,
            "output-file" => f.output = Some(value.into()),
            "output-directory" => f.output_dir = Some(value.into()),
            "dependency-target-name" => f.dep_targets.push(value),
            "generate-dependencies-with-compile" => depfile = true,
            "generate-nonsystem-dependencies-with-compile" => {
                (depfile, f.dep_skip_system) = (true, true)
            }
            "generate-dependency-targets" => f.dep_phony = true,
            "keep" | "save-temps" => f.keep = true,
            "keep-dir" => f.keep_dir = Some(value.into()),
            "device-debug" => f.device_debug = true,
            "x" => lang = Some(value),
            "gpu-architecture" => arch = Some(value),
            "gpu-code" => codes.extend(value.split(',').map(str::to_string)),
            "generate-code" => gencodes.push(value),
            "ptxas-options" => {
                // nvcc splits the list at commas and pastes each piece unquoted into the ptxas
                // command, so blanks split too.
                ptxas.extend(
                    value
                        .split(',')
                        .flat_map(str::split_whitespace)
                        .map(str::to_string),
                );
            }
            "maxrregcount" => match value.parse::<u32>() {
                Ok(n) => own_maxrreg = Some(n),
                Err(_) => blocked(PassReason::BadMaxrregcount(value)),
            },
            "relocatable-device-code" => match value.as_str() {
                "true" => rdc = Some(true),
                "false" => rdc = Some(false),
                _ => blocked(PassReason::BadRdc(value)),
            },
            "threads" => match origin {
                Origin::CommandLine { start, len } => {
                    for s in strip.iter_mut().skip(start).take(len) {
                        *s = true;
                    }
                }
                Origin::OptionsFile | Origin::Env => blocked(PassReason::ThreadsOutsideCommandLine),
            },
            _ => {}
        }
    }
    f.dryrun_args = nvcc_args
        .iter()
        .zip(&strip)
        .filter(|(_, s)| !**s)
        .map(|(a, _)| a.clone())
        .collect();
    f.relocatable = modes.contains("device-c") || rdc == Some(true);
    // `-lib` compiles every source and archives the objects, in one call like a link.
    f.compile_and_link = modes.is_empty();
    if lib && !modes.is_empty() {
        blocked(PassReason::LibWithModes(modes.clone()));
    }
    if f.compile_and_link && depfile {
        // The dependency file's target in a one-call build is nvcc's business alone.
        blocked(PassReason::DepfileWithoutCompileMode);
    }

    match ptxas_facts(&ptxas) {
        Ok(n) => f.user_maxrregcount = own_maxrreg.or(n),
        Err(r) => blocked(r),
    }

    let class = match block.map_or_else(
        || decide(&f, &modes, rdc, lang, arch, &codes, &gencodes),
        Err,
    ) {
        Ok(()) => Class::Tunable,
        Err(r) => Class::PassThrough(r),
    };
    (class, f)
}

fn decide(
    f: &Facts,
    modes: &BTreeSet<&'static str>,
    rdc: Option<bool>,
    lang: Option<String>,
    arch: Option<String>,
    codes: &[String],
    gencodes: &[String],
) -> Result<(), PassReason> {
    let device_only = modes.contains("cubin") || modes.contains("fatbin");
    if (device_only && modes.len() > 1)
        || (modes.contains("device-c") && modes.contains("device-w"))
    {
        return Err(PassReason::SeveralModes(modes.clone()));
    }
    if (modes.contains("device-c") && rdc == Some(false))
        || (modes.contains("device-w") && rdc == Some(true))
    {
        return Err(PassReason::DcDwContradictRdc);
    }
    if f.inputs.is_empty() {
        return Err(PassReason::NoInput);
    }
    // Only sources: nvcc rejects or links other inputs, and a mistyped env flag becomes one.
    let ext = |p: &PathBuf| {
        p.extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_string()
    };
    let linked = |p: &PathBuf| f.compile_and_link && LINKED.contains(&ext(p).as_str());
    if let Some(p) = f
        .inputs
        .iter()
        .find(|p| !SOURCES.contains(&ext(p).as_str()) && !linked(p))
    {
        return Err(PassReason::NotASource {
            input: p.clone(),
            linking: f.compile_and_link,
        });
    }
    match lang.as_deref() {
        Some("cu") => {}
        Some(l) => return Err(PassReason::Language(l.to_string())),
        None if !f.inputs.iter().any(|p| ext(p) == "cu") => return Err(PassReason::NoCuInput),
        None => {}
    }
    // (Compiling and linking, `-o` names the program.)
    if f.output.is_some() && f.inputs.len() > 1 && !f.compile_and_link {
        return Err(PassReason::OutputWithSeveralInputs);
    }
    real_target(arch.as_deref(), codes, gencodes)
}

/// The user's `-maxrregcount` as ptxas sees it from `-Xptxas` (last wins), and whether the
/// ptxas options forbid tuning.
fn ptxas_facts(toks: &[String]) -> Result<Option<u32>, PassReason> {
    let mut n = None;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        i += 1;
        let v = match t {
            "-g" | "--device-debug" => return Err(PassReason::PtxasDebug(t.to_string())),
            "-maxrregcount" | "--maxrregcount" => {
                i += 1;
                toks.get(i - 1).map(String::as_str)
            }
            _ => t
                .strip_prefix("-maxrregcount=")
                .or_else(|| t.strip_prefix("--maxrregcount=")),
        };
        if let Some(v) = v {
            n = Some(
                v.parse::<u32>()
                    .map_err(|_| PassReason::BadPtxasMaxrregcount(v.to_string()))?,
            );
        } else if matches!(t, "-maxrregcount" | "--maxrregcount") {
            return Err(PassReason::PtxasMaxrregcountWithoutValue);
        }
    }
    Ok(n)
}

fn is_real(code: &str) -> bool {
    code.starts_with("sm_")
}

/// Ok when the targets include at least one real (SASS) architecture.
fn real_target(
    arch: Option<&str>,
    codes: &[String],
    gencodes: &[String],
) -> Result<(), PassReason> {
    let all = arch.into_iter().chain(codes.iter().map(String::as_str));
    if all
        .chain(gencodes.iter().map(String::as_str))
        .any(|s| s.contains("lto_"))
    {
        return Err(PassReason::LtoTarget);
    }
    let mut real = false;
    for g in gencodes {
        let (_, gcodes) = parse_gencode(g)?;
        real |= gcodes.iter().any(|c| is_real(c));
    }
    let virtual_arch = arch.is_some_and(|a| a.starts_with("compute_"));
    if !codes.is_empty() {
        if !virtual_arch {
            return Err(PassReason::CodeNeedsVirtualArch);
        }
        real |= codes.iter().any(|c| is_real(c));
    } else {
        match arch {
            Some(a) if is_real(a) || matches!(a, "native" | "all" | "all-major") => real = true,
            Some(_) if virtual_arch => {}
            Some(a) => return Err(PassReason::UnrecognisedArch(a.to_string())),
            // nvcc 13.5 default: sm_75 SASS + compute_75 PTX.
            None => real |= gencodes.is_empty(),
        }
    }
    if real {
        Ok(())
    } else {
        Err(PassReason::NoRealTarget)
    }
}

/// `arch=compute_80,code=[compute_80,sm_80]` → (`compute_80`, [`compute_80`, `sm_80`]).
fn parse_gencode(spec: &str) -> Result<(String, Vec<String>), PassReason> {
    let bad = || PassReason::UnparsableGencode(spec.to_string());
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in spec.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(bad());
        }
        cur.push(c);
    }
    parts.push(cur);
    let (mut arch, mut code) = (None, None);
    for p in parts {
        let (k, v) = p.split_once('=').ok_or_else(bad)?;
        let slot = match k {
            "arch" => &mut arch,
            "code" => &mut code,
            _ => return Err(bad()),
        };
        if slot.replace(v.to_string()).is_some() {
            return Err(bad());
        }
    }
    let (Some(arch), Some(code)) = (arch, code) else {
        return Err(bad());
    };
    let list = code
        .strip_prefix('[')
        .and_then(|c| c.strip_suffix(']'))
        .unwrap_or(&code);
    if list.contains(['[', ']']) {
        return Err(bad());
    }
    Ok((arch, list.split(',').map(str::to_string).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gencode_forms() {
        assert_eq!(
            parse_gencode("arch=compute_80,code=[compute_80,sm_80]").unwrap(),
            ("compute_80".into(), codes(&["compute_80", "sm_80"]))
        );
        assert_eq!(
            parse_gencode("code=sm_90,arch=compute_90").unwrap(),
            ("compute_90".into(), codes(&["sm_90"]))
        );
        // All rejected by nvcc 13.5 as well.
        for bad in [
            "arch=compute_80",
            "arch=compute_80,code=sm_80,sm_86",
            "arch=compute_80,code=sm_80,code=sm_86",
            "arch=compute_80,code=[sm_80",
            "arch=compute_80,code=[[sm_80]]",
            "",
        ] {
            assert!(parse_gencode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn real_targets() {
        let none: &[String] = &[];
        assert!(real_target(None, none, none).is_ok(), "default sm_75");
        assert!(real_target(Some("sm_90a"), none, none).is_ok());
        assert!(real_target(Some("native"), none, none).is_ok());
        assert!(real_target(Some("all-major"), none, none).is_ok());
        assert!(real_target(Some("compute_80"), none, none).is_err());
        assert!(real_target(Some("compute_80"), &codes(&["sm_80", "compute_80"]), none).is_ok());
        assert!(real_target(Some("compute_80"), &codes(&["compute_80"]), none).is_err());
        assert!(
            real_target(Some("sm_80"), &codes(&["sm_80"]), none).is_err(),
            "nvcc: must be virtual"
        );
        assert!(
            real_target(None, &codes(&["sm_80"]), none).is_err(),
            "nvcc: -arch not specified"
        );
        let g = codes(&["arch=compute_90,code=compute_90"]);
        assert!(real_target(None, none, &g).is_err());
        assert!(
            real_target(
                Some("compute_80"),
                none,
                &codes(&["arch=compute_90,code=sm_90"])
            )
            .is_ok()
        );
        let both = codes(&[
            "arch=compute_90,code=compute_90",
            "arch=compute_80,code=[sm_80]",
        ]);
        assert!(real_target(None, none, &both).is_ok());
        assert_eq!(
            real_target(Some("lto_90"), none, none),
            Err(PassReason::LtoTarget)
        );
        assert_eq!(
            real_target(None, none, &codes(&["arch=compute_90,code=lto_90"])),
            Err(PassReason::LtoTarget)
        );
    }

    #[test]
    fn ptxas_maxrregcount_and_debug() {
        let t = |v: &[&str]| ptxas_facts(&codes(v));
        assert_eq!(t(&["-v"]), Ok(None));
        assert_eq!(
            t(&["-maxrregcount=32", "-v", "--maxrregcount", "40"]),
            Ok(Some(40))
        );
        assert_eq!(t(&["--maxrregcount=48"]), Ok(Some(48)));
        assert_eq!(t(&["-maxrregcount", "33"]), Ok(Some(33)));
        assert_eq!(
            t(&["-maxrregcount"]),
            Err(PassReason::PtxasMaxrregcountWithoutValue)
        );
        assert_eq!(
            t(&["-maxrregcount=x"]),
            Err(PassReason::BadPtxasMaxrregcount("x".into()))
        );
        assert_eq!(t(&["-O3", "-g"]), Err(PassReason::PtxasDebug("-g".into())));
        assert_eq!(
            t(&["--device-debug"]),
            Err(PassReason::PtxasDebug("--device-debug".into()))
        );
    }
}

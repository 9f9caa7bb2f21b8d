//! `nvcc-orion inspect FILE...`: every device image in a cubin, fatbin, host object,
//! executable or archive, and every kernel and device function in its cubins, with the
//! numbers that decide occupancy. `--json` prints the same as one JSON document.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;
use serde::Serialize;

use crate::arch::{Arch, Sm};
use crate::container::{self, Compression, EntryKind, ImageRef};
use crate::cubin::{Cubin, FunctionInfo};
use crate::predict::occupancy::{KernelResources, Launch, SharedBytes, occupancy};

/// Block size assumed for the occupancy column when the kernel declares none.
pub const ASSUMED_BLOCK: u32 = 256;

#[derive(Debug, Parser)]
#[command(
    about = "List the device code in CUDA cubins, fatbins, objects, executables and archives",
    long_about = "List every device image (kind, architecture, compression) and every kernel and \
                  device function in its cubins: registers, static shared memory, stack and \
                  frame, spill instructions, block-size bounds, calls, occupancy-relevant flags, \
                  and the theoretical occupancy at the declared (or an assumed 256-thread) block."
)]
pub struct Args {
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Files to inspect (.o, .cubin, .fatbin, executables, .a).
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
}

/// Everything `inspect` found in one file.
#[derive(Debug, Serialize)]
pub struct FileReport {
    pub(crate) path: String,
    /// "cubin", "fatbin", "host object", "executable", "archive"; absent when unreadable.
    pub(crate) kind: Option<&'static str>,
    pub(crate) images: Vec<ImageReport>,
    /// Why the file could not be read, as one line.
    pub(crate) error: Option<String>,
}

/// One device image: a fatbin entry, or the cubin itself.
#[derive(Debug, Serialize)]
pub struct ImageReport {
    pub(crate) location: String,
    /// "elf", "ptx" or "concat".
    pub(crate) kind: &'static str,
    /// `sm_XY` for SASS, `compute_XY` for PTX.
    pub arch: String,
    /// "none", "zstd" or "lz4".
    pub(crate) compression: &'static str,
    /// Bytes as stored (compressed size when compressed).
    pub(crate) stored_bytes: u64,
    /// Bytes of the image itself.
    pub(crate) image_bytes: u64,
    /// For cubins: "exec" (linked, whole program) or "rel" (relocatable, `-rdc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) elf_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) functions: Vec<FunctionReport>,
    /// For PTX: the `.entry` names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ptx_entries: Vec<String>,
    /// Why the image could not be read, as one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FunctionReport {
    #[serde(flatten)]
    pub(crate) info: FunctionInfo,
    /// Kernels only, on architectures with occupancy data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occupancy: Option<OccupancyReport>,
}

#[derive(Debug, Serialize)]
pub struct OccupancyReport {
    pub(crate) threads_per_block: u32,
    /// "reqntid", "launch bounds" or "assumed".
    pub(crate) block_from: &'static str,
    pub(crate) blocks_per_sm: u32,
    pub(crate) warps_per_sm: u32,
    pub(crate) max_warps_per_sm: u32,
    pub(crate) limited_by: Vec<&'static str>,
}

/// Run the command; true when some file or image could not be read.
pub fn run(args: &Args, out: &mut impl Write) -> bool {
    let reports: Vec<FileReport> = args.files.iter().map(|p| inspect_file(p)).collect();
    for r in &reports {
        if let Some(e) = &r.error {
            super::report_error(e);
        }
        for img in &r.images {
            if let Some(e) = &img.error {
                super::report_error(format_args!("{}: {}: {e}", r.path, img.location));
            }
        }
    }
    let written = if args.json {
        serde_json::to_writer_pretty(&mut *out, &reports)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        reports.iter().try_for_each(|r| render(r, out))
    };
    let failed = reports
        .iter()
        .any(|r| r.error.is_some() || r.images.iter().any(|i| i.error.is_some()));
    // A closed pipe (`| head`) is not a failure of the inspection.
    failed || written.is_err_and(|e| e.kind() != std::io::ErrorKind::BrokenPipe)
}

/// Read `path` and describe everything in it. Never fails: problems become `error` fields.
pub fn inspect_file(path: &Path) -> FileReport {
    let mut report = FileReport {
        path: path.display().to_string(),
        kind: None,
        images: Vec::new(),
        error: None,
    };
    let artifact = match container::open(path) {
        Ok(a) => a,
        Err(e) => {
            report.error = Some(e.to_string());
            return report;
        }
    };
    report.kind = Some(artifact.kind_name());
    match artifact.images() {
        Ok(images) => report.images = images.iter().map(inspect_image).collect(),
        Err(e) => report.error = Some(format!("{}: {e}", report.path)),
    }
    report
}

fn inspect_image(img: &ImageRef<'_>) -> ImageReport {
    let (kind, prefix) = match img.kind {
        EntryKind::Elf => ("elf", "sm"),
        EntryKind::Ptx => ("ptx", "compute"),
        EntryKind::Concat => ("concat", "sm"),
        EntryKind::Other(_) => ("other", "sm"),
    };
    let mut r = ImageReport {
        location: img.location.to_string(),
        kind,
        arch: format!("{prefix}_{}", img.arch),
        compression: match img.compression {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
        },
        stored_bytes: img.stored_size,
        image_bytes: img.image.len() as u64,
        elf_type: None,
        functions: Vec::new(),
        ptx_entries: Vec::new(),
        error: None,
    };
    match img.kind {
        EntryKind::Elf => match Cubin::parse(&img.image) {
            Ok(c) => {
                r.elf_type = Some(if c.is_relocatable() { "rel" } else { "exec" });
                let arch = arch_of(c.arch());
                r.functions = c
                    .functions()
                    .into_iter()
                    .map(|info| FunctionReport {
                        occupancy: arch
                            .filter(|_| info.is_kernel)
                            .and_then(|a| occupancy_of(a, &info, c.is_relocatable())),
                        info,
                    })
                    .collect();
            }
            Err(e) => r.error = Some(e.to_string()),
        },
        EntryKind::Ptx => r.ptx_entries = ptx_entries(&img.image),
        EntryKind::Concat | EntryKind::Other(_) => {}
    }
    r
}

/// `90` → sm_90's occupancy row, when there is one.
fn arch_of(sm: u32) -> Option<Arch> {
    Sm::of(sm).limits()
}

fn occupancy_of(arch: Arch, f: &FunctionInfo, relocatable: bool) -> Option<OccupancyReport> {
    let product = |d: [u32; 3]| d.iter().try_fold(1u32, |a, &x| a.checked_mul(x.max(1)));
    let (threads, block_from) = if let Some(t) = f.reqntid.and_then(product) {
        (t, "reqntid")
    } else if let Some(t) = f.max_threads.and_then(product) {
        (t, "launch bounds")
    } else {
        (ASSUMED_BLOCK, "assumed")
    };
    let shared = u32::try_from(f.static_shared).ok()?;
    // A relocatable cubin has no reserved region laid in yet (see SharedBytes).
    let shared = if relocatable {
        SharedBytes::User(shared)
    } else {
        SharedBytes::FromCubin(shared)
    };
    let k = KernelResources::new(f.registers?, shared);
    let o = occupancy(arch, &k, &Launch::new(threads)).ok()?;
    Some(OccupancyReport {
        threads_per_block: threads,
        block_from,
        blocks_per_sm: o.blocks_per_sm,
        warps_per_sm: o.warps_per_sm,
        max_warps_per_sm: o.max_warps_per_sm,
        limited_by: o.limiters.iter().map(|l| l.name()).collect(),
    })
}

/// The `.entry` names of a PTX module.
fn ptx_entries(ptx: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(ptx);
    text.lines()
        .filter_map(|l| {
            let rest = l
                .trim_start()
                .strip_prefix(".visible ")
                .unwrap_or(l.trim_start());
            let rest = rest.strip_prefix(".entry")?;
            let name = rest
                .trim_start()
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn render(r: &FileReport, out: &mut impl Write) -> std::io::Result<()> {
    let Some(kind) = r.kind else {
        return Ok(()); // reported on stderr
    };
    let n = r.images.len();
    writeln!(
        out,
        "{}: {kind}, {n} device image{}",
        r.path,
        if n == 1 { "" } else { "s" }
    )?;
    for img in &r.images {
        let stored = if img.compression == "none" {
            "uncompressed".to_string()
        } else {
            format!("{} {} bytes stored", img.compression, img.stored_bytes)
        };
        let what = match (img.kind, img.elf_type) {
            ("elf", Some("rel")) => "relocatable cubin",
            ("elf", _) => "cubin",
            ("ptx", _) => "PTX",
            _ => "concatenated cubins",
        };
        writeln!(
            out,
            "  {}: {what} {}, {} bytes ({stored})",
            img.location, img.arch, img.image_bytes
        )?;
        if let Some(e) = &img.error {
            writeln!(out, "    error: {e}")?;
        }
        if !img.ptx_entries.is_empty() {
            writeln!(out, "    entries: {}", img.ptx_entries.join(" "))?;
        }
        if img.functions.is_empty() {
            continue;
        }
        writeln!(
            out,
            "    {:<8} {:>4} {:>7} {:>7} {:>7} {:>6} {:>13} {:>19}  name",
            "kind", "REG", "SHARED", "STACK", "FRAME", "SPILLS", "THREADS", "OCCUPANCY"
        )?;
        for f in &img.functions {
            let i = &f.info;
            let threads = match (i.reqntid, i.max_threads) {
                (Some([x, y, z]), _) => format!("={x}x{y}x{z}"),
                (None, Some([x, y, z])) => format!("<={x}x{y}x{z}"),
                _ => "-".to_string(),
            };
            let occ = f.occupancy.as_ref().map_or_else(
                || "-".to_string(),
                |o| {
                    format!(
                        "{}/{} warps @{}{}",
                        o.warps_per_sm,
                        o.max_warps_per_sm,
                        o.threads_per_block,
                        if o.block_from == "assumed" { "*" } else { "" }
                    )
                },
            );
            let stack = i
                .min_stack
                .map_or_else(|| "UNKNOWN".to_string(), |s| s.to_string());
            write!(
                out,
                "    {:<8} {:>4} {:>7} {:>7} {:>7} {:>6} {:>13} {:>19}  {}",
                if i.is_kernel { "kernel" } else { "function" },
                opt(i.registers),
                i.static_shared,
                stack,
                opt(i.frame_size),
                i.spill_instructions,
                threads,
                occ,
                i.name
            )?;
            if !i.callees.is_empty() {
                write!(out, "  calls {}", i.callees.join(", "))?;
            }
            if !i.flags.is_empty() {
                write!(out, "  [{}]", i.flags.join(", "))?;
            }
            writeln!(out)?;
        }
    }
    if r.images.iter().any(|i| {
        i.functions.iter().any(|f| {
            f.occupancy
                .as_ref()
                .is_some_and(|o| o.block_from == "assumed")
        })
    }) {
        writeln!(
            out,
            "  (* no block size declared: occupancy at an assumed {ASSUMED_BLOCK} threads)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entry_names() {
        let ptx = b".version 9.0\n.target sm_90\n.visible .entry _Z4axpyfPf(\n\t.param .f32 a\n)\n{\n}\n.entry local_k()\n{ }\n.func (.reg .b32 r) f()\n";
        assert_eq!(ptx_entries(ptx), vec!["_Z4axpyfPf", "local_k"]);
    }

    #[test]
    fn arch_numbers() {
        assert_eq!(arch_of(90).map(|a| (a.major(), a.minor())), Some((9, 0)));
        assert_eq!(arch_of(120).map(|a| (a.major(), a.minor())), Some((12, 0)));
        assert!(arch_of(0).is_none());
        assert!(arch_of(5000).is_none());
    }
}

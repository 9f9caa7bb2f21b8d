//! `nvcc-orion toolchain --sccache-dist OUT.tar.gz`: pack what a remote builder needs to run
//! nvcc-orion's ptxas steps (see `farm::toolchain`) and print the sccache client configuration
//! that sends the ptxas steps of `nvcc-orion --dryrun` listings there.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::driver::dryrun_shim;
use crate::farm::toolchain;
use crate::settings::Settings;
use crate::toolkit::Toolkit;

#[derive(Debug, Parser)]
#[command(about = "Pack nvcc-orion's ptxas and the real toolkit for a compile farm")]
pub struct Args {
    /// Write an sccache-dist toolchain archive (.tar.gz) here.
    #[arg(long = "sccache-dist", value_name = "OUT.tar.gz")]
    pub(crate) sccache_dist: PathBuf,
}

/// Returns true on failure (after one line on stderr).
pub fn run(args: &Args, out: &mut dyn Write) -> bool {
    match pack(args) {
        Ok(config) => {
            let _ = out.write_all(config.as_bytes());
            false
        }
        Err(e) => {
            eprintln!("nvcc-orion toolchain: error: {e}");
            true
        }
    }
}

fn pack(args: &Args) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find nvcc-orion itself: {e}"))?;
    let tk = Toolkit::locate(&|k| std::env::var_os(k), &exe).map_err(|e| e.to_string())?;
    let archive = toolchain::sccache_dist(&exe, &tk).map_err(|e| e.to_string())?;
    let target = std::path::absolute(&args.sccache_dist).map_err(|e| e.to_string())?;
    let dir = target.parent().unwrap_or(Path::new("."));
    // Written aside and renamed: a farm never picks up half an archive. Readable by the
    // sccache client of any user (a temporary file starts private).
    use std::os::unix::fs::PermissionsExt;
    crate::atomic_file::write_with(&target, Some(std::fs::Permissions::from_mode(0o644)), |f| {
        archive
            .write_tar_gz(std::io::BufWriter::new(f))
            .map_err(std::io::Error::other)
    })
    .map_err(|e| {
        format!(
            "cannot write {} in {}: {e}",
            target.display(),
            dir.display()
        )
    })?;
    // The shim `nvcc-orion --dryrun` puts on the listing's PATH, from the same settings.
    let (settings, _) = Settings::read(&|k| std::env::var(k).ok(), &[], &crate::transform::keys());
    let shim = dryrun_shim::shim_dir(&dryrun_shim::shim_root(&settings), &exe)
        .map_err(|e| format!("cannot make the ptxas shim: {e}"))?
        .join("ptxas");
    // cicc and cudafe++ need the whole toolkit (libdevice, headers): they stay on the client.
    // sccache names them as nvcc's listing spells them (`<bin>/../nvvm/bin/cicc`).
    let mut local = Vec::new();
    for spelled in [
        tk.bin_dir().join("../nvvm/bin/cicc"),
        tk.bin_dir().join("cudafe++"),
    ] {
        if let Ok(real) = std::fs::canonicalize(&spelled)
            && real != spelled
        {
            local.push(real);
        }
        local.push(spelled);
    }
    eprintln!(
        "nvcc-orion toolchain: wrote {} ({} entries); add this to sccache's client configuration:",
        target.display(),
        archive.paths().count()
    );
    Ok(toolchain::client_config(&shim, &target, &local))
}

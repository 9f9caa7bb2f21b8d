//! `nvcc-orion toolchain --sccache-dist OUT.tar.gz`: pack what a remote builder needs to run
//! nvcc-orion's ptxas steps (see `farm::toolchain`) and print the sccache client configuration
//! that sends the ptxas steps of `nvcc-orion --dryrun` listings there.

use std::io::Write;
use std::path::PathBuf;

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

/// Why `toolchain` wrote no archive.
#[derive(Debug, thiserror::Error)]
enum PackError {
    #[error("cannot find nvcc-orion itself: {0}")]
    SelfExe(std::io::Error),
    #[error(transparent)]
    Toolkit(#[from] crate::toolkit::ToolkitError),
    #[error(transparent)]
    Toolchain(#[from] toolchain::ToolchainError),
    #[error(transparent)]
    Archive(#[from] crate::farm::archive::ArchiveError),
    /// The target's path could not be made absolute, or the archive's mode set.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("cannot write {}: {source}", target.display())]
    Write {
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make the ptxas shim: {0}")]
    Shim(std::io::Error),
}

fn pack(args: &Args) -> Result<String, PackError> {
    let exe = std::env::current_exe().map_err(PackError::SelfExe)?;
    let tk = Toolkit::locate(&|k| std::env::var_os(k), &exe)?;
    let archive = toolchain::sccache_dist(&exe, &tk)?;
    let target = std::path::absolute(&args.sccache_dist)?;
    // Written aside and renamed: a farm never picks up half an archive. Readable by the
    // sccache client of any user (a temporary file starts private).
    use std::os::unix::fs::PermissionsExt;
    crate::atomic_file::write_with(&target, Some(std::fs::Permissions::from_mode(0o644)), |f| {
        archive
            .write_tar_gz(std::io::BufWriter::new(f))
            .map_err(std::io::Error::other)
    })
    .map_err(|source| PackError::Write {
        target: target.clone(),
        source,
    })?;
    // The shim `nvcc-orion --dryrun` puts on the listing's PATH, from the same settings.
    let (settings, _) = Settings::read(&|k| std::env::var(k).ok(), &[], &crate::transform::keys());
    let shim = dryrun_shim::shim_dir(&dryrun_shim::shim_root(&settings), &exe)
        .map_err(PackError::Shim)?
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

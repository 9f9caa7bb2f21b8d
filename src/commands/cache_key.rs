//! `nvcc-orion cache-key`: what a whole-compile cache must hash besides the command line, for
//! ccache's `compiler_check = %compiler% cache-key`: this nvcc-orion (version and bytes), the
//! real nvcc it runs, and the settings from the environment that change the output.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::settings::Settings;
use crate::toolkit::Toolkit;

/// Print the key; returns true on failure. Never fails for a missing toolkit (the key then
/// says so, and the compile itself reports it).
pub fn run(out: &mut dyn Write) -> bool {
    let exe = std::env::current_exe().unwrap_or_else(|_| "nvcc-orion".into());
    let me = crate::farm::identity::of_binary(&exe)
        .unwrap_or_else(|e| format!("nvcc-orion {} (unreadable: {e})", env!("CARGO_PKG_VERSION")));
    let nvcc = match Toolkit::locate(&|k| std::env::var_os(k), &exe) {
        Ok(tk) => {
            let v = std::process::Command::new(tk.nvcc())
                .arg("--version")
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .trim()
                        .replace('\n', " | ")
                })
                .unwrap_or_else(|e| format!("cannot run: {e}"));
            format!("nvcc {}: {v}", tk.nvcc().display())
        }
        Err(e) => format!("nvcc: {e}"),
    };
    let (settings, _) = Settings::read(&|k| std::env::var(k).ok(), &[], &crate::transform::keys());
    let key = format!("{me}\n{nvcc}\n{}\n", settings_line(&settings));
    out.write_all(key.as_bytes()).is_err()
}

/// `settings: --orion-…`: every setting that changes the output ([`Settings::output_options`]).
fn settings_line(settings: &Settings) -> String {
    format!(
        "settings:{}",
        settings
            .output_options()
            .iter()
            .map(|o| format!(" {o}"))
            .collect::<String>()
    )
}

/// The line `nvcc-orion --ptxas --version` adds under ptxas's banner, for caches keyed on that
/// text (Triton's): `nvcc-orion <version> (ptxas mode), settings <digest>`, the digest a
/// SHA-256 over what `cache-key` prints besides nvcc (this binary's identity and the settings).
/// It never says `release`, so the banner's `release X.Y` stays the first one.
pub fn banner_line(exe: &Path, settings: &Settings) -> String {
    let me = crate::farm::identity::of_binary(exe)
        .unwrap_or_else(|e| format!("nvcc-orion {} (unreadable: {e})", env!("CARGO_PKG_VERSION")));
    let digest = Sha256::digest(format!("{me}\n{}\n", settings_line(settings)).as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "nvcc-orion {} (ptxas mode), settings {hex}",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_line_follows_the_output_settings_and_never_says_release() {
        let exe = std::env::current_exe().unwrap();
        let read = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let env = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            Settings::read(&env, &[], &crate::transform::keys()).0
        };
        let default = banner_line(&exe, &read(&[]));
        assert_eq!(default, banner_line(&exe, &read(&[])), "deterministic");
        // Settings that do not change the output (verbosity) leave it; those that do change it.
        assert_eq!(
            default,
            banner_line(&exe, &read(&[("NVCC_ORION_VERBOSE", "1")]))
        );
        for changed in [
            ("NVCC_ORION_MARGIN", "7"),
            ("NVCC_ORION_SEARCH", "full"),
            ("NVCC_ORION_BLOCK_SIZE", "256"),
            ("NVCC_ORION", "off"),
            ("NVCC_ORION_FORCE", "lowest"),
        ] {
            assert_ne!(default, banner_line(&exe, &read(&[changed])), "{changed:?}");
        }
        assert!(default.starts_with(&format!("nvcc-orion {} ", env!("CARGO_PKG_VERSION"))));
        assert!(!default.contains("release"), "{default}");
    }
}

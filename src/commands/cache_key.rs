//! `nvcc-orion cache-key`: what a whole-compile cache must hash besides the command line, for
//! ccache's `compiler_check = %compiler% cache-key`: this nvcc-orion (version and bytes), the
//! real nvcc it runs, and the settings from the environment that change the output.

use std::io::Write;

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
    let key = format!(
        "{me}\n{nvcc}\nsettings:{}\n",
        settings
            .output_options()
            .iter()
            .map(|o| format!(" {o}"))
            .collect::<String>()
    );
    out.write_all(key.as_bytes()).is_err()
}

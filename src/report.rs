//! What nvcc-orion tells people about each kernel: for now one line per function of every
//! cubin a ptxas step made, from the toolkit's own `cuobjdump -res-usage`.

use std::path::Path;
use std::process::Command;

/// Resources of one function, as `cuobjdump -res-usage` prints them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FunctionUsage {
    pub name: String,
    pub registers: u32,
    pub stack: u32,
    pub shared: u32,
    pub local: u32,
}

/// Parse `cuobjdump -res-usage` text. Fields after `REG:` are optional and may be reordered by
/// a future toolkit, so they are read by name; an unreadable function line is skipped.
pub fn parse_res_usage(text: &str) -> Vec<FunctionUsage> {
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(n) = t
            .strip_prefix("Function ")
            .and_then(|n| n.strip_suffix(':'))
        {
            name = Some(n.to_string());
        } else if let (Some(n), true) = (&name, t.starts_with("REG:")) {
            let mut f = FunctionUsage {
                name: n.clone(),
                ..Default::default()
            };
            for field in t.split_whitespace() {
                let Some((k, v)) = field.split_once(':') else {
                    continue;
                };
                let Ok(v) = v.parse::<u32>() else { continue };
                match k {
                    "REG" => f.registers = v,
                    "STACK" => f.stack = v,
                    "SHARED" => f.shared = v,
                    "LOCAL" => f.local = v,
                    _ => {}
                }
            }
            out.push(f);
            name = None;
        }
    }
    out
}

/// Run `cuobjdump -res-usage` on a cubin.
pub fn res_usage(cuobjdump: &Path, cubin: &Path) -> std::io::Result<Vec<FunctionUsage>> {
    let out = Command::new(cuobjdump)
        .arg("-res-usage")
        .arg(cubin)
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(parse_res_usage(&String::from_utf8_lossy(&out.stdout)))
}

/// One human line per function: `nvcc-orion: sm_90 name: 64 registers, ...; decision`.
pub fn line(arch: &str, f: &FunctionUsage, decision: &str) -> String {
    format!(
        "nvcc-orion: {arch} {}: {} registers, {} B stack, {} B static shared, {} B local; {decision}",
        f.name, f.registers, f.stack, f.shared, f.local
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cuobjdump_res_usage() {
        let text = "\nResource usage:\n Common:\n  GLOBAL:72\n Function _Z2f1fi:\n  REG:24 STACK:8 SHARED:0 LOCAL:4 TEXTURE:0\n Function callk:\n  REG:40 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[2]:28 CONSTANT[0]:368 TEXTURE:0 SURFACE:0 SAMPLER:0\n";
        let f = parse_res_usage(text);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0],
            FunctionUsage {
                name: "_Z2f1fi".into(),
                registers: 24,
                stack: 8,
                shared: 0,
                local: 4
            }
        );
        assert_eq!(
            (f[1].name.as_str(), f[1].registers, f[1].shared),
            ("callk", 40, 1024)
        );
        assert!(line("sm_90", &f[1], "kept").starts_with("nvcc-orion: sm_90 callk: 40 registers"));
    }
}

//! The reference's own PTX edit: a `.maxnreg N` on an `.entry` (replacing one already there),
//! and optionally the `enable_smem_spilling` pragma at the top of its body. Written apart from
//! nvcc-orion's PTX code on purpose: the reference must not share what it checks.

/// A kernel's budget as the report gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RefBudget {
    pub regs: u32,
    pub pragma: bool,
}

/// `ptx` with each `(entry, budget)` written; an entry that is not in the PTX is an error.
pub fn with_maxnreg(ptx: &str, budgets: &[(String, RefBudget)]) -> Result<String, String> {
    let mut out = ptx.to_string();
    for (name, b) in budgets {
        out = one(&out, name, *b)?;
    }
    Ok(out)
}

fn one(ptx: &str, name: &str, b: RefBudget) -> Result<String, String> {
    // The entry's header line: `.visible .entry NAME(` (or without parameters).
    let at = ptx
        .match_indices(".entry ")
        .map(|(i, _)| i + ".entry ".len())
        .find(|&i| {
            ptx[i..].starts_with(name)
                && ptx[i + name.len()..].starts_with(|c: char| c == '(' || c.is_whitespace())
        })
        .ok_or_else(|| format!("no .entry {name} in the PTX"))?;
    let brace = at + ptx[at..].find('{').ok_or("an .entry without a body")?;
    // Between the name and the body: the parameter list, then performance directives.
    let close = ptx[at..brace]
        .rfind(')')
        .map_or(at + name.len(), |c| at + c + 1);
    let directives = &ptx[close..brace];
    let mut head = match directives.find(".maxnreg") {
        Some(d) => {
            let start = close + d;
            let digits_from = start + ".maxnreg".len();
            let rest = &ptx[digits_from..brace];
            let skip = rest.len() - rest.trim_start().len();
            let len = rest[skip..].bytes().take_while(u8::is_ascii_digit).count();
            format!(
                "{}.maxnreg {}{}",
                &ptx[..start],
                b.regs,
                &ptx[digits_from + skip + len..=brace]
            )
        }
        None => format!(
            "{}\n.maxnreg {}{}",
            &ptx[..close],
            b.regs,
            &ptx[close..=brace]
        ),
    };
    if b.pragma {
        head.push_str("\n.pragma \"enable_smem_spilling\";");
    }
    Ok(format!("{head}{}", &ptx[brace + 1..]))
}

/// `ptx` with a copy of each `(kernel, name)`'s `.entry` renamed `name`, right after the
/// kernel's own, copies of one kernel in the given order: the module nvcc-orion's extra ptxas
/// run compiles under adapt (docs/selector.md §The emitter), made here with our own edit.
pub fn with_copies(ptx: &str, copies: &[(String, String)]) -> Result<String, String> {
    let mut out = ptx.to_string();
    let mut kernels: Vec<&str> = copies.iter().map(|(k, _)| k.as_str()).collect();
    kernels.dedup();
    for kernel in kernels {
        let (start, end) = entry_span(&out, kernel)?;
        let own = out[start..end].to_string();
        let header = format!(".entry {kernel}");
        let text: String = copies
            .iter()
            .filter(|(k, _)| k == kernel)
            .map(|(_, name)| own.replacen(&header, &format!(".entry {name}"), 1))
            .collect();
        out.insert_str(end, &text);
    }
    Ok(out)
}

/// Where `kernel`'s `.entry` lies: from the start of its header line through the line of
/// the body's closing brace (nvcc's PTX closes a function with `}` alone on a line).
fn entry_span(ptx: &str, kernel: &str) -> Result<(usize, usize), String> {
    let at = ptx
        .match_indices(".entry ")
        .map(|(i, _)| i)
        .find(|&i| {
            let rest = &ptx[i + ".entry ".len()..];
            rest.starts_with(kernel)
                && rest[kernel.len()..].starts_with(|c: char| c == '(' || c.is_whitespace())
        })
        .ok_or_else(|| format!("no .entry {kernel} in the PTX"))?;
    let start = ptx[..at].rfind('\n').map_or(0, |n| n + 1);
    let end = ptx[at..]
        .find("\n}\n")
        .map(|e| at + e + 3)
        .ok_or_else(|| format!("no end of .entry {kernel}"))?;
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_follow_their_kernel() {
        let ptx = ".visible .entry _Z1kv(\n.param .u32 _Z1kv_param_0\n)\n{\nret;\n}\n.visible .entry _Z1jv()\n{\nret;\n}\n";
        let copies = [
            ("_Z1kv".to_string(), "_Z1kv__orion_v1".to_string()),
            ("_Z1kv".to_string(), "_Z1kv__orion_v2".to_string()),
        ];
        let out = with_copies(ptx, &copies).unwrap();
        let entries: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry "))
            .collect();
        assert_eq!(
            entries,
            ["_Z1kv(", "_Z1kv__orion_v1(", "_Z1kv__orion_v2(", "_Z1jv()"]
        );
        // Parameters keep their names (they are scoped to the function).
        assert_eq!(out.matches("_Z1kv_param_0").count(), 3);
        assert!(with_copies(ptx, &[("_Z1x".into(), "y".into())]).is_err());
    }

    #[test]
    fn adds_and_replaces() {
        let ptx = ".visible .entry _Z1kv(\n.param .u32 a\n)\n.maxntid 128, 1, 1\n{\nret;\n}\n.visible .entry _Z1k2v(\n)\n.maxnreg 64\n{\nret;\n}\n";
        let b = |regs, pragma| RefBudget { regs, pragma };
        let out = with_maxnreg(
            ptx,
            &[
                ("_Z1kv".into(), b(40, true)),
                ("_Z1k2v".into(), b(32, false)),
            ],
        )
        .unwrap();
        assert!(out.contains(
            ")\n.maxnreg 40\n.maxntid 128, 1, 1\n{\n.pragma \"enable_smem_spilling\";\nret;"
        ));
        assert!(out.contains(".maxnreg 32\n{\nret;") && !out.contains("64"));
        assert!(with_maxnreg(ptx, &[("_Z1k".into(), b(1, false))]).is_err());
    }
}

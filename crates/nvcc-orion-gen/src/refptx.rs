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

#[cfg(test)]
mod tests {
    use super::*;

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

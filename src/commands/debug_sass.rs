//! `nvcc-orion debug sass FILE [--kernel K] [--liveness] [--cfg]`.

use std::path::PathBuf;

use crate::analysis::{Cfg, Liveness, RegFile};
use crate::sass::decode;
use crate::sass::ir::{Function, Instr};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A cubin, or any file `inspect` reads.
    pub(crate) file: PathBuf,
    /// Only this kernel (mangled name).
    #[arg(long)]
    pub(crate) kernel: Option<String>,
    /// One line per instruction: `0x<offset> live=<n> <function> <opcode>  [<registers>]`,
    /// the general registers live into it or written by it, as `nvdisasm -plr` marks them.
    #[arg(long)]
    pub(crate) liveness: bool,
    /// Print the control-flow graph.
    #[arg(long)]
    pub(crate) cfg: bool,
    /// Compare every instruction's register reads and writes with `nvdisasm -plr` (the
    /// oracle check run before a rewrite); one line per disagreement.
    #[arg(long)]
    pub(crate) oracle: bool,
}

/// The functions to show: all, or kernel `k` and the sub-functions named after it.
fn selected<'a>(fs: &'a [Function], k: Option<&str>) -> Vec<&'a Function> {
    fs.iter()
        .filter(|f| k.is_none_or(|k| f.name == k || f.name.starts_with(&format!("${k}$"))))
        .collect()
}

fn ir_line(ins: &Instr) -> String {
    let mut s = format!("{:#06x}", ins.offset);
    if let Some(p) = ins.predicate {
        let neg = if p.negated { "!" } else { "" };
        let file = if p.uniform { "UP" } else { "P" };
        let idx = if p.index == 7 {
            "T".to_string()
        } else {
            p.index.to_string()
        };
        s += &format!(" @{neg}{file}{idx}");
    }
    s += &format!(" {}", ins.opcode);
    let ops: Vec<String> = ins
        .operands
        .iter()
        .map(|o| {
            let role = match o.role {
                crate::sass::ir::Role::Read => "",
                crate::sass::ir::Role::Write => "w:",
            };
            if o.width > 1 {
                format!("{role}{}/{}", o.text, o.width)
            } else {
                format!("{role}{}", o.text)
            }
        })
        .collect();
    s += &format!(" {}", ops.join(", "));
    if let Some(t) = ins.target {
        s += &format!("  -> {t:#x}");
    }
    if !ins.targets.is_empty() {
        let ts: Vec<String> = ins.targets.iter().map(|t| format!("{t:#x}")).collect();
        s += &format!("  -> [{}]", ts.join(", "));
    }
    if let Some(c) = &ins.callee {
        s += &format!("  calls {c}");
    }
    if ins.unknown {
        s += "  UNKNOWN";
    }
    s
}

/// Run the command; true on failure (already reported on stderr).
pub fn run(args: &Args, out: &mut impl std::io::Write) -> bool {
    let Some(nv) = crate::toolkit::find_tool("nvdisasm") else {
        super::report_error("debug sass needs the CUDA toolkit's nvdisasm (no nvcc found)");
        return true;
    };
    let d = match decode::decode_file(&nv, &args.file) {
        Ok(d) => d,
        Err(e) => {
            super::report_error(format_args!("{}: {e}", args.file.display()));
            return true;
        }
    };
    let fs = selected(&d.functions, args.kernel.as_deref());
    if fs.is_empty() {
        super::report_error(format_args!(
            "{}: no kernel {}",
            args.file.display(),
            args.kernel.as_deref().unwrap_or("")
        ));
        return true;
    }
    let mut text = String::new();
    if args.oracle {
        let verdicts = match crate::verify::oracle::check_cubin(&nv, &args.file, &d.functions) {
            Ok(v) => v,
            Err(e) => {
                super::report_error(format_args!("{}: {e}", args.file.display()));
                return true;
            }
        };
        for f in &fs {
            match verdicts.of(&f.name) {
                Some(Ok(a)) => {
                    text += &format!("{}: agrees ({} instructions)\n", f.name, a.instructions)
                }
                Some(Err(ds)) => {
                    for d in ds {
                        text += &format!("{:?} {d}\n", d.file);
                    }
                }
                None => text += &format!("{}: not compared\n", f.name),
            }
        }
    } else if args.liveness {
        // Instructions the operand tables do not cover take their effects from nvdisasm.
        let listing = if fs.iter().any(|f| f.instrs.iter().any(|i| i.unknown)) {
            match crate::verify::plr::Listing::of_cubin(&nv, &args.file) {
                Ok(l) => Some(l),
                Err(e) => {
                    super::report_error(format_args!("{}: {e}", args.file.display()));
                    return true;
                }
            }
        } else {
            None
        };
        // One line per instruction, in address order across all functions of each section.
        let mut rows = Vec::new();
        for f in &fs {
            let cfg = Cfg::build(f);
            let marked = listing.as_ref().map(|l| l.marked(f)).unwrap_or_default();
            let live = Liveness::compute_marked(f, &cfg, RegFile::Gpr, &marked);
            for (i, ins) in f.instrs.iter().enumerate() {
                let regs: Vec<String> = live.occupied(i).iter().map(|r| format!("R{r}")).collect();
                rows.push((
                    f.section,
                    ins.offset,
                    format!(
                        "{:#06x} live={} {} {}  [{}]\n",
                        ins.offset,
                        live.count(i),
                        f.name,
                        ins.opcode,
                        regs.join(" ")
                    ),
                ));
            }
        }
        rows.sort_by_key(|r| (r.0, r.1));
        for r in rows {
            text += &r.2;
        }
    } else {
        text += &format!("sm_{}\n", d.sm);
        for f in &fs {
            let kind = if f.kernel { "kernel" } else { "function" };
            text += &format!(
                "{kind} {} (section {}, {:#x}..{:#x})\n",
                f.name,
                f.section,
                f.start,
                f.end()
            );
            if args.cfg {
                let cfg = Cfg::build(f);
                for (id, b) in cfg.blocks() {
                    let succ: Vec<String> = cfg
                        .successors(id)
                        .map(|s| format!("{:#x}", f.instrs[cfg.graph[s].first].offset))
                        .collect();
                    text += &format!(
                        "  block {:#x}..{:#x} -> [{}]\n",
                        f.instrs[b.first].offset,
                        f.instrs[b.end - 1].offset + 16,
                        succ.join(", ")
                    );
                }
                for l in cfg.loops() {
                    text += &format!(
                        "  loop header {:#x} latch {:#x} ({} blocks)\n",
                        f.instrs[cfg.graph[l.header].first].offset,
                        f.instrs[cfg.graph[l.latch].first].offset,
                        l.body.len()
                    );
                }
            } else {
                for ins in &f.instrs {
                    text += &format!("  {}\n", ir_line(ins));
                }
            }
        }
    }
    if let Err(e) = out.write_all(text.as_bytes()) {
        super::report_error(e);
        return true;
    }
    false
}

//! The oracle check: before a function is rewritten (and after, on the rewritten code),
//! what our IR says each instruction reads and writes, register by register in every file
//! (tuples and widths, predicates, uniform registers), must equal what `nvdisasm -plr`
//! marks (docs/DESIGN.md §The toolkit oracle: the checker takes its instruction facts from the
//! toolkit, not from the operand tables the transforms use). Any difference refuses the rewrite
//! of that function, with the instruction named.
//!
//! Where `-plr` is known not to describe the instruction's own effect, the comparison is
//! narrowed, never skipped silently:
//! * `CALL`/`RET`: nvdisasm marks its calling-convention model (argument and return
//!   registers, clobbers) there; the checker summarises callees from their code instead, so
//!   only the explicit operands (a call through a register, `RET`'s return address) are
//!   compared, as reads.
//! * `NOP` padding after a function's last instruction has no row; a `NOP` touches nothing,
//!   so a missing row is accepted for it alone.
//!
//! `-plr` marks a write (`^`) whether or not the value is used later and whether or not the
//! instruction is guarded (checked on `tests/kernels/oracle`), so reads and writes must be
//! equal, register for register. `-plr` cannot see the `PR` pseudo-register (`R2P`/`P2R`
//! move predicates by a mask): those instructions disagree in `PRED` and refuse the rewrite.

use std::collections::BTreeSet;
use std::fmt;

use super::plr::{File, Marks, Row, Rows};
use crate::sass::Op;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};
use crate::sass::listing::Sections;

/// Registers our IR says an instruction touches, per file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Touch {
    pub(crate) reads: BTreeSet<u8>,
    pub(crate) writes: BTreeSet<u8>,
}

/// What the IR says `ins` reads and writes in `file`.
pub(crate) fn ours(ins: &Instr, file: File) -> Touch {
    let mut t = Touch::default();
    let add = |set: &mut BTreeSet<u8>, base: u8, width: u8, zero: u8| {
        if base == zero {
            return;
        }
        for k in 0..width.max(1) {
            let r = base.saturating_add(k);
            if r < zero {
                set.insert(r);
            }
        }
    };
    if let Some(p) = ins.predicate
        && p.index != 7
        && (file == File::UPred) == p.uniform
        && matches!(file, File::Pred | File::UPred)
    {
        t.reads.insert(p.index);
    }
    for op in &ins.operands {
        let (r, w) = (op.role.reads(), op.role.writes());
        match (&op.kind, file) {
            (OperandKind::Reg(x), File::Gpr) => {
                if r {
                    add(&mut t.reads, *x, op.width, RZ);
                }
                if w {
                    add(&mut t.writes, *x, op.width, RZ);
                }
            }
            (OperandKind::UReg(x), File::UGpr) => {
                if r {
                    add(&mut t.reads, *x, op.width, 63);
                }
                if w {
                    add(&mut t.writes, *x, op.width, 63);
                }
            }
            (OperandKind::Pred { index, .. }, File::Pred)
            | (OperandKind::UPred { index, .. }, File::UPred) => {
                if r {
                    add(&mut t.reads, *index, 1, 7);
                }
                if w {
                    add(&mut t.writes, *index, 1, 7);
                }
            }
            (
                OperandKind::Addr {
                    reg: Some(x),
                    reg_width,
                    ..
                },
                File::Gpr,
            ) => add(&mut t.reads, *x, *reg_width, RZ),
            (
                OperandKind::Addr {
                    ureg,
                    ureg_width,
                    desc,
                    ..
                },
                File::UGpr,
            ) => {
                if let Some(x) = ureg {
                    add(&mut t.reads, *x, *ureg_width, 63);
                }
                // A memory descriptor is a uniform register pair.
                if let Some(x) = desc {
                    add(&mut t.reads, *x, 2, 63);
                }
            }
            // `PR` stands for every predicate (the checker's reading of `R2P`/`P2R`).
            (OperandKind::SpecialReg(name), File::Pred | File::UPred)
                if name == if file == File::Pred { "PR" } else { "UPR" } =>
            {
                for p in 0..7 {
                    if r {
                        t.reads.insert(p);
                    }
                    if w {
                        t.writes.insert(p);
                    }
                }
            }
            (OperandKind::Const { reg: Some(x), .. }, File::Gpr) => {
                add(&mut t.reads, *x, 1, RZ);
            }
            (OperandKind::Const { ureg: Some(x), .. }, File::UGpr) => {
                add(&mut t.reads, *x, 1, 63);
            }
            _ => {}
        }
    }
    t
}

/// One instruction where the IR and the toolkit disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub(crate) function: String,
    pub(crate) offset: u64,
    /// Opcode and operands as printed.
    pub(crate) instr: String,
    pub(crate) file: File,
    /// (ours, nvdisasm's): reads, then writes.
    pub(crate) reads: (BTreeSet<u8>, BTreeSet<u8>),
    pub(crate) writes: (BTreeSet<u8>, BTreeSet<u8>),
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.file.prefix();
        let show = |s: &BTreeSet<u8>| {
            let v: Vec<String> = s.iter().map(|r| format!("{p}{r}")).collect();
            format!("{{{}}}", v.join(","))
        };
        write!(
            f,
            "{}+{:#x} `{}`: our operand tables say it reads {} and writes {}, nvdisasm -plr says reads {} and writes {}",
            self.function,
            self.offset,
            self.instr,
            show(&self.reads.0),
            show(&self.writes.0),
            show(&self.reads.1),
            show(&self.writes.1)
        )
    }
}

/// Opcode and operand text of an instruction, for messages.
pub(crate) fn text(ins: &Instr) -> String {
    let ops: Vec<&str> = ins.operands.iter().map(|o| o.text.as_str()).collect();
    let guard = ins.predicate.map_or(String::new(), |p| {
        format!(
            "@{}{}{} ",
            if p.negated { "!" } else { "" },
            if p.uniform { "UP" } else { "P" },
            if p.index == 7 {
                "T".to_string()
            } else {
                p.index.to_string()
            }
        )
    });
    format!("{guard}{} {}", ins.opcode, ops.join(", "))
}

/// What was compared in one function, for reports and the coverage test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Instructions compared.
    pub instructions: usize,
    /// Opcodes (mnemonic and modifiers) seen and agreed.
    pub opcodes: BTreeSet<String>,
}

/// Compare one instruction with its row: `None` when they agree.
fn compare_one(ins: &Instr, row: &Row, file: File) -> Option<(Touch, Marks)> {
    let our = ours(ins, file);
    let theirs = row.marks(file);
    if ins.is_call() || ins.op() == Op::Ret {
        // Calling-convention marks: our explicit reads must be among nvdisasm's.
        let reads_ok = our.reads.iter().all(|r| theirs.reads.contains(r));
        return (!reads_ok).then_some((our, theirs));
    }
    (our.reads != theirs.reads || our.writes != theirs.writes).then_some((our, theirs))
}

/// Compare every instruction of `f` with the rows of its section (`section` is the text
/// section's name). `Err` lists every disagreement (a missing row is one, in every file).
pub(crate) fn check_function(
    f: &Function,
    section: &str,
    rows: &Rows,
) -> Result<Agreement, Vec<Disagreement>> {
    let mut bad = Vec::new();
    let mut agreed = Agreement::default();
    for ins in &f.instrs {
        let row = rows.get(&(section.to_string(), ins.offset));
        if row.is_none()
            && ins.op() == Op::Nop
            && ins.modifiers().next().is_none()
            && ins.operands.is_empty()
        {
            agreed.instructions += 1;
            continue;
        }
        let Some(row) = row else {
            bad.push(Disagreement {
                function: f.name.clone(),
                offset: ins.offset,
                instr: text(ins),
                file: File::Gpr,
                reads: (ours(ins, File::Gpr).reads, BTreeSet::new()),
                writes: (ours(ins, File::Gpr).writes, BTreeSet::new()),
            });
            continue;
        };
        let mut ok = true;
        for file in File::ALL {
            if let Some((our, theirs)) = compare_one(ins, row, file) {
                ok = false;
                bad.push(Disagreement {
                    function: f.name.clone(),
                    offset: ins.offset,
                    instr: text(ins),
                    file,
                    reads: (our.reads, theirs.reads),
                    writes: (our.writes, theirs.writes),
                });
            }
        }
        if ok {
            agreed.instructions += 1;
            agreed.opcodes.insert(ins.opcode.to_string());
        }
    }
    if bad.is_empty() { Ok(agreed) } else { Err(bad) }
}

/// The oracle's verdict on every function of a cubin: its `-plr` listing read once.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    /// Function name → what agreed, or the disagreements.
    pub(crate) functions: Vec<(String, Result<Agreement, Vec<Disagreement>>)>,
}

impl Verdicts {
    /// The verdict on one function (`None`: not in the cubin).
    pub fn of(&self, name: &str) -> Option<&Result<Agreement, Vec<Disagreement>>> {
        self.functions
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The first disagreement in the section of `functions` (a kernel and its callees), as
    /// one line for a refusal; `None` when they all agree.
    pub fn first_in(&self, functions: &[&Function]) -> Option<String> {
        functions.iter().find_map(|f| match self.of(&f.name) {
            Some(Err(d)) => Some(format!(
                "nvdisasm -plr disagrees with the operand tables at {}{}",
                d[0],
                if d.len() > 1 {
                    format!(" (and {} more)", d.len() - 1)
                } else {
                    String::new()
                }
            )),
            Some(Ok(_)) => None,
            None => Some(format!("{}: not checked against nvdisasm -plr", f.name)),
        })
    }
}

/// Run `nvdisasm -c -plr` on the cubin at `path` and compare every function of `functions`
/// (decoded from the same cubin) with it. `Err` when the listing cannot be had or read.
pub fn check_cubin(
    nvdisasm: &std::path::Path,
    path: &std::path::Path,
    functions: &[Function],
) -> Result<Verdicts, super::plr::ListingError> {
    check_sections(nvdisasm, path, &Sections::Every, functions)
}

/// [`check_cubin`] with the listing of the text sections `sections` only: `functions` must
/// lie in them (a function outside has no rows and disagrees).
pub fn check_sections(
    nvdisasm: &std::path::Path,
    path: &std::path::Path,
    sections: &Sections,
    functions: &[Function],
) -> Result<Verdicts, super::plr::ListingError> {
    let listing = super::plr::Listing::of_sections(nvdisasm, path, sections)?;
    let functions = functions
        .iter()
        .map(|f| {
            let section = listing.section(f.section);
            (f.name.clone(), check_function(f, section, &listing.rows))
        })
        .collect();
    Ok(Verdicts { functions })
}

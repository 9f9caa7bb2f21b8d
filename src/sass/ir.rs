//! The instruction IR, the one every layer reads: address, raw 128 bits, the typed opcode with
//! its modifiers, guard predicate, operands with role, register file and width, branch and
//! call targets, control bits. `decode` fills it from nvdisasm (operands included, for the
//! rewrites and the checker); `raw` from the bytes alone (no operands, for the predictor's
//! hot path).

use std::fmt;

use super::control::Control;
use super::opcode::{Op, Opcode};
use crate::arch::OpClass;

/// A guard predicate: `@P0`, `@!UP1`, `@PT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pred {
    /// Uniform predicate file (`UP`).
    pub(crate) uniform: bool,
    /// Predicate number; 7 is `PT`/`UPT`.
    pub(crate) index: u8,
    pub(crate) negated: bool,
}

impl Pred {
    /// `PT` (or `UPT`), never negated: the instruction always runs.
    pub(crate) fn is_true(&self) -> bool {
        self.index == 7 && !self.negated
    }
}

/// As nvdisasm prints a guard: `@P0`, `@!UP1`, `@PT`.
impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = if self.negated { "!" } else { "" };
        let file = if self.uniform { "UP" } else { "P" };
        if self.index == 7 {
            write!(f, "@{neg}{file}T")
        } else {
            write!(f, "@{neg}{file}{}", self.index)
        }
    }
}

/// What an operand names.
#[derive(Debug, Clone, PartialEq)]
pub enum OperandKind {
    /// General register `R<n>`; 255 is `RZ`.
    Reg(u8),
    /// Uniform register `UR<n>`; 63 is `URZ`.
    UReg(u8),
    /// Predicate `P<n>`; 7 is `PT`.
    Pred { index: u8, negated: bool },
    /// Uniform predicate `UP<n>`; 7 is `UPT`.
    UPred { index: u8, negated: bool },
    /// Convergence barrier `B<n>`.
    Barrier(u8),
    /// Special register `SR_TID.X`, `SRZ`, `PR`, ...
    SpecialReg(String),
    /// Constant bank `c[bank][offset]`, `c[bank][R+offset]`, `cx[UR][...]`.
    Const {
        bank: String,
        offset: i64,
        reg: Option<u8>,
        ureg: Option<u8>,
    },
    /// Integer or floating-point immediate, as printed.
    Imm(String),
    /// Memory address `[R2.64+UR4+0x10]`, `desc[UR4][R2.64]`.
    Addr {
        reg: Option<u8>,
        /// Registers the base covers (2 for `.64`).
        reg_width: u8,
        ureg: Option<u8>,
        /// Uniform registers the `ureg` part covers (2 for a 64-bit uniform address: sm_75's
        /// `LDG.E [UR4]`, which `nvdisasm -plr` shows reading UR4 and UR5).
        ureg_width: u8,
        desc: Option<u8>,
        imm: i64,
    },
    /// A function or label name.
    Label(String),
}

/// Whether an instruction reads or writes an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    Read,
    Write,
}

impl Role {
    pub(crate) fn reads(self) -> bool {
        matches!(self, Role::Read)
    }
    pub fn writes(self) -> bool {
        matches!(self, Role::Write)
    }
}

/// One operand, as printed by nvdisasm, with its meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    pub kind: OperandKind,
    pub(crate) role: Role,
    /// Registers covered, from the first (`R4` with width 2 is `R4:R5`).
    pub(crate) width: u8,
    /// `.reuse` was printed.
    pub(crate) reuse: bool,
    /// nvdisasm's text of this operand.
    pub text: String,
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct Instr {
    /// Byte offset in the function's section.
    pub offset: u64,
    /// The 128 bits, low word in the low half (as they lie in `.text`, little-endian).
    pub raw: u128,
    /// Mnemonic ([`Op`]) with modifiers, as nvdisasm prints it: `IMAD.WIDE.U32`.
    pub opcode: Opcode,
    pub predicate: Option<Pred>,
    pub operands: Vec<Operand>,
    pub ctrl: Control,
    /// Section offset of a direct branch (`BRA`, `BSSY`, `CALL.REL` to a label, `BRX` tables
    /// in `targets`).
    pub target: Option<u64>,
    /// `BRX` jump-table targets (nvdisasm's `BRANCH_TARGETS`), section offsets.
    pub(crate) targets: Vec<u64>,
    /// The function a direct `CALL` enters.
    pub callee: Option<String>,
    /// No operand rule covers this instruction: its registers are pinned.
    pub unknown: bool,
}

impl Instr {
    /// The typed mnemonic: [`Op::Imad`].
    pub fn op(&self) -> Op {
        self.opcode.op()
    }

    /// What kind of work it is (the stall predictor's and latency tables' key).
    pub fn class(&self) -> OpClass {
        self.opcode.class()
    }

    /// Mnemonic without modifiers: `IMAD`.
    pub fn base(&self) -> &str {
        self.opcode.base()
    }

    /// Modifiers after the mnemonic.
    pub fn modifiers(&self) -> impl Iterator<Item = &str> {
        self.opcode.modifiers()
    }

    pub fn has_mod(&self, m: &str) -> bool {
        self.opcode.has_mod(m)
    }

    /// Unconditional (no guard or `@PT`).
    pub fn always(&self) -> bool {
        self.predicate.is_none_or(|p| p.is_true())
    }

    /// General registers (RZ excluded) read by the instruction (guard predicate not included).
    pub fn gpr_reads(&self) -> Vec<u8> {
        self.gprs(|r| r.reads(), true)
    }

    /// General registers (RZ excluded) written by the instruction.
    pub fn gpr_writes(&self) -> Vec<u8> {
        self.gprs(|r| r.writes(), false)
    }

    fn gprs(&self, want: impl Fn(Role) -> bool, with_addr: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for op in &self.operands {
            let (base, width) = match &op.kind {
                OperandKind::Reg(r) if want(op.role) => (*r, op.width),
                OperandKind::Addr {
                    reg: Some(r),
                    reg_width,
                    ..
                } if with_addr => (*r, *reg_width),
                OperandKind::Const { reg: Some(r), .. } if with_addr => (*r, 1),
                _ => continue,
            };
            for k in 0..width {
                let r = base.saturating_add(k);
                if base != RZ && r < RZ && !out.contains(&r) {
                    out.push(r);
                }
            }
        }
        out
    }

    /// Ends the instruction stream of its path: `EXIT` or `RET` unconditional.
    pub fn is_exit(&self) -> bool {
        matches!(self.op(), Op::Exit | Op::Ret | Op::Kill)
    }

    /// Transfers control (branch, call, return, exit, jump table).
    pub fn is_branch(&self) -> bool {
        matches!(self.op(), Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Break)
    }

    pub fn is_call(&self) -> bool {
        self.op() == Op::Call
    }
}

/// `RZ`.
pub(crate) const RZ: u8 = 255;

/// One function (kernel or sub-function) of a cubin.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    /// Index of the section holding it.
    pub section: usize,
    /// Offset of the first instruction in the section.
    pub start: u64,
    pub instrs: Vec<Instr>,
    /// A kernel (`STO_CUDA_ENTRY`), not a sub-function.
    pub kernel: bool,
    /// Registers nvdisasm's call model covers: `SHI_REGISTERS` (sm_75-89), or on sm_90 the
    /// highest register the section names plus three (capped by it).
    pub(crate) regs: Option<u32>,
    /// The registers nvdisasm's liveness takes a call to clobber and a return to read
    /// (`analysis::liveness`): `regs` capped by the width of `-plr`'s table, which ends at
    /// the highest register the cubin names or a `RET` reads; `None`: `regs`.
    pub(crate) abi_regs: Option<u32>,
    /// How many predicates, uniform registers and uniform predicates nvdisasm's `-plr` table
    /// has a column for (the highest any instruction of the cubin but a `CALL` names, plus
    /// one): its liveness has a call clobber P0 up, UR4 to UR35 and UP0 up among them
    /// (`analysis::liveness`); `None`: every one.
    pub(crate) abi_files: Option<[u8; 3]>,
    /// Section offsets of this function's instructions that its `.nv.info.<k>` attributes
    /// name (EXIT and warp-wide instruction lists, the `BRX` of each jump table, spill
    /// annotations, ...), sorted. nvdisasm gives each a label, so a basic block starts there.
    pub(crate) marked: Vec<u64>,
}

impl Function {
    /// Index of the instruction at section offset `off`.
    pub fn index_of(&self, off: u64) -> Option<usize> {
        let rel = off.checked_sub(self.start)?;
        (rel % 16 == 0)
            .then_some((rel / 16) as usize)
            .filter(|&i| i < self.instrs.len())
    }

    pub(crate) fn end(&self) -> u64 {
        self.start + 16 * self.instrs.len() as u64
    }
}

//! A cubin's instructions as the toolkit prints them, kept as text: `nvdisasm -json` names each instruction
//! (mnemonic with modifiers, operands, guard predicate; docs/DESIGN.md §Decode with nvdisasm, encode ourselves: nvdisasm is the
//! authority on what an instruction is), and the raw 16 bytes from the function's section
//! give its control field. Branch targets come from the operands, which nvdisasm prints as
//! section offsets.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};
use serde::Deserialize;

use super::control::Control;
use super::opcode::{Op, Opcode};

/// One instruction as `nvdisasm -json` lists it: text, not the IR. This is the toolkit's word
/// the tests hold the IR ([`super::ir`]) against; nothing in the pipeline reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Byte offset in the function's section.
    pub offset: u64,
    /// `@P0`, `@!PT`, ... when guarded.
    pub predicate: Option<String>,
    /// The mnemonic with its modifiers, `LDG.E.64.CONSTANT`.
    pub opcode: Opcode,
    pub operands: String,
    pub ctrl: Control,
    /// Where a direct branch (`BRA`, `JMP`) goes, as a section offset.
    pub target: Option<u64>,
    /// The function a `CALL` enters, by symbol name.
    pub callee: Option<String>,
}

impl Line {
    /// The mnemonic without modifiers: `LDG`.
    pub fn base(&self) -> &str {
        self.opcode.base()
    }

    pub fn op(&self) -> Op {
        self.opcode.op()
    }

    /// Fill `target` and `callee` from nvdisasm's operand text: `BRA 0x2a0` prints the
    /// target as a section offset, `CALL.REL.NOINC $k$f` names the function.
    fn resolve_operands(&mut self) {
        if matches!(self.op(), Op::Bra | Op::Jmp) {
            let last = self.operands.rsplit(',').next().unwrap_or("").trim();
            self.target = last
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok());
        }
        if self.op() == Op::Call && self.operands.starts_with('$') {
            self.callee = Some(self.operands.trim().to_string());
        }
    }
}

/// One function (kernel or device function) as listed, in its section.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub name: String,
    /// Offset of the first instruction in the section.
    pub start: u64,
    pub instrs: Vec<Line>,
}

#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("cannot run {tool}: {source}")]
    Spawn {
        tool: String,
        source: std::io::Error,
    },
    #[error("nvdisasm failed: {0}")]
    Tool(String),
    #[error("nvdisasm -json printed something unexpected: {0}")]
    Json(String),
    #[error("cubin: {0}")]
    Elf(String),
    #[error("function {name}: {what}")]
    Function { name: String, what: String },
    #[error("sm_{0} has no operand tables (sm_75 to sm_90 only)")]
    Arch(u32),
}

/// Which text sections an nvdisasm run lists: every one, or only those holding the given
/// function symbols (`-fun`, nvdisasm's `--cuda-function-index`: "the CUDA function for a
/// given symbol is the enclosing section"). A section's instructions list the same either
/// way; the `-plr` table is as wide as the widest section listed, so liveness at a call can
/// differ unless the sections that set its columns are listed too
/// ([`super::decode::column_sections`]; tests/decode/sass_decode.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sections {
    Every,
    /// The sections of these symbols (indices into `.symtab`), sorted, at least one.
    Of(Vec<usize>),
}

impl Sections {
    /// The sections of the function symbols `indices` (every section when there are none).
    pub fn of_symbols(indices: impl IntoIterator<Item = usize>) -> Sections {
        let mut v: Vec<usize> = indices.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            Sections::Every
        } else {
            Sections::Of(v)
        }
    }

    /// Does a listing of `self` hold every section a listing of `other` holds?
    pub fn covers(&self, other: &Sections) -> bool {
        match (self, other) {
            (Sections::Every, _) => true,
            (Sections::Of(_), Sections::Every) => false,
            (Sections::Of(a), Sections::Of(b)) => b.iter().all(|i| a.binary_search(i).is_ok()),
        }
    }

    /// nvdisasm's options for it (none for every section).
    pub fn args(&self) -> Vec<String> {
        match self {
            Sections::Every => Vec::new(),
            Sections::Of(v) => {
                let list: Vec<String> = v.iter().map(usize::to_string).collect();
                vec!["-fun".to_string(), list.join(",")]
            }
        }
    }
}

/// One function of `nvdisasm -json` (its second top-level element is a list of these).
#[derive(Deserialize)]
pub(crate) struct JsonFunction {
    #[serde(rename = "function-name")]
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) length: u64,
    #[serde(rename = "sass-instructions")]
    pub(crate) instrs: Vec<JsonInstr>,
}

/// One instruction of `nvdisasm -json`.
#[derive(Deserialize)]
pub(crate) struct JsonInstr {
    pub(crate) predicate: Option<String>,
    pub(crate) opcode: String,
    #[serde(default)]
    pub(crate) operands: String,
}

/// Disassemble every function of the cubin at `path` with `nvdisasm`.
pub fn list(nvdisasm: &Path, path: &Path) -> Result<Vec<Listing>, ListingError> {
    let json = json(nvdisasm, path)?;
    let bytes = std::fs::read(path).map_err(|e| ListingError::Elf(e.to_string()))?;
    from_json(&json, &bytes)
}

/// `nvdisasm -json` of the cubin at `path`, as printed.
pub(crate) fn json(nvdisasm: &Path, path: &Path) -> Result<Vec<u8>, ListingError> {
    run_nvdisasm(nvdisasm, &["-json"], path)
}

/// `nvdisasm ARGS path`'s standard output; its error output when it fails. Run once per
/// process for the same bytes and arguments (`process::listings`).
pub(crate) fn run_nvdisasm(
    nvdisasm: &Path,
    args: &[&str],
    path: &Path,
) -> Result<Vec<u8>, ListingError> {
    let bytes =
        std::fs::read(path).map_err(|e| ListingError::Elf(format!("{}: {e}", path.display())))?;
    let out = crate::process::listings::print(nvdisasm, args, &bytes).map_err(|source| {
        ListingError::Spawn {
            tool: nvdisasm.display().to_string(),
            source,
        }
    })?;
    if !out.status.success() {
        // nvdisasm 13.5 -json dies of SIGSEGV, silently, on -rdc code that addresses a
        // static __shared__ array: say how it ended when it says nothing.
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ListingError::Tool(if err.is_empty() {
            out.status.to_string()
        } else {
            err
        }));
    }
    Ok(out.stdout.clone())
}

/// Combine `nvdisasm -json` output with the cubin's bytes: [`list`]'s reading of a listing
/// already made (public so that tests list a cubin they read again once per run).
pub fn from_json(json: &[u8], cubin: &[u8]) -> Result<Vec<Listing>, ListingError> {
    // [header, [function, ...]]
    let (_, funcs): (serde_json::Value, Vec<JsonFunction>) =
        serde_json::from_slice(json).map_err(|e| ListingError::Json(e.to_string()))?;
    let elf = object::File::parse(cubin).map_err(|e| ListingError::Elf(e.to_string()))?;
    funcs
        .into_iter()
        .map(|f| {
            let err = |what: String| ListingError::Function {
                name: f.name.clone(),
                what,
            };
            let sym = elf
                .symbols()
                .find(|s| s.name() == Ok(f.name.as_str()))
                .ok_or_else(|| err("no symbol".into()))?;
            let section = sym
                .section_index()
                .and_then(|i| elf.section_by_index(i).ok())
                .ok_or_else(|| err("symbol has no section".into()))?;
            let data = section.data().map_err(|e| err(e.to_string()))?;
            if f.length != 16 * f.instrs.len() as u64 {
                return Err(err(format!(
                    "{} bytes but {} instructions",
                    f.length,
                    f.instrs.len()
                )));
            }
            let instrs = f
                .instrs
                .into_iter()
                .enumerate()
                .map(|(i, j)| {
                    let offset = f.start + 16 * i as u64;
                    let word = usize::try_from(offset)
                        .ok()
                        .and_then(|o| data.get(o..o.checked_add(16)?))
                        .ok_or_else(|| {
                            err(format!("instruction at {offset:#x} is past the section"))
                        })?;
                    let mut ins = Line {
                        offset,
                        predicate: j.predicate,
                        ctrl: Control::from_bytes(word).expect("16 bytes"),
                        opcode: j.opcode.into(),
                        operands: j.operands,
                        target: None,
                        callee: None,
                    };
                    ins.resolve_operands();
                    Ok(ins)
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Listing {
                name: f.name,
                start: f.start,
                instrs,
            })
        })
        .collect()
}

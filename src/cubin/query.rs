//! Per-function resource numbers, as `cuobjdump -res-usage` and the occupancy model need them.

use super::Cubin;
use super::callgraph::CallGraph;
use super::eiattr::Attr;
use super::elf::{SHT_CUDA_CALLGRAPH, SHT_CUDA_INFO, SHT_NOBITS};
use super::nvinfo::{EIFMT_SVAL, Record, parse_callgraph};
use super::symbols::STT_FUNC;
use serde::Serialize;
use std::collections::HashMap;

const SHF_EXECINSTR: u64 = 0x4;

/// Lookup tables for the per-function queries.
#[derive(Debug, Default)]
struct Index {
    have_globals: bool,
    /// `(attribute code, symbol)` → second word, from the global `.nv.info`.
    globals: HashMap<(u8, u32), u32>,
    /// Text section index → records of its `.nv.info.<k>`.
    info_by_text: HashMap<usize, Vec<Record>>,
    /// `.nv.callgraph`'s direct calls `(caller, callee)`.
    callgraph: Vec<(i32, i32)>,
    /// Text section index → the functions defined in it.
    section_functions: HashMap<usize, Vec<usize>>,
}

/// What the cubin says about one function (kernel or device function).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FunctionInfo {
    /// Mangled name.
    pub name: String,
    /// `STO_CUDA_ENTRY` (a `__global__` kernel).
    pub is_kernel: bool,
    /// Symbol-table index.
    pub symbol: usize,
    /// Index of the `.text.*` section holding the code.
    pub text_section: usize,
    /// Byte offset of the code in that section (non-zero for sub-functions inside a kernel's
    /// section).
    pub text_offset: u64,
    /// `st_size` of the symbol.
    pub text_size: u64,
    /// `EIATTR_REGCOUNT`; else `.text` `sh_info[31:24]` (sm_75-89) for a function owning its
    /// section; `None` when unknown.
    pub registers: Option<u32>,
    /// `.text` `sh_info[31:24]` of a function that owns its section on sm_75-89 (`None`
    /// otherwise or when 0). This is what `cuobjdump -res-usage` prints as `REG` for device
    /// functions (it prints `REG:0` on sm_90+ even where `EIATTR_REGCOUNT` has the count).
    pub section_registers: Option<u32>,
    /// `sh_size` of `.nv.shared.<k>` (on sm_90+ it includes the 1 KiB reserved area); 0 if
    /// absent.
    pub static_shared: u64,
    pub frame_size: Option<u32>,
    /// `EIATTR_MIN_STACK_SIZE` (0 when absent); `None` for 0xffffffff (cuobjdump's
    /// STACK:UNKNOWN: recursion or indirect calls).
    pub min_stack: Option<u32>,
    pub(crate) max_stack: Option<u32>,
    /// `EIATTR_ANNOTATIONS` SpillRefill entries inside this function's own code.
    pub spill_instructions: u32,
    pub max_threads: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    /// `EIATTR_MAXREG_COUNT` (`None` for 0xff, "no limit").
    pub(crate) maxreg_count: Option<u32>,
    /// `EIATTR_CBANK_PARAM_SIZE`.
    pub(crate) param_bytes: Option<u32>,
    /// Direct callees from `.nv.callgraph`, by name (externals such as `vprintf` included;
    /// kernels launched from device code are not calls).
    pub(crate) callees: Vec<String>,
    /// Occupancy-relevant attributes present (`CTAIDZ_USED`, `NUM_BARRIERS=1`, ...).
    pub(crate) flags: Vec<String>,
}

impl Cubin {
    /// Kernels and device functions defined in the cubin, in symbol order.
    pub fn functions(&self) -> Vec<FunctionInfo> {
        let ix = self.index();
        (0..self.symbols.len())
            .filter_map(|i| self.info_for(i, &ix))
            .collect()
    }

    /// Kernels only.
    pub fn kernels(&self) -> Vec<FunctionInfo> {
        self.functions()
            .into_iter()
            .filter(|f| f.is_kernel)
            .collect()
    }

    /// One function by mangled name.
    pub fn function_info(&self, name: &str) -> Option<FunctionInfo> {
        let i = self.function_symbol(name)?;
        self.info_for(i, &self.index())
    }

    /// Everything the per-function queries look up, gathered in one pass (so that
    /// [`Cubin::functions`] stays linear in the file size).
    fn index(&self) -> Index {
        let mut ix = Index::default();
        for (k, sec) in self.elf.sections.iter().enumerate() {
            if k == 0 {
                continue;
            }
            if sec.sh_type == SHT_CUDA_INFO {
                if sec.name == ".nv.info" {
                    if !ix.have_globals {
                        ix.have_globals = true;
                        for r in self.records(k) {
                            if r.format == EIFMT_SVAL
                                && let (Some(sym), Some(v)) = (r.word(0), r.word(1))
                            {
                                ix.globals.entry((r.attr.code(), sym)).or_insert(v);
                            }
                        }
                    }
                } else {
                    ix.info_by_text
                        .entry(sec.sh_info as usize)
                        .or_insert_with(|| self.records(k));
                }
            } else if sec.sh_type == SHT_CUDA_CALLGRAPH {
                // Only direct calls (a kernel launched from device code is no call); a section
                // that does not read counts every pair, as calls hold more kernels, never fewer.
                match CallGraph::parse(&sec.data) {
                    Ok(g) => ix.callgraph.extend(g.calls),
                    Err(_) => ix.callgraph.extend(parse_callgraph(&sec.data)),
                }
            }
        }
        for j in 0..self.symbols.len() {
            if self.is_function(j) {
                ix.section_functions
                    .entry(self.symbols[j].st_shndx as usize)
                    .or_default()
                    .push(j);
            }
        }
        ix
    }

    /// Symbol index of a defined function named `name`.
    pub(crate) fn function_symbol(&self, name: &str) -> Option<usize> {
        (0..self.symbols.len()).find(|&i| self.symbols[i].name == name && self.is_function(i))
    }

    pub(crate) fn is_function(&self, i: usize) -> bool {
        let Some(s) = self.symbols.get(i) else {
            return false;
        };
        s.kind() == STT_FUNC
            && s.st_shndx != 0
            && s.st_shndx < 0xff00
            && self
                .elf
                .sections
                .get(s.st_shndx as usize)
                .is_some_and(|t| t.sh_flags & SHF_EXECINSTR != 0)
    }

    /// Section offsets of the `EIATTR_ANNOTATIONS` SpillRefill entries (kind 1) of text
    /// section `text`, sorted: the `STL/LDL` ptxas marks as register spills and refills.
    pub fn spill_offsets(&self, text: usize) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .function_info_section(text)
            .map(|k| self.records(k))
            .unwrap_or_default()
            .iter()
            .filter(|r| r.attr == Attr::Annotations && r.format == EIFMT_SVAL)
            .flat_map(|r| {
                let w: Vec<u32> = r.words().collect();
                w.chunks_exact(2)
                    .filter(|p| p[0] == 1)
                    .map(|p| u64::from(p[1]))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether symbol `i` is the one its text section is named after (`sh_info[23:0]`).
    pub(crate) fn owns_section(&self, i: usize) -> bool {
        let Some(s) = self.symbols.get(i) else {
            return false;
        };
        self.elf
            .sections
            .get(s.st_shndx as usize)
            .is_some_and(|t| (t.sh_info & 0x00ff_ffff) as usize == i)
    }

    /// `[sym, value]` records of the global `.nv.info` for symbol `sym` (the first one).
    fn global_value(ix: &Index, attr: Attr, sym: usize) -> Option<u32> {
        let sym = u32::try_from(sym).ok()?;
        ix.globals.get(&(attr.code(), sym)).copied()
    }

    /// Own code ranges of function `i`: its symbol range minus the ranges of other functions
    /// inside it.
    fn own_ranges(&self, i: usize, ix: &Index) -> Vec<(u64, u64)> {
        let s = &self.symbols[i];
        let start = s.st_value;
        let end = s.st_value.saturating_add(s.st_size);
        let same: &[usize] = ix
            .section_functions
            .get(&(s.st_shndx as usize))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut others: Vec<(u64, u64)> = same
            .iter()
            .filter(|&&j| j != i)
            .map(|&j| &self.symbols[j])
            .map(|o| (o.st_value, o.st_value.saturating_add(o.st_size)))
            .filter(|&(a, b)| a < end && b > start && !(a <= start && b >= end))
            .collect();
        others.sort();
        let mut out = Vec::new();
        let mut at = start;
        for (a, b) in others {
            if a > at {
                out.push((at, a.min(end)));
            }
            at = at.max(b);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    fn info_for(&self, i: usize, ix: &Index) -> Option<FunctionInfo> {
        if !self.is_function(i) {
            return None;
        }
        let s = &self.symbols[i];
        let text = s.st_shndx as usize;
        let tsec = &self.elf.sections[text];
        let owns = self.owns_section(i);
        let section_registers = Some(tsec.sh_info >> 24).filter(|&r| owns && r != 0);
        let registers = Self::global_value(ix, Attr::Regcount, i).or(section_registers);
        let frame_size = Self::global_value(ix, Attr::FrameSize, i);
        // Absent means 0 (cuobjdump prints STACK:0); 0xffffffff means unknown (recursion).
        let min_stack = match Self::global_value(ix, Attr::MinStackSize, i) {
            None => Some(0),
            Some(0xffff_ffff) => None,
            Some(v) => Some(v),
        };
        let max_stack = Self::global_value(ix, Attr::MaxStackSize, i).filter(|&v| v != 0xffff_ffff);

        let section_records: &[Record] =
            ix.info_by_text.get(&text).map(Vec::as_slice).unwrap_or(&[]);
        let local: &[Record] = if owns { section_records } else { &[] };
        // Spills: annotations of the section, counted in this function's own code.
        let ranges = self.own_ranges(i, ix);
        let spill_instructions = section_records
            .iter()
            .filter(|r| r.attr == Attr::Annotations && r.format == EIFMT_SVAL)
            .flat_map(|r| {
                let w: Vec<u32> = r.words().collect();
                w.chunks_exact(2)
                    .filter(|p| p[0] == 1)
                    .map(|p| p[1] as u64)
                    .collect::<Vec<_>>()
            })
            .filter(|&off| ranges.iter().any(|&(a, b)| off >= a && off < b))
            .count() as u32;

        let xyz = |attr: Attr| -> Option<[u32; 3]> {
            let r = local
                .iter()
                .find(|r| r.attr == attr && r.format == EIFMT_SVAL)?;
            Some([r.word(0)?, r.word(1)?, r.word(2)?])
        };
        let short = |attr: Attr| -> Option<u32> {
            local
                .iter()
                .find(|r| r.attr == attr && r.format != EIFMT_SVAL)
                .map(|r| r.short as u32)
        };
        let maxreg_count = short(Attr::MaxregCount).filter(|&v| v != 0xff);
        let param_bytes = short(Attr::CbankParamSize);

        let mut flags = Vec::new();
        for r in local {
            match r.attr {
                Attr::CtaidzUsed
                | Attr::ExplicitCluster
                | Attr::WmmaUsed
                | Attr::BlocksAreClusters
                | Attr::Tcgen051ctaUsed
                | Attr::Tcgen052ctaUsed
                | Attr::ClusterLaunchControlUsed
                | Attr::ReservedSmemUsed
                | Attr::RegReconfig
                | Attr::CoopGroupInstrOffsets
                | Attr::PreexitUsed => flags.push(r.attr.name().to_string()),
                Attr::NumBarriers | Attr::NumMbarriers | Attr::MaxClusterRank => {
                    flags.push(format!("{}={}", r.attr.name(), r.short))
                }
                Attr::CtaPerCluster => {
                    let w: Vec<String> = r.words().map(|v| v.to_string()).collect();
                    flags.push(format!("{}={}", r.attr.name(), w.join("x")));
                }
                Attr::CrsStackSize => {
                    // 0xffffffff: unbounded (recursion), as cuobjdump's STACK:UNKNOWN.
                    match r.word(0) {
                        Some(0) | None => {}
                        Some(u32::MAX) => flags.push(format!("{}=unknown", r.attr.name())),
                        Some(v) => flags.push(format!("{}={v}", r.attr.name())),
                    }
                }
                _ => {}
            }
        }

        let mut callees = Vec::new();
        for &(caller, callee) in &ix.callgraph {
            if caller as i64 == i as i64
                && callee >= 0
                && let Some(c) = self.symbols.get(callee as usize)
                && !callees.contains(&c.name)
            {
                callees.push(c.name.clone());
            }
        }

        Some(FunctionInfo {
            name: s.name.clone(),
            is_kernel: s.is_kernel(),
            symbol: i,
            text_section: text,
            text_offset: s.st_value,
            text_size: s.st_size,
            registers,
            section_registers,
            static_shared: if owns { self.shared_size(text) } else { 0 },
            frame_size,
            min_stack,
            max_stack,
            spill_instructions,
            max_threads: xyz(Attr::MaxThreads),
            reqntid: xyz(Attr::Reqntid),
            maxreg_count,
            param_bytes,
            callees,
            flags,
        })
    }

    /// Index of the `.nv.shared.<k>` section of text section `text`.
    pub(crate) fn shared_section(&self, text: usize) -> Option<usize> {
        let tname = self.elf.sections.get(text)?.name.clone();
        let want = tname
            .strip_prefix(".text.")
            .map(|k| format!(".nv.shared.{k}"));
        self.elf.sections.iter().position(|s| {
            s.name.starts_with(".nv.shared.")
                && (Some(&s.name) == want.as_ref()
                    || (s.sh_info as usize == text && s.sh_type == SHT_NOBITS))
        })
    }

    fn shared_size(&self, text: usize) -> u64 {
        self.shared_section(text)
            .map(|i| self.elf.sections[i].sh_size)
            .unwrap_or(0)
    }
}

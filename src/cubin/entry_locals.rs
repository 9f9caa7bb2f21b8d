//! The local functions of a kernel's code section, and their names in a copy of the kernel
//! ([`super::entry`], issue 47).
//!
//! ptxas compiles a `__noinline__` helper a kernel calls into the kernel's own `.text.K`, as a
//! local `FUNC` symbol `$K$<helper>` at its offset there. In a whole-module run with one more
//! `.entry K2` of the same body, the copy's section holds `$K2$<helper>` at the same value
//! and size, with a `FRAME_SIZE` record in the global `.nv.info` and an FDE in
//! `.debug_frame` like the original's (checked on sm_75-90, CUDA 13.5:
//! tests/assembly/entry_copy.rs). The division and square-root slow paths are local
//! functions too, but named `$__internal_<n>_$...` with `<n>` counted over the whole module
//! in ptxas's order, so the names of the module's own slow paths would change with the copy:
//! those are refused.

use super::Cubin;
use super::refusal::Refusal;
use super::symbols::{STB_LOCAL, STT_FUNC, STT_SECTION};

/// One local function of the donor's kernel section: its donor symbol index and its name
/// in the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Local {
    pub index: usize,
    pub name: String,
}

/// The functions other than `kernel` in the donor's section `td`, each renamed for the copy
/// `name`; refused where one is not a local `$<kernel>$<helper>`.
pub(super) fn locals(
    donor: &Cubin,
    td: usize,
    kernel: &str,
    name: &str,
) -> Result<Vec<Local>, Refusal> {
    let prefix = format!("${kernel}$");
    let mut out = Vec::new();
    for (index, s) in donor.symbols.iter().enumerate() {
        if s.st_shndx as usize != td || s.kind() == STT_SECTION || s.name == kernel {
            continue;
        }
        let helper = s.name.strip_prefix(&prefix).filter(|h| !h.is_empty());
        match helper {
            Some(h) if s.kind() == STT_FUNC && s.bind() == STB_LOCAL => out.push(Local {
                index,
                name: format!("${name}${h}"),
            }),
            _ => return Err(Refusal::SharedCode(s.name.clone())),
        }
    }
    Ok(out)
}

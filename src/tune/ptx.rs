//! Per-kernel register budgets written into PTX: a `.maxnreg N` performance directive on an
//! `.entry`, between its parameter list and its body (PTX ISA, "Performance-Tuning
//! Directives"), and optionally CUDA 13's `.pragma "enable_smem_spilling";` at the top of the
//! body, which lets ptxas put spills in shared memory where it can (it refuses modules with
//! dynamic shared memory, per-function compilation or ABI calls). `-maxrregcount` is per module; `.maxnreg` is per kernel, so one ptxas run
//! can evaluate a different budget for every kernel of a module. The two are not the same:
//! ptxas 13.5 ignores `-maxrregcount` for a kernel with `.reqntid` (Triton's) or `.maxntid`,
//! where `.maxnreg` still binds (docs/DESIGN.md §Per-kernel budgets; `tests/cli/ptxas_shim.rs`
//! checks a `.reqntid` kernel's forced budget against ptxas on the same PTX with `.maxnreg`).

use std::collections::{BTreeMap, BTreeSet};

use crate::transform::Transform;

/// What a kernel is compiled with in a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Budget {
    /// `.maxnreg`, or the registers a rewrite brings the kernel to.
    pub regs: u32,
    /// `.pragma "enable_smem_spilling";`.
    pub smem_spill: bool,
    /// The SASS rewrite of ours that makes this budget, if any (not ptxas alone).
    pub rewrite: Option<Rewriting>,
}

/// A budget made by a registered rewrite ([`crate::transform::REGISTERED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rewriting {
    /// The rewrite's [`Transform::key`].
    pub(crate) transform: &'static str,
    /// The `.maxnreg` ptxas compiles the variant with before the rewrite (the only part of
    /// the rewrite written into the PTX).
    pub(crate) from: u32,
}

impl Budget {
    pub fn regs(regs: u32) -> Budget {
        Budget {
            regs,
            smem_spill: false,
            rewrite: None,
        }
    }

    /// The candidate `t` makes at `regs` from the binary compiled at `from`.
    pub fn rewritten_by(t: &dyn Transform, regs: u32, from: u32) -> Budget {
        Budget {
            rewrite: Some(Rewriting {
                transform: t.key(),
                from,
            }),
            ..Budget::regs(regs)
        }
    }

    /// A SASS rewrite of ours makes this budget (not ptxas alone).
    pub(crate) fn rewritten(&self) -> bool {
        self.rewrite.is_some()
    }

    /// The registered rewrite that makes this budget.
    pub(crate) fn transform(&self) -> Option<&'static dyn Transform> {
        crate::transform::seam::by_key(self.rewrite?.transform)
    }

    /// The `.maxnreg` ptxas compiles with.
    pub fn ptxas_regs(&self) -> u32 {
        self.rewrite.map_or(self.regs, |r| r.from)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.regs)?;
        if self.smem_spill {
            f.write_str("+smem")?;
        }
        if let Some(r) = self.rewrite {
            write!(f, "+{}", r.transform)?;
        }
        Ok(())
    }
}

/// The pragma, as ptxas 13.5 accepts it at the top of a kernel body.
pub(crate) const SMEM_SPILL_PRAGMA: &str = ".pragma \"enable_smem_spilling\";";

/// An `.entry` of a PTX module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDecl {
    pub name: String,
    /// Byte offset of the `.entry` keyword, and of the name.
    start: usize,
    name_at: usize,
    /// The budget the module already gives it (`__maxnreg__`), if any.
    pub maxnreg: Option<u32>,
    /// Byte offset just past the parameter list's `)`.
    after_params: usize,
    /// Byte offset of the body's `{`, and just past the `}` that closes it.
    body: usize,
    end: usize,
    /// Byte range of an existing `.maxnreg N` directive.
    directive: Option<(usize, usize)>,
}

impl EntryDecl {
    /// The byte range of its definition in `ptx`: from the start of the line of its `.entry`
    /// keyword, so that its linkage (`.visible`, `.weak`) comes along, through its body's
    /// closing `}`. `None` where anything else is on that line before the keyword, a comment's
    /// end included: a copy or a cut from there would split it.
    pub(super) fn definition(&self, ptx: &str) -> Option<(usize, usize)> {
        let start = ptx[..self.start].rfind('\n').map_or(0, |p| p + 1);
        ptx[start..self.start]
            .split_ascii_whitespace()
            .all(|w| matches!(w, ".visible" | ".weak" | ".extern"))
            .then_some((start, self.end))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxError {
    #[error("PTX: the .entry at byte {0} is not a header and a closed body")]
    Malformed(usize),
    #[error("PTX: no .entry named {0}")]
    NoSuchEntry(String),
}

/// Every `.entry` with a body, in order. Comments are skipped. A body that does not close is
/// malformed; the search goes on after each body, so entries never overlap.
pub fn entries(ptx: &str) -> Result<Vec<EntryDecl>, PtxError> {
    let code = blank_comments(ptx);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find(".entry").map(|p| p + from) {
        from = pos + ".entry".len();
        // `}.entry` is the keyword too (two tokens), as a cut before it would make it.
        let before_ok = pos == 0 || !ident_byte(b[pos - 1]);
        let after_ok = b.get(from).is_some_and(|c| c.is_ascii_whitespace());
        if !before_ok || !after_ok {
            continue;
        }
        let name_start = from + count_while(&b[from..], |c| c.is_ascii_whitespace());
        let name_len = count_while(&b[name_start..], ident_byte);
        // A name starts with a letter, `_`, `$` or `%` (PTX ISA, "Identifiers"); a directive
        // (`.entry .entry k(`) is not one.
        let starts_a_name = |c: &u8| c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%');
        if !b.get(name_start).is_some_and(starts_a_name) {
            return Err(PtxError::Malformed(pos));
        }
        let name = code[name_start..name_start + name_len].to_string();
        let mut i = name_start + name_len;
        i += count_while(&b[i..], |c| c.is_ascii_whitespace());
        let after_params = if b.get(i) == Some(&b'(') {
            i + 1 + code[i + 1..].find(')').ok_or(PtxError::Malformed(pos))? + 1
        } else {
            i
        };
        let rest = &code[after_params..];
        let Some(stop) = rest.find(['{', ';']) else {
            return Err(PtxError::Malformed(pos));
        };
        if !only_directives(&rest[..stop]) {
            return Err(PtxError::Malformed(pos));
        }
        // A declaration (`;`, not a body) has nothing to tune.
        if rest.as_bytes()[stop] == b';' {
            continue;
        }
        let body = after_params + stop;
        let end = closing_brace(&code, body).ok_or(PtxError::Malformed(pos))? + 1;
        let directives = &code[after_params..body];
        let (maxnreg, directive) = match directives.find(".maxnreg") {
            Some(d) => {
                let start = after_params + d;
                let num_start = start + ".maxnreg".len();
                let ws = count_while(&b[num_start..body], |c| c.is_ascii_whitespace());
                let digits = count_while(&b[num_start + ws..body], |c| c.is_ascii_digit());
                let n = code[num_start + ws..num_start + ws + digits]
                    .parse()
                    .map_err(|_| PtxError::Malformed(pos))?;
                (Some(n), Some((start, num_start + ws + digits)))
            }
            None => (None, None),
        };
        out.push(EntryDecl {
            name,
            start: pos,
            name_at: name_start,
            maxnreg,
            after_params,
            body,
            end,
            directive,
        });
        from = end;
    }
    Ok(out)
}

/// Whether `text`, between an entry's parameter list and its body or `;`, holds only
/// performance directives and their numbers (`.maxntid 128, 1, 1`): never a name, a bracket or
/// another header, so that what follows a malformed header is never read as its body.
fn only_directives(text: &str) -> bool {
    text.split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .all(|t| match t.strip_prefix('.') {
            Some(d) => {
                !d.is_empty()
                    && d.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                    && !matches!(d, "entry" | "func")
            }
            None => {
                t.starts_with(|c: char| c.is_ascii_digit())
                    && t.bytes().all(|c| c.is_ascii_alphanumeric())
            }
        })
}

/// Each entry's length of PTX text: from its `.entry` to the next one's (or the module's end),
/// so a `.func` defined between them counts with the entry before it.
pub fn entry_lengths(ptx: &str) -> Result<BTreeMap<String, usize>, PtxError> {
    let decls = entries(ptx)?;
    let ends = decls.iter().skip(1).map(|d| d.start).chain([ptx.len()]);
    Ok(decls
        .iter()
        .zip(ends)
        .map(|(d, end)| (d.name.clone(), end.saturating_sub(d.start)))
        .collect())
}

/// `ptx` with `.maxnreg` (and the spilling pragma) set for the kernels in `budgets`. A budget
/// never raises one the module already has. Kernels not named are left as they are.
pub fn with_budgets(ptx: &str, budgets: &BTreeMap<String, Budget>) -> Result<String, PtxError> {
    let decls = entries(ptx)?;
    for name in budgets.keys() {
        if !decls.iter().any(|d| &d.name == name) {
            return Err(PtxError::NoSuchEntry(name.clone()));
        }
    }
    let mut out = String::with_capacity(ptx.len() + 16 * budgets.len());
    let mut copied = 0;
    for d in &decls {
        let Some(&b) = budgets.get(&d.name) else {
            continue;
        };
        let n = d.maxnreg.map_or(b.ptxas_regs(), |m| m.min(b.ptxas_regs()));
        match d.directive {
            Some((start, end)) => {
                out.push_str(&ptx[copied..start]);
                out.push_str(&format!(".maxnreg {n}"));
                copied = end;
            }
            None => {
                out.push_str(&ptx[copied..d.after_params]);
                out.push_str(&format!("\n.maxnreg {n}"));
                // What follows must not run on into the number (`.entry k 4{`).
                if !ptx[d.after_params..].starts_with(|c: char| c.is_ascii_whitespace()) {
                    out.push('\n');
                }
                copied = d.after_params;
            }
        }
        debug_assert!(copied <= d.body);
        if b.smem_spill && !code_after_brace_has_pragma(ptx, d.body) {
            out.push_str(&ptx[copied..=d.body]);
            out.push_str(&format!("\n{SMEM_SPILL_PRAGMA}"));
            copied = d.body + 1;
        }
    }
    out.push_str(&ptx[copied..]);
    Ok(out)
}

/// `ptx` with each `(entry, copy)` of `copies` added: the whole `.entry` (linkage, parameter
/// list, performance directives such as `.maxntid`, body) again right after the original, under
/// the name `copy` (docs/selector.md §Variant names). Its parameters keep their names: they are
/// scoped to the function, as are its labels and registers. Copies of one entry follow it in
/// the order given. Budgets are then set by name ([`with_budgets`]).
pub fn with_copies(ptx: &str, copies: &[(String, String)]) -> Result<String, PtxError> {
    let decls = entries(ptx)?;
    for (name, _) in copies {
        if !decls.iter().any(|d| &d.name == name) {
            return Err(PtxError::NoSuchEntry(name.clone()));
        }
    }
    let mut out = String::with_capacity(ptx.len() * 2);
    let mut copied = 0;
    for d in &decls {
        let mine: Vec<&str> = copies
            .iter()
            .filter(|(n, _)| *n == d.name)
            .map(|(_, c)| c.as_str())
            .collect();
        if mine.is_empty() {
            continue;
        }
        let (start, end) = d.definition(ptx).ok_or(PtxError::Malformed(d.start))?;
        out.push_str(&ptx[copied..end]);
        copied = end;
        for copy in mine {
            out.push('\n');
            out.push_str(&ptx[start..d.name_at]);
            out.push_str(copy);
            out.push_str(&ptx[d.name_at + d.name.len()..end]);
        }
    }
    out.push_str(&ptx[copied..]);
    Ok(out)
}

/// The byte offset of the `}` that closes the `{` at `open` (`code`: comments and strings
/// blanked).
fn closing_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in code.bytes().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether the body starting at `brace` already opens with the pragma (re-applying budgets
/// must be stable).
/// The entries of `ptx` that may use shared memory sized at launch: those whose text (up to
/// the next entry) names an `.extern .shared` array, all of them when a function before the
/// first entry does (a callee's use counts for each caller, and which entries call it is not
/// read here). Comments are skipped; a module without such an array gives none.
pub fn dynamic_shared_users(ptx: &str) -> Result<BTreeSet<String>, PtxError> {
    let code = blank_comments(ptx);
    let arrays = extern_shared_arrays(&code);
    if arrays.is_empty() {
        return Ok(BTreeSet::new());
    }
    let decls = entries(ptx)?;
    let names = |text: &str| arrays.iter().any(|a| names_word(text, a));
    let before_first = decls.first().map_or(code.len(), |d| d.start);
    // The declarations themselves are statements of their own, blanked before looking.
    let prelude = arrays
        .iter()
        .fold(code[..before_first].to_string(), |t, a| {
            blank_declaration(&t, a)
        });
    let all = names(&prelude);
    Ok(decls
        .iter()
        .enumerate()
        .filter(|(i, d)| {
            let end = decls.get(i + 1).map_or(code.len(), |n| n.start);
            all || names(&code[d.after_params..end])
        })
        .map(|(_, d)| d.name.clone())
        .collect())
}

/// The names of the module's `.extern .shared` arrays (`.extern .shared .align 16 .b8
/// global_smem[];`).
fn extern_shared_arrays(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find(".extern").map(|p| p + from) {
        let end = code[pos..].find(';').map_or(code.len(), |e| pos + e);
        from = end;
        let statement = &code[pos..end];
        if !statement.split_whitespace().any(|w| w == ".shared") {
            continue;
        }
        let Some(bracket) = statement.find('[') else {
            continue;
        };
        if let Some(name) = statement[..bracket].split_whitespace().last() {
            out.push(name.to_string());
        }
    }
    out
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

/// Whether `text` has `word` as a whole identifier.
fn names_word(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, _)| {
        let j = i + word.len();
        (i == 0 || !ident_byte(b[i - 1])) && b.get(j).is_none_or(|&c| !ident_byte(c))
    })
}

/// `text` with the `.extern` statement that declares `array` blanked.
fn blank_declaration(text: &str, array: &str) -> String {
    let mut out = text.to_string();
    let mut from = 0;
    while let Some(pos) = out[from..].find(".extern").map(|p| p + from) {
        let end = out[pos..].find(';').map_or(out.len(), |e| pos + e);
        if names_word(&out[pos..end], array) {
            out.replace_range(pos..end, &" ".repeat(end - pos));
        }
        from = end;
    }
    out
}

fn code_after_brace_has_pragma(ptx: &str, brace: usize) -> bool {
    ptx[brace + 1..].trim_start().starts_with(SMEM_SPILL_PRAGMA)
}

fn count_while(b: &[u8], f: impl Fn(u8) -> bool) -> usize {
    b.iter().take_while(|&&c| f(c)).count()
}

/// `ptx` with every comment and string literal replaced by spaces (same byte offsets), so
/// that searches see code only.
pub(super) fn blank_comments(ptx: &str) -> String {
    let b = ptx.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let end = if b[i..].starts_with(b"//") {
            b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p)
        } else if b[i..].starts_with(b"/*") {
            b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(b.len(), |p| i + 2 + p + 2)
        } else if b[i] == b'"' {
            b[i + 1..]
                .iter()
                .position(|&c| c == b'"')
                .map_or(b.len(), |p| i + 1 + p + 1)
        } else {
            i += 1;
            continue;
        };
        for c in &mut out[i..end] {
            // Keep the bytes of multi-byte characters' positions; only ASCII matters here.
            *c = b' ';
        }
        i = end;
    }
    // Only ASCII bytes were replaced by ASCII spaces over whole comment spans, which may cut
    // a multi-byte character; fall back to a lossy copy, whose offsets match for ASCII PTX.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 9.0
.target sm_90
// .entry commented_out(
.extern .func (.param .b32 r) g(.param .b32 x);
.visible .entry _Z1aPf(
\t.param .u64 _Z1aPf_param_0
)
{
\tret;
}
/* .entry also_commented() { } */
.visible .entry _Z1bv()
.maxntid 256, 1, 1
.minnctapersm 4
{
\tret;
}
.visible .entry _Z1cv()
.maxnreg 40
{
\tret;
}
";

    #[test]
    fn finds_entries_and_existing_budgets() {
        let e = entries(PTX).unwrap();
        let names: Vec<_> = e.iter().map(|d| (d.name.as_str(), d.maxnreg)).collect();
        assert_eq!(
            names,
            vec![("_Z1aPf", None), ("_Z1bv", None), ("_Z1cv", Some(40))]
        );
    }

    #[test]
    fn sets_budgets_without_raising_a_users_cap() {
        let budgets = BTreeMap::from([
            ("_Z1aPf".to_string(), Budget::regs(32)),
            ("_Z1bv".to_string(), Budget::regs(64)),
            ("_Z1cv".to_string(), Budget::regs(72)),
        ]);
        let out = with_budgets(PTX, &budgets).unwrap();
        assert!(out.contains("_Z1aPf_param_0\n)\n.maxnreg 32\n{"), "{out}");
        assert!(
            out.contains("_Z1bv()\n.maxnreg 64\n.maxntid 256, 1, 1"),
            "{out}"
        );
        // The user's __maxnreg__(40) stays the bound.
        assert!(out.contains("_Z1cv()\n.maxnreg 40\n{"), "{out}");
        assert_eq!(out.matches(".maxnreg").count(), 3);
        // Re-applying is stable, and comments are untouched.
        assert_eq!(with_budgets(&out, &budgets).unwrap(), out);
        assert!(out.contains("// .entry commented_out("));
        let lower = BTreeMap::from([("_Z1cv".to_string(), Budget::regs(24))]);
        assert!(
            with_budgets(PTX, &lower)
                .unwrap()
                .contains("_Z1cv()\n.maxnreg 24\n{")
        );
    }

    #[test]
    fn spilling_pragma_opens_the_body() {
        let b = BTreeMap::from([(
            "_Z1aPf".to_string(),
            Budget {
                smem_spill: true,
                ..Budget::regs(32)
            },
        )]);
        let out = with_budgets(PTX, &b).unwrap();
        let want = "_Z1aPf_param_0\n)\n.maxnreg 32\n{\n.pragma \"enable_smem_spilling\";\n\tret;";
        assert!(out.contains(want), "{out}");
        assert_eq!(with_budgets(&out, &b).unwrap(), out);
        assert_eq!(out.matches("enable_smem_spilling").count(), 1);
        assert_eq!(b["_Z1aPf"].to_string(), "32+smem");
    }

    fn names(ptx: &str) -> Vec<String> {
        entries(ptx).unwrap().into_iter().map(|d| d.name).collect()
    }

    #[test]
    fn unknown_entry_and_malformed_input() {
        let b = BTreeMap::from([("nope".to_string(), Budget::regs(32))]);
        assert_eq!(
            with_budgets(PTX, &b),
            Err(PtxError::NoSuchEntry("nope".into()))
        );
        assert!(entries(".entry k(").is_err());
        assert!(entries(".entry \n").is_err());
        // Malformed where it starts, whatever follows (most found by the `ptx` fuzz target).
        for (ptx, at) in [
            // A header that runs on into the next entry's.
            (".entry el\n.entry k(\n\tret;)\n{\n}\n", 0),
            (".entry el\n.entry k{}", 0),
            // A keyword right after a `}`.
            (".entry a{}\n.entry b{}.entry ", 21),
            // A directive read as the name.
            (".entry m{} .entry\n.entry a(;){}", 11),
            // A body that does not close.
            (".entry k()\n{\n{ ret;\n}\n", 0),
        ] {
            assert_eq!(entries(ptx), Err(PtxError::Malformed(at)), "{ptx}");
        }
        // An entry inside another's body is part of that body.
        let nested = ".entry k()\n{\n{\n.entry j()\n{\n}\n}\n}\n.entry l()\n{\n}\n";
        assert_eq!(names(nested), ["k", "l"]);
        // A declaration is not an entry to tune, last in the module too (found by the `ptx`
        // fuzz target: a trimmed round's last entry was a declaration).
        assert_eq!(entries(".extern .entry k();\n").unwrap(), vec![]);
        assert_eq!(names(".entry j() {}\n.extern .entry k();"), ["j"]);
        // Found by the `ptx` fuzz target: a budget written where no space follows.
        let b = BTreeMap::from([("k".to_string(), Budget::regs(16))]);
        let set = with_budgets(".entry k 4{}", &b).unwrap();
        assert_eq!(entries(&set).unwrap()[0].maxnreg, Some(16), "{set}");
        assert_eq!(entries("").unwrap(), vec![]);
    }

    /// nvcc 13.5's PTX for `__launch_bounds__(128, 4) scale` and `__maxnreg__(40) add`, with
    /// a nested block (as call sequences and inline asm have) and a `}` in a comment added to
    /// the first body.
    const NVCC_PTX: &str = "//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-39125733
// Cuda compilation tools, release 13.5, V13.5.37
// Based on NVVM 7.0.1
//

.version 9.5
.target sm_90
.address_size 64

	// .globl	_Z5scalePff

.visible .entry _Z5scalePff(
	.param .u64 _Z5scalePff_param_0,
	.param .f32 _Z5scalePff_param_1
)
.maxntid 128, 1, 1
.minnctapersm 4
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [_Z5scalePff_param_0];
	ld.param.f32 	%f1, [_Z5scalePff_param_1];
	mov.u32 	%r1, %tid.x;
	setp.gt.u32 	%p1, %r1, 63;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	mul.f32 	%f3, %f2, %f1;
	st.global.f32 	[%rd4], %f3;

$L__BB0_2:
	{ // a call sequence's own block; } in a comment
	.reg .b32 t;
	}
	ret;

}
	// .globl	_Z3addPf
.visible .entry _Z3addPf(
	.param .u64 _Z3addPf_param_0
)
.maxnreg 40
{
	.reg .f32 	%f<3>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [_Z3addPf_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.f32 	%f2, %f1, 0f3F800000;
	st.global.f32 	[%rd4], %f2;
	ret;

}

";

    #[test]
    fn copies_an_entry_whole_under_a_new_name() {
        let copies = [
            (
                "_Z5scalePff".to_string(),
                "_Z5scalePff__orion_v1".to_string(),
            ),
            (
                "_Z5scalePff".to_string(),
                "_Z5scalePff__orion_v2".to_string(),
            ),
            ("_Z3addPf".to_string(), "_Z3addPf__orion_v1".to_string()),
        ];
        let out = with_copies(NVCC_PTX, &copies).unwrap();
        let names: Vec<(String, Option<u32>)> = entries(&out)
            .unwrap()
            .into_iter()
            .map(|d| (d.name, d.maxnreg))
            .collect();
        let want = [
            ("_Z5scalePff", None),
            ("_Z5scalePff__orion_v1", None),
            ("_Z5scalePff__orion_v2", None),
            ("_Z3addPf", Some(40)),
            ("_Z3addPf__orion_v1", Some(40)),
        ];
        let want: Vec<(String, Option<u32>)> =
            want.iter().map(|(n, m)| (n.to_string(), *m)).collect();
        assert_eq!(names, want);
        // Each copy is the original's text from its `.visible` line through the body's own
        // closing brace (not the nested block's, not the comment's), with only the name
        // changed: header directives and parameter names come along.
        let text_of = |name: &str| {
            let start = NVCC_PTX.find(&format!(".visible .entry {name}(")).unwrap();
            let end = NVCC_PTX[start..].find("\n}\n").unwrap() + start + 2;
            &NVCC_PTX[start..end]
        };
        let (scale, add) = (text_of("_Z5scalePff"), text_of("_Z3addPf"));
        assert!(scale.contains(".maxntid 128, 1, 1\n.minnctapersm 4\n{"));
        let renamed = |text: &str, from: &str, to: &str| text.replacen(from, to, 1);
        let expected = NVCC_PTX
            .replacen(
                scale,
                &format!(
                    "{scale}\n{}\n{}",
                    renamed(scale, "_Z5scalePff(", "_Z5scalePff__orion_v1("),
                    renamed(scale, "_Z5scalePff(", "_Z5scalePff__orion_v2(")
                ),
                1,
            )
            .replacen(
                add,
                &format!(
                    "{add}\n{}",
                    renamed(add, "_Z3addPf(", "_Z3addPf__orion_v1(")
                ),
                1,
            );
        assert_eq!(out, expected);
        assert_eq!(out.matches("[_Z5scalePff_param_0]").count(), 3);
        // Budgets then apply by name: a user's own `.maxnreg` stays the bound of its copies.
        let budgets = BTreeMap::from([
            ("_Z5scalePff__orion_v1".to_string(), Budget::regs(24)),
            (
                "_Z5scalePff__orion_v2".to_string(),
                Budget {
                    smem_spill: true,
                    ..Budget::regs(32)
                },
            ),
            ("_Z3addPf__orion_v1".to_string(), Budget::regs(64)),
        ]);
        let b = with_budgets(&out, &budgets).unwrap();
        let maxnreg: Vec<Option<u32>> = entries(&b).unwrap().iter().map(|d| d.maxnreg).collect();
        assert_eq!(maxnreg, [None, Some(24), Some(32), Some(40), Some(40)]);
        assert_eq!(b.matches(SMEM_SPILL_PRAGMA).count(), 1);
    }

    #[test]
    fn copies_refuse_what_they_cannot_copy() {
        let nope = [("nope".to_string(), "nope__orion_v1".to_string())];
        assert_eq!(
            with_copies(NVCC_PTX, &nope),
            Err(PtxError::NoSuchEntry("nope".into()))
        );
        let k = [("k".to_string(), "k__orion_v1".to_string())];
        // No closing brace.
        assert!(with_copies(".entry k()\n{\n\tret;\n", &k).is_err());
        // Something besides linkage before `.entry` on its line.
        assert!(with_copies("} .entry k()\n{\n\tret;\n}\n", &k).is_err());
        // A comment's end: the copy would hold `*/` without its start.
        assert!(with_copies("/* a\n */ .entry k()\n{\n\tret;\n}\n", &k).is_err());
        let weak = with_copies("\t.weak .entry k()\n{\n\tret;\n}\n", &k).unwrap();
        assert!(
            weak.ends_with("}\n\t.weak .entry k__orion_v1()\n{\n\tret;\n}\n"),
            "{weak}"
        );
    }

    #[test]
    fn kernels_using_shared_memory_sized_at_launch() {
        let ptx = "\
.version 8.8
.target sm_80
// .extern .shared .b8 commented[];
.extern .shared .align 16 .b8 global_smem[];
.shared .align 4 .b8 fixed[64];

.visible .entry uses(
\t.param .u64 p
)
.reqntid 128
{
\tmov.u32 %r1, global_smem;
\tret;
}
.visible .entry static_only()
{
\tmov.u32 %r1, fixed;
\tmov.u32 %r2, global_smem_x;
\tret;
}
";
        let users = dynamic_shared_users(ptx).unwrap();
        assert_eq!(users, BTreeSet::from(["uses".to_string()]));
        // A function before the entries that uses it: every entry may.
        let with_func = ptx.replace(
            ".shared .align 4 .b8 fixed[64];",
            ".shared .align 4 .b8 fixed[64];\n.func f()\n{\n\tmov.u32 %r1, global_smem;\n\tret;\n}",
        );
        assert_eq!(dynamic_shared_users(&with_func).unwrap().len(), 2);
        // No extern array: none, whatever the bodies say.
        let none = ptx.replace(".extern .shared .align 16 .b8 global_smem[];", "");
        assert!(dynamic_shared_users(&none).unwrap().is_empty());
    }
}

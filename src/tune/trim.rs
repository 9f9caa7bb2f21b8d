//! A variant round's PTX cut to the entries it compiles (issue 47): every `--entry` run of
//! ptxas parses the whole module it is given, the kernels it does not build included, which
//! was most of what a small kernel's round cost (bench/results/build.md). The cut removes
//! the other `.entry` definitions, each from the start of its line (its linkage) to its
//! body's closing brace, and keeps every other byte: directives, globals and constants (so
//! bank 3 and the strings of bank 4 are the module's), `.func`s and declarations, comments.
//! A kernel's code does not depend on the entries built beside it ([`super::variants`]), nor
//! on entries ptxas only parsed; `tests/tuning/tune_entry.rs` checks each trimmed round
//! against whole-module ptxas at the same budgets.
//!
//! The module stays whole where removing an entry could change what the kept text means:
//! - kept text names a removed entry (a device-side launch takes a kernel's address, an
//!   `.alias`, a declaration): the name would be undefined;
//! - the module has a `.section` (`-G`'s DWARF, which points at labels inside bodies);
//! - an `.entry` line holds anything besides linkage before the keyword, a comment's end
//!   included (a body that does not close is not PTX [`entries`] reads at all).
//!
//! Modules whose code depends on the entries compiled (functions used as values,
//! [`super::function_pointers`]) and relocatable ones never get `--entry` rounds at all
//! (`tune::step`), so they are never cut.

use std::collections::HashSet;

use super::ptx::{blank_comments, entries};

/// `ptx` with only the entries `keep` names (and everything that is not an entry), or
/// `None` where the module must stay whole (see the module docs), or where `keep` names
/// every entry or one the module lacks.
pub(crate) fn only_entries(ptx: &str, keep: &[&str]) -> Option<String> {
    if keep.is_empty() {
        return None;
    }
    let code = blank_comments(ptx);
    if has_directive(&code, ".section") {
        return None;
    }
    let decls = entries(ptx).ok()?;
    if keep.iter().any(|k| !decls.iter().any(|d| d.name == *k)) {
        return None;
    }
    let mut cuts = Vec::new();
    let mut removed = Vec::new();
    for d in decls.iter().filter(|d| !keep.contains(&d.name.as_str())) {
        cuts.push(d.definition(ptx)?);
        removed.push(d.name.as_str());
    }
    if removed.is_empty() {
        return None;
    }
    let kept_code = without(&code, &cuts);
    let named = identifiers(&kept_code);
    if removed.iter().any(|r| named.contains(r)) {
        return None;
    }
    Some(without(ptx, &cuts))
}

/// The bytes of `ptx` that a trimmed round reads whatever entries it builds: the module less
/// every entry's definition; the whole module where it stays whole. What an extra part of a
/// spread round costs in parsing ([`super::rounds`]).
pub(crate) fn shared_len(ptx: &str) -> usize {
    let Ok(decls) = entries(ptx) else {
        return ptx.len();
    };
    let Some(first) = decls.first() else {
        return ptx.len();
    };
    if only_entries(ptx, &[first.name.as_str()]).is_none() {
        return ptx.len();
    }
    let spans: Option<usize> = decls
        .iter()
        .map(|d| d.definition(ptx).map(|(s, e)| e - s))
        .sum();
    ptx.len() - spans.unwrap_or(0)
}

/// `text` without the byte ranges `cuts` (in order, not overlapping).
fn without(text: &str, cuts: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for &(start, end) in cuts {
        out.push_str(&text[copied..start]);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Every identifier-like word of `code` (PTX identifiers may hold `$`, `%` and `.`).
fn identifiers(code: &str) -> HashSet<&str> {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `code` has the directive `word` as a word of its own.
fn has_directive(code: &str, word: &str) -> bool {
    code.split_ascii_whitespace().any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 9.0
.target sm_90
.address_size 64
.global .align 4 .u32 counter;
.const .align 4 .b8 table[16];
.global .align 1 .b8 $str[3] = {104, 105, 0};
.extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);
// .globl\tfirst
.visible .entry first(
\t.param .u64 first_param_0
)
.maxnreg 32
{
\t{ .reg .b32 t; }
\tret;
}
.func helper()
{
\tret;
}
\t// .globl\tsecond
.weak .entry second()
{
\tcall helper, ();
\tret;
}
.visible .entry third()
{
\tret;
}
";

    #[test]
    fn keeps_the_named_entries_and_everything_that_is_not_an_entry() {
        let out = only_entries(PTX, &["second"]).unwrap();
        let names: Vec<String> = entries(&out).unwrap().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["second"]);
        // Exactly the other entries' definitions are gone, their linkage with them; the
        // header, globals, the function between them and the comments stay, in order.
        let first =
            &PTX[PTX.find(".visible .entry first").unwrap()..PTX.find(".func helper").unwrap()];
        let third = &PTX[PTX.find(".visible .entry third").unwrap()..PTX.len() - 1];
        assert_eq!(out, PTX.replacen(first, "\n", 1).replacen(third, "", 1));
        assert!(out.contains(".func helper()") && out.contains("// .globl\tfirst"));
        let two = only_entries(PTX, &["third", "first"]).unwrap();
        let names: Vec<String> = entries(&two).unwrap().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["first", "third"]);
    }

    #[test]
    fn what_every_trimmed_round_reads() {
        let defs: usize = [
            ".visible .entry first",
            ".weak .entry second",
            ".visible .entry third",
        ]
        .iter()
        .map(|d| {
            let s = PTX.find(d).unwrap();
            PTX[s..].find("\n}").unwrap() + 2
        })
        .sum();
        assert_eq!(shared_len(PTX), PTX.len() - defs);
        let debug = format!("{PTX}.section .debug_info {{ }}\n");
        assert_eq!(shared_len(&debug), debug.len());
        assert_eq!(shared_len("x"), 1);
    }

    #[test]
    fn the_module_stays_whole_where_a_cut_could_change_its_meaning() {
        // Nothing to cut, nothing asked for, or a name the module lacks.
        assert_eq!(only_entries(PTX, &["first", "second", "third"]), None);
        assert_eq!(only_entries(PTX, &[]), None);
        assert_eq!(only_entries(PTX, &["nope"]), None);
        // A removed entry's address taken in kept code (a device-side launch).
        let launch = PTX.replace("\tcall helper, ();", "\tmov.u64 %rd1, third;");
        assert_eq!(only_entries(&launch, &["second"]), None);
        assert!(only_entries(&launch, &["second", "third"]).is_some());
        // Named only in a comment: no reference.
        let comment = PTX.replace("\tcall helper, ();", "\t// third");
        assert!(only_entries(&comment, &["second"]).is_some());
        // Debug sections, which point at labels in every body.
        let debug = format!("{PTX}.section .debug_info {{ .b64 $L__func_begin0 }}\n");
        assert_eq!(only_entries(&debug, &["second"]), None);
        // Something besides linkage on a removed entry's line; a body that does not close.
        let odd = PTX.replace(".visible .entry third", "} .visible .entry third");
        assert_eq!(only_entries(&odd, &["second"]), None);
        let open = &PTX[..PTX.len() - 2];
        assert_eq!(only_entries(open, &["second"]), None);
    }

    /// A block comment that ends on a removed entry's line: cutting from the line's start
    /// would cut its `*/` and comment out what follows.
    #[test]
    fn a_comment_that_ends_on_an_entry_line_keeps_the_module_whole() {
        let comment = PTX.replace(
            ".visible .entry third",
            "/* a note\n*/ .visible .entry third",
        );
        assert_eq!(only_entries(&comment, &["first"]), None);
        assert!(only_entries(&comment, &["third"]).is_some());
    }

    /// Found by the `ptx` fuzz target: an `.entry` inside another's body was read as an entry
    /// of its own, and removing both cut overlapping ranges (a panic).
    #[test]
    fn an_entry_inside_another_body_is_not_cut_twice() {
        let nested = PTX.replace(
            "\tcall helper, ();",
            "\t{\n.visible .entry inner()\n{\n}\n}",
        );
        let out = only_entries(&nested, &["first"]).unwrap();
        let names: Vec<String> = entries(&out).unwrap().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["first"]);
        assert!(!out.contains(".entry inner") && !out.contains(".entry second"));
    }
}

//! Whether a PTX module uses a function as a value: a table of function pointers, a `mov` of a
//! function's name, an indirect call. ptxas compiles the functions involved according to what
//! else it compiles in the run, so a kernel built with `ptxas --entry` for some entries only
//! can get other code than in the whole module at the same budget (issue 30, generated
//! program 10439 on sm_90: a kernel calling a function that a table also holds had a frame of
//! 16 bytes with one other entry and 80 in the whole module). Such modules build every variant
//! whole.

use std::collections::BTreeSet;

/// Whether `ptx` calls through a pointer or uses the name of one of its functions (or
/// kernels) other than as a call's target or in the function's own declaration.
pub fn uses_functions_as_values(ptx: &str) -> bool {
    let code = super::ptx::blank_comments(ptx);
    if code.contains(".callprototype") || code.contains(".calltargets") {
        return true;
    }
    let functions = declared_functions(&code);
    !functions.is_empty() && statements(&code).any(|s| names_a_function_as_value(s, &functions))
}

/// Every name declared by `.func` or `.entry`, defined or not: the first identifier after
/// the keyword and the optional return list (`.func (.param .b32 r) name(...)`).
fn declared_functions(code: &str) -> BTreeSet<&str> {
    statements(code)
        .filter_map(|s| {
            let keyword = tokens(s).find(|w| matches!(*w, ".func" | ".entry"))?;
            let at = s.find(keyword)? + keyword.len();
            let rest = s[at..].trim_start();
            let rest = match rest.strip_prefix('(') {
                Some(r) => r.split_once(')')?.1,
                None => rest,
            };
            tokens(rest).next()
        })
        .collect()
}

/// Whether the statement `s` uses one of `functions` as a value. Declarations and headers
/// name them; a call names its target, after its optional return list.
fn names_a_function_as_value(s: &str, functions: &BTreeSet<&str>) -> bool {
    let s = instruction(s);
    let words: Vec<&str> = tokens(s).collect();
    if words.iter().any(|w| matches!(*w, ".func" | ".entry")) {
        return false;
    }
    let skip_target = if words.first().is_some_and(|w| is_call(w)) {
        call_target(s)
    } else {
        None
    };
    words
        .iter()
        .filter(|w| Some(**w) != skip_target)
        .any(|w| functions.contains(w))
}

/// The statement `s` without the labels and the guard predicate before its opcode
/// (`$L__BB0_2: @!%p1 call.uni f, ...`): a label ends with `:`, a guard starts with `@`.
fn instruction(s: &str) -> &str {
    let mut rest = s.trim_start();
    while let Some((label, after)) = rest.split_once(':')
        && tokens(label).count() == 1
        && !label.contains('.')
    {
        rest = after.trim_start();
    }
    match rest.strip_prefix('@') {
        Some(guarded) => guarded
            .trim_start()
            .split_once(char::is_whitespace)
            .map_or("", |(_, r)| r.trim_start()),
        None => rest,
    }
}

/// `call`, `call.uni` and the like.
fn is_call(opcode: &str) -> bool {
    opcode == "call" || opcode.starts_with("call.")
}

/// The target of the call statement `s`: the first identifier after the opcode and the
/// optional parenthesized return list.
fn call_target(s: &str) -> Option<&str> {
    let after_opcode = s
        .trim_start()
        .split_once(char::is_whitespace)?
        .1
        .trim_start();
    let rest = match after_opcode.strip_prefix('(') {
        Some(r) => r.split_once(')')?.1,
        None => after_opcode,
    };
    tokens(rest).next()
}

/// The statements of (comment-free) PTX: the text between `;`, `{` and `}`, so that an
/// initializer's list (`= {f, g}`) is a statement of its own.
fn statements(code: &str) -> impl Iterator<Item = &str> {
    code.split([';', '{', '}'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The words of a statement: identifiers, directives (`.func`) and opcodes (`call.uni`).
fn tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::uses_functions_as_values;

    const DIRECT: &str = r#"
.func  (.param .b32 func_retval0) _Z2f0fj
(
	.param .b32 _Z2f0fj_param_0
)
;
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0
)
;
.func  (.param .b32 func_retval0) _Z2f0fj(
	.param .b32 _Z2f0fj_param_0
)
{
	ld.param.f32 	%f1, [_Z2f0fj_param_0];
	st.param.f32 	[func_retval0+0], %f1;
	ret;
}
.func _Z4noopv()
{
	ret;
}
.visible .entry _Z1kPf(
	.param .u64 _Z1kPf_param_0
)
{
	{ // callseq 0, 0
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), 
	_Z2f0fj, 
	(
	param0
	);
	ld.param.f32 	%f2, [retval0+0];
	} // callseq 0
	call.uni _Z4noopv, ();
	call.uni (retval0), vprintf, (param0, param1);
	ret;
}
"#;

    #[test]
    fn direct_calls_use_no_function_as_a_value() {
        assert!(!uses_functions_as_values(DIRECT));
    }

    /// Whether [`DIRECT`] with `from` replaced by `to` uses a function as a value.
    fn found_after(from: &str, to: &str) -> bool {
        assert!(DIRECT.contains(from), "{from}");
        uses_functions_as_values(&DIRECT.replace(from, to))
    }

    #[test]
    fn a_table_of_functions_is_found() {
        let table = ".global .align 8 .u64 tbl0[1] = {_Z2f0fj};\n.visible .entry";
        assert!(found_after(".visible .entry", table));
    }

    #[test]
    fn a_function_address_in_a_register_is_found() {
        let noop = "call.uni _Z4noopv, ();";
        assert!(found_after(noop, "mov.u64 %rd1, _Z4noopv;"));
        assert!(found_after(
            noop,
            "$L__BB0_1:\n\t@%p1 mov.u64 %rd1, _Z4noopv;"
        ));
    }

    #[test]
    fn an_indirect_call_is_found() {
        let indirect = "prototype_0 : .callprototype ()_ ();\n\tcall %rd1, (), prototype_0;";
        assert!(found_after("call.uni _Z4noopv, ();", indirect));
    }

    #[test]
    fn a_call_after_a_label_or_under_a_guard_is_a_call() {
        let noop = "call.uni _Z4noopv, ();";
        assert!(!found_after(noop, "$L__BB0_1:\n\tcall.uni _Z4noopv, ();"));
        assert!(!found_after(noop, "@!%p1 call.uni _Z4noopv, ();"));
        assert!(!found_after(
            noop,
            "$L__BB0_1:\n\t@%p1 call.uni _Z4noopv, ();"
        ));
    }

    #[test]
    fn a_name_in_a_comment_is_not_a_use() {
        assert!(!found_after(
            "ret;\n}\n.func _Z4",
            "ret; // see _Z2f0fj\n}\n.func _Z4"
        ));
    }
}

//! Splitting one `#$` command line into argv, as `/bin/sh -c` would.
//!
//! nvcc runs each step through `sh -c "<line>"` (checked with strace on 13.5), so the printed
//! line is the exact shell text. We only accept the subset nvcc produces: words, double and
//! single quotes, backslash escapes and `$NAME` / `${NAME}` expansion. Anything else the shell
//! would treat specially (pipes, redirections, globs, command substitution, ...) is refused, so
//! the caller falls back to the real nvcc instead of guessing.

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    #[error("unsupported shell syntax {0:?} in a dry-run command")]
    Unsupported(char),
    #[error("unterminated quote in a dry-run command")]
    Unterminated,
    #[error("reference to an unset variable ${0} in a dry-run command")]
    UnsetVariable(String),
}

/// Split `line` into words, expanding variables from `vars`. Expansions in unquoted context are
/// not field-split: nvcc never emits one that would need it, and refusing the case is safer
/// than guessing, so an unquoted expansion containing whitespace is an error.
pub fn split(line: &str, vars: &HashMap<String, String>) -> Result<Vec<String>, ShellError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\\' => {
                // Outside quotes a backslash quotes the next character; a trailing one is literal.
                match chars.next() {
                    Some('\n') => {}
                    Some(n) => cur.push(n),
                    None => cur.push('\\'),
                }
                in_word = true;
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => cur.push(n),
                        None => return Err(ShellError::Unterminated),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only these five.
                        Some('\\') => match chars.peek() {
                            Some(&n @ ('$' | '`' | '"' | '\\' | '\n')) => {
                                chars.next();
                                if n != '\n' {
                                    cur.push(n);
                                }
                            }
                            _ => cur.push('\\'),
                        },
                        Some('$') => expand(&mut chars, vars, &mut cur, true)?,
                        Some('`') => return Err(ShellError::Unsupported('`')),
                        Some(n) => cur.push(n),
                        None => return Err(ShellError::Unterminated),
                    }
                }
            }
            '$' => {
                in_word = true;
                let before = cur.len();
                expand(&mut chars, vars, &mut cur, false)?;
                if cur[before..].contains([' ', '\t', '\n']) {
                    return Err(ShellError::Unsupported(' '));
                }
            }
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '`' | '*' | '?' | '[' | '\n' => {
                return Err(ShellError::Unsupported(c));
            }
            '~' if !in_word => return Err(ShellError::Unsupported('~')),
            '#' if !in_word => return Err(ShellError::Unsupported('#')),
            _ => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Expand the variable after a `$` (already consumed) into `out`.
fn expand(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    vars: &HashMap<String, String>,
    out: &mut String,
    quoted: bool,
) -> Result<(), ShellError> {
    let mut name = String::new();
    if chars.peek() == Some(&'{') {
        chars.next();
        loop {
            match chars.next() {
                Some('}') => break,
                Some(c) if c.is_ascii_alphanumeric() || c == '_' => name.push(c),
                Some(c) => return Err(ShellError::Unsupported(c)),
                None => return Err(ShellError::Unterminated),
            }
        }
    } else {
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
    }
    if name.is_empty() {
        // A lone `$` is literal in sh; `$(`, `$?` and friends are not supported.
        return match chars.peek() {
            None | Some(' ' | '\t' | '"') => {
                out.push('$');
                Ok(())
            }
            Some(&c) if quoted && c != '(' => {
                out.push('$');
                Ok(())
            }
            Some(&c) => Err(ShellError::Unsupported(c)),
        };
    }
    match vars.get(&name) {
        Some(v) => {
            out.push_str(v);
            Ok(())
        }
        None => Err(ShellError::UnsetVariable(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> HashMap<String, String> {
        HashMap::from([
            ("CICC_PATH".to_string(), "/cuda/nvvm/bin".to_string()),
            ("SP".to_string(), "a b".to_string()),
        ])
    }

    #[test]
    fn splits_nvcc_style_lines() {
        let line =
            r#""$CICC_PATH/cicc" --c++17 -D "FOO=\"a b\"" "-isystem" "/x/include"  -o "/t/k.ptx" "#;
        assert_eq!(
            split(line, &vars()).unwrap(),
            [
                "/cuda/nvvm/bin/cicc",
                "--c++17",
                "-D",
                "FOO=\"a b\"",
                "-isystem",
                "/x/include",
                "-o",
                "/t/k.ptx"
            ]
        );
    }

    #[test]
    fn quotes_and_escapes() {
        let v = vars();
        assert_eq!(
            split(r#"a\ b 'c d' "e\f" "\$x" ${CICC_PATH}x"#, &v).unwrap(),
            ["a b", "c d", "e\\f", "$x", "/cuda/nvvm/binx"]
        );
        assert_eq!(
            split(r#"--cmdline="-O3 " """#, &v).unwrap(),
            ["--cmdline=-O3 ", ""]
        );
        assert_eq!(split(r#""$SP""#, &v).unwrap(), ["a b"]);
    }

    #[test]
    fn refuses_what_it_does_not_model() {
        let v = vars();
        for bad in [
            "a | b", "a > f", "a; b", "echo `x`", "ls *.cu", "$(id)", "~/x", "$SP", "$NOPE",
            "\"open",
        ] {
            assert!(split(bad, &v).is_err(), "{bad} should be refused");
        }
    }
}

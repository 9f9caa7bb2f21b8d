//! Splitting of `--options-file` contents and `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS`.
//!
//! nvcc 13.5 does NOT use shell syntax here (verified): in options files only whitespace and
//! double quotes matter (`'` and `#` are ordinary characters, a trailing `\` does not continue a
//! line), and its backslash handling is irregular (`a\\b` gives `ab`). `shell-words` would split
//! differently, so this is a small lexer of its own that gives up on backslashes.

use super::reason::OptionsFileProblem;

/// Split an options file the way nvcc does. `Err` says what makes nvcc's result uncertain (a
/// pass-through reason).
pub(crate) fn split_options_file(text: &str) -> Result<Vec<String>, OptionsFileProblem> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '\\' => return Err(OptionsFileProblem::Backslash),
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return Err(OptionsFileProblem::UnterminatedQuote);
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// Split `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS`: nvcc splits on whitespace only, quotes stay
/// part of the words (verified: `NVCC_APPEND_FLAGS='"-O1"'` makes nvcc see `"-O1"`).
pub(crate) fn split_env_flags(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn whitespace_and_double_quotes() {
        assert_eq!(
            split_options_file("-Xptxas \"-v -O1\"\n  -DFOO=a\"b c\"d\t-c").unwrap(),
            s(&["-Xptxas", "-v -O1", "-DFOO=ab cd", "-c"])
        );
        assert_eq!(split_options_file("-DFOO=\"\"").unwrap(), s(&["-DFOO="]));
        assert_eq!(split_options_file("\"\"").unwrap(), s(&[""]));
        assert_eq!(split_options_file("  \n ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn single_quotes_and_hash_are_literal() {
        assert_eq!(
            split_options_file("# comment\n-Xptxas '-v,-O1'").unwrap(),
            s(&["#", "comment", "-Xptxas", "'-v,-O1'"])
        );
    }

    #[test]
    fn uncertain_input_is_refused() {
        assert_eq!(
            split_options_file("-Xptxas -v\\ -O1"),
            Err(OptionsFileProblem::Backslash)
        );
        assert_eq!(
            split_options_file("-DX=\"a"),
            Err(OptionsFileProblem::UnterminatedQuote)
        );
    }

    #[test]
    fn env_flags_split_on_whitespace_only() {
        assert_eq!(
            split_env_flags("  -Xptxas -O1\t \"-v\" "),
            s(&["-Xptxas", "-O1", "\"-v\""])
        );
        assert!(split_env_flags("").is_empty());
    }
}

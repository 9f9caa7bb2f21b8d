//! How each tuned cubin was put together (the records' `assembly`): one line per kernel and
//! a count under the tables, so a user sees how often the splice applied and how often a
//! whole-module ptxas run was needed instead.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The words for a record's `assembly`.
fn describe(how: &str) -> &str {
    match how {
        "spliced" => "the tuned kernels spliced into ptxas's own cubin",
        "variant" => "a whole-module variant built at exactly these budgets",
        "whole-module" => "one more whole-module ptxas run at these budgets",
        "multi-variant" => "one more ptxas run with the variants' entries",
        "variants-added" => "the variants' entries added from the cubins tuning built",
        other => other,
    }
}

/// `    cubin: spliced ...; passed the assembly check` for a record of a tuned cubin.
pub fn line(record: &Value) -> Option<String> {
    let how = record["assembly"].as_str()?;
    Some(format!(
        "    cubin: {}; passed the assembly check",
        describe(how)
    ))
}

/// `assembly: 4 tuned cubin(s): 3 spliced, 1 whole-module ...`, counting each cubin (an
/// architecture's output) once; `None` when no record says how.
pub fn summary(records: &[Value]) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut by_how: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        let Some(how) = r["assembly"].as_str() else {
            continue;
        };
        if seen.insert((r["arch"].to_string(), r["output"].to_string())) {
            *by_how.entry(how).or_default() += 1;
        }
    }
    if by_how.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_how.iter().map(|(h, n)| format!("{n} {h}")).collect();
    Some(format!(
        "assembly: {} tuned cubin(s), {}; each passed the assembly check",
        seen.len(),
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_cubin_once() {
        let r = |arch: &str, out: &str, how: &str| serde_json::json!({"arch": arch, "output": out, "assembly": how});
        let records = vec![
            r("sm_90", "a.cubin", "spliced"),
            r("sm_90", "a.cubin", "spliced"),
            r("sm_80", "a.cubin", "whole-module"),
            serde_json::json!({"arch": "sm_80", "output": "b.cubin"}),
        ];
        assert_eq!(
            summary(&records).unwrap(),
            "assembly: 2 tuned cubin(s), 1 spliced, 1 whole-module; each passed the assembly check"
        );
        assert!(
            line(&records[0])
                .unwrap()
                .contains("spliced into ptxas's own cubin")
        );
        assert_eq!(line(&records[3]), None);
        assert_eq!(summary(&records[3..]), None);
    }
}

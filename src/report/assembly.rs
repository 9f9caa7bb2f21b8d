//! How each tuned cubin was put together (the records' `assembly`): one line per kernel and
//! a count under the tables, so a user sees how often the splice applied and how often a
//! whole-module ptxas run was needed instead.

use std::collections::{BTreeMap, BTreeSet};

use nvcc_orion_schema::{Assembly, Record};

/// The words for a record's `assembly`.
fn describe(how: &Assembly) -> &str {
    match how {
        Assembly::Spliced => "the tuned kernels spliced into ptxas's own cubin",
        Assembly::Variant => "a whole-module variant built at exactly these budgets",
        Assembly::WholeModule => "one more whole-module ptxas run at these budgets",
        Assembly::MultiVariant => "one more ptxas run with the variants' entries",
        Assembly::VariantsAdded => "the variants' entries added from the cubins tuning built",
        Assembly::Other(other) => other,
    }
}

/// `    cubin: spliced ...; passed the assembly check` for a record of a tuned cubin.
pub fn line(record: &Record) -> Option<String> {
    let how = record.assembly.as_ref()?;
    Some(format!(
        "    cubin: {}; passed the assembly check",
        describe(how)
    ))
}

/// `assembly: 4 tuned cubin(s): 3 spliced, 1 whole-module ...`, counting each cubin (an
/// architecture's output) once; `None` when no record says how.
pub fn summary(records: &[&Record]) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut by_how: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        let Some(how) = &r.assembly else {
            continue;
        };
        if seen.insert((r.arch.as_str(), r.output.as_str())) {
            *by_how.entry(how.name()).or_default() += 1;
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
        let r = |arch: &str, out: &str, how: &str| {
            super::super::record(serde_json::json!({"arch": arch, "output": out, "assembly": how}))
        };
        let records = [
            r("sm_90", "a.cubin", "spliced"),
            r("sm_90", "a.cubin", "spliced"),
            r("sm_80", "a.cubin", "whole-module"),
            super::super::record(serde_json::json!({"arch": "sm_80", "output": "b.cubin"})),
        ];
        let records: Vec<&Record> = records.iter().collect();
        assert_eq!(
            summary(&records).unwrap(),
            "assembly: 2 tuned cubin(s), 1 spliced, 1 whole-module; each passed the assembly check"
        );
        assert!(
            line(records[0])
                .unwrap()
                .contains("spliced into ptxas's own cubin")
        );
        assert_eq!(line(records[3]), None);
        assert_eq!(summary(&records[3..]), None);
    }
}

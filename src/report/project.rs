//! A whole build's report (`NVCC_ORION_REPORT` from many compiles) as one set of kernels:
//! the latest record of each kernel, architecture and file (a report is appended to by every
//! build, so a rebuilt file's kernels appear more than once), the compiles that were passed to
//! nvcc untuned, and the totals the overview leads with.

use std::collections::BTreeMap;

use nvcc_orion_schema::Line;

use super::row::{self, Row};

/// A compile nvcc-orion passed to nvcc unchanged although it built device code (the report's
/// `passed_through` records).
#[derive(Debug, Clone, PartialEq)]
pub struct PassedThrough {
    pub inputs: String,
    pub reason: String,
}

/// The kernels of a build, in file, architecture and kernel order.
#[derive(Debug, Clone, Default)]
pub struct Project {
    pub rows: Vec<Row>,
    pub passed: Vec<PassedThrough>,
}

/// Counts for one file or one limiter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub kernels: usize,
    pub retuned: usize,
    pub spilling: usize,
    /// Kernels whose occupancy (worst block size) is below half the SM's warp slots.
    pub low_occupancy: usize,
}

impl Totals {
    fn add(&mut self, r: &Row) {
        self.kernels += 1;
        self.retuned += usize::from(r.retuned);
        self.spilling += usize::from(r.spills > 0);
        self.low_occupancy += usize::from(r.occupancy.iter().min().is_some_and(|&o| o < 50));
    }
}

impl Project {
    /// From report records in the order they were written: a later record of the same kernel,
    /// architecture and file replaces an earlier one.
    pub fn from_records(records: &[Line]) -> Project {
        let mut rows: BTreeMap<(String, String, String), Row> = BTreeMap::new();
        let mut passed: BTreeMap<String, PassedThrough> = BTreeMap::new();
        for line in records {
            if let Line::Passed(p) = line {
                let inputs = p.inputs.join(" ");
                passed.insert(
                    inputs.clone(),
                    PassedThrough {
                        inputs,
                        reason: p.passed_through.clone(),
                    },
                );
            } else if let Some(row) = line.kernel().and_then(row::of) {
                // A compile that ran again since was tuned: its pass-through is history.
                passed.remove(&row.file);
                rows.insert(row.key(), row);
            }
        }
        Project {
            rows: rows.into_values().collect(),
            passed: passed.into_values().collect(),
        }
    }

    /// From report lines as JSON (the tests' records).
    #[cfg(test)]
    pub(crate) fn from_values(values: &[serde_json::Value]) -> Project {
        let lines: Vec<Line> = values
            .iter()
            .map(|v| Line::from_value(v.clone()).expect("a report line"))
            .collect();
        Project::from_records(&lines)
    }

    pub fn files(&self) -> usize {
        let mut f: Vec<&str> = self.rows.iter().map(|r| r.file.as_str()).collect();
        f.dedup();
        f.len()
    }

    /// The architectures, in order.
    pub fn arches(&self) -> Vec<String> {
        let mut a: Vec<String> = self.rows.iter().map(|r| r.arch.clone()).collect();
        a.sort_by_key(|s| (arch_number(s), s.clone()));
        a.dedup();
        a
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        self.rows.iter().for_each(|r| t.add(r));
        t
    }

    /// Totals per file, in file order.
    pub fn per_file(&self) -> Vec<(String, Totals)> {
        self.group(|r| r.file.clone())
    }

    /// Totals per limiter, most kernels first.
    pub fn per_limiter(&self) -> Vec<(String, Totals)> {
        let mut g = self.group(|r| r.limiter.clone());
        g.sort_by(|a, b| b.1.kernels.cmp(&a.1.kernels).then(a.0.cmp(&b.0)));
        g
    }

    /// How many kernels each reason (in a few words) covers, most first.
    pub fn per_why(&self) -> Vec<(&'static str, usize)> {
        let mut m: BTreeMap<&'static str, usize> = BTreeMap::new();
        for r in &self.rows {
            *m.entry(r.why).or_default() += 1;
        }
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    fn group(&self, key: impl Fn(&Row) -> String) -> Vec<(String, Totals)> {
        let mut m: BTreeMap<String, Totals> = BTreeMap::new();
        for r in &self.rows {
            m.entry(key(r)).or_default().add(r);
        }
        m.into_iter().collect()
    }
}

fn arch_number(s: &str) -> u32 {
    s.trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rec(unit: &str, kernel: &str, arch: &str, regs: u32, chosen: usize) -> Value {
        json!({"arch": arch, "kernel": kernel, "unit": unit, "block_sizes": [256], "block_from": "launch-bounds",
            "candidates": [
                {"budget": null, "registers": regs, "spill_instructions": 0, "static_shared": 0, "warps_per_sm": [16]},
                {"budget": {"regs": 32, "smem_spill": false}, "registers": 32, "spill_instructions": 4, "static_shared": 0, "warps_per_sm": [64]}],
            "pruned": [], "chosen": chosen, "reason": if chosen == 0 {"best candidate (32 registers) predicted +1.0%, below the 5% margin"} else {"predicted 9% faster"}})
    }

    #[test]
    fn latest_record_wins_and_totals_add_up() {
        let records = vec![
            rec("b.cu", "k2", "sm_90", 128, 0),
            rec("a.cu", "k1", "sm_90", 128, 0),
            rec("a.cu", "k1", "sm_80", 128, 0),
            json!({"passed_through": "-G (device debug)", "inputs": ["c.cu"]}),
            json!({"passed_through": "-G (device debug)", "inputs": ["a.cu"]}),
            // a.cu rebuilt: its sm_90 kernel retuned now.
            rec("a.cu", "k1", "sm_90", 128, 1),
        ];
        let p = Project::from_values(&records);
        assert_eq!(p.rows.len(), 3);
        assert_eq!(p.files(), 2);
        assert_eq!(p.arches(), ["sm_80", "sm_90"]);
        assert_eq!(
            p.rows
                .iter()
                .map(|r| (r.file.as_str(), r.arch.as_str()))
                .collect::<Vec<_>>(),
            [("a.cu", "sm_80"), ("a.cu", "sm_90"), ("b.cu", "sm_90")]
        );
        let t = p.totals();
        assert_eq!(
            (t.kernels, t.retuned, t.spilling, t.low_occupancy),
            (3, 1, 1, 2)
        );
        assert_eq!(p.per_file()[0].1.kernels, 2);
        assert_eq!(p.per_why()[0], ("tried: below the margin", 2));
        assert_eq!(
            p.passed,
            [PassedThrough {
                inputs: "c.cu".into(),
                reason: "-G (device debug)".into()
            }]
        );
        assert_eq!(
            p.per_limiter()
                .iter()
                .map(|(_, t)| t.kernels)
                .sum::<usize>(),
            3
        );
    }
}

//! What changed between two builds' reports: kernels added and removed, and for the kernels
//! both have, a change in registers, spills, occupancy or what shipped.

use std::collections::BTreeMap;

use super::project::Project;
use super::row::Row;

/// One kernel's change, in words (`registers 64 → 32`).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub file: String,
    pub arch: String,
    pub kernel: String,
    pub name: String,
    pub what: String,
}

/// The changes from `before` to `after`, in file, architecture and kernel order.
pub fn between(before: &Project, after: &Project) -> Vec<Change> {
    let old: BTreeMap<_, &Row> = before.rows.iter().map(|r| (r.key(), r)).collect();
    let new: BTreeMap<_, &Row> = after.rows.iter().map(|r| (r.key(), r)).collect();
    let mut keys: Vec<_> = old.keys().chain(new.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let what = match (old.get(&k), new.get(&k)) {
                (None, Some(n)) => format!("new: {} registers, {} spills", n.regs, n.spills),
                (Some(_), None) => "removed".to_string(),
                (Some(o), Some(n)) => differences(o, n)?,
                (None, None) => return None,
            };
            let row = new.get(&k).or_else(|| old.get(&k))?;
            Some(Change {
                file: k.0,
                arch: k.1,
                kernel: k.2,
                name: row.name.clone(),
                what,
            })
        })
        .collect()
}

/// `registers 64 → 32, spills 0 → 98, ships 32 (.maxnreg) (was ptxas)`, or `None`.
fn differences(o: &Row, n: &Row) -> Option<String> {
    let mut parts = Vec::new();
    if o.ptxas_regs != n.ptxas_regs {
        parts.push(format!(
            "ptxas's registers {} → {}",
            o.ptxas_regs, n.ptxas_regs
        ));
    }
    if o.regs != n.regs {
        parts.push(format!("registers {} → {}", o.regs, n.regs));
    }
    if o.spills != n.spills {
        parts.push(format!("spills {} → {}", o.spills, n.spills));
    }
    if o.blocks != n.blocks {
        parts.push(format!("block size {} → {}", o.blocks, n.blocks));
    }
    let (was, now) = (percents(&o.occupancy), percents(&n.occupancy));
    if was != now {
        parts.push(format!("occupancy {was} → {now}"));
    }
    if o.chose != n.chose {
        parts.push(format!("ships {} (was {})", n.chose, o.chose));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `50%/25%` (one number when every block size gives it), `-` when there is none.
pub fn percents(p: &[u32]) -> String {
    if p.is_empty() {
        return "-".to_string();
    }
    if p.iter().all(|&x| x == p[0]) {
        return format!("{}%", p[0]);
    }
    p.iter()
        .map(|x| format!("{x}%"))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(kernel: &str, regs: u32) -> serde_json::Value {
        json!({"arch": "sm_90", "kernel": kernel, "unit": "a.cu", "block_sizes": [256], "block_from": "launch-bounds",
            "candidates": [{"budget": null, "registers": regs, "spill_instructions": 0, "static_shared": 0, "warps_per_sm": [if regs > 64 {16} else {32}]}],
            "pruned": [], "chosen": 0, "reason": "no lower budget raises occupancy"})
    }

    #[test]
    fn added_removed_and_changed() {
        let before = Project::from_values(&[rec("same", 40), rec("grew", 64), rec("gone", 32)]);
        let after = Project::from_values(&[rec("same", 40), rec("grew", 96), rec("born", 32)]);
        let c = between(&before, &after);
        let got: Vec<(&str, &str)> = c
            .iter()
            .map(|c| (c.kernel.as_str(), c.what.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("born", "new: 32 registers, 0 spills"),
                ("gone", "removed"),
                (
                    "grew",
                    "ptxas's registers 64 → 96, registers 64 → 96, occupancy 50% → 25%"
                ),
            ]
        );
        assert!(between(&after, &after).is_empty());
    }
}

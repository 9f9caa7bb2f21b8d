//! Why a kernel kept ptxas's budget, in words (the record's typed `kept_by`, `pruned[].limit`
//! and `train_would_measure`, written by `tune::step` and `tune::plan`): the assumption that
//! decided (the model's DRAM floor without reuse, its issue bound, no occupancy to gain, ...)
//! and what a training run would measure instead (issue 45).

use serde_json::Value;

/// A limit's words, from its kebab-case name; `None` for a name this version does not know
/// (a report from another version).
pub fn words(limit: &str) -> Option<&'static str> {
    Some(match limit {
        "no-occupancy-gain" => "no occupancy to gain: no lower budget buys more resident warps",
        "dram-without-reuse" => {
            "DRAM-bound if no data is reused (the model counts every global byte as DRAM traffic)"
        }
        "issue" => "issue-bound: the warps' own instructions already fill the issue slots",
        "latency" => "latency-bound, but the warps a lower budget buys hide too little of it",
        "l1" => "L1-bound: more warps share the same L1 bandwidth",
        "l2" => "L2-bound: more warps share the same L2 bandwidth",
        "below-margin" => "built, but no lower budget is predicted to clear the margin",
        "build-cost" => "left out by the measured build's cost rule",
        "object-size" => "left out of the cubin by the object-size cap on variants",
        _ => return None,
    })
}

/// A pruned budget's limit in a few words, for the `not built` line: `DRAM without reuse`.
pub fn short(limit: &str) -> Option<&'static str> {
    Some(match limit {
        "no-occupancy-gain" => "no warps gained at its worst block size",
        "dram-without-reuse" => "DRAM without reuse",
        "issue" => "issue bound",
        "latency" => "latency",
        "l1" => "L1 bound",
        "l2" => "L2 bound",
        "build-cost" => "build cost",
        "object-size" => "object-size cap",
        _ => return None,
    })
}

/// The line `explain` prints for a kernel that kept ptxas's budget: why, and the budgets a
/// training run would measure (`pruned: DRAM-bound if no data is reused ...; a training run
/// (NVCC_ORION=train) would measure 40, 32`). `None` when the record says nothing of it.
pub fn kept_line(r: &Value) -> Option<String> {
    let limit = r["kept_by"].as_str()?;
    let why = words(limit).unwrap_or(limit);
    let pruned = limit != "no-occupancy-gain" && limit != "below-margin";
    let measure: Vec<String> = r["train_would_measure"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["regs"].as_u64())
        .map(|n| n.to_string())
        .collect();
    let mut line = format!("{}{why}", if pruned { "pruned: " } else { "" });
    if !measure.is_empty() {
        line.push_str(&format!(
            "; a training run (NVCC_ORION=train) would measure {}",
            measure.join(", ")
        ));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn why_nothing_changed_and_what_training_would_measure() {
        let r = json!({"kept_by": "dram-without-reuse",
            "train_would_measure": [{"regs": 40, "smem_spill": false}, {"regs": 32, "smem_spill": false}]});
        assert_eq!(
            kept_line(&r).unwrap(),
            "pruned: DRAM-bound if no data is reused (the model counts every global byte as \
             DRAM traffic); a training run (NVCC_ORION=train) would measure 40, 32"
        );
        let r = json!({"kept_by": "no-occupancy-gain"});
        assert_eq!(
            kept_line(&r).unwrap(),
            "no occupancy to gain: no lower budget buys more resident warps"
        );
        // Another version's limit: its name, not nothing.
        assert_eq!(
            kept_line(&json!({"kept_by": "bandwidth"})).unwrap(),
            "pruned: bandwidth"
        );
        assert_eq!(kept_line(&json!({"chosen": 0})), None);
        assert_eq!(short("issue"), Some("issue bound"));
        assert_eq!(short("below-margin"), None);
    }
}

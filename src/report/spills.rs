//! The spill2smem summary line under the tables (issue 23): per kernel that spills under
//! ptxas, whether its spills moved to shared memory, and if not, why, counted by kind of
//! reason so a user sees at a glance what keeps spills in local memory.

use std::collections::BTreeMap;

use nvcc_orion_schema::{Budget, Record, Rewrite};

/// Why a kernel's spills stayed in local memory, from its record.
pub fn refusal_kind(record: &Record) -> Option<&'static str> {
    let Some(v) = &record.verdict else {
        return Some("not offered");
    };
    if v.proved {
        return None;
    }
    let detail = v.detail.as_str();
    Some(if detail.contains("shared memory") {
        "no shared memory"
    } else if detail.contains("registers, above the limit") {
        "cap with no room"
    } else if detail.contains("no free register") {
        "no free register"
    } else if detail.contains("nvdisasm") || detail.contains("oracle") {
        "instruction not covered"
    } else if detail.contains("checker rejected") {
        "proof"
    } else {
        "other"
    })
}

/// `spill2smem: 12 moved, 2 partly moved, 3 refused (2 no shared memory, 1 proof)`,
/// over the records of kernels that spill under ptxas or had the rewrite tried; `None` when
/// no record tried it. *Partly moved*: the chosen rewrite left spills in local memory (the
/// area for all of them did not fit).
pub fn summary(records: &[&Record]) -> Option<String> {
    // The notes name the rewrite by its key (by its old name in older reports).
    let tried = |r: &Record| {
        r.transform.as_deref().is_some_and(|t| {
            nvcc_orion_schema::note_names(Rewrite::Spill2Smem.key()).any(|n| t.contains(n))
        })
    };
    if !records.iter().any(|r| tried(r)) {
        return None;
    }
    let (mut moved, mut partly, mut kept) = (0, 0, 0);
    let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        // Kernels that spill under ptxas, and those whose spills at a lower budget the
        // rewrite was tried on (a moved kernel must never read as "0 moved").
        let spills = r.baseline().map_or(0, |c| c.spill_instructions);
        if spills == 0 && !tried(r) {
            continue;
        }
        let c = r.candidates.get(r.chosen);
        let chose_it = c.and_then(|c| c.budget.as_ref()).and_then(Budget::rewrite)
            == Some(Rewrite::Spill2Smem);
        let left = c.map_or(0, |c| c.spill_instructions);
        match refusal_kind(r) {
            None if chose_it && left > 0 => partly += 1,
            None if chose_it => moved += 1,
            None => kept += 1,
            Some(k) => *refused.entry(k).or_default() += 1,
        }
    }
    let n: usize = refused.values().sum();
    let why: Vec<String> = refused.iter().map(|(k, c)| format!("{c} {k}")).collect();
    let mut line = format!("spill2smem: {moved} moved");
    if partly > 0 {
        line.push_str(&format!(", {partly} partly moved"));
    }
    if kept > 0 {
        line.push_str(&format!(", {kept} proved but slower than ptxas's"));
    }
    if n > 0 {
        line.push_str(&format!(", {n} refused ({})", why.join(", ")));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn rec(spills: u32, chosen_smem: bool, verdict: Value) -> Record {
        rec_left(spills, chosen_smem, verdict, 0)
    }

    /// `left`: spill instructions the chosen rewrite left in local memory.
    fn rec_left(spills: u32, chosen_smem: bool, verdict: Value, left: u32) -> Record {
        super::super::record(serde_json::json!({
            "transform": "spill2smem at 32: …",
            "candidates": [
                {"budget": null, "spill_instructions": spills},
                {"budget": {"regs": 32, "smem_spill": false, "spill2smem": true},
                 "spill_instructions": left}
            ],
            "chosen": u64::from(chosen_smem),
            "verdict": verdict,
        }))
    }

    #[test]
    fn counts_moves_and_refusals_by_kind() {
        let proved = serde_json::json!({"budget": 32, "proved": true, "detail": "ok"});
        let no_room = serde_json::json!({"budget": 32, "proved": false,
            "detail": "70 slots × 128 threads need 71680 bytes of shared memory beside the kernel's 0"});
        let proof = serde_json::json!({"budget": 32, "proved": false,
            "detail": "the checker rejected the rewrite: k at 0xf0: …"});
        let records = [
            rec(10, true, proved.clone()),
            rec_left(10, true, proved.clone(), 4),
            rec(10, false, proved),
            rec(10, false, no_room.clone()),
            rec(10, false, no_room),
            rec(10, false, proof),
            rec(10, false, Value::Null),
            rec(0, false, Value::Null),
            rec(
                0,
                true,
                serde_json::json!({"budget": 32, "proved": true, "detail": "ok"}),
            ),
        ];
        assert_eq!(
            summary(&records.iter().collect::<Vec<_>>()).unwrap(),
            "spill2smem: 2 moved, 1 partly moved, 1 proved but slower than ptxas's, 5 refused \
             (2 no shared memory, 2 not offered, 1 proof)"
        );
        // A kernel with no register left for the area's base is its own kind, not "other".
        let no_register = serde_json::json!({"budget": 32, "proved": false,
            "detail": "spill2smem does not apply: no free register"});
        assert_eq!(
            refusal_kind(&rec(10, false, no_register)),
            Some("no free register")
        );
        let untried =
            super::super::record(serde_json::json!({"candidates": [{"spill_instructions": 3}]}));
        assert_eq!(summary(&[&untried]), None);
    }
}

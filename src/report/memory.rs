//! The memory terms of a record's candidates (docs/DESIGN.md §Prediction and selection): per
//! candidate, the bytes a warp moves to global, local and shared memory, where its spills are
//! expected to hit at its occupancy, the cycles per warp each term asks for, which one sets the
//! prediction, and a budget's bound. Shown at the first block size the candidate launches at.

use nvcc_orion_schema::{Candidate, Level, MemoryTerms, Record, Traffic};

use super::budget;

/// The lines under a kernel's table: one per candidate that was priced.
pub fn lines(record: &Record) -> Vec<String> {
    let mut out = Vec::new();
    for c in &record.candidates {
        let Some((at, m)) = c
            .memory
            .iter()
            .enumerate()
            .find_map(|(i, m)| Some((i, m.as_ref()?)))
        else {
            continue;
        };
        let (b, _) = budget(record, c.budget.as_ref());
        out.push(format!(
            "    memory {b:<6} {} per warp{}; {}; cycles/warp at {} threads: {}{}{}",
            bytes(&c.bytes),
            spills(c, m),
            terms(m),
            record
                .block_sizes
                .get(at)
                .map_or("?".to_string(), u32::to_string),
            m.bound_by.name(),
            held(c, m, at),
            c.bound_percent
                .map_or(String::new(), |p| format!("; bound {p:+.1}%")),
        ));
    }
    if out.is_empty() {
        return out;
    }
    out.insert(
        0,
        "    memory terms (bytes a warp moves; where spills hit; cycles per warp of latency/W, issue, L1, L2, DRAM; the term that sets the prediction):"
            .to_string(),
    );
    out
}

/// When ptxas's own code raised the candidate's price: what it was alone.
fn held(c: &Candidate, m: &MemoryTerms, at: usize) -> String {
    let own = m.own_cycles;
    match c.cycles_per_warp.get(at).copied().flatten() {
        Some(priced) if own > 0.0 && priced > own * 1.001 => {
            format!(" (alone {own:.0}, held at ptxas's own work: {priced:.0})")
        }
        _ => String::new(),
    }
}

fn kib(n: f64) -> String {
    if n >= 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{n:.0} B")
    }
}

fn bytes(t: &Traffic) -> String {
    format!(
        "global {}, local {}, shared {}",
        kib(t.global),
        kib(t.local),
        kib(t.shared)
    )
}

fn spills(c: &Candidate, m: &MemoryTerms) -> String {
    if c.bytes.local == 0.0 {
        return String::new();
    }
    let (l1, l2) = (m.l1_hit, m.l2_hit);
    format!(
        "; spills hit {} ({:.0}% L1, {:.0}% L2, {:.0}% DRAM: {} local on {} of L1)",
        match m.spills_hit {
            Level::L1 => "L1",
            Level::L2 => "L2",
            Level::Dram => "DRAM",
            Level::Other(_) => "?",
        },
        100.0 * l1,
        100.0 * (1.0 - l1) * l2,
        100.0 * (1.0 - l1) * (1.0 - l2),
        kib(m.working_set as f64),
        kib(f64::from(m.l1_bytes)),
    )
}

fn terms(m: &MemoryTerms) -> String {
    format!(
        "latency {:.0}, issue {:.0}, L1 {:.0}, L2 {:.0}, DRAM {:.0}",
        m.latency, m.issue, m.l1, m.l2, m.dram
    )
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    fn lines(v: Value) -> Vec<String> {
        super::lines(&super::super::record(v))
    }

    #[test]
    fn a_spilling_candidate_says_where_its_spills_hit() {
        let r: Value = serde_json::from_str(
            r#"{"block_sizes":[128,256],"candidates":[
              {"budget":null,"bytes":{"global":4096,"local":0,"shared":0},
               "memory":[{"working_set":0,"l1_bytes":262144,"spills_hit":"l1","l1_hit":1,"l2_hit":1,
                 "latency":180,"issue":40,"l1":128,"l2":346,"dram":1278,"bound_by":"dram"}]},
              {"budget":{"regs":32,"smem_spill":false},"bytes":{"global":4096,"local":22528,"shared":0},
               "bound_percent":12.5,"cycles_per_warp":[null,2100],
               "memory":[null,{"working_set":360448,"l1_bytes":262144,"spills_hit":"l1","l1_hit":0.7272,"l2_hit":1,
                 "latency":90,"issue":60,"l1":832,"l2":2000,"dram":1300,"bound_by":"l2","own_cycles":1500}]}]}"#,
        )
        .unwrap();
        let l = lines(r);
        assert_eq!(l.len(), 3, "{l:#?}");
        assert!(
            l[1].contains("ptxas") && l[1].contains("global 4.0 KiB, local 0 B"),
            "{}",
            l[1]
        );
        assert!(
            !l[1].contains("spills hit") && l[1].ends_with("at 128 threads: dram"),
            "{}",
            l[1]
        );
        assert!(
            l[2].contains(
                "spills hit L1 (73% L1, 27% L2, 0% DRAM: 352.0 KiB local on 256.0 KiB of L1)"
            ),
            "{}",
            l[2]
        );
        assert!(
            l[2].contains(
                "at 256 threads: l2 (alone 1500, held at ptxas's own work: 2100); bound +12.5%"
            ),
            "{}",
            l[2]
        );
        assert!(lines(serde_json::json!({"candidates": []})).is_empty());
    }
}

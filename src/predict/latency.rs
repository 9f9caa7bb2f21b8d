//! The stall predictor's numbers. The per-architecture ones (rates, scoreboard and fixed
//! latencies) live with the other architecture facts in [`crate::arch::latency`]; the loop
//! weighting with the loop analysis in [`crate::analysis::loops`]. Re-exported here under
//! the paths the predictor, the rewrites and the checker use.

pub(crate) use crate::arch::latency::{
    MAX_THROUGHPUT, READ_RELEASE, SCHEDULERS_PER_SM, fixed_latency, scoreboard_latency, throughput,
};

//! A predictor that agrees with itself (issue 32, docs/DESIGN.md §Prediction and selection).
//!
//! A lower budget is pruned when its *bound* cannot clear the margin: ptxas's own code priced
//! with the warps that budget buys ([`bound`]). A lower budget compiles the same PTX with
//! fewer registers, so its code can only do more: spills and reloads, rematerialised values,
//! loads hoisted less far, loops unrolled less. The static model cannot always see that: a loop
//! ptxas unrolls by four at its own count and leaves rolled under a lower budget costs a
//! quarter as much per pass at the same weight, so a model that prices the two codes alone can
//! call the lower budget's code cheaper than ptxas's own, and a budget pruned at "+0.0 %" can
//! look 25 % faster once built.
//!
//! So a variant is priced against ptxas's own code ([`price`]):
//! - its latency and issue are at least ptxas's own outside local memory plus its own local
//!   memory work, and its bytes per level at least ptxas's own ([`floor`]): what a lower
//!   budget's code shape seems to save is taken for an artefact of the static weights, what
//!   its spills add is counted;
//! - its local data is placed with the larger of the two frames;
//! - and a budget below ptxas's count is never predicted faster than its bound.
//!
//! Every price below is monotone in each of its inputs, so these make the bound an upper
//! bound of what the model says of the built budget: no budget is pruned that the model would
//! have chosen (`tests/tuning/model_coherence.rs` checks it on every test kernel and generated
//! program).

use super::memory::Placement;
use super::price::{Model, Prediction, Residency, Term, combine, predict};
use super::stalls::{Cost, Spent, Traffic, function_cost};
use crate::sass::ir::Function;

/// ptxas's own code for a kernel, which every variant is priced against.
#[derive(Debug, Clone, Copy)]
pub struct Own<'a> {
    pub functions: &'a [Function],
    pub frame_bytes: u32,
}

/// The best case of a budget: `own` code with the budget's residency `at` (its warps, with
/// ptxas's own frame and shared memory).
pub fn bound(model: &Model, own: &Own<'_>, kernel: &str, at: Residency) -> Option<Prediction> {
    predict(
        model,
        own.functions,
        kernel,
        Residency {
            frame_bytes: own.frame_bytes,
            ..at
        },
    )
}

/// A variant's cost floored by ptxas's own: per component the larger of the variant's own and
/// ptxas's own work outside local memory plus the variant's local-memory work; bytes per space
/// at least ptxas's own.
pub fn floor(variant: &Cost, own: &Cost) -> Cost {
    let at_least = |v: f64, o: f64, o_local: f64, v_local: f64| v.max(o - o_local + v_local);
    Cost {
        latency: at_least(
            variant.latency,
            own.latency,
            own.local.latency,
            variant.local.latency,
        ),
        issue: at_least(
            variant.issue,
            own.issue,
            own.local.issue,
            variant.local.issue,
        ),
        local: Spent {
            latency: variant.local.latency,
            issue: variant.local.issue,
        },
        bytes: Traffic {
            global: variant.bytes.global.max(own.bytes.global),
            local: variant.bytes.local,
            shared: variant.bytes.shared.max(own.bytes.shared),
        },
        ..*variant
    }
}

/// `kernel` of `variant` (its functions) with residency `r`, priced against ptxas's `own`
/// code; `bound`: the cycles per warp of its budget's bound, for a budget below ptxas's count
/// (`None` for ptxas's own code and for rewrites at ptxas's count, which are never pruned).
pub fn price(
    model: &Model,
    own: &Own<'_>,
    kernel: &str,
    variant: &[Function],
    r: Residency,
    bound: Option<f64>,
) -> Option<Prediction> {
    let frame = r.frame_bytes.max(own.frame_bytes);
    let placement = Placement::new(&model.memory, frame, r.warps_per_sm, r.l1_bytes);
    let latencies = placement.latencies(&model.memory);
    let mine = function_cost(model.sm, &latencies, variant, kernel)?;
    let theirs = function_cost(model.sm, &latencies, own.functions, kernel)?;
    let alone = combine(&model.memory, mine, r.warps_per_sm, placement).cycles_per_warp;
    let mut p = combine(
        &model.memory,
        floor(&mine, &theirs),
        r.warps_per_sm,
        placement,
    );
    p.own_cycles = alone;
    if let Some(b) = bound
        && b > p.cycles_per_warp
    {
        p.cycles_per_warp = b;
        p.bound_by = Term::Bound;
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(latency: f64, issue: f64, local: Spent, bytes: Traffic) -> Cost {
        Cost {
            latency,
            issue,
            local_accesses: 0.0,
            instructions: 0.0,
            local,
            bytes,
        }
    }

    /// Finding 2's shape: the lower budget's code seems cheaper (a loop left rolled) but adds
    /// local-memory work; the floor keeps ptxas's work and adds the spills'.
    #[test]
    fn a_rolled_loop_saves_nothing_and_spills_are_added() {
        let own = cost(
            1000.0,
            400.0,
            Spent::default(),
            Traffic {
                global: 512.0,
                local: 0.0,
                shared: 0.0,
            },
        );
        let spills = Spent {
            latency: 150.0,
            issue: 40.0,
        };
        let variant = cost(
            800.0,
            300.0,
            spills,
            Traffic {
                global: 256.0,
                local: 640.0,
                shared: 0.0,
            },
        );
        let f = floor(&variant, &own);
        assert_eq!((f.latency, f.issue), (1150.0, 440.0));
        assert_eq!(
            (f.bytes.global, f.bytes.local, f.bytes.shared),
            (512.0, 640.0, 0.0)
        );
        // A variant that really costs more keeps its own numbers.
        let worse = cost(2000.0, 900.0, spills, own.bytes);
        assert_eq!(floor(&worse, &own), worse);
        // ptxas's code against itself is unchanged.
        assert_eq!(floor(&own, &own), own);
    }

    /// A rewrite at ptxas's count that moves ptxas's own spills away is not held to the local
    /// work it removed.
    #[test]
    fn local_work_removed_is_not_kept() {
        let spilled = Spent {
            latency: 300.0,
            issue: 80.0,
        };
        let own = cost(1000.0, 400.0, spilled, Traffic::default());
        let moved = cost(760.0, 340.0, Spent::default(), Traffic::default());
        let f = floor(&moved, &own);
        assert_eq!((f.latency, f.issue), (760.0, 340.0));
    }
}

//! The one ranking of a kernel's candidates for measured selection (issue 21,
//! docs/selector.md §Ranking): which candidates a multi-variant build embeds for a kernel and
//! arch, in which order, under which names. The multi-variant emitter (`adapt`/`train`) and
//! profile-guided builds must both take the candidates from here, so that a profile's variant
//! `k` names the same candidate in the build that measured it and in the build it guides.

use super::select::{Evaluated, gain_percent};

/// At most this many variants per kernel, the original included (Orion §3.3 keeps five).
pub(crate) const MAX_VARIANTS: usize = crate::profile::MAX_VARIANTS as usize;

/// One embedded variant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranked {
    /// Index into the kernel's evaluated candidates (0 is ptxas's own).
    pub(crate) candidate: usize,
    /// Its entry-function name: the kernel's own for variant 0, else `<kernel>__orion_v<k>`.
    pub(crate) name: String,
}

/// The entry-function name of variant `k` of `kernel` (0: the kernel's own name).
pub(crate) fn variant_name(kernel: &str, k: usize) -> String {
    if k == 0 {
        kernel.to_string()
    } else {
        format!("{kernel}__orion_v{k}")
    }
}

/// How much slower than the static winner a candidate may be predicted and still be
/// embedded: 25 %. The selector is there to correct the model's ranking of one kernel's
/// builds, not its absolute times: Resios' validation (thesis, Table 7.1) finds predicted to
/// measured ratios from 0.93 to 2.12, errors that largely cancel between two builds of one
/// kernel. What does not cancel are the terms the builds differ in (spill traffic, the
/// latency more warps hide), and a quarter of the winner's time is the difference we take
/// the uncalibrated model to be unable to resolve. A candidate predicted further behind would
/// cost launches to measure and object size to ship for a win the model says is unlikely
/// (Orion §3.3 rules such versions out at compile time). Calibrated rank correlations
/// (bench/gpu) are the measurement that should replace this figure.
pub(crate) const BAND_PERCENT: f64 = 25.0;

/// The variants of a kernel whose evaluated candidates are `options` (ptxas's own first) and
/// whose static choice is `chosen`: variant 0 is `chosen` (what ships under the original name
/// without a runtime); then, by the model's predicted gain over ptxas's own (best first; ties:
/// the earlier candidate), ptxas's own (the safe version, and where the selector's fail-safe
/// returns) and every real alternative: a candidate that launches at each block size the
/// baseline launches at, predicted within [`BAND_PERCENT`] of the winner, at an occupancy no
/// variant before it has. Then (adapt/train) the candidates built only to be measured, by
/// the same order and at an occupancy of their own, however slow the model predicts them:
/// the model's bound ruled them out, the measurement decides. They come last, so the
/// variants before them are those of a build that did not measure them. Five at most.
pub(crate) fn ranked(kernel: &str, options: &[Evaluated], chosen: usize) -> Vec<Ranked> {
    let (Some(base), Some(winner)) = (options.first(), options.get(chosen)) else {
        return Vec::new();
    };
    let mut rest: Vec<(usize, f64)> = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != chosen)
        .filter_map(|(i, c)| Some((i, if i == 0 { 0.0 } else { gain_percent(base, c)? })))
        .collect();
    // A stable sort: equal gains keep the candidates' own order.
    rest.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut kept = vec![chosen];
    let new_occupancy = |kept: &[usize], c: &Evaluated| {
        kept.iter()
            .all(|&k| options[k].warps_per_sm != c.warps_per_sm)
    };
    for &(i, _) in rest.iter().filter(|(i, _)| !options[*i].measured_only) {
        if kept.len() == MAX_VARIANTS {
            break;
        }
        let c = &options[i];
        if i == 0 || (new_occupancy(&kept, c) && within_band(winner, c)) {
            kept.push(i);
        }
    }
    for &(i, _) in rest.iter().filter(|(i, _)| options[*i].measured_only) {
        if kept.len() == MAX_VARIANTS {
            break;
        }
        if new_occupancy(&kept, &options[i]) {
            kept.push(i);
        }
    }
    kept.into_iter()
        .enumerate()
        .map(|(k, candidate)| Ranked {
            candidate,
            name: variant_name(kernel, k),
        })
        .collect()
}

/// Whether `c` is predicted at most [`BAND_PERCENT`] slower than `winner` at every block size.
fn within_band(winner: &Evaluated, c: &Evaluated) -> bool {
    // A gain of g % means winner / c = 1 + g / 100; c at most (1 + band) times the winner's.
    gain_percent(winner, c).is_some_and(|g| 1.0 + g / 100.0 >= 1.0 / (1.0 + BAND_PERCENT / 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ptxas's own at 96 registers (no budget), else a budget of `regs`; resident warps
    /// per SM follow the registers (64K registers, 32 threads a warp).
    fn ev(regs: u32, cycles: &[Option<f64>]) -> Evaluated {
        let mut e = crate::tune::select::tests::ev((regs != 96).then_some(regs), regs, cycles);
        e.warps_per_sm = vec![65536 / (regs * 32)];
        e
    }

    #[test]
    fn the_static_winner_first_then_the_original_and_the_alternatives_in_the_band() {
        let opts = [
            ev(96, &[Some(100.0)]),
            ev(64, &[Some(60.0)]), // +66.7%, 20% slower than the winner: in the band
            ev(48, &[Some(50.0)]), // +100%: the static winner
            ev(40, &[Some(70.0)]), // 40% slower than the winner: out
            ev(32, &[None]),       // cannot launch: never embedded
        ];
        let r = ranked("_Z1kPf", &opts, 2);
        let order: Vec<usize> = r.iter().map(|x| x.candidate).collect();
        // ptxas's own is always kept although 100% slower: it is the safe version.
        assert_eq!(order, [2, 1, 0]);
        let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["_Z1kPf", "_Z1kPf__orion_v1", "_Z1kPf__orion_v2"]);
        // The baseline kept: it is variant 0, the rest follow by gain where in the band.
        let opts = [
            ev(96, &[Some(100.0)]),
            ev(64, &[Some(110.0)]), // -9.1%: in the band
            ev(48, &[Some(130.0)]), // 30% slower: out
        ];
        let r = ranked("k", &opts, 0);
        assert_eq!(r.iter().map(|x| x.candidate).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn one_variant_per_occupancy() {
        // 64 and 60 registers give the same warps per SM (allocation granularity): only the faster one is embedded.
        let mut opts = [
            ev(96, &[Some(100.0)]),
            ev(64, &[Some(70.0)]),
            ev(60, &[Some(72.0)]),
            ev(48, &[Some(75.0)]),
        ];
        // Register allocation granularity: 60 registers round up to 64's warps.
        opts[2].warps_per_sm = opts[1].warps_per_sm.clone();
        let r = ranked("k", &opts, 1);
        assert_eq!(r.iter().map(|x| x.candidate).collect::<Vec<_>>(), [1, 3, 0]);
    }

    #[test]
    fn candidates_only_measured_come_last_whatever_the_model_predicts() {
        let mut opts = [
            ev(96, &[Some(100.0)]),
            ev(64, &[Some(80.0)]),  // +25%: the static winner
            ev(56, &[Some(300.0)]), // only measured: far outside the band, still embedded
            ev(48, &[Some(90.0)]),  // +11%: in the band
            ev(40, &[Some(99.0)]),  // only measured, predicted faster than 56
        ];
        opts[2].measured_only = true;
        opts[4].measured_only = true;
        let r = ranked("k", &opts, 1);
        // The ranking a build without them makes, then them by predicted gain.
        assert_eq!(
            r.iter().map(|x| x.candidate).collect::<Vec<_>>(),
            [1, 3, 0, 4, 2]
        );
        let without = ranked("k", &[opts[0].clone(), opts[1].clone(), opts[3].clone()], 1);
        assert_eq!(without.len(), 3);
        // One at an occupancy a variant already has is not measured twice.
        opts[4].warps_per_sm = opts[3].warps_per_sm.clone();
        let r = ranked("k", &opts, 1);
        assert_eq!(
            r.iter().map(|x| x.candidate).collect::<Vec<_>>(),
            [1, 3, 0, 2]
        );
    }

    #[test]
    fn five_at_most_and_ties_keep_the_candidates_order() {
        let opts: Vec<Evaluated> = std::iter::once(ev(96, &[Some(100.0)]))
            .chain((0..6).map(|i| ev(80 - 8 * i, &[Some(90.0)])))
            .collect();
        let r = ranked("k", &opts, 1);
        assert_eq!(
            r.iter().map(|x| x.candidate).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(r[4].name, "k__orion_v4");
        assert!(ranked("k", &[], 0).is_empty());
    }
}

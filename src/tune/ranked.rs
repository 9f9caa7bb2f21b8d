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

/// The variants of a kernel whose evaluated candidates are `options` (ptxas's own first) and
/// whose static choice is `chosen`: variant 0 is `chosen` (what ships under the original name
/// without a runtime); then every other candidate that launches at each block size the
/// baseline launches at, by the model's predicted gain over ptxas's own, best first (ties:
/// the earlier candidate), ptxas's own included; five at most.
pub(crate) fn ranked(kernel: &str, options: &[Evaluated], chosen: usize) -> Vec<Ranked> {
    let Some(base) = options.first() else {
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
    std::iter::once(chosen)
        .chain(rest.into_iter().map(|(i, _)| i))
        .take(MAX_VARIANTS)
        .enumerate()
        .map(|(k, candidate)| Ranked {
            candidate,
            name: variant_name(kernel, k),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ptxas's own at 96 registers (no budget), else a budget of `regs`.
    fn ev(regs: u32, cycles: &[Option<f64>]) -> Evaluated {
        crate::tune::select::tests::ev((regs != 96).then_some(regs), regs, cycles)
    }

    #[test]
    fn the_static_winner_first_then_the_predicted_order() {
        let opts = [
            ev(96, &[Some(100.0)]),
            ev(64, &[Some(80.0)]),  // +25%
            ev(48, &[Some(50.0)]),  // +100%: the static winner
            ev(40, &[Some(120.0)]), // -16.7%
            ev(32, &[None]),        // cannot launch: never embedded
        ];
        let r = ranked("_Z1kPf", &opts, 2);
        let order: Vec<usize> = r.iter().map(|x| x.candidate).collect();
        assert_eq!(order, [2, 1, 0, 3]);
        let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "_Z1kPf",
                "_Z1kPf__orion_v1",
                "_Z1kPf__orion_v2",
                "_Z1kPf__orion_v3"
            ]
        );
        // The baseline kept: it is variant 0, the rest follow by gain.
        let r = ranked("k", &opts, 0);
        assert_eq!(
            r.iter().map(|x| x.candidate).collect::<Vec<_>>(),
            [0, 2, 1, 3]
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

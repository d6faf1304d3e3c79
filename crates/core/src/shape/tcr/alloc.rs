//! Rate allocation among a class's flows: paper 001's Algorithm 1 (a variant of Charny's
//! max-min algorithm) and paper 000's equal shares. Pure functions over a slice of
//! [`Entry`]s, so they can be tested (and reused) without packets.
//!
//! Rates are in bytes/s of whatever the caller counts (TCR counts the class's bytes: IP
//! packets plus `overhead_bytes`).
//!
//! ## Our reading of Algorithm 1 (trap P1-8)
//!
//! One call of [`max_min_pass`] is one invocation (flow start, flow end, sampling interval);
//! allocations persist between invocations, which is how "the allocation approaches the
//! measured rate over successive iterations" (step 6) happens.
//!
//! 1. A flow with no rate sample yet is hungry. Otherwise it is *bottlenecked* when its
//!    measured rate R (an EWMA over sampling intervals) is below p times the allocation that
//!    was in force while R was measured (the same EWMA of A, `alloc_avg`): comparing R with the
//!    current A instead would call every flow whose allocation just grew "bottlenecked" before
//!    its sender could react.
//! 2. Bottlenecked flows: A_k ← (A_k + R_k)/2 (Eq. 4).
//! 3. The residual reaches the hungry flows in one of two ways ([`Residual`]):
//!    * `Increment` (Eq. 3 as printed): U = B − ΣA after step 2 (so Σ A = B afterwards, the
//!      reading of P1-8), A_j += U/H; step 2 never raises A_k (R_k can exceed the current A_k
//!      right after it fell). Allocations of hungry flows never move between them, so a
//!      flow left with little (one that was idle, or whose demand grew) stays starved while the
//!      others stay hungry.
//!    * `Equalize` (default): water-filling, i.e. max-min with the bottlenecked flows' A_k as
//!      their demands. Hungry flows get the level μ with Σ_b min(A_k, μ) + H·μ = B, and a
//!      bottlenecked flow above μ is cut to μ. Step 2 additionally keeps A_k ≥ R_k/p²: without
//!      this floor a flow limited elsewhere at rate d is re-marked hungry as soon as its
//!      allocation comes within 1/p of d, jumps back to μ, and oscillates (measured in the
//!      tests); with it the flow stays bottlenecked until its rate grows by more than 1/p.
//!    * `Unused` (Eq. 3 with step 4's U as "the bandwidth which remains unutilized by the
//!      bottlenecked flows"): U = Σ_k (A_k − R_k) before step 2 halves it, A_j += U/H. No
//!      normalisation to B: what no allocation holds any more is never handed out again.
//! 4. If every flow is bottlenecked, what happens to U = B − ΣA is [`AllBottlenecked`]: by
//!    default (`Spread`) it is spread evenly over all flows, so Σ A = B always holds (a
//!    bottlenecked flow keeps some headroom to grow into); with `Leave` (the paper's "repeat
//!    until … all flows are bottlenecked") it stays unallocated and the allocations keep
//!    following the measured rates, Σ A ≤ B.

use super::config::{AllBottlenecked, Residual};

/// One flow's allocation state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Entry {
    /// Measured rate R (EWMA), bytes/s.
    pub rate: f64,
    /// EWMA of the allocation in force while `rate` was measured, bytes/s.
    pub alloc_avg: f64,
    /// Allocation A, bytes/s (in and out).
    pub alloc: f64,
    /// At least one rate sample was taken (otherwise the flow is hungry).
    pub sampled: bool,
    /// Out: marked bottlenecked by this pass.
    pub bottlenecked: bool,
}

/// Paper 000: A_i = B/n for every entry.
pub fn equal_share(b: f64, e: &mut [Entry]) {
    if e.is_empty() {
        return;
    }
    let s = b / e.len() as f64;
    for x in e.iter_mut() {
        x.alloc = s;
        x.bottlenecked = false;
    }
}

/// Paper 001 Eq. 2: every allocation back to B/N (used when a flow starts or ends if the
/// caller wants the literal initialisation).
pub fn reset(b: f64, e: &mut [Entry]) {
    equal_share(b, e)
}

/// Scales allocations so they sum to `b` (a new class rate). Equal shares if they summed to 0.
pub fn rescale(b: f64, e: &mut [Entry]) {
    let sum: f64 = e.iter().map(|x| x.alloc).sum();
    if sum > 0.0 {
        let k = b / sum;
        for x in e.iter_mut() {
            x.alloc *= k;
        }
    } else {
        equal_share(b, e);
    }
}

/// One invocation of Algorithm 1 over `e` with capacity `b` and satisfaction `p`. `scratch`
/// is reused storage (no allocation once it has grown to the number of flows). Returns the
/// number of bottlenecked flows. Afterwards Σ A = b (up to rounding) whenever `e` is not empty.
pub fn max_min_pass(b: f64, p: f64, residual: Residual, e: &mut [Entry], scratch: &mut Vec<f64>) -> usize {
    max_min_pass_with(b, p, residual, AllBottlenecked::Spread, e, scratch)
}

/// [`max_min_pass`] with the choice of what happens to the residual when every flow is
/// bottlenecked: with [`AllBottlenecked::Leave`] it stays unallocated and Σ A ≤ b afterwards.
pub fn max_min_pass_with(
    b: f64,
    p: f64,
    residual: Residual,
    all: AllBottlenecked,
    e: &mut [Entry],
    scratch: &mut Vec<f64>,
) -> usize {
    if e.is_empty() {
        return 0;
    }
    let mut nb = 0usize;
    let mut unused = 0.0;
    for x in e.iter_mut() {
        x.bottlenecked = x.sampled && x.rate < p * x.alloc_avg;
        if x.bottlenecked {
            nb += 1;
            unused += (x.alloc - x.rate).max(0.0);
            let half = (x.alloc + x.rate) / 2.0;
            x.alloc = match residual {
                Residual::Equalize => half.max(x.rate / (p * p)),
                // Never more than before (R can exceed the current A when A just fell).
                Residual::Increment | Residual::Unused => half.min(x.alloc),
            };
        }
    }
    let h = e.len() - nb;
    if residual == Residual::Unused {
        // Steps 4–5 with U = Σ_k (A_k − R_k); when every flow is bottlenecked there is no one
        // to give it to and it is dropped (the algorithm stops), whatever `all` says.
        if h > 0 {
            let add = unused / h as f64;
            for x in e.iter_mut().filter(|x| !x.bottlenecked) {
                x.alloc += add;
            }
        }
        return nb;
    }
    if h == 0 {
        let sum: f64 = e.iter().map(|x| x.alloc).sum();
        if sum <= b && all == AllBottlenecked::Leave {
            return nb;
        }
        if sum <= b {
            let add = (b - sum) / e.len() as f64;
            for x in e.iter_mut() {
                x.alloc += add;
            }
        } else {
            // Only possible with the R/p² floor: cut the largest allocations to a level.
            let mu = water_level(b, 0, e.iter().map(|x| x.alloc), scratch);
            for x in e.iter_mut() {
                x.alloc = x.alloc.min(mu);
            }
        }
        return nb;
    }
    match residual {
        Residual::Increment | Residual::Unused => {
            let u = b - e.iter().map(|x| x.alloc).sum::<f64>();
            let add = u / h as f64;
            let mut clipped = false;
            for x in e.iter_mut().filter(|x| !x.bottlenecked) {
                x.alloc += add;
                if x.alloc < 0.0 {
                    x.alloc = 0.0;
                    clipped = true;
                }
            }
            if clipped {
                // Σ A was above B (the class rate fell): scale everything back to B.
                rescale(b, e);
            }
        }
        Residual::Equalize => {
            let mu = water_level(b, h, e.iter().filter(|x| x.bottlenecked).map(|x| x.alloc), scratch);
            for x in e.iter_mut() {
                x.alloc = if x.bottlenecked { x.alloc.min(mu) } else { mu };
            }
        }
    }
    nb
}

/// The level μ with Σ min(d_k, μ) + h·μ = b (h unbounded demands plus the given ones).
/// With h = 0 and Σ d ≤ b, every demand fits and the largest demand is returned.
pub fn water_level(b: f64, h: usize, demands: impl Iterator<Item = f64>, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend(demands);
    scratch.sort_unstable_by(|a, b| a.total_cmp(b));
    let mut rem = b.max(0.0);
    let mut n = h + scratch.len();
    for &d in scratch.iter() {
        let level = rem / n as f64;
        if d >= level {
            return level;
        }
        rem -= d;
        n -= 1;
    }
    if n == 0 {
        scratch.last().copied().unwrap_or(0.0)
    } else {
        rem / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rate: f64, alloc: f64) -> Entry {
        Entry { rate, alloc_avg: alloc, alloc, sampled: true, bottlenecked: false }
    }

    #[test]
    fn unused_hands_hungry_flows_only_what_the_bottlenecked_leave() {
        let mut s = Vec::new();
        // B = 100, but allocations hold only 40: two flows limited elsewhere (R 5 of A 10),
        // two hungry ones using their 10.
        let mut e = [entry(5.0, 10.0), entry(5.0, 10.0), entry(10.0, 10.0), entry(10.0, 10.0)];
        let nb = max_min_pass_with(100.0, 0.9, Residual::Unused, AllBottlenecked::Spread, &mut e, &mut s);
        assert_eq!(nb, 2);
        // Step 6: (10 + 5)/2; step 5: U = (10 − 5)·2 = 10 over H = 2 → +5 each. The 60 that no
        // allocation held stay out (Increment would hand them over: 10 + 35 each).
        assert_eq!(e.iter().map(|x| x.alloc).collect::<Vec<_>>(), [7.5, 7.5, 15.0, 15.0]);
        let mut f = [entry(5.0, 10.0), entry(5.0, 10.0), entry(10.0, 10.0), entry(10.0, 10.0)];
        max_min_pass_with(100.0, 0.9, Residual::Increment, AllBottlenecked::Spread, &mut f, &mut s);
        assert_eq!(f.iter().map(|x| x.alloc).collect::<Vec<_>>(), [7.5, 7.5, 42.5, 42.5]);
        // Every flow bottlenecked: the halving happens and nothing is re-spread, even with Spread.
        let mut g = [entry(5.0, 10.0), entry(2.0, 10.0)];
        assert_eq!(max_min_pass_with(100.0, 0.9, Residual::Unused, AllBottlenecked::Spread, &mut g, &mut s), 2);
        assert_eq!(g.iter().map(|x| x.alloc).collect::<Vec<_>>(), [7.5, 6.0]);
    }

    #[test]
    fn water_level_caps_large_demands() {
        let mut s = Vec::new();
        assert_eq!(water_level(10.0, 2, [1.0, 2.0].into_iter(), &mut s), 3.5);
        assert_eq!(water_level(10.0, 1, [8.0].into_iter(), &mut s), 5.0);
        assert_eq!(water_level(9.0, 3, std::iter::empty(), &mut s), 3.0);
        assert_eq!(water_level(6.0, 0, [1.0, 4.0, 4.0].into_iter(), &mut s), 2.5);
        assert_eq!(water_level(20.0, 0, [1.0, 4.0].into_iter(), &mut s), 4.0);
    }
}

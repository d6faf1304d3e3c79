//! Weighted random distribution of virtual packets to actual flows (paper 003 Sec. 5.1, Eq. 2).

use rand::Rng as _;

const EPS: f64 = 1e-9;

/// Eq. 2: in round `j`, actual flow `i` of the eligible set `K` gets the next virtual new packet
/// with probability `(V_ij − Δ_i) / Σ_{k∈K} (V_kj − Δ_k)`, where `V_ij = w_i·j` and `Δ_i` counts
/// the virtual new packets flow `i` has been given.
///
/// A new round starts when every flow has had its share (`V_kj = Δ_k` for all k). Trap P3-8:
/// when the eligible flows have had theirs but an ineligible one has not, the denominator is 0
/// and the thesis's rule never fires; we then advance `j` too, so the unused share goes to the
/// eligible flows (Sec. 5.3–5.4). Old packets, which do not count in Δ, use the same
/// probabilities and the same fallback. Negative deficits (a flow given more than `V_ij`,
/// possible with non-integer weights) count as 0.
#[derive(Clone, Debug)]
pub struct Distributor {
    w: Vec<f64>,
    delta: Vec<u64>,
    j: u64,
    /// Rounds completed by the thesis's rule (every flow had its share).
    pub rounds: u64,
    /// Rounds advanced by the P3-8 fallback (eligible flows done, some ineligible flow not).
    pub fallbacks: u64,
}

/// Weights must be positive and finite.
pub fn check_weights(w: &[f64]) -> Result<(), String> {
    if w.is_empty() {
        return Err("expected at least one weight".into());
    }
    for (i, &x) in w.iter().enumerate() {
        if !(x.is_finite() && x > 0.0) {
            return Err(format!("weight {i} must be a positive number, got {x}"));
        }
    }
    Ok(())
}

impl Distributor {
    pub fn new(w: &[f64]) -> Result<Distributor, String> {
        check_weights(w)?;
        Ok(Distributor { w: w.to_vec(), delta: vec![0; w.len()], j: 1, rounds: 0, fallbacks: 0 })
    }

    /// New weights take effect at once: the rounds restart from zero.
    pub fn set_weights(&mut self, w: &[f64]) -> Result<(), String> {
        check_weights(w)?;
        if w.len() != self.w.len() {
            return Err(format!("expected {} weights, got {}", self.w.len(), w.len()));
        }
        self.w = w.to_vec();
        self.delta.iter_mut().for_each(|d| *d = 0);
        self.j = 1;
        Ok(())
    }

    pub fn weights(&self) -> &[f64] {
        &self.w
    }

    /// Current round `j`.
    pub fn round(&self) -> u64 {
        self.j
    }

    /// Δ_i: virtual new packets given to flow `i` since the rounds (re)started.
    pub fn given(&self, i: usize) -> u64 {
        self.delta[i]
    }

    /// `V_ij − Δ_i`, floored at 0.
    pub fn deficit(&self, i: usize) -> f64 {
        (self.w[i] * self.j as f64 - self.delta[i] as f64).max(0.0)
    }

    fn eligible_sum(&self, k: &[usize]) -> f64 {
        k.iter().map(|&i| self.deficit(i)).sum()
    }

    /// Make the denominator of Eq. 2 positive for a non-empty `k` (P3-8 fallback).
    fn ensure_positive(&mut self, k: &[usize]) {
        if k.is_empty() {
            return;
        }
        while self.eligible_sum(k) <= EPS {
            self.j += 1;
            self.fallbacks += 1;
        }
    }

    /// Eq. 2's probabilities over `k` (same order), after any round advance. Empty for empty `k`.
    pub fn probabilities(&mut self, k: &[usize]) -> Vec<f64> {
        self.ensure_positive(k);
        let s = self.eligible_sum(k);
        k.iter().map(|&i| self.deficit(i) / s).collect()
    }

    /// Draw a flow from `k` by Eq. 2 (`None` only for an empty `k`).
    pub fn select(&mut self, k: &[usize], rng: &mut crate::rng::Rng) -> Option<usize> {
        if k.is_empty() {
            return None;
        }
        self.ensure_positive(k);
        let s = self.eligible_sum(k);
        let mut x = rng.gen::<f64>() * s;
        for &i in k {
            let d = self.deficit(i);
            if x < d {
                return Some(i);
            }
            x -= d;
        }
        // Rounding: the last flow with a positive deficit.
        k.iter().rev().copied().find(|&i| self.deficit(i) > 0.0)
    }

    /// Flow `i` was given a virtual new packet: Δ_i += 1; a new round once every flow had its share.
    pub fn assign(&mut self, i: usize) {
        self.delta[i] += 1;
        let j = self.j as f64;
        if self.w.iter().zip(&self.delta).all(|(&w, &d)| d as f64 >= w * j - EPS) {
            self.j += 1;
            self.rounds += 1;
        }
    }
}

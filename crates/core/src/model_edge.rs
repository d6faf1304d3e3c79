//! Paper 000's edge-gateway throughput model (Wei, Tsao, Lin, App. B and C): one TCP flow shaped at
//! an edge gateway to `W_w` packets per WAN round trip `D_w`, under deterministic (periodic) loss
//! of one packet in `1/p`.
//!
//! Throughput `T` is in **packets per D_w**; goodput in bytes/s is `T·MSS/D_w` ([`goodput_bps`]).
//!
//! The printed formulas contain errors; this module uses the corrected forms of
//! `docs/experiments.md` (P0-M4…M6 and the traps P0-4 to P0-8):
//! - case 1 (P0-4): the cycle equation `1/p = 3W̄_c²/8` gives `W̄_c = √(8/(3p))` (printed
//!   `√(16/(3p))`); `T = 1/(√(2p/3) + p)` is consistent with the corrected value.
//! - TCR outside case 1 (P0-5, P0-7): `T = 1/(1/W_w + p·W_w/8 + p)` (printed `… + W_w/8 + p`,
//!   dimensionally wrong).
//! - The regime boundaries (Claims 1–3) are the paper's arranged inequalities; they are
//!   approximate (P0-6), and `T(p)` of PFQ jumps upward at the case 2/3 boundary. Each case
//!   formula is valid inside its own region only.
//!
//! PostACK behaves like PFQ here (the paper: "the same degree of TCP-friendliness").

use serde::Serialize;

/// Window growth in the curved phase (App. B, P0-M4): starting from cwnd `w ≥ W_w`, sending
/// `W_w` packets per D_w and growing cwnd by one per full window ACKed, the cwnd after `x`
/// loss-free D_w's. `floor = false` drops the floor (the continuous form the App. C derivations
/// use).
pub fn g(w: f64, x: f64, ww: f64, floor: bool) -> f64 {
    let inc = (1.0 - 2.0 * w + ((2.0 * w - 1.0).powi(2) + 8.0 * x * ww).sqrt()) / 2.0;
    w + if floor { inc.floor() } else { inc }
}

/// The steady-state regime under periodic loss (Claims 1–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// `p ≥ 8/(3W_w²)`: E\[W_c\] ≤ W_w (Fig. 15a).
    Case1,
    /// `8/(3W_w²) > p ≥ 2/(3W_w² − W_w)`: W_w < E\[W_c\] ≤ 2W_w (Fig. 15b).
    Case2,
    /// `p < 2/(3W_w² − W_w)`: E\[W_c\] > 2W_w (Fig. 15c).
    Case3,
}

/// The regime of loss rate `p` for a pipe of `ww` packets (the paper's arranged inequalities).
pub fn regime(p: f64, ww: f64) -> Regime {
    if p >= 8.0 / (3.0 * ww * ww) {
        Regime::Case1
    } else if p >= 2.0 / (3.0 * ww * ww - ww) {
        Regime::Case2
    } else {
        Regime::Case3
    }
}

/// Case 1 (PFQ and TCR alike): `T = 1/(√(2p/3) + p)` packets per D_w.
pub fn t_case1(p: f64) -> f64 {
    1.0 / ((2.0 * p / 3.0).sqrt() + p)
}

/// PFQ case 2: the closed forms of App. C. Returns `(w, x, T)`: the cwnd at the loss, the cycle
/// length in D_w (linear + curved + draining phases) and `T = (1/p)/(x + 1)`.
pub fn pfq_case2(p: f64, ww: f64) -> (f64, f64, f64) {
    let w = (-2.0 + (4.0 + 24.0 / p + 12.0 * ww).sqrt()) / 3.0;
    let x = ww / 2.0 + 1.5 + 4.0 / (3.0 * p * ww) + 7.0 / (9.0 * ww)
        - (7.0 / (9.0 * ww) + 1.0 / 3.0) * (1.0 + 3.0 * ww + 6.0 / p).sqrt();
    (w, x, (1.0 / p) / (x + 1.0))
}

/// PFQ case 3: `T = 1/(1/W_w + p)` (the pipe stays full except for one retransmission round).
pub fn pfq_case3(p: f64, ww: f64) -> f64 {
    1.0 / (1.0 / ww + p)
}

/// TCR outside case 1 (corrected, P0-5): `T = 1/(1/W_w + p·W_w/8 + p)`.
pub fn tcr_window_limited(p: f64, ww: f64) -> f64 {
    1.0 / (1.0 / ww + p * ww / 8.0 + p)
}

/// PFQ (and PostACK) throughput in packets per D_w, by regime.
pub fn pfq(p: f64, ww: f64) -> f64 {
    match regime(p, ww) {
        Regime::Case1 => t_case1(p),
        Regime::Case2 => pfq_case2(p, ww).2,
        Regime::Case3 => pfq_case3(p, ww),
    }
}

/// TCR throughput in packets per D_w, by regime.
pub fn tcr(p: f64, ww: f64) -> f64 {
    match regime(p, ww) {
        Regime::Case1 => t_case1(p),
        _ => tcr_window_limited(p, ww),
    }
}

/// Goodput in bytes/s of `t` packets per D_w of `mss` bytes.
pub fn goodput_bps(t: f64, mss: f64, dw_s: f64) -> f64 {
    t * mss * 8.0 / dw_s
}

/// One evaluated point, for reports and `ackshape model edge --json`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EdgePoint {
    pub p: f64,
    pub ww: f64,
    pub regime: Regime,
    /// Packets per D_w.
    pub pfq: f64,
    pub tcr: f64,
}

/// Evaluate both schemes at `(p, ww)`.
pub fn point(p: f64, ww: f64) -> EdgePoint {
    EdgePoint { p, ww, regime: regime(p, ww), pfq: pfq(p, ww), tcr: tcr(p, ww) }
}

/// `W_w` of a flow shaped to `rate_bps` over a round trip of `dw_s` with `mss`-byte packets (Eq. 4).
pub fn ww(rate_bps: f64, dw_s: f64, mss: f64) -> f64 {
    rate_bps / 8.0 * dw_s / mss
}

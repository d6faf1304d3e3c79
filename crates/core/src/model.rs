//! Analytic TCP throughput models.
//!
//! Rates are in packets per second; multiply by the segment size for bytes.
//! - Mathis et al. 1997: `B = (1/RTT)·sqrt(3/(2b·p))`.
//! - Padhye et al. 1998 ("Modeling TCP throughput"), the full model of their Eq. (31)/(32),
//!   with fast retransmit, timeouts with exponential backoff and a receiver window cap.

/// Inputs shared by the models.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ModelInput {
    /// Loss event probability (0 < p < 1).
    pub p: f64,
    /// Round-trip time in seconds.
    pub rtt_s: f64,
    /// Segments acknowledged per ACK (b; 2 with delayed ACKs).
    pub b: f64,
    /// Base timeout T0 in seconds (Padhye only).
    pub t0_s: f64,
    /// Maximum window in segments (receiver window cap; Padhye only). `f64::INFINITY` for none.
    pub wmax: f64,
}

/// Mathis "square-root" model, packets/s.
pub fn mathis(i: &ModelInput) -> f64 {
    (1.0 / i.rtt_s) * (3.0 / (2.0 * i.b * i.p)).sqrt()
}

fn q_hat(p: f64, w: f64) -> f64 {
    let q = 1.0 - p;
    let num = (1.0 - q.powi(3)) * (1.0 + q.powi(3) * (1.0 - q.powf(w - 3.0)));
    let den = 1.0 - q.powf(w);
    (num / den).min(1.0)
}

fn f_backoff(p: f64) -> f64 {
    1.0 + p + 2.0 * p.powi(2) + 4.0 * p.powi(3) + 8.0 * p.powi(4) + 16.0 * p.powi(5) + 32.0 * p.powi(6)
}

/// Padhye full model, packets/s.
pub fn padhye(i: &ModelInput) -> f64 {
    let (p, b, rtt, t0) = (i.p, i.b, i.rtt_s, i.t0_s);
    let q = 1.0 - p;
    let a = (2.0 + b) / (3.0 * b);
    let ew = a + (8.0 * q / (3.0 * b * p) + a * a).sqrt();
    if ew < i.wmax {
        let c = (2.0 + b) / 6.0;
        let ex = c + (2.0 * b * q / (3.0 * p) + c * c).sqrt();
        let qh = q_hat(p, ew);
        (q / p + ew + qh / q) / (rtt * (ex + 1.0) + qh * t0 * f_backoff(p) / q)
    } else {
        let w = i.wmax;
        let qh = q_hat(p, w);
        (q / p + w + qh / q) / (rtt * (b / 8.0 * w + q / (p * w) + 2.0) + qh * t0 * f_backoff(p) / q)
    }
}

/// Padhye's approximate closed form (their Eq. 33), packets/s.
pub fn padhye_approx(i: &ModelInput) -> f64 {
    let (p, b, rtt, t0) = (i.p, i.b, i.rtt_s, i.t0_s);
    let den =
        rtt * (2.0 * b * p / 3.0).sqrt() + t0 * (1f64).min(3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    (i.wmax / rtt).min(1.0 / den)
}

#[cfg(test)]
mod tests {
    use super::*;
    fn inp(p: f64) -> ModelInput {
        ModelInput { p, rtt_s: 0.1, b: 2.0, t0_s: 1.0, wmax: f64::INFINITY }
    }
    #[test]
    fn padhye_close_to_approx_and_below_mathis() {
        for p in [0.001, 0.005, 0.01, 0.02, 0.05] {
            let full = padhye(&inp(p));
            let approx = padhye_approx(&inp(p));
            let m = mathis(&inp(p));
            assert!(full < m * 1.1, "p={p} full={full} mathis={m}");
            assert!((full / approx - 1.0).abs() < 0.35, "p={p} full={full} approx={approx}");
        }
    }
    #[test]
    fn window_cap_binds() {
        let mut i = inp(0.0001);
        i.wmax = 10.0;
        assert!(padhye(&i) <= 10.0 / 0.1 * 1.05);
    }
}

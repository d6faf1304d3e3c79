//! Paper 002's analytic model of steady-state **two-way** TCP throughput on an asymmetric link
//! (Park et al. 2010, §4, Eq. 1–15, Appendix A), solved for both directions.
//!
//! One bulk TCP flow per direction; each direction's throughput is the root in `(0, μ)` of a
//! quadratic (Eq. 14), obtained by combining Padhye's model (Eq. 1–4) with the round-trip time
//! (Eq. 5), the queueing delay of data behind the *opposite* direction's ACKs (Eq. 6) and the
//! packet conservation of the window (Eq. 7–12). Corrections applied (docs/experiments.md, P2-4
//! to P2-8): `min(1, 3√(3bp/8))` in C₂ (Eq. 1/4); Padhye's unconstrained mean window
//! `E[W] = (2+b)/(3b) + √(8(1−p)/(3bp) + ((2+b)/(3b))²)` (Eq. 2); `avgwnd = maxwnd` when
//! `maxwnd ≤ E[W]`, else `E[W]` (Eq. 8); Eq. 13 as reconstructed in P2-M8.
//!
//! Download (upload: swap D↔U and d↔u):
//! - `X₁ = τ_D + τ_U + q_d^ack + A/μ_U`, `X₂ = μ_D·X₁ + A·n_{q,u}^ack` (Eq. 15);
//! - window-limited (`maxwnd_d ≤ E[W]`): `X₁λ² − (D(maxwnd_d+1) + X₂)λ + μ_D·maxwnd_d·D = 0`;
//! - otherwise: `C₁X₁λ² − (C₁(D(E[W]+1) + X₂) + μ_D·C₂)λ + μ_D·D = 0` (Eq. 14).
//!
//! The inputs `q^ack` (queueing delay of a direction's ACKs) and `n^ack` (ACKs of the opposite
//! direction queued in front of a direction's data) are what a queue discipline controls; the
//! model takes them as given (Theorem 1: throughput rises as both fall).
//!
//! **Units**: rates in bytes/s, times in seconds, sizes in bytes, windows and queue contents in
//! packets, probabilities in [0, 1). `p = 0` means no random loss: `E[W] = ∞`, so the flow is
//! window-limited.
//!
//! **What it is not.** Not a closed loop: it does not derive `q^ack`, `n^ack` from a discipline
//! (the paper does not either); the paper states no model outputs, so it is checked against its
//! own lemmas and limiting cases, not against printed numbers.

/// One logical link (the paper's Fig. 4): rate, one-way delay and loss.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkParams {
    /// μ: transfer rate, bytes/s.
    pub rate_bytes_per_s: f64,
    /// τ: one-way delay of the logical link (home net + gateway + Internet), s.
    pub delay_s: f64,
    /// p: packet loss probability of the logical link.
    pub loss: f64,
}

/// Model inputs. Field names say the direction: `down` = logical downlink D (carries download
/// data and upload ACKs), `up` = logical uplink U.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AfvqModelInput {
    pub down: LinkParams,
    pub up: LinkParams,
    /// D: data packet size, bytes.
    pub data_bytes: f64,
    /// A: ACK packet size, bytes.
    pub ack_bytes: f64,
    /// b: data packets per ACK (2 with delayed ACKs).
    pub b: f64,
    /// T₀: initial retransmission timeout, s.
    pub t0_s: f64,
    /// maxwnd_d: download's maximum window, packets.
    pub maxwnd_down: f64,
    /// maxwnd_u: upload's maximum window, packets.
    pub maxwnd_up: f64,
    /// q_d^ack: queueing delay of the download's ACKs in the uplink output queue, s.
    pub q_ack_down_s: f64,
    /// q_u^ack: queueing delay of the upload's ACKs in the downlink output queue, s.
    pub q_ack_up_s: f64,
    /// n_{q,u}^ack: upload's ACKs queued in the downlink output queue (ahead of download data).
    pub n_ack_in_down_queue: f64,
    /// n_{q,d}^ack: download's ACKs queued in the uplink output queue (ahead of upload data).
    pub n_ack_in_up_queue: f64,
}

/// The solution for one direction.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DirectionSolution {
    /// λ: steady-state throughput of data packets (size D), bytes/s.
    pub throughput_bytes_per_s: f64,
    /// λ/μ of the link carrying this direction's data.
    pub utilization: f64,
    /// True in the window-limited case (`maxwnd ≤ E[W]`).
    pub window_limited: bool,
    /// `E[W]`: unconstrained mean window (Eq. 2, Padhye's form), packets; ∞ when p = 0.
    pub e_wnd_unconstrained: f64,
    /// avgwnd (Eq. 8, corrected), packets.
    pub avg_wnd: f64,
    /// RTT at the solution (Eq. 5 with Eq. 6 and 12), s.
    pub rtt_s: f64,
    /// n_q^data at the solution (Eq. 12), packets (negative means the model's queue is empty:
    /// the window does not fill the pipe).
    pub data_queued_pkts: f64,
    /// Coefficients `(a, b, c)` of `f(λ) = a·λ² − b·λ + c` (Eq. 14).
    pub quadratic: (f64, f64, f64),
}

/// Both directions and the paper's aggregate metrics (§6.2).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AfvqModelOutput {
    pub download: DirectionSolution,
    pub upload: DirectionSolution,
    /// U_d + U_u (ideal 2).
    pub aggregated_utilization: f64,
    /// ((U_d − U_u)/2)²: population variance of {U_d, U_u}.
    pub utilization_variance_population: f64,
    /// (U_d − U_u)²/2: sample variance of {U_d, U_u}.
    pub utilization_variance_sample: f64,
}

/// Invalid model input.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AfvqModelError {
    #[error("`{0}` must be a finite number > 0")]
    NotPositive(&'static str),
    #[error("`{0}` must be a finite number >= 0")]
    Negative(&'static str),
    #[error("loss probability `{0}` must be in [0, 1)")]
    Loss(&'static str),
    #[error("b must be >= 1")]
    B,
    #[error("no root of Eq. 14 in (0, mu) for the {0} direction (f(0) = {1}, f(mu) = {2})")]
    NoRoot(&'static str, f64, f64),
}

/// Inputs of one direction, as the paper writes the download (Eq. 14–15).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirectionInput {
    /// μ of the link carrying the data, bytes/s.
    pub mu_data: f64,
    /// μ of the link carrying the ACKs, bytes/s.
    pub mu_ack: f64,
    /// τ of the data link plus τ of the ACK link, s.
    pub tau_sum_s: f64,
    /// p of the data link.
    pub loss: f64,
    pub maxwnd: f64,
    pub data_bytes: f64,
    pub ack_bytes: f64,
    pub b: f64,
    pub t0_s: f64,
    /// q^ack of this direction's ACKs, s.
    pub q_ack_s: f64,
    /// ACKs of the opposite direction queued ahead of this direction's data.
    pub n_ack_opposite: f64,
}

/// Padhye's unconstrained mean window `E[W]` (corrected Eq. 2); ∞ for p = 0.
pub fn e_wnd_unconstrained(p: f64, b: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let k = (2.0 + b) / (3.0 * b);
    k + (8.0 * (1.0 - p) / (3.0 * b * p) + k * k).sqrt()
}

/// C₁ = √(2bp/3) (Eq. 4).
pub fn c1(p: f64, b: f64) -> f64 {
    (2.0 * b * p / 3.0).sqrt()
}

/// C₂ = T₀·min(1, 3√(3bp/8))·p·(1 + 32p²) (Eq. 4).
pub fn c2(p: f64, b: f64, t0: f64) -> f64 {
    t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p)
}

/// Solves one direction (the download form of Eq. 14).
pub fn solve_direction(d: &DirectionInput, which: &'static str) -> Result<DirectionSolution, AfvqModelError> {
    let e_w = e_wnd_unconstrained(d.loss, d.b);
    let x1 = d.tau_sum_s + d.q_ack_s + d.ack_bytes / d.mu_ack;
    let x2 = d.mu_data * x1 + d.ack_bytes * d.n_ack_opposite;
    let dd = d.data_bytes;
    let window_limited = d.maxwnd <= e_w;
    let (a, bq, c) = if window_limited {
        (x1, dd * (d.maxwnd + 1.0) + x2, d.mu_data * d.maxwnd * dd)
    } else {
        let c1 = c1(d.loss, d.b);
        let c2 = c2(d.loss, d.b, d.t0_s);
        (c1 * x1, c1 * (dd * (e_w + 1.0) + x2) + d.mu_data * c2, d.mu_data * dd)
    };
    let f = |l: f64| a * l * l - bq * l + c;
    let (f0, fmu) = (f(0.0), f(d.mu_data));
    if !(f0 > 0.0 && fmu < 0.0) {
        return Err(AfvqModelError::NoRoot(which, f0, fmu));
    }
    // f(0) > 0 > f(mu) and a >= 0: the smaller root, in the cancellation-free form.
    let disc = (bq * bq - 4.0 * a * c).max(0.0);
    let lambda = 2.0 * c / (bq + disc.sqrt());
    let avg_wnd = if window_limited { d.maxwnd } else { e_w };
    let data_queued = avg_wnd - lambda / dd * x1;
    let rtt =
        dd / d.mu_data * (avg_wnd + 1.0) + d.ack_bytes * d.n_ack_opposite / d.mu_data + x1 * (1.0 - lambda / d.mu_data);
    Ok(DirectionSolution {
        throughput_bytes_per_s: lambda,
        utilization: lambda / d.mu_data,
        window_limited,
        e_wnd_unconstrained: e_w,
        avg_wnd,
        rtt_s: rtt,
        data_queued_pkts: data_queued,
        quadratic: (a, bq, c),
    })
}

fn pos(v: f64, n: &'static str) -> Result<(), AfvqModelError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(AfvqModelError::NotPositive(n))
    }
}
fn nonneg(v: f64, n: &'static str) -> Result<(), AfvqModelError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(AfvqModelError::Negative(n))
    }
}

impl AfvqModelInput {
    /// The download direction's inputs.
    pub fn download(&self) -> DirectionInput {
        DirectionInput {
            mu_data: self.down.rate_bytes_per_s,
            mu_ack: self.up.rate_bytes_per_s,
            tau_sum_s: self.down.delay_s + self.up.delay_s,
            loss: self.down.loss,
            maxwnd: self.maxwnd_down,
            data_bytes: self.data_bytes,
            ack_bytes: self.ack_bytes,
            b: self.b,
            t0_s: self.t0_s,
            q_ack_s: self.q_ack_down_s,
            n_ack_opposite: self.n_ack_in_down_queue,
        }
    }
    /// The upload direction's inputs (D↔U, d↔u swapped).
    pub fn upload(&self) -> DirectionInput {
        DirectionInput {
            mu_data: self.up.rate_bytes_per_s,
            mu_ack: self.down.rate_bytes_per_s,
            tau_sum_s: self.down.delay_s + self.up.delay_s,
            loss: self.up.loss,
            maxwnd: self.maxwnd_up,
            data_bytes: self.data_bytes,
            ack_bytes: self.ack_bytes,
            b: self.b,
            t0_s: self.t0_s,
            q_ack_s: self.q_ack_up_s,
            n_ack_opposite: self.n_ack_in_up_queue,
        }
    }

    fn validate(&self) -> Result<(), AfvqModelError> {
        pos(self.down.rate_bytes_per_s, "down.rate_bytes_per_s")?;
        pos(self.up.rate_bytes_per_s, "up.rate_bytes_per_s")?;
        nonneg(self.down.delay_s, "down.delay_s")?;
        nonneg(self.up.delay_s, "up.delay_s")?;
        for (p, n) in [(self.down.loss, "down.loss"), (self.up.loss, "up.loss")] {
            if !(p.is_finite() && (0.0..1.0).contains(&p)) {
                return Err(AfvqModelError::Loss(n));
            }
        }
        pos(self.data_bytes, "data_bytes")?;
        pos(self.ack_bytes, "ack_bytes")?;
        if !(self.b.is_finite() && self.b >= 1.0) {
            return Err(AfvqModelError::B);
        }
        nonneg(self.t0_s, "t0_s")?;
        pos(self.maxwnd_down, "maxwnd_down")?;
        pos(self.maxwnd_up, "maxwnd_up")?;
        nonneg(self.q_ack_down_s, "q_ack_down_s")?;
        nonneg(self.q_ack_up_s, "q_ack_up_s")?;
        nonneg(self.n_ack_in_down_queue, "n_ack_in_down_queue")?;
        nonneg(self.n_ack_in_up_queue, "n_ack_in_up_queue")
    }
}

/// Solves Eq. 14 for both directions. Pure; errors on invalid input or when Lemma 1's bracket
/// `f(0) > 0 > f(μ)` does not hold.
pub fn solve(i: &AfvqModelInput) -> Result<AfvqModelOutput, AfvqModelError> {
    i.validate()?;
    let download = solve_direction(&i.download(), "download")?;
    let upload = solve_direction(&i.upload(), "upload")?;
    let (ud, uu) = (download.utilization, upload.utilization);
    let half = (ud - uu) / 2.0;
    Ok(AfvqModelOutput {
        download,
        upload,
        aggregated_utilization: ud + uu,
        utilization_variance_population: half * half,
        utilization_variance_sample: (ud - uu) * (ud - uu) / 2.0,
    })
}

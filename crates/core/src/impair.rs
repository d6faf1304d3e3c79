//! WAN-emulator impairments: loss models and delay/jitter models.
//!
//! Shared by the simulator's links and the live `wanem` so that both drop and delay
//! packets by the same rules. Each model owns its random stream (seeded by the caller).

use crate::rng::Rng;
use crate::time::{Dur, Time};
use rand::Rng as _;
use rand_distr::{Distribution, Normal};

/// How packets are lost.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LossSpec {
    /// No loss.
    #[default]
    None,
    /// Each packet independently with probability `p`.
    Bernoulli { p: f64 },
    /// Every `every`-th packet (the `every`-th, `2·every`-th, …), starting after `offset` packets.
    Periodic {
        every: u64,
        #[serde(default)]
        offset: u64,
    },
    /// Two-state Gilbert-Elliott chain: per packet, Good→Bad with `p_gb`, Bad→Good with `p_bg`;
    /// loss probability `loss_good` in Good and `loss_bad` in Bad.
    GilbertElliott {
        p_gb: f64,
        p_bg: f64,
        #[serde(default)]
        loss_good: f64,
        #[serde(default = "one")]
        loss_bad: f64,
    },
    /// Drop exactly the packets with these 1-based indices (scripted tests).
    Script { drop: Vec<u64> },
}

fn one() -> f64 {
    1.0
}

impl LossSpec {
    /// Check parameters; returns a description of what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} must be a probability in [0, 1], got {v}"))
            }
        };
        match self {
            LossSpec::None => Ok(()),
            LossSpec::Bernoulli { p } => prob("p", *p),
            LossSpec::Periodic { every, .. } => {
                if *every == 0 {
                    Err("every must be ≥ 1".into())
                } else {
                    Ok(())
                }
            }
            LossSpec::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                prob("p_gb", *p_gb)?;
                prob("p_bg", *p_bg)?;
                prob("loss_good", *loss_good)?;
                prob("loss_bad", *loss_bad)
            }
            LossSpec::Script { .. } => Ok(()),
        }
    }
}

/// A running loss model.
#[derive(Clone, Debug)]
pub struct Loss {
    spec: LossSpec,
    rng: Rng,
    count: u64,
    bad: bool,
}

impl Loss {
    pub fn new(spec: LossSpec, rng: Rng) -> Loss {
        Loss { spec, rng, count: 0, bad: false }
    }
    /// Decide for the next packet: `true` = drop it.
    #[inline]
    pub fn drop_next(&mut self) -> bool {
        self.count += 1;
        if let LossSpec::None = self.spec {
            return false;
        }
        match &self.spec {
            LossSpec::None => false,
            LossSpec::Bernoulli { p } => *p > 0.0 && self.rng.gen::<f64>() < *p,
            LossSpec::Periodic { every, offset } => {
                self.count > *offset && (self.count - offset).is_multiple_of(*every)
            }
            LossSpec::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
                let flip = self.rng.gen::<f64>();
                if self.bad {
                    if flip < *p_bg {
                        self.bad = false;
                    }
                } else if flip < *p_gb {
                    self.bad = true;
                }
                let p = if self.bad { *loss_bad } else { *loss_good };
                p > 0.0 && self.rng.gen::<f64>() < p
            }
            LossSpec::Script { drop } => drop.contains(&self.count),
        }
    }
    /// Packets decided so far.
    pub fn decided(&self) -> u64 {
        self.count
    }
}

/// Delay variation added on top of the fixed propagation delay.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum JitterSpec {
    #[default]
    None,
    /// Uniform in [0, max].
    Uniform { max_ns: u64 },
    /// Normal with this standard deviation, truncated to [0, 4σ].
    Normal { sigma_ns: u64 },
}

/// A running delay model: fixed delay plus jitter. Unless `reorder` is set, a packet
/// never leaves before the one sent ahead of it (FIFO delay line, like wan-emu).
#[derive(Clone, Debug)]
pub struct Delay {
    base: Dur,
    jitter: JitterSpec,
    reorder: bool,
    rng: Rng,
    last_exit: Time,
}

impl Delay {
    pub fn new(base: Dur, jitter: JitterSpec, reorder: bool, rng: Rng) -> Delay {
        Delay { base, jitter, reorder, rng, last_exit: Time::ZERO }
    }
    pub fn base(&self) -> Dur {
        self.base
    }
    /// When a packet entering the delay line at `now` leaves it.
    pub fn exit_time(&mut self, now: Time) -> Time {
        let extra = match self.jitter {
            JitterSpec::None => 0,
            JitterSpec::Uniform { max_ns } => {
                if max_ns == 0 {
                    0
                } else {
                    self.rng.gen_range(0..=max_ns)
                }
            }
            JitterSpec::Normal { sigma_ns } => {
                if sigma_ns == 0 {
                    0
                } else {
                    let n = Normal::new(0.0, sigma_ns as f64).expect("sigma > 0");
                    let v: f64 = n.sample(&mut self.rng).abs();
                    v.min(4.0 * sigma_ns as f64) as u64
                }
            }
        };
        let mut t = now + self.base + Dur(extra);
        if !self.reorder && t < self.last_exit {
            t = self.last_exit;
        }
        if t > self.last_exit {
            self.last_exit = t;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn bernoulli_rate() {
        let mut l = Loss::new(LossSpec::Bernoulli { p: 0.01 }, stream(1, "t", 0));
        let n = 200_000;
        let d = (0..n).filter(|_| l.drop_next()).count();
        let r = d as f64 / n as f64;
        assert!((r - 0.01).abs() < 0.001, "rate {r}");
    }

    #[test]
    fn periodic_exact() {
        let mut l = Loss::new(LossSpec::Periodic { every: 10, offset: 0 }, stream(1, "t", 0));
        let drops: Vec<u64> = (1..=35).filter(|_| l.drop_next()).collect();
        assert_eq!(drops.len(), 3);
    }

    #[test]
    fn gilbert_elliott_mean() {
        // stationary P(bad) = p_gb / (p_gb + p_bg) = 0.01/0.11
        let mut l = Loss::new(
            LossSpec::GilbertElliott { p_gb: 0.01, p_bg: 0.1, loss_good: 0.0, loss_bad: 1.0 },
            stream(3, "ge", 0),
        );
        let n = 400_000;
        let d = (0..n).filter(|_| l.drop_next()).count() as f64 / n as f64;
        assert!((d - 0.0909).abs() < 0.01, "{d}");
    }

    #[test]
    fn jitter_keeps_order() {
        let mut d =
            Delay::new(Dur::from_millis(10), JitterSpec::Uniform { max_ns: 5_000_000 }, false, stream(1, "j", 0));
        let mut last = Time::ZERO;
        for i in 0..10_000u64 {
            let t = d.exit_time(Time(i * 100_000));
            assert!(t >= last);
            assert!(t >= Time(i * 100_000) + Dur::from_millis(10));
            last = t;
        }
    }
}

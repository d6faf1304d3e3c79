//! [`AsymDiscSpec`]: the serde configuration that scenario and policy files use to pick a
//! discipline per direction, and [`AsymDiscSpec::build`].
//!
//! Internally tagged by `kind` (kebab-case), unknown keys rejected. Plain numbers: sizes in
//! packets (`*_pkts`), durations in milliseconds (`period_ms`), rates in bit/s (`*_bps`).
//!
//! ```toml
//! [uplink.queue]
//! kind = "afvq"
//! s_max = 5
//! n_thr = 36
//! modifier = "sampled"
//! period_ms = 1000
//! ```

use super::{
    AckFilterCake, AckFilterClassic, AcksFirst, Acq, AcqConfig, Afvq, AfvqConfig, AsymQueue, CakeMode, Fifo,
    SizeModifier, MIN_QUANTUM,
};
use crate::queue::{Limit, QueueDisc};
use crate::rng::Rng;
use crate::time::Dur;

const fn d_limit() -> usize {
    100
}
const fn d_s_max() -> usize {
    5
}
const fn d_n_thr() -> usize {
    36
}
const fn d_afvq_period_ms() -> u64 {
    1000
}
const fn d_quantum() -> u32 {
    1500
}
const fn d_acq_period_ms() -> u64 {
    200
}
const fn d_acq_step() -> f64 {
    0.05
}
const fn d_acq_w0() -> f64 {
    0.5
}
const fn d_acq_round() -> u32 {
    3000
}

/// AFVQ's size modifier in spec files: `"continuous"` or `"sampled"` (with `period_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeModifierSpec {
    /// Recompute the ACK-queue size at every enqueue.
    #[default]
    Continuous,
    /// Recompute it each time `now` crosses a multiple of `period_ms`.
    Sampled,
}

/// Which discipline an output queue runs, with its parameters. Every field has a default
/// except ACQ's two link rates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AsymDiscSpec {
    /// FIFO drop-tail ([`Fifo`]).
    Fifo {
        /// Queue size in packets. Default 100 (paper 002 §2.1 uses 100 and 200).
        #[serde(default = "d_limit")]
        limit_pkts: usize,
    },
    /// Strict priority for pure ACKs ([`AcksFirst`]).
    AcksFirst {
        /// Pure-ACK FIFO size in packets. Default 100.
        #[serde(default = "d_limit")]
        ack_limit_pkts: usize,
        /// FIFO size for everything else, in packets. Default 100.
        #[serde(default = "d_limit")]
        data_limit_pkts: usize,
    },
    /// Paper 002's classic ACK filter ([`AckFilterClassic`]).
    AckFilterClassic {
        /// FIFO size in packets. Default 100.
        #[serde(default = "d_limit")]
        limit_pkts: usize,
        /// The newer ACK takes the older one's place (true) or joins the tail (false, default).
        #[serde(default)]
        keep_position: bool,
    },
    /// CAKE-safe ACK filter ([`AckFilterCake`]).
    AckFilterCake {
        /// FIFO size in packets. Default 100.
        #[serde(default = "d_limit")]
        limit_pkts: usize,
        /// `"conservative"` (default) or `"aggressive"`.
        #[serde(default)]
        mode: CakeMode,
    },
    /// ACQ ([`Acq`]); see its module doc for the assumed parameter values.
    Acq {
        /// Rate of the link this queue feeds, bit/s. Required.
        rate_bps: u64,
        /// Rate of the opposite direction, bit/s. Required.
        reverse_rate_bps: u64,
        /// ACK FIFO size in packets. Default 100.
        #[serde(default = "d_limit")]
        ack_limit_pkts: usize,
        /// Data FIFO size in packets. Default 100.
        #[serde(default = "d_limit")]
        data_limit_pkts: usize,
        /// Weight adaptation period, ms. Default 200 (assumed).
        #[serde(default = "d_acq_period_ms")]
        period_ms: u64,
        /// Weight step per period, in (0, 0.25]. Default 0.05 (assumed).
        #[serde(default = "d_acq_step")]
        step: f64,
        /// Starting ACK-class share, in (0, 1). Default 0.5.
        #[serde(default = "d_acq_w0")]
        initial_ack_weight: f64,
        /// Bytes per DRR round split between the classes. Default 3000.
        #[serde(default = "d_acq_round")]
        round_bytes: u32,
    },
    /// AFVQ ([`Afvq`]).
    Afvq {
        /// Maximum ACK-queue size, packets. Default 5 (paper).
        #[serde(default = "d_s_max")]
        s_max: usize,
        /// Data-queue threshold, packets. Default 36 (paper).
        #[serde(default = "d_n_thr")]
        n_thr: usize,
        /// TCP data FIFO size, packets. Default 100.
        #[serde(default = "d_limit")]
        data_limit_pkts: usize,
        /// Non-TCP FIFO size, packets. Default 100.
        #[serde(default = "d_limit")]
        non_tcp_limit_pkts: usize,
        /// `"continuous"` (default) or `"sampled"`.
        #[serde(default)]
        modifier: SizeModifierSpec,
        /// Sampling period of the `"sampled"` modifier, ms. Default 1000 (the paper's 1 Hz).
        /// Ignored by `"continuous"`.
        #[serde(default = "d_afvq_period_ms")]
        period_ms: u64,
        /// DRR quantum of TCP data and non-TCP (equal shares), bytes. Default 1500.
        #[serde(default = "d_quantum")]
        quantum_bytes: u32,
    },
}

/// A spec whose values cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("queue discipline `{kind}`: `{field}` {problem}")]
pub struct SpecError {
    pub kind: &'static str,
    pub field: &'static str,
    pub problem: &'static str,
}

fn check(ok: bool, kind: &'static str, field: &'static str, problem: &'static str) -> Result<(), SpecError> {
    if ok {
        Ok(())
    } else {
        Err(SpecError { kind, field, problem })
    }
}

impl AsymDiscSpec {
    /// The spec's `kind` string.
    pub fn kind(&self) -> &'static str {
        match self {
            AsymDiscSpec::Fifo { .. } => "fifo",
            AsymDiscSpec::AcksFirst { .. } => "acks-first",
            AsymDiscSpec::AckFilterClassic { .. } => "ack-filter-classic",
            AsymDiscSpec::AckFilterCake { .. } => "ack-filter-cake",
            AsymDiscSpec::Acq { .. } => "acq",
            AsymDiscSpec::Afvq { .. } => "afvq",
        }
    }

    /// Checks values that deserialise but cannot work (zero sizes, bad weights...).
    pub fn validate(&self) -> Result<(), SpecError> {
        let k = self.kind();
        let pos = "must be at least 1";
        match *self {
            AsymDiscSpec::Fifo { limit_pkts } => check(limit_pkts >= 1, k, "limit_pkts", pos),
            AsymDiscSpec::AcksFirst { ack_limit_pkts, data_limit_pkts } => {
                check(ack_limit_pkts >= 1, k, "ack_limit_pkts", pos)?;
                check(data_limit_pkts >= 1, k, "data_limit_pkts", pos)
            }
            AsymDiscSpec::AckFilterClassic { limit_pkts, .. } | AsymDiscSpec::AckFilterCake { limit_pkts, .. } => {
                check(limit_pkts >= 1, k, "limit_pkts", pos)
            }
            AsymDiscSpec::Acq {
                rate_bps,
                reverse_rate_bps,
                ack_limit_pkts,
                data_limit_pkts,
                period_ms,
                step,
                initial_ack_weight,
                round_bytes,
            } => {
                check(rate_bps >= 1, k, "rate_bps", pos)?;
                check(reverse_rate_bps >= 1, k, "reverse_rate_bps", pos)?;
                check(ack_limit_pkts >= 1, k, "ack_limit_pkts", pos)?;
                check(data_limit_pkts >= 1, k, "data_limit_pkts", pos)?;
                check(period_ms >= 1, k, "period_ms", pos)?;
                check(step > 0.0 && step <= 0.25, k, "step", "must be in (0, 0.25]")?;
                check(
                    initial_ack_weight > 0.0 && initial_ack_weight < 1.0,
                    k,
                    "initial_ack_weight",
                    "must be in (0, 1)",
                )?;
                check(round_bytes >= 2 * MIN_QUANTUM, k, "round_bytes", "must be at least 128")
            }
            AsymDiscSpec::Afvq {
                s_max, n_thr, data_limit_pkts, non_tcp_limit_pkts, period_ms, quantum_bytes, ..
            } => {
                check(s_max >= 1, k, "s_max", pos)?;
                check(n_thr >= 1, k, "n_thr", pos)?;
                check(data_limit_pkts >= 1, k, "data_limit_pkts", pos)?;
                check(non_tcp_limit_pkts >= 1, k, "non_tcp_limit_pkts", pos)?;
                check(period_ms >= 1, k, "period_ms", pos)?;
                check(quantum_bytes >= MIN_QUANTUM, k, "quantum_bytes", "must be at least 64")
            }
        }
    }

    /// Builds the discipline, with its statistics. `rng` is used by AFVQ's random drop (give
    /// each queue its own stream, e.g. `rng::stream(seed, "afvq-up", 0)`); the others ignore
    /// it. Out-of-range values are clamped, never a panic: call [`validate`](Self::validate)
    /// first to report them.
    pub fn build_asym(&self, rng: Rng) -> Box<dyn AsymQueue + Send> {
        match *self {
            AsymDiscSpec::Fifo { limit_pkts } => Box::new(Fifo::new(Limit::Packets(limit_pkts))),
            AsymDiscSpec::AcksFirst { ack_limit_pkts, data_limit_pkts } => {
                Box::new(AcksFirst::new(ack_limit_pkts, data_limit_pkts))
            }
            AsymDiscSpec::AckFilterClassic { limit_pkts, keep_position } => {
                Box::new(AckFilterClassic::new(limit_pkts, keep_position))
            }
            AsymDiscSpec::AckFilterCake { limit_pkts, mode } => Box::new(AckFilterCake::new(limit_pkts, mode)),
            AsymDiscSpec::Acq {
                rate_bps,
                reverse_rate_bps,
                ack_limit_pkts,
                data_limit_pkts,
                period_ms,
                step,
                initial_ack_weight,
                round_bytes,
            } => Box::new(Acq::new(AcqConfig {
                ack_limit: ack_limit_pkts,
                data_limit: data_limit_pkts,
                rate_bps,
                reverse_rate_bps,
                period: Dur::from_millis(period_ms.max(1)),
                step,
                initial_ack_weight,
                round_bytes,
            })),
            AsymDiscSpec::Afvq {
                s_max,
                n_thr,
                data_limit_pkts,
                non_tcp_limit_pkts,
                modifier,
                period_ms,
                quantum_bytes,
            } => Box::new(Afvq::new(
                AfvqConfig {
                    s_max,
                    n_thr,
                    data_limit: data_limit_pkts,
                    non_tcp_limit: non_tcp_limit_pkts,
                    modifier: match modifier {
                        SizeModifierSpec::Continuous => SizeModifier::Continuous,
                        SizeModifierSpec::Sampled => {
                            SizeModifier::Sampled { period: Dur::from_millis(period_ms.max(1)) }
                        }
                    },
                    quantum_bytes,
                },
                rng,
            )),
        }
    }

    /// [`build_asym`](Self::build_asym) as a plain [`QueueDisc`].
    pub fn build(&self, rng: Rng) -> Box<dyn QueueDisc + Send> {
        Box::new(AsQueueDisc(self.build_asym(rng)))
    }
}

/// Adapter so that `build` needs no trait-object upcasting (MSRV 1.85).
struct AsQueueDisc(Box<dyn AsymQueue + Send>);

impl QueueDisc for AsQueueDisc {
    #[inline]
    fn enqueue(&mut self, now: crate::time::Time, pkt: ackshape_wire::Packet) -> crate::queue::Enqueue {
        self.0.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: crate::time::Time) -> Option<ackshape_wire::Packet> {
        self.0.dequeue(now)
    }
    fn next_ready(&self, now: crate::time::Time) -> Option<crate::time::Time> {
        self.0.next_ready(now)
    }
    fn len_pkts(&self) -> usize {
        self.0.len_pkts()
    }
    fn len_bytes(&self) -> usize {
        self.0.len_bytes()
    }
    fn asym_stats(&self) -> Option<&super::AsymStats> {
        Some(self.0.stats())
    }
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        self.0.set_hash_key(key)
    }
}

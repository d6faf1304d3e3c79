//! [`QdiscSpec`]: the `qdisc = { kind = … }` table that scenario files (per link direction, per
//! box direction) and gateway policy files (per class) use to pick a queue discipline, and
//! [`QdiscSpec::build`].

use crate::shape::asym::AsymDiscSpec;
use crate::shape::drr::DrrConfig;
use crate::shape::pfq::PfqConfig;
use crate::shape::red::RedConfig;
use crate::shape::tbf::TbfConfig;
use crate::time::Dur;
use crate::units::{DurV, RateV, Size, SizeV};
use serde::{Deserialize, Deserializer};

/// A link direction's queue discipline: `kind = "red"` ([`RedConfig`]), `kind = "drr"`
/// ([`DrrConfig`], per-flow queuing), `kind = "tbf"` ([`TbfConfig`], a token-bucket class rate),
/// `kind = "pfq"` ([`PfqConfig`], per-flow token buckets at rate/n)
/// or one of the
/// asymmetric-link disciplines ([`AsymDiscSpec`]: `fifo`, `acks-first`, `ack-filter-classic`,
/// `ack-filter-cake`, `acq`, `afvq`).
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscSpec {
    Red(RedConfig),
    Drr(DrrConfig),
    Tbf(TbfConfig),
    Pfq(PfqConfig),
    Asym(AsymDiscSpec),
}

impl<'de> Deserialize<'de> for QdiscSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = toml::Table::deserialize(d)?;
        match t.get("kind").and_then(|k| k.as_str()) {
            Some("red") => {
                t.remove("kind");
                toml::Value::Table(t)
                    .try_into()
                    .map(QdiscSpec::Red)
                    .map_err(|e| D::Error::custom(e.message().trim_end()))
            }
            Some("tbf") => {
                /// `{ kind = "tbf", rate = "2Mbit/s", burst = "3000B", limit_pkts = 100 }`
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct TbfV {
                    rate: RateV,
                    burst: Option<SizeV>,
                    limit_pkts: Option<usize>,
                }
                t.remove("kind");
                let v: TbfV = toml::Value::Table(t).try_into().map_err(|e| D::Error::custom(e.message().trim_end()))?;
                let burst_bytes = match v.burst.map(|b| b.0) {
                    None => 3000,
                    Some(Size::Bytes(b)) => b,
                    Some(Size::Packets(p)) => p * 1500,
                };
                Ok(QdiscSpec::Tbf(TbfConfig {
                    rate_bps: v.rate.0 .0,
                    burst_bytes,
                    limit_pkts: v.limit_pkts.unwrap_or(100),
                }))
            }
            Some("pfq") => {
                /// `{ kind = "pfq", rate = "200KB/s", burst = "1500B", flow_limit_pkts = 100, idle_timeout = "1s" }`
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct PfqV {
                    rate: RateV,
                    burst: Option<SizeV>,
                    flow_limit_pkts: Option<usize>,
                    idle_timeout: Option<DurV>,
                }
                t.remove("kind");
                let v: PfqV = toml::Value::Table(t).try_into().map_err(|e| D::Error::custom(e.message().trim_end()))?;
                let burst_bytes = match v.burst.map(|b| b.0) {
                    None => 1500,
                    Some(Size::Bytes(b)) => b,
                    Some(Size::Packets(p)) => p * 1500,
                };
                Ok(QdiscSpec::Pfq(PfqConfig {
                    rate_bps: v.rate.0 .0,
                    burst_bytes,
                    flow_limit_pkts: v.flow_limit_pkts.unwrap_or(100),
                    idle_timeout: v.idle_timeout.map(|d| d.0).unwrap_or(Dur::from_secs(1)),
                }))
            }
            Some("drr") => {
                t.remove("kind");
                toml::Value::Table(t)
                    .try_into()
                    .map(QdiscSpec::Drr)
                    .map_err(|e| D::Error::custom(e.message().trim_end()))
            }
            Some(_) => toml::Value::Table(t).try_into().map(QdiscSpec::Asym).map_err(|e| {
                D::Error::custom(format!(
                    "{} (kinds: red, drr, tbf, pfq, fifo, acks-first, ack-filter-classic, ack-filter-cake, acq, afvq)",
                    e.message().trim_end()
                ))
            }),
            None => Err(D::Error::custom(
                "expected a `kind` (red, drr, tbf, pfq, fifo, acks-first, ack-filter-classic, ack-filter-cake, acq, afvq)",
            )),
        }
    }
}

impl QdiscSpec {
    /// The discipline for an output of `rate_bps` (RED's idle-time estimate uses it).
    pub fn build(&self, rate_bps: u64, rng: crate::rng::Rng) -> Box<dyn crate::queue::QueueDisc + Send> {
        use crate::shape;
        match self {
            QdiscSpec::Asym(q) => q.build(rng),
            QdiscSpec::Red(r) => Box::new(shape::red::Red::new(r.clone(), Dur::tx_time(1500, rate_bps), rng)),
            QdiscSpec::Drr(d) => Box::new(shape::drr::Drr::new(d.clone())),
            QdiscSpec::Tbf(t) => Box::new(shape::tbf::Tbf::new(t.clone())),
            QdiscSpec::Pfq(q) => Box::new(shape::pfq::Pfq::new(q.clone())),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscSpec::Red(r) => r.validate(),
            QdiscSpec::Drr(d) => d.validate(),
            QdiscSpec::Tbf(t) => t.validate(),
            QdiscSpec::Pfq(p) => p.validate(),
            QdiscSpec::Asym(a) => a.validate().map_err(|e| e.to_string()),
        }
    }
}

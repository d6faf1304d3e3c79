//! [`QdiscSpec`]: the `qdisc = { kind = … }` table that scenario files (per link direction, per
//! box direction) and gateway policy files (per class) use to pick a queue discipline, and
//! [`QdiscSpec::build`].

use crate::shape::aqm::{CakeConfig, CodelConfig, FqCodelConfig, PieConfig};
use crate::shape::asym::AsymDiscSpec;
use crate::shape::drr::DrrConfig;
use crate::shape::pfq::PfqConfig;
use crate::shape::red::RedConfig;
use crate::shape::tbf::TbfConfig;
use crate::table::{self, Table, Value};
use crate::time::Dur;
use crate::units::{DurV, RateV, Size, SizeV};
use serde::{Deserialize, Deserializer};

/// A link direction's queue discipline: `kind = "red"` ([`RedConfig`]), `kind = "drr"`
/// ([`DrrConfig`], per-flow queuing), `kind = "tbf"` ([`TbfConfig`], a token-bucket class rate),
/// `kind = "pfq"` ([`PfqConfig`], per-flow token buckets at rate/n), the delay-based AQMs and
/// flow queuing of [`crate::shape::aqm`] (`codel`, `fq-codel`, `pie`, `cake`) or one of the
/// asymmetric-link disciplines ([`AsymDiscSpec`]: `fifo`, `acks-first`, `ack-filter-classic`,
/// `ack-filter-cake`, `acq`, `afvq`).
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscSpec {
    Red(RedConfig),
    Drr(DrrConfig),
    Tbf(TbfConfig),
    Pfq(PfqConfig),
    Codel(CodelConfig),
    FqCodel(FqCodelConfig),
    Pie(PieConfig),
    Cake(CakeConfig),
    Asym(AsymDiscSpec),
}

/// The `kind`s a `qdisc` table takes.
pub const KINDS: &str =
    "red, drr, tbf, pfq, codel, fq-codel, pie, cake, fifo, acks-first, ack-filter-classic, ack-filter-cake, acq, afvq";
/// The `kind`s a gateway policy class's `qdisc` takes: no `tbf` (a class is a token bucket
/// already), and `pfq-drr`.
pub const POLICY_KINDS: &str = "red, drr, pfq, pfq-drr, codel, fq-codel, pie, cake, fifo, acks-first, \
     ack-filter-classic, ack-filter-cake, acq, afvq";

/// The table of a key that picks something by `kind` (`qdisc`, a policy's `mechanism`); a bare
/// name (`qdisc = "red"`) or another value is an error that shows the table to write. `kinds`: the
/// names to list for a value that is not a name.
fn kind_table<'de, D: Deserializer<'de>>(d: D, example: &str, kinds: &str) -> Result<Table, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::String(k) => {
            Err(D::Error::custom(format!("expected a table like `{{ kind = {k:?} }}`, got the string {k:?}")))
        }
        v => table::table_of(v.clone()).ok_or_else(|| {
            D::Error::custom(format!(
                "expected a table like `{{ kind = {example:?} }}` (kinds: {kinds}), got {}",
                table::show(&v)
            ))
        }),
    }
}

fn qdisc_table<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
    kind_table(d, "red", KINDS)
}

/// `#[serde(deserialize_with)]` for an optional `qdisc` kept as its table (a policy class's, which
/// also takes `pfq-drr`): [`kind_table`]'s errors.
pub fn optional_qdisc_table<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Table>, D::Error> {
    kind_table(d, "red", POLICY_KINDS).map(Some)
}

/// `#[serde(deserialize_with)]` for a policy class's optional `mechanism` table.
pub fn optional_mechanism_table<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Table>, D::Error> {
    kind_table(d, "tcr", "none, tcr, postack").map(Some)
}

impl<'de> Deserialize<'de> for QdiscSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = qdisc_table(d)?;
        match t.get("kind").and_then(table::as_str) {
            Some("red") => {
                t.remove("kind");
                table::read(t).map(QdiscSpec::Red)
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
                let v: TbfV = table::read(t)?;
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
                let v: PfqV = table::read(t)?;
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
                table::read(t).map(QdiscSpec::Drr)
            }
            Some(k @ ("codel" | "fq-codel" | "pie" | "cake")) => {
                let k = k.to_string();
                t.remove("kind");
                match k.as_str() {
                    "codel" => CodelConfig::from_table(t).map(QdiscSpec::Codel),
                    "fq-codel" => FqCodelConfig::from_table(t).map(QdiscSpec::FqCodel),
                    "pie" => PieConfig::from_table(t).map(QdiscSpec::Pie),
                    _ => CakeConfig::from_table(t).map(QdiscSpec::Cake),
                }
                .map_err(D::Error::custom)
            }
            Some(k) => {
                let k = k.to_string();
                table::read::<_, table::Error>(t).map(QdiscSpec::Asym).map_err(|e| {
                    let m = e.0.trim_end();
                    if m.starts_with("unknown variant") {
                        D::Error::custom(format!("expected a `kind` of {KINDS}, got {k:?}"))
                    } else {
                        D::Error::custom(m)
                    }
                })
            }
            None => Err(D::Error::custom(match t.get("kind") {
                Some(v) => format!("expected a `kind` of {KINDS} (as a string), got {}", table::show(v)),
                None => format!("expected a `kind` ({KINDS})"),
            })),
        }
    }
}

/// A config's fields as a table: unset options left out, integers as files write them (what a
/// file would hold).
fn serialised<T: serde::Serialize>(c: &T) -> Option<Table> {
    fn plain(v: Value) -> Option<Value> {
        Some(match v {
            Value::Option(None) | Value::Unit => return None,
            Value::Option(Some(v)) | Value::Newtype(v) => return plain(*v),
            Value::Map(m) => Value::Map(m.into_iter().filter_map(|(k, v)| Some((k, plain(v)?))).collect()),
            Value::Seq(s) => Value::Seq(s.into_iter().filter_map(plain).collect()),
            Value::F32(x) => Value::F64(x.into()),
            v => match table::as_int(&v) {
                Some(n) => Value::I64(n),
                None if matches!(v, Value::U64(_)) => return None,
                None => v,
            },
        })
    }
    table::table_of(plain(serde_value::to_value(c).ok()?)?)
}

impl QdiscSpec {
    /// The discipline for an output of `rate_bps` (RED's idle-time estimate uses it).
    pub fn build(&self, rate_bps: u64, rng: crate::rng::Rng) -> Box<dyn crate::queue::QueueDisc + Send> {
        use crate::shape;
        // Flow tables keyed from the same stream, without drawing from it (so RED's draws stay
        // the same); a driver that wants another key calls `set_hash_key` afterwards.
        let key = crate::hash::HashKey::from_rng(&rng);
        let mut q: Box<dyn crate::queue::QueueDisc + Send> = match self {
            QdiscSpec::Asym(q) => q.build(rng),
            QdiscSpec::Red(r) => Box::new(shape::red::Red::new(r.clone(), Dur::tx_time(1500, rate_bps), rng)),
            QdiscSpec::Drr(d) => Box::new(shape::drr::Drr::new(d.clone())),
            QdiscSpec::Tbf(t) => Box::new(shape::tbf::Tbf::new(t.clone())),
            QdiscSpec::Pfq(q) => Box::new(shape::pfq::Pfq::new(q.clone())),
            QdiscSpec::Codel(c) => Box::new(shape::aqm::Codel::new(c.clone())),
            QdiscSpec::FqCodel(c) => Box::new(shape::aqm::FqCodel::new(c.clone(), rng)),
            QdiscSpec::Pie(c) => Box::new(shape::aqm::Pie::new(c.clone(), rng)),
            QdiscSpec::Cake(c) => Box::new(shape::aqm::Cake::new(c.clone(), rng)),
        };
        q.set_hash_key(key);
        q
    }

    /// The discipline in a word for reports and warnings: its `kind`, and `"red+ecn"` for RED
    /// that marks (`"codel+ecn"`, `"pie+ecn"` likewise; FQ-CoDel and CAKE mark by default).
    pub fn label(&self) -> &'static str {
        match self {
            QdiscSpec::Red(r) if r.ecn => "red+ecn",
            QdiscSpec::Codel(c) if c.params.ecn => "codel+ecn",
            QdiscSpec::Pie(c) if c.ecn => "pie+ecn",
            q => q.kind(),
        }
    }

    /// The `kind` as a file spells it (`"red"`, `"drr"`, `"afvq"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscSpec::Red(_) => "red",
            QdiscSpec::Drr(_) => "drr",
            QdiscSpec::Tbf(_) => "tbf",
            QdiscSpec::Pfq(_) => "pfq",
            QdiscSpec::Codel(_) => "codel",
            QdiscSpec::FqCodel(_) => "fq-codel",
            QdiscSpec::Pie(_) => "pie",
            QdiscSpec::Cake(_) => "cake",
            QdiscSpec::Asym(a) => a.kind(),
        }
    }

    /// The discipline as a `qdisc` table a file or `ackshape wanem --qdisc` takes (every key
    /// written out, `kind` included), or None if a key cannot be written back (the table would not
    /// read as the same discipline).
    pub fn to_table(&self) -> Option<Table> {
        // tbf and pfq take units in a file (`rate = "2Mbit/s"`), not their configs' fields.
        let units = |pairs: Vec<(&str, Value)>| Some(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let mut t: Table = match self {
            QdiscSpec::Red(r) => serialised(r)?,
            QdiscSpec::Drr(d) => serialised(d)?,
            QdiscSpec::Tbf(t) => units(vec![
                ("rate", Value::String(format!("{}bit/s", t.rate_bps))),
                ("burst", Value::String(format!("{}B", t.burst_bytes))),
                ("limit_pkts", table::val(t.limit_pkts as u64)),
            ])?,
            QdiscSpec::Pfq(p) => units(vec![
                ("rate", Value::String(format!("{}bit/s", p.rate_bps))),
                ("burst", Value::String(format!("{}B", p.burst_bytes))),
                ("flow_limit_pkts", table::val(p.flow_limit_pkts as u64)),
                ("idle_timeout", Value::String(format!("{}ns", p.idle_timeout.0))),
            ])?,
            QdiscSpec::Codel(c) => c.to_table(),
            QdiscSpec::FqCodel(c) => c.to_table(),
            QdiscSpec::Pie(c) => c.to_table(),
            QdiscSpec::Cake(c) => c.to_table(),
            QdiscSpec::Asym(a) => serialised(a)?,
        };
        t.insert("kind".into(), Value::String(self.kind().into()));
        let back = table::read::<QdiscSpec, table::Error>(t.clone()).ok()?;
        (back == *self).then_some(t)
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscSpec::Red(r) => r.validate(),
            QdiscSpec::Drr(d) => d.validate(),
            QdiscSpec::Tbf(t) => t.validate(),
            QdiscSpec::Pfq(p) => p.validate(),
            QdiscSpec::Codel(c) => c.validate(),
            QdiscSpec::FqCodel(c) => c.validate(),
            QdiscSpec::Pie(c) => c.validate(),
            QdiscSpec::Cake(c) => c.validate(),
            QdiscSpec::Asym(a) => a.validate().map_err(|e| e.to_string()),
        }
    }
}

/// A `qdisc` table as written where a sibling `queue` key sizes the output (a scenario's link
/// direction, a `qdisc-link` box): the parsed [`QdiscSpec`] and the keys the table gave. As in
/// ns-2, where `queue-limit` sizes whatever queue the link has, `queue` (in packets) stands for
/// the discipline's limit keys the table leaves out ([`QdiscTable::queue_keys`]); a key the
/// table gives wins. (A gateway policy class instead refuses `queue` beside a discipline with
/// its own limits.)
#[derive(Clone, Debug, PartialEq)]
pub struct QdiscTable {
    pub spec: QdiscSpec,
    raw: Table,
}

impl<'de> Deserialize<'de> for QdiscTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = qdisc_table(d)?;
        let spec = table::read::<QdiscSpec, D::Error>(raw.clone())?;
        Ok(QdiscTable { spec, raw })
    }
}

impl From<QdiscSpec> for QdiscTable {
    /// A discipline built in code: every limit taken as given (a `queue` beside it changes nothing).
    fn from(spec: QdiscSpec) -> Self {
        let mut raw = Table::new();
        for k in QdiscTable::keys_of(&spec) {
            raw.insert((*k).to_string(), Value::Bool(true));
        }
        QdiscTable { spec, raw }
    }
}

impl QdiscTable {
    fn keys_of(spec: &QdiscSpec) -> &'static [&'static str] {
        use crate::shape::asym::AsymDiscSpec as A;
        match spec {
            QdiscSpec::Red(_) | QdiscSpec::Tbf(_) | QdiscSpec::Drr(_) => &["limit_pkts"],
            QdiscSpec::Codel(_) | QdiscSpec::FqCodel(_) | QdiscSpec::Pie(_) | QdiscSpec::Cake(_) => &["limit_pkts"],
            QdiscSpec::Pfq(_) => &["flow_limit_pkts"],
            QdiscSpec::Asym(a) => match a {
                A::Fifo { .. } | A::AckFilterClassic { .. } | A::AckFilterCake { .. } => &["limit_pkts"],
                A::AcksFirst { .. } | A::Acq { .. } => &["ack_limit_pkts", "data_limit_pkts"],
                A::Afvq { .. } => &["data_limit_pkts", "non_tcp_limit_pkts"],
            },
        }
    }

    /// The limit keys a sibling `queue` stands for: `limit_pkts` (red, tbf, drr — its total —,
    /// codel, fq-codel and pie — their totals —, cake — its buffer, in 1514-byte frames —, fifo,
    /// the ACK filters), `flow_limit_pkts` (pfq: each flow's queue; it has no shared one),
    /// both class queues of acks-first and acq, and AFVQ's data and non-TCP queues (its ACK queue
    /// is sized by Eq. 16).
    pub fn queue_keys(&self) -> &'static [&'static str] {
        Self::keys_of(&self.spec)
    }

    /// The discipline with `queue` filling the limit keys the table leaves out, and which keys it
    /// filled. No `queue`, or every key given: the table's discipline as is. A `queue` in bytes
    /// cannot fill a limit counted in packets: an error saying so.
    pub fn with_queue(&self, queue: Option<Size>) -> Result<(QdiscSpec, Vec<&'static str>), String> {
        let missing: Vec<&'static str> =
            self.queue_keys().iter().copied().filter(|k| !self.raw.contains_key(*k)).collect();
        let n = match queue {
            None => return Ok((self.spec.clone(), Vec::new())),
            Some(_) if missing.is_empty() => return Ok((self.spec.clone(), Vec::new())),
            Some(Size::Packets(n)) => n,
            Some(Size::Bytes(b)) => {
                return Err(format!(
                    "`queue` = {b} bytes cannot size this discipline, whose limits count packets: give `queue` in \
                     packets (\"100pkt\") or the discipline's {}",
                    missing.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" and ")
                ))
            }
        };
        let mut t = self.raw.clone();
        for k in &missing {
            t.insert((*k).to_string(), table::val(n));
        }
        let spec = table::read::<QdiscSpec, table::Error>(t).map_err(|e| e.0.trim_end().to_string())?;
        Ok((spec, missing))
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;

    #[test]
    fn every_kind_writes_back_as_a_table_that_reads_the_same() {
        for kind in KINDS.split(", ") {
            let extra = match kind {
                "acq" => ", rate_bps = 800000, reverse_rate_bps = 2000000",
                "tbf" | "pfq" => ", rate = \"1.5Mbit/s\", burst = \"4500B\"",
                _ => "",
            };
            let t: toml::Table = format!("q = {{ kind = \"{kind}\"{extra} }}").parse().unwrap();
            let spec = QdiscSpec::deserialize(t["q"].clone()).unwrap();
            let back = spec.to_table().unwrap_or_else(|| panic!("{kind} does not write back"));
            assert_eq!(back.get("kind").and_then(table::as_str), Some(kind));
            assert_eq!(table::read::<QdiscSpec, table::Error>(back).unwrap(), spec, "{kind}");
        }
    }

    fn table(s: &str) -> QdiscTable {
        let v: toml::Table = format!("q = {s}").parse().unwrap();
        v["q"].clone().try_into().unwrap()
    }

    #[test]
    fn queue_fills_the_limits_the_table_leaves_out() {
        let (red, filled) = table(r#"{ kind = "red" }"#).with_queue(Some(Size::Packets(40))).unwrap();
        assert!(matches!(red, QdiscSpec::Red(ref c) if c.limit_pkts == 40), "{red:?}");
        assert_eq!(filled, ["limit_pkts"]);
        // A key the table gives wins; without `queue` the discipline's own defaults stay.
        let t = table(r#"{ kind = "red", limit_pkts = 70 }"#);
        assert!(matches!(t.with_queue(Some(Size::Packets(40))).unwrap().0, QdiscSpec::Red(c) if c.limit_pkts == 70));
        let t = table(r#"{ kind = "drr" }"#);
        assert!(matches!(t.with_queue(None).unwrap().0, QdiscSpec::Drr(c) if c.limit_pkts == 1000));
        assert!(matches!(t.with_queue(Some(Size::Packets(20))).unwrap().0, QdiscSpec::Drr(c) if c.limit_pkts == 20));
        // Two-queue disciplines: both queues, unless one is given.
        let t = table(r#"{ kind = "acks-first", ack_limit_pkts = 5 }"#);
        let (q, filled) = t.with_queue(Some(Size::Packets(30))).unwrap();
        assert_eq!(filled, ["data_limit_pkts"]);
        assert!(matches!(
            q,
            QdiscSpec::Asym(crate::shape::asym::AsymDiscSpec::AcksFirst { ack_limit_pkts: 5, data_limit_pkts: 30 })
        ));
        let (q, _) = table(r#"{ kind = "afvq" }"#).with_queue(Some(Size::Packets(30))).unwrap();
        assert!(matches!(
            q,
            QdiscSpec::Asym(crate::shape::asym::AsymDiscSpec::Afvq {
                data_limit_pkts: 30,
                non_tcp_limit_pkts: 30,
                s_max: 5,
                ..
            })
        ));
        let (q, _) = table(r#"{ kind = "pfq", rate = "1Mbit/s" }"#).with_queue(Some(Size::Packets(7))).unwrap();
        assert!(matches!(q, QdiscSpec::Pfq(c) if c.flow_limit_pkts == 7));
    }

    #[test]
    fn a_queue_in_bytes_cannot_fill_a_packet_limit() {
        let e = table(r#"{ kind = "fifo" }"#).with_queue(Some(Size::Bytes(64_000))).unwrap_err();
        assert!(e.contains("64000 bytes") && e.contains("`limit_pkts`"), "{e}");
        // …but is no error when the table gives every limit.
        assert!(table(r#"{ kind = "fifo", limit_pkts = 9 }"#).with_queue(Some(Size::Bytes(64_000))).is_ok());
        // A discipline built in code keeps its limits.
        let q: QdiscTable = QdiscSpec::Drr(DrrConfig::default()).into();
        assert!(matches!(q.with_queue(Some(Size::Packets(3))).unwrap().0, QdiscSpec::Drr(c) if c.limit_pkts == 1000));
    }
}

//! Values with units, as written in scenario and policy files: rates (`"10Mbit/s"`, `"500KB/s"`),
//! durations (`"20ms"`, `"1.5s"`), sizes (`"64KB"`, `"4MiB"`, `"100pkt"`).
//!
//! Decimal prefixes are powers of 1000 and binary ones (Ki, Mi, Gi) powers of 1024; `B` is a byte
//! and `bit` a bit (`b` alone is accepted as bit in rates, as in `kbps`). Errors say what was expected.

use crate::time::Dur;
use core::fmt;

/// A bit rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

/// A size: either bytes or packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    Bytes(u64),
    Packets(u64),
}

fn split_num(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (n, u) = s.split_at(end);
    let v: f64 = n.parse().ok()?;
    Some((v, u.trim()))
}

fn prefix(u: &str) -> Option<(f64, &str)> {
    for (p, m) in
        [("Ki", 1024.0), ("Mi", 1048576.0), ("Gi", 1073741824.0), ("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9)]
    {
        if let Some(rest) = u.strip_prefix(p) {
            return Some((m, rest));
        }
    }
    Some((1.0, u))
}

/// The units each kind of value takes, with their decimal and binary prefixes: what a unit
/// that is not among them is compared with for a "did you mean".
fn rate_units() -> Vec<String> {
    let mut v = Vec::new();
    for p in ["", "k", "K", "M", "G", "Ki", "Mi", "Gi"] {
        for u in ["bit/s", "bps", "b/s", "B/s", "Bps"] {
            v.push(format!("{p}{u}"));
        }
    }
    v
}

const DURATION_UNITS: [&str; 7] = ["ns", "us", "µs", "ms", "s", "min", "h"];

fn size_units() -> Vec<String> {
    let mut v: Vec<String> = ["pkt", "pkts", "packet", "packets"].iter().map(|s| s.to_string()).collect();
    for p in ["", "k", "K", "M", "G", "Ki", "Mi", "Gi"] {
        v.push(format!("{p}B"));
    }
    v
}

/// " (did you mean \"10Mbps\"?)" for a unit that differs from a known one only in letter case,
/// or that is a common spelling of one (`sec`, `hr`, `MB` for a rate); else an empty string.
fn did_you_mean(num: &str, unit: &str, known: &[String], aliases: &[(&str, &str)]) -> String {
    let lower = unit.to_lowercase();
    let hit = aliases
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(unit))
        .map(|(_, k)| k.to_string())
        // Prefer the spelling the docs use: Mbit/s-style for rates, KB for sizes.
        .or_else(|| known.iter().find(|k| k.to_lowercase() == lower).cloned());
    match hit {
        Some(k) => format!(" (did you mean \"{num}{k}\"?)"),
        None => String::new(),
    }
}

/// The number as written, for a suggestion.
fn num_part(s: &str) -> &str {
    let s = s.trim();
    let end = s.char_indices().find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+'));
    s[..end.map_or(s.len(), |e| e.0)].trim()
}

/// Parse a rate such as `10Mbit/s`, `10Mbps`, `500KB/s`, `1.5Gbit/s`, `64kbps`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    const WHAT: &str = "rate with a unit, like \"10Mbit/s\", \"10Mbps\" or \"500KB/s\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("expected a {WHAT}, got {s:?}"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("expected a non-negative {WHAT}, got {s:?}"));
    }
    let (m, rest) = prefix(u).unwrap();
    let bits = match rest {
        "bit/s" | "bps" | "b/s" => 1.0,
        "B/s" | "Bps" => 8.0,
        _ => {
            // `mbps` (milli-bits), `MB` (a size, not a rate), `Mbit` (no per second).
            let aliases = [
                ("mbps", "Mbps"),
                ("mbit/s", "Mbit/s"),
                ("gbps", "Gbps"),
                ("kb/s", "kbit/s"),
                ("MB", "MB/s"),
                ("KB", "KB/s"),
                ("kB", "KB/s"),
                ("GB", "GB/s"),
                ("Mbit", "Mbit/s"),
                ("kbit", "kbit/s"),
                ("Gbit", "Gbit/s"),
                ("Mb", "Mbit/s"),
            ];
            let hint = did_you_mean(num_part(s), u, &rate_units(), &aliases);
            return Err(format!("expected a {WHAT}, got {s:?} (unknown unit {u:?}){hint}"));
        }
    };
    Ok(Rate((v * m * bits).round() as u64))
}

/// Parse a duration such as `20ms`, `1.5s`, `250us`, `100ns`, `2min`, `1h`.
pub fn parse_duration(s: &str) -> Result<Dur, String> {
    const WHAT: &str = "duration with a unit, like \"20ms\", \"1.5s\", \"2min\" or \"1h\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("expected a {WHAT}, got {s:?}"))?;
    if !v.is_finite() {
        return Err(format!("expected a {WHAT}, got {s:?}"));
    }
    if v < 0.0 {
        return Err(format!("expected a non-negative duration, got {s:?}"));
    }
    let ns = match u {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => {
            let known: Vec<String> = DURATION_UNITS.iter().map(|u| u.to_string()).collect();
            let aliases = [
                ("sec", "s"),
                ("secs", "s"),
                ("second", "s"),
                ("seconds", "s"),
                ("msec", "ms"),
                ("msecs", "ms"),
                ("millis", "ms"),
                ("usec", "us"),
                ("mins", "min"),
                ("minute", "min"),
                ("minutes", "min"),
                ("m", "min"),
                ("hr", "h"),
                ("hrs", "h"),
                ("hour", "h"),
                ("hours", "h"),
            ];
            let hint = did_you_mean(num_part(s), u, &known, &aliases);
            return Err(format!("expected a {WHAT}, got {s:?} (unknown unit {u:?}){hint}"));
        }
    };
    Ok(Dur((v * ns).round() as u64))
}

/// Parse a size such as `64KB`, `4MiB`, `1500B`, `100pkt`, `100 packets`.
pub fn parse_size(s: &str) -> Result<Size, String> {
    const WHAT: &str = "size with a unit, like \"64KB\", \"4MiB\", \"1500B\" or \"100pkt\"";
    let (v, u) = split_num(s).ok_or_else(|| format!("expected a {WHAT}, got {s:?}"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("expected a non-negative {WHAT}, got {s:?}"));
    }
    match u {
        "pkt" | "pkts" | "packet" | "packets" | "p" => {
            if v.fract() != 0.0 {
                return Err(format!("expected a whole number of packets, got {s:?}"));
            }
            return Ok(Size::Packets(v as u64));
        }
        _ => {}
    }
    let (m, rest) = prefix(u).unwrap();
    match rest {
        "B" | "bytes" | "byte" => Ok(Size::Bytes((v * m).round() as u64)),
        _ => {
            let aliases = [("kb", "KB"), ("mb", "MB"), ("gb", "GB"), ("pk", "pkt"), ("pck", "pkt"), ("packet", "pkt")];
            let hint = did_you_mean(num_part(s), u, &size_units(), &aliases);
            Err(format!("expected a {WHAT}, got {s:?} (unknown unit {u:?}){hint}"))
        }
    }
}

/// Parse a byte count (a size that must be in bytes).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        Size::Bytes(b) => Ok(b),
        Size::Packets(_) => Err(format!("expected a size in bytes like \"64KB\" or \"4MiB\", got {s:?}")),
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        if v >= 1e9 {
            write!(f, "{}Gbit/s", v / 1e9)
        } else if v >= 1e6 {
            write!(f, "{}Mbit/s", v / 1e6)
        } else if v >= 1e3 {
            write!(f, "{}kbit/s", v / 1e3)
        } else {
            write!(f, "{}bit/s", v)
        }
    }
}

/// Serde forms of the unit values, for scenario and policy files: each reads a string with its
/// unit and says what was expected otherwise (a bare number is an error: units are explicit).
macro_rules! unit_newtype {
    ($(#[$m:meta])* $name:ident, $inner:ty, $parse:path, $example:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "a string with a unit, like {:?}", $example)
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        Err(E::custom(format!("expected a string with a unit, like {:?}, got the bare number {v}", $example)))
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$name, E> {
                        Err(E::custom(format!("expected a string with a unit, like {:?}, got the bare number {v}", $example)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
unit_newtype!(
    /// A duration as written in files (`"20ms"`).
    DurV, Dur, parse_duration, "20ms"
);
unit_newtype!(
    /// A rate as written in files (`"10Mbit/s"`).
    RateV, Rate, parse_rate, "10Mbit/s"
);
unit_newtype!(
    /// A size as written in files (`"64KB"`, `"100pkt"`).
    SizeV, Size, parse_size, "100pkt"
);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Bytes(b) => write!(f, "{b}B"),
            Size::Packets(p) => write!(f, "{p}pkt"),
        }
    }
}

/// A size that must be in bytes (`"1514B"`, `"32MiB"`); `key` names it in the error.
pub(crate) fn bytes_of(key: &str, s: Size) -> Result<u64, String> {
    match s {
        Size::Bytes(b) => Ok(b),
        Size::Packets(p) => {
            Err(format!("`{key}`: expected a size in bytes like \"1514B\" or \"32MiB\", got {p} packets"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbit/s").unwrap(), Rate(10_000_000));
        assert_eq!(parse_rate("10Mbps").unwrap(), Rate(10_000_000));
        assert_eq!(parse_rate("500KB/s").unwrap(), Rate(4_000_000));
        assert_eq!(parse_rate("64kbps").unwrap(), Rate(64_000));
        assert_eq!(parse_rate("1.5 Gbit/s").unwrap(), Rate(1_500_000_000));
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("10 furlongs").is_err());
        let e = parse_rate("-1Mbit/s").unwrap_err();
        assert!(e.starts_with("expected a non-negative rate with a unit"), "{e}");
        // Letter case and common spellings get a suggestion.
        let e = parse_rate("10mbps").unwrap_err();
        assert!(e.contains("(did you mean \"10Mbps\"?)"), "{e}");
        let e = parse_rate("10MB").unwrap_err();
        assert!(e.contains("did you mean \"10MB/s\"?"), "{e}");
        assert!(!parse_rate("10 furlongs").unwrap_err().contains("did you mean"));
    }
    #[test]
    fn durations() {
        assert_eq!(parse_duration("20ms").unwrap(), Dur::from_millis(20));
        assert_eq!(parse_duration("1.5s").unwrap(), Dur::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Dur::from_micros(250));
        assert!(parse_duration("-5ms").unwrap_err().contains("non-negative"));
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_duration("2h").unwrap(), Dur::from_millis(7_200_000));
        assert_eq!(parse_duration("2min").unwrap(), Dur::from_millis(120_000));
        assert!(parse_duration("10sec").unwrap_err().contains("did you mean \"10s\"?"));
        assert!(parse_duration("1MS").unwrap_err().contains("did you mean \"1ms\"?"));
    }
    #[test]
    fn sizes() {
        assert_eq!(parse_size("100pkt").unwrap(), Size::Packets(100));
        assert_eq!(parse_size("4MiB").unwrap(), Size::Bytes(4 << 20));
        assert_eq!(parse_size("64KB").unwrap(), Size::Bytes(64_000));
        assert!(parse_size("1.5pkt").is_err());
        assert!(parse_size("64kb").unwrap_err().contains("did you mean \"64KB\"?"));
        assert!(parse_size("-3pkt").unwrap_err().starts_with("expected a non-negative size"));
    }
}

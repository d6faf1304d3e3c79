//! Tables as files write them, kept without their format: a `qdisc`, a policy class's
//! `mechanism` or a tap rule is picked by one key (`kind`, `technique`) and read into its typed
//! configuration afterwards, and a scenario's `queue` fills the limit keys a `qdisc` table left
//! out. The core holds such a table as a [`Table`] of [`Value`]s (`serde-value`), which any serde
//! format deserialises into; the format crate (`ackshape-format`) reads the files.
//!
//! Also here: how every reader names the key of a bad value ([`key_and_message`]), and how a
//! value is shown in an error ([`show`]: as a file writes it).

use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

pub use serde_value::Value;

/// A table's keys and values, in key order.
pub type Table = BTreeMap<String, Value>;

/// An error of reading a [`Table`] into a typed configuration: serde's own wording for an
/// unknown field, a missing one or a wrong type (the same words whatever the format).
#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl serde::de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// Read `t` as `T`, with errors of type `E` (the enclosing deserialiser's, or [`Error`]).
pub fn read<T: DeserializeOwned, E: serde::de::Error>(t: Table) -> Result<T, E> {
    T::deserialize(serde_value::ValueDeserializer::<E>::new(value_of(t)))
}

/// A value as a file writes it: strings, integers, floats and booleans.
pub fn val<T: serde::Serialize>(x: T) -> Value {
    match serde_value::to_value(x) {
        Ok(v) => as_int(&v).map_or(v, Value::I64),
        Err(e) => Value::String(e.to_string()),
    }
}

/// A [`Table`] as one [`Value`].
pub fn value_of(t: Table) -> Value {
    Value::Map(t.into_iter().map(|(k, v)| (Value::String(k), v)).collect())
}

/// The table inside `v`, if it is one with string keys.
pub fn table_of(v: Value) -> Option<Table> {
    match v {
        Value::Map(m) => m
            .into_iter()
            .map(|(k, v)| match k {
                Value::String(k) => Some((k, v)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// The string inside `v`, if it is one.
pub fn as_str(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// The integer inside `v`, if it is one that fits an `i64`.
pub fn as_int(v: &Value) -> Option<i64> {
    match *v {
        Value::I8(n) => Some(n.into()),
        Value::I16(n) => Some(n.into()),
        Value::I32(n) => Some(n.into()),
        Value::I64(n) => Some(n),
        Value::U8(n) => Some(n.into()),
        Value::U16(n) => Some(n.into()),
        Value::U32(n) => Some(n.into()),
        Value::U64(n) => i64::try_from(n).ok(),
        _ => None,
    }
}

/// `v` as a file writes it, for error messages: `"red"`, `5`, `1.5`, `true`, `[1, 2]`,
/// `{ kind = "red" }`.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => show_str(s),
        Value::Char(c) => show_str(&c.to_string()),
        Value::Bool(b) => b.to_string(),
        Value::F32(x) => show_float(f64::from(*x)),
        Value::F64(x) => show_float(*x),
        Value::Seq(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(", ")),
        Value::Map(m) => {
            let kv: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    let k = match k {
                        Value::String(s) if !s.is_empty() && s.chars().all(bare_key_char) => s.clone(),
                        k => show(k),
                    };
                    format!("{k} = {}", show(v))
                })
                .collect();
            if kv.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", kv.join(", "))
            }
        }
        Value::Option(Some(v)) | Value::Newtype(v) => show(v),
        Value::Option(None) | Value::Unit => "nothing".into(),
        Value::Bytes(b) => format!("{b:?}"),
        v => as_int(v).map_or_else(|| "a number".into(), |n| n.to_string()),
    }
}

fn bare_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn show_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn show_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x}.0")
    } else {
        format!("{x}")
    }
}

/// Map a failure at a dotted `path` (as `serde_path_to_error` gives it) and its message to the
/// key to name and the message. An unknown key is named itself, not only the table it sits in;
/// the root path names no key.
pub fn key_and_message(path: String, msg: String) -> (Option<String>, String) {
    let msg = msg.trim_end().to_string();
    let key = if let Some(rest) = msg.strip_prefix("unknown field `") {
        let f = rest.split('`').next().unwrap_or("");
        if path == "." || path.is_empty() {
            f.to_string()
        } else if path == f || path.ends_with(&format!(".{f}")) {
            path
        } else {
            format!("{path}.{f}")
        }
    } else {
        path
    };
    let key = if key == "." || key.is_empty() { None } else { Some(key) };
    (key, msg)
}

/// Read `t` as `T`; an error is `(the dotted key within t, or None for t itself; the message)`.
pub fn read_keyed<T: DeserializeOwned>(t: Table) -> Result<T, (Option<String>, String)> {
    serde_path_to_error::deserialize(serde_value::ValueDeserializer::<Error>::new(value_of(t)))
        .map_err(|e| key_and_message(e.path().to_string(), e.into_inner().0))
}

/// A table (a `qdisc` without its `kind`) read as `T`; an error names the key that was wrong.
pub(crate) fn keyed<T: DeserializeOwned>(t: Table) -> Result<T, String> {
    read_keyed(t).map_err(|(k, m)| match k {
        Some(k) if !m.starts_with("unknown field") => format!("`{k}`: {m}"),
        _ => m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn unknown_keys_are_named_themselves() {
        let unknown = |p: &str| key_and_message(p.into(), "unknown field `raet`, expected `rate`\n".into());
        assert_eq!(unknown("class[0]").0.as_deref(), Some("class[0].raet"));
        assert_eq!(unknown(".").0.as_deref(), Some("raet"));
        assert_eq!(unknown("class[0].raet").0.as_deref(), Some("class[0].raet"));
        assert_eq!(unknown("class[0]").1, "unknown field `raet`, expected `rate`");
        let other = key_and_message("link.rate".into(), "expected a rate".into());
        assert_eq!(other, (Some("link.rate".into()), "expected a rate".into()));
        assert_eq!(key_and_message(".".into(), "bad".into()).0, None);
    }

    #[test]
    fn values_show_as_a_file_writes_them() {
        let t: Table = [
            ("kind".to_string(), Value::String("red".into())),
            ("min".to_string(), Value::I64(5)),
            ("w".to_string(), Value::F64(2.0)),
        ]
        .into_iter()
        .collect();
        assert_eq!(show(&value_of(t)), "{ kind = \"red\", min = 5, w = 2.0 }");
        assert_eq!(show(&Value::Seq(vec![Value::I64(1), Value::Bool(true)])), "[1, true]");
        assert_eq!(show(&Value::String("a\"b".into())), "\"a\\\"b\"");
        assert_eq!(show(&Value::F64(0.25)), "0.25");
    }

    #[test]
    fn type_errors_use_serde_s_words() {
        #[derive(Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct S {
            n: u32,
        }
        let t: Table = [("n".to_string(), Value::String("x".into()))].into_iter().collect();
        let (k, m) = read_keyed::<S>(t).unwrap_err();
        assert_eq!((k.as_deref(), m.as_str()), (Some("n"), "invalid type: string \"x\", expected u32"));
        let t: Table = [("m".to_string(), Value::I64(1))].into_iter().collect();
        let (k, m) = read_keyed::<S>(t).unwrap_err();
        assert_eq!((k.as_deref(), m.as_str()), (Some("m"), "unknown field `m`, expected `n`"));
    }
}

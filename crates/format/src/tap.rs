//! Reading a tap configuration: an `ackshape tap` policy file or a scenario's `[[middlebox]]
//! kind = "tap"` table, into the core's [`TapSpec`]. The format is documented in
//! `docs/policy.md` and `docs/scenario.md`.

use ackshape_core::shape::tap::{TapSpec, GLOBAL_KEYS};

/// Read a tap table. Without a `rule` array, the table's non-global keys form one rule
/// (`technique = "triple-ack"`, `every = 6` at top level). Errors are `(dotted key, what was
/// expected)`.
pub fn from_table(mut t: toml::Table) -> Result<TapSpec, (String, String)> {
    let shorthand = !t.contains_key("rule");
    // Errors inside the one-rule shorthand name the keys as the user wrote them.
    let key = |k: String| match k.strip_prefix("rule[0].") {
        Some(rest) if shorthand => rest.to_string(),
        _ => k,
    };
    if shorthand {
        let mut r = toml::Table::new();
        let keys: Vec<String> = t.keys().filter(|k| !GLOBAL_KEYS.contains(&k.as_str())).cloned().collect();
        for k in keys {
            r.insert(k.clone(), t.remove(&k).unwrap());
        }
        if r.is_empty() {
            return Err(("technique".into(), "a tap needs `technique` (or a `rule` array)".into()));
        }
        t.insert("rule".into(), toml::Value::Array(vec![toml::Value::Table(r)]));
    }
    let spec: TapSpec = serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let path = e.path().to_string();
        (key(if path == "." { "rule".into() } else { path }), e.inner().message().trim_end().to_string())
    })?;
    spec.validate().map_err(|(k, m)| (key(k), m))?;
    Ok(spec)
}

/// Read a TOML document (an `ackshape tap` policy file's text).
pub fn from_toml(text: &str) -> Result<TapSpec, (String, String)> {
    let t: toml::Table = toml::from_str(text).map_err(|e| {
        let msg = e.message().to_string();
        ("(syntax)".to_string(), format!("{msg} at {:?}", e.span()))
    })?;
    from_table(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_core::time::Dur;

    fn spec(text: &str) -> TapSpec {
        from_toml(text).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn spec_shorthand_defaults_and_errors() {
        let s = spec("technique = \"triple-ack\"\nevery = 4\ninterval = \"1s\"");
        assert_eq!(s.rule.len(), 1);
        assert_eq!(s.rule[0].every, Some(4.0));
        assert_eq!(s.interval, Dur::from_secs(1));
        let s = spec(
            "[[rule]]\ntechnique = \"zero-window\"\nsrc = \"10.0.0.0/24\"\ntarget = \"2Mbit/s\"\nscope = \"aggregate\"",
        );
        assert_eq!(s.rule[0].target, Some(2_000_000));
        assert_eq!((s.rule[0].min_every, s.rule[0].max_every), (None, None));
        let bad = |t: &str, key: &str| {
            let (k, m) = from_toml(t).unwrap_err();
            assert_eq!(k, key, "{t}: {m}");
            m
        };
        assert!(bad("technique = \"triple-ack\"\nevery = 0.5", "every").contains("≥ 1"));
        assert!(bad("technique = \"triple-ack\"\ntarget = \"5\"", "target").contains("rate with a unit"));
        assert!(bad("technique = \"dup\"", "technique").contains("triple-ack"));
        assert!(bad("technique = \"triple-ack\"\nbogus = 1", "bogus").contains("unknown field"));
        assert!(bad("technique = \"triple-ack\"\nwindow = 10", "window").contains("zero-window"));
        assert!(bad("technique = \"triple-ack\"\ncount = \"dups\"", "count").contains("all-acks"));
        assert!(bad("technique = \"none\"\ntarget = \"1Mbit/s\"", "target").contains("technique"));
        assert!(bad("technique = \"triple-ack\"\nsrc = \"x\"", "src").contains("IP prefix"));
        assert!(bad("technique = \"triple-ack\"\newma = 0", "ewma").contains("(0, 1]"));
        assert!(bad("interval = \"1s\"", "technique").contains("technique"));
        let long =
            "[[rule]]\ntechnique = \"triple-ack\"\n[[rule]]\ntechnique = \"zero-window\"\nmin_every = 5\nmax_every = 2";
        assert!(bad(long, "rule[1].min_every").contains("min_every ≤ max_every"));
    }
}

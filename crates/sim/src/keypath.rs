//! Dotted key paths into a TOML document (`topology.links[1].rate`): read, write, and split them.
//! `--set`, sweeps and the paper reproductions edit scenarios through these, so a bad path gets the same
//! error wherever it is typed.

/// The steps of a dotted path: keys (bare TOML names), each optionally indexed (`links[2]`).
pub fn path_steps(path: &str) -> Result<Vec<(&str, Option<usize>)>, String> {
    let bare = |k: &str| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    path.split('.')
        .map(|seg| {
            let (k, i) = match seg.split_once('[') {
                Some((k, rest)) => {
                    let i = rest
                        .strip_suffix(']')
                        .and_then(|n| n.parse().ok())
                        .ok_or_else(|| format!("key `{path}`: bad index in `{seg}`, expected e.g. `flows[0]`"))?;
                    (k, Some(i))
                }
                None => (seg, None),
            };
            if !bare(k) {
                return Err(format!(
                    "key `{path}`: expected dotted names like `topology.bottleneck.rate`, got `{seg}`"
                ));
            }
            Ok((k, i))
        })
        .collect()
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a datetime",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

fn no_index(path: &str, k: &str, n: usize, i: usize) -> String {
    format!("key `{path}`: `{k}` has {n} element{}, no index {i} (indices count from 0)", if n == 1 { "" } else { "s" })
}

/// The value at a dotted path (`topology.links[1].rate`), if any.
pub fn get_path<'a>(t: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let steps = path_steps(path).ok()?;
    let mut cur: Option<&toml::Value> = None;
    for (k, idx) in steps {
        let table = match cur {
            None => t,
            Some(v) => v.as_table()?,
        };
        let mut v = table.get(k)?;
        if let Some(i) = idx {
            v = v.as_array()?.get(i)?;
        }
        cur = Some(v);
    }
    cur
}

/// Set the value at a dotted path (`topology.links[1].reverse.rate`), creating missing tables
/// (not array elements). Errors name the path and what was wrong.
pub fn set_path(t: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), String> {
    let steps = path_steps(path)?;
    let (last, init) = steps.split_last().ok_or_else(|| format!("key `{path}`: empty"))?;
    let mut table = t;
    for (k, idx) in init {
        let entry = table.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let v = match idx {
            Some(i) => {
                let what = type_name(entry);
                let arr = entry
                    .as_array_mut()
                    .ok_or_else(|| format!("key `{path}`: `{k}` is not an array (it is {what})"))?;
                let n = arr.len();
                arr.get_mut(*i).ok_or_else(|| no_index(path, k, n, *i))?
            }
            None => entry,
        };
        let what = type_name(v);
        table = v.as_table_mut().ok_or_else(|| format!("key `{path}`: `{k}` is not a table (it is {what})"))?;
    }
    match last {
        (k, None) => {
            table.insert(k.to_string(), value);
        }
        (k, Some(i)) => {
            let arr = table
                .get_mut(*k)
                .and_then(|v| v.as_array_mut())
                .ok_or_else(|| format!("key `{path}`: `{k}` is not an array"))?;
            let n = arr.len();
            *arr.get_mut(*i).ok_or_else(|| no_index(path, k, n, *i))? = value;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_get_paths() {
        let mut t: toml::Table = r#"
name = "t"
[topology]
links = [{ name = "l1", rate = "10Mbit/s" }, { name = "l2", rate = "2Mbit/s" }]
"#
        .parse()
        .unwrap();
        set_path(&mut t, "topology.links[1].reverse.rate", "1Mbit/s".into()).unwrap();
        set_path(&mut t, "tcp.min_rto", "200ms".into()).unwrap();
        assert_eq!(get_path(&t, "topology.links[1].reverse.rate").and_then(|v| v.as_str()), Some("1Mbit/s"));
        assert_eq!(get_path(&t, "tcp.min_rto").and_then(|v| v.as_str()), Some("200ms"));
        assert_eq!(get_path(&t, "topology.links[0].name").and_then(|v| v.as_str()), Some("l1"));
        assert!(get_path(&t, "topology.links[7]").is_none());
        assert!(set_path(&mut t, "name.x", 1.into()).unwrap_err().contains("`name` is not a table"));
        assert!(set_path(&mut t, "a..b", 1.into()).is_err());
        let e = set_path(&mut t, "topology.links[5].rate", 1.into()).unwrap_err();
        assert!(e.contains("key `topology.links[5].rate`: `links` has 2 elements, no index 5"), "{e}");
        assert_eq!(path_steps("flows[1].tcp.cc").unwrap(), [("flows", Some(1)), ("tcp", None), ("cc", None)]);
        assert!(path_steps("flows[x]").unwrap_err().contains("bad index"));
    }
}

//! Error text shared by every TOML file ackshape reads — scenarios, policies, experiment files —
//! so that each names the line of a syntax error and the key of a bad value the same way.
//!
//! What it is not: the error types themselves (each reader has its own, carrying the file name).

/// The 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// "TOML syntax error at line N, column C: …" for a parse failure of `text`, followed by the line
/// and a caret under the column:
///
/// ```text
/// TOML syntax error at line 2, column 12: invalid basic string
///     2 | duration = "10s
///       |            ^
/// ```
pub fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim_end();
    match e.span() {
        Some(s) => {
            let at = s.start.min(text.len());
            let line = line_of(text, at);
            let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let src = text[start..end].trim_end_matches('\r');
            let col = text[start..at].chars().count() + 1;
            // The caret under the column (tabs kept so that it lines up), at most 200 characters
            // of the line.
            let pad: String = text[start..at].chars().map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let shown: String = src.chars().take(200).collect();
            let num = line.to_string();
            format!(
                "TOML syntax error at line {line}, column {col}: {msg}\n    {num} | {shown}\n    {} | {pad}^",
                " ".repeat(num.len())
            )
        }
        None => format!("TOML syntax error: {msg}"),
    }
}

/// Map a `serde_path_to_error` failure (its dotted path and the inner message) to the key to name
/// and the message. An unknown key is named itself, not only the table it sits in; the root path
/// names no key.
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

/// A table (a `qdisc` without its `kind`) read as `T`; an error names the key that was wrong.
pub(crate) fn keyed<T: serde::de::DeserializeOwned>(t: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let (k, m) = key_and_message(e.path().to_string(), e.into_inner().message().to_string());
        match k {
            Some(k) if !m.starts_with("unknown field") => format!("`{k}`: {m}"),
            _ => m,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_the_line() {
        let text = "a = 1\nb = = 2\n";
        let e = text.parse::<toml::Table>().unwrap_err();
        let m = syntax_message(text, &e);
        assert!(m.starts_with("TOML syntax error at line 2, column 5: "), "{m}");
        assert!(m.ends_with("    2 | b = = 2\n      |     ^"), "{m}");
    }

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
}

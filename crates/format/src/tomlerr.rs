//! Error text shared by every TOML file ackshape reads — scenarios, policies, experiment files —
//! so that each names the line of a syntax error and the key of a bad value the same way.
//!
//! What it is not: the error types themselves (each reader has its own, carrying the file name),
//! nor the key of a bad value, which the core names the same way for any format
//! ([`key_and_message`], re-exported here).

pub use ackshape_core::table::key_and_message;

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
}

//! Reading a gateway policy file. The format is documented in `docs/policy.md`; this module reads
//! the file and its TOML ([`load`], [`parse`], [`from_table`]), the core validates what it holds
//! ([`Policy::read`]).

use ackshape_core::shape::policy::{Policy, PolicyError};
use std::path::Path;

/// Read and validate a policy file; a file that cannot be read is an error naming it.
pub fn load(path: &Path) -> Result<Policy, PolicyError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
        file: file.clone(),
        key: None,
        msg: format!("cannot read: {e}"),
    })?;
    parse(&text, &file)
}

/// Parse and validate policy TOML; `file` names it in errors (a syntax error by its line, a bad
/// value by its dotted key).
pub fn parse(text: &str, file: &str) -> Result<Policy, PolicyError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| PolicyError {
        file: file.to_string(),
        key: None,
        msg: crate::tomlerr::syntax_message(text, &e),
    })?;
    from_table(&table, file)
}

/// Validate a policy given as a TOML table (e.g. inline in a scenario).
pub fn from_table(table: &toml::Table, file: &str) -> Result<Policy, PolicyError> {
    Policy::read(toml::Value::Table(table.clone()), file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_names_the_file_it_cannot_read_and_the_key_it_rejects() {
        let dir = std::env::temp_dir().join(format!("ackshape-format-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.toml");
        let e = load(&missing).unwrap_err().to_string();
        assert!(e.starts_with(&missing.display().to_string()) && e.contains("cannot read"), "{e}");
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n").unwrap();
        let e = load(&bad).unwrap_err().to_string();
        assert!(e.starts_with(&bad.display().to_string()) && e.contains("key `class[0].ceil`"), "{e}");
        let good = dir.join("good.toml");
        std::fs::write(&good, "[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\n").unwrap();
        assert_eq!(load(&good).unwrap().classes.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_syntax_error_names_the_file_and_the_line() {
        let e = parse("[[class]\nname = 1", "policy.toml").unwrap_err().to_string();
        assert!(e.starts_with("policy.toml: TOML syntax error at line 1"), "{e}");
        let e = parse("[[class]]\nname = \"a\"\n", "policy.toml").unwrap_err().to_string();
        assert!(e.contains("class[0]") && e.contains("rate"), "{e}");
    }
}

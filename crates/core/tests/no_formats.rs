//! The core is sans-IO and format-free: it reads no file (no `std::fs`), depends on no file
//! format (`toml`, `serde_json` are the format crate's and the drivers'), and its boxes report
//! typed statistics (no `stats_json`). Its spec types are serde types; `crates/format` reads the
//! files into them.

use std::path::{Path, PathBuf};

fn core_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn the_core_depends_on_no_file_format() {
    let manifest: toml::Table = std::fs::read_to_string(core_dir().join("Cargo.toml")).unwrap().parse().unwrap();
    let deps = manifest["dependencies"].as_table().expect("a [dependencies] table");
    // The table read is the real one (so the check below cannot pass on an empty table).
    assert!(deps.contains_key("serde") && deps.contains_key("ackshape-wire"), "{deps:?}");
    for format in ["toml", "serde_json", "toml_edit", "serde_yaml", "csv"] {
        assert!(!deps.contains_key(format), "crates/core depends on the file format `{format}`");
    }
}

#[test]
fn the_core_reads_no_file_and_renders_no_json() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&core_dir().join("src"), &mut files);
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let test = test_lines(&text);
        for (i, line) in text.lines().enumerate() {
            for needle in ["std::fs", "stats_json", "serde_json", "toml::"] {
                if line.contains(needle) && !test[i] {
                    found.push(format!("{}:{}: {needle}", f.display(), i + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "the core touches files or formats:\n{}", found.join("\n"));
}

/// Which lines lie in a `#[cfg(test)]` item (tests may parse TOML: it is a dev-dependency):
/// from the attribute to the brace that closes the item it marks.
fn test_lines(text: &str) -> Vec<bool> {
    let (mut out, mut pending, mut depth) = (Vec::new(), false, 0i64);
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            pending = true;
        }
        let inside = pending || depth > 0;
        if pending || depth > 0 {
            let opens = line.matches('{').count() as i64;
            let closes = line.matches('}').count() as i64;
            // The item opens its braces, or is one line (`#[cfg(test)] use …;`).
            if pending && (opens > 0 || (line.trim_end().ends_with(';') && !line.contains("#[cfg(test)]"))) {
                pending = false;
            }
            depth += opens - closes;
        }
        out.push(inside);
    }
    out
}

#[test]
fn test_items_are_told_apart() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { toml::x() }\n}\nfn b() {}\n";
    assert_eq!(test_lines(text), [false, true, true, true, true, false]);
    let text = "#[cfg(test)]\nuse x;\nfn b() { toml::y() }\n";
    assert_eq!(test_lines(text), [true, true, false]);
}

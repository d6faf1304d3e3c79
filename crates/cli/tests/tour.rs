//! The README's tour runs as written: every command of its `sh` block but the live ones, top to
//! bottom, from a directory laid out like the repository's root (its `experiments/`), with
//! `ackshape` on PATH. Each must succeed, and the files the tour says they write must be there.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tour's commands: the first `sh` block after "## Tour", continuation lines joined, comments
/// and comment-only lines dropped.
fn tour_commands(readme: &str) -> Vec<String> {
    let tour = &readme[readme.find("## Tour").expect("README has a Tour section")..];
    let block = &tour[tour.find("```sh\n").expect("an sh block") + 6..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut cmds = Vec::new();
    let mut cur = String::new();
    for line in block.lines() {
        let code = strip_comment(line);
        let (code, more) = match code.trim_end().strip_suffix('\\') {
            Some(c) => (c.to_string(), true),
            None => (code.trim_end().to_string(), false),
        };
        if !code.trim().is_empty() {
            cur.push_str(code.trim());
            cur.push(' ');
        }
        if !more && !cur.trim().is_empty() {
            cmds.push(cur.trim().to_string());
            cur.clear();
        }
    }
    cmds
}

/// `line` without a `#` comment (a `#` after a space, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// Commands that need root and interfaces (the live side): not run here.
fn is_live(cmd: &str) -> bool {
    let w: Vec<&str> = cmd.split_whitespace().collect();
    matches!(w.get(1).copied(), Some("tap" | "gateway" | "wanem" | "testbed" | "compare")) || w.contains(&"--live")
}

fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(find(&p, name));
            } else if p.ends_with(name) {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn the_readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let cmds = tour_commands(&readme);
    assert!(cmds.len() >= 15, "{cmds:#?}");
    assert!(cmds.iter().all(|c| c.starts_with("ackshape")), "{cmds:#?}");
    // A fresh directory with the repository's experiments, as a clone has them.
    let dir = std::env::temp_dir().join(format!("ackshape-tour-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(root.join("experiments").canonicalize().unwrap(), dir.join("experiments")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_ackshape")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for cmd in &cmds {
        if is_live(cmd) {
            println!("skipped (live): {cmd}");
            continue;
        }
        let t0 = std::time::Instant::now();
        let o = Command::new("sh").arg("-c").arg(cmd).current_dir(&dir).env("PATH", &path).output().unwrap();
        println!("{:6.1} s  {cmd}", t0.elapsed().as_secs_f64());
        assert!(
            o.status.success(),
            "{cmd}: exit {:?}\nstdout: {}\nstderr: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(ran + 2 >= cmds.len(), "ran {ran} of {}", cmds.len());
    // What the tour says the commands wrote.
    for f in [
        "my.toml",
        "gw.toml",
        "tap.toml",
        "out/summary.json",
        "out/goodput.svg",
        "out/goodput.png",
        "out/queue.png",
        "out/bottleneck.pcap",
        "sweep/sweep.csv",
        "sweep/sweep-goodput.png",
    ] {
        assert!(dir.join(f).is_file(), "{f} written");
    }
    for id in ["P2-F10", "P0-F9", "P4-F7"] {
        assert!(!find(&dir.join("results"), &format!("{id}/report.md")).is_empty(), "a report of {id} under results/");
    }
    assert!(!find(&dir.join("results/reno"), "P0-F9/report.md").is_empty(), "the --out of the changed run");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn comments_and_continuations_are_read_as_a_shell_would() {
    let readme = "## Tour\n\n```sh\nackshape run x.toml   # a comment\n  # more comment\nackshape sweep \\\n    --set 'a={ kind = \"#x\" }'  # c\n```\n";
    assert_eq!(tour_commands(readme), ["ackshape run x.toml", "ackshape sweep --set 'a={ kind = \"#x\" }'"]);
    assert!(is_live("ackshape tap --mirror IF") && is_live("ackshape run --live s.toml") && !is_live("ackshape run"));
}

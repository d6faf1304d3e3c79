//! Every plot that `run`, `sweep` and `reproduce --quick` write, rendered as the commands write
//! them: each SVG has its PNG, and no plot reports a layout problem.
//!
//! The layout check runs inside the plotting code (`ackshape_sim::plot`): while a plot is drawn, a
//! recording backend takes the glyph box of every text, as the shipped font sets it, and the
//! extent of every data mark; a text cut by the image's edge or overlapping another text, or a
//! data line or marker outside its axes, is logged as a `plot layout` warning on stderr. The unit
//! tests of `plot.rs` show that the check finds each kind of problem; this test shows that no
//! plot of the commands has one. (`compare`'s sim-vs-live plot is checked by a unit test of
//! `compare_cmd.rs` on a recorded live time series: a live run needs root.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-plots-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `ackshape ARGS` with warnings on; its stderr, after checking that it succeeded.
fn ackshape(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).env("ACKSHAPE_LOG", "warn").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "ackshape {args:?}: {err}");
    err
}

/// Every `.svg` under `dir` (recursively) with its `.png`: a PNG of a plausible size.
fn plots_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "svg") {
                let png = p.with_extension("png");
                let bytes = std::fs::read(&png).unwrap_or_else(|_| panic!("{} has no PNG", p.display()));
                assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}: not a PNG", png.display());
                // Width and height from the IHDR chunk.
                let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
                let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
                assert!((800..6000).contains(&w) && (400..12000).contains(&h), "{}: {w}×{h}", png.display());
                let svg = std::fs::read_to_string(&p).unwrap();
                assert!(svg.starts_with("<svg") && svg.contains("Liberation Sans"), "{}", p.display());
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn no_layout_problems(what: &str, stderr: &str) {
    let bad: Vec<&str> = stderr.lines().filter(|l| l.contains("plot layout")).collect();
    assert!(bad.is_empty(), "{what}: {} layout problems:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn run_and_sweep_plots_lay_out_cleanly() {
    let d = tmpdir("run");
    let o = d.to_str().unwrap();
    // The embedded example (goodput, queue), with cwnd traced; 60 flows (goodput as a spread) on a
    // graph; and a sweep over a rate and a discipline (categorical legend), and over a count.
    let mut err = ackshape(&["run", "-q", "--set", "trace_interval=500ms", "--out", &format!("{o}/example")]);
    err +=
        &ackshape(&["run", "-q", "--set", "flows[0].count=60", "--set", "duration=10s", "--out", &format!("{o}/many")]);
    let adsl = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/p2/adsl-two-way.toml");
    err +=
        &ackshape(&["run", "-q", adsl, "--set", "duration=20s", "--set", "warmup=5s", "--out", &format!("{o}/adsl")]);
    err += &ackshape(&[
        "sweep",
        "-q",
        "--seeds",
        "2",
        "--set",
        "duration=8s",
        "--set",
        "topology.bottleneck.rate=5Mbit/s,20Mbit/s",
        "--set",
        "topology.bottleneck.qdisc={ kind = \"fifo\" },{ kind = \"red\" },{ kind = \"drr\" }",
        "--plot",
        "jain,retransmit_ratio",
        "--out",
        &format!("{o}/sweep"),
    ]);
    err += &ackshape(&[
        "sweep",
        "-q",
        "--seeds",
        "1",
        "--set",
        "duration=6s",
        "--set",
        "tcp.cc=reno,cubic,sack",
        "--out",
        &format!("{o}/sweep-cc"),
    ]);
    no_layout_problems("run and sweep", &err);
    let plots = plots_under(&d);
    let names: Vec<String> = plots.iter().map(|p| p.strip_prefix(&d).unwrap().display().to_string()).collect();
    println!("{} plots: {}", names.len(), names.join(", "));
    for want in [
        "example/goodput.svg",
        "example/queue.svg",
        "example/cwnd.svg",
        "many/goodput.svg",
        "adsl/goodput.svg",
        "sweep/sweep-goodput.svg",
        "sweep/sweep-queue.svg",
        "sweep/sweep-jain.svg",
        "sweep/sweep-retransmit_ratio.svg",
        "sweep-cc/sweep-goodput.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} written: {names:?}");
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn every_reproduce_quick_plot_lays_out_cleanly() {
    let d = tmpdir("reproduce");
    let err = ackshape(&["reproduce", "--quick", "-q", "--json", "--out", d.to_str().unwrap()]);
    no_layout_problems("reproduce --quick", &err);
    let plots = plots_under(&d);
    println!("{} plots", plots.len());
    // Most experiments draw plots (a few are tables only).
    let dirs: Vec<PathBuf> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    let with = dirs.iter().filter(|p| plots.iter().any(|x| x.starts_with(p))).count();
    println!("{with} of {} experiments have plots", dirs.len());
    assert!(dirs.len() >= 25 && with + 3 >= dirs.len(), "{with} of {}", dirs.len());
    assert!(plots.len() >= 50, "{} plots", plots.len());
    std::fs::remove_dir_all(&d).ok();
}

//! Running a scenario end to end and writing its results.

use crate::link::Capture;
use crate::metrics::Summary;
use crate::plot::{line_chart, Series};
use crate::scenario::Scenario;
use crate::world::{BuildError, QueueSeries, RunOptions, Sim};
use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to run and where to write.
#[derive(Default)]
pub struct RunRequest {
    pub seed: Option<u64>,
    /// Directory for `summary.json`, `timeseries.csv`, `trace.csv` and pcaps (created).
    pub out: Option<PathBuf>,
    /// Links to capture into `OUT/NAME.pcap`: both directions of the link NAME belongs to (or
    /// only NAME with `pcap_one_way`).
    pub pcap: Vec<String>,
    /// Capture only the named link direction.
    pub pcap_one_way: bool,
    /// Bytes kept of each captured frame (0: whole frames).
    pub snaplen: u32,
    /// The scenario document as run (the file with its `--set`s applied): written, resolved
    /// ([`crate::store::resolve`]) and with the run's seed, as `OUT/scenario.toml`.
    pub scenario_doc: Option<toml::Table>,
}

/// The default `--snaplen`: the Ethernet, IP and TCP headers with options (14 + 60 + 60 bytes
/// at most) fit; payloads (the simulator's are zeros) are left out.
pub const DEFAULT_SNAPLEN: u32 = 134;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("--pcap needs --out DIR to write into")]
    PcapNeedsOut,
    #[error("{0}")]
    Scenario(String),
}

/// A scenario document as `OUT/scenario.toml`: resolved ([`crate::store::resolve`]: policy files
/// inlined) and with `seed`, so that `ackshape run OUT/scenario.toml` runs the same simulation.
/// `set`: the `--set KEY=VALUE`s already applied to `doc` (named in the file's first lines).
pub fn resolved_scenario_toml(doc: &toml::Table, file: &str, seed: u64, set: &[String]) -> Result<String, String> {
    let mut doc = crate::store::resolve(doc, file)?;
    doc.insert("seed".into(), toml::Value::Integer(seed as i64));
    let body = toml::to_string(&doc).map_err(|e| format!("{file}: cannot write the scenario as TOML: {e}"))?;
    let mut head = format!("# The scenario as {} ran it: {file}", crate::provenance::Provenance::this());
    for kv in set {
        head += &format!(" --set {kv}");
    }
    head = head.replace('\n', " ");
    Ok(format!("{head}\n# (policy files inlined, the seed of the run)\n{body}"))
}

/// A summary as `summary.json` holds it: pretty JSON, its floats to [`SIGNIFICANT_DIGITS`]
/// significant digits ([`round_sig`]), keys in the summary's order, and a newline.
pub fn summary_json(summary: &Summary) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, RoundingFormatter(PrettyFormatter::new()));
    summary.serialize(&mut ser).expect("summary serialises");
    String::from_utf8(out).expect("JSON is UTF-8") + "\n"
}

/// serde_json's pretty printer, writing each float rounded with [`round_sig`] (as serde_json
/// writes the rounded number: `60.0`, `0.00510204081633`). Non-finite floats never reach it
/// (serde_json writes them as `null`).
struct RoundingFormatter<'a>(PrettyFormatter<'a>);

impl Formatter for RoundingFormatter<'_> {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, x: f64) -> std::io::Result<()> {
        match serde_json::Number::from_f64(round_sig(x)) {
            Some(n) => w.write_all(n.to_string().as_bytes()),
            None => w.write_all(b"null"),
        }
    }
    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, x: f32) -> std::io::Result<()> {
        self.write_f64(w, x as f64)
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |err| RunError::Io { path: path.display().to_string(), err }
}

/// What a run produced: its summary and the files it wrote (with `out`).
pub struct RunOutput {
    pub summary: Summary,
    pub files: Vec<PathBuf>,
}

/// Run `sc` (read from `file`) and write its outputs. `progress` gets the fraction done.
pub fn run_scenario(
    sc: &Scenario,
    file: &str,
    req: &RunRequest,
    progress: Option<&mut dyn FnMut(f64)>,
) -> Result<RunOutput, RunError> {
    run_scenario_sim(sc, file, req, progress).map(|(_, out)| out)
}

/// [`run_scenario`], also returning the finished simulation (its time series and traces).
pub fn run_scenario_sim(
    sc: &Scenario,
    file: &str,
    req: &RunRequest,
    progress: Option<&mut dyn FnMut(f64)>,
) -> Result<(Sim, RunOutput), RunError> {
    let mut opts = RunOptions::default();
    let mut files = Vec::new();
    if !req.pcap.is_empty() {
        let out = req.out.as_ref().ok_or(RunError::PcapNeedsOut)?;
        std::fs::create_dir_all(out).map_err(io_err(out))?;
        let snaplen = if req.snaplen == 0 { ackshape_wire::pcap::DEFAULT_SNAPLEN } else { req.snaplen };
        for name in &req.pcap {
            let path = out.join(format!("{}.pcap", name.replace([':', '/'], "_")));
            let cap = crate::pcap::PcapCapture::with_snaplen(&path, snaplen).map_err(io_err(&path))?;
            if req.pcap_one_way {
                opts.captures.push((name.clone(), Box::new(cap) as Box<dyn Capture>));
            } else {
                // Both directions of the link into one file: `X` and `X:rev`.
                let fwd = name.strip_suffix(":rev").unwrap_or(name).to_string();
                let shared = std::rc::Rc::new(std::cell::RefCell::new(cap));
                for dir in [fwd.clone(), format!("{fwd}:rev")] {
                    let c = crate::pcap::SharedCapture(shared.clone());
                    opts.captures.push((dir, Box::new(c) as Box<dyn Capture>));
                }
            }
            files.push(path);
        }
    }
    let mut sim = Sim::build(sc, file, req.seed, opts)?;
    let t0 = Instant::now();
    sim.run(progress);
    let wall = t0.elapsed().as_secs_f64();
    if let Some(out) = &req.out {
        sim.finish_captures().map_err(io_err(out))?;
    }
    let summary = sim.summary(wall);
    if let Some(out) = &req.out {
        let mut written = write_outputs(&sim, &summary, out)?;
        written.append(&mut files);
        files = written;
        if let Some(doc) = &req.scenario_doc {
            let p = out.join("scenario.toml");
            let text = resolved_scenario_toml(doc, file, summary.seed, &sc.set).map_err(RunError::Scenario)?;
            std::fs::write(&p, text).map_err(io_err(&p))?;
            files.push(p);
        }
    }
    Ok((sim, RunOutput { summary, files }))
}

/// Significant digits of the numbers in `summary.json` and the CSV tables made from it.
pub const SIGNIFICANT_DIGITS: usize = 12;

/// `x` rounded to [`SIGNIFICANT_DIGITS`] significant digits: what the outputs print, so that a
/// float sum's last-bit noise (`60.00000000000001`) does not show. The run's own arithmetic keeps
/// full precision; only the printed value is rounded (deterministically).
pub fn round_sig(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    format!("{:.*e}", SIGNIFICANT_DIGITS - 1, x).parse().unwrap_or(x)
}

/// Round every float in a JSON document with [`round_sig`] (integers stay as they are).
pub fn round_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(r) = n.as_f64().map(round_sig).and_then(serde_json::Number::from_f64) {
                *n = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(round_json),
        serde_json::Value::Object(o) => o.values_mut().for_each(round_json),
        _ => {}
    }
}

/// A summary as a JSON value with its floats rounded ([`round_json`]), as `summary.json` has
/// them (for the CSV tables made from it).
pub fn summary_value(s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).expect("summary serialises");
    round_json(&mut v);
    v
}

/// Quote a CSV field if it needs it (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns of `flows.csv`: the scalar keys of a flow in `summary.json`.
pub const FLOW_COLUMNS: [&str; 19] = [
    "id",
    "name",
    "kind",
    "src",
    "dst",
    "cc",
    "goodput_bps",
    "throughput_bps",
    "bytes_delivered",
    "data_packets_sent",
    "retransmitted_packets",
    "retransmit_ratio",
    "timeouts",
    "fast_retransmits",
    "rtt_samples",
    "rtt_mean_ms",
    "rtt_min_ms",
    "rtt_max_ms",
    "transfers_completed",
];

/// The columns of `links.csv`: the scalar keys of a link direction in `summary.json`.
pub const LINK_COLUMNS: [&str; 13] = [
    "name",
    "from",
    "to",
    "rate_bps",
    "tx_packets",
    "tx_bytes",
    "drops",
    "lost",
    "utilization",
    "queue_avg_pkts",
    "queue_max_pkts",
    "tcp_goodput_bps",
    "goodput_utilization",
];

/// A JSON value as one CSV field: empty for null or missing, a string quoted if it needs it,
/// anything else as its JSON text.
pub fn json_cell(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => csv_field(s),
        Some(v) => v.to_string(),
    }
}

/// Write one CSV row per JSON object of `items`: per column (header, path), the value at the
/// `/`-separated path of keys (e.g. `sim/goodput_bps`).
pub fn write_json_csv<'a>(
    p: &Path,
    items: impl IntoIterator<Item = &'a serde_json::Value>,
    cols: &[(&str, &str)],
) -> Result<(), RunError> {
    let header: Vec<&str> = cols.iter().map(|c| c.0).collect();
    let rows = items.into_iter().map(|x| {
        let cell = |path: &str| json_cell(path.split('/').try_fold(x, |v, k| v.get(k)));
        cols.iter().map(|c| cell(c.1)).collect::<Vec<_>>().join(",")
    });
    write_csv(p, &header.join(","), rows)
}

/// Write a CSV file of `header` and `rows` (fields already formatted).
pub fn write_csv(p: &Path, header: &str, rows: impl IntoIterator<Item = String>) -> Result<(), RunError> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(p).map_err(io_err(p))?);
    writeln!(w, "{header}").map_err(io_err(p))?;
    for r in rows {
        writeln!(w, "{r}").map_err(io_err(p))?;
    }
    w.flush().map_err(io_err(p))
}

/// Write `summary.json`, `flows.csv`, `links.csv`, `timeseries.csv`, `goodput.svg`, (if any link
/// queued) `queues.csv` and `queue.svg`, and (if traced) `trace.csv` and `cwnd.svg` into `out`;
/// returns the files written.
pub fn write_outputs(sim: &Sim, summary: &Summary, out: &Path) -> Result<Vec<PathBuf>, RunError> {
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let mut files = Vec::new();
    let p = out.join("summary.json");
    std::fs::write(&p, summary_json(summary)).map_err(io_err(&p))?;
    let doc = summary_value(summary);
    files.push(p);
    let p = out.join("flows.csv");
    write_json_csv(&p, doc["flows"].as_array().into_iter().flatten(), &FLOW_COLUMNS.map(|k| (k, k)))?;
    files.push(p);
    let p = out.join("links.csv");
    write_json_csv(&p, doc["links"].as_array().into_iter().flatten(), &LINK_COLUMNS.map(|k| (k, k)))?;
    files.push(p);
    let p = out.join("timeseries.csv");
    write_csv(
        &p,
        "t_end_s,flow,goodput_bps",
        sim.goodput_series().into_iter().map(|(t, f, g)| format!("{t},{f},{g}")),
    )?;
    files.push(p);
    // Plots: per-flow goodput (with many flows, its spread per bin), and cwnd when traced.
    let mut series: Vec<Series> =
        summary.flows.iter().map(|f| Series { name: format!("{} ({})", f.name, f.cc), points: Vec::new() }).collect();
    for (t, f, g) in sim.goodput_series() {
        series[f as usize].points.push((t, g));
    }
    let title = if series.len() > FLOW_ROWS_MAX {
        let n = series.len();
        series = goodput_spread(&series);
        format!("{}: goodput per flow, spread over the {n} flows per bin", summary.scenario.name)
    } else {
        format!("{}: goodput per flow", summary.scenario.name)
    };
    files.extend(
        line_chart(&title, "time (s)", "goodput (Mbit/s)", 1e6, &series).write(out, "goodput").map_err(io_err(out))?,
    );
    // Queue length per bin of the link directions that queued anything.
    let queues = sim.queue_series();
    if !queues.is_empty() {
        let names = sim.link_names();
        let p = out.join("queues.csv");
        write_csv(
            &p,
            "t_end_s,link,queue_avg_pkts,queue_max_pkts",
            queues.iter().flat_map(|q| {
                let name = csv_field(&names[q.link]);
                q.bins.iter().map(move |b| format!("{},{name},{},{}", b.t_end_s, b.avg_pkts, b.max_pkts))
            }),
        )?;
        files.push(p);
        // The plot keeps the links with the longest queues (at most QUEUE_PLOT_LINKS, and none
        // whose peak is below a tenth of the longest), so that it stays legible.
        let peak = |q: &QueueSeries| q.bins.iter().map(|b| b.max_pkts).max().unwrap_or(0);
        let mut by_peak: Vec<&QueueSeries> = queues.iter().collect();
        by_peak.sort_by_key(|q| (std::cmp::Reverse(peak(q)), q.link));
        let top = peak(by_peak[0]);
        let series: Vec<Series> = by_peak
            .iter()
            .take(QUEUE_PLOT_LINKS)
            .filter(|q| peak(q) * 10 >= top)
            .map(|q| Series {
                name: names[q.link].clone(),
                points: q.bins.iter().map(|b| (b.t_end_s, b.avg_pkts)).collect(),
            })
            .collect();
        let more = queues.len() - series.len();
        let title = if more > 0 {
            format!(
                "{}: queue length, time average per bin ({more} shorter queues in queues.csv)",
                summary.scenario.name
            )
        } else {
            format!("{}: queue length, time average per bin", summary.scenario.name)
        };
        let plot = line_chart(&title, "time (s)", "queue length (packets)", 1.0, &series);
        files.extend(plot.write(out, "queue").map_err(io_err(out))?);
    }
    if !sim.trace.is_empty() {
        let mut series: Vec<Series> =
            summary.flows.iter().map(|f| Series { name: f.name.clone(), points: Vec::new() }).collect();
        for r in &sim.trace {
            series[r.flow as usize].points.push((r.t_s, r.tr.cwnd_bytes as f64));
        }
        let plot = line_chart(
            &format!("{}: congestion window", summary.scenario.name),
            "time (s)",
            "congestion window (KB)",
            1e3,
            &series,
        );
        files.extend(plot.write(out, "cwnd").map_err(io_err(out))?);
    }
    if !sim.trace.is_empty() {
        let p = out.join("trace.csv");
        let mut w = std::io::BufWriter::new(std::fs::File::create(&p).map_err(io_err(&p))?);
        writeln!(
            w,
            "t_s,flow,cwnd_bytes,ssthresh_bytes,srtt_s,rto_s,in_flight_bytes,rwnd_seen_bytes,pacing_rate_bps,bbr_mode,bbr_bw_bps,bbr_min_rtt_s,bbr_pacing_gain"
        )
        .map_err(io_err(&p))?;
        for r in &sim.trace {
            // BBR's columns stay empty for other controllers.
            let bbr = r.tr.bbr.map_or_else(
                || ",,,".to_string(),
                |b| format!("{},{},{},{}", b.mode.name(), b.bw_bytes_s * 8.0, b.min_rtt.as_secs_f64(), b.pacing_gain),
            );
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{},{}",
                r.t_s,
                r.flow,
                r.tr.cwnd_bytes,
                r.tr.ssthresh_bytes,
                r.tr.srtt.as_secs_f64(),
                r.tr.rto.as_secs_f64(),
                r.tr.in_flight_bytes,
                r.tr.rwnd_seen_bytes,
                r.tr.pacing_rate_bytes_s * 8,
                bbr
            )
            .map_err(io_err(&p))?;
        }
        w.flush().map_err(io_err(&p))?;
        files.push(p);
    }
    Ok(files)
}

/// Per bin, the largest, median, mean and smallest goodput over the flows' series: what
/// `goodput.svg` plots for more than [`FLOW_ROWS_MAX`] flows, whose own lines would be a tangle.
/// The series share their bins (index k is the same bin in each); one that ends early (a live
/// flow's series stops at its last byte) counts as 0 in the bins it lacks.
pub fn goodput_spread(flows: &[Series]) -> Vec<Series> {
    let bins = flows.iter().map(|s| s.points.len()).max().unwrap_or(0);
    let names = ["max", "median", "mean", "min"];
    let mut out: Vec<Series> = names.iter().map(|n| Series { name: (*n).into(), points: Vec::new() }).collect();
    let mut col = Vec::with_capacity(flows.len());
    for k in 0..bins {
        col.clear();
        col.extend(flows.iter().map(|s| s.points.get(k).map_or(0.0, |p| p.1)));
        col.sort_by(f64::total_cmp);
        let Some(t) = flows.iter().find_map(|s| s.points.get(k)).map(|p| p.0) else { continue };
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        for (s, v) in out.iter_mut().zip([col[col.len() - 1], col[col.len() / 2], mean, col[0]]) {
            s.points.push((t, v));
        }
    }
    out
}

/// How many link directions `queue.svg` shows (the ones with the longest queues).
pub const QUEUE_PLOT_LINKS: usize = 8;

/// Above this many flows the table shows the first [`FLOW_ROWS_FOLDED`] and a line on all of them.
pub const FLOW_ROWS_MAX: usize = 40;
/// Flow rows shown when there are more than [`FLOW_ROWS_MAX`].
pub const FLOW_ROWS_FOLDED: usize = 20;

/// A human-readable table of a summary.
pub fn format_table(s: &Summary) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "scenario: {}   seed: {}   simulated: {:.1} s (measured from {:.1} s)   events: {}   wall: {:.3} s",
        s.scenario.name, s.seed, s.scenario.duration_s, s.scenario.measure_from_s, s.sim.events, s.sim.wall_time_s
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:>4} {:<12} {:<8} {:<6} {:>12} {:>12} {:>9} {:>6} {:>5} {:>11}",
        "flow", "name", "kind", "cc", "goodput", "throughput", "retx pkts", "RTOs", "FRs", "rtt avg ms"
    );
    // Many flows (a 100,000-flow gateway run): the first rows, then the spread of all of them.
    let shown = if s.flows.len() > FLOW_ROWS_MAX { FLOW_ROWS_FOLDED } else { s.flows.len() };
    for f in &s.flows[..shown] {
        let _ = writeln!(
            o,
            "{:>4} {:<12} {:<8} {:<6} {:>12} {:>12} {:>9} {:>6} {:>5} {:>11}",
            f.id,
            trunc(&f.name, 12),
            f.kind,
            trunc(&f.cc, 6),
            fmt_rate(f.goodput_bps),
            fmt_rate(f.throughput_bps),
            f.retransmitted_packets,
            f.timeouts,
            f.fast_retransmits,
            if f.rtt_samples == 0 { "n/a".to_string() } else { format!("{:.2}", f.rtt_mean_ms) }
        );
    }
    if shown < s.flows.len() {
        let mut g: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
        g.sort_by(f64::total_cmp);
        let none = g.iter().filter(|&&x| x == 0.0).count();
        let _ = writeln!(
            o,
            "… {} more flows; goodput over all {}: min {}, median {}, max {}; {none} with none (all in summary.json, and flows.csv with --out)",
            s.flows.len() - shown,
            g.len(),
            fmt_rate(g[0]),
            fmt_rate(g[g.len() / 2]),
            fmt_rate(g[g.len() - 1]),
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<18} {:>12} {:>10} {:>8} {:>7} {:>6} {:>10} {:>10}",
        "link", "rate", "tx pkts", "drops", "lost", "util", "q avg pkts", "q max pkts"
    );
    // Many dumbbell access links: show them as one line unless they drop packets.
    let access: Vec<_> = s.links.iter().filter(|l| l.name.starts_with("access-")).collect();
    let fold = access.len() > 8;
    // And of those that drop, the 8 that drop most (in table order), when more do.
    let lossy: Vec<_> = access.iter().filter(|l| l.drops > 0 || l.lost > 0).collect();
    let mut worst: Vec<&str> = Vec::new();
    if fold && lossy.len() > 8 {
        let mut by_drops = lossy.clone();
        by_drops.sort_by_key(|l| std::cmp::Reverse(l.drops + l.lost));
        worst = by_drops[..8].iter().map(|l| l.name.as_str()).collect();
    }
    for l in &s.links {
        if l.tx_packets == 0 && l.drops == 0 {
            continue;
        }
        if fold && l.name.starts_with("access-") && l.drops == 0 && l.lost == 0 {
            continue;
        }
        if !worst.is_empty() && l.name.starts_with("access-") && !worst.contains(&l.name.as_str()) {
            continue;
        }
        let _ = writeln!(
            o,
            "{:<18} {:>12} {:>10} {:>8} {:>7} {:>5.1}% {:>10.2} {:>10}",
            trunc(&l.name, 18),
            fmt_rate(l.rate_bps as f64),
            l.tx_packets,
            l.drops,
            l.lost,
            l.utilization * 100.0,
            l.queue_avg_pkts,
            l.queue_max_pkts
        );
    }
    if !worst.is_empty() {
        let _ = writeln!(
            o,
            "… {} more access link directions with drops or losses: {} dropped, {} lost in all of the {} (all in summary.json)",
            lossy.len() - worst.len(),
            lossy.iter().map(|l| l.drops).sum::<u64>(),
            lossy.iter().map(|l| l.lost).sum::<u64>(),
            lossy.len()
        );
    }
    if fold {
        let quiet: Vec<_> = access.iter().filter(|l| l.drops == 0 && l.lost == 0).collect();
        let umax = quiet.iter().map(|l| l.utilization).fold(0.0, f64::max);
        let qmax = quiet.iter().map(|l| l.queue_max_pkts).max().unwrap_or(0);
        let _ = writeln!(
            o,
            "{} access link directions without drops or losses: utilization ≤ {:.1}%, queue max ≤ {} (all in summary.json)",
            quiet.len(),
            umax * 100.0,
            qmax
        );
    }
    for a in &s.asym_links {
        let _ = writeln!(
            o,
            "asymmetric link {}: up {} ({:.1}% of {}), down {} ({:.1}% of {}); aggregated utilization {:.3} (ideal 2), variance {:.4} (population; sample {:.4})",
            a.link,
            fmt_rate(a.up_goodput_bps),
            a.up_utilization * 100.0,
            fmt_rate(a.up_rate_bps as f64),
            fmt_rate(a.down_goodput_bps),
            a.down_utilization * 100.0,
            fmt_rate(a.down_rate_bps as f64),
            a.aggregated_utilization,
            a.utilization_variance_population,
            a.utilization_variance_sample
        );
    }
    for l in &s.links {
        if let Some(c) = &l.classes {
            let _ = writeln!(
                o,
                "  {:<16} {:<10} ACK queue avg {:.2} max {} ({:.1} ms), data queue avg {:.2} max {}; ACK drops: {} random, {} filtered, {} full",
                trunc(&l.name, 16),
                c.kind,
                c.ack.queue_avg_pkts,
                c.ack.queue_max_pkts,
                c.ack.queue_delay_avg_s * 1e3,
                c.data.queue_avg_pkts,
                c.data.queue_max_pkts,
                c.ack_drops_random,
                c.ack_drops_filtered,
                c.ack_drops_queue_full,
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "aggregate: {} flows, goodput {}, Jain {:.4}, CoV {:.4}",
        s.aggregate.flows,
        fmt_rate(s.aggregate.goodput_bps),
        s.aggregate.jain,
        s.aggregate.cov
    );
    if let Some(st) = &s.short_transfers {
        let _ = writeln!(o, "short transfers: {} completed, mean {:.3} s, CoV {:.3}", st.count, st.mean_s, st.cov);
    }
    if let Some(v) = &s.verify {
        let _ = writeln!(
            o,
            "payload check: {} flows, {} bytes compared, {} mismatched, {} incomplete",
            v.flows_checked, v.bytes_checked, v.mismatched_flows, v.incomplete_flows
        );
    }
    o
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// `12.3 Mbit/s` style.
pub fn fmt_rate(bps: f64) -> String {
    // No "-0 bit/s".
    let bps = if bps == 0.0 { 0.0 } else { bps };
    if bps >= 1e9 {
        format!("{:.3} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.3} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{:.0} bit/s", bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_spread_is_max_median_mean_min_per_bin() {
        let flow = |g: [f64; 2]| Series { name: String::new(), points: vec![(1.0, g[0]), (2.0, g[1])] };
        let spread = goodput_spread(&[flow([1.0, 0.0]), flow([5.0, 0.0]), flow([3.0, 9.0])]);
        let names: Vec<&str> = spread.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["max", "median", "mean", "min"]);
        assert_eq!(spread[0].points, [(1.0, 5.0), (2.0, 9.0)]);
        assert_eq!(spread[1].points, [(1.0, 3.0), (2.0, 0.0)]);
        assert_eq!(spread[2].points, [(1.0, 3.0), (2.0, 3.0)]);
        assert_eq!(spread[3].points, [(1.0, 1.0), (2.0, 0.0)]);
        assert!(goodput_spread(&[]).iter().all(|s| s.points.is_empty()));
        // A series that ends early counts as 0 where it has no bin.
        let short = Series { name: String::new(), points: vec![(1.0, 4.0)] };
        let spread = goodput_spread(&[flow([2.0, 6.0]), short]);
        assert_eq!(spread[0].points, [(1.0, 4.0), (2.0, 6.0)]);
        assert_eq!(spread[3].points, [(1.0, 2.0), (2.0, 0.0)]);
    }

    #[test]
    fn printed_floats_lose_their_last_bit_noise_and_nothing_else() {
        assert_eq!(round_sig(60.00000000000001), 60.0);
        assert_eq!(round_sig(47.324999999999996), 47.325);
        assert_eq!(round_sig(984218.7636363637), 984218.763636);
        assert_eq!(round_sig(0.00510204081632653), 0.00510204081633);
        assert_eq!(round_sig(0.0), 0.0);
        let mut v = serde_json::json!({ "a": [60.00000000000001, 3], "b": { "c": 0.1 + 0.2 } });
        round_json(&mut v);
        assert_eq!(v.to_string(), r#"{"a":[60.0,3],"b":{"c":0.3}}"#);
    }

    #[test]
    fn json_csv_follows_paths_quotes_strings_and_leaves_missing_values_empty() {
        let d = std::env::temp_dir().join(format!("ackshape-jsoncsv-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("t.csv");
        let rows = serde_json::json!([
            { "name": "a,b", "sim": { "x": 1.5, "sd": { "x": 0 } }, "ok": true },
            { "name": "say \"hi\"", "sim": { "x": null }, "ok": false },
        ]);
        let cols = [("name", "name"), ("sim_x", "sim/x"), ("sd", "sim/sd/x"), ("ok", "ok")];
        write_json_csv(&p, rows.as_array().unwrap(), &cols).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "name,sim_x,sd,ok\n\"a,b\",1.5,0,true\n\"say \"\"hi\"\"\",,,false\n");
        std::fs::remove_dir_all(&d).ok();
    }
}

//! Minimal SVG line charts for run outputs (goodput and cwnd time series). Hand-written to keep
//! the simulator free of plotting dependencies; the files open in any browser.

use std::fmt::Write;

/// One named series of (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

fn nice_step(range: f64) -> f64 {
    let raw = range / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let k = if n < 1.5 {
        1.0
    } else if n < 3.5 {
        2.0
    } else if n < 7.5 {
        5.0
    } else {
        10.0
    };
    k * mag
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Render a line chart. `y_scale` divides y values for display (e.g. 1e6 for Mbit/s).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, y_scale: f64, series: &[Series]) -> String {
    let (w, h) = (900.0, 500.0);
    let (l, r, t, b) = (80.0, 180.0, 40.0, 60.0);
    let pw = w - l - r;
    let ph = h - t - b;
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y / y_scale);
    }
    if !x0.is_finite() {
        x0 = 0.0;
        x1 = 1.0;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    let ys = nice_step(y1);
    let y1 = (y1 / ys).ceil() * ys;
    let xs = nice_step(x1 - x0);
    let px = |x: f64| l + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| t + ph - y / y1 * ph;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ =
        writeln!(o, r#"<text x="{}" y="24" font-size="16" text-anchor="middle">{}</text>"#, l + pw / 2.0, esc(title));
    // Grid and ticks.
    let mut y = 0.0;
    while y <= y1 + 1e-9 {
        let yy = py(y);
        let _ = writeln!(o, r##"<line x1="{l}" y1="{yy}" x2="{}" y2="{yy}" stroke="#ddd"/>"##, l + pw);
        let _ = writeln!(o, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, l - 6.0, yy + 4.0, fmt_tick(y));
        y += ys;
    }
    let mut x = (x0 / xs).ceil() * xs;
    while x <= x1 + 1e-9 {
        let xx = px(x);
        let _ = writeln!(o, r##"<line x1="{xx}" y1="{t}" x2="{xx}" y2="{}" stroke="#eee"/>"##, t + ph);
        let _ = writeln!(o, r#"<text x="{xx}" y="{}" text-anchor="middle">{}</text>"#, t + ph + 18.0, fmt_tick(x));
        x += xs;
    }
    let _ = writeln!(o, r#"<rect x="{l}" y="{t}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#);
    let _ = writeln!(o, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, l + pw / 2.0, h - 15.0, esc(x_label));
    let _ = writeln!(
        o,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">{}</text>"#,
        t + ph / 2.0,
        t + ph / 2.0,
        esc(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let mut d = String::new();
        for (k, &(x, y)) in s.points.iter().enumerate() {
            let _ = write!(d, "{}{:.1},{:.1}", if k == 0 { "M" } else { " L" }, px(x), py(y / y_scale));
        }
        let _ = writeln!(o, r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"/>"#);
        if i < 20 {
            let ly = t + 10.0 + i as f64 * 16.0;
            let _ = writeln!(
                o,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"/>"#,
                w - r + 10.0,
                w - r + 30.0
            );
            let _ = writeln!(o, r#"<text x="{}" y="{}">{}</text>"#, w - r + 36.0, ly + 4.0, esc(&s.name));
        } else if i == 20 {
            let _ = writeln!(
                o,
                r#"<text x="{}" y="{}">… {} more</text>"#,
                w - r + 10.0,
                t + 10.0 + 20.0 * 16.0,
                series.len() - 20
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

fn fmt_tick(v: f64) -> String {
    if v == v.round() {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn renders_every_series() {
        let s = vec![
            Series { name: "a<b".into(), points: vec![(0.0, 1e6), (1.0, 2e6)] },
            Series { name: "c".into(), points: vec![(0.0, 0.0), (1.0, 3e6)] },
        ];
        let svg = line_chart("t", "x", "y", 1e6, &s);
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains("a&lt;b"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}

//! Minimal SVG line charts for run outputs (goodput and cwnd time series, [`line_chart`]) and x/y
//! plots of sweeps with several styled series, a legend and reference lines ([`xy_chart`], used
//! by `reproduce`). Hand-written to keep the simulator free of plotting dependencies; the files
//! open in any browser.

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
    let (size, tx) = title_fit(title, 16.0, l + pw / 2.0, pw, w);
    let _ = writeln!(o, r#"<text x="{tx:.1}" y="24" font-size="{size:.1}" text-anchor="middle">{}</text>"#, esc(title));
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

/// A series of an [`xy_chart`]: points (NaN y values leave a gap), with a style.
#[derive(Clone, Debug, Default)]
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Dashed line (e.g. a model next to simulation).
    pub dashed: bool,
    /// Draw a marker at each point.
    pub markers: bool,
    /// Index into the palette (default: the series' position), so that the same discipline keeps
    /// its colour across plots.
    pub color: Option<usize>,
    /// Vertical error bars: (x, low, high) per point.
    pub err: Vec<(f64, f64, f64)>,
}

/// Axes and decorations of an [`xy_chart`].
#[derive(Clone, Debug, Default)]
pub struct XyChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis (all x must be > 0).
    pub log_x: bool,
    /// Fixed y range; default 0 to the data's maximum, rounded up.
    pub y_range: Option<(f64, f64)>,
    /// Horizontal reference lines: (y, label), e.g. a paper's bound.
    pub hlines: Vec<(f64, String)>,
}

/// Font size and centre of a title: `size` centred at `centre` if it fits in `room`, else centred
/// on the image (`width`), in a smaller font (not below 9) if it does not fit there either.
fn title_fit(title: &str, size: f64, centre: f64, room: f64, width: f64) -> (f64, f64) {
    let em = 0.55 * title.chars().count() as f64;
    if em * size <= room {
        return (size, centre);
    }
    (((width - 20.0) / em).clamp(9.0, size), width / 2.0)
}

/// Render an x/y plot of several curves with a legend.
pub fn xy_chart(c: &XyChart, curves: &[Curve]) -> String {
    // The legend's column widens (and the image with it) for names longer than ~28 characters.
    let longest = curves.iter().map(|s| s.name.chars().count()).max().unwrap_or(0) as f64;
    let r = (44.0 + 6.8 * longest).clamp(230.0, 600.0);
    let (w, h) = (670.0 + r, 520.0);
    let (l, t, b) = (80.0, 40.0, 60.0);
    let pw = w - l - r;
    let ph = h - t - b;
    let tx = |x: f64| if c.log_x { x.max(1e-300).log10() } else { x };
    let finite = |v: &f64| v.is_finite();
    let xs: Vec<f64> = curves.iter().flat_map(|s| s.points.iter().map(|p| tx(p.0))).filter(finite).collect();
    let ys: Vec<f64> = curves
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.err.iter().map(|e| e.2)))
        .chain(c.hlines.iter().map(|h| h.0))
        .filter(finite)
        .collect();
    let (mut x0, mut x1) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let (y0, y1) = match c.y_range {
        Some(r) => r,
        None => {
            let top = ys.iter().cloned().fold(0.0f64, f64::max);
            let bot = ys.iter().cloned().fold(0.0f64, f64::min);
            let top = if top <= bot { bot + 1.0 } else { top };
            let st = nice_step(top - bot);
            ((bot / st).floor() * st, (top / st).ceil() * st)
        }
    };
    let ystep = nice_step(y1 - y0);
    let px = |x: f64| l + (tx(x) - x0) / (x1 - x0) * pw;
    let py = |y: f64| t + ph - (y.clamp(y0, y1) - y0) / (y1 - y0) * ph;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // The title centred over the plot; a longer one over the whole image, and one longer than the
    // image in a smaller font (about 0.55 em per character of sans-serif).
    let (size, tx_title) = title_fit(&c.title, 15.0, l + pw / 2.0, pw, w);
    let _ = writeln!(
        o,
        r#"<text x="{tx_title:.1}" y="24" font-size="{size:.1}" text-anchor="middle">{}</text>"#,
        esc(&c.title)
    );
    let mut y = y0;
    while y <= y1 + 1e-9 * (y1 - y0) {
        let yy = py(y);
        let _ = writeln!(o, r##"<line x1="{l}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="#ddd"/>"##, l + pw);
        let _ = writeln!(o, r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#, l - 6.0, yy + 4.0, fmt_tick(y));
        y += ystep;
    }
    // x ticks: decades (1, 2, 5 × 10^k) on a log axis, nice steps otherwise.
    let mut ticks = Vec::new();
    if c.log_x {
        let (d0, d1) = (x0.floor() as i32, x1.ceil() as i32);
        for d in d0..=d1 {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(d);
                if v.log10() >= x0 - 1e-9 && v.log10() <= x1 + 1e-9 {
                    ticks.push(v);
                }
            }
        }
    } else {
        let xs = nice_step(x1 - x0);
        let mut x = (x0 / xs).ceil() * xs;
        while x <= x1 + 1e-9 {
            ticks.push(x);
            x += xs;
        }
    }
    for x in ticks {
        let xx = px(x);
        let _ = writeln!(o, r##"<line x1="{xx:.1}" y1="{t}" x2="{xx:.1}" y2="{}" stroke="#eee"/>"##, t + ph);
        let _ = writeln!(o, r#"<text x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"#, t + ph + 18.0, fmt_tick(x));
    }
    let _ = writeln!(o, r#"<rect x="{l}" y="{t}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#);
    let _ =
        writeln!(o, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, l + pw / 2.0, h - 15.0, esc(&c.x_label));
    let _ = writeln!(
        o,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">{}</text>"#,
        t + ph / 2.0,
        t + ph / 2.0,
        esc(&c.y_label)
    );
    for (y, label) in &c.hlines {
        if *y < y0 || *y > y1 {
            continue;
        }
        let yy = py(*y);
        let _ = writeln!(
            o,
            r##"<line x1="{l}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="#555" stroke-dasharray="2,3"/>"##,
            l + pw
        );
        let _ = writeln!(o, r##"<text x="{}" y="{:.1}" fill="#555">{}</text>"##, l + 4.0, yy - 4.0, esc(label));
    }
    for (i, s) in curves.iter().enumerate() {
        let col = COLORS[s.color.unwrap_or(i) % COLORS.len()];
        let dash = if s.dashed { r#" stroke-dasharray="6,4""# } else { "" };
        let mut d = String::new();
        let mut pen_up = true;
        for &(x, y) in &s.points {
            if !x.is_finite() || !y.is_finite() || (c.log_x && x <= 0.0) {
                pen_up = true;
                continue;
            }
            let _ = write!(d, "{}{:.1},{:.1}", if pen_up { " M" } else { " L" }, px(x), py(y));
            pen_up = false;
        }
        if !d.is_empty() {
            let _ =
                writeln!(o, r#"<path d="{}" fill="none" stroke="{col}" stroke-width="1.8"{dash}/>"#, d.trim_start());
        }
        if s.markers {
            for &(x, y) in &s.points {
                if x.is_finite() && y.is_finite() && !(c.log_x && x <= 0.0) {
                    let _ = writeln!(o, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{col}"/>"#, px(x), py(y));
                }
            }
        }
        for &(x, lo, hi) in &s.err {
            if x.is_finite() && lo.is_finite() && hi.is_finite() && !(c.log_x && x <= 0.0) {
                let _ = writeln!(
                    o,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{col}"/>"#,
                    px(x),
                    py(lo),
                    px(x),
                    py(hi)
                );
            }
        }
        let ly = t + 10.0 + i as f64 * 16.0;
        let _ = writeln!(
            o,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{col}" stroke-width="2"{dash}/>"#,
            w - r + 10.0,
            w - r + 34.0
        );
        let _ = writeln!(o, r#"<text x="{}" y="{}">{}</text>"#, w - r + 40.0, ly + 4.0, esc(&s.name));
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

    #[test]
    fn long_titles_move_to_the_image_centre_and_shrink_to_fit() {
        // Short: centred over the plot, full size.
        assert_eq!(title_fit("short", 15.0, 375.0, 590.0, 900.0), (15.0, 375.0));
        // Wider than the plot, narrower than the image: centred on the image, full size.
        let mid = "x".repeat(80);
        assert_eq!(title_fit(&mid, 15.0, 375.0, 590.0, 900.0), (15.0, 450.0));
        // Wider than the image: smaller, so that 0.55 em per character fits in 880 px.
        let long = "x".repeat(150);
        let (size, x) = title_fit(&long, 15.0, 375.0, 590.0, 900.0);
        assert!(size < 15.0 && size * 0.55 * 150.0 <= 880.0 + 1e-9 && x == 450.0, "{size}");
        // Never below 9.
        assert_eq!(title_fit(&"x".repeat(1000), 15.0, 375.0, 590.0, 900.0).0, 9.0);
    }

    #[test]
    fn xy_chart_styles_gaps_and_log_axis() {
        let curves = vec![
            Curve {
                name: "sim".into(),
                points: vec![(1.0, 0.5), (10.0, f64::NAN), (100.0, 1.5)],
                markers: true,
                ..Default::default()
            },
            Curve {
                name: "model".into(),
                points: vec![(1.0, 1.0), (200.0, 1.2)],
                dashed: true,
                color: Some(3),
                ..Default::default()
            },
        ];
        let c = XyChart { title: "t".into(), log_x: true, hlines: vec![(0.3, "bound".into())], ..Default::default() };
        let svg = xy_chart(&c, &curves);
        // The NaN point splits the first curve into two sub-paths; two markers are drawn.
        let first = svg.lines().find(|l| l.starts_with("<path")).unwrap();
        assert_eq!(first.matches('M').count(), 2, "{first}");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("stroke-dasharray=\"6,4\"") && svg.contains(COLORS[3]));
        assert!(svg.contains(">bound<") && svg.contains(">100<") && svg.contains(">model<"));
    }
}

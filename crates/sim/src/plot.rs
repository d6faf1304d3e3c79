//! Plots of run, sweep and reproduction results, drawn with `plotters` as SVG and PNG from one
//! description.
//!
//! A [`Plot`] is built by [`line_chart`] (time series: one line per flow or link) or [`xy_chart`]
//! (x/y curves with markers, error bars, reference lines), refined with builder methods (a log
//! axis, ticks at swept values, the paper's values overlaid) and written with [`Plot::write`],
//! which writes `NAME.svg` and `NAME.png`.
//!
//! What every plot does, whatever its data:
//! - text is set in the font shipped with ackshape (Liberation Sans, SIL Open Font License, in
//!   `crates/sim/assets/fonts/`): a PNG looks the same on every machine, and the layout is measured
//!   with the font's own metrics; the SVG names it first, then the metric-compatible Arial and
//!   Helvetica;
//! - each series differs in colour, marker shape and (time series) dash pattern, so that it can be
//!   told apart in greyscale; at most [`MAX_SERIES_PER_PANEL`] series share a panel, more are
//!   drawn as small multiples with the same axes;
//! - the legend sits beside the plot, sized to its longest entry (long names wrap);
//! - lines are clipped to the axes' ranges, markers outside them are left out;
//! - after drawing, the layout is checked from what was drawn: every text's glyph box lies inside
//!   the image and overlaps no other text, and every data mark lies inside its axes. A violation
//!   is returned by [`Plot::render`] and logged as a warning by [`Plot::write`].

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;
use plotters_backend::{BackendColor, BackendCoord, DrawingBackend as Backend, DrawingErrorKind};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One named series of (x, y) points, for [`line_chart`].
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A series of an [`xy_chart`]: points (NaN y values leave a gap), with a style.
#[derive(Clone, Debug, Default)]
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Dashed line (e.g. a model next to simulation).
    pub dashed: bool,
    /// Draw a marker at each point (otherwise at a few, to tell the series apart).
    pub markers: bool,
    /// Index into the palette and the marker shapes (default: the series' position in its panel),
    /// so that the same discipline keeps its look across plots.
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
    /// Logarithmic x axis, base 10 (all x must be > 0); [`Plot::log_x`] takes another base.
    pub log_x: bool,
    /// Fixed y range; default from the data (from 0 when all values are positive), rounded out.
    pub y_range: Option<(f64, f64)>,
    /// Horizontal reference lines: (y, label), e.g. a paper's bound.
    pub hlines: Vec<(f64, String)>,
}

/// At most this many series share a panel; more are drawn as small multiples.
pub const MAX_SERIES_PER_PANEL: usize = 10;

/// How a series' line is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dash {
    Solid,
    Dashed,
    Dotted,
    LongDash,
}

#[derive(Clone, Debug)]
struct Line {
    curve: Curve,
    dash: Dash,
    /// The paper's values: black, hollow markers, thin dotted line.
    paper: bool,
}

/// A plot: its data and axes; rendered as SVG and PNG by [`Plot::render`].
#[derive(Clone, Debug, Default)]
pub struct Plot {
    title: String,
    x_label: String,
    y_label: String,
    /// Base of a logarithmic x axis.
    log_x: Option<f64>,
    /// Ticks (x, label) instead of computed ones: swept values, or names of categories.
    x_ticks: Option<Vec<(f64, String)>>,
    y_range: Option<(f64, f64)>,
    hlines: Vec<(f64, String)>,
    lines: Vec<Line>,
    /// Made by [`line_chart`]: a time series with many points runs from edge to edge.
    series: bool,
}

/// A rendered plot.
pub struct Rendered {
    pub svg: String,
    pub png: Vec<u8>,
    /// Layout violations found while drawing (text outside the image or overlapping other text,
    /// data outside its axes); empty for a good plot.
    pub problems: Vec<String>,
}

/// A line chart of series, e.g. goodput over time. `y_scale` divides y values for display (e.g.
/// 1e6 for Mbit/s). Series differ in colour, dash pattern and marker shape.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, y_scale: f64, series: &[Series]) -> Plot {
    const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::LongDash];
    let lines = series
        .iter()
        .enumerate()
        .map(|(i, s)| Line {
            curve: Curve {
                name: s.name.clone(),
                points: s.points.iter().map(|&(x, y)| (x, y / y_scale)).collect(),
                ..Default::default()
            },
            dash: DASHES[(i % MAX_SERIES_PER_PANEL) % DASHES.len()],
            paper: false,
        })
        .collect();
    Plot {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        lines,
        series: true,
        ..Default::default()
    }
}

/// An x/y plot of several curves with a legend.
pub fn xy_chart(c: &XyChart, curves: &[Curve]) -> Plot {
    Plot {
        title: c.title.clone(),
        x_label: c.x_label.clone(),
        y_label: c.y_label.clone(),
        log_x: c.log_x.then_some(10.0),
        y_range: c.y_range,
        hlines: c.hlines.clone(),
        lines: curves
            .iter()
            .map(|cv| Line {
                curve: cv.clone(),
                dash: if cv.dashed { Dash::Dashed } else { Dash::Solid },
                paper: false,
            })
            .collect(),
        ..Default::default()
    }
}

impl Plot {
    /// A logarithmic x axis of this base (10, or e.g. 3 for buffer sizes 1, 3, 9, …, 243); ticks
    /// at its powers, labelled with the values themselves.
    pub fn log_x(mut self, base: f64) -> Self {
        self.log_x = Some(base);
        self
    }

    /// Ticks at these x values (the swept values), labelled with the values.
    pub fn x_ticks(mut self, xs: &[f64]) -> Self {
        self.x_ticks = Some(xs.iter().map(|&x| (x, fmt_num(x))).collect());
        self
    }

    /// Ticks at these x positions with these labels (e.g. the names of swept disciplines).
    pub fn x_tick_labels(mut self, ticks: Vec<(f64, String)>) -> Self {
        self.x_ticks = Some(ticks);
        self
    }

    /// Overlay the paper's values as a series of their own (black hollow markers and a thin
    /// dotted line, in every panel), named e.g. "paper: RED".
    pub fn paper(mut self, name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        let k = self.lines.iter().filter(|l| l.paper).count();
        self.lines.push(Line {
            curve: Curve { name: name.into(), points, markers: true, color: Some(k), ..Default::default() },
            dash: Dash::Dotted,
            paper: true,
        });
        self
    }

    /// A horizontal reference line with a label.
    pub fn hline(mut self, y: f64, label: impl Into<String>) -> Self {
        self.hlines.push((y, label.into()));
        self
    }

    /// The title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The names of the series, in order (the paper's values last).
    pub fn series_names(&self) -> Vec<&str> {
        self.lines.iter().map(|l| l.curve.name.as_str()).collect()
    }

    /// The plot as SVG text.
    pub fn svg(&self) -> String {
        let mut s = String::new();
        let _ = self.draw_svg(&mut s);
        s
    }

    /// The plot as a PNG file's bytes (twice the SVG's pixel size).
    pub fn png(&self) -> Vec<u8> {
        self.draw_png().0
    }

    /// Render both formats and check the layout.
    pub fn render(&self) -> Rendered {
        let mut svg = String::new();
        let mut problems = self.draw_svg(&mut svg);
        let (png, p) = self.draw_png();
        for x in p {
            if !problems.contains(&x) {
                problems.push(format!("PNG: {x}"));
            }
        }
        Rendered { svg, png, problems }
    }

    /// Write `dir/NAME.svg` and `dir/NAME.png` (`name` with or without `.svg`); returns both
    /// paths. Layout problems (which a test keeps from happening) are logged as warnings.
    pub fn write(&self, dir: &Path, name: &str) -> std::io::Result<Vec<PathBuf>> {
        let stem = name.strip_suffix(".svg").unwrap_or(name);
        let r = self.render();
        for p in &r.problems {
            tracing::warn!("plot layout: {stem}: {p}");
        }
        let svg = dir.join(format!("{stem}.svg"));
        std::fs::write(&svg, &r.svg)?;
        let png = dir.join(format!("{stem}.png"));
        std::fs::write(&png, &r.png)?;
        Ok(vec![svg, png])
    }

    fn draw_svg(&self, out: &mut String) -> Vec<String> {
        let geo = self.geometry(1.0);
        let log = Rc::new(RefCell::new(Log::default()));
        {
            let backend = Recorder { inner: SVGBackend::with_string(out, (geo.w, geo.h)), log: log.clone() };
            if let Err(e) = self.draw(backend.into_drawing_area(), &geo, &log) {
                log.borrow_mut().problems.push(format!("drawing failed: {e}"));
            }
        }
        let problems = log.borrow().problems.clone();
        problems
    }

    fn draw_png(&self) -> (Vec<u8>, Vec<String>) {
        let geo = self.geometry(PNG_SCALE);
        let log = Rc::new(RefCell::new(Log::default()));
        let mut buf = vec![255u8; geo.w as usize * geo.h as usize * 3];
        {
            let backend = Recorder { inner: BitMapBackend::with_buffer(&mut buf, (geo.w, geo.h)), log: log.clone() };
            if let Err(e) = self.draw(backend.into_drawing_area(), &geo, &log) {
                log.borrow_mut().problems.push(format!("drawing failed: {e}"));
            }
        }
        let mut png = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut png, geo.w, geo.h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            match enc.write_header().and_then(|mut w| w.write_image_data(&buf)) {
                Ok(()) => {}
                Err(e) => log.borrow_mut().problems.push(format!("PNG encoding failed: {e}")),
            }
        }
        let problems = log.borrow().problems.clone();
        (png, problems)
    }
}

/// PNG pixels per SVG pixel.
const PNG_SCALE: f64 = 2.0;

/// Colours: the Okabe–Ito palette (distinct for the common colour-vision deficiencies) with two
/// more; the marker shape and dash pattern tell series apart where colour does not.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0x8C, 0x56, 0x4B),
    RGBColor(0x88, 0x88, 0x88),
    RGBColor(0xB8, 0xA4, 0x00),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
    CircleOpen,
    SquareOpen,
    TriangleOpen,
    Cross,
    Plus,
}

const MARKERS: [Marker; 10] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::CircleOpen,
    Marker::SquareOpen,
    Marker::TriangleOpen,
    Marker::Cross,
    Marker::Plus,
];

/// The paper's values: hollow shapes in black.
const PAPER_MARKERS: [Marker; 3] = [Marker::CircleOpen, Marker::SquareOpen, Marker::TriangleOpen];

/// The family name under which the shipped font is registered; plotters writes it into the SVG
/// as the `font-family`, so browsers without Liberation Sans use a metric-compatible one.
const FAMILY: &str = "Liberation Sans, Arial, Helvetica, sans-serif";
static FONT: &[u8] = include_bytes!("../assets/fonts/LiberationSans-Regular.ttf");

fn font_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            tracing::error!("the plot font could not be loaded; plots will have no text");
        }
    });
}

fn font(size: f64) -> FontDesc<'static> {
    font_once();
    FontDesc::new(FontFamily::Name(FAMILY), size, FontStyle::Normal)
}

/// Width of `text` in pixels at `size`.
fn text_w(text: &str, size: f64) -> f64 {
    font(size).box_size(text).map_or(0.6 * size * text.chars().count() as f64, |b| b.0 as f64)
}

/// Split `text` into lines no wider than `width` at `size`, at spaces (and after commas); a word
/// wider than the line is cut with "…".
fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let cand = if cur.is_empty() { word.to_string() } else { format!("{cur} {word}") };
        if text_w(&cand, size) <= width || cur.is_empty() {
            cur = cand;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        }
    }
    lines.push(cur);
    for l in &mut lines {
        if text_w(l, size) > width {
            let mut s: String = l.clone();
            while !s.is_empty() && text_w(&format!("{s}…"), size) > width {
                s.pop();
            }
            *l = format!("{s}…");
        }
    }
    lines
}

/// The layout of a rendering at a scale (1 for SVG, [`PNG_SCALE`] for PNG): every size in pixels.
struct Geometry {
    s: f64,
    w: u32,
    h: u32,
    title: Vec<String>,
    title_size: f64,
    label_size: f64,
    tick_size: f64,
    legend_size: f64,
    /// Per panel: the lines it shows (indices into `Plot::lines`).
    panels: Vec<Vec<usize>>,
    /// Top of the first panel, and each panel's height (plot area plus the x axis below it).
    top: i32,
    panel_h: i32,
    /// Left edge and width of the plot area.
    plot_x: i32,
    plot_w: i32,
    plot_h: i32,
    y_area: i32,
    x_area: i32,
    x_label: Vec<String>,
    legend_x: i32,
    legend_text_w: f64,
    /// Data ranges (x in axis units: log_b of the value on a log axis).
    x_range: (f64, f64),
    y_range: (f64, f64),
    x_ticks: Vec<(f64, String)>,
    y_ticks: Vec<(f64, String)>,
}

impl Plot {
    /// x in axis units (the logarithm on a log axis); None where it cannot be drawn.
    fn ax(&self, x: f64) -> Option<f64> {
        match self.log_x {
            Some(b) if x > 0.0 => Some(x.ln() / b.ln()),
            Some(_) => None,
            None => Some(x),
        }
    }

    fn geometry(&self, s: f64) -> Geometry {
        let px = |v: f64| (v * s).round() as i32;
        let (title_size, label_size, tick_size, legend_size) = (18.0 * s, 15.0 * s, 14.0 * s, 14.0 * s);
        // Panels: the data series, at most MAX_SERIES_PER_PANEL per panel, evenly split; the
        // paper's values in each.
        let data: Vec<usize> = (0..self.lines.len()).filter(|&i| !self.lines[i].paper).collect();
        let paper: Vec<usize> = (0..self.lines.len()).filter(|&i| self.lines[i].paper).collect();
        let n_panels = data.len().div_ceil(MAX_SERIES_PER_PANEL).max(1);
        let per = data.len().div_ceil(n_panels).max(1);
        let mut panels: Vec<Vec<usize>> = data.chunks(per).map(|c| c.iter().chain(&paper).copied().collect()).collect();
        if panels.is_empty() {
            panels.push(paper.clone());
        }
        // Ranges and ticks.
        let (x_range, y_range) = self.ranges();
        let x_ticks = self.x_tick_values(x_range);
        let y_ticks = y_tick_values(y_range);
        // The legend: its text column as wide as the longest entry, up to 300 px, wrapped beyond.
        let max_legend = 300.0 * s;
        let legend_text_w = self
            .lines
            .iter()
            .map(|l| {
                wrap(&l.curve.name, legend_size, max_legend).iter().map(|t| text_w(t, legend_size)).fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        let legend_w =
            if self.lines.is_empty() { 0 } else { px(16.0 + 34.0 + 8.0 + 12.0) + legend_text_w.ceil() as i32 };
        let legend_h = |p: &Vec<usize>| -> i32 {
            px(12.0)
                + p.iter()
                    .map(|&i| {
                        wrap(&self.lines[i].curve.name, legend_size, max_legend).len() as i32 * px(18.0) + px(4.0)
                    })
                    .sum::<i32>()
        };
        let tallest_legend = panels.iter().map(legend_h).max().unwrap_or(0);
        // The y axis: tick labels and the rotated label.
        let y_tick_w = y_ticks.iter().map(|t| text_w(&t.1, tick_size)).fold(0.0, f64::max);
        let plot_h = px(if panels.len() > 1 { 260.0 } else { 360.0 }).max(tallest_legend);
        let y_lines = wrap(&self.y_label, label_size, plot_h as f64).len() as i32;
        let y_area = px(6.0 + 8.0) + y_tick_w.ceil() as i32 + px(10.0) + y_lines * (label_size * 1.3).ceil() as i32;
        let plot_w = px(620.0);
        let m = px(14.0);
        let w = m + y_area + plot_w + px(18.0) + legend_w + m;
        let title = wrap(&self.title, title_size, (w - 2 * m) as f64);
        let top = m + title.len() as i32 * (title_size * 1.3).ceil() as i32 + px(10.0);
        let x_label = wrap(&self.x_label, label_size, plot_w as f64);
        let x_area = px(8.0)
            + (tick_size * 1.3).ceil() as i32
            + px(8.0)
            + x_label.len() as i32 * (label_size * 1.3).ceil() as i32;
        let panel_h = plot_h + x_area + px(16.0);
        let h = top + panels.len() as i32 * panel_h + m;
        Geometry {
            s,
            w: w as u32,
            h: h as u32,
            title,
            title_size,
            label_size,
            tick_size,
            legend_size,
            panels,
            top,
            panel_h,
            plot_x: m + y_area,
            plot_w,
            plot_h,
            y_area,
            x_area,
            x_label,
            legend_x: m + y_area + plot_w + px(18.0),
            legend_text_w,
            x_range,
            y_range,
            x_ticks,
            y_ticks,
        }
    }

    /// The x range (axis units) and y range of the plot.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|l| l.curve.points.iter())
            .filter(|p| p.1.is_finite())
            .filter_map(|p| self.ax(p.0))
            .filter(|x| x.is_finite())
            .collect();
        if let Some(t) = &self.x_ticks {
            xs.extend(t.iter().filter_map(|t| self.ax(t.0)));
        }
        let (mut x0, mut x1) = min_max(&xs).unwrap_or((0.0, 1.0));
        if x1 <= x0 {
            (x0, x1) = (x0 - 0.5, x1 + 0.5);
        }
        let dense = self.series && self.lines.iter().any(|l| l.curve.points.len() > 30);
        if !dense {
            // Room for the markers at the ends (a time series runs edge to edge).
            let pad = 0.04 * (x1 - x0);
            (x0, x1) = (x0 - pad, x1 + pad);
        }
        let y_range = match self.y_range {
            Some(r) if r.1 > r.0 => r,
            _ => {
                let ys: Vec<f64> = self
                    .lines
                    .iter()
                    .flat_map(|l| {
                        l.curve
                            .points
                            .iter()
                            .filter(|p| self.ax(p.0).is_some())
                            .map(|p| p.1)
                            .chain(l.curve.err.iter().flat_map(|e| [e.1, e.2]))
                    })
                    .chain(self.hlines.iter().map(|h| h.0))
                    .filter(|y| y.is_finite())
                    .collect();
                let (lo, hi) = min_max(&ys).unwrap_or((0.0, 1.0));
                // From 0 when all values are positive (or all negative: up to 0).
                let (lo, hi) = (lo.min(0.0), hi.max(0.0));
                let (lo, hi) = if hi <= lo { (lo, lo + 1.0) } else { (lo, hi) };
                let st = nice_step(hi - lo);
                let (a, b) = ((lo / st).floor() * st, (hi / st).ceil() * st);
                // Headroom so that a maximum on a tick is not drawn on the frame.
                let b = if hi > 0.0 && (b - hi) < 0.02 * (b - a) { b + st } else { b };
                let a = if lo < 0.0 && (lo - a) < 0.02 * (b - a) { a - st } else { a };
                (a, b)
            }
        };
        ((x0, x1), y_range)
    }

    fn x_tick_values(&self, (x0, x1): (f64, f64)) -> Vec<(f64, String)> {
        if let Some(t) = &self.x_ticks {
            return t
                .iter()
                .filter_map(|(x, l)| self.ax(*x).map(|a| (a, l.clone())))
                .filter(|t| t.0 >= x0 - 1e-9 && t.0 <= x1 + 1e-9)
                .collect();
        }
        if let Some(b) = self.log_x {
            // Powers of the base, and for base 10 over less than three decades also 2 and 5 × 10^k.
            let (k0, k1) = (x0.ceil() as i64, x1.floor() as i64);
            let mut t: Vec<(f64, String)> = (k0..=k1).map(|k| (k as f64, fmt_num(b.powi(k as i32)))).collect();
            if b == 10.0 && k1 - k0 < 3 {
                for k in (x0.floor() as i64)..=(x1.ceil() as i64) {
                    for m in [2.0, 5.0] {
                        let v = m * 10f64.powi(k as i32);
                        let a = v.log10();
                        if a >= x0 && a <= x1 {
                            t.push((a, fmt_num(v)));
                        }
                    }
                }
                t.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            return t;
        }
        linear_ticks(x0, x1)
    }

    /// Draw the plot on `root`.
    fn draw<DB: Backend>(
        &self,
        root: DrawingArea<DB, Shift>,
        g: &Geometry,
        log: &Rc<RefCell<Log>>,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let px = |v: f64| (v * g.s).round() as i32;
        log.borrow_mut().size = (g.w as i32, g.h as i32);
        root.fill(&WHITE).map_err(err)?;
        // Title, centred on the image.
        let tstyle = font(g.title_size).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
        for (k, line) in g.title.iter().enumerate() {
            let y = px(14.0) + k as i32 * (g.title_size * 1.3).ceil() as i32;
            root.draw(&Text::new(line.clone(), (g.w as i32 / 2, y), tstyle.clone())).map_err(err)?;
        }
        let grid = RGBColor(0xdd, 0xdd, 0xdd);
        for (pi, panel) in g.panels.iter().enumerate() {
            let top = g.top + pi as i32 * g.panel_h;
            // The chart: the y axis area left of the plot, the x axis area below it.
            let area = root
                .clone()
                .shrink((g.plot_x - g.y_area, top), ((g.y_area + g.plot_w) as u32, (g.plot_h + g.x_area) as u32));
            let xt: Vec<f64> = thin(&g.x_ticks, g).iter().map(|t| t.0).collect();
            let yt: Vec<f64> = g.y_ticks.iter().map(|t| t.0).collect();
            let mut chart = ChartBuilder::on(&area)
                .x_label_area_size(g.x_area)
                .y_label_area_size(g.y_area)
                .build_cartesian_2d(
                    Axis { lo: g.x_range.0, hi: g.x_range.1, ticks: xt.clone() },
                    Axis { lo: g.y_range.0, hi: g.y_range.1, ticks: yt.clone() },
                )
                .map_err(err)?;
            let xlab =
                |v: &f64| g.x_ticks.iter().find(|t| (t.0 - v).abs() < 1e-9).map_or_else(String::new, |t| t.1.clone());
            let ylab =
                |v: &f64| g.y_ticks.iter().find(|t| (t.0 - v).abs() < 1e-9).map_or_else(String::new, |t| t.1.clone());
            chart
                .configure_mesh()
                .x_labels(xt.len().max(1))
                .y_labels(yt.len().max(1))
                .x_label_formatter(&xlab)
                .y_label_formatter(&ylab)
                .label_style(font(g.tick_size).color(&BLACK))
                .bold_line_style(grid.stroke_width(px(1.0).max(1) as u32))
                .light_line_style(TRANSPARENT)
                .axis_style(BLACK.stroke_width(px(1.0).max(1) as u32))
                .set_all_tick_mark_size(px(5.0))
                .draw()
                .map_err(err)?;
            // The frame's other two sides.
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            let rect = (xr.start, yr.start, xr.end - 1, yr.end - 1);
            let frame = BLACK.stroke_width(px(1.0).max(1) as u32);
            area.draw(&PathElement::new(
                vec![
                    (rect.0 - area_left(&area), rect.1 - area_top(&area)),
                    (rect.2 - area_left(&area), rect.1 - area_top(&area)),
                    (rect.2 - area_left(&area), rect.3 - area_top(&area)),
                ],
                frame,
            ))
            .map_err(err)?;
            // Axis labels: x centred under the tick labels, y rotated left of them.
            let lsize = (g.label_size * 1.3).ceil() as i32;
            let xl_top = rect.3 + px(8.0) + (g.tick_size * 1.3).ceil() as i32 + px(8.0);
            for (k, line) in g.x_label.iter().enumerate() {
                let st = font(g.label_size).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(line.clone(), ((rect.0 + rect.2) / 2, xl_top + k as i32 * lsize), st))
                    .map_err(err)?;
            }
            let ylabel = wrap(&self.y_label, g.label_size, g.plot_h as f64);
            for (k, line) in ylabel.iter().enumerate() {
                let st = font(g.label_size)
                    .transform(FontTransform::Rotate270)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top));
                // Rotated a quarter turn, the text's top is its left side.
                let x = g.plot_x - g.y_area + px(2.0) + (k as i32) * lsize;
                root.draw(&Text::new(line.clone(), (x, (rect.1 + rect.3) / 2), st)).map_err(err)?;
            }
            // Reference lines, then the data, clipped to the axes.
            log.borrow_mut().rect = Some(rect);
            for (y, label) in &self.hlines {
                if *y < g.y_range.0 || *y > g.y_range.1 {
                    continue;
                }
                log.borrow_mut().mode = Mode::Data;
                let pts = vec![(g.x_range.0, *y), (g.x_range.1, *y)];
                chart
                    .draw_series(std::iter::once(DashedPathElement::new(
                        pts.into_iter(),
                        px(3.0),
                        px(3.0),
                        RGBColor(0x55, 0x55, 0x55).stroke_width(px(1.0).max(1) as u32),
                    )))
                    .map_err(err)?;
                log.borrow_mut().mode = Mode::Frame;
                // The label above the line at the left, below it near the top.
                let (lx, ly) = chart.backend_coord(&(g.x_range.0, *y));
                let above = ly - rect.1 > px(22.0);
                let st = font(g.tick_size)
                    .color(&RGBColor(0x44, 0x44, 0x44))
                    .pos(Pos::new(HPos::Left, if above { VPos::Bottom } else { VPos::Top }));
                let ty = if above { ly - px(3.0) } else { ly + px(3.0) };
                root.draw(&Text::new(label.clone(), (lx + px(5.0), ty), st)).map_err(err)?;
            }
            let mut data_idx = 0usize;
            for &li in panel {
                let l = &self.lines[li];
                let (color, marker) = self.look(l, data_idx);
                if !l.paper {
                    data_idx += 1;
                }
                let width = if l.paper { px(1.2) } else { px(2.0) }.max(1) as u32;
                let style = color.stroke_width(width);
                // Lines.
                log.borrow_mut().mode = Mode::Data;
                let pts: Vec<(f64, f64)> =
                    l.curve.points.iter().map(|&(x, y)| (self.ax(x).unwrap_or(f64::NAN), y)).collect();
                for seg in clip_polyline(&pts, g.x_range, g.y_range) {
                    if seg.len() < 2 {
                        continue;
                    }
                    match l.dash {
                        Dash::Solid => chart.draw_series(std::iter::once(PathElement::new(seg, style))).map(|_| ()),
                        Dash::Dashed => chart
                            .draw_series(std::iter::once(DashedPathElement::new(
                                seg.into_iter(),
                                px(8.0),
                                px(5.0),
                                style,
                            )))
                            .map(|_| ()),
                        Dash::Dotted => chart
                            .draw_series(std::iter::once(DashedPathElement::new(
                                seg.into_iter(),
                                px(2.0),
                                px(4.0),
                                style,
                            )))
                            .map(|_| ()),
                        Dash::LongDash => chart
                            .draw_series(std::iter::once(DashedPathElement::new(
                                seg.into_iter(),
                                px(16.0),
                                px(6.0),
                                style,
                            )))
                            .map(|_| ()),
                    }
                    .map_err(err)?;
                }
                // Error bars with caps.
                for &(x, lo, hi) in &l.curve.err {
                    let Some(ax) = self.ax(x) else { continue };
                    if !(lo.is_finite() && hi.is_finite()) || ax < g.x_range.0 || ax > g.x_range.1 {
                        continue;
                    }
                    let (lo, hi) = (lo.max(g.y_range.0), hi.min(g.y_range.1));
                    if lo > hi {
                        continue;
                    }
                    let (cx, ylo) = chart.backend_coord(&(ax, lo));
                    let (_, yhi) = chart.backend_coord(&(ax, hi));
                    let es = color.stroke_width(px(1.4).max(1) as u32);
                    let cap = px(5.0);
                    let (al, at) = (area_left(&area), area_top(&area));
                    for seg in
                        [[(cx, ylo), (cx, yhi)], [(cx - cap, ylo), (cx + cap, ylo)], [(cx - cap, yhi), (cx + cap, yhi)]]
                    {
                        log.borrow_mut().mode = Mode::Marker;
                        area.draw(&PathElement::new(
                            seg.iter().map(|&(x, y)| (x - al, y - at)).collect::<Vec<_>>(),
                            es,
                        ))
                        .map_err(err)?;
                    }
                }
                // Markers: at every point of a curve that asks for them (or has few points), else
                // at a few, staggered between series.
                log.borrow_mut().mode = Mode::Marker;
                let finite: Vec<(f64, f64)> = pts
                    .iter()
                    .copied()
                    .filter(|&(x, y)| {
                        x.is_finite()
                            && y.is_finite()
                            && x >= g.x_range.0
                            && x <= g.x_range.1
                            && y >= g.y_range.0
                            && y <= g.y_range.1
                    })
                    .collect();
                let every = if l.curve.markers || finite.len() <= 30 { 1 } else { finite.len().div_ceil(10) };
                let offset = if every > 1 { (data_idx * every / MAX_SERIES_PER_PANEL) % every } else { 0 };
                for (k, &(x, y)) in finite.iter().enumerate() {
                    if every > 1 && k % every != offset {
                        continue;
                    }
                    let c = chart.backend_coord(&(x, y));
                    draw_marker(&area, (c.0 - area_left(&area), c.1 - area_top(&area)), marker, color, px(4.5))
                        .map_err(err)?;
                }
                log.borrow_mut().mode = Mode::Frame;
            }
            log.borrow_mut().rect = None;
            // The legend, beside the plot, top-aligned.
            let lx = g.legend_x;
            let mut y = rect.1 + px(6.0);
            let row = px(18.0);
            let mut data_idx = 0usize;
            let lh = {
                let max_legend = 300.0 * g.s;
                px(12.0)
                    + panel
                        .iter()
                        .map(|&i| {
                            wrap(&self.lines[i].curve.name, g.legend_size, max_legend).len() as i32 * row + px(4.0)
                        })
                        .sum::<i32>()
            };
            if !panel.is_empty() {
                let lw = px(16.0 + 34.0 + 8.0 + 12.0) + g.legend_text_w.ceil() as i32;
                root.draw(&Rectangle::new(
                    [(lx, rect.1), (lx + lw - px(12.0), rect.1 + lh)],
                    RGBColor(0xbb, 0xbb, 0xbb).stroke_width(px(1.0).max(1) as u32),
                ))
                .map_err(err)?;
            }
            for &li in panel {
                let l = &self.lines[li];
                let (color, marker) = self.look(l, data_idx);
                if !l.paper {
                    data_idx += 1;
                }
                let lines = wrap(&l.curve.name, g.legend_size, 300.0 * g.s);
                let cy = y + row / 2;
                let width = if l.paper { px(1.2) } else { px(2.0) }.max(1) as u32;
                let style = color.stroke_width(width);
                let (x0, x1) = (lx + px(8.0), lx + px(8.0 + 34.0));
                let seg = vec![(x0, cy), (x1, cy)];
                match l.dash {
                    Dash::Solid => root.draw(&PathElement::new(seg, style)),
                    Dash::Dashed => root.draw(&DashedPathElement::new(seg.into_iter(), px(8.0), px(5.0), style)),
                    Dash::Dotted => root.draw(&DashedPathElement::new(seg.into_iter(), px(2.0), px(4.0), style)),
                    Dash::LongDash => root.draw(&DashedPathElement::new(seg.into_iter(), px(12.0), px(4.0), style)),
                }
                .map_err(err)?;
                draw_marker(&root, ((x0 + x1) / 2, cy), marker, color, px(4.5)).map_err(err)?;
                let st = font(g.legend_size).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
                for (k, t) in lines.iter().enumerate() {
                    root.draw(&Text::new(t.clone(), (x1 + px(8.0), cy + k as i32 * row), st.clone())).map_err(err)?;
                }
                y += lines.len() as i32 * row + px(4.0);
            }
        }
        root.present().map_err(err)?;
        log.borrow_mut().finish();
        Ok(())
    }

    /// Colour and marker of a line; `k` is its position among the panel's data lines.
    fn look(&self, l: &Line, k: usize) -> (RGBColor, Marker) {
        if l.paper {
            let i = l.curve.color.unwrap_or(0);
            return (BLACK, PAPER_MARKERS[i % PAPER_MARKERS.len()]);
        }
        let i = l.curve.color.unwrap_or(k);
        (PALETTE[i % PALETTE.len()], MARKERS[i % MARKERS.len()])
    }
}

/// A linear axis (in axis units: a log axis is linear in the logarithm) with our ticks.
#[derive(Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn area_left<DB: Backend>(a: &DrawingArea<DB, Shift>) -> i32 {
    a.get_base_pixel().0
}

fn area_top<DB: Backend>(a: &DrawingArea<DB, Shift>) -> i32 {
    a.get_base_pixel().1
}

/// Draw a marker of `shape` centred at `c` (pixels within `area`), of radius `r`.
fn draw_marker<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    c: (i32, i32),
    shape: Marker,
    color: RGBColor,
    r: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let fill = color.filled();
    let open = color.stroke_width(((r as f64) / 3.0).round().max(1.0) as u32);
    let tri = |up: bool| {
        let d = if up { 1 } else { -1 };
        vec![(c.0, c.1 - d * r), (c.0 + r, c.1 + d * r * 7 / 10), (c.0 - r, c.1 + d * r * 7 / 10)]
    };
    match shape {
        Marker::Circle => area.draw(&Circle::new(c, r as u32, fill)),
        Marker::CircleOpen => area.draw(&Circle::new(c, r as u32, open)),
        Marker::Square => {
            area.draw(&Rectangle::new([(c.0 - r * 4 / 5, c.1 - r * 4 / 5), (c.0 + r * 4 / 5, c.1 + r * 4 / 5)], fill))
        }
        Marker::SquareOpen => {
            area.draw(&Rectangle::new([(c.0 - r * 4 / 5, c.1 - r * 4 / 5), (c.0 + r * 4 / 5, c.1 + r * 4 / 5)], open))
        }
        Marker::Triangle => area.draw(&Polygon::new(tri(true), fill)),
        Marker::TriangleDown => area.draw(&Polygon::new(tri(false), fill)),
        Marker::TriangleOpen => {
            let mut t = tri(true);
            t.push(t[0]);
            area.draw(&PathElement::new(t, open))
        }
        Marker::Diamond => {
            area.draw(&Polygon::new(vec![(c.0, c.1 - r), (c.0 + r, c.1), (c.0, c.1 + r), (c.0 - r, c.1)], fill))
        }
        Marker::Cross => {
            area.draw(&PathElement::new(vec![(c.0 - r, c.1 - r), (c.0 + r, c.1 + r)], open))?;
            area.draw(&PathElement::new(vec![(c.0 - r, c.1 + r), (c.0 + r, c.1 - r)], open))
        }
        Marker::Plus => {
            area.draw(&PathElement::new(vec![(c.0 - r, c.1), (c.0 + r, c.1)], open))?;
            area.draw(&PathElement::new(vec![(c.0, c.1 - r), (c.0, c.1 + r)], open))
        }
    }
}

/// x tick labels that fit: a label that would touch the previous one is left out (its tick too).
fn thin(ticks: &[(f64, String)], g: &Geometry) -> Vec<(f64, String)> {
    let (x0, x1) = g.x_range;
    let pos = |x: f64| (x - x0) / (x1 - x0) * g.plot_w as f64;
    let gap = 10.0 * g.s;
    let mut out: Vec<(f64, String)> = Vec::new();
    let mut right = f64::NEG_INFINITY;
    for t in ticks {
        let w = text_w(&t.1, g.tick_size);
        let (l, r) = (pos(t.0) - w / 2.0, pos(t.0) + w / 2.0);
        if l >= right + gap {
            out.push(t.clone());
            right = r;
        }
    }
    out
}

fn min_max(v: &[f64]) -> Option<(f64, f64)> {
    let mut it = v.iter().copied().filter(|x| x.is_finite());
    let first = it.next()?;
    Some(it.fold((first, first), |(a, b), x| (a.min(x), b.max(x))))
}

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

/// Ticks at multiples of a 1-2-5 step inside [x0, x1], labelled with as many decimals as the step
/// needs.
fn linear_ticks(x0: f64, x1: f64) -> Vec<(f64, String)> {
    let st = nice_step(x1 - x0);
    let dec = (-st.log10().floor()).max(0.0) as usize;
    let mut t = Vec::new();
    let mut k = (x0 / st).ceil();
    while k * st <= x1 + 1e-9 * st {
        let v = k * st;
        let v = if v.abs() < 1e-12 * st { 0.0 } else { v };
        t.push((v, format!("{v:.dec$}")));
        k += 1.0;
    }
    t
}

fn y_tick_values((y0, y1): (f64, f64)) -> Vec<(f64, String)> {
    linear_ticks(y0, y1)
}

/// A number as a tick label: up to 6 significant digits, no trailing zeros, no exponent for
/// everyday magnitudes.
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-4..1e7).contains(&a) {
        return format!("{v:.3e}");
    }
    let dec = (5 - a.log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.dec$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Cut a polyline at gaps (non-finite points) and at the edges of the box: the parts inside.
fn clip_polyline(pts: &[(f64, f64)], (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let ok = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if !ok(&a) || !ok(&b) {
            if cur.len() > 1 {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
            continue;
        }
        match clip_segment(a, b, (x0, x1), (y0, y1)) {
            Some((p, q)) => {
                if cur.last() != Some(&p) {
                    if cur.len() > 1 {
                        out.push(std::mem::take(&mut cur));
                    }
                    cur = vec![p];
                }
                cur.push(q);
                if q != b {
                    out.push(std::mem::take(&mut cur));
                }
            }
            None => {
                if cur.len() > 1 {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    // A single point inside the box (no segment) draws no line; its marker shows it.
    out
}

/// Liang–Barsky: the part of segment a–b inside the box, if any.
fn clip_segment(
    a: (f64, f64),
    b: (f64, f64),
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [(-dx, a.0 - x0), (dx, x1 - a.0), (-dy, a.1 - y0), (dy, y1 - a.1)] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| {
        if t == 0.0 {
            a
        } else if t == 1.0 {
            b
        } else {
            (a.0 + t * dx, a.1 + t * dy)
        }
    };
    Some((at(t0), at(t1)))
}

// ---- Layout check: a backend that records what is drawn where, then draws it. ----

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Mode {
    /// Axes, labels, legend: only their text is checked.
    #[default]
    Frame,
    /// Lines of the data: every point inside the axes.
    Data,
    /// Markers and error bars: their centre inside the axes.
    Marker,
}

#[derive(Default)]
struct Log {
    size: (i32, i32),
    mode: Mode,
    /// The current panel's plot area (pixels, inclusive).
    rect: Option<(i32, i32, i32, i32)>,
    /// Every text drawn and its glyph box (x0, y0, x1, y1).
    texts: Vec<(String, (i32, i32, i32, i32))>,
    problems: Vec<String>,
}

impl Log {
    fn data(&mut self, pts: &[(i32, i32)]) {
        let Some(r) = self.rect else { return };
        let tol = 1;
        let inside = |p: &(i32, i32)| p.0 >= r.0 - tol && p.0 <= r.2 + tol && p.1 >= r.1 - tol && p.1 <= r.3 + tol;
        match self.mode {
            Mode::Frame => {}
            Mode::Data => {
                if let Some(p) = pts.iter().find(|p| !inside(p)) {
                    self.problems.push(format!("a data line reaches {p:?}, outside the axes {r:?}"));
                }
            }
            Mode::Marker => {
                if pts.is_empty() {
                    return;
                }
                let (xs, ys): (Vec<i32>, Vec<i32>) = pts.iter().copied().unzip();
                let c = (
                    (xs.iter().min().unwrap() + xs.iter().max().unwrap()) / 2,
                    (ys.iter().min().unwrap() + ys.iter().max().unwrap()) / 2,
                );
                if !inside(&c) {
                    self.problems.push(format!("a marker at {c:?} is outside the axes {r:?}"));
                }
            }
        }
    }

    fn text(&mut self, text: &str, b: Option<(i32, i32, i32, i32)>) {
        let Some(b) = b else { return };
        let (w, h) = self.size;
        if b.0 < 0 || b.1 < 0 || b.2 >= w || b.3 >= h {
            self.problems.push(format!("text {text:?} at {b:?} is cut by the image's edge ({w}×{h})"));
        }
        self.texts.push((text.to_string(), b));
    }

    /// Texts that overlap each other.
    fn finish(&mut self) {
        for i in 0..self.texts.len() {
            for j in i + 1..self.texts.len() {
                let (a, b) = (self.texts[i].1, self.texts[j].1);
                if a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3 {
                    self.problems.push(format!("text {:?} overlaps text {:?}", self.texts[i].0, self.texts[j].0));
                }
            }
        }
    }
}

/// A backend that records the extent of what is drawn (see [`Log`]) and passes it on.
struct Recorder<B> {
    inner: B,
    log: Rc<RefCell<Log>>,
}

/// The glyph box of `text` drawn at `pos` with `style`, as plotters' bitmap text drawing places it.
fn text_box<S: plotters_backend::BackendTextStyle>(
    text: &str,
    style: &S,
    pos: BackendCoord,
) -> Option<(i32, i32, i32, i32)> {
    let ((min_x, min_y), (max_x, max_y)) = style.layout_box(text).ok()?;
    let (width, height) = (max_x - min_x, max_y - min_y);
    let dx = match style.anchor().h_pos {
        HPos::Left => 0,
        HPos::Right => -width,
        HPos::Center => -width / 2,
    };
    let dy = match style.anchor().v_pos {
        VPos::Top => 0,
        VPos::Center => -height / 2,
        VPos::Bottom => -height,
    };
    let trans = style.transform();
    let mut b = (i32::MAX, i32::MAX, i32::MIN, i32::MIN);
    let r = style.draw(text, (0, 0), |x, y, c: BackendColor| {
        if c.alpha > 0.1 {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
        }
        Ok::<(), std::convert::Infallible>(())
    });
    (r.is_ok() && b.0 <= b.2).then_some(b)
}

impl<B: Backend> Backend for Recorder<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.log.borrow_mut().data(&[from, to]);
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.log.borrow_mut().data(&[ul, br]);
        self.inner.draw_rect(ul, br, style, fill)
    }
    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let p: Vec<BackendCoord> = path.into_iter().collect();
        self.log.borrow_mut().data(&p);
        self.inner.draw_path(p, style)
    }
    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let r2 = r as i32;
        self.log.borrow_mut().data(&[(c.0 - r2, c.1 - r2), (c.0 + r2, c.1 + r2)]);
        self.inner.draw_circle(c, r, style, fill)
    }
    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let p: Vec<BackendCoord> = vert.into_iter().collect();
        self.log.borrow_mut().data(&p);
        self.inner.fill_polygon(p, style)
    }
    fn draw_text<S: plotters_backend::BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.log.borrow_mut().text(text, text_box(text, style, pos));
        self.inner.draw_text(text, style, pos)
    }
    fn estimate_text_size<S: plotters_backend::BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        self.inner.estimate_text_size(text, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the SVG has a text element reading exactly `s`.
    fn has_text(svg: &str, s: &str) -> bool {
        svg.contains(&format!(">\n{s}\n</text>"))
    }

    fn check(p: &Plot) -> Rendered {
        let r = p.render();
        assert!(r.problems.is_empty(), "{}: {:#?}", p.title, r.problems);
        assert!(r.svg.starts_with("<svg") && r.svg.trim_end().ends_with("</svg>"));
        assert!(r.png.starts_with(b"\x89PNG"));
        r
    }

    #[test]
    fn renders_every_series_in_both_formats() {
        let s = vec![
            Series { name: "a<b".into(), points: vec![(0.0, 1e6), (1.0, 2e6)] },
            Series { name: "c".into(), points: vec![(0.0, 0.0), (1.0, 3e6)] },
        ];
        let r = check(&line_chart("t", "time (s)", "goodput (Mbit/s)", 1e6, &s));
        assert!(has_text(&r.svg, "a&lt;b") && has_text(&r.svg, "c"), "{}", r.svg);
        assert!(r.svg.contains("Liberation Sans"));
    }

    #[test]
    fn clipping_keeps_lines_inside_the_box() {
        let b = ((0.0, 10.0), (0.0, 1.0));
        // A line that leaves through the top and comes back.
        let parts = clip_polyline(&[(0.0, 0.5), (2.0, 2.0), (4.0, 0.5), (6.0, 0.5)], b.0, b.1);
        assert_eq!(parts.len(), 2, "{parts:?}");
        for p in parts.iter().flatten() {
            assert!(p.0 >= 0.0 && p.0 <= 10.0 && p.1 >= 0.0 && p.1 <= 1.0, "{p:?}");
        }
        assert_eq!(parts[0][0], (0.0, 0.5));
        assert!((parts[0][1].1 - 1.0).abs() < 1e-12);
        // A gap splits the line; a segment wholly outside is dropped.
        let parts = clip_polyline(
            &[(0.0, 0.1), (1.0, 0.2), (2.0, f64::NAN), (3.0, 0.3), (4.0, 0.4), (5.0, -3.0), (6.0, -4.0)],
            b.0,
            b.1,
        );
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[1][0], (3.0, 0.3));
        assert_eq!(parts[1].last().unwrap().1, 0.0);
    }

    #[test]
    fn negative_values_get_a_negative_axis_and_a_fixed_range_clips() {
        // A reduction below 0, as a bad operating point gives: the axis goes below 0.
        let c = vec![Curve {
            name: "max".into(),
            points: vec![(2.0, -20.0), (6.0, 85.0), (20.0, 40.0)],
            markers: true,
            ..Default::default()
        }];
        let p = xy_chart(
            &XyChart {
                title: "reduction".into(),
                x_label: "f".into(),
                y_label: "reduction (%)".into(),
                ..Default::default()
            },
            &c,
        );
        let g = p.geometry(1.0);
        assert!(g.y_range.0 < -20.0 && g.y_range.1 > 85.0, "{:?}", g.y_range);
        check(&p);
        // A fixed range cuts the curve at its edge instead of drawing over the tick labels.
        let p = xy_chart(&XyChart { title: "fixed".into(), y_range: Some((0.0, 50.0)), ..Default::default() }, &c);
        check(&p);
    }

    #[test]
    fn the_layout_check_finds_text_outside_the_image_overlaps_and_data_outside_the_axes() {
        let mut l = Log { size: (100, 50), rect: Some((10, 10, 90, 40)), ..Default::default() };
        l.text("ok", Some((20, 20, 40, 30)));
        assert!(l.problems.is_empty());
        l.text("cut", Some((80, 20, 120, 30)));
        assert!(l.problems[0].contains("cut by the image's edge"), "{:?}", l.problems);
        l.text("over", Some((30, 25, 50, 35)));
        l.finish();
        assert!(
            l.problems.iter().any(|p| p.contains("\"over\" overlaps") || p.contains("overlaps text \"over\"")),
            "{:?}",
            l.problems
        );
        let mut l = Log { size: (100, 50), rect: Some((10, 10, 90, 40)), mode: Mode::Data, ..Default::default() };
        l.data(&[(20, 20), (95, 20)]);
        assert!(l.problems[0].contains("outside the axes"), "{:?}", l.problems);
        let mut l = Log { size: (100, 50), rect: Some((10, 10, 90, 40)), mode: Mode::Marker, ..Default::default() };
        l.data(&[(86, 36), (94, 44)]); // centred at (90, 40): on the corner, inside
        l.data(&[(92, 36), (100, 44)]); // centred at (96, 40): outside
        assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
    }

    #[test]
    fn long_titles_and_legend_names_wrap_and_many_series_make_small_multiples() {
        let title = "P4-F7: bandwidth reduction vs f (max and mean over the grid), with a title much longer than the image is wide so that it must wrap onto a second line and perhaps a third one too, which is what very long titles do";
        let series: Vec<Series> = (0..30)
            .map(|i| Series {
                name: format!("ns2 (count = new-acks) profile, a long legend entry number {i} that wraps"),
                points: (0..60).map(|t| (t as f64, ((t * (i + 1)) % 17) as f64 * 1e5)).collect(),
            })
            .collect();
        let p = line_chart(title, "time (s)", "goodput (Mbit/s)", 1e6, &series);
        let g = p.geometry(1.0);
        assert!(g.title.len() >= 2, "{:?}", g.title);
        assert_eq!(g.panels.len(), 3);
        assert!(g.panels.iter().all(|p| p.len() <= MAX_SERIES_PER_PANEL));
        check(&p);
    }

    #[test]
    fn log_axes_tick_at_powers_and_swept_values_label_their_ticks() {
        let c = vec![Curve {
            name: "TCR".into(),
            points: [1.0f64, 3.0, 9.0, 27.0, 81.0, 243.0].iter().map(|&q| (q, q.sqrt())).collect(),
            markers: true,
            ..Default::default()
        }];
        let p =
            xy_chart(&XyChart { title: "t".into(), x_label: "FIFO size (packets)".into(), ..Default::default() }, &c)
                .log_x(3.0);
        let g = p.geometry(1.0);
        let labels: Vec<&str> = g.x_ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "3", "9", "27", "81", "243"]);
        let r = check(&p);
        assert!(has_text(&r.svg, "243"));
        let p = xy_chart(&XyChart::default(), &c).x_ticks(&[2.0, 4.0, 6.0, 10.0, 20.0]);
        let labels: Vec<String> = p.geometry(1.0).x_ticks.iter().map(|t| t.1.clone()).collect();
        assert_eq!(labels, ["2", "4", "6", "10", "20"]);
        // Crowded ticks: labels that would touch are left out.
        let xs: Vec<f64> = (0..200).map(|i| 1000.0 + i as f64).collect();
        let p = xy_chart(&XyChart::default(), &c).x_ticks(&xs);
        check(&p);
    }

    #[test]
    fn the_papers_values_are_a_series_of_their_own_in_every_panel() {
        let curves: Vec<Curve> = (0..12)
            .map(|i| Curve {
                name: format!("s{i}"),
                points: vec![(1.0, i as f64), (2.0, i as f64 + 1.0)],
                ..Default::default()
            })
            .collect();
        let p = xy_chart(&XyChart { title: "t".into(), ..Default::default() }, &curves)
            .paper("paper: Fig. 7", vec![(1.0, 3.0), (2.0, 4.0)]);
        let g = p.geometry(1.0);
        assert_eq!(g.panels.len(), 2);
        assert!(g.panels.iter().all(|pn| pn.contains(&12)), "{:?}", g.panels);
        let r = check(&p);
        assert_eq!(r.svg.matches(">\npaper: Fig. 7\n<").count(), 2);
    }

    #[test]
    fn error_bars_and_reference_lines_are_drawn() {
        let c = vec![Curve {
            name: "sim".into(),
            points: vec![(1.0, 0.5), (10.0, f64::NAN), (100.0, 1.5)],
            markers: true,
            err: vec![(1.0, 0.3, 0.7), (100.0, 1.2, 1.8)],
            ..Default::default()
        }];
        let p = xy_chart(
            &XyChart { title: "t".into(), log_x: true, hlines: vec![(0.3, "bound".into())], ..Default::default() },
            &c,
        );
        let r = check(&p);
        assert!(has_text(&r.svg, "bound") && has_text(&r.svg, "100") && has_text(&r.svg, "sim"));
        // Same plot, same bytes.
        assert_eq!(p.render().png, r.png);
    }

    #[test]
    fn number_labels_are_plain() {
        assert_eq!(fmt_num(243.0), "243");
        assert_eq!(fmt_num(0.1 + 0.2), "0.3");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(1e9), "1.000e9");
        let t: Vec<String> = linear_ticks(0.0, 1.0).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    }
}

//! Charts a person can read: a title, axis labels with units, a legend,
//! shaded windows (interventions) and confidence bands, drawn with
//! plotters and an embedded font (DejaVu Sans), as PNG or SVG by the file's
//! extension. Nothing needs to be installed.
//!
//! ```
//! use parsim::plot::{Chart, Panel, Series};
//!
//! let days: Vec<f64> = (0..50).map(f64::from).collect();
//! let panel = Panel::new("share of agents", "day")
//!     .series(Series::line("infected", days.iter().map(|&d| (d, (d / 10.0).sin().abs())).collect()))
//!     .window("schools closed", 10.0, 20.0);
//! let svg = Chart::new("An epidemic").panel(panel).svg()?;
//! assert!(svg.contains("An epidemic") && svg.contains("schools closed") && svg.contains("day"));
//! # Ok::<(), parsim::Error>(())
//! ```

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::run::write_atomic;
use crate::Error;

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

fn font() -> Result<(), Error> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(Error::Run("the embedded plot font could not be loaded".into()))
    }
}

/// The palette: distinguishable and readable in print.
pub const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// One line of a panel, with an optional band around it.
#[derive(Clone, Debug)]
pub struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    band: Option<Vec<(f64, f64, f64)>>,
    colour: Option<RGBColor>,
    markers: bool,
    bars: bool,
    points_only: bool,
}

impl Series {
    /// A line through `points` (x, y), named `name` in the legend.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), points, band: None, colour: None, markers: false, bars: false, points_only: false }
    }

    /// Markers at `points`, not joined (events: a rebalance, a restart).
    pub fn points(name: &str, points: Vec<(f64, f64)>) -> Self {
        Series { points_only: true, markers: true, ..Series::line(name, points) }
    }

    /// Vertical bars from 0 to y at each x (counts per day).
    pub fn bars(name: &str, points: Vec<(f64, f64)>) -> Self {
        Series { bars: true, ..Series::line(name, points) }
    }

    /// A shaded band (x, low, high) drawn under the line (a confidence interval).
    pub fn band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = Some(band);
        self
    }

    /// Draws a marker at every point.
    pub fn markers(mut self) -> Self {
        self.markers = true;
        self
    }

    /// A fixed colour instead of the palette's next.
    pub fn colour(mut self, c: RGBColor) -> Self {
        self.colour = Some(c);
        self
    }
}

/// One set of axes: series, shaded windows, labels.
#[derive(Clone, Debug)]
pub struct Panel {
    y_label: String,
    x_label: String,
    series: Vec<Series>,
    windows: Vec<(String, f64, f64)>,
    y_range: Option<(f64, f64)>,
    percent: bool,
    log2_x: bool,
    log2_y: bool,
    x_fixed: Option<(f64, f64)>,
}

impl Panel {
    /// A panel with these axis labels (put the unit in them: "time (s)").
    pub fn new(y_label: &str, x_label: &str) -> Self {
        Panel {
            y_label: y_label.into(),
            x_label: x_label.into(),
            series: Vec::new(),
            windows: Vec::new(),
            y_range: None,
            percent: false,
            log2_x: false,
            log2_y: false,
            x_fixed: None,
        }
    }

    /// Adds a series.
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Shades x in [from, to] and names the window in the legend.
    pub fn window(mut self, label: &str, from: f64, to: f64) -> Self {
        self.windows.push((label.into(), from, to));
        self
    }

    /// Fixes the y range (otherwise it fits the data).
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Labels the y axis in percent (values are fractions).
    pub fn percent(mut self) -> Self {
        self.percent = true;
        self
    }

    /// A logarithmic x axis (base 2: ranks, message sizes); x must be > 0.
    /// Every panel of a chart should agree.
    pub fn log2(mut self) -> Self {
        self.log2_x = true;
        self
    }

    /// Fixes the x range (otherwise it spans the data): room for bars at the ends.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_fixed = Some((lo, hi));
        self
    }

    /// A logarithmic y axis (base 2, labelled with the values); y must be > 0.
    pub fn log2_y(mut self) -> Self {
        self.log2_y = true;
        self
    }

    /// The panel with x (and y) as their log₂ where the axes are logarithmic.
    fn x_logged(&self) -> Panel {
        let mut p = self.clone();
        let f = |x: f64| x.max(f64::MIN_POSITIVE).log2();
        if p.log2_x {
            for s in &mut p.series {
                for pt in &mut s.points {
                    pt.0 = f(pt.0);
                }
                for b in s.band.iter_mut().flatten() {
                    b.0 = f(b.0);
                }
            }
            for w in &mut p.windows {
                (w.1, w.2) = (f(w.1), f(w.2));
            }
            p.x_fixed = p.x_fixed.map(|(lo, hi)| (f(lo), f(hi)));
        }
        if p.log2_y {
            for s in &mut p.series {
                for pt in &mut s.points {
                    pt.1 = f(pt.1);
                }
                for b in s.band.iter_mut().flatten() {
                    (b.1, b.2) = (f(b.1), f(b.2));
                }
            }
            p.y_range = p.y_range.map(|(lo, hi)| (f(lo), f(hi)));
        }
        p
    }

    fn x_extent(&self) -> (f64, f64) {
        if let Some(r) = self.x_fixed {
            return r;
        }
        let xs = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        if lo.is_finite() && hi > lo {
            (lo, hi)
        } else if lo.is_finite() {
            (lo - 1.0, lo + 1.0)
        } else {
            (0.0, 1.0)
        }
    }

    fn y_fit(&self) -> (f64, f64) {
        if let Some(r) = self.y_range {
            return r;
        }
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for s in &self.series {
            for p in &s.points {
                lo = lo.min(p.1);
                hi = hi.max(p.1);
            }
            for b in s.band.iter().flatten() {
                lo = lo.min(b.1);
                hi = hi.max(b.2);
            }
            if s.bars {
                lo = lo.min(0.0);
            }
        }
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-12);
        (if lo >= 0.0 && lo - pad < 0.0 { 0.0 } else { lo - pad }, hi + pad)
    }
}

/// A chart: a title over one or more panels stacked vertically (sharing x).
#[derive(Clone, Debug)]
pub struct Chart {
    title: String,
    panels: Vec<Panel>,
    size: (u32, u32),
}

impl Chart {
    /// A chart titled `title`.
    pub fn new(title: &str) -> Self {
        Chart { title: title.into(), panels: Vec::new(), size: (1000, 600) }
    }

    /// Adds a panel below the others.
    pub fn panel(mut self, p: Panel) -> Self {
        self.panels.push(p);
        self
    }

    /// The size in pixels (default 1000 × 600).
    pub fn size(mut self, w: u32, h: u32) -> Self {
        self.size = (w, h);
        self
    }

    /// Writes the chart to `path`: SVG for `.svg`, PNG otherwise (atomically).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        save(self, path)
    }

    /// The chart as SVG text (its labels are text: tests can read them).
    pub fn svg(&self) -> Result<String, Error> {
        svg(self)
    }

    /// The chart as PNG bytes.
    pub fn png(&self) -> Result<Vec<u8>, Error> {
        png(self)
    }
}

impl Picture for Chart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), Error> {
        root.fill(&WHITE).map_err(plot_err)?;
        let root = root.titled(&self.title, ("sans-serif", 24)).map_err(plot_err)?;
        if self.panels.is_empty() {
            return Ok(());
        }
        // The first panel gets twice the height of each further one.
        let n = self.panels.len();
        let h = root.dim_in_pixel().1 as f64;
        let unit = h / (n as f64 + 1.0);
        let mut cuts = Vec::new();
        for i in 1..n {
            cuts.push(((unit * (i as f64 + 1.0)) as i32).min(h as i32));
        }
        let areas = root.split_by_breakpoints::<i32, i32, _, _>([] as [i32; 0], cuts);
        let panels: Vec<Panel> = self.panels.iter().map(Panel::x_logged).collect();
        let (x_lo, x_hi) = panels
            .iter()
            .map(Panel::x_extent)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (lo, hi)| (a.min(lo), b.max(hi)));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            draw_panel(area, panel, (x_lo, x_hi))?;
        }
        Ok(())
    }
}

fn plot_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> Error {
    Error::Run(format!("drawing a chart: {e}"))
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel, x: (f64, f64)) -> Result<(), Error> {
    let (y_lo, y_hi) = p.y_fit();
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(x.0..x.1, y_lo..y_hi)
        .map_err(plot_err)?;
    let percent = p.percent;
    // A log axis labels the powers of two only (ticks between them stay blank).
    let pow2 = |v: f64| if (v - v.round()).abs() < 1e-6 { short(2f64.powf(v.round())) } else { String::new() };
    let log2_y = p.log2_y;
    let y_fmt = move |v: &f64| {
        if log2_y {
            return pow2(*v);
        }
        if percent {
            format!("{:.0}%", v * 100.0)
        } else {
            short(*v)
        }
    };
    let log2 = p.log2_x;
    let x_fmt = move |v: &f64| if log2 { pow2(*v) } else { short(*v) };
    chart
        .configure_mesh()
        .x_desc(&p.x_label)
        .y_desc(&p.y_label)
        .y_label_formatter(&y_fmt)
        .x_label_formatter(&x_fmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(plot_err)?;
    let shades = [RGBColor(255, 200, 120), RGBColor(150, 200, 255), RGBColor(190, 230, 160), RGBColor(230, 180, 230)];
    for (i, (label, from, to)) in p.windows.iter().enumerate() {
        let c = shades[i % shades.len()];
        let style = c.mix(0.35).filled();
        chart
            .draw_series(std::iter::once(Rectangle::new([(*from, y_lo), (*to, y_hi)], style)))
            .map_err(plot_err)?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.mix(0.5).filled()));
    }
    for (i, s) in p.series.iter().enumerate() {
        let c = s.colour.unwrap_or(COLOURS[i % COLOURS.len()]);
        if let Some(band) = &s.band {
            let upper = band.iter().map(|b| (b.0, b.2));
            let lower = band.iter().rev().map(|b| (b.0, b.1));
            let poly: Vec<(f64, f64)> = upper.chain(lower).collect();
            chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.2).filled()))).map_err(plot_err)?;
        }
        if s.bars {
            let w = bar_width(&s.points);
            chart
                .draw_series(s.points.iter().map(|&(x, y)| {
                    Rectangle::new([(x - w / 2.0, 0.0_f64.max(y_lo)), (x + w / 2.0, y)], c.mix(0.8).filled())
                }))
                .map_err(plot_err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
        } else if s.points_only {
            chart
                .draw_series(s.points.iter().map(|&pt| Circle::new(pt, 6, c.filled())))
                .map_err(plot_err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 9, y), 6, c.filled()));
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                .map_err(plot_err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            if s.markers {
                chart.draw_series(s.points.iter().map(|&pt| Circle::new(pt, 4, c.filled()))).map_err(plot_err)?;
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

fn bar_width(points: &[(f64, f64)]) -> f64 {
    let mut d = f64::INFINITY;
    for w in points.windows(2) {
        let g = (w[1].0 - w[0].0).abs();
        if g > 0.0 {
            d = d.min(g);
        }
    }
    if d.is_finite() {
        d * 0.8
    } else {
        0.8
    }
}

/// A tick label: short, without float noise.
fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A field as a picture: one coloured square per value (viridis), with a
/// title, axis labels and a colour bar whose ticks are the values.
#[derive(Clone, Debug)]
pub struct Heatmap {
    title: String,
    slice: parsim_grid::Slice,
    x_label: String,
    y_label: String,
    value_label: String,
    lines: Vec<[(f64, f64); 2]>,
}

impl Heatmap {
    /// A heatmap of `slice` (from [`parsim_grid::gather_slice`]), its colour
    /// bar labelled `value_label` (with the unit).
    pub fn new(title: &str, slice: parsim_grid::Slice, value_label: &str) -> Self {
        Heatmap {
            title: title.into(),
            slice,
            x_label: "x (cells)".into(),
            y_label: "y (cells)".into(),
            value_label: value_label.into(),
            lines: Vec::new(),
        }
    }

    /// Axis labels (with units) instead of "x (cells)", "y (cells)".
    pub fn axes(mut self, x: &str, y: &str) -> Self {
        self.x_label = x.into();
        self.y_label = y.into();
        self
    }

    /// Line segments drawn over the field (a partition's boundaries, say),
    /// in the slice's coordinates (cells × stride).
    pub fn lines(mut self, segments: Vec<[(f64, f64); 2]>) -> Self {
        self.lines = segments;
        self
    }

    /// Writes it: SVG for `.svg`, PNG otherwise (atomically).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        save(self, path)
    }

    /// The picture as SVG text.
    pub fn svg(&self) -> Result<String, Error> {
        svg(self)
    }

    /// The picture as PNG bytes.
    pub fn png(&self) -> Result<Vec<u8>, Error> {
        png(self)
    }
}

impl Picture for Heatmap {
    fn size(&self) -> (u32, u32) {
        (900, 760)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), Error> {
        root.fill(&WHITE).map_err(plot_err)?;
        let root = root.titled(&self.title, ("sans-serif", 22)).map_err(plot_err)?;
        let (field, bar) = root.split_horizontally(root.dim_in_pixel().0.saturating_sub(150));
        let s = &self.slice;
        // At most ~250 squares a side: coarser samples of a finer slice.
        let k = s.width.max(s.height).div_ceil(250).max(1);
        let cell = (s.stride * k) as f64;
        let (lo, hi) = s.range;
        let span = if hi > lo { hi - lo } else { 1.0 };
        let (xmax, ymax) = ((s.width * s.stride) as f64, (s.height * s.stride) as f64);
        let mut chart = ChartBuilder::on(&field)
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v: &f64| short(*v))
            .y_label_formatter(&|v: &f64| short(*v))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(plot_err)?;
        let squares = (0..s.height).step_by(k).flat_map(|y| (0..s.width).step_by(k).map(move |x| (y, x)));
        chart
            .draw_series(squares.filter_map(|(y, x)| {
                let v = s.values[y * s.width + x];
                let [r, g, b] = parsim_grid::viridis((v - lo) / span);
                let (x0, y0) = ((x * s.stride) as f64, (y * s.stride) as f64);
                (!v.is_nan()).then(|| Rectangle::new([(x0, y0), (x0 + cell, y0 + cell)], RGBColor(r, g, b).filled()))
            }))
            .map_err(plot_err)?;
        chart
            .draw_series(self.lines.iter().map(|&[a, b]| PathElement::new(vec![a, b], RED.stroke_width(2))))
            .map_err(plot_err)?;
        let top = if hi > lo { hi } else { lo + 1.0 };
        let mut scale = ChartBuilder::on(&bar)
            .margin_top(10)
            .margin_bottom(55)
            .margin_right(10)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..1.0, lo..top)
            .map_err(plot_err)?;
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_desc(&self.value_label)
            .y_label_formatter(&|v: &f64| short(*v))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(plot_err)?;
        let n = 100;
        scale
            .draw_series((0..n).map(|i| {
                let (a, b) = (lo + (top - lo) * i as f64 / n as f64, lo + (top - lo) * (i + 1) as f64 / n as f64);
                let [r, g, bl] = parsim_grid::viridis((i as f64 + 0.5) / n as f64);
                Rectangle::new([(0.0, a), (1.0, b)], RGBColor(r, g, bl).filled())
            }))
            .map_err(plot_err)?;
        Ok(())
    }
}

/// Something drawn on a white area of a given size: a chart or a heatmap.
trait Picture {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), Error>;
}

fn svg(p: &impl Picture) -> Result<String, Error> {
    font()?;
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, p.size()).into_drawing_area();
        p.draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(s)
}

fn png(p: &impl Picture) -> Result<Vec<u8>, Error> {
    font()?;
    let (w, h) = p.size();
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        p.draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    encode_png(&rgb, w, h)
}

fn save(p: &impl Picture, path: &Path) -> Result<(), Error> {
    if path.extension().is_some_and(|e| e == "svg") {
        write_atomic(path, svg(p)?.as_bytes())
    } else {
        write_atomic(path, &png(p)?)
    }
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(|e| Error::Run(format!("PNG: {e}")))?;
        wr.write_image_data(rgb).map_err(|e| Error::Run(format!("PNG: {e}")))?;
    }
    Ok(out)
}

/// A sweep's chart: the metric's mean against the swept parameter with its
/// confidence band.
pub fn sweep_chart(pts: &[(f64, f64, f64, f64)], x: &str, metric: &str, level: f64) -> Chart {
    let mean: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
    let band: Vec<(f64, f64, f64)> = pts.iter().map(|p| (p.0, p.2, p.3)).collect();
    Chart::new(&format!("{metric} against {x} (mean and {level}% confidence interval)")).panel(
        Panel::new(metric, x)
            .series(Series::line(&format!("{metric}: mean, {level}% CI band"), mean).band(band).markers()),
    )
}

/// Writes [`sweep_chart`] to `path`.
pub fn sweep_png(path: &Path, pts: &[(f64, f64, f64, f64)], x: &str, metric: &str, level: f64) -> Result<(), Error> {
    sweep_chart(pts, x, metric, level).save(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_chart_has_its_title_labels_and_legend() {
        let pts = [(1.0, 2.0, 1.5, 2.5), (2.0, 3.0, 2.4, 3.6), (4.0, 3.5, 3.0, 4.0)];
        let svg = sweep_chart(&pts, "bank.tellers", "mean_wait", 95.0).svg().unwrap();
        for text in ["mean_wait against bank.tellers", "95% confidence interval", "mean_wait: mean, 95% CI band"] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        let png = sweep_chart(&pts, "x", "y", 95.0).png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }

    #[test]
    fn the_heatmap_has_its_title_axes_and_numbered_colour_bar() {
        let (w, h) = (40, 30);
        let values: Vec<f64> = (0..w * h).map(|i| (i % w) as f64 * 2.5).collect();
        let slice = parsim_grid::Slice { width: w, height: h, values, stride: 2, range: (0.0, 97.5) };
        let map = Heatmap::new("field at step 100", slice, "temperature (K)");
        let dir = std::env::temp_dir().join(format!("parsim-heatmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        map.save(&dir.join("f.svg")).unwrap();
        let svg = std::fs::read_to_string(dir.join("f.svg")).unwrap();
        // The texts of the SVG: what a reader sees.
        let texts: Vec<&str> = svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
        for text in ["field at step 100", "temperature (K)", "x (cells)", "y (cells)", "90"] {
            assert!(texts.contains(&text), "missing {text:?} in {texts:?}");
        }
        assert_eq!(&map.png().unwrap()[1..4], b"PNG");
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(40.0), "40");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(2.5e7), "2.5e7");
    }
}

//! A PNG of an epidemic curve: S, E, I, R, V as shares of the population
//! over the days, with axes, a legend and tick labels drawn in a 3×5 pixel
//! font (no font files needed).

use std::path::Path;

use anyhow::Result;
use parsim_abm::DayCounts;

use crate::runner::write_atomic;

const W: usize = 900;
const H: usize = 480;
const LEFT: usize = 70;
const RIGHT: usize = 110;
const TOP: usize = 20;
const BOTTOM: usize = 40;

/// 3×5 glyphs, rows top to bottom, 3 bits each (bit 2 = left column).
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '%' => [5, 1, 2, 4, 5],
        '.' => [0, 0, 0, 0, 2],
        '-' => [0, 0, 7, 0, 0],
        'e' => [0, 7, 7, 4, 7],
        'S' => [7, 4, 7, 1, 7],
        'E' => [7, 4, 7, 4, 7],
        'I' => [7, 2, 2, 2, 7],
        'R' => [6, 5, 6, 5, 5],
        'V' => [5, 5, 5, 5, 2],
        'd' => [1, 1, 7, 5, 7],
        'a' => [0, 7, 1, 7, 7],
        'y' => [5, 5, 7, 1, 7],
        _ => [0; 5],
    }
}

struct Canvas {
    px: Vec<u8>,
}

impl Canvas {
    fn set(&mut self, x: usize, y: usize, c: [u8; 3]) {
        if x < W && y < H {
            self.px[(y * W + x) * 3..(y * W + x) * 3 + 3].copy_from_slice(&c);
        }
    }

    fn text(&mut self, x: usize, y: usize, s: &str, scale: usize, c: [u8; 3]) {
        for (i, ch) in s.chars().enumerate() {
            let g = glyph(ch);
            for (row, bits) in g.iter().enumerate() {
                for col in 0..3 {
                    if bits >> (2 - col) & 1 == 1 {
                        for dy in 0..scale {
                            for dx in 0..scale {
                                self.set(x + (i * 4 + col) * scale + dx, y + row * scale + dy, c);
                            }
                        }
                    }
                }
            }
        }
    }

    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), c: [u8; 3]) {
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as usize).max(1);
        for s in 0..=steps {
            let f = s as f64 / steps as f64;
            let (x, y) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
            for (dx, dy) in [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0)] {
                self.set((x + dx) as usize, (y + dy) as usize, c);
            }
        }
    }
}

/// A curve: its legend letter, colour, and value of a day.
type Series = (&'static str, [u8; 3], fn(&DayCounts) -> u64);

/// Writes the plot of `curve` (a population of `n`) to `path`, atomically.
pub fn epidemic_png(path: &Path, curve: &[DayCounts], n: u64) -> Result<()> {
    let mut cv = Canvas { px: vec![255u8; W * H * 3] };
    let (pw, ph) = ((W - LEFT - RIGHT) as f64, (H - TOP - BOTTOM) as f64);
    let days = curve.len().max(2) - 1;
    let xof = |d: usize| LEFT as f64 + pw * d as f64 / days as f64;
    let yof = |share: f64| TOP as f64 + ph * (1.0 - share);
    let grey = [200, 200, 200];
    let black = [0, 0, 0];
    // Grid, axes and tick labels: 0..100 % in steps of 20, days in 6 steps.
    for k in 0..=5 {
        let y = yof(k as f64 / 5.0);
        cv.line((LEFT as f64, y), ((W - RIGHT) as f64, y), if k == 0 { black } else { grey });
        cv.text(8, y as usize - 5, &format!("{}%", k * 20), 2, black);
    }
    // Day ticks every 10·⌈days/60⌉ days (every 30 for 180 days).
    let step = 10 * days.div_ceil(60).max(1);
    for d in (0..=days).step_by(step) {
        let x = xof(d);
        cv.line((x, TOP as f64), (x, (H - BOTTOM) as f64), if d == 0 { black } else { grey });
        cv.text((x as usize).saturating_sub(6), H - BOTTOM + 8, &d.to_string(), 2, black);
    }
    cv.text(W - RIGHT + 10, H - BOTTOM + 8, "day", 2, black);
    let series: [Series; 5] = [
        ("S", [31, 119, 180], |c| c.s),
        ("E", [255, 127, 14], |c| c.e),
        ("I", [214, 39, 40], |c| c.i),
        ("R", [44, 160, 44], |c| c.r),
        ("V", [148, 103, 189], |c| c.v),
    ];
    for (i, (name, colour, f)) in series.iter().enumerate() {
        if name == &"V" && curve.iter().all(|c| c.v == 0) {
            continue;
        }
        for d in 1..curve.len() {
            let a = (xof(d - 1), yof(f(&curve[d - 1]) as f64 / n.max(1) as f64));
            let b = (xof(d), yof(f(&curve[d]) as f64 / n.max(1) as f64));
            cv.line(a, b, *colour);
        }
        let y = TOP + 10 + 24 * i;
        for dy in 0..12 {
            for dx in 0..24 {
                cv.set(W - RIGHT + 14 + dx, y + dy, *colour);
            }
        }
        cv.text(W - RIGHT + 46, y, name, 2, black);
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, W as u32, H as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.add_text_chunk(
            "Description".into(),
            "parsim epidemic curve: share of agents in S, E, I, R, V by day".into(),
        )?;
        let mut wr = enc.write_header()?;
        wr.write_image_data(&cv.px)?;
    }
    write_atomic(path, &out)
}

/// Writes a 1-D sweep's plot: the mean of a metric against the parameter
/// (points joined by a line) inside its confidence band, to `path`.
pub fn sweep_png(path: &Path, pts: &[(f64, f64, f64, f64)]) -> Result<()> {
    let mut cv = Canvas { px: vec![255u8; W * H * 3] };
    let (pw, ph) = ((W - LEFT - RIGHT) as f64, (H - TOP - BOTTOM) as f64);
    let fin = |v: f64| v.is_finite();
    let xs = pts.iter().map(|p| p.0);
    let (x0, x1) = (xs.clone().fold(f64::INFINITY, f64::min), xs.fold(f64::NEG_INFINITY, f64::max));
    let ys = pts.iter().flat_map(|p| [p.1, p.2, p.3]).filter(|v| fin(*v));
    let (y0, y1) = (ys.clone().fold(f64::INFINITY, f64::min).min(0.0), ys.fold(f64::NEG_INFINITY, f64::max));
    let (sx, sy) = ((x1 - x0).max(1e-300), (y1 - y0).max(1e-300));
    let xof = |x: f64| LEFT as f64 + pw * (x - x0) / sx;
    let yof = |y: f64| TOP as f64 + ph * (1.0 - (y - y0) / sy);
    let black = [0, 0, 0];
    let grey = [200, 200, 200];
    let label = |v: f64| {
        let t = format!("{v:.3}");
        if t.len() > 7 {
            format!("{v:.2e}")
        } else {
            t
        }
    };
    for k in 0..=5 {
        let y = TOP as f64 + ph * k as f64 / 5.0;
        cv.line((LEFT as f64, y), ((W - RIGHT) as f64, y), if k == 5 { black } else { grey });
        cv.text(4, (y as usize).saturating_sub(5), &label(y1 - sy * k as f64 / 5.0), 2, black);
    }
    for k in 0..=4 {
        let x = x0 + sx * k as f64 / 4.0;
        cv.text((xof(x) as usize).saturating_sub(12), H - BOTTOM + 8, &label(x), 2, black);
    }
    cv.line((LEFT as f64, TOP as f64), (LEFT as f64, (H - BOTTOM) as f64), black);
    // The band: vertical strokes between consecutive points, interpolated.
    let band = [198, 219, 239];
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if !(fin(a.2) && fin(a.3) && fin(b.2) && fin(b.3)) {
            continue;
        }
        let (xa, xb) = (xof(a.0), xof(b.0));
        let steps = (xb - xa).abs().ceil().max(1.0) as usize;
        for s in 0..=steps {
            let f = s as f64 / steps as f64;
            let x = xa + f * (xb - xa);
            let (lo, hi) = (a.2 + f * (b.2 - a.2), a.3 + f * (b.3 - a.3));
            cv.line((x, yof(hi)), (x, yof(lo)), band);
        }
    }
    let blue = [31, 119, 180];
    for w in pts.windows(2) {
        cv.line((xof(w[0].0), yof(w[0].1)), (xof(w[1].0), yof(w[1].1)), blue);
    }
    for p in pts {
        let (x, y) = (xof(p.0), yof(p.1));
        for d in -3i32..=3 {
            cv.set((x + f64::from(d)) as usize, y as usize, black);
            cv.set(x as usize, (y + f64::from(d)) as usize, black);
        }
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, W as u32, H as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let note = format!("parsim sweep: mean and confidence band; x from {x0} to {x1}, y from {y0} to {y1}");
        enc.add_text_chunk("Description".into(), note)?;
        let mut wr = enc.write_header()?;
        wr.write_image_data(&cv.px)?;
    }
    write_atomic(path, &out)
}

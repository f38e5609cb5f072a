//! A PNG of an epidemic curve: S, E, I, R, V as shares of the population
//! over the days, with axes, a legend and tick labels drawn in a 3×5 pixel
//! font (no font files needed).

use std::path::Path;

use anyhow::Result;
use parsim_abm::DayCounts;

use crate::runner::write_atomic;

const W: usize = 900;
const H: usize = 480;
const LEFT: usize = 60;
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

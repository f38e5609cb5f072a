//! Forecasts of each chunk's next load from its past measurements.

use serde::{Deserialize, Serialize};

/// How `predictive` balancing forecasts a chunk's next load.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Forecast {
    /// Exponential smoothing: s ← a·x + (1 − a)·s.
    Smooth(f64),
    /// A least-squares line through the last k measurements, extended one
    /// interval ahead (never below zero).
    Trend(usize),
}

/// Per-chunk history and the forecast it gives.
///
/// ```
/// use parsim_lb::{Forecast, Predictor};
/// let mut p = Predictor::new(Forecast::Trend(3), 1);
/// for x in [1.0, 2.0, 3.0] {
///     p.observe(&[x]);
/// }
/// assert!((p.forecast()[0] - 4.0).abs() < 1e-12);
/// ```
#[derive(Clone, Debug)]
pub struct Predictor {
    how: Forecast,
    smooth: Vec<f64>,
    past: Vec<Vec<f64>>,
}

impl Predictor {
    /// A predictor for `n` chunks.
    pub fn new(how: Forecast, n: usize) -> Self {
        Predictor { how, smooth: Vec::new(), past: vec![Vec::new(); n] }
    }

    /// Adds one interval's measured loads.
    pub fn observe(&mut self, loads: &[f64]) {
        match self.how {
            Forecast::Smooth(a) => {
                if self.smooth.is_empty() {
                    self.smooth = loads.to_vec();
                } else {
                    for (s, &x) in self.smooth.iter_mut().zip(loads) {
                        *s = a * x + (1.0 - a) * *s;
                    }
                }
            }
            Forecast::Trend(k) => {
                for (h, &x) in self.past.iter_mut().zip(loads) {
                    h.push(x);
                    if h.len() > k.max(2) {
                        h.remove(0);
                    }
                }
            }
        }
    }

    /// The forecast of the next interval's loads.
    pub fn forecast(&self) -> Vec<f64> {
        match self.how {
            Forecast::Smooth(_) => self.smooth.clone(),
            Forecast::Trend(_) => self.past.iter().map(|h| trend(h)).collect(),
        }
    }
}

fn trend(h: &[f64]) -> f64 {
    let n = h.len();
    match n {
        0 => 0.0,
        1 => h[0],
        _ => {
            let nf = n as f64;
            let mx = (nf - 1.0) / 2.0;
            let my = h.iter().sum::<f64>() / nf;
            let (mut sxy, mut sxx) = (0.0, 0.0);
            for (i, &y) in h.iter().enumerate() {
                let dx = i as f64 - mx;
                sxy += dx * (y - my);
                sxx += dx * dx;
            }
            (my + sxy / sxx * (nf - mx)).max(0.0)
        }
    }
}

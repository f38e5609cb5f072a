//! How often to checkpoint: Young's first-order interval, Daly's
//! higher-order one, the overhead each predicts, and durations as people
//! write them (`5m`, `6h`, `1h30m`).

use crate::CkptError;

/// Young (1974): τ = √(2δM), for a checkpoint costing `delta` and a mean
/// time to interrupt `mtbf` (any one time unit).
///
/// ```
/// assert!((parsim_ckpt::young(5.0, 1440.0) - 120.0).abs() < 1e-9);
/// ```
pub fn young(delta: f64, mtbf: f64) -> f64 {
    (2.0 * delta * mtbf).sqrt()
}

/// Daly (2006), the higher-order optimum:
/// τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + (1/9)·(δ/(2M))] − δ for δ < 2M, and
/// τ = M otherwise.
///
/// ```
/// // Daly's own case: δ = 5 min, M = 24 h → 116.69 min.
/// assert!((parsim_ckpt::daly(5.0, 24.0 * 60.0) - 116.69).abs() < 0.01);
/// ```
pub fn daly(delta: f64, mtbf: f64) -> f64 {
    if delta >= 2.0 * mtbf {
        return mtbf;
    }
    let x = delta / (2.0 * mtbf);
    (2.0 * delta * mtbf).sqrt() * (1.0 + x.sqrt() / 3.0 + x / 9.0) - delta
}

/// The expected fraction of extra wall time when checkpointing every `tau`
/// of work at cost `delta`, restarting at cost `restart`, with exponential
/// interrupts of mean `mtbf` (Daly 2006, eq. 13):
/// T_w / T_s − 1 = (M/τ)·e^{R/M}·(e^{(τ+δ)/M} − 1) − 1.
///
/// ```
/// let o = parsim_ckpt::expected_overhead(116.69, 5.0, 5.0, 1440.0);
/// assert!(o > 0.09 && o < 0.095, "{o}");
/// ```
pub fn expected_overhead(tau: f64, delta: f64, restart: f64, mtbf: f64) -> f64 {
    mtbf / tau * (restart / mtbf).exp() * ((tau + delta) / mtbf).exp_m1() - 1.0
}

/// Parses a duration: a number of seconds (`90`, `2.5`), or numbers with
/// units `ms`, `s`, `m`, `h`, `d` run together (`10m`, `1h30m`, `2d`).
///
/// ```
/// assert_eq!(parsim_ckpt::parse_duration("1h30m").unwrap(), 5400.0);
/// assert_eq!(parsim_ckpt::parse_duration("90").unwrap(), 90.0);
/// assert!(parsim_ckpt::parse_duration("5 weeks").is_err());
/// ```
pub fn parse_duration(s: &str) -> Result<f64, CkptError> {
    let bad = |why: &str| CkptError::Input(format!("duration \"{s}\": {why} (examples: 90, 30s, 10m, 6h, 1h30m, 2d)"));
    let t = s.trim();
    if t.is_empty() {
        return Err(bad("empty"));
    }
    if let Ok(v) = t.parse::<f64>() {
        return if v.is_finite() && v > 0.0 { Ok(v) } else { Err(bad("must be a positive, finite number")) };
    }
    let mut total = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if n == 0 {
            return Err(bad("expected a number"));
        }
        let v: f64 = rest[..n].parse().map_err(|_| bad("not a number"))?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ms" => 1e-3,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            "" => return Err(bad("a unit is missing after a number")),
            other => return Err(bad(&format!("unknown unit \"{other}\""))),
        };
        rest = &rest[u..];
        total += v * unit;
    }
    if total.is_finite() && total > 0.0 {
        Ok(total)
    } else {
        Err(bad("must be positive and finite"))
    }
}

/// A duration for people: `116.69 min`, `9.14 min`, `2.50 s`, `3.1 h`.
pub fn human(seconds: f64) -> String {
    if seconds >= 10800.0 {
        format!("{:.2} h", seconds / 3600.0)
    } else if seconds >= 120.0 {
        format!("{:.2} min", seconds / 60.0)
    } else if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else {
        format!("{:.1} ms", seconds * 1e3)
    }
}

/// When checkpoints are taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interval {
    /// Every this many boundaries (steps, days, supersteps, GVT rounds).
    Every(u64),
    /// About every this many seconds of run time.
    Seconds(f64),
    /// At Daly's optimum for this mean time to interrupt (seconds), with δ
    /// the measured cost of a checkpoint, re-estimated at each one.
    Auto {
        /// Mean time to interrupt, in seconds.
        mtbf: f64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daly_2006_cases_and_young() {
        // δ = 5 min: M = 24 h → 116.69, M = 6 h → 56.71, M = 15 min → 9.14.
        for (m, want) in [(24.0 * 60.0, 116.69), (6.0 * 60.0, 56.71), (15.0, 9.14)] {
            let got = daly(5.0, m);
            assert!((got - want).abs() < 0.005, "M = {m}: {got} vs {want}");
        }
        assert_eq!(young(5.0, 360.0), 60.0);
        assert_eq!(daly(10.0, 4.0), 4.0, "δ ≥ 2M: checkpoint every M");
        // The optimum is a minimum of the overhead model.
        let (d, m) = (5.0, 360.0);
        let t = daly(d, m);
        let o = expected_overhead(t, d, d, m);
        assert!(o < expected_overhead(t * 0.8, d, d, m) && o < expected_overhead(t * 1.25, d, d, m));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m").unwrap(), 600.0);
        assert_eq!(parse_duration("6h").unwrap(), 21600.0);
        assert_eq!(parse_duration("250ms").unwrap(), 0.25);
        assert_eq!(parse_duration("2d").unwrap(), 172800.0);
        for bad in ["", "h", "10x", "-5", "0", "1e400", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(human(7001.4), "116.69 min");
    }
}

//! Where the efficiency went: speedup, efficiency and the lost efficiency
//! of a scaling study split into its causes, the Karp–Flatt serial
//! fraction, and Amdahl's and Gustafson's laws fitted to the points.

use serde::Serialize;

/// One rank's time in each phase of a run (seconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Phases {
    /// Computing.
    pub compute: f64,
    /// Sending and receiving.
    pub comm: f64,
    /// Waiting (barriers, receives that block).
    pub wait: f64,
    /// Files.
    pub io: f64,
    /// Work only one rank does while the others wait.
    pub serial: f64,
    /// The model's setup (building, reading, partitioning), all phases;
    /// the other fields are the simulation's alone when it is known.
    pub setup: f64,
}

/// One measured point of a study: a run at `p` ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Ranks.
    pub p: usize,
    /// Wall time (the median over repetitions).
    pub wall: f64,
    /// Each rank's phases (of the run whose wall time is the median).
    pub ranks: Vec<Phases>,
    /// Messages and bytes sent, all ranks.
    pub messages: u64,
    /// Bytes sent, all ranks.
    pub bytes: u64,
    /// Peak resident memory per rank, bytes (when known).
    pub peak_rss: Vec<u64>,
    /// Every repetition's wall time.
    pub walls: Vec<f64>,
    /// Boundaries (steps, days …) the run reported (0: unknown).
    pub boundaries: u64,
    /// Injected jitter slept, all ranks (seconds).
    pub jitter_s: f64,
}

/// The lost efficiency at one point, by cause, as fractions of the run's
/// rank-time p·T(p) (they sum to 1 − efficiency).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Loss {
    /// Setup (building, reading, partitioning the model) beyond the
    /// reference's share: the part of Amdahl's serial fraction that lives
    /// before the simulation starts.
    pub setup: f64,
    /// Serial work: every rank stands still while one works.
    pub serial: f64,
    /// Load imbalance: max − mean compute, on every rank.
    pub imbalance: f64,
    /// Communication (sending and receiving) beyond the reference's.
    pub communication: f64,
    /// Waiting and synchronisation beyond the imbalance (jitter, latency
    /// of collectives, anything not measured in another phase).
    pub waiting: f64,
    /// Files beyond the reference's.
    pub io: f64,
    /// Redundant work: total compute beyond the reference's (negative when
    /// the parts compute faster than the whole: caches).
    pub redundant: f64,
}

impl Loss {
    /// The causes with their names, largest first.
    pub fn ranked(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("setup", self.setup),
            ("serial", self.serial),
            ("load imbalance", self.imbalance),
            ("communication", self.communication),
            ("waiting", self.waiting),
            ("io", self.io),
            ("redundant work", self.redundant),
        ];
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    /// The sum of the causes (= 1 − efficiency).
    pub fn total(&self) -> f64 {
        self.setup + self.serial + self.imbalance + self.communication + self.waiting + self.io + self.redundant
    }
}

/// A point's figures against the study's reference point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    /// Ranks.
    pub p: usize,
    /// T(ref)·… / T(p): strong scaling T(p₀)/T(p)·p₀; weak scaling the
    /// scaled speedup p·T(p₀)/T(p)·(1/p₀).
    pub speedup: f64,
    /// speedup / p.
    pub efficiency: f64,
    /// 1 − efficiency, by cause.
    pub loss: Loss,
    /// Karp–Flatt's experimentally determined serial fraction (p > 1).
    pub karp_flatt: Option<f64>,
    /// Peak resident memory per rank (max over ranks), bytes.
    pub peak_rss: Option<u64>,
}

fn sum(ranks: &[Phases], f: fn(&Phases) -> f64) -> f64 {
    ranks.iter().map(f).sum()
}

fn max(ranks: &[Phases], f: fn(&Phases) -> f64) -> f64 {
    ranks.iter().map(f).fold(0.0, f64::max)
}

/// Attributes the lost efficiency of `pt` against the reference `base`
/// (the study's smallest p). `weak`: the work grows with p (the ideal
/// time stays T(p₀)); otherwise the work is fixed (the ideal time is
/// T(p₀)·p₀/p).
///
/// The run's rank-time p·T(p) exceeds the reference's ideal share by the
/// lost rank-time Λ; each cause is the rank-time it explains:
/// redundant = Σ compute − the reference's compute (scaled for weak
/// scaling); imbalance = p·max compute − Σ compute; serial = p·max serial
/// − the reference's; setup = p·max setup − the reference's (setup is
/// taken out of the other phases when the runs report it); communication
/// and io = Σ over ranks − the reference's; waiting = the rest of Λ, so the
/// causes sum to the loss.
pub fn attribute(base: &Point, pt: &Point, weak: bool) -> Attribution {
    let (p0, p) = (base.p as f64, pt.p as f64);
    let scale = if weak { p / p0 } else { 1.0 };
    // The ideal: the reference's rank-time, scaled by the work.
    let ideal = base.wall * p0 * scale;
    let actual = pt.wall * p;
    let speedup = if weak { p0 * scale * base.wall / pt.wall } else { p0 * base.wall / pt.wall };
    let efficiency = ideal / actual;
    let lost = actual - ideal;
    let b = &base.ranks;
    let r = &pt.ranks;
    let redundant = sum(r, |x| x.compute) - sum(b, |x| x.compute) * scale;
    let imbalance = p * max(r, |x| x.compute) - sum(r, |x| x.compute);
    let base_imbalance = p0 * max(b, |x| x.compute) - sum(b, |x| x.compute);
    let imbalance = imbalance - base_imbalance * scale;
    let serial = p * max(r, |x| x.serial) - p0 * max(b, |x| x.serial) * scale;
    let setup = p * max(r, |x| x.setup) - p0 * max(b, |x| x.setup) * scale;
    let communication = sum(r, |x| x.comm) - sum(b, |x| x.comm) * scale;
    let io = sum(r, |x| x.io) - sum(b, |x| x.io) * scale;
    let waiting = lost - (redundant + imbalance + serial + setup + communication + io);
    let f = |x: f64| if actual > 0.0 { x / actual } else { 0.0 };
    let karp_flatt = (pt.p > base.p && speedup > 0.0).then(|| {
        let (s, q) = (speedup / p0, p / p0);
        (1.0 / s - 1.0 / q) / (1.0 - 1.0 / q)
    });
    Attribution {
        p: pt.p,
        speedup,
        efficiency,
        loss: Loss {
            setup: f(setup),
            serial: f(serial),
            imbalance: f(imbalance),
            communication: f(communication),
            waiting: f(waiting),
            io: f(io),
            redundant: f(redundant),
        },
        karp_flatt,
        peak_rss: pt.peak_rss.iter().copied().max(),
    }
}

/// Amdahl's serial fraction f fitted by least squares to (p, speedup):
/// 1/S − 1/p = f·(1 − 1/p), clamped to [0, 1].
pub fn fit_amdahl(points: &[(f64, f64)]) -> f64 {
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &(p, s) in points.iter().filter(|&&(p, s)| p > 1.0 && s > 0.0) {
        let (x, y) = (1.0 - 1.0 / p, 1.0 / s - 1.0 / p);
        sxy += x * y;
        sxx += x * x;
    }
    if sxx > 0.0 {
        (sxy / sxx).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Amdahl's speedup at p for serial fraction f.
pub fn amdahl(f: f64, p: f64) -> f64 {
    1.0 / (f + (1.0 - f) / p)
}

/// Gustafson's serial fraction fitted to scaled speedups: S = p − f·(p − 1).
pub fn fit_gustafson(points: &[(f64, f64)]) -> f64 {
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &(p, s) in points.iter().filter(|&&(p, _)| p > 1.0) {
        let x = p - 1.0;
        sxy += x * (p - s);
        sxx += x * x;
    }
    if sxx > 0.0 {
        (sxy / sxx).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Gustafson's scaled speedup.
pub fn gustafson(f: f64, p: f64) -> f64 {
    p - f * (p - 1.0)
}

/// Karp–Flatt's e = (1/S − 1/p) / (1 − 1/p).
pub fn karp_flatt(speedup: f64, p: f64) -> f64 {
    (1.0 / speedup - 1.0 / p) / (1.0 - 1.0 / p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(p: usize, wall: f64, ranks: Vec<Phases>) -> Point {
        Point {
            p,
            wall,
            ranks,
            messages: 0,
            bytes: 0,
            peak_rss: Vec::new(),
            walls: vec![wall],
            boundaries: 0,
            jitter_s: 0.0,
        }
    }

    fn even(p: usize, compute: f64) -> Vec<Phases> {
        vec![Phases { compute, ..Phases::default() }; p]
    }

    #[test]
    fn the_causes_sum_to_the_loss_and_name_the_injected_barrier() {
        let base = point(1, 8.0, even(1, 8.0));
        // Imbalance: rank 0 does twice the work of the others.
        let mut r = even(4, 2.0);
        r[0].compute = 4.0;
        for x in &mut r[1..] {
            x.wait = 2.0;
        }
        let a = attribute(&base, &point(4, 4.0, r), false);
        assert!((a.efficiency - 0.5).abs() < 1e-12);
        assert!((a.loss.total() - (1.0 - a.efficiency)).abs() < 1e-12);
        assert_eq!(a.loss.ranked()[0].0, "load imbalance");
        assert!((a.loss.imbalance - 6.0 / 16.0).abs() < 1e-12);
        // Serial: 2 s on rank 0 while three ranks wait.
        let mut r = even(4, 2.0);
        r[0].serial = 2.0;
        for x in &mut r[1..] {
            x.wait = 2.0;
        }
        let a = attribute(&base, &point(4, 4.0, r), false);
        assert_eq!(a.loss.ranked()[0].0, "serial");
        assert!((a.loss.total() - 0.5).abs() < 1e-12);
        // Communication: 1 s of halo exchange on every rank.
        let mut r = even(4, 2.0);
        for x in &mut r {
            x.comm = 1.0;
        }
        let a = attribute(&base, &point(4, 3.0, r), false);
        assert_eq!(a.loss.ranked()[0].0, "communication");
        assert!((a.loss.communication - 4.0 / 12.0).abs() < 1e-12);
        assert!(a.loss.waiting.abs() < 1e-12);
        // Weak scaling: twice the work on twice the ranks in the same time is ideal.
        let a = attribute(&base, &point(2, 8.0, even(2, 8.0)), true);
        assert!((a.efficiency - 1.0).abs() < 1e-12 && a.loss.total().abs() < 1e-12);
        assert!((a.speedup - 2.0).abs() < 1e-12);
    }

    #[test]
    fn amdahl_and_gustafson_fits_recover_f() {
        for f in [0.0, 0.05, 0.2, 0.5] {
            let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0].iter().map(|&p| (p, amdahl(f, p))).collect();
            assert!((fit_amdahl(&pts) - f).abs() < 1e-12, "amdahl {f}");
            let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0].iter().map(|&p| (p, gustafson(f, p))).collect();
            assert!((fit_gustafson(&pts) - f).abs() < 1e-12, "gustafson {f}");
        }
        // Karp–Flatt of an Amdahl speedup is its serial fraction.
        assert!((karp_flatt(amdahl(0.1, 8.0), 8.0) - 0.1).abs() < 1e-12);
    }
}

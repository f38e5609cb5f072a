//! `parsim model …`: the seed's formulas as calculators.

use anyhow::Result;
use parsim::ckpt::{daly, expected_overhead, human, parse_duration, young};
use parsim::InputError;

/// `parsim model checkpoint --delta D --mtbf M [--restart R]`: Young's and
/// Daly's intervals and the overhead each predicts.
pub fn checkpoint(delta: &str, mtbf: &str, restart: Option<&str>) -> Result<()> {
    let d = parse_duration(delta).map_err(|e| InputError::flag("--delta", e.to_string()))?;
    let m = parse_duration(mtbf).map_err(|e| InputError::flag("--mtbf", e.to_string()))?;
    let r = match restart {
        Some(r) => parse_duration(r).map_err(|e| InputError::flag("--restart", e.to_string()))?,
        None => d,
    };
    let (ty, td) = (young(d, m), daly(d, m));
    println!(
        "checkpoint cost δ = {}, mean time to interrupt M = {}, restart cost R = {}",
        human(d),
        human(m),
        human(r)
    );
    println!("{:<34} {:>14} {:>18}", "", "interval τ", "expected overhead");
    for (name, t) in [("Young 1974, τ = √(2δM)", ty), ("Daly 2006, higher-order optimum", td)] {
        println!("{name:<34} {:>14} {:>17.2}%", human(t), 100.0 * expected_overhead(t, d, r, m));
    }
    if d >= 2.0 * m {
        println!("δ ≥ 2M: Daly's rule checkpoints every M; the machine fails about as often as it can checkpoint");
    }
    println!(
        "overhead: wall time with checkpoints and failures over failure-free wall time, minus 1 (Daly 2006, eq. 13)"
    );
    Ok(())
}

/// `parsim model amdahl --serial F --p P`: the speedup and efficiency
/// Amdahl's law allows at P ranks, and its limit.
pub fn amdahl(f: f64, p: &[usize]) -> Result<()> {
    check_fraction(f)?;
    println!("Amdahl: serial fraction f = {f}: speedup S(p) = 1 / (f + (1 − f)/p), at most 1/f = {}", limit(f));
    println!("{:>8} {:>12} {:>11}", "p", "speedup", "efficiency");
    for &p in p {
        let s = crate::scale::analysis::amdahl(f, p as f64);
        println!("{p:>8} {s:>12.3} {:>10.1}%", 100.0 * s / p as f64);
    }
    Ok(())
}

/// `parsim model gustafson --serial F --p P`: the scaled speedup when the
/// work grows with p.
pub fn gustafson(f: f64, p: &[usize]) -> Result<()> {
    check_fraction(f)?;
    println!("Gustafson: serial fraction f = {f} of the scaled run: S(p) = p − f·(p − 1)");
    println!("{:>8} {:>12} {:>11}", "p", "speedup", "efficiency");
    for &p in p {
        let s = crate::scale::analysis::gustafson(f, p as f64);
        println!("{p:>8} {s:>12.3} {:>10.1}%", 100.0 * s / p as f64);
    }
    Ok(())
}

/// `parsim model karp-flatt --speedup S --p P`: the experimentally
/// determined serial fraction.
pub fn karp_flatt(s: f64, p: usize) -> Result<()> {
    if p < 2 {
        return Err(InputError::flag(&format!("--p {p}"), "Karp–Flatt needs at least 2 ranks").into());
    }
    if !(s > 0.0 && s.is_finite()) {
        return Err(InputError::flag(&format!("--speedup {s}"), "expected a positive speedup").into());
    }
    let e = crate::scale::analysis::karp_flatt(s, p as f64);
    println!(
        "Karp–Flatt: speedup {s} on {p} ranks (efficiency {:.1} %): e = (1/S − 1/p) / (1 − 1/p) = {e:.4}",
        100.0 * s / p as f64
    );
    println!(
        "  e is the serial fraction Amdahl's law would need to explain the speedup; an e that grows with p points at overheads (communication, imbalance) rather than serial work"
    );
    Ok(())
}

fn check_fraction(f: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&f) {
        return Err(InputError::flag(&format!("--serial {f}"), "expected a fraction in 0..=1").into());
    }
    Ok(())
}

fn limit(f: f64) -> String {
    if f > 0.0 {
        format!("{:.1}", 1.0 / f)
    } else {
        "∞".into()
    }
}

/// The most nearly cubic split of `p` into `k` factors (largest first).
fn split(p: usize, k: usize) -> Vec<usize> {
    let mut best: Vec<usize> = Vec::new();
    let mut best_score = f64::INFINITY;
    // k ≤ 3: enumerate divisors.
    let divisors: Vec<usize> = (1..=p).filter(|d| p % d == 0).collect();
    let mut consider = |v: Vec<usize>| {
        let mean = (p as f64).powf(1.0 / v.len() as f64);
        let score: f64 = v.iter().map(|&x| (x as f64 / mean).ln().powi(2)).sum();
        if score < best_score {
            best_score = score;
            best = v;
        }
    };
    match k {
        1 => consider(vec![p]),
        2 => {
            for &a in &divisors {
                consider(vec![a, p / a]);
            }
        }
        _ => {
            for &a in &divisors {
                for &b in divisors.iter().filter(|&&b| (p / a) % b == 0) {
                    consider(vec![a, b, p / a / b]);
                }
            }
        }
    }
    best.sort_unstable_by(|a, b| b.cmp(a));
    best
}

/// `parsim model halo --size 4096x4096 --ranks 64`: cells, halo cells and
/// halo bytes per rank and step for slabs, pencils (3-D) and blocks.
pub fn halo(size: &str, ranks: usize, width: usize, bytes: usize) -> Result<()> {
    let dims: Vec<usize> = size
        .split(['x', '×', ','])
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| InputError::flag(&format!("--size {size}"), "expected e.g. 4096x4096 or 512x512x512"))?;
    if !(2..=3).contains(&dims.len()) || dims.contains(&0) {
        return Err(
            InputError::flag(&format!("--size {size}"), "expected 2 or 3 positive extents, e.g. 4096x4096").into()
        );
    }
    if ranks == 0 {
        return Err(InputError::flag("--ranks 0", "at least 1 rank").into());
    }
    let total: f64 = dims.iter().map(|&d| d as f64).product();
    println!(
        "a {} grid ({:.3e} cells) on {ranks} ranks, halo width {width}, {bytes} bytes per cell",
        dims.iter().map(usize::to_string).collect::<Vec<_>>().join("×"),
        total
    );
    println!(
        "{:<9} {:>14} {:>16} {:>16} {:>11} {:>18}",
        "layout", "ranks per axis", "cells per rank", "halo cells/rank", "surface/vol", "halo bytes per step"
    );
    let kinds: &[(&str, usize)] =
        if dims.len() == 3 { &[("slabs", 1), ("pencils", 2), ("blocks", 3)] } else { &[("slabs", 1), ("blocks", 2)] };
    for &(name, k) in kinds {
        let f = split(ranks, k);
        let mut per = vec![1usize; dims.len()];
        per[..k].copy_from_slice(&f);
        let local: Vec<f64> = dims.iter().zip(&per).map(|(&d, &r)| d as f64 / r as f64).collect();
        if local.iter().any(|&l| l < width as f64) {
            println!("{name:<9} {:>14}   a rank's extent would be thinner than the halo", fmt_axes(&per));
            continue;
        }
        let cells: f64 = local.iter().product();
        // Two faces on every cut axis, each width × the other extents.
        let halo: f64 = (0..dims.len())
            .filter(|&a| per[a] > 1)
            .map(|a| {
                2.0 * width as f64 * local.iter().enumerate().filter(|&(b, _)| b != a).map(|(_, l)| l).product::<f64>()
            })
            .sum();
        println!(
            "{name:<9} {:>14} {:>16.0} {:>16.0} {:>11.4} {:>15.1} kB",
            fmt_axes(&per),
            cells,
            halo,
            halo / cells,
            halo * bytes as f64 / 1e3
        );
    }
    println!("(each cut axis sends two faces per step; corners, needed by box stencils, are not counted)");
    Ok(())
}

fn fmt_axes(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("×")
}

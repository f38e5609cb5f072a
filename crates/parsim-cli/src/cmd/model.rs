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

//! What every balanced model reports: a line per rebalance, a summary
//! line, and `lb.png` (λ over the run, rebalances marked).

use std::path::Path;

use parsim::plot::{Chart, Panel, Series};

/// λ over the run with the rebalances marked.
pub fn lb_png(path: &Path, name: &str, unit: &str, s: &parsim_lb::Stats) -> Result<(), parsim::Error> {
    let lambda: Vec<(f64, f64)> = s.lambda.iter().map(|&(st, l)| (st as f64, l)).collect();
    let before: Vec<(f64, f64)> = s.events.iter().map(|e| (e.step as f64, e.lambda_before)).collect();
    let after: Vec<(f64, f64)> = s.events.iter().map(|e| (e.step as f64, e.lambda_after)).collect();
    let mut panel = Panel::new("λ = max / mean compute per rank", unit)
        .series(Series::line("λ measured over each interval", lambda).markers());
    if !before.is_empty() {
        panel = panel
            .series(Series::points("rebalance: λ before", before))
            .series(Series::points("rebalance: λ of the same loads on the new map", after));
    }
    Chart::new(&format!("{name}: load imbalance, strategy {} ({} rebalances)", s.strategy, s.rebalances))
        .panel(panel)
        .save(path)
}

/// Adds a line per rebalance (at the `unit` it happened after: step, day)
/// and a summary line (ending with `extra`).
pub fn lines(mut o: parsim::Outcome, lb: &parsim_lb::Stats, unit: &str, extra: &str) -> parsim::Outcome {
    for e in &lb.events {
        o = o.line(format!(
            "{unit} {:>5}: rebalanced ({}): λ {:.3} → {:.3}, {} chunks ({:.1} kB) moved, decided in {:.2} ms, migrated in {:.2} ms",
            e.step,
            lb.strategy,
            e.lambda_before,
            e.lambda_after,
            e.chunks,
            e.bytes as f64 / 1e3,
            e.decide_s * 1e3,
            e.migrate_s * 1e3
        ));
    }
    let lams: Vec<f64> = lb.lambda.iter().map(|x| x.1).collect();
    if !lams.is_empty() {
        o = o.line(format!(
            "{}: {} rebalances; λ mean {:.3}, max {:.3} over {} checks; {extra}",
            lb.strategy,
            lb.rebalances,
            lams.iter().sum::<f64>() / lams.len() as f64,
            lams.iter().copied().fold(0.0, f64::max),
            lams.len(),
        ));
    }
    o
}

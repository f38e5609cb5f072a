//! The epidemic's chart: S, E, I, R, V as shares of the population over
//! the days, each intervention's active window shaded and named in the
//! legend, and a second panel with the new infections per day.

use std::path::Path;

use parsim::plot::{Chart, Panel, Series, COLOURS};
use parsim_abm::{DayCounts, SeirConfig};

/// The interventions active over the run: (label, first day, day after the last).
pub fn windows(cfg: &SeirConfig, layer_names: &[String]) -> Vec<(String, f64, f64)> {
    let mut w = Vec::new();
    for c in &cfg.closures {
        let name = layer_names.get(c.layer).map_or("layer", String::as_str);
        w.push((format!("{name} closed (days {}–{})", c.from, c.to), f64::from(c.from), f64::from(c.to)));
    }
    if let Some(v) = &cfg.vaccination {
        w.push((
            format!("vaccination {:.2}%/day (days {}–{})", 100.0 * v.rate, v.from, v.to),
            f64::from(v.from),
            f64::from(v.to),
        ));
    }
    w
}

/// The names of the interventions active on `day` (for `curve.csv`).
pub fn active_on(cfg: &SeirConfig, layer_names: &[String], day: u32) -> Vec<String> {
    let mut a = Vec::new();
    for c in &cfg.closures {
        if (c.from..c.to).contains(&day) {
            a.push(format!("close:{}", layer_names.get(c.layer).map_or("layer", String::as_str)));
        }
    }
    if let Some(v) = &cfg.vaccination {
        if (v.from..v.to).contains(&day) {
            a.push("vaccinate".into());
        }
    }
    if let Some(i) = &cfg.isolation {
        if day >= i.delay {
            a.push("isolate".into());
        }
    }
    a
}

/// The chart of a curve over `agents` agents with shaded `windows`.
pub fn epidemic_chart(curve: &[DayCounts], agents: u64, windows: &[(String, f64, f64)]) -> Chart {
    let n = agents.max(1) as f64;
    let share = |f: fn(&DayCounts) -> u64| -> Vec<(f64, f64)> {
        curve.iter().enumerate().map(|(d, c)| (d as f64, f(c) as f64 / n)).collect()
    };
    let mut states = Panel::new("share of the population", "day").percent().y_range(0.0, 1.0);
    for (label, from, to) in windows {
        states = states.window(label, *from, *to);
    }
    let with_v = curve.iter().any(|c| c.v > 0);
    let mut series = vec![
        Series::line("S susceptible", share(|c| c.s)).colour(COLOURS[0]),
        Series::line("E exposed", share(|c| c.e)).colour(COLOURS[1]),
        Series::line("I infectious", share(|c| c.i)).colour(COLOURS[2]),
        Series::line("R recovered", share(|c| c.r)).colour(COLOURS[3]),
    ];
    if with_v {
        series.push(Series::line("V vaccinated", share(|c| c.v)).colour(COLOURS[4]));
    }
    for s in series {
        states = states.series(s);
    }
    let new: Vec<(f64, f64)> = curve.iter().enumerate().map(|(d, c)| (d as f64, c.new as f64)).collect();
    let mut incidence = Panel::new("new infections per day", "day");
    for (label, from, to) in windows {
        incidence = incidence.window(label, *from, *to);
    }
    incidence = incidence.series(Series::bars("new infections (agents/day)", new).colour(COLOURS[2]));
    Chart::new(&format!("SEIR epidemic: {agents} agents, {} days", curve.len()))
        .size(1100, 800)
        .panel(states)
        .panel(incidence)
}

/// Writes the chart to `path` (PNG, or SVG for `.svg`).
pub fn epidemic_png(
    path: &Path,
    curve: &[DayCounts],
    agents: u64,
    windows: &[(String, f64, f64)],
) -> Result<(), parsim::Error> {
    epidemic_chart(curve, agents, windows).save(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_title_axes_legend_windows_and_incidence() {
        let curve: Vec<DayCounts> = (0..60u64)
            .map(|d| DayCounts { s: 1000 - 10 * d, e: 5, i: 3 * d, r: 7 * d, v: 0, new: d % 7, isolated: 0 })
            .collect();
        let w = vec![("school closed (days 10–20)".to_string(), 10.0, 20.0)];
        let svg = epidemic_chart(&curve, 1000, &w).svg().unwrap();
        for text in [
            "SEIR epidemic: 1000 agents, 60 days",
            "share of the population",
            "day",
            "new infections per day",
            "I infectious",
            "school closed (days 10–20)",
            "new infections (agents/day)",
        ] {
            assert!(svg.contains(text), "the chart lacks {text:?}");
        }
    }
}

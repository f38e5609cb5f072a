//! The study's figures, printed as a table and written as `scale.json`,
//! `scale.csv`, PNG charts and one self-contained `report.html` (inline
//! SVG, no external URL).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use parsim::plot::{Chart, Heatmap, Panel, Series};
use serde::Serialize;
use serde_json::Value;

use super::analysis::{self, Attribution, Point};
use super::model::{self, Network, TModel, Terms};

/// A held-out check: the model fitted without the largest p, predicting it.
#[derive(Clone, Debug, Serialize)]
pub struct HeldOut {
    /// The points used.
    pub fitted_on: Vec<usize>,
    /// The p predicted.
    pub p: usize,
    /// Predicted and measured wall time.
    pub predicted_s: f64,
    /// Measured.
    pub measured_s: f64,
    /// predicted / measured − 1.
    pub error: f64,
}

/// Jitter and synchronisation: each point run again with random delays
/// (exponential, mean μ) at every boundary on every rank.
#[derive(Clone, Debug, Serialize)]
pub struct Jitter {
    /// The injection.
    pub inject: String,
    /// μ, seconds: the mean delay as slept (the asked mean plus the timer's slack).
    pub mean_s: f64,
    /// Per p: (p, boundaries, the added wall time per boundary over μ —
    /// the measured amplification —, the expected maximum of p
    /// exponential delays over μ: the harmonic number H_p).
    pub rows: Vec<(usize, u64, f64, f64)>,
}

impl Jitter {
    /// Compares the jittered points with the plain ones.
    pub fn measure(inject: &str, plain: &[Point], jittered: &[Point]) -> Jitter {
        let asked = match parsim::ckpt::Injection::parse(inject).map(|i| i.fault) {
            Ok(parsim::ckpt::Fault::Jitter { mean }) => mean,
            _ => 0.0,
        };
        // The delays as slept (a sleep overshoots by the timer's slack):
        // the mean over every rank and boundary of the jittered runs.
        let (slept, n) = jittered.iter().fold((0.0, 0u64), |(s, n), b| (s + b.jitter_s, n + b.boundaries * b.p as u64));
        let mean_s = if n > 0 && slept > 0.0 { slept / n as f64 } else { asked };
        let rows = plain
            .iter()
            .zip(jittered)
            .map(|(a, b)| {
                let boundaries = b.boundaries.max(1);
                let added = (b.wall - a.wall) / boundaries as f64;
                let harmonic: f64 = (1..=b.p).map(|k| 1.0 / k as f64).sum();
                (b.p, boundaries, added / mean_s.max(1e-12), harmonic)
            })
            .collect();
        Jitter { inject: inject.to_string(), mean_s, rows }
    }
}

/// A whole study.
#[derive(Clone, Debug, Serialize)]
pub struct Study {
    /// The model's name and scenario.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// Backend of the runs.
    pub backend: String,
    /// Weak scaling: the key scaled with p.
    pub weak: Option<String>,
    /// The measured points, ascending p.
    pub points: Vec<Point>,
    /// Each point against the first.
    pub attribution: Vec<Attribution>,
    /// Amdahl's f fitted to the speedups (strong scaling).
    pub amdahl_f: f64,
    /// Gustafson's serial fraction fitted to the scaled speedups (weak).
    pub gustafson_f: f64,
    /// The T(p) model.
    pub model_fit: TModel,
    /// T(p) by term for p = 1 … 16384.
    pub predictions: Vec<Terms>,
    /// The first p (of the prediction range) where the predicted efficiency
    /// falls below 50 %, and the term that dominates there.
    pub half_efficiency: Option<(f64, String)>,
    /// The model fitted without the largest p, predicting it.
    pub held_out: Option<HeldOut>,
    /// One sentence per measured p naming its dominant barrier.
    pub diagnosis: Vec<String>,
    /// With `--inject jitter:…`: how synchronisation amplifies delays.
    pub jitter: Option<Jitter>,
    /// The run simulated with the DES engine (per-interface and per-port
    /// serialisation): (p, T) for p ≤ 1024.
    pub simulated: Vec<(f64, f64)>,
    /// Steps the simulation assumed.
    pub simulated_steps: u64,
}

fn advice(cause: &str, model: &str) -> &'static str {
    match (cause, model) {
        ("communication", "grid") => {
            "the surface-to-volume ratio of the decomposition; try `decomposition = \"blocks\"` or larger blocks per rank"
        }
        ("communication", "epidemic") => {
            "edges cut by the partition; try `abm.partitioner = \"multilevel\"` for fewer cut edges"
        }
        ("communication", _) => "messages between ranks; fewer, larger messages or a partition with a lower cut",
        ("load imbalance", _) => "ranks with more work than others; balance it (`[lb]`) or partition by measured load",
        ("setup", "epidemic") => {
            "building and partitioning the population; `abm.partitioner = \"block\"` or `\"dlp\"` cost least, and a longer run repays more"
        }
        ("setup", _) => "building, reading or partitioning the model before it runs; a longer run repays it, or parallelise it",
        ("serial", _) => "work one rank does while the others wait (setup, gathering output); parallelise or overlap it",
        ("waiting", _) => "synchronisation (barriers, collectives, jitter); synchronise less often or asynchronously",
        ("io", _) => "files; write less often or in the background",
        ("redundant work", _) => "the parts compute more than the whole (ghost work, repeated setup)",
        _ => "",
    }
}

impl Study {
    /// Analyses `points` (ascending p).
    pub fn new(points: Vec<Point>, weak: Option<String>, net: Network, first: &Value) -> Study {
        let base = points[0].clone();
        let is_weak = weak.is_some();
        let attribution: Vec<Attribution> = points.iter().map(|pt| analysis::attribute(&base, pt, is_weak)).collect();
        let speedups: Vec<(f64, f64)> =
            attribution.iter().map(|a| (a.p as f64 / base.p as f64, a.speedup / base.p as f64)).collect();
        let model_fit = TModel::fit(&points, is_weak, net.clone());
        let predictions: Vec<Terms> = model::prediction_range().into_iter().map(|p| model_fit.at(p)).collect();
        let p0 = base.p as f64;
        let half_efficiency = predictions
            .iter()
            .find(|t| t.p >= p0 && model_fit.efficiency(p0, t.p) < 0.5)
            .map(|t| (t.p, t.dominant().0.to_string()));
        let held_out = (points.len() >= 3).then(|| {
            let (fit, last) = points.split_at(points.len() - 1);
            let m = TModel::fit(fit, is_weak, net.clone());
            let predicted = m.at(last[0].p as f64).total;
            HeldOut {
                fitted_on: fit.iter().map(|p| p.p).collect(),
                p: last[0].p,
                predicted_s: predicted,
                measured_s: last[0].wall,
                error: predicted / last[0].wall - 1.0,
            }
        });
        let model = first["model"].as_str().unwrap_or("?").to_string();
        let backend = first["backend"].as_str().unwrap_or("").to_string();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let mut diagnosis: Vec<String> = attribution
            .iter()
            .skip(1)
            .map(|a| {
                let loss = a.loss.total();
                let (cause, x) = a.loss.ranked()[0];
                if loss <= 0.02 {
                    format!("at p = {}, efficiency {:.0} %: nothing to attribute", a.p, 100.0 * a.efficiency)
                } else {
                    format!(
                        "at p = {}, efficiency {:.0} %: {:.0} % of the loss is {cause}: {}",
                        a.p,
                        100.0 * a.efficiency,
                        100.0 * x / loss,
                        advice(cause, &model)
                    )
                }
            })
            .collect();
        if backend == "threads" {
            if let Some(p) = points.iter().map(|p| p.p).find(|&p| p > cores) {
                diagnosis.push(format!(
                    "from p = {p} the threads outnumber this machine's {cores} cores: ranks take turns on a core, \
                     which shows as redundant work and waiting (a study of more ranks needs more cores, or MPI on more machines)"
                ));
            }
        }
        Study {
            model,
            scenario: first["scenario"].as_str().unwrap_or("").to_string(),
            backend,
            weak,
            amdahl_f: analysis::fit_amdahl(&speedups),
            gustafson_f: analysis::fit_gustafson(&speedups),
            points,
            attribution,
            model_fit,
            predictions,
            half_efficiency,
            held_out,
            diagnosis,
            jitter: None,
            simulated: Vec::new(),
            simulated_steps: 0,
        }
    }

    /// Simulates the run with the DES engine at every p of the prediction
    /// range up to 1024 (and the measured ones).
    pub fn simulate(&mut self, steps: u64) {
        let mut ps: Vec<f64> = model::prediction_range().into_iter().filter(|&p| p <= 1024.0).collect();
        ps.extend(self.points.iter().map(|p| p.p as f64));
        ps.sort_by(f64::total_cmp);
        ps.dedup();
        self.simulated = ps
            .into_iter()
            .filter(|&p| p >= self.points[0].p as f64)
            .filter_map(|p| super::simulate::predict(&self.model_fit, p, steps).map(|t| (p, t)))
            .filter(|x| x.1.is_finite())
            .collect();
        self.simulated_steps = steps;
    }

    fn simulated_at(&self, p: usize) -> Option<f64> {
        self.simulated.iter().find(|x| x.0 == p as f64).map(|x| x.1)
    }

    fn kind(&self) -> String {
        match &self.weak {
            Some(k) => format!("weak scaling ({k} grows with p)"),
            None => "strong scaling".into(),
        }
    }

    /// One point's row of the table: p, wall, speedup, efficiency, the seven
    /// causes, Karp–Flatt and peak memory (`none` for what is unknown).
    fn cells(&self, a: &Attribution, pt: &Point, none: &str) -> Vec<String> {
        let pc = |x: f64| format!("{:.1}%", 100.0 * x);
        let l = &a.loss;
        vec![
            a.p.to_string(),
            format!("{:.4}", pt.wall),
            format!("{:.3}", a.speedup),
            pc(a.efficiency),
            pc(l.setup),
            pc(l.serial),
            pc(l.imbalance),
            pc(l.communication),
            pc(l.waiting),
            pc(l.io),
            pc(l.redundant),
            a.karp_flatt.map_or(none.into(), |e| format!("{e:.3}")),
            a.peak_rss.map_or(none.into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
        ]
    }

    /// The attribution table and the diagnosis, on stdout.
    pub fn print(&self) {
        println!("{}: {} of {} on the {} backend", self.model, self.kind(), self.scenario, self.backend);
        println!(
            "{:>5} {:>9} {:>8} {:>6} │ lost: {:>6} {:>7} {:>9} {:>7} {:>7} {:>5} {:>9} │ {:>6} {:>10}",
            "p",
            "wall s",
            "speedup",
            "eff",
            "setup",
            "serial",
            "imbalance",
            "comm",
            "waiting",
            "io",
            "redundant",
            "e(p)",
            "peak RSS"
        );
        for (a, pt) in self.attribution.iter().zip(&self.points) {
            let c = self.cells(a, pt, "-");
            println!(
                "{:>5} {:>9} {:>8} {:>6} │       {:>6} {:>7} {:>9} {:>7} {:>7} {:>5} {:>9} │ {:>6} {:>10}",
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
            );
        }
        for d in &self.diagnosis {
            println!("  {d}");
        }
        let n = &self.model_fit.net;
        println!(
            "network: α = {:.2} µs, β = {:.3} GB/s (relative residual {:.1} %), from {}",
            n.alpha * 1e6,
            if n.beta > 0.0 { 1e-9 / n.beta } else { f64::INFINITY },
            100.0 * n.residual,
            n.source
        );
        if self.weak.is_some() {
            println!("Gustafson: scaled-speedup serial fraction {:.4}", self.gustafson_f);
        } else {
            println!(
                "Amdahl: serial fraction f = {:.4} (speedup ≤ {:.1} for any p)",
                self.amdahl_f,
                1.0 / self.amdahl_f.max(1e-9)
            );
        }
        match &self.half_efficiency {
            Some((p, why)) => println!("T(p) model: efficiency falls below 50 % at p = {p}, where {why} dominates"),
            None => println!("T(p) model: efficiency stays above 50 % up to p = 16384"),
        }
        if !self.simulated.is_empty() {
            let at: Vec<String> = self
                .points
                .iter()
                .filter_map(|pt| {
                    self.simulated_at(pt.p)
                        .map(|t| format!("p = {}: {t:.4} s simulated, {:.4} s measured", pt.p, pt.wall))
                })
                .collect();
            let far: Vec<String> = [64usize, 1024]
                .iter()
                .filter_map(|&p| {
                    self.simulated_at(p)
                        .map(|t| format!("p = {p}: {t:.4} s ({:.4} s analytic)", self.model_fit.at(p as f64).total))
                })
                .collect();
            println!(
                "DES simulation of the run ({} steps; interfaces and switch ports serialise): {}; {}",
                self.simulated_steps,
                at.join(", "),
                far.join(", ")
            );
        }
        if let Some(j) = &self.jitter {
            println!(
                "jitter ({}): the wall time each boundary added, over the mean delay μ = {:.2} ms:",
                j.inject,
                j.mean_s * 1e3
            );
            for &(p, b, got, want) in &j.rows {
                println!(
                    "  p = {p:>4}: {got:.2} μ per boundary over {b} boundaries; the expected maximum of {p} delays is H_{p} = {want:.2} μ"
                );
            }
        }
        if let Some(h) = &self.held_out {
            println!(
                "held-out check: fitted on p = {:?}, the model predicts T({}) = {:.4} s against {:.4} s measured ({:+.1} %)",
                h.fitted_on,
                h.p,
                h.predicted_s,
                h.measured_s,
                100.0 * h.error
            );
        }
    }

    fn speedup_chart(&self) -> Chart {
        let p0 = self.points[0].p as f64;
        let measured: Vec<(f64, f64)> = self.attribution.iter().map(|a| (a.p as f64, a.speedup)).collect();
        let range: Vec<f64> = model::prediction_range().into_iter().filter(|&p| p >= p0).collect();
        let ideal: Vec<(f64, f64)> = range.iter().map(|&p| (p, p)).collect();
        let law = |p: f64| -> f64 {
            if self.weak.is_some() {
                p0 * analysis::gustafson(self.gustafson_f, p / p0)
            } else {
                p0 * analysis::amdahl(self.amdahl_f, p / p0)
            }
        };
        let law_name = if self.weak.is_some() {
            format!("Gustafson, serial fraction {:.3}", self.gustafson_f)
        } else {
            format!("Amdahl, f = {:.4}", self.amdahl_f)
        };
        let modelled: Vec<(f64, f64)> =
            range.iter().map(|&p| (p, self.model_fit.efficiency(p0, p) * p)).map(|(p, s)| (p, s.max(1e-9))).collect();
        Chart::new(&format!(
            "{}: speedup, {} — measured, ideal, Amdahl/Gustafson and the T(p) model",
            self.model,
            self.kind()
        ))
        .panel(
            Panel::new("speedup (log₂ scale)", "ranks p (log₂ scale)")
                .log2()
                .log2_y()
                .series(Series::line("ideal (speedup = p)", ideal))
                .series(Series::line(&law_name, range.iter().map(|&p| (p, law(p))).collect()))
                .series(Series::line("T(p) model (predicted beyond the measured p)", modelled))
                .series(Series::line(
                    "DES simulation (interfaces and switch ports serialise)",
                    self.simulated
                        .iter()
                        .map(|&(p, t)| (p, self.points[0].wall * if self.weak.is_some() { p } else { p0 } / t))
                        .collect(),
                ))
                .series(Series::points("measured", measured)),
        )
    }

    fn efficiency_chart(&self) -> Chart {
        let p0 = self.points[0].p as f64;
        let range: Vec<f64> = model::prediction_range().into_iter().filter(|&p| p >= p0).collect();
        let measured: Vec<(f64, f64)> = self.attribution.iter().map(|a| (a.p as f64, a.efficiency)).collect();
        let modelled: Vec<(f64, f64)> = range.iter().map(|&p| (p, self.model_fit.efficiency(p0, p))).collect();
        let max_measured = self.points.last().map_or(p0, |p| p.p as f64);
        Chart::new(&format!("{}: parallel efficiency, {}", self.model, self.kind())).panel(
            Panel::new("efficiency", "ranks p (log₂ scale)")
                .log2()
                .percent()
                .y_range(0.0, 1.1)
                .window("predicted (beyond the measured ranks)", max_measured, *range.last().unwrap_or(&max_measured))
                .series(Series::line("T(p) model", modelled))
                .series(Series::line(
                    "DES simulation",
                    self.simulated
                        .iter()
                        .map(|&(p, t)| {
                            let ideal =
                                if self.weak.is_some() { self.points[0].wall } else { self.points[0].wall * p0 / p };
                            (p, ideal / t)
                        })
                        .collect(),
                ))
                .series(Series::line("50 %", range.iter().map(|&p| (p, 0.5)).collect()))
                .series(Series::points("measured", measured)),
        )
    }

    fn loss_chart(&self) -> Chart {
        // Stacked: each bar is drawn from the total down, causes in a fixed order.
        let names = ["setup", "serial", "load imbalance", "communication", "waiting", "io", "redundant work"];
        let (lo, hi) = (self.points[0].p as f64, self.points.last().map_or(1.0, |p| p.p as f64));
        let mut panel = Panel::new("lost efficiency (share of p·T(p))", "ranks p (log₂ scale)")
            .percent()
            .log2()
            .x_range(lo / 1.6, hi * 1.6);
        for k in (0..names.len()).rev() {
            let pts: Vec<(f64, f64)> = self
                .attribution
                .iter()
                .map(|a| {
                    let l = &a.loss;
                    let parts = [l.setup, l.serial, l.imbalance, l.communication, l.waiting, l.io, l.redundant];
                    (a.p as f64, parts[..=k].iter().map(|x| x.max(0.0)).sum())
                })
                .collect();
            panel = panel.series(Series::bars(names[k], pts));
        }
        Chart::new(&format!("{}: where the efficiency went, by cause ({})", self.model, self.kind())).panel(panel)
    }

    fn phases_map(&self) -> Heatmap {
        let pt = self.points.last().expect("a point");
        let names = ["compute", "comm", "wait", "io", "serial"];
        let mut values = Vec::with_capacity(pt.ranks.len() * names.len());
        for r in &pt.ranks {
            values.extend([r.compute, r.comm, r.wait, r.io, r.serial]);
        }
        let hi = values.iter().copied().fold(0.0, f64::max).max(1e-12);
        let slice =
            parsim_grid::Slice { width: names.len(), height: pt.ranks.len(), values, stride: 1, range: (0.0, hi) };
        Heatmap::new(
            &format!("{}: seconds per rank and phase at p = {} (columns: {})", self.model, pt.p, names.join(", ")),
            slice,
            "seconds",
        )
        .axes("phase (compute, comm, wait, io, serial)", "rank")
    }

    fn network_chart(&self) -> Chart {
        let n = &self.model_fit.net;
        let sizes: Vec<f64> = (0..25).map(|k| f64::from(1u32 << k)).collect();
        Chart::new(&format!(
            "the network's α–β fit: α = {:.2} µs, {:.2} GB/s (residual {:.1} %)",
            n.alpha * 1e6,
            if n.beta > 0.0 { 1e-9 / n.beta } else { 0.0 },
            100.0 * n.residual
        ))
        .panel(
            Panel::new("one-way time (µs)", "message size (bytes, log₂ scale)").log2().series(Series::line(
                "α + β·bytes",
                sizes.iter().map(|&b| (b, 1e6 * (n.alpha + n.beta * b))).collect(),
            )),
        )
    }

    /// Writes `scale.json`, `scale.csv`, the PNGs and `report.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self)?;
        parsim::write_atomic(&dir.join("scale.json"), json.as_bytes())?;
        let mut csv = String::from(
            "p,wall_s,speedup,efficiency,lost_setup,lost_serial,lost_imbalance,lost_communication,lost_waiting,lost_io,lost_redundant,karp_flatt,peak_rss_bytes,model_s\n",
        );
        for (a, pt) in self.attribution.iter().zip(&self.points) {
            let l = &a.loss;
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                a.p,
                pt.wall,
                a.speedup,
                a.efficiency,
                l.setup,
                l.serial,
                l.imbalance,
                l.communication,
                l.waiting,
                l.io,
                l.redundant,
                a.karp_flatt.map_or(String::new(), |e| e.to_string()),
                a.peak_rss.map_or(String::new(), |b| b.to_string()),
                self.model_fit.at(a.p as f64).total
            );
        }
        parsim::write_atomic(&dir.join("scale.csv"), csv.as_bytes())?;
        let charts = [
            ("speedup", self.speedup_chart()),
            ("efficiency", self.efficiency_chart()),
            ("loss", self.loss_chart()),
            ("network", self.network_chart()),
        ];
        let mut svgs = Vec::new();
        for (name, c) in &charts {
            c.save(&dir.join(format!("{name}.png")))?;
            svgs.push(c.svg()?);
        }
        let phases = self.phases_map();
        phases.save(&dir.join("phases.png"))?;
        let phases_svg = phases.svg()?;
        let html = self.html(&svgs, &phases_svg);
        parsim::write_atomic(&dir.join("report.html"), html.as_bytes())?;
        println!(
            "report → {} (and scale.json, scale.csv, speedup.png, efficiency.png, loss.png, phases.png, network.png)",
            dir.join("report.html").display()
        );
        Ok(())
    }

    fn html(&self, svgs: &[String], phases: &str) -> String {
        let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut rows = String::new();
        for (a, pt) in self.attribution.iter().zip(&self.points) {
            let mut c = self.cells(a, pt, "–");
            c.push(format!("{:.4}", self.model_fit.at(a.p as f64).total));
            rows.push_str("<tr>");
            for x in c {
                let _ = write!(rows, "<td>{x}</td>");
            }
            rows.push_str("</tr>");
        }
        let diagnosis: String = self.diagnosis.iter().map(|d| format!("<li>{}</li>", esc(d))).collect();
        let half = match &self.half_efficiency {
            Some((p, why)) => format!("The T(p) model predicts the efficiency falls below 50&nbsp;% at <b>p = {p}</b>, where <b>{}</b> dominates.", esc(why)),
            None => "The T(p) model keeps the efficiency above 50&nbsp;% up to p = 16384.".into(),
        };
        let held = self.held_out.as_ref().map_or(String::new(), |h| {
            format!(
                "<p>Held-out check: fitted on p = {:?}, the model predicts T({}) = {:.4}&nbsp;s against {:.4}&nbsp;s measured ({:+.1}&nbsp;%).</p>",
                h.fitted_on, h.p, h.predicted_s, h.measured_s, 100.0 * h.error
            )
        });
        let jitter = self.jitter.as_ref().map_or(String::new(), |j| {
            let rows: String = j
                .rows
                .iter()
                .map(|&(p, b, got, want)| format!("<tr><td>{p}</td><td>{b}</td><td>{got:.2}</td><td>{want:.2}</td></tr>"))
                .collect();
            format!(
                "<h2>Jitter and synchronisation</h2><p>Every point was run again with <code>--inject {}</code>: every rank sleeps a random delay (exponential, mean μ = {:.2}&nbsp;ms) at every boundary. A step that synchronises waits for the slowest rank, so it costs the maximum of p delays, whose expectation is μ·H<sub>p</sub> (the harmonic number): the more ranks, the more one late rank holds everyone up. A model that synchronises only with its neighbours (a halo exchange without a global reduction every step) lets delays on different ranks overlap and amplifies them less.</p><table><tr><th>p</th><th>boundaries</th><th>measured wall time added per boundary (× μ)</th><th>expected max of p delays (× μ)</th></tr>{rows}</table>",
                esc(&j.inject),
                j.mean_s * 1e3
            )
        });
        let sim = if self.simulated.is_empty() {
            String::new()
        } else {
            let rows: Vec<String> = self
                .points
                .iter()
                .filter_map(|pt| {
                    self.simulated_at(pt.p).map(|t| {
                        format!(
                            "p = {}: {t:.4}&nbsp;s simulated against {:.4}&nbsp;s measured ({:+.1}&nbsp;%)",
                            pt.p,
                            pt.wall,
                            100.0 * (t / pt.wall - 1.0)
                        )
                    })
                })
                .collect();
            format!(
                "The run was also simulated with parsim's own DES engine ({} steps): each rank computes its step, sends its messages through its interface one at a time, the switch forwards each to its destination's port one at a time, and the step ends in a barrier — the analytic sum without the queueing. {}.",
                self.simulated_steps,
                rows.join("; ")
            )
        };
        let m = &self.model_fit;
        let fit = format!(
            "T(p) = {:.4}&nbsp;s serial + {:.4}&nbsp;s·p<sup>{:.3}</sup> compute{} × (1 + {:.3}·log₂p) + α·{:.1}·p<sup>{:.2}</sup> messages + β·{:.0}·p<sup>{:.2}</sup> bytes per rank + {:.4}&nbsp;s·log₂p synchronisation + {:.4}&nbsp;s io and other",
            m.serial,
            m.compute.a,
            m.compute.gamma,
            if m.weak { " per rank" } else { "/p" },
            m.imbalance,
            m.messages.a,
            m.messages.gamma,
            m.bytes.a,
            m.bytes.gamma,
            m.sync,
            m.io + m.other
        );
        let law = if self.weak.is_some() {
            format!("Gustafson's scaled-speedup serial fraction: {:.4}.", self.gustafson_f)
        } else {
            format!(
                "Amdahl's serial fraction fitted to the speedups: f = {:.4} (speedup ≤ {:.1} for any p).",
                self.amdahl_f,
                1.0 / self.amdahl_f.max(1e-9)
            )
        };
        format!(
            r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>parsim scale: {model}</title>
<style>body{{font-family:sans-serif;max-width:1060px;margin:2em auto;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}th{{background:#f3f3f3}}figure{{margin:1.5em 0}}svg{{max-width:100%;height:auto}}</style></head>
<body>
<h1>parsim scale: {model}</h1>
<p>{kind} of <code>{scenario}</code> on the {backend} backend, {n} rank counts, the median of each point's repetitions.</p>
<h2>Diagnosis</h2><ul>{diagnosis}</ul>
<p>{half}</p>{held}
<p>{law}</p>
<h2>Speedup and efficiency</h2>
<figure>{s0}</figure><figure>{s1}</figure>
<h2>Where the efficiency went</h2>
<p>The lost efficiency 1 − E(p) split by cause, as shares of the run's rank-time p·T(p): setup (building, reading and partitioning the model, for models that report it; taken out of the other phases), serial (every rank waits while one works), load imbalance (max − mean compute), communication, waiting beyond the imbalance, io, and redundant work (total compute beyond the reference's). They sum to the measured loss.</p>
<figure>{s2}</figure>
<h2>Per-rank phases at the largest p</h2><figure>{phases}</figure>
{jitter}
<h2>The model</h2><p>{fit}</p>
<p>{sim}</p><figure>{s3}</figure>
<h2>The numbers</h2>
<table><tr><th>p</th><th>wall s</th><th>speedup</th><th>efficiency</th><th>lost: setup</th><th>serial</th><th>imbalance</th><th>communication</th><th>waiting</th><th>io</th><th>redundant</th><th>Karp–Flatt e(p)</th><th>peak RSS per rank</th><th>T(p) model s</th></tr>
{rows}</table>
<p>Also in this directory: scale.json, scale.csv and the charts as PNG.</p>
</body></html>
"#,
            model = esc(&self.model),
            kind = esc(&self.kind()),
            scenario = esc(&self.scenario),
            backend = esc(&self.backend),
            n = self.points.len(),
            s0 = svgs[0],
            s1 = svgs[1],
            s2 = svgs[2],
            s3 = svgs[3],
        )
    }
}

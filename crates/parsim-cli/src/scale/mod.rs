//! `parsim scale`: strong and weak scaling studies that say where the
//! efficiency went. Runs a scenario at each rank count (or reads finished
//! runs' `summary.json`), attributes the lost efficiency to serial work,
//! imbalance, communication, waiting, I/O and redundant work, fits
//! Amdahl, Gustafson and a T(p) model with the network's α and β, predicts
//! beyond the measured ranks, and writes `report.html`, PNGs, `scale.json`
//! and `scale.csv`.

pub mod analysis;
pub mod model;
mod report;
pub mod simulate;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use analysis::{Phases, Point};
use model::Network;
use parsim::{Backend, InputError};

/// What `parsim scale` was asked.
#[derive(Clone, Debug)]
pub struct Args {
    /// The scenario (absent with `--from`).
    pub scenario: Option<PathBuf>,
    /// Rank counts, increasing.
    pub ranks: Vec<usize>,
    /// Weak scaling: the key scaled with p.
    pub weak: Option<String>,
    /// threads or mpi.
    pub backend: Backend,
    /// Repetitions per point (the median wall time is used).
    pub reps: usize,
    /// Output directory.
    pub out: PathBuf,
    /// Finished runs to analyse instead of running.
    pub from: Vec<PathBuf>,
    /// `--set` overrides passed to every run.
    pub sets: Vec<String>,
    /// A `parsim bench comm --fit` report with α and β (else measured now).
    pub network: Option<PathBuf>,
    /// `jitter:mean=DURATION`: every point is also run with random delays at
    /// every boundary, and the report measures how synchronisation
    /// amplifies them.
    pub jitter: Option<String>,
}

/// Parses `1,2,4,8`: increasing, distinct, each at least 1.
pub fn parse_ranks(s: &str) -> Result<Vec<usize>, InputError> {
    let bad = |m: String| InputError::flag(&format!("--ranks {s}"), m);
    if s.trim().is_empty() {
        return Err(bad("expected rank counts, e.g. 1,2,4".into()));
    }
    let v = s
        .split(',')
        .map(|x| x.trim().parse::<usize>().map_err(|_| bad(format!("\"{}\" is not a rank count", x.trim()))))
        .collect::<Result<Vec<_>, _>>()?;
    if v.contains(&0) {
        return Err(bad("a run needs at least 1 rank".into()));
    }
    if v.windows(2).any(|w| w[1] <= w[0]) {
        return Err(bad("expected increasing rank counts without repeats, e.g. 1,2,4,8".into()));
    }
    Ok(v)
}

/// The value of `table.key` in a resolved scenario.
fn lookup<'a>(resolved: &'a Value, key: &str) -> Option<&'a Value> {
    let (t, k) = key.split_once('.')?;
    resolved.get(t)?.get(k)
}

/// The weak-scaling value of `key` at p (base at p₀): an integer scaled by
/// p/p₀, or the first (slowest) axis of an integer array.
fn weak_value(key: &str, base: &Value, p0: usize, p: usize) -> Result<String, InputError> {
    let scale = |n: i64| -> i64 { (n as f64 * p as f64 / p0 as f64).round() as i64 };
    match base {
        Value::Number(n) if n.is_i64() => Ok(format!("{key}={}", scale(n.as_i64().unwrap_or(0)))),
        Value::Array(a) if !a.is_empty() && a.iter().all(|x| x.is_i64()) => {
            let mut v: Vec<i64> = a.iter().filter_map(Value::as_i64).collect();
            v[0] = scale(v[0]);
            Ok(format!("{key}=[{}]", v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")))
        }
        other => Err(InputError::flag(
            &format!("--weak {key}"),
            format!("{other} cannot be scaled with p: expected an integer (abm.agents, phold.lps) or a list of integers (grid.size)"),
        )),
    }
}

/// The steps of a run (its synchronising boundaries), from the scenario's
/// own key; 100 for a model without one.
fn steps_of(s: &Value) -> u64 {
    let r = &s["resolved_scenario"];
    for key in ["grid.steps", "abm.days", "space.steps", "front.steps", "ring.rounds"] {
        if let Some(n) = lookup(r, key).and_then(Value::as_u64) {
            return n;
        }
    }
    100
}

/// The per-rank phases, traffic and memory of one run's summary.
fn point_of(s: &Value, path: &Path) -> Result<Point> {
    let p = s["ranks"].as_u64().with_context(|| format!("{}: no \"ranks\"", path.display()))? as usize;
    let wall = s["wall_s"].as_f64().with_context(|| format!("{}: no \"wall_s\"", path.display()))?;
    let col = |k: &str| -> Vec<f64> {
        s["phases_s"][k].as_array().map(|v| v.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    let (c, m, w, io, se) = (col("compute"), col("comm"), col("wait"), col("io"), col("serial"));
    // The model's setup, when it reports it, is its own cause: taken out of every phase.
    let setup_col = |k: &str| -> Vec<f64> {
        s["setup_phases_s"][k].as_array().map(|v| v.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    let (sc, sm, sw, sio, sse) =
        (setup_col("compute"), setup_col("comm"), setup_col("wait"), setup_col("io"), setup_col("serial"));
    let at = |v: &[f64], r: usize| v.get(r).copied().unwrap_or(0.0);
    let less = |v: &[f64], u: &[f64], r: usize| (at(v, r) - at(u, r)).max(0.0);
    let ranks = (0..p)
        .map(|r| Phases {
            compute: less(&c, &sc, r),
            comm: less(&m, &sm, r),
            wait: less(&w, &sw, r),
            io: less(&io, &sio, r),
            serial: less(&se, &sse, r),
            setup: at(&sc, r) + at(&sm, r) + at(&sw, r) + at(&sio, r) + at(&sse, r),
        })
        .collect();
    let total =
        |k: &str| -> u64 { s["counters"][k].as_array().map_or(0, |v| v.iter().filter_map(Value::as_u64).sum()) };
    let peak_rss =
        s["peak_rss_bytes"].as_array().map(|v| v.iter().filter_map(Value::as_u64).collect()).unwrap_or_default();
    Ok(Point {
        p,
        wall,
        ranks,
        messages: total("messages_sent"),
        bytes: total("bytes_sent"),
        peak_rss,
        walls: vec![wall],
        boundaries: s["checkpoint"]["boundaries"].as_u64().unwrap_or(0),
        jitter_s: s["checkpoint"]["jitter_s"].as_array().map_or(0.0, |v| v.iter().filter_map(Value::as_f64).sum()),
    })
}

fn read_summary(path: &Path) -> Result<Value> {
    let file = if path.is_dir() { path.join("summary.json") } else { path.to_path_buf() };
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a parsim summary", file.display()))
}

/// The resolved scenario without what may differ between the runs of one
/// study (ranks, backend, output, and the weak key).
fn identity(s: &Value, weak: Option<&str>) -> Value {
    let mut v = s["resolved_scenario"].clone();
    if let Some(run) = v.get_mut("run").and_then(Value::as_object_mut) {
        for k in ["ranks", "backend", "out", "threads_per_rank"] {
            run.remove(k);
        }
    }
    if let Some((t, k)) = weak.and_then(|w| w.split_once('.')) {
        if let Some(tb) = v.get_mut(t).and_then(Value::as_object_mut) {
            tb.remove(k);
        }
    }
    json_sorted(&v)
}

fn json_sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), json_sorted(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(json_sorted).collect()),
        other => other.clone(),
    }
}

/// One study's runs grouped by rank count: the median-wall run's point
/// with every repetition's wall time, ascending p.
fn group(summaries: Vec<(PathBuf, Value)>, weak: Option<&str>) -> Result<(Vec<Point>, Value, Vec<String>)> {
    let first = summaries.first().map(|s| s.1.clone()).context("no runs")?;
    let want = identity(&first, weak);
    let mut by_p: std::collections::BTreeMap<usize, Vec<(Point, String)>> = Default::default();
    for (path, s) in &summaries {
        if identity(s, weak) != want {
            return Err(InputError::flag(
                "--from",
                format!(
                    "{} is a run of another scenario than {} (the resolved scenarios differ beyond ranks, backend and output{})",
                    path.display(),
                    summaries[0].0.display(),
                    weak.map_or(String::new(), |w| format!(" and {w}"))
                ),
            )
            .into());
        }
        let pt = point_of(s, path)?;
        by_p.entry(pt.p).or_default().push((pt, s["digest"].as_str().unwrap_or("").to_string()));
    }
    let mut digests = Vec::new();
    let points = by_p
        .into_values()
        .map(|mut runs| {
            runs.sort_by(|a, b| a.0.wall.total_cmp(&b.0.wall));
            let walls: Vec<f64> = runs.iter().map(|r| r.0.wall).collect();
            let (mut pt, d) = runs.swap_remove(runs.len() / 2);
            pt.walls = walls;
            digests.push(d);
            pt
        })
        .collect();
    Ok((points, first, digests))
}

fn exe() -> Result<PathBuf> {
    std::env::current_exe().context("finding the parsim executable")
}

/// The network's α and β: from `--network`, or measured now with
/// `parsim bench comm` on the study's backend.
fn network(args: &Args) -> Result<Network> {
    let path = match &args.network {
        Some(p) => p.clone(),
        None => {
            let p = args.out.join("network.json");
            let mut cmd = match args.backend {
                Backend::Threads => Command::new(exe()?),
                Backend::Mpi => {
                    let mut c = Command::new("mpirun");
                    c.args(["-n", "2"]).arg(exe()?);
                    c
                }
            };
            cmd.args(["bench", "comm", "--quick", "--backend", args.backend.name(), "--out"]).arg(&p);
            let o = cmd.output().context("running parsim bench comm for α and β")?;
            if !o.status.success() {
                bail!("parsim bench comm failed: {}", String::from_utf8_lossy(&o.stderr));
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let b: crate::bench::comm::CommBench =
        serde_json::from_str(&text).with_context(|| format!("{}: not a parsim bench comm report", path.display()))?;
    let pts: Vec<(f64, f64)> = b.pingpong.iter().map(|r| (r.bytes as f64, r.copy_one_way_us * 1e-6)).collect();
    let (alpha, beta, residual) = model::fit_alpha_beta(&pts);
    Ok(Network { alpha, beta, residual, source: format!("{} ({} backend)", path.display(), b.backend) })
}

/// Runs the study (or reads it) and writes the report.
pub fn run(args: Args) -> Result<()> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    if let Some(j) = &args.jitter {
        match parsim::ckpt::Injection::parse(j) {
            Ok(i) if matches!(i.fault, parsim::ckpt::Fault::Jitter { .. }) => {}
            Ok(_) => {
                return Err(
                    InputError::flag(&format!("--inject {j}"), "scale injects jitter only (jitter:mean=2ms)").into()
                )
            }
            Err(e) => return Err(InputError::flag("--inject", e.to_string()).into()),
        }
        if !args.from.is_empty() {
            return Err(InputError::flag("--inject", "jitter is measured on runs scale makes, not with --from").into());
        }
    }
    let summaries = if args.from.is_empty() {
        run_points(&args, None)?
    } else {
        args.from.iter().map(|p| Ok((p.clone(), read_summary(p)?))).collect::<Result<Vec<_>>>()?
    };
    let (points, first, digests) = group(summaries, args.weak.as_deref())?;
    if args.weak.is_none() && digests.iter().any(|d| d != &digests[0]) {
        tracing::warn!(
            "the runs' digests differ between rank counts: {digests:?} (a strong-scaling study runs one model)"
        );
    }
    let net = network(&args)?;
    let steps = points.iter().map(|p| p.boundaries).max().filter(|&b| b > 0).unwrap_or_else(|| steps_of(&first));
    let mut study = report::Study::new(points, args.weak.clone(), net, &first);
    study.simulate(steps);
    if let Some(j) = &args.jitter {
        let (jittered, _, _) = group(run_points(&args, Some(j))?, args.weak.as_deref())?;
        study.jitter = Some(report::Jitter::measure(j, &study.points, &jittered));
    }
    study.print();
    study.write(&args.out)?;
    Ok(())
}

/// Runs the scenario at every rank count, `reps` times each (with
/// `jitter`: with that injection, in directories named `…-jitter`).
fn run_points(args: &Args, jitter: Option<&str>) -> Result<Vec<(PathBuf, Value)>> {
    let scenario = args.scenario.as_ref().context("a scenario (or --from DIR …)")?;
    let mut sc = parsim::Scenario::load(scenario)?;
    for s in &args.sets {
        sc.set(s)?;
    }
    let resolved = parsim::toml_to_json(&toml::Value::Table(sc.resolved().clone()));
    let weak = match &args.weak {
        None => None,
        Some(k) => {
            let base = lookup(&resolved, k).ok_or_else(|| {
                InputError::flag(&format!("--weak {k}"), format!("{} has no key {k}", scenario.display()))
            })?;
            Some((k.clone(), base.clone()))
        }
    };
    let p0 = args.ranks[0];
    let mut out = Vec::new();
    let total = args.ranks.len() * args.reps;
    let mut done = 0;
    for &p in &args.ranks {
        for rep in 0..args.reps {
            let tag = if jitter.is_some() { "-jitter" } else { "" };
            let dir = args.out.join("runs").join(format!("p{p}-r{rep}{tag}"));
            let mut cmd = match args.backend {
                Backend::Threads => {
                    let mut c = Command::new(exe()?);
                    c.args(["run"]).arg(scenario).args(["--ranks", &p.to_string()]);
                    c
                }
                Backend::Mpi => {
                    let mut c = Command::new("mpirun");
                    c.args(["-n", &p.to_string()]).arg(exe()?).arg("run").arg(scenario).args(["--backend", "mpi"]);
                    c
                }
            };
            cmd.args(["-q", "--out"]).arg(&dir);
            for s in &args.sets {
                cmd.args(["--set", s]);
            }
            if let Some((k, base)) = &weak {
                cmd.args(["--set", &weak_value(k, base, p0, p)?]);
            }
            if let Some(j) = jitter {
                cmd.args(["--inject", j]);
            }
            done += 1;
            eprintln!("scale: run {done}/{total}{tag}: {p} rank(s), repetition {}", rep + 1);
            let o = cmd.output().with_context(|| format!("running {cmd:?}"))?;
            if !o.status.success() {
                bail!("the run at {p} ranks failed ({}):\n{}", o.status, String::from_utf8_lossy(&o.stderr));
            }
            out.push((dir.clone(), read_summary(&dir)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_are_checked() {
        assert_eq!(parse_ranks("1,2,4").unwrap(), vec![1, 2, 4]);
        for bad in ["", "0,1", "2,1", "1,2,2", "1,x"] {
            assert!(parse_ranks(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn weak_values_scale_integers_and_the_first_axis() {
        let v = serde_json::json!(1000);
        assert_eq!(weak_value("abm.agents", &v, 1, 4).unwrap(), "abm.agents=4000");
        let v = serde_json::json!([512, 256]);
        assert_eq!(weak_value("grid.size", &v, 1, 2).unwrap(), "grid.size=[1024,256]");
        assert!(weak_value("abm.beta", &serde_json::json!(0.5), 1, 2).is_err());
    }
}

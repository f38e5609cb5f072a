//! Reading a `[sweep]` table: the swept parameters (lists, ranges, Latin
//! hypercubes), the replications or stopping rule, and the options; every
//! key named, every count bounded before anything is allocated.

use parsim_sweep::{spec, Replications, SweepSpec};
use serde_json::{json, Value as Json};
use toml::Value;

use crate::run::read_run_table;
use crate::scenario::{InputError, Scenario, Section};

pub(super) fn to_json(v: &Value) -> Json {
    match v {
        Value::Integer(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Boolean(b) => json!(b),
        Value::String(s) => json!(s),
        other => json!(other.to_string()),
    }
}

pub(super) fn to_toml(v: &Json) -> Value {
    match v {
        Json::Number(n) if n.is_i64() => Value::Integer(n.as_i64().expect("i64")),
        Json::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        Json::Bool(b) => Value::Boolean(*b),
        Json::String(s) => Value::String(s.clone()),
        other => Value::String(other.to_string()),
    }
}

pub(super) fn number(t: &Section<'_>, key: &str, tb: &toml::Table, name: &str) -> Result<Option<f64>, InputError> {
    match tb.get(name) {
        None => Ok(None),
        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(Value::Float(f)) => Ok(Some(*f)),
        Some(o) => Err(t.error(&format!("{key}.{name}"), format!("expected a number, found {o}"))),
    }
}

/// The most values one parameter may take, and the most points and tasks a
/// sweep may have: each task keeps a record in memory and in `tasks.jsonl`,
/// so a sweep beyond these is refused before anything is allocated.
pub(super) const MAX_VALUES: usize = 1_000_000;
pub(super) const MAX_POINTS: u64 = 10_000_000;
pub(super) const MAX_TASKS: u64 = 100_000_000;

/// The values of one swept parameter: a list, or { start, stop, step }, or { start, stop, num, log }.
pub(super) fn values(t: &Section<'_>, key: &str, v: &Value) -> Result<Vec<Json>, InputError> {
    let k = format!("parameters.{key}");
    let out: Vec<Json> = match v {
        Value::Array(a) => a.iter().map(to_json).collect(),
        Value::Table(tb) => {
            for name in tb.keys() {
                if !["start", "stop", "step", "num", "log"].contains(&name.as_str()) {
                    return Err(t.error(&k, format!("unknown key {name}; a range takes start, stop, step or num, log")));
                }
            }
            let start = number(t, &k, tb, "start")?.ok_or_else(|| t.error(&k, "a range needs start"))?;
            let stop = number(t, &k, tb, "stop")?.ok_or_else(|| t.error(&k, "a range needs stop"))?;
            let ints = matches!(tb.get("start"), Some(Value::Integer(_)))
                && matches!(tb.get("stop"), Some(Value::Integer(_)))
                && !matches!(tb.get("step"), Some(Value::Float(_)));
            if let Some(num) = number(t, &k, tb, "num")? {
                if num < 1.0 || num.fract() != 0.0 {
                    return Err(t.error(&k, format!("num must be a whole number ≥ 1, found {num}")));
                }
                let log = match tb.get("log") {
                    None => false,
                    Some(Value::Boolean(b)) => *b,
                    Some(o) => return Err(t.error(&format!("{k}.log"), format!("expected true or false, found {o}"))),
                };
                if log && (start <= 0.0 || stop <= 0.0) {
                    return Err(t.error(&k, "a log-spaced range needs start > 0 and stop > 0"));
                }
                if num > MAX_VALUES as f64 {
                    return Err(t.error(&k, format!("num = {num}: at most {MAX_VALUES} values per parameter")));
                }
                let n = num as usize;
                (0..n)
                    .map(|i| {
                        let f = if n == 1 { 0.0 } else { i as f64 / (n - 1) as f64 };
                        json!(if log {
                            (start.ln() + f * (stop.ln() - start.ln())).exp()
                        } else {
                            start + f * (stop - start)
                        })
                    })
                    .collect()
            } else {
                let step = number(t, &k, tb, "step")?.ok_or_else(|| t.error(&k, "a range needs step (or num)"))?;
                if step == 0.0 || (stop - start) * step < 0.0 {
                    return Err(t.error(&k, format!("step {step} never goes from {start} to {stop}")));
                }
                let n = ((stop - start) / step + 1e-9).floor() + 1.0;
                if n.is_nan() || n > MAX_VALUES as f64 {
                    return Err(t.error(
                        &k,
                        format!(
                            "{n} values from {start} to {stop} in steps of {step}: at most {MAX_VALUES} per parameter"
                        ),
                    ));
                }
                let n = n as usize;
                (0..n)
                    .map(|i| {
                        let x = start + i as f64 * step;
                        if ints {
                            json!(x.round() as i64)
                        } else {
                            json!(x)
                        }
                    })
                    .collect()
            }
        }
        other => return Err(t.error(&k, format!("expected a list or a range table, found {other}"))),
    };
    if out.is_empty() {
        return Err(t.error(&k, "an empty list of values"));
    }
    Ok(out)
}

/// Where a task runs: on its worker's thread, or in a child process the
/// worker supervises (which may die without taking the sweep with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// In the worker's thread (the default: no start-up cost).
    Thread,
    /// In a supervised child process.
    Process,
}

impl Isolation {
    pub(super) fn parse(s: &str) -> Option<Isolation> {
        match s {
            "thread" => Some(Isolation::Thread),
            "process" => Some(Isolation::Process),
            _ => None,
        }
    }
}

/// What `[sweep]` says besides the spec.
pub(super) struct SweepSetup {
    pub(super) spec: SweepSpec,
    pub(super) workers: Option<usize>,
    pub(super) metrics: Option<Vec<String>>,
    pub(super) group: usize,
    pub(super) ranks_per_task: usize,
    pub(super) isolate: Isolation,
    pub(super) timeout: Option<std::time::Duration>,
    pub(super) allow_failures: bool,
}

pub(super) fn task_list(t: &mut Section<'_>, key: &str) -> Result<Vec<(usize, u64, u32)>, InputError> {
    match t.raw(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|f| {
                let x: Option<Vec<i64>> = f.as_array().map(|v| v.iter().filter_map(Value::as_integer).collect());
                match x.as_deref() {
                    Some(&[p, r, k]) if p >= 0 && r >= 0 && k >= 0 => Ok((p as usize, r as u64, k as u32)),
                    _ => Err(t.error(key, "expected [[point, replication, failing attempts], …]")),
                }
            })
            .collect(),
        Some(_) => Err(t.error(key, "expected [[point, replication, failing attempts], …]")),
    }
}

/// Reads `[sweep]` into a spec (its seed from `[run] seed`) and the rest of its keys.
pub(super) fn read_sweep(sc: &mut Scenario, seed: u64, model_table: &str) -> Result<SweepSetup, InputError> {
    let mut t = sc.section("sweep", true)?;
    let allow_failures = t.boolean("allow_failures", false)?;
    let metrics = match t.raw("metrics") {
        None => None,
        Some(Value::Array(a)) if !a.is_empty() => Some(
            a.iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| t.error("metrics", "expected metric names")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(t.error("metrics", "expected a non-empty list of metric names")),
    };
    let confidence = t.float("confidence", 0.95, 0.0..=1.0)?;
    if confidence <= 0.0 || confidence >= 1.0 {
        return Err(t.error("confidence", format!("expected a level strictly between 0 and 1, found {confidence}")));
    }
    let crn = t.boolean("common_random_numbers", true)?;
    let retries = t.int("retries", Some(2), 0..=1000)? as u32;
    let workers = t.int("workers", Some(0), 0..=4096)? as usize;
    let group = t.int("group", Some(0), 0..=1_000_000)? as usize;
    let ranks_per_task = t.int("ranks_per_task", Some(1), 1..=1024)? as usize;
    let params = match t.raw("parameters") {
        Some(Value::Table(tb)) => tb,
        Some(o) => return Err(t.error("parameters", format!("expected a table of scenario keys, found {o}"))),
        None => return Err(t.error("parameters", "missing; e.g. parameters = { \"abm.beta\" = [0.03, 0.05] }")),
    };
    if params.is_empty() {
        return Err(t.error("parameters", "no parameters to sweep"));
    }
    // Every key names its table: a bare key is the model's own table's
    // (`beta` is `abm.beta` for the epidemic), written out in full so that
    // results and resumes name it; a key with more than one dot names nothing.
    let mut named = toml::Table::new();
    for (k, v) in params {
        let full = match k.split('.').count() {
            1 if !k.is_empty() => format!("{model_table}.{k}"),
            2 if !k.starts_with('.') && !k.ends_with('.') => k.clone(),
            _ => return Err(t.error(&format!("parameters.{k}"), "a swept key is TABLE.KEY, e.g. \"abm.beta\"")),
        };
        if named.insert(full.clone(), v).is_some() {
            return Err(t.error(&format!("parameters.{k}"), format!("{full} is swept twice")));
        }
    }
    let params = named;
    let points = match t.raw("latin_hypercube") {
        None => {
            let mut lists = Vec::new();
            let mut count = 1u64;
            for (k, v) in &params {
                let vs = values(&t, k, v)?;
                count = count.saturating_mul(vs.len() as u64);
                lists.push((k.clone(), vs));
            }
            if count > MAX_POINTS {
                return Err(t.error("parameters", format!("{count} points in all: at most {MAX_POINTS}")));
            }
            spec::grid(&lists)
        }
        Some(v) => {
            let n = v
                .get("points")
                .and_then(Value::as_integer)
                .filter(|&n| n >= 1)
                .ok_or_else(|| t.error("latin_hypercube", "expected { points = N } with N ≥ 1"))?;
            if n as u64 > MAX_POINTS {
                return Err(t.error("latin_hypercube", format!("points = {n}: at most {MAX_POINTS}")));
            }
            let mut ranges = Vec::new();
            for (k, v) in &params {
                let r = v.as_array().filter(|a| a.len() == 2).and_then(|a| {
                    let f = |x: &Value| x.as_float().or(x.as_integer().map(|i| i as f64));
                    Some((f(&a[0])?, f(&a[1])?))
                });
                let (lo, hi) =
                    r.ok_or_else(|| t.error(&format!("parameters.{k}"), "a Latin hypercube takes [low, high] ranges"))?;
                ranges.push((k.clone(), lo, hi));
            }
            spec::latin_hypercube(&ranges, n as usize, seed)
        }
    };
    let replications = match (t.raw("replications"), t.raw("until")) {
        (Some(_), Some(_)) => return Err(t.error("until", "give replications or until, not both")),
        (None, None) => return Err(t.error("replications", "missing; give replications = R or until = { … }")),
        (Some(Value::Integer(r)), None) if r >= 1 => Replications::Fixed(r as u64),
        (Some(v), None) => return Err(t.error("replications", format!("expected an integer ≥ 1, found {v}"))),
        (None, Some(Value::Table(u))) => {
            for name in u.keys() {
                if !["metric", "rel_halfwidth", "confidence", "min", "max"].contains(&name.as_str()) {
                    return Err(t.error(
                        "until",
                        format!("unknown key {name}; until takes metric, rel_halfwidth, confidence, min, max"),
                    ));
                }
            }
            let metric = u.get("metric").and_then(Value::as_str).ok_or_else(|| t.error("until.metric", "missing"))?;
            let rel =
                number(&t, "until", &u, "rel_halfwidth")?.ok_or_else(|| t.error("until.rel_halfwidth", "missing"))?;
            if rel <= 0.0 {
                return Err(t.error("until.rel_halfwidth", format!("must be > 0, found {rel}")));
            }
            let min = number(&t, "until", &u, "min")?.unwrap_or(5.0);
            let max = number(&t, "until", &u, "max")?.unwrap_or(10_000.0);
            if min < 2.0 || max < min {
                return Err(t.error("until.max", format!("need 2 ≤ min ≤ max, found min {min}, max {max}")));
            }
            if let Some(c) = number(&t, "until", &u, "confidence")? {
                if c <= 0.0 || c >= 1.0 {
                    return Err(
                        t.error("until.confidence", format!("expected a level strictly between 0 and 1, found {c}"))
                    );
                }
            }
            Replications::Until { metric: metric.to_string(), rel_halfwidth: rel, min: min as u64, max: max as u64 }
        }
        (None, Some(v)) => return Err(t.error("until", format!("expected {{ metric, rel_halfwidth, … }}, found {v}"))),
    };
    let per_point = match &replications {
        Replications::Fixed(r) => *r,
        Replications::Until { max, .. } => *max,
    };
    let tasks = per_point.saturating_mul(points.len() as u64);
    if tasks > MAX_TASKS {
        let key = if matches!(replications, Replications::Fixed(_)) { "replications" } else { "until.max" };
        return Err(t.error(
            key,
            format!("{} point(s) × {per_point} replications = {tasks} tasks: at most {MAX_TASKS}", points.len()),
        ));
    }
    let confidence = match t.raw("until") {
        Some(Value::Table(u)) => u.get("confidence").and_then(|c| c.as_float()).unwrap_or(confidence),
        _ => confidence,
    };
    let faults = task_list(&mut t, "inject_faults")?;
    let kills = task_list(&mut t, "inject_kills")?;
    let isolate = match t.raw("isolate") {
        None => Isolation::Thread,
        Some(v) => v
            .as_str()
            .and_then(Isolation::parse)
            .ok_or_else(|| t.error("isolate", format!("expected \"thread\" or \"process\", found {v}")))?,
    };
    let timeout = match t.raw("task_timeout_s") {
        None => None,
        Some(v) => {
            // At most about 31 years: a longer one is no timeout, and would overflow a Duration.
            let s = v.as_float().or(v.as_integer().map(|i| i as f64)).filter(|s| *s > 0.0 && *s <= 1e9);
            Some(std::time::Duration::from_secs_f64(
                s.ok_or_else(|| t.error("task_timeout_s", format!("expected seconds in (0, 1e9], found {v}")))?,
            ))
        }
    };
    t.finish()?;
    let spec = SweepSpec { points, replications, confidence, common_random_numbers: crn, retries, seed, faults, kills };
    let metrics = match (&spec.replications, metrics) {
        (Replications::Until { metric, .. }, Some(mut m)) if !m.contains(metric) => {
            m.push(metric.clone());
            Some(m)
        }
        (_, m) => m,
    };
    Ok(SweepSetup {
        spec,
        workers: (workers > 0).then_some(workers),
        metrics,
        group,
        ranks_per_task,
        isolate,
        timeout,
        allow_failures,
    })
}

/// Reads and checks a scenario's `[sweep]` table for a model whose own
/// table is `model_table`: the points, the replications and the options,
/// without running anything or checking the points against the model (see
/// `sweep`, which plans every point too).
///
/// ```
/// let text = "[sweep]\nparameters = { beta = [0.1, 0.2] }\nreplications = 3\n";
/// let mut sc = parsim::Scenario::parse(std::path::Path::new("s.toml"), text.into()).unwrap();
/// let spec = parsim::read_sweep_spec(&mut sc, "abm").unwrap();
/// assert_eq!(spec.points.len(), 2);
/// assert_eq!(spec.points[0].values[0].0, "abm.beta");
/// ```
pub fn read_sweep_spec(sc: &mut Scenario, model_table: &str) -> Result<parsim_sweep::SweepSpec, InputError> {
    let seed = read_run_table(&mut sc.clone(), false)?.seed;
    let setup = read_sweep(sc, seed, model_table)?;
    setup
        .spec
        .check()
        .map_err(|e| InputError { place: sc.path().display().to_string(), msg: format!("[sweep] {e}") })?;
    Ok(setup.spec)
}

//! `model = "phold"` and `model = "queues"`: discrete-event models on the
//! `parsim-des` engines, configured by a `[des]` table (the engine and its
//! knobs) and the model's own table (`[phold]` with the spec's parameter
//! names, or `[queues]`).

use parsim_comm::Comm;
use parsim_des::models::{Phold, QueueStats, Queues};
use parsim_des::{Cancellation, DesConfig, DesStats, Engine, GvtAlgorithm, Model, Report, StateSaving};
use serde_json::{json, Value};

use super::{ModelOutput, RunContext};
use parsim::Progress;
use parsim::{InputError, Scenario};

/// A DES model and its engine.
#[derive(Clone, Debug, PartialEq)]
pub struct DesSetup {
    /// The engine configuration (the seed comes from `[run]`).
    pub cfg: DesConfig,
    /// The model.
    pub model: DesModel,
}

/// The DES models the binary knows.
#[derive(Clone, Debug, PartialEq)]
pub enum DesModel {
    /// `[phold]`.
    Phold(Phold),
    /// `[queues]`.
    Queues(Queues),
}

const ENGINES: [&str; 4] = ["sequential", "conservative", "window", "optimistic"];

impl DesSetup {
    /// Reads `[des]` and the model's table (`phold` or `queues`).
    pub fn from_scenario(sc: &mut Scenario, model: &str) -> Result<Self, InputError> {
        let mut t = sc.section("des", false)?;
        let engine = t.choice("engine", Some("sequential"), &ENGINES)?;
        let mut cfg = DesConfig::new(Engine::parse(&engine).expect("validated engine"));
        cfg.checkpoint_every = t.int("checkpoint_every", Some(1), 1..=1 << 20)? as u32;
        cfg.state_saving = match t.choice("state_saving", Some("copy"), &["copy", "reverse"])?.as_str() {
            "copy" => StateSaving::Copy,
            _ => StateSaving::Reverse,
        };
        cfg.cancellation = match t.choice("cancellation", Some("aggressive"), &["aggressive", "lazy"])?.as_str() {
            "aggressive" => Cancellation::Aggressive,
            _ => Cancellation::Lazy,
        };
        cfg.gvt = match t.choice("gvt", Some("mattern"), &["mattern", "synchronous"])?.as_str() {
            "mattern" => GvtAlgorithm::Mattern,
            _ => GvtAlgorithm::Synchronous,
        };
        cfg.gvt_interval = t.int("gvt_interval", Some(cfg.gvt_interval), 1..=u64::MAX)?;
        cfg.memory_limit = t.int("memory_limit", Some(cfg.memory_limit), 1..=u64::MAX)?;
        cfg.batch = t.int("batch", Some(u64::from(cfg.batch)), 1..=1 << 20)? as u32;
        cfg.window = match t.raw("window") {
            None => None,
            Some(toml::Value::String(s)) if s == "auto" => None,
            Some(toml::Value::String(s)) if s == "unbounded" => Some(f64::INFINITY),
            Some(toml::Value::Float(w)) if w > 0.0 => Some(w),
            Some(toml::Value::Integer(w)) if w > 0 => Some(w as f64),
            Some(v) => {
                return Err(t.error("window", format!("expected \"auto\", \"unbounded\" or a number > 0, found {v}")))
            }
        };
        t.finish()?;
        let model = match model {
            "phold" => DesModel::Phold(phold(sc)?),
            "queues" => DesModel::Queues(queues(sc)?),
            other => unreachable!("not a DES model: {other}"),
        };
        Ok(DesSetup { cfg, model })
    }

    /// What `--dry-run` prints.
    pub fn describe(&self, ranks: usize) -> String {
        let (lps, what) = match &self.model {
            DesModel::Phold(p) => (
                p.lps,
                format!(
                    "PHOLD: {} LPs, {} events each, mean {}, lookahead {}, remote {}, end {} (≈{:.0} events)",
                    p.lps,
                    p.start_events,
                    p.mean,
                    p.lookahead,
                    p.remote,
                    p.end,
                    p.expected_events()
                ),
            ),
            DesModel::Queues(q) => (
                q.width * q.height,
                format!(
                    "closed queueing network: {}x{} torus, {} jobs per server, service {}, transit {}, end {}",
                    q.width, q.height, q.jobs_per_server, q.service, q.transit, q.end
                ),
            ),
        };
        let mut s = format!(
            "{what}\nengine {} on {ranks} ranks\n{:>6} {:>16} {:>8}\n",
            self.cfg.engine.name(),
            "rank",
            "LPs",
            "count"
        );
        let ranks_used = if self.cfg.engine == Engine::Sequential { 1 } else { ranks };
        for r in 0..ranks as u64 {
            let (a, b) = if (r as usize) < ranks_used {
                let n = u64::from(lps);
                let first = (0..n).find(|i| i * ranks_used as u64 / n == r).unwrap_or(n);
                let last = (first..n).find(|i| i * ranks_used as u64 / n != r).unwrap_or(n);
                (first, last)
            } else {
                (0, 0)
            };
            s += &format!("{r:>6} {:>16} {:>8}\n", format!("{a}..{b}"), b - a);
        }
        s
    }
}

impl DesSetup {
    /// Bytes the model needs in all, and the key that sizes it: LPs ×
    /// (state, queue entries and engine bookkeeping per LP) plus the events
    /// in flight. Measured per LP (PHOLD std, 4·10⁶ LPs): about 115 bytes
    /// sequential, and 16 more under Time Warp (the end of the LP's history
    /// in the rank's log; both engines peaked at 0.78–0.80 GB there), whose
    /// processed-but-uncommitted events (up to `memory_limit` per rank,
    /// ~104 bytes each in the log with what they sent, plus the saved state)
    /// come on top; an event in a queue takes about 48 bytes.
    pub fn memory_need(&self, ranks: usize) -> (f64, &'static str, String) {
        let (lps, events, key) = match &self.model {
            DesModel::Phold(p) => (f64::from(p.lps), f64::from(p.lps) * f64::from(p.start_events), "lps"),
            DesModel::Queues(q) => {
                let servers = f64::from(q.width) * f64::from(q.height);
                (servers, servers * f64::from(q.jobs_per_server), "width")
            }
        };
        let (per_lp, history) = match self.cfg.engine {
            Engine::Optimistic => (131.0, 104.0 * self.cfg.memory_limit as f64 * ranks as f64),
            _ => (115.0, 0.0),
        };
        let need = lps * per_lp + events * 48.0 + history.min(events * 104.0 * 4.0);
        let what = format!("{lps} LPs and {events} events on the {} engine", self.cfg.engine.name());
        (need, key, what)
    }
}

fn phold(sc: &mut Scenario) -> Result<Phold, InputError> {
    let mut t = sc.section("phold", true)?;
    let std = Phold::std(0.25);
    let p = Phold {
        lps: t.int("lps", Some(u64::from(std.lps)), 1..=u64::from(u32::MAX))? as u32,
        start_events: t.int("start_events", Some(u64::from(std.start_events)), 0..=1 << 24)? as u32,
        mean: t.float("mean", std.mean, 0.0..=f64::MAX)?,
        lookahead: t.float("lookahead", std.lookahead, 0.0..=f64::MAX)?,
        remote: t.float("remote", std.remote, 0.0..=1.0)?,
        end: t.float("end", std.end, 0.0..=f64::MAX)?,
    };
    if let Err(msg) = p.validate() {
        let key = if msg.contains("lookahead") { "lookahead" } else { "lps" };
        return Err(t.error(key, msg));
    }
    t.finish()?;
    Ok(p)
}

fn queues(sc: &mut Scenario) -> Result<Queues, InputError> {
    let mut t = sc.section("queues", true)?;
    let q = Queues {
        width: t.int("width", Some(8), 1..=1 << 16)? as u32,
        height: t.int("height", Some(8), 1..=1 << 16)? as u32,
        jobs_per_server: t.int("jobs_per_server", Some(2), 1..=1 << 16)? as u32,
        service: t.float("service", 1.0, f64::MIN_POSITIVE..=f64::MAX)?,
        transit: t.float("transit", 0.5, f64::MIN_POSITIVE..=f64::MAX)?,
        end: t.float("end", 1000.0, 0.0..=f64::MAX)?,
        warmup: 0.0,
    };
    // Jobs all start queued: by default the first tenth of the run is left
    // out of the statistics.
    let q = Queues { warmup: t.float("warmup", q.end / 10.0, 0.0..=f64::MAX)?, ..q };
    if let Err(msg) = q.validate() {
        let key = if msg.starts_with("warmup") { "warmup" } else { "width" };
        return Err(t.error(key, msg));
    }
    t.finish()?;
    Ok(q)
}

/// Runs the model on this rank.
pub fn run<C: Comm>(
    comm: &C,
    setup: &DesSetup,
    ctx: &RunContext,
    ck: Option<&mut parsim::ckpt::Checkpointer<'_, C>>,
) -> Result<ModelOutput, parsim_des::DesError> {
    let cfg = DesConfig { seed: ctx.seed, ..setup.cfg.clone() };
    if comm.rank() == 0 && cfg.engine == Engine::Optimistic {
        for w in risky_settings(&cfg, comm.size()) {
            tracing::warn!("{w}");
        }
    }
    match &setup.model {
        DesModel::Phold(p) => {
            let r = run_model(comm, p, &cfg, ctx, ck)?;
            let mut metrics = stats_json(&r.total);
            metrics["expected_events"] = json!(p.expected_events());
            Ok(ModelOutput { digest: r.digest, metrics })
        }
        DesModel::Queues(q) => {
            let r = run_model(comm, q, &cfg, ctx, ck)?;
            // Sum the servers in id order, so the figures do not depend on the rank count.
            let mine: Vec<(u32, QueueStats)> = r
                .states
                .iter()
                .map(|(id, s)| {
                    let mut one = QueueStats::default();
                    one.add(s, q);
                    (*id, one)
                })
                .collect();
            let mut servers: Vec<(u32, QueueStats)> = comm.all_gather_value(&mine)?.into_iter().flatten().collect();
            servers.sort_by_key(|(id, _)| *id);
            let mut all = QueueStats::default();
            for (_, one) in &servers {
                all.merge(one);
            }
            let (l_exact, x_exact) = q.exact();
            let mut metrics = stats_json(&r.total);
            metrics["queues"] = json!({
                "mean_queue": all.mean_queue(),
                "throughput": all.throughput(),
                "mean_sojourn": all.mean_sojourn(),
                "littles_law_l_over_lambda_w": all.mean_queue() / (all.throughput() * all.mean_sojourn()),
                "exact_mean_queue": l_exact,
                "exact_throughput": x_exact,
                "warmup": q.warmup,
                "observed": q.end - q.warmup,
            });
            if comm.rank() == 0 {
                tracing::info!(
                    "queues: L = {:.4} (exact {l_exact:.4}), throughput {:.4} (exact {x_exact:.4}), λW = {:.4}, \
                     measured over [{}, {}] (the warm-up before it left out)",
                    all.mean_queue(),
                    all.throughput(),
                    all.throughput() * all.mean_sojourn(),
                    q.warmup,
                    q.end
                );
            }
            Ok(ModelOutput { digest: r.digest, metrics })
        }
    }
}

/// Time Warp settings that measured badly at this rank count, with why:
/// the defaults (Mattern GVT, the auto window) are safe; these still run.
fn risky_settings(cfg: &DesConfig, ranks: usize) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut w = Vec::new();
    if ranks > 1 && cfg.window == Some(f64::INFINITY) {
        w.push(format!(
            "des.window = \"unbounded\" on {ranks} ranks: without an optimism window a rank that runs ahead \
             can roll the others back in storms (3 ranks on 2 cores measured an efficiency of −5.7); the default \
             \"auto\" (5 × lookahead) keeps efficiency above 99 %"
        ));
    }
    if ranks > cores && cfg.gvt == GvtAlgorithm::Synchronous {
        w.push(format!(
            "des.gvt = \"synchronous\" with {ranks} ranks on {cores} cores: every round stops all ranks at a \
             barrier, and with more ranks than cores a descheduled rank holds everyone (10–20× slower than \
             \"mattern\" measured at 3 ranks on 2 cores)"
        ));
    }
    w
}

fn run_model<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    ctx: &RunContext,
    ck: Option<&mut parsim::ckpt::Checkpointer<'_, C>>,
) -> Result<Report<M::State>, parsim_des::DesError> {
    let end = model.end_time();
    let quiet = !ctx.progress || comm.rank() != 0;
    let mut bar = Progress::new("GVT (simulated time)", end.ceil().max(1.0) as u64, quiet)
        .every(std::time::Duration::from_millis(100));
    let mut report = |gvt: f64, _end: f64, _committed: u64| bar.set(gvt.floor() as u64);
    let r = parsim_des::run_resilient(comm, model, cfg, Some(&mut report), ck);
    if r.is_ok() {
        bar.set(end.ceil().max(1.0) as u64);
    }
    bar.finish();
    let r = r?;
    if !quiet {
        print_stats(&r.total, cfg.engine);
    }
    Ok(r)
}

fn print_stats(s: &DesStats, engine: Engine) {
    println!(
        "{}: committed {} events ({:.2} M/s main loop, {:.2} M/s whole run)",
        engine.name(),
        s.committed,
        s.rate_main_loop() / 1e6,
        s.rate_total() / 1e6
    );
    match engine {
        Engine::Optimistic => println!(
            "  processed {}  rolled back {} (efficiency {:.4})  rollbacks {} primary / {} secondary  anti-messages {}  GVT rounds {}  peak uncommitted {}",
            s.processed,
            s.rolled_back,
            s.efficiency(),
            s.rollbacks_primary,
            s.rollbacks_secondary,
            s.anti_messages,
            s.gvt_rounds,
            s.peak_uncommitted
        ),
        Engine::Conservative => println!(
            "  null messages {} for {} remote events (ratio {:.3})",
            s.null_messages,
            s.remote_events,
            s.null_ratio()
        ),
        Engine::Window => println!("  windows {}  remote events {}", s.gvt_rounds, s.remote_events),
        Engine::Sequential => {}
    }
}

fn stats_json(s: &DesStats) -> Value {
    json!({
        "committed_events": s.committed,
        "processed_events": s.processed,
        "rolled_back_events": s.rolled_back,
        "rollbacks_primary": s.rollbacks_primary,
        "rollbacks_secondary": s.rollbacks_secondary,
        "anti_messages": s.anti_messages,
        "lazy_reused_messages": s.lazy_reused,
        "coasted_events": s.coasted,
        "efficiency": s.efficiency(),
        "gvt_rounds": s.gvt_rounds,
        "null_messages": s.null_messages,
        "null_ratio": s.null_ratio(),
        "remote_events": s.remote_events,
        "messages": s.messages,
        "peak_uncommitted_events": s.peak_uncommitted,
        "peak_pending_events": s.peak_pending,
        "peak_memory_bytes": s.peak_memory_bytes,
        "throttled": s.throttled,
        "main_loop_s": s.main_loop_s,
        "total_s": s.total_s,
        "committed_per_s_main_loop": s.rate_main_loop(),
        "committed_per_s_total": s.rate_total(),
    })
}

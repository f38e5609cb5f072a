//! `model = "epidemic"`: SEIR-net-v1 on a contact network (`parsim-abm`),
//! configured by the `[abm]` table. Writes `curve.csv`, `epidemic.png` and
//! the epidemic's figures in `summary.json`'s metrics; `--verify` prints the
//! spec's analytic predictions for the actual graph beside the simulation.

use std::path::{Path, PathBuf};

use anyhow::Result;
use parsim_abm::population::{LocalPopulation, Synthetic};
use parsim_abm::report::{self, Outcome};
use parsim_abm::theory::Theory;
use parsim_abm::{AbmError, Closure, Isolation, SeirConfig, SeirResult, Vaccination, Variant};
use parsim_comm::Comm;
use parsim_core::Phase;
use serde_json::{json, Value};
use toml::Value as Toml;

use super::{ModelOutput, RunContext};
use parsim::write_atomic;

use crate::report::epidemic_plot;

mod simulate;
use parsim::{InputError, Scenario, Section};
pub use simulate::{mpi_local_ranks, mpi_world_ranks, simulate, simulate_resilient, Simulated};

/// Where the contact network comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Erdős–Rényi G(N, M) with this mean degree.
    ErdosRenyi(f64),
    /// A synthetic population.
    Synthetic(Box<Synthetic>),
    /// A file (already read when the scenario was validated).
    File(PathBuf),
}

/// How agents are given to ranks.
const PARTITIONERS: [&str; 9] = ["block", "hash", "dlp", "dml", "multilevel", "lp", "ldg", "fennel", "spectral"];

/// A validated `[abm]` table.
#[derive(Clone, Debug)]
pub struct AbmSetup {
    /// Agents.
    pub agents: usize,
    /// The network.
    pub source: Source,
    /// The seed of a generated network.
    pub graph_seed: Option<u64>,
    /// The partitioner.
    pub partitioner: String,
    /// The run (its seed is replaced by the run's).
    pub cfg: SeirConfig,
    /// For a file: whether self-loops are refused (`abm.strict`).
    pub strict: bool,
    /// Dynamic load balancing (`[lb]` present): the balancer's settings and
    /// the agents per chunk (`abm.chunk_agents`).
    pub lb: Option<(parsim_lb::Config, u32)>,
}

impl PartialEq for AbmSetup {
    fn eq(&self, o: &Self) -> bool {
        (self.agents, &self.source, self.graph_seed, &self.partitioner, &self.cfg, &self.lb)
            == (o.agents, &o.source, o.graph_seed, &o.partitioner, &o.cfg, &o.lb)
    }
}

fn abm_err(t: &Section<'_>, e: AbmError) -> InputError {
    match e {
        AbmError::Config { key, msg } => t.error(&key, msg),
        other => t.error("population", other.to_string()),
    }
}

fn table_of(t: &Section<'_>, key: &str, v: Toml) -> Result<toml::Table, InputError> {
    match v {
        Toml::Table(tb) => Ok(tb),
        other => Err(t.error(key, format!("expected a table, found {other}"))),
    }
}

fn num(t: &Section<'_>, key: &str, tb: &toml::Table, name: &str, default: Option<f64>) -> Result<f64, InputError> {
    match tb.get(name) {
        None => default.ok_or_else(|| t.error(&format!("{key}.{name}"), "missing")),
        Some(Toml::Float(f)) => Ok(*f),
        Some(Toml::Integer(i)) => Ok(*i as f64),
        Some(other) => Err(t.error(&format!("{key}.{name}"), format!("expected a number, found {other}"))),
    }
}

fn day(t: &Section<'_>, key: &str, tb: &toml::Table, name: &str, days: u32) -> Result<u32, InputError> {
    let x = num(t, key, tb, name, None)?;
    if x < 0.0 || x.fract() != 0.0 || x > f64::from(days) {
        return Err(t.error(&format!("{key}.{name}"), format!("day {x} is outside the horizon 0..={days}")));
    }
    Ok(x as u32)
}

fn only(t: &Section<'_>, key: &str, tb: &toml::Table, names: &[&str]) -> Result<(), InputError> {
    for k in tb.keys() {
        if !names.contains(&k.as_str()) {
            return Err(t.error(&format!("{key}.{k}"), format!("unknown key; {key} takes {}", names.join(", "))));
        }
    }
    Ok(())
}

fn layer_names(source: &Source) -> Vec<String> {
    match source {
        Source::Synthetic(s) => s.layers.iter().map(|l| l.name.clone()).collect(),
        _ => vec!["contact".to_string()],
    }
}

fn layer_index(t: &Section<'_>, key: &str, names: &[String], name: &str) -> Result<usize, InputError> {
    names
        .iter()
        .position(|n| n == name)
        .ok_or_else(|| t.error(key, format!("no layer \"{name}\"; this population has {}", names.join(", "))))
}

fn synthetic(t: &Section<'_>, v: Option<Toml>, layers: Option<Toml>) -> Result<Synthetic, InputError> {
    let mut s = Synthetic::default();
    if let Some(v) = v {
        let tb = table_of(t, "synthetic", v)?;
        only(
            t,
            "synthetic",
            &tb,
            &[
                "household_sizes",
                "class_size",
                "team_size",
                "employment",
                "community_degree",
                "community_local",
                "district_size",
            ],
        )?;
        if let Some(h) = tb.get("household_sizes") {
            let arr = h.as_array().ok_or_else(|| t.error("synthetic.household_sizes", "expected a list of shares"))?;
            s.household_sizes = arr
                .iter()
                .map(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .collect::<Option<Vec<f64>>>()
                .ok_or_else(|| t.error("synthetic.household_sizes", "expected a list of numbers"))?;
        }
        let int = |name: &str, d: usize| -> Result<usize, InputError> {
            let x = num(t, "synthetic", &tb, name, Some(d as f64))?;
            if x < 1.0 || x.fract() != 0.0 {
                return Err(t.error(&format!("synthetic.{name}"), format!("expected a positive integer, found {x}")));
            }
            Ok(x as usize)
        };
        s.class_size = int("class_size", s.class_size)?;
        s.team_size = int("team_size", s.team_size)?;
        s.district_size = int("district_size", s.district_size)?;
        s.employment = num(t, "synthetic", &tb, "employment", Some(s.employment))?;
        s.community_degree = num(t, "synthetic", &tb, "community_degree", Some(s.community_degree))?;
        s.community_local = num(t, "synthetic", &tb, "community_local", Some(s.community_local))?;
    }
    if let Some(v) = layers {
        let tb = table_of(t, "layers", v)?;
        for (name, spec) in tb {
            let i = s.layers.iter().position(|l| l.name == name).ok_or_else(|| {
                t.error(
                    &format!("layers.{name}"),
                    "no such layer; the synthetic population has household, school, work, community",
                )
            })?;
            let key = format!("layers.{name}");
            let lt = table_of(t, &key, spec)?;
            only(t, &key, &lt, &["beta_multiplier", "weight"])?;
            s.layers[i].beta_multiplier = num(t, &key, &lt, "beta_multiplier", Some(s.layers[i].beta_multiplier))?;
            s.layers[i].weight = num(t, &key, &lt, "weight", Some(s.layers[i].weight))?;
            if s.layers[i].beta_multiplier < 0.0 || s.layers[i].weight < 0.0 {
                return Err(t.error(&key, "beta_multiplier and weight must be ≥ 0"));
            }
        }
    }
    s.check().map_err(|e| abm_err(t, e))?;
    Ok(s)
}

impl AbmSetup {
    /// Reads `[abm]`; a population file is read now (its errors are input errors).
    pub fn from_scenario(sc: &mut Scenario, threads: usize) -> Result<Self, InputError> {
        let scenario_dir = sc.path().parent().map(Path::to_path_buf).unwrap_or_default();
        let mut t = sc.section("abm", true)?;
        let population = t.string("population", Some("er"))?.expect("default");
        let agents_key = Some(t.int("agents", Some(0), 0..=4_000_000_000)?).filter(|&a| a > 0);
        let mean_degree = t.float("mean_degree", 10.0, 0.0..=10_000.0)?;
        let graph_seed = t.raw("graph_seed").map(|v| v.as_integer().unwrap_or(-1));
        let graph_seed = match graph_seed {
            None => None,
            Some(s) if s >= 0 => Some(s as u64),
            Some(_) => return Err(t.error("graph_seed", "expected an integer ≥ 0")),
        };
        let beta = t.float("beta", 0.05, 0.0..=1.0)?;
        let variant = t.choice("variant", Some("A"), &["A", "B"])?;
        let latent = t.float("latent_days", 3.0, 0.0..=1e6)?;
        let infectious = t.float("infectious_days", 5.0, 0.0..=1e6)?;
        let seeds = t.int("seeds", Some(10), 1..=u64::MAX)? as usize;
        let days = t.int("days", Some(180), 1..=65_000)? as u32;
        let partitioner = t.choice("partitioner", Some("block"), &PARTITIONERS)?;
        let strict = t.boolean("strict", false)?;
        let keep_states = t.boolean("write_states", false)?;
        let chunk_agents = t.int("chunk_agents", Some(0), 0..=u64::from(u32::MAX))? as u32;
        let variant = if variant == "A" {
            if latent < 1.0 || latent.fract() != 0.0 {
                return Err(
                    t.error("latent_days", format!("variant A needs a whole number of days ≥ 1, found {latent}"))
                );
            }
            if infectious < 1.0 || infectious.fract() != 0.0 {
                return Err(t.error(
                    "infectious_days",
                    format!("variant A needs a whole number of days ≥ 1, found {infectious}"),
                ));
            }
            Variant::Fixed { latent: latent as u32, infectious: infectious as u32 }
        } else {
            if latent < 1.0 {
                return Err(t.error("latent_days", format!("a mean duration must be ≥ 1 day, found {latent}")));
            }
            if infectious < 1.0 {
                return Err(t.error("infectious_days", format!("a mean duration must be ≥ 1 day, found {infectious}")));
            }
            Variant::Markov { sigma: 1.0 / latent, gamma: 1.0 / infectious }
        };
        let syn_table = t.raw("synthetic");
        let layers_table = t.raw("layers");
        let source = match population.as_str() {
            "er" => Source::ErdosRenyi(mean_degree),
            "synthetic" => Source::Synthetic(Box::new(synthetic(&t, syn_table, layers_table.clone())?)),
            path => {
                let p = Path::new(path);
                Source::File(if p.is_absolute() || p.exists() { p.to_path_buf() } else { scenario_dir.join(p) })
            }
        };
        if layers_table.is_some() && !matches!(source, Source::Synthetic(_)) {
            return Err(t.error("layers", "layers are set for synthetic populations only"));
        }
        let names = layer_names(&source);
        let mut closures = Vec::new();
        if let Some(v) = t.raw("close") {
            let items = match v {
                Toml::Array(a) => a,
                t1 @ Toml::Table(_) => vec![t1],
                other => {
                    return Err(t.error("close", format!("expected a list of {{ layer, from, to }}, found {other}")))
                }
            };
            for it in items {
                let tb = table_of(&t, "close", it)?;
                only(&t, "close", &tb, &["layer", "from", "to"])?;
                let name = tb
                    .get("layer")
                    .and_then(Toml::as_str)
                    .ok_or_else(|| t.error("close.layer", "expected a layer name"))?;
                let layer = layer_index(&t, "close.layer", &names, name)?;
                let (from, to) = (day(&t, "close", &tb, "from", days)?, day(&t, "close", &tb, "to", days)?);
                closures.push(Closure { layer, from, to });
            }
        }
        let vaccination = match t.raw("vaccinate") {
            None => None,
            Some(v) => {
                let tb = table_of(&t, "vaccinate", v)?;
                only(&t, "vaccinate", &tb, &["from", "to", "rate"])?;
                Some(Vaccination {
                    from: day(&t, "vaccinate", &tb, "from", days)?,
                    to: day(&t, "vaccinate", &tb, "to", days)?,
                    rate: num(&t, "vaccinate", &tb, "rate", None)?,
                })
            }
        };
        let isolation = match t.raw("isolate") {
            None => None,
            Some(v) => {
                let tb = table_of(&t, "isolate", v)?;
                only(&t, "isolate", &tb, &["detect", "delay", "keep"])?;
                let mut keep = 0u8;
                let default_keep: Vec<Toml> = if names.iter().any(|n| n == "household") {
                    vec![Toml::String("household".into())]
                } else {
                    Vec::new()
                };
                let list = match tb.get("keep") {
                    None => default_keep,
                    Some(Toml::Array(a)) => a.clone(),
                    Some(other) => {
                        return Err(t.error("isolate.keep", format!("expected a list of layer names, found {other}")))
                    }
                };
                for n in list {
                    let n = n.as_str().ok_or_else(|| t.error("isolate.keep", "expected layer names"))?;
                    keep |= 1 << layer_index(&t, "isolate.keep", &names, n)?;
                }
                Some(Isolation {
                    detect: num(&t, "isolate", &tb, "detect", None)?,
                    delay: day(&t, "isolate", &tb, "delay", days)?,
                    keep,
                })
            }
        };
        let cfg =
            SeirConfig { beta, variant, seeds, days, seed: 0, closures, vaccination, isolation, threads, keep_states };
        cfg.check(names.len()).map_err(|e| abm_err(&t, e))?;
        let agents = match &source {
            // One streaming pass that stores nothing; every rank reads its own share at run time.
            Source::File(p) => {
                LocalPopulation::scan(p, agents_key.map(|a| a as usize), strict).map_err(|e| match e {
                    AbmError::Parse { .. } | AbmError::Io { .. } => InputError::flag("[abm] population", e.to_string()),
                    other => abm_err(&t, other),
                })?
            }
            _ => match agents_key {
                Some(a) => a as usize,
                None => return Err(t.error("agents", "missing; expected the number of agents (an integer ≥ 1)")),
            },
        };
        if seeds > agents {
            return Err(t.error("seeds", format!("{seeds} seeds but only {agents} agents")));
        }
        t.finish()?;
        let lb = if sc.has_table("lb") {
            // Chunks of consecutive agents (256 of them unless set): the unit the balancer moves.
            let chunk = if chunk_agents > 0 { chunk_agents } else { agents.div_ceil(256).max(1) as u32 };
            let lb: parsim_lb::Config = sc.params("lb")?;
            lb.check(agents.div_ceil(chunk as usize)).map_err(|(k, m)| {
                let k = k.trim_start_matches("lb.").to_string();
                sc.error_at("lb", &k, format!("[lb] {k}: {m}"))
            })?;
            Some((lb, chunk))
        } else {
            None
        };
        Ok(AbmSetup { agents, source, graph_seed, partitioner, cfg, strict, lb })
    }

    /// The spec's reference case on a generated Erdős–Rényi network (variant A, 180 days, block partition).
    pub fn erdos_renyi(agents: usize, mean_degree: f64, graph_seed: u64) -> Self {
        AbmSetup {
            agents,
            source: Source::ErdosRenyi(mean_degree),
            graph_seed: Some(graph_seed),
            partitioner: "block".into(),
            cfg: SeirConfig::default(),
            strict: false,
            lb: None,
        }
    }

    /// What `--dry-run` prints.
    pub fn describe(&self, ranks: usize) -> String {
        let what = match &self.source {
            Source::ErdosRenyi(c) => format!("Erdős–Rényi G(N, M), mean degree {c}"),
            Source::Synthetic(s) => format!("synthetic population, districts of {}", s.district_size),
            Source::File(p) => format!("contact network {}", p.display()),
        };
        let per = self.agents.div_ceil(ranks);
        let placement = match &self.lb {
            None => format!("partitioner {}", self.partitioner),
            Some((lb, chunk)) => format!(
                "{} chunks of {chunk} consecutive agents, balanced: {:?} every {} days (when {:?}, threshold {}, measure {:?})",
                self.agents.div_ceil(*chunk as usize),
                lb.strategy,
                lb.every,
                lb.when,
                lb.threshold,
                lb.measure
            ),
        };
        format!(
            "epidemic: {} agents ({what}), {} days, variant {}, β = {}\n{placement}: about {per} agents per rank on {ranks} rank(s)\n",
            self.agents,
            self.cfg.days,
            if matches!(self.cfg.variant, Variant::Fixed { .. }) { "A" } else { "B" },
            self.cfg.beta,
        )
    }

    /// This rank's share of the population, block partitioned by agent id:
    /// each rank generates or reads only its own share. Collective.
    pub fn build_local<C: Comm>(&self, comm: &C, seed: u64) -> Result<LocalPopulation> {
        let s = self.graph_seed.unwrap_or(seed);
        Ok(match &self.source {
            Source::ErdosRenyi(c) => LocalPopulation::erdos_renyi(comm, self.agents, *c, s)?,
            Source::Synthetic(spec) => LocalPopulation::synthetic(comm, spec, self.agents, s)?,
            Source::File(p) => LocalPopulation::read(comm, p, Some(self.agents), self.strict)?,
        })
    }
}

/// Runs the epidemic; rank 0 writes `curve.csv` and `epidemic.png` in `out`.
pub fn run<C: Comm>(
    comm: &C,
    setup: &AbmSetup,
    ctx: &RunContext,
    out: &Path,
    ck: Option<&mut parsim::ckpt::Checkpointer<'_, C>>,
) -> Result<parsim::Outcome> {
    let sim = simulate_resilient(comm, setup, ctx.seed, ctx.progress, ck, ctx.slow)?;
    let quiet_theory = !ctx.outputs;
    let cfg = SeirConfig { seed: ctx.seed, ..setup.cfg.clone() };
    let res = &sim.result;
    let o = Outcome::of(res, &cfg);
    let bytes = sim.bytes_sent;
    let pop = &sim.population;
    let n = pop.agents as f64;
    let days = f64::from(cfg.days);
    let by_degree: Vec<Value> = report::attack_by_degree(res, 100)
        .into_iter()
        .map(|(k, count, a)| json!({"degree": k, "agents": count, "attack_rate": a}))
        .collect();
    let last = res.curve.last().copied().unwrap_or_default();
    let theory =
        (pop.layers.len() == 1 && !quiet_theory).then(|| Theory::predict(&pop.degree_counts, cfg.beta, cfg.variant));
    let mut metrics = json!({
        "agents": pop.agents,
        "edges": pop.edges,
        "mean_degree": 2.0 * pop.edges as f64 / n,
        "layers": pop.layers.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
        "dropped_self_loops": pop.dropped.self_loops,
        "dropped_duplicates": pop.dropped.duplicates,
        "days": cfg.days,
        "attack_rate": o.attack_rate,
        "peak_day": o.peak_day,
        "peak_prevalence": o.peak_prevalence,
        "peak_incidence_day": o.peak_incidence_day,
        "growth_rate": o.growth_rate,
        "growth_window_days": o.growth_window.map(|w| [w.0, w.1]),
        "growth_rate_se": o.growth_se,
        "growth_rate_missing": o.growth_missing,
        "r0_estimate": o.r0_estimate,
        "final": {"S": last.s, "E": last.e, "I": last.i, "R": last.r, "V": last.v},
        "attack_rate_by_degree": by_degree,
        "partitioner": setup.partitioner,
        "cut_edges": sim.cut_edges,
        "bytes_per_day": bytes as f64 / days,
        "bytes_per_cut_edge_per_day": if sim.cut_edges > 0 { bytes as f64 / days / sim.cut_edges as f64 } else { 0.0 },
        // Work counters, not results: a rank draws for a ghost neighbour whose
        // state it does not know yet, so the count grows with the rank count
        // while the epidemic (and its digest) does not change.
        "work": {
            "transmission_draws": res.transmission_checks,
            "transmission_draws_per_s": res.transmission_checks as f64 / sim.times[3],
            "note": "work counters: the draws made, which depend on the rank count (draws for ghost neighbours \
                     that turn out not to be susceptible); the epidemic does not",
        },
        "population_s": sim.times[0],
        "partition_s": sim.times[1],
        "local_graph_s": sim.times[2],
        "simulation_s": sim.times[3],
        "agent_days_per_s": n * days / sim.times[3],
        "setup_s": sim.times[0] + sim.times[1] + sim.times[2],
        "peak_rss_bytes": parsim::peak_rss(),
        "bytes_per_agent": sim.max_rank_bytes as f64 * comm.size() as f64 / n,
        "max_rank_state_bytes": sim.max_rank_bytes,
    });
    if let Some(th) = &theory {
        metrics["theory"] = json!({
            "transmissibility": th.transmissibility,
            "r0": th.r0,
            "final_size": th.final_size,
            "growth_rate": th.growth_rate,
            "generation_interval": th.generation_interval,
        });
    }
    // Every process's peak RSS (on the threads backend the ranks share one).
    let rss = comm.all_gather(vec![parsim::peak_rss().unwrap_or(0)])?;
    if comm.rank() == 0 && ctx.outputs {
        let _io = comm.clock().enter(Phase::Io);
        std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("creating {}: {e}", out.display()))?;
        let names: Vec<String> = pop.layers.iter().map(|l| l.name.clone()).collect();
        let mut csv = String::from("day,S,E,I,R,V,new_infections,isolated,interventions\n");
        for (d, c) in res.curve.iter().enumerate() {
            let active = epidemic_plot::active_on(&cfg, &names, d as u32).join(";");
            csv.push_str(&format!("{d},{},{},{},{},{},{},{},{active}\n", c.s, c.e, c.i, c.r, c.v, c.new, c.isolated));
        }
        write_atomic(&out.join("curve.csv"), csv.as_bytes())?;
        let windows = epidemic_plot::windows(&cfg, &names);
        epidemic_plot::epidemic_png(&out.join("epidemic.png"), &res.curve, pop.agents as u64, &windows)?;
        // -q: the files are written, the summary lines are not.
        if ctx.progress {
            println!(
                "epidemic: {} agents, {} days: attack rate {:.2}%, peak day {} ({:.2}% infectious), peak incidence day {}, growth rate {}/day, R0 estimate {}",
                pop.agents,
                cfg.days,
                100.0 * o.attack_rate,
                o.peak_day,
                100.0 * o.peak_prevalence,
                o.peak_incidence_day,
                o.growth_rate.map_or("-".into(), |r| format!("{r:.4}")),
                o.r0_estimate.map_or("-".into(), |r| format!("{r:.3}")),
            );
            println!(
                "  final S {} E {} I {} R {} V {}; {:.2} M agent-days/s, {:.1} M transmission checks/s; {} cut edges, {:.0} bytes/day exchanged",
                last.s,
                last.e,
                last.i,
                last.r,
                last.v,
                n * days / sim.times[3] / 1e6,
                res.transmission_checks as f64 / sim.times[3] / 1e6,
                sim.cut_edges,
                bytes as f64 / days
            );
            // A partitioner whose cost is not repaid is said, with the alternative.
            if sim.times[1] > sim.times[3] && !matches!(setup.partitioner.as_str(), "block" | "hash") {
                println!(
                    "  note: partitioning ({}) took {:.2} s, more than the simulation's {:.2} s; partitioner = \"block\" costs nothing and, on a graph whose ids carry no locality (Erdős–Rényi), cuts about as much",
                    setup.partitioner, sim.times[1], sim.times[3]
                );
            }
            let procs: Vec<String> = if comm.backend() == "threads" {
                vec![format!("{:.2} GB", rss[0][0] as f64 / 1e9)]
            } else {
                rss.iter().map(|r| format!("{:.2} GB", r[0] as f64 / 1e9)).collect()
            };
            println!(
                "  memory: peak RSS per process {} ({:.1} bytes per agent in all); graph and state {:.1} bytes per agent; built in {:.2} s",
                procs.join(", "),
                if comm.backend() == "threads" { rss[0][0] } else { rss.iter().map(|r| r[0]).sum() } as f64 / n,
                sim.max_rank_bytes as f64 * comm.size() as f64 / n,
                sim.times[0] + sim.times[1] + sim.times[2]
            );
            println!("  curve → {}, plot → {}", out.join("curve.csv").display(), out.join("epidemic.png").display());
        }
        if ctx.verify {
            print_verify(theory.as_ref(), &o, res, &cfg);
        }
    }
    if cfg.keep_states && ctx.outputs {
        write_states(comm, &out.join("states"), res)?;
    }
    let mut outcome: parsim::Outcome = ModelOutput { digest: res.digest, metrics }.into();
    if let Some((lb, eff)) = &sim.lb {
        outcome = outcome.metric("efficiency", *eff).section("lb", serde_json::to_value(lb).unwrap_or(Value::Null));
        if ctx.outputs {
            outcome = super::balance::lines(outcome, lb, "day", &format!("mean efficiency {eff:.3}"));
            if comm.rank() == 0 && comm.size() > 1 {
                super::balance::lb_png(&out.join("lb.png"), "epidemic", "day", lb)?;
            }
        }
    }
    Ok(outcome)
}

/// Every rank writes its own agents' final states to `dir/rank-RRRRR.bin`
/// (7-byte little-endian records: u32 agent id, u8 state S/E/I/R/V = 0..4,
/// u16 infection day, 65535 for never; ascending id) and rank 0 writes
/// `dir/manifest.json` naming the pieces. No rank gathers the states.
fn write_states<C: Comm>(comm: &C, dir: &Path, res: &SeirResult) -> Result<()> {
    let _io = comm.clock().enter(Phase::Io);
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    let name = format!("rank-{:05}.bin", comm.rank());
    let mut bytes = Vec::with_capacity(7 * res.states.len());
    for &(id, st, day) in &res.states {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.push(st);
        bytes.extend_from_slice(&day.to_le_bytes());
    }
    write_atomic(&dir.join(&name), &bytes)?;
    let counts = comm.gather(0, vec![res.states.len() as u64])?;
    if let Some(counts) = counts {
        let pieces: Vec<Value> = counts
            .iter()
            .enumerate()
            .map(|(r, c)| json!({"rank": r, "file": format!("rank-{r:05}.bin"), "agents": c[0]}))
            .collect();
        let manifest = json!({
            "format": "parsim-agent-states-v1",
            "record": "u32 agent id, u8 state (0 S, 1 E, 2 I, 3 R, 4 V), u16 infection day (65535: never); little-endian, 7 bytes, ascending id within a piece",
            "agents": res.agents,
            "digest": res.digest.to_string(),
            "pieces": pieces,
        });
        write_atomic(&dir.join("manifest.json"), serde_json::to_string_pretty(&manifest)?.as_bytes())?;
    }
    Ok(())
}

fn print_verify(theory: Option<&Theory>, o: &Outcome, res: &SeirResult, cfg: &SeirConfig) {
    let Some(th) = theory else {
        println!("verify: the analytic checks assume one contact layer (a configuration-model network); this population has several");
        return;
    };
    println!(
        "verify: SEIR-net-v1 §4 for this graph's degree distribution (mean {:.4}, q = {:.4})",
        th.mean_degree, th.excess_degree
    );
    println!("  {:<34} {:>12} {:>12}", "", "theory", "simulation");
    println!("  {:<34} {:>12.5} {:>12}", "edge transmissibility T", th.transmissibility, "");
    println!("  {:<34} {:>12.4} {:>12}", "R0 = T q", th.r0, o.r0_estimate.map_or("-".into(), |r| format!("{r:.4}")));
    println!("  {:<34} {:>12.5} {:>12.5}", "final size z (attack rate)", th.final_size, o.attack_rate);
    println!(
        "  {:<34} {:>12.4} {:>12}",
        "early growth rate r (1/day)",
        th.growth_rate,
        o.growth_rate.map_or("-".into(), |r| format!("{r:.4}"))
    );
    match (o.growth_se, o.growth_window, &o.growth_missing) {
        (Some(se), Some((a, b)), _) => {
            println!("  {:<34} {:>12} {:>12}", "  ± (fit SE), fitted on days", "", format!("±{se:.4}, {a}–{b}"))
        }
        (_, _, Some(why)) => println!("  (no growth rate, so no R0 from it: {why})"),
        _ => {}
    }
    if o.growth_rate.is_some() {
        println!(
            "  (the fit SE understates the spread: daily cumulative counts are correlated; compare the growth rate \
             over seeds, e.g. with a sweep)"
        );
    }
    println!("  {:<34} {:>12.3} {:>12}", "mean generation interval (days)", th.generation_interval, "");
    if cfg.vaccination.is_some() || cfg.isolation.is_some() || !cfg.closures.is_empty() {
        println!("  (interventions are active: the theory describes the epidemic without them)");
    }
    println!("  attack rate by degree: {:>4} {:>10} {:>10} {:>10}", "k", "agents", "theory", "simulation");
    for (k, count, a) in report::attack_by_degree(res, 1000) {
        println!("  {:>26} {:>10} {:>10.4} {:>10.4}", k, count, th.attack_rate_at_degree(k), a);
    }
}

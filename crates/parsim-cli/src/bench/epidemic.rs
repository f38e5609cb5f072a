//! `parsim bench epidemic`: SEIR-net-v1 variant A on Erdős–Rényi N = 10⁶,
//! c = 10, 180 days — wall time, agent-days and transmission checks per
//! second, memory per agent, bytes exchanged per day against the edge cut —
//! at 1 and 2 ranks, each ratio against the 1-rank run measured in the same
//! invocation. Under MPI (`mpirun -n R parsim bench epidemic --backend mpi`)
//! it measures the world's ranks against a 1-rank threads run in rank 0's
//! process. On threads it then runs a plain sequential program with
//! parsim's own draws (`bench/epidemic_ref.rs`) against parsim
//! on one rank, as alternating child processes: construction (wall and
//! CPU), the 180 days and peak RSS, and both must end with the same digest.

use super::epidemic_ref as plain;
use super::median;
use std::path::PathBuf;

use anyhow::{bail, Result};
#[cfg(feature = "mpi")]
use parsim_comm::Comm;
use serde::Serialize;

use crate::models::epidemic::{self as abm, AbmSetup, Simulated};
use parsim::{write_atomic, Backend};

/// The command's flags.
pub struct Args {
    /// Agents.
    pub agents: usize,
    /// Only this rank count.
    pub ranks: Option<usize>,
    /// The backend.
    pub backend: Backend,
    /// Repetitions.
    pub reps: usize,
    /// The JSON report.
    pub out: PathBuf,
    /// A small population.
    pub quick: bool,
    /// Internal: measure one run in this process (`ref` or `parsim`) and print it as JSON.
    pub child: Option<String>,
}

/// One measured configuration (medians over the repetitions).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `threads` or `mpi`.
    pub backend: String,
    /// Ranks.
    pub ranks: usize,
    /// Agents.
    pub agents: usize,
    /// Simulation wall time (180 days), seconds.
    pub simulation_s: f64,
    /// Partition + local graph build, seconds.
    pub setup_s: f64,
    /// Agent-days per second, millions.
    pub agent_days_m: f64,
    /// Transmission checks per second, millions.
    pub checks_m: f64,
    /// 1-rank simulation time over this one.
    pub speedup: f64,
    /// Cut edges.
    pub cut_edges: u64,
    /// Bytes sent between ranks per day (all ranks).
    pub bytes_per_day: f64,
    /// … per cut edge.
    pub bytes_per_cut_edge_day: f64,
    /// Local graph bytes per agent (all ranks).
    pub graph_bytes_per_agent: f64,
    /// Peak resident memory of the process per agent, bytes.
    pub peak_rss_per_agent: f64,
    /// The digest.
    pub digest: String,
}

fn row(backend: &str, ranks: usize, agents: usize, runs: &[Simulated], base: f64) -> Row {
    let sim = median(runs.iter().map(|s| s.times[3]).collect());
    let setup = median(runs.iter().map(|s| s.times[1] + s.times[2]).collect());
    let r = &runs[0];
    let bytes = [r.bytes_sent, r.local_graph_bytes];
    let days = r.result.curve.len() as f64;
    Row {
        backend: backend.to_string(),
        ranks,
        agents,
        simulation_s: sim,
        setup_s: setup,
        agent_days_m: agents as f64 * days / sim / 1e6,
        checks_m: r.result.transmission_checks as f64 / sim / 1e6,
        speedup: if base > 0.0 { base / sim } else { 1.0 },
        cut_edges: r.cut_edges,
        bytes_per_day: bytes[0] as f64 / days,
        bytes_per_cut_edge_day: if r.cut_edges > 0 { bytes[0] as f64 / days / r.cut_edges as f64 } else { 0.0 },
        graph_bytes_per_agent: bytes[1] as f64 / agents as f64,
        peak_rss_per_agent: parsim::peak_rss().map_or(0.0, |b| b as f64 / agents as f64),
        digest: r.result.digest.to_string(),
    }
}

fn print_header() {
    println!(
        "{:>8} {:>5} {:>11} {:>8} {:>8} {:>10} {:>9} {:>7} {:>10} {:>11} {:>8} {:>8} {:>8}",
        "backend",
        "ranks",
        "agents",
        "sim s",
        "setup s",
        "M ag-d/s",
        "M chk/s",
        "×1rank",
        "cut edges",
        "bytes/day",
        "B/cut/d",
        "graph B",
        "RSS B"
    );
}

fn print_row(r: &Row) {
    println!(
        "{:>8} {:>5} {:>11} {:>8.3} {:>8.3} {:>10.1} {:>9.1} {:>7.2} {:>10} {:>11.0} {:>8.2} {:>8.1} {:>8.1}",
        r.backend,
        r.ranks,
        r.agents,
        r.simulation_s,
        r.setup_s,
        r.agent_days_m,
        r.checks_m,
        r.speedup,
        r.cut_edges,
        r.bytes_per_day,
        r.bytes_per_cut_edge_day,
        r.graph_bytes_per_agent,
        r.peak_rss_per_agent
    );
}

/// Runs the benchmark.
pub fn run(a: Args) -> Result<()> {
    if a.ranks == Some(0) {
        return Err(parsim::InputError::flag("--ranks 0", "the number of ranks must be at least 1").into());
    }
    if a.agents == 0 {
        return Err(parsim::InputError::flag("--agents 0", "at least one agent").into());
    }
    let agents = if a.quick { 50_000 } else { a.agents };
    if let Some(why) = AbmSetup::erdos_renyi(agents, 10.0, 42).memory_shortfall(1, 1) {
        return Err(parsim::InputError::flag(&format!("--agents {agents}"), why).into());
    }
    let setup = AbmSetup::erdos_renyi(agents, 10.0, 42);
    let seed = 1;
    if let Some(what) = &a.child {
        return plain::child(what, &setup, seed);
    }
    println!(
        "ER population: {agents} agents, mean degree 10; every run builds its own shares (each rank only its block, {} threads)",
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    match a.backend {
        Backend::Threads => {
            let counts = a.ranks.map_or(vec![1, 2], |r| vec![r]);
            let mut samples: Vec<Vec<Simulated>> = (0..counts.len()).map(|_| Vec::new()).collect();
            for _ in 0..a.reps {
                for (i, &r) in counts.iter().enumerate() {
                    let s = parsim_comm::launch(r, |comm| {
                        abm::simulate(&comm, &setup, seed, false).map_err(|e| format!("{e:#}"))
                    })
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                    samples[i].push(s.into_iter().next().expect("rank 0"));
                }
            }
            let base = if counts[0] == 1 { median(samples[0].iter().map(|s| s.times[3]).collect()) } else { 0.0 };
            print_header();
            for (i, &r) in counts.iter().enumerate() {
                let one = std::mem::take(&mut samples[i]);
                let row = row("threads", r, agents, &one, base);
                print_row(&row);
                rows.push(row);
            }
        }
        Backend::Mpi => rows = run_mpi(&setup, agents, seed, a.reps)?,
    }
    if let Some(first) = rows.first() {
        if rows.iter().any(|r| r.digest != first.digest) {
            bail!("the rank counts disagree on the digest");
        }
        println!("digest {} at every rank count", first.digest);
        let reference = match (a.backend, a.ranks) {
            (Backend::Threads, None | Some(1)) => Some(plain::compare(agents, a.reps, &first.digest)?),
            _ => None,
        };
        let report = serde_json::json!({ "rows": rows, "reference": reference });
        write_atomic(&a.out, serde_json::to_string_pretty(&report)?.as_bytes())?;
        println!("→ {}", a.out.display());
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn run_mpi(setup: &AbmSetup, agents: usize, seed: u64, reps: usize) -> Result<Vec<Row>> {
    let rows = parsim_comm::mpi::launch(|comm| {
        let mut runs = Vec::new();
        for _ in 0..reps {
            runs.push(abm::simulate(&comm, setup, seed, false).map_err(|e| format!("{e:#}"))?);
        }
        // Rank 0 measures a 1-rank threads run in its own process as the reference.
        let base = if comm.rank() == 0 {
            let mut t = Vec::new();
            for _ in 0..reps {
                let s = parsim_comm::launch(1, |c| abm::simulate(&c, setup, seed, false).map_err(|e| format!("{e:#}")))
                    .map_err(|e| e.to_string())?;
                t.push(s[0].times[3]);
            }
            median(t)
        } else {
            0.0
        };
        let r = row("mpi", comm.size(), agents, &runs, base);
        if comm.rank() == 0 {
            print_header();
            print_row(&r);
            Ok::<_, String>(vec![r])
        } else {
            Ok(Vec::new())
        }
    })?;
    Ok(rows)
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_setup: &AbmSetup, _agents: usize, _seed: u64, _reps: usize) -> Result<Vec<Row>> {
    bail!(parsim::InputError::flag("--backend mpi", "this parsim was built without MPI; rebuild with --features mpi"))
}

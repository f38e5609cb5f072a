//! `parsim bench phold`: committed events per second of every engine on the
//! PHOLD "std" configuration (shared/specs/phold.md), at 1 and 2 ranks,
//! next to parsim's own sequential engine measured in the same run.

use super::median;
use std::path::PathBuf;

use anyhow::{bail, Result};
use parsim_des::models::Phold;
use parsim_des::queue::{QuadHeap, StdHeap};
use parsim_des::{DesConfig, DesStats, Engine};
use serde::{Deserialize, Serialize};

use parsim::write_atomic;

/// One measured configuration (medians over the repetitions).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// PHOLD's remote fraction.
    pub remote: f64,
    /// Engine name (`sequential/4-heap`, `sequential/std-heap`: the sequential engine on another pending set).
    pub engine: String,
    /// Ranks (threads backend).
    pub ranks: usize,
    /// Committed events.
    pub committed: u64,
    /// Committed events per second of the main loop (median), millions.
    pub rate_m: f64,
    /// Committed events per second of the whole run (median), millions.
    pub rate_total_m: f64,
    /// `rate_m` over the sequential engine's in the same run.
    pub vs_sequential: f64,
    /// Time Warp efficiency (1 − rolled back / committed).
    pub efficiency: f64,
    /// Rollbacks (primary + secondary).
    pub rollbacks: u64,
    /// Null messages (conservative).
    pub null_messages: u64,
    /// Null messages per real remote event (conservative).
    pub null_ratio: f64,
    /// GVT rounds or windows.
    pub gvt_rounds: u64,
    /// The committed-event digest.
    pub digest: String,
}

fn once(phold: &Phold, engine: &str, ranks: usize) -> Result<(DesStats, String)> {
    let cfg = DesConfig::new(Engine::parse(engine.split('/').next().unwrap_or(engine)).unwrap_or(Engine::Sequential));
    let reports = parsim_comm::launch(ranks, |comm| match engine {
        "sequential/std-heap" => parsim_des::run_sequential_with::<_, _, StdHeap<()>>(&comm, phold, &cfg),
        "sequential/4-heap" => parsim_des::run_sequential_with::<_, _, QuadHeap<()>>(&comm, phold, &cfg),
        _ => parsim_des::run(&comm, phold, &cfg),
    })?;
    Ok((reports[0].total.clone(), reports[0].digest.to_string()))
}

/// Runs the benchmark and prints the table.
pub fn run(out: PathBuf, quick: bool, reps: usize) -> Result<()> {
    let mut rows = Vec::new();
    let configs: Vec<(&str, usize)> = vec![
        ("sequential", 1),
        ("sequential/4-heap", 1),
        ("sequential/std-heap", 1),
        ("conservative", 1),
        ("conservative", 2),
        ("window", 1),
        ("window", 2),
        ("optimistic", 1),
        ("optimistic", 2),
    ];
    println!(
        "{:>6} {:>20} {:>5} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>7}",
        "remote",
        "engine",
        "ranks",
        "committed",
        "Mev/s",
        "Mev/s all",
        "×seq",
        "effic.",
        "rollbacks",
        "nulls",
        "rounds"
    );
    for remote in [0.25, 0.10] {
        let mut phold = Phold::std(remote);
        if quick {
            phold.lps = 128;
            phold.end = 20.0;
        }
        // Interleave the repetitions so that machine noise spreads over all configurations.
        let mut samples: Vec<Vec<(DesStats, String)>> = vec![Vec::new(); configs.len()];
        for _ in 0..reps {
            for (i, (engine, ranks)) in configs.iter().enumerate() {
                samples[i].push(once(&phold, engine, *ranks)?);
            }
        }
        let digest = samples[0][0].1.clone();
        let seq_rate = median(samples[0].iter().map(|(s, _)| s.rate_main_loop()).collect());
        for (i, (engine, ranks)) in configs.iter().enumerate() {
            let s = &samples[i];
            if s.iter().any(|(_, d)| *d != digest) {
                bail!("{engine} on {ranks} ranks committed a different history (digest) than sequential");
            }
            let rate = median(s.iter().map(|(x, _)| x.rate_main_loop()).collect());
            let total = median(s.iter().map(|(x, _)| x.rate_total()).collect());
            let last = &s[s.len() / 2].0;
            let row = Row {
                remote,
                engine: engine.to_string(),
                ranks: *ranks,
                committed: last.committed,
                rate_m: rate / 1e6,
                rate_total_m: total / 1e6,
                vs_sequential: rate / seq_rate,
                efficiency: median(s.iter().map(|(x, _)| x.efficiency()).collect()),
                rollbacks: last.rollbacks_primary + last.rollbacks_secondary,
                null_messages: last.null_messages,
                null_ratio: last.null_ratio(),
                gvt_rounds: last.gvt_rounds,
                digest: digest.clone(),
            };
            println!(
                "{:>6.2} {:>20} {:>5} {:>9} {:>9.2} {:>9.2} {:>7.2} {:>9.4} {:>9} {:>7} {:>7}",
                row.remote,
                row.engine,
                row.ranks,
                row.committed,
                row.rate_m,
                row.rate_total_m,
                row.vs_sequential,
                row.efficiency,
                row.rollbacks,
                row.null_messages,
                row.gvt_rounds
            );
            rows.push(row);
        }
    }
    println!("all engines committed the same history (digests equal per remote fraction)");
    write_atomic(&out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    println!("→ {}", out.display());
    Ok(())
}

//! The reference `parsim bench epidemic` measures parsim against: the
//! SEIR-net-v1 variant A epidemic on G(N, M) as a plain sequential program
//! writes it, in Rust, outside the engine — no ranks, no partition, no
//! ghosts, no exchange.
//!
//! - **Construction**: the same G(N, M) pairs ([`er_pair`]) generated twice,
//!   once to count degrees and once to fill a `u32` CSR (no pair list is
//!   kept), then each row sorted, self-loops and duplicates removed in place.
//! - **State**: one byte per agent, its infection day as `u16`, and per-day
//!   lists of pending onsets, exits and infection attempts.
//! - **Algorithm**: parsim's own — when an agent becomes infectious, one
//!   Bernoulli draw per susceptible neighbour and infectious day until the
//!   first success, the day's draw being word `t mod 4` of the Philox block
//!   keyed by (seed, ⌊t/4⌋, transmit, source, target) — so the run ends with
//!   parsim's digest bit for bit, which the benchmark checks.

use std::time::Instant;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::{cpu_s, median, Who};
use crate::models::epidemic::{AbmSetup, Source};
use parsim_abm::population::{er_pair, er_pairs};
use parsim_abm::{seir, SeirConfig, Variant};
use parsim_core::rng::philox4x32_10;
use parsim_core::{Digest, Digester, SetDigest};

const S: u8 = 0;
const E: u8 = 1;
const I: u8 = 2;
const R: u8 = 3;
/// The draw kind of a transmission (parsim's `K_TRANSMIT`).
const K_TRANSMIT: u32 = 1;
const NEVER: u16 = u16::MAX;

/// A contact network as a plain `u32` CSR.
pub struct Graph {
    off: Vec<u32>,
    adj: Vec<u32>,
}

impl Graph {
    /// G(N = `n`, M = round(`n`·`c`/2)) from `seed`, self-loops and duplicates dropped.
    pub fn erdos_renyi(n: usize, c: f64, seed: u64) -> Result<Graph> {
        let m = er_pairs(n, c);
        if 2 * m >= u64::from(u32::MAX) {
            bail!("the reference holds at most 2^32 - 1 adjacency entries");
        }
        let mut off = vec![0u32; n + 1];
        for i in 0..m {
            let (u, v) = er_pair(n, seed, i);
            if u != v {
                off[u as usize + 1] += 1;
                off[v as usize + 1] += 1;
            }
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut adj = vec![0u32; off[n] as usize];
        let mut at: Vec<u32> = off[..n].to_vec();
        for i in 0..m {
            let (u, v) = er_pair(n, seed, i);
            if u != v {
                adj[at[u as usize] as usize] = v;
                at[u as usize] += 1;
                adj[at[v as usize] as usize] = u;
                at[v as usize] += 1;
            }
        }
        drop(at);
        // Sort each row and compact it without duplicates, in place.
        let mut w = 0usize;
        let mut start = 0usize;
        for i in 0..n {
            let end = off[i + 1] as usize;
            let row = &mut adj[start..end];
            row.sort_unstable();
            off[i] = w as u32;
            let mut last = u32::MAX;
            for k in start..end {
                let x = adj[k];
                if x != last {
                    adj[w] = x;
                    w += 1;
                    last = x;
                }
            }
            start = end;
        }
        off[n] = w as u32;
        adj.truncate(w);
        adj.shrink_to_fit();
        Ok(Graph { off, adj })
    }
}

/// What a reference run gives back.
pub struct Outcome {
    /// The digest, computed as parsim computes it.
    pub digest: Digest,
    /// Seconds in the day loop.
    pub loop_s: f64,
    /// Agents ever infected.
    pub infected: u64,
}

/// Runs `cfg` (variant A, no closures, isolation or vaccination) on `g`.
pub fn run(g: &Graph, cfg: &SeirConfig) -> Result<Outcome> {
    let (latent, infectious) = match cfg.variant {
        Variant::Fixed { latent, infectious } => (latent, infectious),
        Variant::Markov { .. } => bail!("the reference runs variant A"),
    };
    if !cfg.closures.is_empty() || cfg.isolation.is_some() || cfg.vaccination.is_some() {
        bail!("the reference runs no closures, isolation or vaccination");
    }
    let n = g.off.len() - 1;
    let key = [cfg.seed as u32, (cfg.seed >> 32) as u32];
    let thr = (cfg.beta.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64;
    let days = cfg.days;
    let nd = days as usize;
    let t0 = Instant::now();
    let mut st = vec![S; n];
    let mut inf_day = vec![NEVER; n];
    let mut onset_at: Vec<Vec<u32>> = vec![Vec::new(); nd];
    let mut exit_at: Vec<Vec<u32>> = vec![Vec::new(); nd];
    let mut attempts: Vec<Vec<u32>> = vec![Vec::new(); nd];
    let [mut s, mut e, mut i, mut r] = [n as u64, 0, 0, 0];
    let mut d = Digester::new();
    d.write_str("seir-net-v1");
    for day in 0..days {
        let mut new = 0u64;
        let t = day as usize;
        if day == 0 {
            for a in seir::seeds(n, cfg.seeds, cfg.seed) {
                st[a as usize] = E;
                inf_day[a as usize] = 0;
                (s, e, new) = (s - 1, e + 1, new + 1);
                if latent < days {
                    onset_at[latent as usize].push(a);
                }
            }
        }
        for a in std::mem::take(&mut exit_at[t]) {
            st[a as usize] = R;
            (i, r) = (i - 1, r + 1);
        }
        for a in std::mem::take(&mut onset_at[t]) {
            st[a as usize] = I;
            (e, i) = (e - 1, i + 1);
            let exit = day + infectious;
            if (exit as usize) < nd {
                exit_at[exit as usize].push(a);
            }
            let last = exit.min(days);
            for &j in &g.adj[g.off[a as usize] as usize..g.off[a as usize + 1] as usize] {
                if st[j as usize] != S {
                    continue;
                }
                // The first day whose draw succeeds.
                let mut block = [0u32; 4];
                let mut have = u32::MAX;
                for t in day..last {
                    if t >> 2 != have {
                        have = t >> 2;
                        block = philox4x32_10([have, K_TRANSMIT, a, j], key);
                    }
                    if u64::from(block[(t & 3) as usize]) < thr {
                        attempts[t as usize].push(j);
                        break;
                    }
                }
            }
        }
        for j in std::mem::take(&mut attempts[t]) {
            if st[j as usize] == S {
                st[j as usize] = E;
                inf_day[j as usize] = day as u16;
                (s, e, new) = (s - 1, e + 1, new + 1);
                let o = day + latent;
                if (o as usize) < nd {
                    onset_at[o as usize].push(j);
                }
            }
        }
        for x in [s, e, i, r, 0, new, 0] {
            d.write_u64(x);
        }
    }
    let loop_s = t0.elapsed().as_secs_f64();
    let mut sd = SetDigest::new();
    for a in 0..n {
        sd.add(a as u64, u64::from(st[a]) | u64::from(inf_day[a]) << 8);
    }
    let mut all = SetDigest::new();
    all.merge(&sd);
    d.write_u64(all.parts[0]);
    d.write_u64(all.parts[1]);
    Ok(Outcome { digest: d.finish(), loop_s, infected: inf_day.iter().filter(|&&x| x != NEVER).count() as u64 })
}

/// One measured run, as a child process reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    /// Construction wall seconds (the network and whatever the run derives from it).
    pub build_s: f64,
    /// Construction CPU seconds, all threads.
    pub build_cpu_s: f64,
    /// The 180 days, wall seconds.
    pub loop_s: f64,
    /// The process's peak resident memory, bytes.
    pub peak_rss: u64,
    /// Agents ever infected.
    pub infected: u64,
    /// The run's digest.
    pub digest: String,
}

/// `parsim bench epidemic --child ref|parsim`: one run of the plain program
/// or of parsim on one rank (construction as `parsim run` builds it: the
/// rank's share of G(N, M) and the epidemic's layout), printed as one JSON line.
pub fn child(what: &str, setup: &AbmSetup, seed: u64) -> Result<()> {
    let Source::ErdosRenyi(c) = setup.source else { bail!("the reference builds Erdős–Rényi networks") };
    let graph_seed = setup.graph_seed.unwrap_or(seed);
    let cfg = SeirConfig { seed, ..setup.cfg.clone() };
    let (c0, t0) = (cpu_s(Who::Me), Instant::now());
    let m = match what {
        "ref" => {
            let g = Graph::erdos_renyi(setup.agents, c, graph_seed)?;
            let (build_s, build_cpu_s) = (t0.elapsed().as_secs_f64(), cpu_s(Who::Me) - c0);
            let out = run(&g, &cfg)?;
            let (loop_s, infected, digest) = (out.loop_s, out.infected, out.digest.to_string());
            Measured { build_s, build_cpu_s, loop_s, peak_rss: 0, infected, digest }
        }
        "parsim" => {
            let got = parsim_comm::launch(1, |comm| {
                let go = || -> Result<Measured> {
                    let local = setup.build_local(&comm, seed)?;
                    let layout = seir::Layout::new(&local.graph);
                    let (build_s, build_cpu_s) = (t0.elapsed().as_secs_f64(), cpu_s(Who::Me) - c0);
                    let t1 = Instant::now();
                    let res = seir::run_on(&comm, &local.layers, &layout, &cfg, None)?;
                    let loop_s = t1.elapsed().as_secs_f64();
                    let end = res.curve.last().copied().unwrap_or_default();
                    let infected = res.agents - end.s - end.v;
                    let digest = res.digest.to_string();
                    Ok(Measured { build_s, build_cpu_s, loop_s, peak_rss: 0, infected, digest })
                };
                go().map_err(|e| format!("{e:#}"))
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            got.into_iter().next().expect("rank 0")
        }
        _ => bail!("--child takes ref or parsim"),
    };
    let m = Measured { peak_rss: parsim::peak_rss().unwrap_or(0), ..m };
    println!("{}", serde_json::to_string(&m)?);
    Ok(())
}

/// Runs the plain program and parsim on one rank as alternating child
/// processes, `reps` times each; prints their medians side by side and
/// fails unless both end with `digest`.
pub fn compare(agents: usize, reps: usize, digest: &str) -> Result<serde_json::Value> {
    let exe = std::env::current_exe()?;
    let one = |what: &str| -> Result<Measured> {
        let out = std::process::Command::new(&exe)
            .args(["bench", "epidemic", "--agents", &agents.to_string(), "--child", what])
            .output()?;
        if !out.status.success() {
            bail!("the {what} run failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().last().unwrap_or("");
        Ok(serde_json::from_str(line)?)
    };
    let (mut refs, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        refs.push(one("ref")?);
        ours.push(one("parsim")?);
    }
    for m in refs.iter().chain(&ours) {
        if m.digest != digest {
            bail!("a run ended with digest {}, not {digest}: the plain program and parsim disagree", m.digest);
        }
    }
    let med = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
    type Field = (&'static str, fn(&Measured) -> f64);
    let fields: [Field; 4] = [
        ("construction wall s", |m| m.build_s),
        ("construction CPU s", |m| m.build_cpu_s),
        ("180 days s", |m| m.loop_s),
        ("peak RSS MB", |m| m.peak_rss as f64 / 1e6),
    ];
    println!("\nattack rate {:.5} in every run", refs[0].infected as f64 / agents as f64);
    println!("against a plain sequential program (same draws, same digest; separate processes, median of {reps}):");
    println!("{:>22} {:>10} {:>10} {:>8}", "", "plain", "parsim", "ratio");
    let mut report = serde_json::Map::new();
    for (name, f) in fields {
        let (r, p) = (med(&refs, f), med(&ours, f));
        println!("{name:>22} {r:>10.3} {p:>10.3} {:>8.2}", p / r);
        report.insert(name.to_string(), serde_json::json!({ "plain": r, "parsim": p, "ratio": p / r }));
    }
    Ok(serde_json::Value::Object(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::epidemic as abm;

    #[test]
    fn the_reference_ends_with_parsims_digest() {
        let setup = AbmSetup::erdos_renyi(20_000, 10.0, 42);
        let g = Graph::erdos_renyi(20_000, 10.0, 42).unwrap();
        let cfg = SeirConfig { seed: 3, days: 120, ..setup.cfg.clone() };
        let plain = run(&g, &cfg).unwrap();
        assert!(plain.infected > 10_000, "the epidemic took off: {}", plain.infected);
        let setup = AbmSetup { cfg: cfg.clone(), ..setup };
        for ranks in [1, 2] {
            let got =
                parsim_comm::launch(ranks, |comm| abm::simulate(&comm, &setup, 3, false).map(|s| s.result.digest))
                    .unwrap();
            assert_eq!(got[0], plain.digest, "{ranks} rank(s)");
        }
    }
}

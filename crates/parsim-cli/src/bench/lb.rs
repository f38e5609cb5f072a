//! `parsim bench lb`: the gathering crowd on 2 ranks with balancing off and
//! under each strategy (wall time, mean efficiency = mean/max compute per
//! step, migrated bytes, the cost of deciding and migrating), the same with
//! rank 1 made twice as slow; the same for the reaction front on a tiled
//! grid; interest management's updates against the
//! broadcast the same run would need; and the framework's overhead at one
//! rank against a plain sequential loop over the same model.

use super::median;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use parsim_abm::space::{self, crowd::Crowd, Agent, Ctx, Domain, Near, Rule, SpaceConfig};
use parsim_core::rng::StreamKey;
use parsim_lb::{Strategy, When};
use serde_json::{json, Value};

use parsim::write_atomic;

const STRATEGIES: [Strategy; 7] = [
    Strategy::Off,
    Strategy::Sfc,
    Strategy::Diffusive,
    Strategy::Graph,
    Strategy::Greedy,
    Strategy::Refine,
    Strategy::Steal,
];

/// A crowd of `agents` at one agent per m² in a square box.
fn crowd_domain(agents: u64) -> Domain {
    let side = (agents as f64).sqrt().max(20.0);
    let chunks = ((side / 12.0).round() as u32).clamp(4, 64);
    Domain::new(2, [side, side, 1.0], false, 1.0, [chunks, chunks, 1]).expect("a valid crowd box")
}

fn crowd_rule(steps: u64) -> Crowd {
    Crowd { opens: steps / 20, ..Crowd { dt: 0.25, ..Crowd::default() } }
}

struct Run {
    wall: f64,
    efficiency: f64,
    bytes: u64,
    lb_s: f64,
    rebalances: u64,
    lambda: f64,
    digest: String,
}

fn crowd(d: &Domain, agents: u64, steps: u64, strategy: Strategy, slow: Option<(usize, f64)>) -> Result<Run> {
    let rule = crowd_rule(steps);
    let mut cfg = SpaceConfig { agents, steps, seed: 1, slow, ..SpaceConfig::default() };
    cfg.lb.strategy = strategy;
    cfg.lb.every = 10;
    cfg.lb.when = When::Threshold;
    cfg.lb.threshold = 1.05;
    let t = Instant::now();
    let out = parsim_comm::launch(2, |c| space::run(&c, d, &rule, &cfg, &mut |_| Ok(())))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let wall = t.elapsed().as_secs_f64();
    let r = &out[0];
    Ok(Run::of(wall, r.stats.efficiency, &r.lb, r.digest.to_string()))
}

impl Run {
    fn of(wall: f64, efficiency: f64, lb: &parsim_lb::Stats, digest: String) -> Run {
        let lams: Vec<f64> = lb.lambda.iter().map(|x| x.1).collect();
        Run {
            wall,
            efficiency,
            bytes: lb.bytes_migrated,
            lb_s: lb.decide_s + lb.migrate_s,
            rebalances: lb.rebalances,
            lambda: lams.iter().sum::<f64>() / lams.len().max(1) as f64,
            digest,
        }
    }
}

/// The reaction front on a `n`² grid of 32² tiles, 2 ranks.
fn front(n: usize, steps: u64, strategy: Strategy, slow: Option<(usize, f64)>) -> Result<Run> {
    use parsim_grid::tiles::{self, TileSpec};
    let mut spec = TileSpec::new(vec![n, n], vec![32, 32], steps);
    spec.boundary = vec![parsim_grid::Boundary::Neumann];
    spec.lb.strategy = strategy;
    spec.lb.every = 10;
    spec.lb.when = When::Threshold;
    spec.lb.threshold = 1.05;
    spec.slow = slow;
    let init = |g: [usize; 3]| if g[2] < 4 { 1.0 } else { 0.0 };
    let t = Instant::now();
    let out = parsim_comm::launch(2, |c| tiles::run(&c, &spec, &parsim_grid::Front::default(), &init))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let wall = t.elapsed().as_secs_f64();
    let r = &out[0];
    Ok(Run::of(wall, r.efficiency, &r.lb, r.digest.to_string()))
}

/// Each strategy against `off`, alternating, medians of `reps`.
fn strategies(reps: usize, which: &[Strategy], one: &dyn Fn(Strategy) -> Result<Run>) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    let mut reference: Option<String> = None;
    for &s in which {
        let (mut wall, mut base, mut eff, mut lbs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut last = None;
        for _ in 0..reps {
            let off = one(Strategy::Off)?;
            let r = one(s)?;
            if reference.get_or_insert_with(|| off.digest.clone()) != &r.digest || off.digest != r.digest {
                bail!("{s:?}: digest {} differs from balancing off ({})", r.digest, off.digest);
            }
            base.push(off.wall);
            wall.push(r.wall);
            eff.push(r.efficiency);
            lbs.push(r.lb_s / r.wall);
            last = Some(r);
        }
        let r = last.expect("reps >= 1");
        let (w, b) = (median(wall), median(base));
        let row = json!({
            "strategy": format!("{s:?}").to_lowercase(),
            "wall_s": w,
            "wall_off_s": b,
            "speedup_vs_off": b / w,
            "efficiency": median(eff),
            "lambda_mean": r.lambda,
            "rebalances": r.rebalances,
            "migrated_bytes": r.bytes,
            "lb_fraction": median(lbs),
        });
        println!(
            "  {:<10} wall {:>7.3} s vs {:>7.3} s off: {:>5.2}×; efficiency {:.3}; λ mean {:.3}; {:>3} rebalances, {:>8.1} kB moved; decide + migrate {:.2} % of the run",
            row["strategy"].as_str().unwrap_or(""),
            w,
            b,
            b / w,
            row["efficiency"].as_f64().unwrap_or(0.0),
            r.lambda,
            r.rebalances,
            r.bytes as f64 / 1e3,
            100.0 * row["lb_fraction"].as_f64().unwrap_or(0.0)
        );
        rows.push(row);
    }
    Ok(rows)
}

/// Ghost updates against the broadcast, at a fixed density, for each size
/// and rank count.
fn interest(sizes: &[u64]) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    for &n in sizes {
        let d = crowd_domain(n);
        for p in [2usize, 4, 8] {
            let cfg = SpaceConfig { agents: n, steps: 3, seed: 1, ..SpaceConfig::default() };
            let rule = crowd_rule(1000);
            let out = parsim_comm::launch(p, |c| space::run(&c, &d, &rule, &cfg, &mut |_| Ok(())))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let st = &out[0].stats;
            let ratio = st.ghost_updates as f64 / st.broadcast_updates.max(1) as f64;
            // The perceived fraction: a rank's subscription (its chunks plus a
            // cell) over the rest of the space, averaged over ranks.
            let cells = d.n_cells() as f64;
            let owner = parsim_lb::strategy::initial(&d.lb_chunks(), p);
            let routing = space::ddm::Routing::new(&d, &owner, p);
            let subscribed: f64 = (0..d.n_cells()).map(|c| routing.subscribers(c).len() as f64).sum();
            let perceived = (subscribed - cells) / (cells * (p as f64 - 1.0));
            println!(
                "  {n:>8} agents, {p} ranks: {:>9} ghost updates vs {:>10} broadcast = {:.4} (perceived fraction {:.4}); matching {:.2} ms",
                st.ghost_updates,
                st.broadcast_updates,
                ratio,
                perceived,
                st.match_s * 1e3
            );
            rows.push(json!({
                "agents": n, "ranks": p, "ghost_updates": st.ghost_updates, "broadcast_updates": st.broadcast_updates,
                "ratio": ratio, "perceived_fraction": perceived, "ghost_bytes": st.ghost_bytes, "matching_s": st.match_s,
            }));
        }
    }
    Ok(rows)
}

/// The same crowd as a plain sequential loop: a Vec of agents, a cell
/// list rebuilt each step, neighbours in id order, the same rule.
fn plain(d: &Domain, rule: &Crowd, agents: u64, steps: u64, seed: u64) -> Vec<Agent<<Crowd as Rule>::State>> {
    let key = StreamKey::new(seed).purpose("parsim.space");
    let mut all: Vec<Agent<_>> = (0..agents).map(|id| rule.init(id, d, &mut key.with(id).stream())).collect();
    let [nx, ny, _] = d.cells();
    let (nx, ny) = (nx as i64, ny as i64);
    let side = d.cell_side();
    let cell = |p: &[f64; 3]| {
        let x = ((p[0] / side[0]) as i64).clamp(0, nx - 1);
        let y = ((p[1] / side[1]) as i64).clamp(0, ny - 1);
        (x, y)
    };
    let r2 = d.radius * d.radius;
    let mut bins: Vec<Vec<u32>> = vec![Vec::new(); (nx * ny) as usize];
    for step in 0..steps {
        let mut near = Vec::new();
        bins.iter_mut().for_each(Vec::clear);
        for (i, a) in all.iter().enumerate() {
            let (x, y) = cell(&a.pos);
            bins[(y * nx + x) as usize].push(i as u32);
        }
        let mut next = Vec::with_capacity(all.len());
        for me in &all {
            let (x, y) = cell(&me.pos);
            near.clear();
            for yy in (y - 1).max(0)..=(y + 1).min(ny - 1) {
                for xx in (x - 1).max(0)..=(x + 1).min(nx - 1) {
                    for &j in &bins[(yy * nx + xx) as usize] {
                        let o = &all[j as usize];
                        let dv = [o.pos[0] - me.pos[0], o.pos[1] - me.pos[1], 0.0];
                        let dd = dv[0] * dv[0] + dv[1] * dv[1];
                        if o.id != me.id && dd <= r2 {
                            near.push(Near { agent: o, d: dv, dist: dd.sqrt() });
                        }
                    }
                }
            }
            near.sort_unstable_by_key(|n| n.agent.id);
            let mut ctx = Ctx { step, domain: d, rng: key.with(me.id).with(step + 1).stream() };
            let mut a = rule.step(me, &near, &mut ctx);
            d.contain(&mut a.pos, &mut a.vel);
            next.push(a);
        }
        all = next;
    }
    all
}

/// Agent updates per second: parsim at 1 and 2 ranks against the plain loop.
fn overhead(agents: u64, steps: u64, reps: usize) -> Result<Value> {
    let d = crowd_domain(agents);
    let rule = crowd_rule(steps);
    let cfg = SpaceConfig { agents, steps, seed: 1, ..SpaceConfig::default() };
    let (mut tp, mut t1, mut t2) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        let mut seq = plain(&d, &rule, agents, steps, 1);
        tp.push(t.elapsed().as_secs_f64());
        for (p, times) in [(1usize, &mut t1), (2, &mut t2)] {
            let t = Instant::now();
            let out = parsim_comm::launch(p, |c| space::run(&c, &d, &rule, &cfg, &mut |_| Ok(())).map(|r| r.agents))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            times.push(t.elapsed().as_secs_f64());
            let mut got: Vec<_> = out.into_iter().flatten().collect();
            got.sort_by_key(|a| a.id);
            seq.sort_by_key(|a| a.id);
            if got != seq {
                bail!("parsim at {p} rank(s) and the plain loop disagree");
            }
        }
    }
    let (p, a, b) = (median(tp), median(t1), median(t2));
    let ups = |t: f64| agents as f64 * steps as f64 / t;
    println!(
        "  plain loop {:.3e} updates/s; parsim 1 rank {:.3e} ({:.3}× the loop's time), 2 ranks {:.3e} ({:.2}× faster than the loop); same final agents",
        ups(p),
        ups(a),
        a / p,
        ups(b),
        p / b
    );
    Ok(json!({
        "agents": agents, "steps": steps, "plain_s": p, "parsim_1_s": a, "parsim_2_s": b,
        "overhead_1_rank": a / p - 1.0, "speedup_2_vs_plain": p / b,
    }))
}

/// Runs the benchmark.
pub fn run(
    out: PathBuf,
    agents: u64,
    steps: u64,
    reps: usize,
    quick: bool,
    only: Option<&str>,
    (fnn, fsteps): (usize, u64),
) -> Result<()> {
    let (agents, steps) = if quick { (4_000, 60) } else { (agents, steps) };
    let which: Vec<Strategy> = match only {
        None => STRATEGIES.to_vec(),
        Some(list) => list
            .split(',')
            .map(|n| {
                STRATEGIES.iter().copied().find(|s| format!("{s:?}").eq_ignore_ascii_case(n.trim())).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--strategies: unknown strategy \"{n}\" (off, sfc, diffusive, graph, greedy, refine, steal)"
                    )
                })
            })
            .collect::<Result<_>>()?,
    };
    let d = crowd_domain(agents);
    let [cx, cy, _] = d.chunks();
    println!(
        "gathering crowd: {agents} agents in {:.0} m × {:.0} m, {cx}×{cy} chunks, {steps} steps, 2 ranks, median of {reps}",
        d.size[0], d.size[1]
    );
    let plainly = strategies(reps, &which, &|s| crowd(&d, agents, steps, s, None))?;
    println!("the same with --inject slow:rank=1,factor=2:");
    let slowed = strategies(reps, &which, &|s| crowd(&d, agents, steps, s, Some((1, 2.0))))?;
    println!("reaction front: {fnn}² cells in 32² tiles, {fsteps} steps, 2 ranks, median of {reps}");
    let front_plain = strategies(reps, &which, &|s| front(fnn, fsteps, s, None))?;
    println!("the same with --inject slow:rank=1,factor=2:");
    let front_slowed = strategies(reps, &which, &|s| front(fnn, fsteps, s, Some((1, 2.0))))?;
    println!("interest management (3 steps, initial map):");
    let sizes: &[u64] = if quick { &[10_000] } else { &[10_000, 100_000, 1_000_000] };
    let sizes: Vec<u64> = sizes.iter().copied().filter(|&n| n <= agents.max(10_000) || only.is_none()).collect();
    let im = interest(&sizes)?;
    println!("framework overhead (crowd, {} agents, {} steps):", agents.min(100_000), steps.min(100));
    let oh = overhead(agents.min(100_000), steps.min(100), reps)?;
    let report = json!({ "agents": agents, "steps": steps, "reps": reps, "strategies": plainly, "slowed": slowed, "front": front_plain, "front_slowed": front_slowed, "interest": im, "overhead": oh });
    write_atomic(&out, serde_json::to_string_pretty(&report)?.as_bytes())?;
    println!("→ {}", out.display());
    Ok(())
}

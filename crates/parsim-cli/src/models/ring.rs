//! `model = "ring"`: a token passed around a ring of nodes spread over the
//! ranks, `laps` times, each hop adding a random delay drawn from the
//! counter-based stream of (seed, lap, node). It exercises the whole path
//! (scenario → ranks → messages → digest → summary) and its digest is the
//! same for any number of ranks and either backend.

use bytemuck::{Pod, Zeroable};
use parsim_comm::{Comm, Source, TagMatch};
use parsim_core::{rng::StreamKey, Digester};
use serde_json::json;

use super::{ModelOutput, RunContext};
use parsim::Progress;
use parsim::{InputError, Scenario};

/// The `[ring]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Nodes in the ring (spread over the ranks in blocks).
    pub nodes: u64,
    /// Times the token goes round.
    pub laps: u64,
    /// Smallest per-hop delay (ticks).
    pub min_delay: u64,
    /// Largest per-hop delay (ticks).
    pub max_delay: u64,
}

impl RingConfig {
    /// Reads and validates `[ring]`.
    pub fn from_scenario(sc: &mut Scenario) -> Result<Self, InputError> {
        let mut t = sc.section("ring", true)?;
        let nodes = t.int("nodes", Some(64), 1..=1 << 32)?;
        let laps = t.int("laps", Some(100), 1..=1 << 32)?;
        let min_delay = t.int("min_delay", Some(1), 0..=1 << 40)?;
        let max_delay = t.int("max_delay", Some(100), 0..=1 << 40)?;
        t.finish()?;
        if max_delay < min_delay {
            return Err(sc.error_at(
                "ring",
                "max_delay",
                format!("[ring] max_delay ({max_delay}) is below min_delay ({min_delay})"),
            ));
        }
        Ok(RingConfig { nodes, laps, min_delay, max_delay })
    }
}

/// The token: where it is, the ring's clock, and a running hash of every hop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
struct Token {
    lap: u64,
    /// The next node to visit.
    node: u64,
    time: u64,
    hops: u64,
    hash_lo: u64,
    hash_hi: u64,
}

const TOKEN_TAG: u32 = 1;

/// First node of `rank`'s block and one past its last (blocks differ by at most one node).
fn block(nodes: u64, ranks: u64, rank: u64) -> (u64, u64) {
    let (base, extra) = (nodes / ranks, nodes % ranks);
    let start = rank * base + rank.min(extra);
    (start, start + base + u64::from(rank < extra))
}

fn owner(nodes: u64, ranks: u64, node: u64) -> u64 {
    let (base, extra) = (nodes / ranks, nodes % ranks);
    let cut = extra * (base + 1);
    if node < cut {
        node / (base + 1)
    } else {
        extra + (node - cut) / base
    }
}

impl Token {
    fn hop(&mut self, seed: u64, cfg: &RingConfig) {
        let delay = StreamKey::new(seed)
            .purpose("ring.delay")
            .with(self.lap)
            .with(self.node)
            .stream()
            .range_inclusive(cfg.min_delay, cfg.max_delay);
        self.time += delay;
        self.hops += 1;
        let mut d = Digester::new();
        for x in [self.hash_lo, self.hash_hi, self.lap, self.node, delay] {
            d.write_u64(x);
        }
        let h = d.finish().0;
        (self.hash_lo, self.hash_hi) = (h as u64, (h >> 64) as u64);
        self.node += 1;
        if self.node == cfg.nodes {
            self.node = 0;
            self.lap += 1;
        }
    }
}

/// Which nodes each rank would own.
pub fn describe(cfg: &RingConfig, ranks: usize) -> String {
    let mut s = format!(
        "ring of {} nodes, {} laps, on {ranks} ranks\n{:>6} {:>14} {:>8}\n",
        cfg.nodes, cfg.laps, "rank", "nodes", "count"
    );
    for r in 0..ranks as u64 {
        let (a, b) = block(cfg.nodes, ranks as u64, r);
        s += &format!("{r:>6} {:>14} {:>8}\n", format!("{a}..{b}"), b - a);
    }
    s
}

/// Runs the ring on this rank.
pub fn run<C: Comm>(comm: &C, cfg: &RingConfig, ctx: &RunContext) -> Result<ModelOutput, parsim_comm::CommError> {
    let (p, me) = (comm.size() as u64, comm.rank() as u64);
    let (start, end) = block(cfg.nodes, p, me);
    let total_hops = cfg.laps * cfg.nodes;
    let mut token = Token::default();
    let mut progress = Progress::new("ring laps", cfg.laps, me != 0 || !ctx.progress);
    let mut my_hops = 0u64;
    // With a single owner (one rank, or one node) the token never travels.
    let alone = start == 0 && end == cfg.nodes;
    if start < end {
        for lap in 0..cfg.laps {
            let starts_here = lap == 0 && start == 0;
            if !alone && !starts_here {
                token = comm.recv::<Token>(Source::Any, TagMatch::Tag(TOKEN_TAG))?.data[0];
            }
            debug_assert_eq!((token.lap, token.node), (lap, start));
            for _ in start..end {
                token.hop(ctx.seed, cfg);
                my_hops += 1;
            }
            if start == 0 {
                progress.set(lap + 1);
            }
            if token.hops == total_hops {
                break;
            }
            let next = owner(cfg.nodes, p, token.node) as usize;
            if next != comm.rank() {
                comm.send(next, TOKEN_TAG, vec![token])?;
            }
        }
    }
    progress.finish();
    comm.clock().count("hops", my_hops);
    // The rank that made the last hop tells everyone the final token.
    let last = owner(cfg.nodes, p, cfg.nodes - 1) as usize;
    let token = comm.broadcast(last, vec![token])?[0];
    let mut d = Digester::new();
    d.write_str("ring");
    for x in [token.lap, token.node, token.time, token.hops, token.hash_lo, token.hash_hi] {
        d.write_u64(x);
    }
    Ok(ModelOutput {
        digest: d.finish(),
        metrics: json!({
            "nodes": cfg.nodes,
            "laps": cfg.laps,
            "hops": token.hops,
            "final_time": token.time,
            "mean_delay": token.time as f64 / token.hops.max(1) as f64,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_node_once_and_owner_agrees() {
        for nodes in [1u64, 2, 5, 7, 64, 100] {
            for ranks in [1u64, 2, 3, 4, 8, 13] {
                let mut next = 0;
                for r in 0..ranks {
                    let (s, e) = block(nodes, ranks, r);
                    assert_eq!(s, next);
                    assert!(e - s <= nodes / ranks + 1);
                    for n in s..e {
                        assert_eq!(owner(nodes, ranks, n), r, "nodes {nodes} ranks {ranks} node {n}");
                    }
                    next = e;
                }
                assert_eq!(next, nodes);
            }
        }
    }
}

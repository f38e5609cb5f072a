//! The committed history is the same on every engine and rank count.

use parsim_des::models::{Phold, Queues};
use parsim_des::{DesConfig, Engine};

use crate::support::{all_engines_agree, digest};

const RANKS: [usize; 5] = [1, 2, 3, 4, 8];

fn small(remote: f64) -> Phold {
    Phold { lps: 96, start_events: 4, mean: 1.0, lookahead: 0.1, remote, end: 12.0 }
}

#[test]
fn phold_std_shape_all_engines() {
    all_engines_agree(&small(0.25), &RANKS, &DesConfig::new(Engine::Sequential).seed(3));
}

#[test]
fn phold_remote_fractions() {
    for remote in [0.1, 1.0] {
        all_engines_agree(&small(remote), &RANKS, &DesConfig::new(Engine::Sequential).seed(11));
    }
}

#[test]
fn phold_ties() {
    // mean == lookahead: every delay is exactly 0.1, so timestamps tie massively.
    let m = Phold { lps: 64, start_events: 4, mean: 0.1, lookahead: 0.1, remote: 0.25, end: 3.0 };
    all_engines_agree(&m, &RANKS, &DesConfig::new(Engine::Sequential));
}

#[test]
fn queueing_network_all_engines() {
    let q = Queues { width: 6, height: 4, jobs_per_server: 2, service: 1.0, transit: 0.25, end: 60.0, warmup: 0.0 };
    all_engines_agree(&q, &RANKS, &DesConfig::new(Engine::Sequential).seed(5));
}

#[test]
fn time_warp_variants_agree() {
    let m = small(0.25);
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential), 1);
    let base = DesConfig::new(Engine::Optimistic);
    let variants = [
        base.clone().checkpoint_every(5),
        base.clone().gvt(parsim_des::GvtAlgorithm::Synchronous),
        base.clone().gvt_interval(64).batch(4),
        base.clone().window(0.5),
        base.clone().memory_limit(200),
    ];
    for cfg in variants {
        for r in [2, 4] {
            assert_eq!(digest(&m, &cfg, r).0, want, "{cfg:?} on {r} ranks");
        }
    }
}

#[test]
fn seeds_change_the_history() {
    let m = small(0.25);
    let a = digest(&m, &DesConfig::new(Engine::Sequential).seed(1), 1).0;
    let b = digest(&m, &DesConfig::new(Engine::Sequential).seed(2), 1).0;
    assert_ne!(a, b);
}

/// PHOLD with its LPs dealt round-robin to the ranks instead of in blocks.
struct RoundRobin(Phold);

impl parsim_des::Model for RoundRobin {
    type State = ();
    type Payload = ();
    fn lps(&self) -> u32 {
        self.0.lps
    }
    fn lookahead(&self) -> f64 {
        self.0.lookahead
    }
    fn end_time(&self) -> f64 {
        self.0.end
    }
    fn init(&self, lp: parsim_des::LpId, ctx: &mut parsim_des::Ctx<'_, ()>) {
        self.0.init(lp, ctx)
    }
    fn on_event(&self, s: &mut (), ev: &parsim_des::Event<()>, ctx: &mut parsim_des::Ctx<'_, ()>) {
        self.0.on_event(s, ev, ctx)
    }
    fn mapping(&self, ranks: usize) -> Option<Vec<u32>> {
        Some((0..self.0.lps).map(|i| i % ranks as u32).collect())
    }
}

#[test]
fn a_custom_lp_mapping_commits_the_same_history() {
    let m = small(0.25);
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential), 1);
    all_engines_agree(&RoundRobin(m), &[2, 3, 4], &DesConfig::new(Engine::Sequential));
    assert_eq!(digest(&RoundRobin(m), &DesConfig::new(Engine::Optimistic), 3).0, want);
}

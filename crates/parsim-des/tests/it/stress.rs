//! Time Warp under stress: deep cascading rollbacks still commit the
//! sequential history, and memory stays within the configured limit.

use parsim_des::models::Phold;
use parsim_des::{Ctx, DesConfig, Engine, Event, LpId, Model};

use crate::support::digest;

#[test]
fn cascading_rollbacks_commit_the_sequential_history() {
    // Every event goes anywhere, almost no lookahead, 8 ranks on few cores,
    // random batch sizes and yields: rollbacks cascade through anti-messages.
    let m = Phold { lps: 64, start_events: 3, mean: 1.0, lookahead: 0.001, remote: 1.0, end: 15.0 };
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential), 1);
    for chaos in 1..=3 {
        let cfg =
            DesConfig::new(Engine::Optimistic).chaos(chaos).gvt_interval(500).checkpoint_every(3).window(f64::INFINITY);
        let (got, s) = digest(&m, &cfg, 8);
        assert_eq!(got, want, "chaos {chaos}: {s:?}");
        assert!(s.rollbacks_secondary > 0 && s.anti_messages > 0, "no cascade provoked: {s:?}");
    }
}

#[test]
fn memory_stays_bounded_over_a_long_run() {
    let m = Phold { lps: 128, start_events: 2, mean: 1.0, lookahead: 0.01, remote: 0.5, end: 150.0 };
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential), 1);
    let limit = 300;
    let cfg =
        DesConfig::new(Engine::Optimistic).memory_limit(limit).gvt_interval(1_000_000).window(f64::INFINITY).chaos(9);
    let (got, s) = digest(&m, &cfg, 4);
    assert_eq!(got, want);
    assert!(s.committed > 20 * limit, "the run should be long against the limit: {s:?}");
    // The one event a throttled rank may still execute is the one at GVT.
    assert!(s.peak_uncommitted <= limit + 1, "peak {} over the limit {limit}: {s:?}", s.peak_uncommitted);
    assert!(s.throttled > 0, "the limit never bit: {s:?}");
}

/// A model whose routing depends on its state, with an exact reverse handler.
struct Tally;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Counts {
    events: u64,
    sum: u64,
}

fn mix(ev: &Event<u32>) -> u64 {
    (ev.time.to_bits() ^ u64::from(ev.payload)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7
}

impl Model for Tally {
    type State = Counts;
    type Payload = u32;
    fn lps(&self) -> u32 {
        48
    }
    fn lookahead(&self) -> f64 {
        0.01
    }
    fn end_time(&self) -> f64 {
        25.0
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, u32>) -> Counts {
        for k in 0..3 {
            let d = 0.1 + ctx.rng().uniform();
            ctx.send(lp, d, k);
        }
        Counts::default()
    }
    fn on_event(&self, s: &mut Counts, ev: &Event<u32>, ctx: &mut Ctx<'_, u32>) {
        s.events += 1;
        s.sum = s.sum.wrapping_add(mix(ev));
        let dest = ((s.sum >> 3) + ctx.rng().below(48)) % 48;
        let delay = 0.01 + ctx.rng().uniform();
        ctx.send(dest as u32, delay, ev.payload.wrapping_add(s.events as u32));
    }
    fn reversible(&self) -> bool {
        true
    }
    fn reverse(&self, s: &mut Counts, ev: &Event<u32>) {
        s.sum = s.sum.wrapping_sub(mix(ev));
        s.events -= 1;
    }
}

#[test]
fn reverse_computation_and_state_copies_commit_the_same_history() {
    let (want, _) = digest(&Tally, &DesConfig::new(Engine::Sequential), 1);
    let base = DesConfig::new(Engine::Optimistic).chaos(4).gvt_interval(300).window(f64::INFINITY);
    for cfg in [
        base.clone().state_saving(parsim_des::StateSaving::Reverse),
        base.clone().checkpoint_every(1),
        base.clone().checkpoint_every(7),
    ] {
        for r in [2, 4, 8] {
            let (got, s) = digest(&Tally, &cfg, r);
            assert_eq!(got, want, "{cfg:?} on {r}: {s:?}");
            if r == 8 {
                assert!(s.rolled_back > 0);
            }
        }
    }
}

/// Tokens hop around with fixed delays and drop pings, which do nothing:
/// a late ping rolls tokens back, and re-executing them sends the very same
/// messages again — what lazy cancellation saves.
struct Pings;

impl Model for Pings {
    type State = u64;
    type Payload = u32; // 1: token, 0: ping
    fn lps(&self) -> u32 {
        32
    }
    fn lookahead(&self) -> f64 {
        0.01
    }
    fn end_time(&self) -> f64 {
        40.0
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, u32>) -> u64 {
        ctx.send(lp, 0.5 + f64::from(lp) * 0.013, 1);
        0
    }
    fn on_event(&self, seen: &mut u64, ev: &Event<u32>, ctx: &mut Ctx<'_, u32>) {
        *seen += 1;
        if ev.payload == 1 {
            let lp = ev.dest;
            ctx.send((lp + 7) % 32, 0.3 + f64::from(lp % 3) * 0.1, 1);
            ctx.send((lp * 5 + 3) % 32, 0.02 + f64::from(lp % 4) * 0.005, 0);
        }
    }
}

#[test]
fn lazy_cancellation_commits_the_same_history_and_reuses_messages() {
    let (want, _) = digest(&Pings, &DesConfig::new(Engine::Sequential), 1);
    let mut reused = 0;
    for chaos in 1..=4 {
        let cfg = DesConfig::new(Engine::Optimistic)
            .cancellation(parsim_des::Cancellation::Lazy)
            .window(f64::INFINITY)
            .gvt_interval(400)
            .chaos(chaos);
        for r in [2, 4, 8] {
            let (got, s) = digest(&Pings, &cfg, r);
            assert_eq!(got, want, "lazy on {r} ranks: {s:?}");
            reused += s.lazy_reused;
        }
        let (got, _) = digest(&Tally, &cfg.clone().checkpoint_every(3), 4);
        assert_eq!(got, digest(&Tally, &DesConfig::new(Engine::Sequential), 1).0);
    }
    assert!(reused > 0, "no message was ever reused");
}

#[test]
fn lazy_cancellation_under_massive_ties() {
    // Every delay is 0.1: messages and their re-sent twins share timestamps.
    let m = parsim_des::models::Phold { lps: 64, start_events: 4, mean: 0.1, lookahead: 0.1, remote: 0.25, end: 3.0 };
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential).seed(4), 1);
    for chaos in 0..6 {
        let cfg = DesConfig::new(Engine::Optimistic)
            .seed(4)
            .cancellation(parsim_des::Cancellation::Lazy)
            .window(f64::INFINITY)
            .chaos(chaos);
        for r in [2, 4, 8] {
            let (got, s) = digest(&m, &cfg, r);
            assert_eq!(got, want, "chaos {chaos} on {r} ranks: {s:?}");
        }
    }
}

/// PHOLD runs under reverse computation too (its LPs have no state to
/// undo) and commits the sequential history.
#[test]
fn phold_runs_with_reverse_computation() {
    let m = Phold { lps: 64, start_events: 3, mean: 1.0, lookahead: 0.01, remote: 0.5, end: 20.0 };
    let (want, _) = digest(&m, &DesConfig::new(Engine::Sequential), 1);
    let cfg = DesConfig::new(Engine::Optimistic)
        .chaos(2)
        .gvt_interval(300)
        .window(f64::INFINITY)
        .state_saving(parsim_des::StateSaving::Reverse);
    for r in [2, 4] {
        let (got, s) = digest(&m, &cfg, r);
        assert_eq!(got, want, "on {r}: {s:?}");
    }
}

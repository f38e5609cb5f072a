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

//! `on_commit`: once per committed event, in order on each rank, never for
//! an event that was rolled back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;

use parsim_des::models::Phold;
use parsim_des::{Ctx, DesConfig, Engine, Event, LpId, Model, Order};

/// PHOLD that records every commit, by the thread (rank) that made it.
struct Recording {
    phold: Phold,
    log: Mutex<HashMap<ThreadId, Vec<Order>>>,
}

impl Model for Recording {
    type State = ();
    type Payload = ();
    fn lps(&self) -> u32 {
        self.phold.lps
    }
    fn lookahead(&self) -> f64 {
        self.phold.lookahead
    }
    fn end_time(&self) -> f64 {
        self.phold.end
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, ()>) {
        self.phold.init(lp, ctx)
    }
    fn on_event(&self, s: &mut (), ev: &Event<()>, ctx: &mut Ctx<'_, ()>) {
        self.phold.on_event(s, ev, ctx)
    }
    fn wants_commits(&self) -> bool {
        true
    }
    fn on_commit(&self, ev: &Event<()>) {
        self.log.lock().unwrap().entry(std::thread::current().id()).or_default().push(ev.order());
    }
}

fn commits(engine: Engine, ranks: usize) -> (Vec<Order>, u64) {
    let m = Recording {
        phold: Phold { lps: 64, start_events: 4, mean: 1.0, lookahead: 0.05, remote: 0.5, end: 10.0 },
        log: Mutex::new(HashMap::new()),
    };
    let cfg = DesConfig::new(engine).gvt_interval(200).chaos(7);
    let reports = parsim_comm::launch(ranks, |comm| parsim_des::run(&comm, &m, &cfg)).expect("run");
    let log = m.log.into_inner().unwrap();
    let mut all = Vec::new();
    for orders in log.values() {
        assert!(orders.windows(2).all(|w| w[0] < w[1]), "{}: a rank's commits are out of order", engine.name());
        all.extend_from_slice(orders);
    }
    all.sort();
    (all, reports[0].total.rolled_back)
}

#[test]
fn on_commit_once_per_committed_event_in_order() {
    let (want, _) = commits(Engine::Sequential, 1);
    assert!(!want.is_empty());
    assert!(want.windows(2).all(|w| w[0] < w[1]), "sequential committed an event twice");
    for engine in Engine::ALL {
        for ranks in [2, 4] {
            let (got, rolled_back) = commits(engine, ranks);
            assert_eq!(got.len(), want.len(), "{} on {ranks}: number of on_commit calls", engine.name());
            assert_eq!(got, want, "{} on {ranks}: committed events differ from the sequential history", engine.name());
            if engine == Engine::Optimistic && ranks == 4 {
                assert!(rolled_back > 0, "the test should provoke rollbacks");
            }
        }
    }
}

//! A model of a user's kind: LPs of different kinds (a door and tellers,
//! through an enum state) exchanging an enum of events with heap data (a
//! [`Serde`] payload holding a `Vec<String>`), committed identically by
//! every engine at every rank count, and with Time Warp's lazy cancellation.

use parsim_des::{Cancellation, Ctx, DesConfig, Engine, Event, LpId, Model, Serde};
use serde::{Deserialize, Serialize};

use crate::support::{all_engines_agree, digest};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Msg {
    /// A customer walks in (at the door).
    Arrive { id: u64 },
    /// The door sends a customer, with their errands, to a teller.
    Serve { id: u64, arrived: f64, errands: Vec<String> },
    /// A teller is done with a customer.
    Done,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Kind {
    Door { next_id: u64, sent: u64 },
    Teller { busy_until: f64, served: u64, wait: f64, errands: u64 },
}

struct Bank {
    tellers: u32,
}

impl Model for Bank {
    type State = Kind;
    type Payload = Serde<Msg>;
    fn lps(&self) -> u32 {
        1 + self.tellers
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn end_time(&self) -> f64 {
        300.0
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, Serde<Msg>>) -> Kind {
        if lp == 0 {
            let gap = ctx.rng().exponential(2.0);
            ctx.send(0, gap, Serde(Msg::Arrive { id: 0 }));
            Kind::Door { next_id: 1, sent: 0 }
        } else {
            Kind::Teller { busy_until: 0.0, served: 0, wait: 0.0, errands: 0 }
        }
    }
    fn on_event(&self, state: &mut Kind, ev: &Event<Serde<Msg>>, ctx: &mut Ctx<'_, Serde<Msg>>) {
        let now = ctx.now();
        match (state, &ev.payload.0) {
            (Kind::Door { next_id, sent }, &Msg::Arrive { id }) => {
                let gap = ctx.rng().exponential(2.0);
                ctx.send(0, gap, Serde(Msg::Arrive { id: *next_id }));
                *next_id += 1;
                let teller = 1 + ctx.rng().below(u64::from(self.tellers)) as u32;
                let walk = 0.5 + ctx.rng().uniform();
                let errands = (0..1 + ctx.rng().below(3)).map(|k| format!("customer {id}, errand {k}")).collect();
                ctx.send(teller, walk, Serde(Msg::Serve { id, arrived: now, errands }));
                *sent += 1;
            }
            (Kind::Teller { busy_until, wait, errands: done, .. }, Msg::Serve { id, arrived, errands }) => {
                assert!(errands.iter().all(|e| e.starts_with(&format!("customer {id},"))), "{errands:?}");
                *done += errands.len() as u64;
                let start = busy_until.max(now);
                *wait += start - arrived;
                let service = ctx.rng().exponential(0.6 / errands.len() as f64);
                *busy_until = start + service;
                ctx.send(ev.dest, *busy_until - now + 1e-9, Serde(Msg::Done));
            }
            (Kind::Teller { served, .. }, Msg::Done) => *served += 1,
            (k, m) => panic!("LP {} of kind {k:?} got {m:?}", ev.dest),
        }
    }
}

#[test]
fn enum_payloads_and_heterogeneous_lps_commit_the_same_history_everywhere() {
    let bank = Bank { tellers: 5 };
    all_engines_agree(&bank, &[1, 2, 3], &DesConfig::new(Engine::Sequential));
    let (want, _) = digest(&bank, &DesConfig::new(Engine::Sequential), 1);
    let lazy = DesConfig { cancellation: Cancellation::Lazy, ..DesConfig::new(Engine::Optimistic) };
    assert_eq!(digest(&bank, &lazy, 3).0, want, "lazy cancellation");
    // The final states are the model's own kinds, on their owners.
    let reports = crate::support::run(&bank, &DesConfig::new(Engine::Optimistic), 2);
    let served: u64 = reports
        .iter()
        .flat_map(|r| &r.states)
        .map(|(_, k)| match k {
            Kind::Teller { served, .. } => *served,
            Kind::Door { .. } => 0,
        })
        .sum();
    assert!(served > 400, "{served} customers served");
}

#[test]
fn a_different_payload_changes_the_digest() {
    // The payload's bytes are part of the committed history.
    let a = digest(&Bank { tellers: 5 }, &DesConfig::new(Engine::Sequential), 1).0;
    let b = digest(&Bank { tellers: 4 }, &DesConfig::new(Engine::Sequential), 1).0;
    assert_ne!(a, b);
}

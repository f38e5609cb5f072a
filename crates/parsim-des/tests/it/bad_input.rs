//! Invalid sends and configurations: an error naming the LP, the time and
//! the value, on every rank, never a hang.

use parsim_des::models::Phold;
use parsim_des::{Ctx, DesConfig, Engine, Event, LpId, Model};

/// PHOLD-like, but LP `bad_lp` makes `bad` send at its first event after `at`.
struct Faulty {
    bad_lp: LpId,
    at: f64,
    bad: Bad,
}

#[derive(Clone, Copy, Debug)]
enum Bad {
    Negative,
    NoSuchLp,
    Infinite,
    BelowLookahead,
    Zero,
}

impl Model for Faulty {
    type State = ();
    type Payload = ();
    fn lps(&self) -> u32 {
        16
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn end_time(&self) -> f64 {
        30.0
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, ()>) {
        ctx.send(lp, 1.0, ());
    }
    fn on_event(&self, _: &mut (), ev: &Event<()>, ctx: &mut Ctx<'_, ()>) {
        let next = (ev.dest + 5) % 16;
        if ev.dest == self.bad_lp && ev.time > self.at {
            match self.bad {
                Bad::Negative => ctx.send(next, -0.25, ()),
                Bad::NoSuchLp => ctx.send(99, 1.0, ()),
                Bad::Infinite => ctx.send(next, f64::INFINITY, ()),
                Bad::BelowLookahead => ctx.send(next, 0.125, ()),
                Bad::Zero => ctx.send(ev.dest, 0.0, ()),
            }
            return;
        }
        ctx.send(next, 1.0, ());
    }
}

/// Every rank's error message (each rank must fail).
fn errors(model: &Faulty, engine: Engine, ranks: usize) -> Vec<String> {
    let out = parsim_comm::launch(ranks, |comm| {
        Ok::<_, parsim_comm::CommError>(
            parsim_des::run(&comm, model, &DesConfig::new(engine)).err().map(|e| e.to_string()),
        )
    })
    .expect("launch");
    out.into_iter()
        .enumerate()
        .map(|(r, e)| e.unwrap_or_else(|| panic!("{} rank {r}: no error for {:?}", engine.name(), model.bad)))
        .collect()
}

#[test]
fn bad_sends_name_the_lp_time_and_value() {
    let cases = [
        (Bad::Negative, "negative delay -0.25"),
        (Bad::NoSuchLp, "a send to LP 99, but the model has 16 LPs"),
        (Bad::Infinite, "non-finite delay inf"),
        (Bad::Zero, "delay 0, which does not advance the time"),
    ];
    for (bad, text) in cases {
        let m = Faulty { bad_lp: 6, at: 4.5, bad };
        for engine in Engine::ALL {
            for ranks in [1, 3] {
                for e in errors(&m, engine, ranks) {
                    assert!(e.contains(text), "{}: {e}", engine.name());
                    assert!(e.contains("LP 6 at time 5"), "{}: {e}", engine.name());
                }
            }
        }
    }
}

#[test]
fn below_lookahead_is_refused_by_conservative_engines_only() {
    let m = Faulty { bad_lp: 3, at: 2.0, bad: Bad::BelowLookahead };
    for engine in [Engine::Conservative, Engine::Window] {
        for e in errors(&m, engine, 2) {
            assert!(e.contains("LP 3 at time 3") && e.contains("delay 0.125, below the declared lookahead 0.5"), "{e}");
        }
    }
    // Sequential and Time Warp do not need lookahead: they run it.
    for engine in [Engine::Sequential, Engine::Optimistic] {
        parsim_comm::launch(2, |comm| parsim_des::run(&comm, &m, &DesConfig::new(engine))).expect("runs");
    }
}

#[test]
fn zero_lookahead_is_refused_by_conservative_engines() {
    let m = Phold { lps: 8, start_events: 1, mean: 1.0, lookahead: 0.0, remote: 0.5, end: 5.0 };
    for engine in [Engine::Conservative, Engine::Window] {
        let e = parsim_comm::launch(2, |comm| {
            Ok::<_, parsim_comm::CommError>(
                parsim_des::run(&comm, &m, &DesConfig::new(engine)).unwrap_err().to_string(),
            )
        })
        .expect("launch");
        assert!(e[0].contains("needs a positive lookahead") && e[1] == e[0], "{e:?}");
    }
}

#[test]
fn bad_configuration_is_refused() {
    let m = Phold::std(0.25);
    for cfg in [
        DesConfig::new(Engine::Optimistic).checkpoint_every(0),
        DesConfig::new(Engine::Optimistic).memory_limit(0),
        DesConfig::new(Engine::Optimistic).window(-1.0),
    ] {
        let e = parsim_comm::launch(1, |comm| {
            Ok::<_, parsim_comm::CommError>(parsim_des::run(&comm, &m, &cfg).unwrap_err().to_string())
        })
        .expect("launch");
        assert!(!e[0].is_empty());
    }
    // Reverse computation needs a model with a reverse handler (PHOLD has one).
    let cfg = DesConfig::new(Engine::Optimistic).state_saving(parsim_des::StateSaving::Reverse);
    let e = parsim_comm::launch(1, |comm| {
        Ok::<_, parsim_comm::CommError>(parsim_des::run(&comm, &Speculative, &cfg).err().map(|e| e.to_string()))
    })
    .expect("launch");
    assert!(e[0].as_deref().is_some_and(|e| e.contains("reverse handler")), "{e:?}");
}

/// LP 1 (slow) tells LP 0 at time 5.5 that it may proceed; LP 0 checks at
/// time 6 and makes an invalid send if it has not heard. Sequentially the
/// check always passes; Time Warp runs LP 0 ahead, so its first execution
/// of the check fails — speculatively — and is rolled back by the marker.
struct Speculative;

impl Model for Speculative {
    type State = bool; // LP 0: heard the marker
    type Payload = u32; // 0: step, 1: marker, 2: check
    fn lps(&self) -> u32 {
        2
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn end_time(&self) -> f64 {
        10.0
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, u32>) -> bool {
        if lp == 0 {
            ctx.send(0, 6.0, 2);
        } else {
            ctx.send(1, 1.0, 0);
        }
        false
    }
    fn on_event(&self, heard: &mut bool, ev: &Event<u32>, ctx: &mut Ctx<'_, u32>) {
        match ev.payload {
            0 => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                if ev.time < 5.0 {
                    ctx.send(1, 1.0, 0);
                } else {
                    ctx.send(0, 0.5, 1);
                }
            }
            1 => *heard = true,
            _ => {
                if !*heard {
                    ctx.send(0, -1.0, 2);
                }
            }
        }
    }
}

#[test]
fn an_invalid_send_that_is_rolled_back_is_not_an_error() {
    let seq = parsim_comm::launch(1, |comm| parsim_des::run(&comm, &Speculative, &DesConfig::new(Engine::Sequential)))
        .expect("sequentially the check passes");
    let cfg = DesConfig::new(Engine::Optimistic).window(f64::INFINITY);
    let tw = parsim_comm::launch(2, |comm| parsim_des::run(&comm, &Speculative, &cfg)).expect("rolled back, not fatal");
    assert_eq!(tw[0].digest, seq[0].digest);
    assert!(tw[0].total.rolled_back > 0, "the check should have run speculatively: {:?}", tw[0].total);
}

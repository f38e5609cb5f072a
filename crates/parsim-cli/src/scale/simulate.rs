//! The parallel run simulated with parsim's own DES engine, in the spirit
//! of LogGOPSim: every rank computes its step, sends its messages through
//! its network interface (one at a time: β per byte), the switch forwards
//! each to its destination's port (one at a time when `contention`), a
//! message arrives α after it left, and the step ends in a barrier that
//! costs `collective`. The T(p) model's terms give each rank's compute and
//! messages at any p; the simulation adds what the analytic sum leaves out:
//! messages queueing behind each other at an interface and at a port.

use parsim_des::{Ctx, DesConfig, Engine, Event, LpId, Model};
use serde::{Deserialize, Serialize};

/// The smallest delay (the engine needs every delay > 0).
const EPS: f64 = 1e-12;

/// A bulk-synchronous run: `steps` steps on `p` ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Bsp {
    /// Ranks.
    pub p: u32,
    /// Steps.
    pub steps: u32,
    /// Each rank's compute per step, seconds.
    pub compute: Vec<f64>,
    /// Messages each rank sends per step (to r+1, r−1, r+2, r−2 …).
    pub messages: u32,
    /// Bytes per message.
    pub bytes: f64,
    /// Latency per message, seconds.
    pub alpha: f64,
    /// Seconds per byte (an interface and a switch port serialise at it).
    pub beta: f64,
    /// The barrier ending each step, seconds.
    pub collective: f64,
    /// Whether a switch port serialises the messages arriving at it.
    pub contention: bool,
}

const GO: u64 = 0;
const COMPUTED: u64 = 1;
const MSG: u64 = 2;
const ARRIVE: u64 = 3;
const READY: u64 = 4;

/// An LP's state: a rank, the switch, or the barrier.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Lp {
    step: u64,
    got: u32,
    computed: bool,
    /// A rank: when its interface is free; the barrier: ranks ready.
    free: f64,
    ready: u32,
    /// The switch: when each destination port is free.
    ports: Vec<f64>,
    /// The barrier: when the last step ended.
    finished: f64,
}

impl Bsp {
    fn peer(&self, r: u32, i: u32) -> u32 {
        let k = i / 2 + 1;
        if i % 2 == 0 {
            (r + k) % self.p
        } else {
            (r + self.p - k % self.p) % self.p
        }
    }

    fn switch(&self) -> LpId {
        self.p
    }

    fn barrier(&self) -> LpId {
        self.p + 1
    }

    fn sends(&self) -> u32 {
        if self.p > 1 {
            self.messages
        } else {
            0
        }
    }

    /// Simulates the run (on one rank, with the sequential engine) and
    /// returns the time the last step ended.
    pub fn run(&self) -> f64 {
        let out = parsim_comm::launch(1, |comm| parsim_des::run(&comm, self, &DesConfig::new(Engine::Sequential)));
        match out {
            Ok(r) => r[0].states.iter().find(|(lp, _)| *lp == self.barrier()).map_or(0.0, |(_, s)| s.finished),
            Err(e) => {
                tracing::warn!("the DES simulation of the run failed: {e}");
                f64::NAN
            }
        }
    }

    fn ready<'a>(&self, s: &mut Lp, ctx: &mut Ctx<'a, [u64; 3]>) {
        if s.computed && s.got == self.sends() {
            s.computed = false;
            s.got = 0;
            ctx.send(self.barrier(), EPS, [READY, s.step, 0]);
        }
    }
}

impl Model for Bsp {
    type State = Lp;
    type Payload = [u64; 3];

    fn lps(&self) -> u32 {
        self.p + 2
    }
    fn lookahead(&self) -> f64 {
        EPS
    }
    fn end_time(&self) -> f64 {
        1e18
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, [u64; 3]>) -> Lp {
        if lp < self.p {
            ctx.send(lp, 0.0, [GO, 0, 0]);
        }
        Lp { ports: if lp == self.switch() { vec![0.0; self.p as usize] } else { Vec::new() }, ..Lp::default() }
    }
    fn on_event(&self, s: &mut Lp, ev: &Event<[u64; 3]>, ctx: &mut Ctx<'_, [u64; 3]>) {
        let now = ctx.now();
        let [kind, step, dest] = ev.payload;
        match kind {
            GO => {
                s.step = step;
                ctx.send(ev.dest, self.compute[ev.dest as usize].max(EPS), [COMPUTED, step, 0]);
            }
            COMPUTED => {
                for i in 0..self.sends() {
                    let to = self.peer(ev.dest, i);
                    let depart = s.free.max(now) + self.beta * self.bytes;
                    s.free = depart;
                    ctx.send(self.switch(), (depart - now + self.alpha / 2.0).max(EPS), [MSG, step, u64::from(to)]);
                }
                s.computed = true;
                self.ready(s, ctx);
            }
            MSG => {
                let mut delay = self.alpha / 2.0;
                if self.contention {
                    let port = &mut s.ports[dest as usize];
                    let done = port.max(now) + self.beta * self.bytes;
                    *port = done;
                    delay += done - now;
                }
                ctx.send(dest as LpId, delay.max(EPS), [ARRIVE, step, 0]);
            }
            ARRIVE => {
                s.got += 1;
                self.ready(s, ctx);
            }
            _ => {
                s.ready += 1;
                if s.ready == self.p {
                    s.ready = 0;
                    s.finished = now + self.collective;
                    if step + 1 < u64::from(self.steps) {
                        for r in 0..self.p {
                            ctx.send(r, self.collective.max(EPS), [GO, step + 1, 0]);
                        }
                    }
                }
            }
        }
    }
}

/// The run at `p` ranks as the T(p) model describes it, simulated for up
/// to 50 of its `steps` steps (a bulk-synchronous run repeats itself) and
/// scaled to all of them, plus the serial and io terms.
/// `None` when one step alone would be more than 10⁶ events.
pub fn predict(m: &super::model::TModel, p: f64, steps: u64) -> Option<f64> {
    let t = m.at(p);
    let steps = steps.max(1);
    let per = |x: f64| x / steps as f64;
    let ranks = p.round().max(1.0) as u32;
    let msgs = per(m.messages.at(p));
    let messages = if msgs > 0.0 { msgs.round().max(1.0) as u32 } else { 0 };
    // About four events per message and three per rank and step.
    let per_step = f64::from(ranks) * (4.0 * f64::from(messages) + 3.0);
    if per_step > 1e6 {
        return None;
    }
    let simulated = steps.min(50).min((1e6 / per_step).max(1.0) as u64);
    let mut compute = vec![per(t.compute); ranks as usize];
    compute[0] += per(t.imbalance);
    let bytes = if messages > 0 { per(m.bytes.at(p)) / f64::from(messages) } else { 0.0 };
    let bsp = Bsp {
        p: ranks,
        steps: simulated as u32,
        compute,
        messages,
        bytes,
        alpha: m.net.alpha,
        beta: m.net.beta,
        collective: per(t.sync),
        contention: true,
    };
    Some(bsp.run() * steps as f64 / simulated as f64 + t.serial + t.io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_contention_a_bsp_run_costs_the_analytic_sum() {
        // One message per rank per step to its right neighbour: each step
        // costs compute + β·bytes + α + the barrier, exactly.
        let b = Bsp {
            p: 8,
            steps: 20,
            compute: vec![1e-3; 8],
            messages: 1,
            bytes: 1e5,
            alpha: 5e-6,
            beta: 1e-9,
            collective: 2e-5 * 3.0,
            contention: false,
        };
        let want = 20.0 * (1e-3 + 1e-9 * 1e5 + 5e-6 + 6e-5);
        let got = b.run();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        // The slowest rank sets the pace.
        let mut slow = b.clone();
        slow.compute[3] = 3e-3;
        assert!((slow.run() - 20.0 * (3e-3 + 1e-4 + 5e-6 + 6e-5)).abs() < 1e-9);
        // Two messages to the same port queue behind each other there.
        let two = Bsp { messages: 2, p: 2, compute: vec![1e-3; 2], contention: true, ..b.clone() };
        let with_queue = two.run();
        let free = Bsp { contention: false, ..two }.run();
        assert!(with_queue > free + 19.0 * 1e-4, "{with_queue} vs {free}");
    }
}

//! A bank with tellers: your own discrete-event model on parsim's DES engines.
//!
//! Each of `branches` branches is an M/M/c queue: customers arrive at rate
//! λ, wait in one line, and are served by the first free of `tellers`
//! tellers at rate μ each. Every branch is a logical process (LP); the
//! branches are spread over the ranks. The simulated mean wait in line is
//! printed beside the Erlang-C formula's.
//!
//! ```sh
//! cargo run --release --example bank -- run --ranks 2 --set tellers=5
//! cargo run --release --example bank -- run --set engine=optimistic --trace out/bank/trace.json
//! cargo run --release --example bank -- sweep --param tellers=3,4,5,6 --replications 5 --metrics mean_wait,theory_mean_wait
//! ```

use std::collections::VecDeque;
use std::process::ExitCode;

use bytemuck::{Pod, Zeroable};
use parsim::comm::Comm;
use parsim::des::{Ctx, DesConfig, Engine, Event, LpId};
use parsim::{check, BoxError, Experiment, Model, Outcome, ParamError, Rank};
use serde::{Deserialize, Serialize};

/// The parameters: the `[bank]` table of a scenario, or `--set key=value`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
struct Params {
    /// Independent branches (LPs).
    branches: u32,
    /// Tellers per branch (c).
    tellers: u32,
    /// Arrivals per minute at each branch (λ).
    arrival_rate: f64,
    /// Customers a teller serves per minute (μ).
    service_rate: f64,
    /// Minutes simulated.
    minutes: f64,
    /// Minutes before waits are counted (the queue starts empty).
    warmup: f64,
    /// sequential, conservative, window or optimistic.
    engine: String,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            branches: 8,
            tellers: 3,
            arrival_rate: 2.4,
            service_rate: 1.0,
            minutes: 10_000.0,
            warmup: 500.0,
            engine: "window".into(),
        }
    }
}

/// What an event carries: plain data, copied into messages as bytes.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
struct Customer {
    /// When the customer walked in (minutes).
    arrived: f64,
    /// 0: an arrival, 1: a teller finishes.
    kind: u32,
    _pad: u32,
}

const ARRIVAL: u32 = 0;
const DEPARTURE: u32 = 1;

/// A branch's state: serialisable, so it can be checkpointed and compared.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Branch {
    busy: u32,
    line: VecDeque<f64>,
    served: u64,
    wait_sum: f64,
    waited: u64,
}

/// The DES model: the engine calls `init` once per LP and `on_event` per event.
struct BankDes<'a>(&'a Params);

impl parsim::des::Model for BankDes<'_> {
    type State = Branch;
    type Payload = Customer;

    fn lps(&self) -> u32 {
        self.0.branches
    }
    fn lookahead(&self) -> f64 {
        // Branches never send to each other: any lookahead is honest.
        self.0.minutes
    }
    fn end_time(&self) -> f64 {
        self.0.minutes
    }
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, Customer>) -> Branch {
        let first = ctx.rng().exponential(self.0.arrival_rate);
        ctx.send(lp, first, Customer { arrived: first, kind: ARRIVAL, _pad: 0 });
        Branch::default()
    }
    fn on_event(&self, b: &mut Branch, ev: &Event<Customer>, ctx: &mut Ctx<'_, Customer>) {
        let p = self.0;
        let now = ctx.now();
        let start_service = |b: &mut Branch, arrived: f64, ctx: &mut Ctx<'_, Customer>| {
            if arrived >= p.warmup {
                b.wait_sum += now - arrived;
                b.waited += 1;
            }
            let service = ctx.rng().exponential(p.service_rate);
            ctx.send(ev.dest, service, Customer { arrived, kind: DEPARTURE, _pad: 0 });
        };
        match ev.payload.kind {
            ARRIVAL => {
                let gap = ctx.rng().exponential(p.arrival_rate);
                ctx.send(ev.dest, gap, Customer { arrived: now + gap, kind: ARRIVAL, _pad: 0 });
                if b.busy < p.tellers {
                    b.busy += 1;
                    start_service(b, now, ctx);
                } else {
                    b.line.push_back(now);
                }
            }
            _ => {
                b.served += 1;
                match b.line.pop_front() {
                    Some(arrived) => start_service(b, arrived, ctx),
                    None => b.busy -= 1,
                }
            }
        }
    }
}

/// The Erlang-C mean wait in line of an M/M/c queue, and the chance of waiting.
fn erlang_c(lambda: f64, mu: f64, c: u32) -> (f64, f64) {
    let a = lambda / mu;
    let rho = a / f64::from(c);
    let (mut term, mut sum) = (1.0, 0.0); // a^k / k!
    for k in 0..c {
        sum += term;
        term *= a / f64::from(k + 1);
    }
    let tail = term / (1.0 - rho);
    let p_wait = tail / (sum + tail);
    (p_wait / (f64::from(c) * mu - lambda), p_wait)
}

/// The model parsim runs: parameters in, one rank's share out.
struct Bank;

impl Model for Bank {
    type Params = Params;

    fn name(&self) -> &str {
        "bank"
    }

    fn check(&self, p: &Params) -> Result<(), ParamError> {
        check::range("branches", p.branches, 1..=100_000)?;
        check::range("tellers", p.tellers, 1..=10_000)?;
        check::range("arrival_rate", p.arrival_rate, 1e-9..=1e9)?;
        check::range("service_rate", p.service_rate, 1e-9..=1e9)?;
        check::that(
            "arrival_rate",
            p.arrival_rate < f64::from(p.tellers) * p.service_rate,
            format!(
                "λ = {} ≥ c μ = {}: the line grows without bound (no steady state)",
                p.arrival_rate,
                f64::from(p.tellers) * p.service_rate
            ),
        )?;
        check::range("minutes", p.minutes, 1.0..=1e9)?;
        check::that("warmup", p.warmup >= 0.0 && p.warmup < p.minutes, "expected 0 ≤ warmup < minutes")?;
        check::that(
            "engine",
            Engine::parse(&p.engine).is_some(),
            "expected sequential, conservative, window or optimistic",
        )
    }

    fn describe(&self, p: &Params, ranks: usize) -> String {
        format!(
            "bank: {} branches of {} tellers on {ranks} rank(s) (about {} branches each), engine {}\n",
            p.branches,
            p.tellers,
            p.branches.div_ceil(ranks as u32),
            p.engine
        )
    }

    fn run<C: Comm>(&self, p: &Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let engine = Engine::parse(&p.engine).ok_or("unknown engine")?;
        let cfg = DesConfig { seed: rank.seed(), ..DesConfig::new(engine) };
        // A progress bar over simulated minutes, fed by the engine.
        let mut bar = rank.progress("minutes", p.minutes as u64);
        let mut on_gvt = |gvt: f64, _end: f64, _events: u64| bar.set(gvt as u64);
        let report = parsim::des::run_with_progress(rank.comm(), &BankDes(p), &cfg, Some(&mut on_gvt))?;
        bar.set(p.minutes as u64);
        bar.finish();
        // Each branch's mean wait, gathered in branch order (the same sums on any rank count).
        let mine: Vec<(u32, f64, u64, u64)> =
            report.states.iter().map(|(id, b)| (*id, b.wait_sum, b.waited, b.served)).collect();
        let mut all: Vec<_> = rank.comm().all_gather_value(&mine)?.into_iter().flatten().collect();
        all.sort_by_key(|b| b.0);
        let means: Vec<f64> = all.iter().map(|b| b.1 / b.2.max(1) as f64).collect();
        let n = means.len() as f64;
        let mean = means.iter().sum::<f64>() / n;
        let sd = (means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
        let se = sd / n.sqrt();
        let (theory, p_wait) = erlang_c(p.arrival_rate, p.service_rate, p.tellers);
        let served: u64 = all.iter().map(|b| b.3).sum();
        Ok(Outcome::new()
            .digest(report.digest)
            .metric("mean_wait", mean)
            .metric("mean_wait_se", se)
            .metric("theory_mean_wait", theory)
            .metric("theory_p_wait", p_wait)
            .metric("utilisation", p.arrival_rate / (f64::from(p.tellers) * p.service_rate))
            .metric("customers_served", served as f64)
            .metric("events_committed", report.total.committed as f64)
            .line(format!(
                "bank: {} branches × {} tellers, λ = {}/min, μ = {}/min: mean wait {mean:.4} ± {se:.4} min (simulated, \
                 ± 1 SE over branches), {theory:.4} min (Erlang C); {served} customers served",
                p.branches, p.tellers, p.arrival_rate, p.service_rate
            )))
    }
}

fn main() -> ExitCode {
    Experiment::new(Bank).about("A bank with tellers (M/M/c queues) on parsim's DES engines").from_args()
}

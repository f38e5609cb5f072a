//! A closed queueing network: a torus of FIFO servers with exponential
//! service; a served job travels for a fixed `transit` time to one of the
//! four neighbours, drawn uniformly. With the transit stages as
//! infinite-server stations the network is product-form (BCMP), so its mean
//! queue length and throughput have an exact solution ([`Queues::exact`],
//! Buzen's convolution) to check the simulation against.
//!
//! Every job starts queued at time 0, far from the stationary state, so the
//! statistics leave out a warm-up period ([`Queues::warmup`]). The model is
//! reversible (Time Warp's `state_saving = "reverse"`): a departure carries
//! the arrival time of the job it serves, and the statistics are kept in
//! fixed point (2⁻⁶⁴ time units), where undoing an addition is exact.

use std::collections::VecDeque;

use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};

use crate::model::{Ctx, Event, LpId, Model};

/// The network's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Queues {
    /// Torus width (servers per row).
    pub width: u32,
    /// Torus height.
    pub height: u32,
    /// Jobs initially queued at each server (the population is constant).
    pub jobs_per_server: u32,
    /// Mean service time (exponential).
    pub service: f64,
    /// Travel time from a server to the next (the lookahead).
    pub transit: f64,
    /// End time.
    pub end: f64,
    /// Statistics count from this time on (0 ≤ warmup < end): the
    /// start-up transient, when every job starts queued, is left out.
    pub warmup: f64,
}

/// An event's payload.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Job {
    /// 0: the job arrives; 1: the server finishes serving its first job.
    pub kind: u32,
    /// The job's id.
    pub id: u32,
    /// For a departure, when the job arrived at the server (so that reverse
    /// computation can put it back).
    pub arrived: f64,
}

const ARRIVE: u32 = 0;
const DEPART: u32 = 1;

/// One server's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// Jobs here (the first is in service), with their arrival times.
    pub queue: VecDeque<(u32, f64)>,
    /// Jobs served after the warm-up.
    pub completions: u64,
    /// Σ time from arrival to departure of the jobs served after the
    /// warm-up, in units of 2⁻⁶⁴.
    pub sojourn: i128,
    /// ∫ queue length dt after the warm-up, over the served jobs' stays, in
    /// units of 2⁻⁶⁴ (the jobs still queued are added at the end).
    pub area: i128,
}

/// A time span in fixed point (2⁻⁶⁴ units; finer bits are truncated, the
/// same way every time, so adding and removing it is exact).
fn fixed(x: f64) -> i128 {
    (x * 18_446_744_073_709_551_616.0) as i128
}

fn unfixed(x: i128) -> f64 {
    x as f64 / 18_446_744_073_709_551_616.0
}

/// What a run of the network measured, summed over servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Servers.
    pub servers: u64,
    /// Σ ∫ queue length dt over servers, from the warm-up to the end time.
    pub area: f64,
    /// Jobs served after the warm-up.
    pub completions: u64,
    /// Σ sojourn times of the jobs served after the warm-up.
    pub sojourn: f64,
    /// The observation time (end − warm-up).
    pub end: f64,
}

impl QueueStats {
    /// Adds one server's final state, observed from `q.warmup` to `q.end`.
    pub fn add(&mut self, s: &Server, q: &Queues) {
        self.servers += 1;
        let queued: i128 = s.queue.iter().map(|&(_, arrived)| fixed(q.end - arrived.max(q.warmup))).sum();
        self.area += unfixed(s.area + queued);
        self.completions += s.completions;
        self.sojourn += unfixed(s.sojourn);
        self.end = q.end - q.warmup;
    }

    /// Adds another partial sum.
    pub fn merge(&mut self, o: &QueueStats) {
        self.servers += o.servers;
        self.area += o.area;
        self.completions += o.completions;
        self.sojourn += o.sojourn;
        self.end = self.end.max(o.end);
    }

    /// Time-averaged jobs at a server (L).
    pub fn mean_queue(&self) -> f64 {
        self.area / (self.servers as f64 * self.end)
    }

    /// Jobs served per unit time at a server (λ).
    pub fn throughput(&self) -> f64 {
        self.completions as f64 / (self.servers as f64 * self.end)
    }

    /// Mean time a served job spent at a server (W).
    pub fn mean_sojourn(&self) -> f64 {
        self.sojourn / self.completions.max(1) as f64
    }
}

impl Queues {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.width == 0 || self.height == 0 {
            return Err(format!("the torus must be at least 1 x 1 (got {} x {})", self.width, self.height));
        }
        if !(self.service > 0.0 && self.service.is_finite()) {
            return Err(format!("service must be > 0 (got {})", self.service));
        }
        if !(self.transit > 0.0 && self.transit.is_finite()) {
            return Err(format!("transit must be > 0 (got {})", self.transit));
        }
        if self.end.is_nan() || self.end < 0.0 {
            return Err(format!("end must be >= 0 (got {})", self.end));
        }
        if !(self.warmup >= 0.0 && (self.warmup < self.end || self.warmup == 0.0)) {
            return Err(format!("warmup must be in [0, end) (got {} with end {})", self.warmup, self.end));
        }
        if self.end > 1e15 {
            return Err(format!("end must be at most 1e15 (got {}): the statistics are kept in fixed point", self.end));
        }
        let jobs = u64::from(self.width) * u64::from(self.height) * u64::from(self.jobs_per_server);
        if jobs > u64::from(u32::MAX) {
            return Err(format!("too many jobs ({jobs})"));
        }
        Ok(())
    }

    fn servers(&self) -> u32 {
        self.width * self.height
    }

    fn neighbour(&self, lp: LpId, k: u64) -> LpId {
        let (x, y) = (lp % self.width, lp / self.width);
        let (w, h) = (self.width, self.height);
        let (x, y) = match k {
            0 => ((x + 1) % w, y),
            1 => ((x + w - 1) % w, y),
            2 => (x, (y + 1) % h),
            _ => (x, (y + h - 1) % h),
        };
        y * w + x
    }

    fn service_time(&self, ctx: &mut Ctx<'_, Job>) -> f64 {
        -self.service * (1.0 - ctx.rng().uniform()).ln()
    }

    /// The exact per-server mean queue length and throughput (Gordon–Newell /
    /// BCMP with the transit stages as infinite-server stations), by Buzen's
    /// convolution. Every server has visit ratio 1 (the routing is doubly stochastic).
    pub fn exact(&self) -> (f64, f64) {
        let k = self.servers() as usize;
        let jobs = k * self.jobs_per_server as usize;
        // G over the k FCFS stations (factor s^n) and the k IS stations (factor d^n / n!).
        let mut g = vec![0.0f64; jobs + 1];
        g[0] = 1.0;
        for _ in 0..k {
            for n in 1..=jobs {
                g[n] += self.service * g[n - 1];
            }
        }
        // k IS stations combined are one IS station with demand k·d.
        let is: Vec<f64> = (0..=jobs)
            .scan(1.0, |f, n| {
                if n > 0 {
                    *f *= k as f64 * self.transit / n as f64;
                }
                Some(*f)
            })
            .collect();
        let gall: Vec<f64> = (0..=jobs).map(|n| (0..=n).map(|m| g[m] * is[n - m]).sum()).collect();
        let throughput = gall[jobs - 1] / gall[jobs];
        let mean_queue = (1..=jobs).map(|m| self.service.powi(m as i32) * gall[jobs - m] / gall[jobs]).sum();
        (mean_queue, throughput)
    }
}

impl Model for Queues {
    type State = Server;
    type Payload = Job;

    fn lps(&self) -> u32 {
        self.servers()
    }
    fn lookahead(&self) -> f64 {
        self.transit
    }
    fn end_time(&self) -> f64 {
        self.end
    }

    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, Job>) -> Server {
        let mut s = Server::default();
        for j in 0..self.jobs_per_server {
            s.queue.push_back((lp * self.jobs_per_server + j, 0.0));
        }
        if let Some(&(id, _)) = s.queue.front() {
            let d = self.service_time(ctx);
            ctx.send(lp, d, Job { kind: DEPART, id, arrived: 0.0 });
        }
        s
    }

    fn on_event(&self, s: &mut Server, ev: &Event<Job>, ctx: &mut Ctx<'_, Job>) {
        let t = ev.time;
        match ev.payload.kind {
            ARRIVE => {
                s.queue.push_back((ev.payload.id, t));
                if s.queue.len() == 1 {
                    let d = self.service_time(ctx);
                    ctx.send(ev.dest, d, Job { kind: DEPART, id: ev.payload.id, arrived: t });
                }
            }
            _ => {
                let (id, arrived) = s.queue.pop_front().expect("a departure from an empty queue");
                if t >= self.warmup {
                    s.completions += 1;
                    s.sojourn += fixed(t - arrived);
                    s.area += fixed(t - arrived.max(self.warmup));
                }
                let to = self.neighbour(ev.dest, ctx.rng().below(4));
                ctx.send(to, self.transit, Job { kind: ARRIVE, id, arrived: 0.0 });
                if let Some(&(next, arrived)) = s.queue.front() {
                    let d = self.service_time(ctx);
                    ctx.send(ev.dest, d, Job { kind: DEPART, id: next, arrived });
                }
            }
        }
    }

    fn reversible(&self) -> bool {
        true
    }

    /// The exact inverse of `on_event` (sends need no undoing: Time Warp
    /// cancels them; random draws are keyed by the event count).
    fn reverse(&self, s: &mut Server, ev: &Event<Job>) {
        let t = ev.time;
        match ev.payload.kind {
            ARRIVE => {
                s.queue.pop_back();
            }
            _ => {
                let arrived = ev.payload.arrived;
                if t >= self.warmup {
                    s.completions -= 1;
                    s.sojourn -= fixed(t - arrived);
                    s.area -= fixed(t - arrived.max(self.warmup));
                }
                s.queue.push_front((ev.payload.id, arrived));
            }
        }
    }
}

//! Running the tasks: a coordinator that hands out (point, replication)
//! tasks, retries failures and applies the stopping rule on each point's
//! replications *in order*, so the table never depends on which worker ran
//! what or when it finished; a pool of threads pulling from it; and a
//! master–worker loop over a [`Comm`] (MPI) with dynamic scheduling.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use parsim_comm::{Comm, Source, TagMatch};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::spec::{Point, Replications, SweepSpec, Task};
use crate::stats::Summary;
use crate::store::{Metrics, Record, Store};

/// Runs one task with the given seed: its metrics, or an error message.
pub type Runner<'a> = dyn Fn(&Task, u64) -> std::result::Result<Metrics, String> + Sync + 'a;

/// Where a sweep stands (passed to the progress callback).
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Tasks finished (successes and final failures) that count.
    pub done: u64,
    /// Tasks the sweep will run at most (exact for fixed replications).
    pub total: u64,
    /// Attempts that failed (retried or not).
    pub failures: u64,
    /// Points whose replications are settled.
    pub points_done: usize,
    /// Attempts that failed since the last report: the task and why
    /// (retried when `task.attempt` < retries).
    pub new_failures: Vec<(Task, String)>,
}

/// The results of one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The point.
    pub point: Point,
    /// Replications counted (the stopping rule's n, or the fixed count).
    pub replications: u64,
    /// Replications that failed after every retry: (replication, last error).
    pub failed: Vec<(u64, String)>,
    /// Per metric, over the successful replications counted.
    pub metrics: BTreeMap<String, Summary>,
}

/// A finished sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepOutcome {
    /// One entry per point, in point order.
    pub points: Vec<PointResult>,
    /// Failed attempts (including those that succeeded on retry).
    pub failed_attempts: u64,
    /// Tasks run in this invocation (not counting resumed ones).
    pub tasks_run: u64,
}

/// The bookkeeping shared by every executor.
pub struct Coordinator<'a> {
    spec: &'a SweepSpec,
    workers: usize,
    done: Vec<BTreeMap<u64, Record>>,
    queue: VecDeque<Task>,
    launched: Vec<u64>,
    in_flight: usize,
    /// Per point: the replications that count, once known.
    settled: Vec<Option<u64>>,
    /// Per point: (prefix checked, successful values of the watched metric).
    prefix: Vec<(u64, Vec<f64>)>,
    failures: u64,
    tasks_run: u64,
    unreported: Vec<(Task, String)>,
}

impl<'a> Coordinator<'a> {
    /// A coordinator for `spec` with `workers` workers, given the records of an earlier run.
    pub fn new(spec: &'a SweepSpec, workers: usize, previous: Vec<Record>) -> Coordinator<'a> {
        let np = spec.points.len();
        let mut c = Coordinator {
            spec,
            workers: workers.max(1),
            done: vec![BTreeMap::new(); np],
            queue: VecDeque::new(),
            launched: vec![0; np],
            in_flight: 0,
            settled: vec![None; np],
            prefix: vec![(0, Vec::new()); np],
            failures: 0,
            tasks_run: 0,
            unreported: Vec::new(),
        };
        let limit = match &spec.replications {
            Replications::Fixed(n) => *n,
            Replications::Until { max, .. } => *max,
        };
        for r in previous {
            if r.point < np && r.replication < limit {
                c.done[r.point].insert(r.replication, r);
            }
        }
        let first = match &spec.replications {
            Replications::Fixed(n) => *n,
            Replications::Until { min, .. } => *min,
        };
        for p in 0..np {
            c.launch(p, first);
            c.advance(p);
        }
        c
    }

    fn launch(&mut self, p: usize, upto: u64) {
        while self.launched[p] < upto {
            let r = self.launched[p];
            if !self.done[p].contains_key(&r) {
                self.queue.push_back(Task { point: p, replication: r, attempt: 0 });
            }
            self.launched[p] += 1;
        }
    }

    /// Applies the stopping rule to point `p`'s contiguous prefix of finished replications.
    fn advance(&mut self, p: usize) {
        if self.settled[p].is_some() {
            return;
        }
        match &self.spec.replications {
            Replications::Fixed(n) => {
                // Only replications below n are ever logged for a fixed count.
                if self.done[p].len() as u64 >= *n {
                    self.settled[p] = Some(*n);
                }
            }
            Replications::Until { metric, rel_halfwidth, min, max } => {
                loop {
                    let r = self.prefix[p].0;
                    let Some(rec) = self.done[p].get(&r) else { break };
                    if let Ok(m) = &rec.result {
                        if let Some(&x) = m.get(metric) {
                            self.prefix[p].1.push(x);
                        }
                    }
                    self.prefix[p].0 += 1;
                    let xs = &self.prefix[p].1;
                    let len = self.prefix[p].0;
                    if xs.len() as u64 >= *min && xs.len() >= 2 {
                        let s = Summary::of(xs, self.spec.confidence);
                        if s.half_width() <= rel_halfwidth * s.mean.abs() {
                            self.settled[p] = Some(len);
                            break;
                        }
                    }
                    if len >= *max {
                        self.settled[p] = Some(len);
                        break;
                    }
                }
                if let Some(l) = self.settled[p] {
                    self.queue.retain(|t| t.point != p || t.replication < l);
                } else {
                    // Keep about one task per worker in flight for an open point
                    // (a resumed log may already reach past what was launched).
                    self.launched[p] = self.launched[p].max(self.prefix[p].0);
                    let ahead = self.launched[p] - self.prefix[p].0;
                    if ahead < self.workers as u64 {
                        let upto = (self.launched[p] + self.workers as u64 - ahead).min(*max);
                        self.launch(p, upto);
                    }
                }
            }
        }
    }

    /// The next task to run, if one is ready.
    pub fn next_task(&mut self) -> Option<Task> {
        let t = self.queue.pop_front()?;
        self.in_flight += 1;
        Some(t)
    }

    /// Whether every point is settled and nothing is running.
    pub fn finished(&self) -> bool {
        self.queue.is_empty() && self.in_flight == 0 && self.settled.iter().all(Option::is_some)
    }

    /// Records a task's outcome: a failure with retries left goes back to the
    /// queue (and `None` is returned); otherwise the record to log.
    pub fn complete(&mut self, task: Task, outcome: std::result::Result<Metrics, String>) -> Option<Record> {
        self.in_flight -= 1;
        self.tasks_run += 1;
        if let Err(e) = &outcome {
            self.failures += 1;
            self.unreported.push((task, e.clone()));
            if task.attempt < self.spec.retries {
                self.queue.push_front(Task { attempt: task.attempt + 1, ..task });
                return None;
            }
        }
        let rec =
            Record { point: task.point, replication: task.replication, attempts: task.attempt + 1, result: outcome };
        self.done[task.point].insert(task.replication, rec.clone());
        self.advance(task.point);
        Some(rec)
    }

    /// Where the sweep stands.
    pub fn status(&self) -> Status {
        let total: u64 = match &self.spec.replications {
            Replications::Fixed(n) => n * self.spec.points.len() as u64,
            Replications::Until { max, .. } => self.settled.iter().map(|s| s.unwrap_or(*max)).sum(),
        };
        let done: u64 = (0..self.spec.points.len())
            .map(|p| self.settled[p].unwrap_or_else(|| self.done[p].len() as u64).min(self.done[p].len() as u64))
            .sum();
        Status {
            done,
            total,
            failures: self.failures,
            points_done: self.settled.iter().filter(|s| s.is_some()).count(),
            new_failures: Vec::new(),
        }
    }

    /// [`status`](Self::status) with the failures since the last report.
    pub fn report(&mut self) -> Status {
        Status { new_failures: std::mem::take(&mut self.unreported), ..self.status() }
    }

    /// The table (call when [`finished`](Self::finished)).
    pub fn outcome(&self) -> SweepOutcome {
        let points = self
            .spec
            .points
            .iter()
            .enumerate()
            .map(|(p, point)| {
                let l = self.settled[p].unwrap_or(0);
                let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                let mut failed = Vec::new();
                for (&r, rec) in self.done[p].range(0..l) {
                    match &rec.result {
                        Ok(m) => {
                            for (k, &v) in m {
                                values.entry(k.clone()).or_default().push(v);
                            }
                        }
                        Err(e) => failed.push((r, e.clone())),
                    }
                }
                let metrics = values.iter().map(|(k, v)| (k.clone(), Summary::of(v, self.spec.confidence))).collect();
                PointResult { point: point.clone(), replications: l, failed, metrics }
            })
            .collect();
        SweepOutcome { points, failed_attempts: self.failures, tasks_run: self.tasks_run }
    }
}

fn run_one(spec: &SweepSpec, runner: &Runner<'_>, task: &Task) -> std::result::Result<Metrics, String> {
    let seed = spec.task_seed(task);
    let injected = spec.fault_due(task);
    match catch_unwind(AssertUnwindSafe(|| {
        if injected {
            panic!("injected fault (point {}, replication {}, attempt {})", task.point, task.replication, task.attempt);
        }
        runner(task, seed)
    })) {
        Ok(r) => r,
        Err(p) => Err(panic_message(p.as_ref())),
    }
}

/// "panicked: MESSAGE" for a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    format!("panicked: {msg}")
}

/// Runs the sweep on `workers` threads of this process. `previous`: records
/// of an interrupted run (from [`Store::open`] with resume).
pub fn run_threads(
    spec: &SweepSpec,
    workers: usize,
    runner: &Runner<'_>,
    store: &mut Store,
    previous: Vec<Record>,
    progress: &(dyn Fn(Status) + Sync),
) -> Result<SweepOutcome> {
    spec.check()?;
    let state = Mutex::new((Coordinator::new(spec, workers, previous), store, None));
    let cv = Condvar::new();
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let task = {
                    let mut g = state.lock().expect("sweep state");
                    loop {
                        if g.2.is_some() || g.0.finished() {
                            cv.notify_all();
                            return;
                        }
                        if let Some(t) = g.0.next_task() {
                            break t;
                        }
                        g = cv.wait(g).expect("sweep state");
                    }
                };
                let out = run_one(spec, runner, &task);
                let mut g = state.lock().expect("sweep state");
                if let Some(rec) = g.0.complete(task, out) {
                    if let Err(e) = g.1.append(&rec) {
                        g.2 = Some(e);
                    }
                }
                progress(g.0.report());
                cv.notify_all();
            });
        }
    });
    let (coord, _, err) = state.into_inner().expect("sweep state");
    if let Some(e) = err {
        return Err(e);
    }
    Ok(coord.outcome())
}

const TAG_REQUEST: u32 = 701;
const TAG_TASK: u32 = 702;
const TAG_UP: u32 = 703;
const TAG_DOWN: u32 = 704;

type Report = Option<(Task, std::result::Result<Metrics, String>)>;
/// A sub-master's message: results collected, tasks wanted.
type Up = (Vec<(Task, std::result::Result<Metrics, String>)>, u32);

/// The role of `rank` among `size` ranks with groups of `group` workers
/// under a sub-master (`group` = 0: flat): `(parent, workers it serves)`.
fn role(rank: usize, size: usize, group: usize) -> (usize, Vec<usize>) {
    if rank == 0 || group == 0 {
        return (0, Vec::new());
    }
    let chunk = (rank - 1) / (group + 1);
    let head = 1 + chunk * (group + 1);
    let end = (head + group + 1).min(size);
    if end - head < 2 {
        return (0, Vec::new()); // a group of one: a plain worker of the master
    }
    if rank == head {
        (0, (head + 1..end).collect())
    } else {
        (head, Vec::new())
    }
}

/// Runs the sweep master–worker over `comm`: rank 0 hands out tasks as
/// workers ask (dynamic scheduling), logs results as they arrive and returns
/// the table; the other ranks run tasks. With `group` > 0, the workers are
/// split into groups of `group` under a sub-master that fetches batches of
/// tasks from rank 0 and relays results, so rank 0 talks to one rank per
/// group. With one rank, rank 0 runs the tasks itself. `store` and
/// `previous` are used on rank 0 only.
#[allow(clippy::too_many_arguments)]
pub fn run_comm<C: Comm>(
    comm: &C,
    spec: &SweepSpec,
    group: usize,
    runner: &Runner<'_>,
    store: &mut Store,
    previous: Vec<Record>,
    progress: &(dyn Fn(Status) + Sync),
) -> Result<Option<SweepOutcome>> {
    spec.check()?;
    if comm.size() == 1 {
        return run_threads(spec, 1, runner, store, previous, progress).map(Some);
    }
    let (parent, served) = role(comm.rank(), comm.size(), group);
    if comm.rank() != 0 && served.is_empty() {
        // A worker.
        let mut report: Report = None;
        loop {
            comm.send_value(parent, TAG_REQUEST, &report)?;
            let (task, _) = comm.recv_value::<Option<Task>>(Source::Rank(parent), TagMatch::Tag(TAG_TASK))?;
            let Some(task) = task else { return Ok(None) };
            report = Some((task, run_one(spec, runner, &task)));
        }
    }
    if comm.rank() != 0 {
        sub_master(comm, &served)?;
        return Ok(None);
    }
    let workers = comm.size() - 1;
    let mut coord = Coordinator::new(spec, workers, previous);
    let mut waiting: BTreeSet<usize> = BTreeSet::new();
    // Direct children: plain workers and sub-masters.
    let mut active = (1..comm.size()).filter(|&r| role(r, comm.size(), group).0 == 0).count();
    while active > 0 {
        let st = comm.probe(Source::Any, TagMatch::Any)?;
        if st.tag == TAG_UP {
            let ((results, want), _) = comm.recv_value::<Up>(Source::Rank(st.source), TagMatch::Tag(TAG_UP))?;
            for (task, out) in results {
                if let Some(rec) = coord.complete(task, out) {
                    store.append(&rec)?;
                }
            }
            progress(coord.report());
            let mut batch = Vec::new();
            while batch.len() < want as usize {
                match coord.next_task() {
                    Some(t) => batch.push(t),
                    None => break,
                }
            }
            if batch.is_empty() && coord.finished() {
                comm.send_value(st.source, TAG_DOWN, &None::<Vec<Task>>)?;
                active -= 1;
            } else {
                comm.send_value(st.source, TAG_DOWN, &Some(batch))?;
            }
        } else {
            let (report, _) = comm.recv_value::<Report>(Source::Rank(st.source), TagMatch::Tag(TAG_REQUEST))?;
            if let Some((task, out)) = report {
                if let Some(rec) = coord.complete(task, out) {
                    store.append(&rec)?;
                }
                progress(coord.report());
            }
            waiting.insert(st.source);
        }
        // Serve every waiting worker that can be served.
        let ready: Vec<usize> = waiting.iter().copied().collect();
        for w in ready {
            if let Some(t) = coord.next_task() {
                comm.send_value(w, TAG_TASK, &Some(t))?;
                waiting.remove(&w);
            } else if coord.finished() {
                comm.send_value(w, TAG_TASK, &None::<Task>)?;
                waiting.remove(&w);
                active -= 1;
            }
        }
    }
    Ok(Some(coord.outcome()))
}

/// A sub-master: serves its workers from batches fetched from rank 0 and
/// relays their results. It asks rank 0 whenever it has results or idle
/// workers and no task; rank 0 answers at once (an empty batch: nothing to
/// hand out yet), so that nobody waits on a rank that waits in turn.
fn sub_master<C: Comm>(comm: &C, served: &[usize]) -> Result<()> {
    let mut queue: VecDeque<Task> = VecDeque::new();
    let mut results = Vec::new();
    let mut idle: Vec<usize> = Vec::new();
    let mut active = served.len();
    let mut exhausted = false;
    while active > 0 {
        // Collect worker requests (block only if there is nothing else to do).
        let must_wait = exhausted || !queue.is_empty() || (results.is_empty() && idle.is_empty());
        let got = if must_wait {
            Some(comm.probe(Source::Any, TagMatch::Tag(TAG_REQUEST))?)
        } else {
            comm.iprobe(Source::Any, TagMatch::Tag(TAG_REQUEST))?
        };
        if let Some(st) = got {
            let (report, _) = comm.recv_value::<Report>(Source::Rank(st.source), TagMatch::Tag(TAG_REQUEST))?;
            if let Some(r) = report {
                results.push(r);
            }
            idle.push(st.source);
        }
        if queue.is_empty() && !exhausted && (!results.is_empty() || !idle.is_empty()) {
            let up: Up = (std::mem::take(&mut results), idle.len().max(1) as u32);
            comm.send_value(0, TAG_UP, &up)?;
            let (batch, _) = comm.recv_value::<Option<Vec<Task>>>(Source::Rank(0), TagMatch::Tag(TAG_DOWN))?;
            match batch {
                None => exhausted = true,
                Some(b) if b.is_empty() => std::thread::sleep(std::time::Duration::from_micros(200)),
                Some(b) => queue.extend(b),
            }
        }
        while let Some(&w) = idle.last() {
            if let Some(t) = queue.pop_front() {
                comm.send_value(w, TAG_TASK, &Some(t))?;
            } else if exhausted {
                comm.send_value(w, TAG_TASK, &None::<Task>)?;
                active -= 1;
            } else {
                break;
            }
            idle.pop();
        }
    }
    Ok(())
}

/// Seconds per task spent outside the task itself, measured by running
/// `tasks` empty tasks on `workers` threads (the scheduling overhead).
pub fn scheduling_overhead(workers: usize, tasks: u64) -> f64 {
    let spec = SweepSpec {
        points: crate::spec::grid(&[("x".into(), vec![serde_json::Value::from(0)])]),
        replications: Replications::Fixed(tasks),
        confidence: 0.95,
        common_random_numbers: false,
        retries: 0,
        seed: 0,
        faults: Vec::new(),
        kills: Vec::new(),
    };
    let empty = |_: &Task, s: u64| Ok(Metrics::from([("x".to_string(), s as f64)]));
    let t0 = Instant::now();
    let _ = run_threads(&spec, workers, &empty, &mut Store::memory(), Vec::new(), &|_| {});
    t0.elapsed().as_secs_f64() * workers as f64 / tasks as f64
}

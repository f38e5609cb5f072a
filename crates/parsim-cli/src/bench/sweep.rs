//! `parsim bench sweep`: parallel efficiency of a 200-task sweep at 1 and 2
//! workers (a fixed-work CPU task of about 5 ms, and the epidemic scenario's
//! own tasks), and the scheduling overhead per task (empty tasks), each
//! against the 1-worker run measured in the same invocation.

use super::median;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use parsim_core::rng::StreamKey;
use parsim_sweep::{exec, spec, Metrics, Replications, Store, SweepSpec, Task};
use serde::Serialize;

use parsim::write_atomic;

/// The report.
#[derive(Serialize)]
struct Report {
    cpu_task_ms: f64,
    cpu_efficiency_w2: f64,
    cpu_busy_fraction_w2: f64,
    epidemic_task_ms: f64,
    epidemic_efficiency_w2: f64,
    overhead_us_w1: f64,
    overhead_us_w2: f64,
    overhead_us_fsync_log: f64,
    isolate_thread_s: f64,
    isolate_process_s: f64,
    isolate_process_extra_ms_per_task: f64,
}

fn spec_of(tasks: u64) -> SweepSpec {
    SweepSpec {
        points: spec::grid(&[("x".into(), vec![serde_json::json!(1)])]),
        replications: Replications::Fixed(tasks),
        confidence: 0.95,
        common_random_numbers: false,
        retries: 0,
        seed: 1,
        faults: Vec::new(),
        kills: Vec::new(),
    }
}

/// About `draws` Philox draws: a task of fixed work.
fn cpu_task(draws: u64) -> impl Fn(&Task, u64) -> std::result::Result<Metrics, String> + Sync {
    move |_t, seed| {
        let mut s = StreamKey::new(seed).purpose("bench").stream();
        let mut acc = 0.0;
        for _ in 0..draws {
            acc += s.uniform();
        }
        Ok(Metrics::from([("x".to_string(), acc)]))
    }
}

/// Wall time of the sweep on `w` workers, and the time spent inside tasks (summed over workers).
fn time(spec: &SweepSpec, w: usize, runner: &exec::Runner<'_>) -> (f64, f64) {
    let busy = std::sync::Mutex::new(0.0);
    let timed = |t: &Task, s: u64| {
        let t0 = Instant::now();
        let r = runner(t, s);
        *busy.lock().expect("busy") += t0.elapsed().as_secs_f64();
        r
    };
    let t0 = Instant::now();
    exec::run_threads(spec, w, &timed, &mut Store::memory(), Vec::new(), &|_| {}).expect("sweep");
    (t0.elapsed().as_secs_f64(), busy.into_inner().expect("busy"))
}

/// Runs the benchmark.
pub fn run(out: PathBuf, quick: bool, reps: usize) -> Result<()> {
    let tasks = if quick { 40 } else { 200 };
    let spec = spec_of(tasks);
    // ~5 ms of work per task.
    let probe = Instant::now();
    cpu_task(200_000)(&Task { point: 0, replication: 0, attempt: 0 }, 0).ok();
    let per = probe.elapsed().as_secs_f64();
    let draws = ((0.005 / per.max(1e-9)) * 200_000.0) as u64;
    let cpu = cpu_task(draws.max(1000));
    let (mut t1, mut t2, mut u2) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        t1.push(time(&spec, 1, &cpu).0);
        let (wall, busy) = time(&spec, 2, &cpu);
        t2.push(wall);
        u2.push(busy / (2.0 * wall));
    }
    let (c1, c2, cu) = (median(t1), median(t2), median(u2));
    // The epidemic scenario's tasks, through the scenario runner.
    let text = "[run]\nmodel = \"epidemic\"\n\n[abm]\npopulation = \"er\"\nagents = 5000\nmean_degree = 10\ngraph_seed = 5\ndays = 120\n";
    let sc = parsim::Scenario::parse(std::path::Path::new("bench.toml"), text.to_string())?;
    let exp = crate::models::epidemic_experiment();
    let scratch = std::env::temp_dir().join("parsim-bench-sweep");
    let epi = |_: &Task, seed: u64| -> std::result::Result<Metrics, String> {
        let o = exp.evaluate(&sc, seed, &scratch).map_err(|e| e.to_string())?;
        let a = o.metrics_map().get("attack_rate").and_then(|v| v.as_f64()).unwrap_or(0.0);
        Ok(Metrics::from([("attack_rate".to_string(), a)]))
    };
    let (mut e1, mut e2) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        e1.push(time(&spec, 1, &epi).0);
        e2.push(time(&spec, 2, &epi).0);
    }
    let (p1, p2) = (median(e1), median(e2));
    let n_empty = if quick { 20_000 } else { 200_000 };
    let o1 = median((0..reps).map(|_| exec::scheduling_overhead(1, n_empty)).collect());
    let o2 = median((0..reps).map(|_| exec::scheduling_overhead(2, n_empty)).collect());
    // With the fsync'd task log of a real sweep.
    let dir = std::env::temp_dir().join(format!("parsim-bench-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let small = spec_of(if quick { 200 } else { 2000 });
    let empty = |_: &Task, s: u64| Ok(Metrics::from([("x".to_string(), s as f64)]));
    let t0 = Instant::now();
    let (mut store, _) = Store::open(&dir.join("tasks.jsonl"), &small.fingerprint(), false, true)?;
    exec::run_threads(&small, 1, &empty, &mut store, Vec::new(), &|_| {})?;
    let of = t0.elapsed().as_secs_f64() / small_tasks(&small) as f64;
    // Process isolation: the same `parsim sweep` (epidemic tasks, 2 workers)
    // with tasks on the workers' threads and in supervised child processes.
    let file = dir.join("isolate.toml");
    std::fs::write(
        &file,
        format!("{text}\n[sweep]\nparameters = {{ \"abm.beta\" = [0.05, 0.07] }}\nreplications = {}\n", tasks / 2),
    )?;
    let exe = std::env::current_exe()?;
    let sweep = |isolate: &str| -> Result<f64> {
        let t0 = Instant::now();
        let o = std::process::Command::new(&exe)
            .arg("sweep")
            .arg(&file)
            .args(["--workers", "2", "--isolate", isolate, "--out"])
            .arg(dir.join(isolate))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(o.success(), "parsim sweep --isolate {isolate} failed");
        Ok(t0.elapsed().as_secs_f64())
    };
    let (mut it, mut ip) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        it.push(sweep("thread")?);
        ip.push(sweep("process")?);
    }
    let (st, sp) = (median(it), median(ip));
    let _ = std::fs::remove_dir_all(&dir);
    let r = Report {
        isolate_thread_s: st,
        isolate_process_s: sp,
        isolate_process_extra_ms_per_task: 1e3 * 2.0 * (sp - st) / tasks as f64,
        cpu_task_ms: 1e3 * c1 / tasks as f64,
        cpu_efficiency_w2: c1 / (2.0 * c2),
        cpu_busy_fraction_w2: cu,
        epidemic_task_ms: 1e3 * p1 / tasks as f64,
        epidemic_efficiency_w2: p1 / (2.0 * p2),
        overhead_us_w1: o1 * 1e6,
        overhead_us_w2: o2 * 1e6,
        overhead_us_fsync_log: of * 1e6,
    };
    println!("{tasks} tasks, medians of {reps} runs (W = 1 and 2 interleaved)");
    println!(
        "  CPU task ({:.2} ms):      W=1 {c1:.3} s, W=2 {c2:.3} s, efficiency at W=2 {:.3}; workers busy in tasks {:.4} of W=2's wall time",
        r.cpu_task_ms, r.cpu_efficiency_w2, r.cpu_busy_fraction_w2
    );
    println!(
        "  epidemic task ({:.2} ms): W=1 {p1:.3} s, W=2 {p2:.3} s, efficiency at W=2 {:.3}",
        r.epidemic_task_ms, r.epidemic_efficiency_w2
    );
    println!(
        "  scheduling overhead per task: {:.2} µs (W=1), {:.2} µs (W=2, per worker), {:.1} µs with the fsync'd log",
        r.overhead_us_w1, r.overhead_us_w2, r.overhead_us_fsync_log
    );
    println!(
        "  parsim sweep, epidemic tasks, W=2: isolate = thread {st:.3} s, process {sp:.3} s ({:.2}×, {:+.2} ms per task per worker)",
        sp / st,
        r.isolate_process_extra_ms_per_task
    );
    write_atomic(&out, serde_json::to_string_pretty(&r)?.as_bytes())?;
    println!("→ {}", out.display());
    Ok(())
}

fn small_tasks(s: &SweepSpec) -> u64 {
    match s.replications {
        Replications::Fixed(n) => n * s.points.len() as u64,
        Replications::Until { max, .. } => max,
    }
}

//! The closed queueing network against Little's law and its exact
//! product-form (Gordon–Newell / BCMP) solution.

use parsim_des::models::{QueueStats, Queues};
use parsim_des::{DesConfig, Engine};

fn measure(q: &Queues, engine: Engine, ranks: usize) -> QueueStats {
    let reports = crate::support::run(q, &DesConfig::new(engine).seed(2), ranks);
    let mut st = QueueStats::default();
    for r in &reports {
        for (_, s) in &r.states {
            st.add(s, q);
        }
    }
    st
}

#[test]
fn littles_law_and_gordon_newell() {
    let q = Queues { width: 4, height: 3, jobs_per_server: 2, service: 1.0, transit: 0.5, end: 20_000.0, warmup: 0.0 };
    let st = measure(&q, Engine::Sequential, 1);
    let (l, x, w) = (st.mean_queue(), st.throughput(), st.mean_sojourn());
    // Little's law L = λW holds up to the jobs in service at the end.
    assert!((l - x * w).abs() / l < 0.01, "Little: L {l} vs λW {}", x * w);
    let (l_exact, x_exact) = q.exact();
    assert!((l - l_exact).abs() / l_exact < 0.03, "mean queue {l} vs exact {l_exact}");
    assert!((x - x_exact).abs() / x_exact < 0.02, "throughput {x} vs exact {x_exact}");
    // The population is conserved: jobs at servers + jobs in transit (λ·transit, Little
    // again) = 2 per server.
    assert!((l + x * q.transit - 2.0).abs() < 0.01, "{l} + {x}·{}", q.transit);
}

#[test]
fn exact_solution_of_a_single_server_ring() {
    // One server, one job: it alternates between service (mean 1) and transit (0.5):
    // throughput 1/1.5, mean queue 1/1.5.
    let q = Queues { width: 1, height: 1, jobs_per_server: 1, service: 1.0, transit: 0.5, end: 1.0, warmup: 0.0 };
    let (l, x) = q.exact();
    assert!((x - 1.0 / 1.5).abs() < 1e-12 && (l - 1.0 / 1.5).abs() < 1e-12, "{l} {x}");
}

#[test]
fn parallel_runs_measure_the_same_network() {
    let q = Queues { width: 4, height: 4, jobs_per_server: 3, service: 1.0, transit: 0.25, end: 300.0, warmup: 0.0 };
    let want = measure(&q, Engine::Sequential, 1);
    for (engine, ranks) in [(Engine::Optimistic, 3), (Engine::Conservative, 4), (Engine::Window, 2)] {
        assert_eq!(measure(&q, engine, ranks), want, "{} on {ranks}", engine.name());
    }
}

/// The queueing model under reverse computation: the same committed history
/// and the same final servers as state copies and the sequential engine,
/// with rollbacks provoked (chaos, no window).
#[test]
fn reverse_computation_commits_what_state_copies_commit() {
    let q = Queues { width: 5, height: 4, jobs_per_server: 3, service: 1.0, transit: 0.05, end: 80.0, warmup: 8.0 };
    let seq = crate::support::run(&q, &DesConfig::new(Engine::Sequential).seed(5), 1);
    let states = |reports: &[parsim_des::Report<parsim_des::models::Server>]| {
        let mut all: Vec<_> = reports.iter().flat_map(|r| r.states.clone()).collect();
        all.sort_by_key(|(id, _)| *id);
        all
    };
    let base = DesConfig::new(Engine::Optimistic).seed(5).chaos(3).gvt_interval(200).window(f64::INFINITY);
    for cfg in [base.clone().state_saving(parsim_des::StateSaving::Reverse), base.clone().checkpoint_every(3)] {
        for ranks in [2, 4] {
            let tw = crate::support::run(&q, &cfg, ranks);
            assert_eq!(tw[0].digest, seq[0].digest, "{cfg:?} on {ranks}");
            assert_eq!(states(&tw), states(&seq), "{cfg:?} on {ranks}: the final servers differ");
            if ranks == 4 {
                assert!(tw[0].total.rolled_back > 0, "no rollback provoked");
            }
        }
    }
}

/// The warm-up leaves the start-up transient out: with it, the measured
/// mean queue is within its tolerance of the exact value on a short run
/// where counting from time 0 biases it (every job starts queued).
#[test]
fn the_warm_up_leaves_the_transient_out() {
    let mut q = Queues { width: 4, height: 4, jobs_per_server: 3, service: 1.0, transit: 0.5, end: 400.0, warmup: 0.0 };
    let cold = measure(&q, Engine::Sequential, 1);
    q.warmup = 100.0;
    let warm = measure(&q, Engine::Sequential, 1);
    assert_eq!(warm.end, 300.0);
    assert!(warm.completions < cold.completions && warm.completions > 0);
    // Little's law holds on the window as it does from 0.
    let (l, x, w) = (warm.mean_queue(), warm.throughput(), warm.mean_sojourn());
    assert!((l - x * w).abs() / l < 0.03, "Little on the window: L {l} vs λW {}", x * w);
    assert!(Queues { warmup: 400.0, ..q }.validate().is_err());
    assert!(Queues { warmup: -1.0, ..q }.validate().is_err());
}

//! The closed queueing network against Little's law and its exact
//! product-form (Gordon–Newell / BCMP) solution.

use parsim_des::models::{QueueStats, Queues};
use parsim_des::{DesConfig, Engine};

fn measure(q: &Queues, engine: Engine, ranks: usize) -> QueueStats {
    let reports = crate::support::run(q, &DesConfig::new(engine).seed(2), ranks);
    let mut st = QueueStats::default();
    for r in &reports {
        for (_, s) in &r.states {
            st.add(s, q.end);
        }
    }
    st
}

#[test]
fn littles_law_and_gordon_newell() {
    let q = Queues { width: 4, height: 3, jobs_per_server: 2, service: 1.0, transit: 0.5, end: 20_000.0 };
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
    let q = Queues { width: 1, height: 1, jobs_per_server: 1, service: 1.0, transit: 0.5, end: 1.0 };
    let (l, x) = q.exact();
    assert!((x - 1.0 / 1.5).abs() < 1e-12 && (l - 1.0 / 1.5).abs() < 1e-12, "{l} {x}");
}

#[test]
fn parallel_runs_measure_the_same_network() {
    let q = Queues { width: 4, height: 4, jobs_per_server: 3, service: 1.0, transit: 0.25, end: 300.0 };
    let want = measure(&q, Engine::Sequential, 1);
    for (engine, ranks) in [(Engine::Optimistic, 3), (Engine::Conservative, 4), (Engine::Window, 2)] {
        assert_eq!(measure(&q, engine, ranks), want, "{} on {ranks}", engine.name());
    }
}

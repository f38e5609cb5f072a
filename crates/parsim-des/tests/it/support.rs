//! Running a model on N threads and comparing digests.

use parsim_core::Digest;
use parsim_des::{DesConfig, DesStats, Engine, Model, Report};

/// Runs `model` on `ranks` threads; every rank's report.
pub fn run<M: Model>(model: &M, cfg: &DesConfig, ranks: usize) -> Vec<Report<M::State>> {
    parsim_comm::launch(ranks, |comm| parsim_des::run(&comm, model, cfg))
        .unwrap_or_else(|e| panic!("{} on {ranks} ranks failed: {e}", cfg.engine.name()))
}

/// The digest and total counters, checking every rank agrees.
pub fn digest<M: Model>(model: &M, cfg: &DesConfig, ranks: usize) -> (Digest, DesStats) {
    let reports = run(model, cfg, ranks);
    for r in &reports {
        assert_eq!(r.digest, reports[0].digest, "ranks disagree on the digest");
        assert_eq!(r.total.committed, reports[0].total.committed);
    }
    (reports[0].digest, reports[0].total.clone())
}

/// Checks that every engine at every rank count commits the sequential history.
pub fn all_engines_agree<M: Model>(model: &M, ranks: &[usize], base: &DesConfig) {
    let seq = DesConfig { engine: Engine::Sequential, ..base.clone() };
    let (want, stats) = digest(model, &seq, 1);
    assert!(stats.committed > 0, "the model committed nothing");
    for engine in [Engine::Conservative, Engine::Window, Engine::Optimistic] {
        for &r in ranks {
            let cfg = DesConfig { engine, ..base.clone() };
            let (got, s) = digest(model, &cfg, r);
            assert_eq!(s.committed, stats.committed, "{} on {r} ranks: committed count", engine.name());
            assert_eq!(got, want, "{} on {r} ranks: digest differs from sequential", engine.name());
        }
    }
}

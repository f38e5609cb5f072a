//! What a run counts.

use serde::{Deserialize, Serialize};

/// Counters of one rank, or of all ranks summed ([`DesStats::merge`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DesStats {
    /// Events committed (never to be rolled back).
    pub committed: u64,
    /// Events executed, including those later rolled back (and re-executions).
    pub processed: u64,
    /// Executions undone by rollbacks.
    pub rolled_back: u64,
    /// Rollbacks caused by a straggler (an event in an LP's past).
    pub rollbacks_primary: u64,
    /// Rollbacks caused by an anti-message for an event already executed.
    pub rollbacks_secondary: u64,
    /// Anti-messages sent.
    pub anti_messages: u64,
    /// Messages lazy cancellation did not have to cancel (re-execution sent them again).
    pub lazy_reused: u64,
    /// Events executed again, without sending, to rebuild a state after a rollback.
    pub coasted: u64,
    /// GVT rounds (Time Warp) or windows (window engine).
    pub gvt_rounds: u64,
    /// Null messages sent (conservative).
    pub null_messages: u64,
    /// Real events sent to another rank.
    pub remote_events: u64,
    /// Messages (batches, nulls, anti-messages, tokens) sent to other ranks.
    pub messages: u64,
    /// The most processed-but-uncommitted events a rank held (max over ranks).
    pub peak_uncommitted: u64,
    /// The most pending events a rank held (max over ranks).
    pub peak_pending: u64,
    /// Peak bytes held in events and saved states (max over ranks; an estimate).
    pub peak_memory_bytes: u64,
    /// Times the memory limit throttled a rank.
    pub throttled: u64,
    /// Seconds in the main loop (max over ranks).
    pub main_loop_s: f64,
    /// Seconds from the start of `run` to the end (max over ranks).
    pub total_s: f64,
}

impl DesStats {
    /// Adds another rank's counters (sums counts, takes the max of peaks and times).
    pub fn merge(&mut self, o: &DesStats) {
        self.committed += o.committed;
        self.processed += o.processed;
        self.rolled_back += o.rolled_back;
        self.rollbacks_primary += o.rollbacks_primary;
        self.rollbacks_secondary += o.rollbacks_secondary;
        self.anti_messages += o.anti_messages;
        self.lazy_reused += o.lazy_reused;
        self.coasted += o.coasted;
        self.gvt_rounds = self.gvt_rounds.max(o.gvt_rounds);
        self.null_messages += o.null_messages;
        self.remote_events += o.remote_events;
        self.messages += o.messages;
        self.peak_uncommitted = self.peak_uncommitted.max(o.peak_uncommitted);
        self.peak_pending = self.peak_pending.max(o.peak_pending);
        self.peak_memory_bytes = self.peak_memory_bytes.max(o.peak_memory_bytes);
        self.throttled += o.throttled;
        self.main_loop_s = self.main_loop_s.max(o.main_loop_s);
        self.total_s = self.total_s.max(o.total_s);
    }

    /// 1 − rolled back / committed (1 for engines that never roll back).
    pub fn efficiency(&self) -> f64 {
        if self.committed == 0 {
            1.0
        } else {
            1.0 - self.rolled_back as f64 / self.committed as f64
        }
    }

    /// Null messages per real event sent to another rank.
    pub fn null_ratio(&self) -> f64 {
        if self.remote_events == 0 {
            if self.null_messages == 0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            self.null_messages as f64 / self.remote_events as f64
        }
    }

    /// Committed events per second of the main loop.
    pub fn rate_main_loop(&self) -> f64 {
        self.committed as f64 / self.main_loop_s.max(1e-12)
    }

    /// Committed events per second of the whole run.
    pub fn rate_total(&self) -> f64 {
        self.committed as f64 / self.total_s.max(1e-12)
    }
}

//! How to run a model: which engine and its knobs.

use serde::{Deserialize, Serialize};

/// The synchronisation engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// One pending-event set, one rank (other ranks wait).
    Sequential,
    /// Chandy–Misra–Bryant with null messages.
    Conservative,
    /// Synchronous windows of width lookahead (YAWNS).
    Window,
    /// Time Warp.
    Optimistic,
}

impl Engine {
    /// Parses `sequential | conservative | window | optimistic`.
    pub fn parse(s: &str) -> Option<Engine> {
        Some(match s {
            "sequential" => Engine::Sequential,
            "conservative" => Engine::Conservative,
            "window" => Engine::Window,
            "optimistic" => Engine::Optimistic,
            _ => return None,
        })
    }

    /// The name [`parse`](Self::parse) accepts.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sequential => "sequential",
            Engine::Conservative => "conservative",
            Engine::Window => "window",
            Engine::Optimistic => "optimistic",
        }
    }

    /// All engines.
    pub const ALL: [Engine; 4] = [Engine::Sequential, Engine::Conservative, Engine::Window, Engine::Optimistic];
}

/// How Time Warp restores an LP's state on rollback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateSaving {
    /// Copy the state every `checkpoint_every` events; coast forward from the copy.
    Copy,
    /// Undo events with the model's reverse handler (no copies).
    Reverse,
}

/// How Time Warp cancels the messages of rolled-back events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cancellation {
    /// Send the anti-messages at once.
    Aggressive,
    /// Hold them back; re-execution that sends the same message again keeps
    /// the original. Pays off for handlers whose sends do not depend on what
    /// the straggler changed — the event's random stream is keyed by the
    /// LP's event count, which a straggler shifts, so draws differ after one.
    Lazy,
}

/// How Time Warp computes GVT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GvtAlgorithm {
    /// Mattern's two-colour cut, passed round the ranks as a token while they keep processing.
    Mattern,
    /// Every rank stops, in-flight messages are drained, then a global minimum.
    Synchronous,
}

/// Engine configuration. Build with [`DesConfig::new`] and the setters.
///
/// ```
/// use parsim_des::{DesConfig, Engine};
/// let cfg = DesConfig::new(Engine::Optimistic).seed(7).checkpoint_every(4).memory_limit(100_000);
/// assert_eq!(cfg.engine, Engine::Optimistic);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesConfig {
    /// The engine.
    pub engine: Engine,
    /// The seed of every random stream.
    pub seed: u64,
    /// Time Warp: save an LP's state every this many of its events.
    pub checkpoint_every: u32,
    /// Time Warp: copy state saving or reverse computation.
    pub state_saving: StateSaving,
    /// Time Warp: aggressive or lazy cancellation.
    pub cancellation: Cancellation,
    /// Time Warp: the GVT algorithm.
    pub gvt: GvtAlgorithm,
    /// Time Warp: events a rank processes between GVT rounds it starts (rank 0) or between polls.
    pub gvt_interval: u64,
    /// Time Warp: the most processed-but-uncommitted events a rank may hold.
    pub memory_limit: u64,
    /// Time Warp: execute only events below GVT + this (the optimism window).
    /// `None` (the default) is 5 × the model's lookahead, or unbounded when
    /// the lookahead is 0; `Some(f64::INFINITY)` is unbounded.
    pub window: Option<f64>,
    /// Events processed between polls of the network (optimistic, conservative).
    pub batch: u32,
    /// Testing aid: when non-zero, Time Warp randomises its batch sizes and
    /// yields the CPU at random (seeded by this value), to shake out orderings.
    #[doc(hidden)]
    pub chaos: u64,
}

impl DesConfig {
    /// Defaults for `engine`.
    pub fn new(engine: Engine) -> Self {
        DesConfig {
            engine,
            seed: 0,
            checkpoint_every: 1,
            state_saving: StateSaving::Copy,
            cancellation: Cancellation::Aggressive,
            gvt: GvtAlgorithm::Mattern,
            gvt_interval: 4096,
            memory_limit: 4_000_000,
            window: None,
            batch: 256,
            chaos: 0,
        }
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the checkpoint interval (events per saved state).
    pub fn checkpoint_every(mut self, n: u32) -> Self {
        self.checkpoint_every = n;
        self
    }

    /// Sets the state-saving method.
    pub fn state_saving(mut self, s: StateSaving) -> Self {
        self.state_saving = s;
        self
    }

    /// Sets the cancellation policy.
    pub fn cancellation(mut self, c: Cancellation) -> Self {
        self.cancellation = c;
        self
    }

    /// Sets the GVT algorithm.
    pub fn gvt(mut self, g: GvtAlgorithm) -> Self {
        self.gvt = g;
        self
    }

    /// Sets the GVT interval.
    pub fn gvt_interval(mut self, n: u64) -> Self {
        self.gvt_interval = n;
        self
    }

    /// Sets the memory limit (uncommitted events per rank).
    pub fn memory_limit(mut self, n: u64) -> Self {
        self.memory_limit = n;
        self
    }

    /// Sets the optimism window beyond GVT (`f64::INFINITY`: unbounded).
    pub fn window(mut self, w: f64) -> Self {
        self.window = Some(w);
        self
    }

    /// The optimism window for a model with lookahead `la`.
    pub fn window_for(&self, la: f64) -> f64 {
        self.window.unwrap_or(if la > 0.0 { 5.0 * la } else { f64::INFINITY })
    }

    /// Sets the batch (events between network polls).
    #[doc(hidden)]
    pub fn chaos(mut self, seed: u64) -> Self {
        self.chaos = seed;
        self
    }

    /// Sets the batch (events between network polls).
    pub fn batch(mut self, n: u32) -> Self {
        self.batch = n;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.checkpoint_every == 0 {
            return Err("checkpoint_every must be at least 1".into());
        }
        if self.gvt_interval == 0 {
            return Err("gvt_interval must be at least 1".into());
        }
        if self.memory_limit == 0 {
            return Err("memory_limit must be at least 1 event".into());
        }
        if let Some(w) = self.window {
            if w.is_nan() || w <= 0.0 {
                return Err(format!("window must be > 0 (got {w})"));
            }
        }
        if self.batch == 0 {
            return Err("batch must be at least 1".into());
        }
        Ok(())
    }
}

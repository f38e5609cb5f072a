//! One rank's checkpointing: when to take one, the snapshot, the partner
//! copy, the manifest, the background write, fault injection.

use std::path::PathBuf;
use std::time::Instant;

use parsim_comm::{Comm, ReduceOp, Source, TagMatch};
use parsim_core::Phase;
use serde::Serialize;
use serde_json::{json, Value};

use crate::format::{self, Manifest, Piece, FORMAT_VERSION};
use crate::inject::{Fault, Injection, KillWhen};
use crate::restart::{self, Restart};
use crate::store::{data_path, manifest_path, manifest_seqs, Item, Job, Keep, Level, Writer, WriterFaults};
use crate::{daly, CkptError, Identity, Interval};

/// The tag of partner copies.
const PARTNER_TAG: u32 = 7_900;
/// The tag of the replicas' comparison.
const REPLICA_TAG: u32 = 7_901;

/// How a run checkpoints.
#[derive(Clone, Debug)]
pub struct Options {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// When; `None`: no checkpoints (faults and restarts still work).
    pub interval: Option<Interval>,
    /// Keep a partner copy (level 2).
    pub partner: bool,
    /// Every this many checkpoints also goes to the shared directory
    /// (level 3); 0: never.
    pub shared_every: u64,
    /// Retention per level.
    pub keep: Keep,
    /// Write in a background thread (default) or in the simulation's.
    pub asynchronous: bool,
    /// Restart from this directory's newest valid checkpoint.
    pub restart: Option<PathBuf>,
    /// With `restart`: start from the beginning when it holds no
    /// checkpoint yet (supervised relaunches) instead of refusing.
    pub restart_may_be_empty: bool,
    /// Injected faults.
    pub inject: Vec<Injection>,
    /// Which launch this is (0: the first; faults fire only then).
    pub attempt: u32,
    /// Replicated execution: (this rank's replica, replicas). Replica 0
    /// writes the checkpoints; faults are injected into replica 0 only.
    pub replica: (usize, usize),
}

impl Options {
    /// Checkpoints in `dir` every `interval`, with the defaults: partner
    /// copies, every 4th to the shared level, keep 2 of each, asynchronous.
    pub fn new(dir: impl Into<PathBuf>, interval: Option<Interval>) -> Self {
        Options {
            dir: dir.into(),
            interval,
            partner: true,
            shared_every: 4,
            keep: Keep::default(),
            asynchronous: true,
            restart: None,
            restart_may_be_empty: false,
            inject: Vec::new(),
            attempt: 0,
            replica: (0, 1),
        }
    }
}

/// What the engine should do at a boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    /// Take a checkpoint now ([`Checkpointer::save`], on every rank).
    pub checkpoint: bool,
    /// Corrupt one value of this rank's state (an injected bit flip).
    pub bitflip: bool,
}

/// What checkpointing cost, for the summary (this rank).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Checkpoints taken.
    pub checkpoints: u64,
    /// Time the simulation stood still for them: serialising, hashing,
    /// the partner exchange (and, when synchronous, the write).
    pub snapshot_s: f64,
    /// Background time compressing and writing (in the writer thread).
    pub write_s: f64,
    /// Of which compressing.
    pub compress_s: f64,
    /// Raw state bytes of every file written (own, partner and shared copies).
    pub raw_bytes: u64,
    /// Bytes written to files.
    pub file_bytes: u64,
    /// Files written.
    pub files: u64,
    /// Failed writes (also logged).
    pub failures: Vec<String>,
    /// The boundaries checkpointed.
    pub at: Vec<u64>,
    /// For `auto`: the intervals chosen (seconds), one per estimate.
    pub tau_s: Vec<f64>,
    /// Boundaries the engine reported.
    pub boundaries: u64,
    /// Injected jitter: seconds slept at boundaries.
    pub jitter_s: f64,
    /// Replicated execution: checkpoints whose state was compared with
    /// the other replica's (and found equal).
    pub replica_checks: u64,
    /// Replicated execution: checkpoints not compared because the
    /// replicas took them at different positions (Time Warp's GVT).
    pub replica_skipped: u64,
    /// A restart: the old ranks' pieces this rank read (each piece is read
    /// by one rank, whatever the rank counts) …
    pub restart_pieces_read: u64,
    /// … and their raw bytes.
    pub restart_bytes_read: u64,
}

/// One rank's checkpointer; every method marked collective must be called
/// by every rank at the same boundary.
pub struct Checkpointer<'c, C: Comm> {
    comm: &'c C,
    opts: Options,
    id: Identity,
    seq: u64,
    taken: u64,
    /// The writer (it also holds the faults armed for this launch).
    writer: Writer,
    stats: Stats,
    restart: Option<Restart>,
    /// What the engine read of the restart's checkpoint on this rank.
    restart_taken: Option<std::sync::Arc<restart::Taken>>,
    /// For time-based intervals: the next boundary to checkpoint at.
    next_due: Option<u64>,
    /// The boundary and time of the last estimate.
    mark: (u64, Instant),
    /// The measured cost of one checkpoint (max over ranks), seconds.
    delta: Option<f64>,
    /// Interval estimates from this rank's own measurements (no collective).
    local: bool,
    /// Replicated execution: the communicator of all replicas (this
    /// rank's counterpart in the other replica is `rank ± size`).
    world: Option<&'c C>,
}

impl<'c, C: Comm> Checkpointer<'c, C> {
    /// Sets up checkpointing for this rank (collective): checks the
    /// injections, finds the checkpoint to restart from (when asked), and
    /// numbers new checkpoints after every existing one.
    pub fn new(comm: &'c C, opts: Options, id: Identity) -> Result<Self, CkptError> {
        // A relaunch keeps the flags but arms no faults (and may run on
        // fewer ranks than the faults name).
        if opts.replica.1 > 1 && !matches!(opts.interval, Some(Interval::Every(_))) {
            return Err(CkptError::Input(
                "--replicate compares the replicas' states at checkpoints: it needs --checkpoint-every N \
                 (a time-based interval could fall at different boundaries in each replica)"
                    .into(),
            ));
        }
        if opts.replica.1 > 1 && id.unit == "gvt" {
            return Err(CkptError::Input(
                "--replicate: Time Warp's GVT rounds fall at different simulated times in each replica, so their \
                 checkpoints cannot be compared; replicate the other engines (des.engine = \"window\", \
                 \"conservative\", \"sequential\" give the same digest)"
                    .into(),
            ));
        }
        for i in opts.inject.iter().filter(|_| opts.attempt == 0) {
            i.check(&id.unit, comm.size())?;
        }
        if let Some(Interval::Every(0)) = opts.interval {
            return Err(CkptError::Input("--checkpoint-every 0: the interval must be at least 1".into()));
        }
        let restart = match &opts.restart {
            None => None,
            Some(dir) => match restart::find(comm, dir, &id) {
                Ok(Some(r)) => Some(r),
                // A relaunch before any checkpoint was whole starts over.
                Ok(None) | Err(CkptError::NothingValid { .. }) if opts.restart_may_be_empty => {
                    if comm.rank() == 0 {
                        tracing::warn!("no usable checkpoint in {} yet: starting from the beginning", dir.display());
                    }
                    None
                }
                Ok(None) => {
                    return Err(CkptError::NothingValid {
                        dir: dir.clone(),
                        reasons: vec!["it holds no checkpoint manifest (manifests/c*.json)".into()],
                    })
                }
                Err(e) => return Err(e),
            },
        };
        let seq = if comm.rank() == 0 { manifest_seqs(&opts.dir).first().map_or(1, |s| s + 1) } else { 0 };
        let seq = comm.broadcast_value(0, &seq)?;
        let faults = WriterFaults {
            rank: comm.rank(),
            // Faults hit replica 0 only: a replica is the other's witness.
            faults: if opts.attempt == 0 && opts.replica.0 == 0 {
                opts.inject.iter().map(|i| i.fault.clone()).collect()
            } else {
                Vec::new()
            },
            mpi: comm.backend() == "mpi",
        };
        let writer = Writer::new(opts.asynchronous, format!("parsim-ckpt-{}", comm.rank()), faults)
            .map_err(|e| CkptError::Io(format!("cannot start the checkpoint writer: {e}")))?;
        let start = restart.as_ref().map_or(0, |r| r.manifest.boundary);
        Ok(Checkpointer {
            comm,
            opts,
            id,
            seq,
            taken: 0,
            writer,
            stats: Stats::default(),
            restart_taken: restart.as_ref().map(|r| r.taken.clone()),
            restart,
            next_due: None,
            mark: (start, Instant::now()),
            delta: None,
            local: false,
            world: None,
        })
    }

    /// Replicated execution: `world` holds every replica's ranks (this
    /// checkpointer's communicator is this replica's). At every checkpoint
    /// the state is compared with the other replica's before anything is
    /// written; a difference is a silent error ([`CkptError::Silent`]) and
    /// nothing is saved, so the run rolls back to the last checkpoint.
    pub fn replicated(&mut self, world: &'c C) {
        if self.opts.replica.1 > 1 {
            self.world = Some(world);
        }
    }

    /// For engines whose ranks reach boundaries at different moments (Time
    /// Warp's GVT rounds): [`boundary`](Self::boundary) never communicates,
    /// and the engine acts on one rank's decision (rank 0's) for everyone.
    pub fn decide_locally(&mut self) {
        self.local = true;
    }

    /// The communicator the checkpoints are taken over.
    pub fn comm(&self) -> &'c C {
        self.comm
    }

    /// The checkpoint to restart from, once (the engine loads it).
    pub fn take_restart(&mut self) -> Option<Restart> {
        self.restart.take()
    }

    /// Whether this run restarts from a checkpoint (before it is taken).
    pub fn restarting(&self) -> Option<&Restart> {
        self.restart.as_ref()
    }

    /// Whether boundary `b` needs the engine's state at that very boundary:
    /// a checkpoint every n boundaries that falls on it, or an injected bit
    /// flip (on any rank, so that every rank answers the same). An engine
    /// that advances several boundaries at once (the grid's temporal
    /// blocking) stops at such a boundary, and calls
    /// [`boundary`](Self::boundary) for the others afterwards, in order: a
    /// checkpoint that a time-based interval makes due at one of them stays
    /// due at the next boundary the engine stops at.
    ///
    /// ```
    /// use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
    ///
    /// let dir = std::env::temp_dir().join(format!("parsim-needs-doc-{}", std::process::id()));
    /// parsim_comm::launch(1, |c| {
    ///     let opts = Options::new(&dir, Some(Interval::Every(10)));
    ///     let ck = Checkpointer::new(&c, opts, Identity::new("grid", "step", "f00d", 1))?;
    ///     assert!(ck.needs_state_at(20) && !ck.needs_state_at(21));
    ///     ck.finish();
    ///     Ok::<_, parsim_ckpt::CkptError>(())
    /// })
    /// .unwrap();
    /// std::fs::remove_dir_all(&dir).ok();
    /// ```
    pub fn needs_state_at(&self, b: u64) -> bool {
        let every = matches!(self.opts.interval, Some(Interval::Every(n)) if b % n == 0);
        every || self.writer.faults.faults.iter().any(|f| matches!(*f, Fault::Bitflip { at, .. } if at == b))
    }

    /// The engine has finished boundary `b` (collective for time-based
    /// intervals). Fires injected faults, and says whether to checkpoint.
    pub fn boundary(&mut self, b: u64) -> Result<Action, CkptError> {
        let me = self.comm.rank();
        let mut act = Action::default();
        self.stats.boundaries += 1;
        if self.writer.killed.load(std::sync::atomic::Ordering::SeqCst) {
            self.die(&format!("injected kill during a checkpoint write ({} {b})", self.id.unit));
        }
        for f in &self.writer.faults.faults {
            match *f {
                Fault::Kill { rank, at, when: KillWhen::Boundary } if rank == me && at == b => {
                    self.die(&format!("injected kill at {} {b}", self.id.unit));
                }
                Fault::Bitflip { rank, at } if rank == me && at == b => act.bitflip = true,
                Fault::Jitter { mean } => {
                    // Exponential, from a stream keyed by (rank, boundary).
                    let mut rng = parsim_core::rng::StreamKey::new(me as u64).purpose("parsim.jitter").with(b).stream();
                    let d = rng.exponential(1.0 / mean);
                    let t = Instant::now();
                    std::thread::sleep(std::time::Duration::from_secs_f64(d));
                    // What the delay really was (a sleep overshoots by the timer's slack).
                    self.stats.jitter_s += t.elapsed().as_secs_f64();
                }
                _ => {}
            }
        }
        act.checkpoint = match self.opts.interval {
            None => false,
            Some(Interval::Every(n)) => b % n == 0,
            Some(_) => {
                if self.next_due.is_none() {
                    self.estimate(b)?;
                }
                self.next_due.is_some_and(|d| b >= d)
            }
        };
        Ok(act)
    }

    fn die(&mut self, why: &str) -> ! {
        if self.writer.faults.mpi {
            tracing::error!("rank {}: {why}: SIGKILL", self.comm.rank());
            crate::inject::sigkill_self();
        }
        self.writer.abandon();
        panic!("{why}");
    }

    /// Chooses the next checkpoint boundary from the measured time per
    /// boundary and checkpoint cost (maxima over ranks, so every rank
    /// agrees). Collective.
    fn estimate(&mut self, b: u64) -> Result<(), CkptError> {
        let (b0, t0) = self.mark;
        let elapsed = t0.elapsed().as_secs_f64();
        let local = [elapsed, self.delta.unwrap_or(0.0)];
        let max = if self.local { local.to_vec() } else { self.comm.all_reduce(&local, ReduceOp::Max)? };
        let per = max[0] / (b.saturating_sub(b0)).max(1) as f64;
        let tau = match self.opts.interval {
            Some(Interval::Seconds(s)) => s,
            Some(Interval::Auto { mtbf }) => {
                // Before the first checkpoint its cost is unknown: one
                // boundary's time stands in, and is replaced once measured.
                let delta = if self.delta.is_some() { max[1] } else { per };
                let t = daly(delta.max(1e-6), mtbf);
                self.stats.tau_s.push(t);
                t
            }
            _ => return Ok(()),
        };
        let steps = (tau / per.max(1e-9)).round().clamp(1.0, 1e15) as u64;
        self.next_due = Some(b + steps);
        self.mark = (b, Instant::now());
        Ok(())
    }

    /// Takes a checkpoint of this rank's `state` at boundary `b`
    /// (collective). `meta` is what a restart needs to know about the piece
    /// before reading it (a block's extent); `partition` describes the
    /// partition (rank 0's is recorded).
    pub fn save<S: Serialize>(
        &mut self,
        b: u64,
        position: Value,
        meta: Value,
        partition: Value,
        state: &S,
    ) -> Result<(), CkptError> {
        let t0 = Instant::now();
        let _io = self.comm.clock().enter(Phase::Io);
        let (me, p) = (self.comm.rank(), self.comm.size());
        let raw = postcard::to_extend(state, self.writer.buffer())
            .map_err(|e| CkptError::Io(format!("serialising the state: {e}")))?;
        // JSON travels as text: postcard cannot carry a self-describing value.
        let sum = format::checksum(&raw);
        if let Some(world) = self.world {
            if !self.compare_replicas(world, b, &position, sum, raw.len() as u64)? {
                // Replica 1 only witnesses: replica 0 writes.
                self.writer.give_back(raw);
                self.taken_at(b, t0);
                return Ok(());
            }
        }
        let piece = (raw.len() as u64, format::hex(sum), meta.to_string());
        let seq = self.seq;
        let shared = self.opts.shared_every > 0 && self.taken % self.opts.shared_every == 0;
        let partner = self.opts.partner && p > 1;
        // The partner copy travels now, from the snapshot.
        let mut items = Vec::new();
        if partner {
            let mut copy = self.writer.buffer();
            copy.extend_from_slice(&raw);
            let send = self.comm.isend((me + 1) % p, PARTNER_TAG, copy)?;
            let from = (me + p - 1) % p;
            let got = self.comm.recv::<u8>(Source::Rank(from), TagMatch::Tag(PARTNER_TAG))?;
            parsim_comm::Request::wait(send)?;
            let path = data_path(&self.opts.dir, Level::Partner, seq, from, p);
            items.push(Item { seq, rank: from, raw: got.data, sum: None, paths: vec![(Level::Partner, path)] });
        }
        let mut paths = vec![(Level::Own, data_path(&self.opts.dir, Level::Own, seq, me, p))];
        if shared {
            paths.push((Level::Shared, data_path(&self.opts.dir, Level::Shared, seq, me, p)));
        }
        items.insert(0, Item { seq, rank: me, raw, sum: Some(sum), paths });
        // The newest checkpoint every rank's writer has finished: what
        // this one's pruning must keep (a rank's background writes may lag
        // the others' by several checkpoints).
        let done = self.writer.stats.lock().expect("stats").done;
        let whole = self.comm.all_reduce(&[done], ReduceOp::Min)?[0];
        let pieces = self.comm.gather_value(0, &piece)?;
        let manifest = match pieces {
            Some(pieces) => {
                let pieces = pieces
                    .into_iter()
                    .enumerate()
                    .map(|(rank, (bytes, xxh3, meta))| Piece {
                        rank,
                        bytes,
                        xxh3,
                        meta: serde_json::from_str(&meta).unwrap_or(Value::Null),
                    })
                    .collect();
                let m = Manifest {
                    format: FORMAT_VERSION,
                    engine: self.id.engine.clone(),
                    unit: self.id.unit.clone(),
                    fingerprint: self.id.fingerprint.clone(),
                    seed: self.id.seed,
                    seq,
                    boundary: b,
                    position,
                    ranks: p,
                    partner,
                    shared,
                    partition,
                    pieces,
                };
                let text = serde_json::to_vec_pretty(&m).map_err(|e| CkptError::Io(e.to_string()))?;
                Some((manifest_path(&self.opts.dir, seq), text))
            }
            None => None,
        };
        let dir = &self.opts.dir;
        let keep = self.opts.keep;
        let own_dir = dir.join(format!("rank-{me:04}"));
        let mut prune = vec![(own_dir.clone(), Level::Own, keep.own)];
        if partner {
            prune.push((own_dir, Level::Partner, keep.partner));
        }
        if shared && me == 0 {
            prune.push((dir.join("shared"), Level::Shared, keep.shared));
        }
        // Manifests outlive their newest files at any level.
        let keep_manifests = keep.own.max(keep.partner).max(keep.shared * self.opts.shared_every.max(1) as usize);
        let prune_manifests = (me == 0).then(|| (dir.clone(), keep_manifests));
        let job = Job { boundary: b, seq, whole, items, manifest, prune, prune_manifests };
        self.writer.submit(job);
        self.taken_at(b, t0);
        if matches!(self.opts.interval, Some(Interval::Seconds(_) | Interval::Auto { .. })) {
            drop(_io);
            self.estimate(b)?;
        }
        Ok(())
    }

    /// Records a checkpoint taken at boundary `b`, its stall measured from `t0`.
    fn taken_at(&mut self, b: u64, t0: Instant) {
        let stall = t0.elapsed().as_secs_f64();
        self.stats.snapshot_s += stall;
        self.stats.checkpoints += 1;
        self.stats.at.push(b);
        self.seq += 1;
        self.taken += 1;
        self.delta = Some(stall);
    }

    /// Compares this rank's state (its checksum and length) with its
    /// counterpart's in the other replica (collective over both). Returns
    /// whether this rank writes (replica 0), or the silent error.
    fn compare_replicas(&mut self, world: &C, b: u64, position: &Value, sum: u64, len: u64) -> Result<bool, CkptError> {
        let (idx, _) = self.opts.replica;
        let p = self.comm.size();
        let me = world.rank();
        let other = if idx == 0 { me + p } else { me - p };
        let pos = format::checksum(position.to_string().as_bytes());
        let send = world.isend(other, REPLICA_TAG, vec![pos, sum, len])?;
        let got = world.recv::<u64>(Source::Rank(other), TagMatch::Tag(REPLICA_TAG))?.data;
        parsim_comm::Request::wait(send)?;
        let same_place = got.first() == Some(&pos);
        let differs = same_place && got.get(1..3) != Some(&[sum, len][..]);
        // Every rank of both replicas learns whether any pair differed.
        let any = self.comm.all_reduce(&[u64::from(differs), u64::from(!same_place)], ReduceOp::Max)?;
        if any[0] > 0 {
            return Err(CkptError::Silent(format!(
                "{} {b}: the replicas' states differ{}: a silent error; nothing was saved, the run rolls back to its \
                 last checkpoint",
                self.id.unit,
                if differs { format!(" on rank {}", self.comm.rank()) } else { " (on another rank)".into() }
            )));
        }
        if any[1] > 0 {
            self.stats.replica_skipped += 1;
        } else {
            self.stats.replica_checks += 1;
        }
        Ok(idx == 0)
    }

    /// Waits for the background writes and returns what checkpointing cost.
    pub fn finish(mut self) -> Stats {
        self.writer.flush();
        let w = self.writer.stats.lock().expect("stats").clone();
        let mut s = std::mem::take(&mut self.stats);
        s.write_s = w.write_s;
        s.compress_s = w.compress_s;
        s.raw_bytes = w.raw_bytes;
        s.file_bytes = w.file_bytes;
        s.files = w.files;
        s.failures = w.failures;
        if let Some(t) = &self.restart_taken {
            s.restart_pieces_read = t.pieces.load(std::sync::atomic::Ordering::Relaxed);
            s.restart_bytes_read = t.bytes.load(std::sync::atomic::Ordering::Relaxed);
        }
        s
    }

    /// The stats as JSON, with the interval settings.
    pub fn stats_json(stats: &Stats, opts: &Options) -> Value {
        let mut v = serde_json::to_value(stats).unwrap_or(Value::Null);
        v["dir"] = json!(opts.dir.display().to_string());
        v["interval"] = json!(match opts.interval {
            None => "none".to_string(),
            Some(Interval::Every(n)) => format!("every {n}"),
            Some(Interval::Seconds(s)) => format!("every {s} s"),
            Some(Interval::Auto { mtbf }) => format!("auto (Daly, MTBF {mtbf} s)"),
        });
        v["asynchronous"] = json!(opts.asynchronous);
        v["replicas"] = json!(opts.replica.1);
        v
    }
}

impl<C: Comm> Drop for Checkpointer<'_, C> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.writer.abandon();
        } else {
            self.writer.flush();
        }
    }
}

//! Where checkpoint files live, the background writer, and retention.
//!
//! ```text
//! DIR/manifests/c000007.json                    the manifest (rank 0)
//! DIR/rank-0003/c000007.ckpt                    level 1: rank 3's own copy
//! DIR/rank-0004/c000007.partner-0003.ckpt       level 2: rank 3's data, held by rank 4
//! DIR/shared/c000007/rank-0003.ckpt             level 3: the shared copy (every k-th)
//! ```
//!
//! On a cluster, `rank-RRRR` is what would live on the rank's node-local
//! disk; here every level is under one directory, so that a restart on any
//! number of ranks finds them all.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::format;
use crate::inject::{Fault, KillWhen};

/// The three levels of a multilevel checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Level {
    /// The rank's own directory.
    Own = 1,
    /// A copy held by the partner rank `(r + 1) mod p`.
    Partner = 2,
    /// The shared directory.
    Shared = 3,
}

impl Level {
    /// `1`, `2` or `3`.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Words for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Level::Own => "its own level-1 copy",
            Level::Partner => "the partner copy (level 2)",
            Level::Shared => "the shared copy (level 3)",
        }
    }
}

/// The manifest of checkpoint `seq`.
pub fn manifest_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join("manifests").join(format!("c{seq:06}.json"))
}

/// The file holding rank `rank`'s data of checkpoint `seq` at `level`, in
/// a run of `ranks` ranks.
pub fn data_path(dir: &Path, level: Level, seq: u64, rank: usize, ranks: usize) -> PathBuf {
    match level {
        Level::Own => dir.join(format!("rank-{rank:04}")).join(format!("c{seq:06}.ckpt")),
        Level::Partner => {
            dir.join(format!("rank-{:04}", (rank + 1) % ranks)).join(format!("c{seq:06}.partner-{rank:04}.ckpt"))
        }
        Level::Shared => dir.join("shared").join(format!("c{seq:06}")).join(format!("rank-{rank:04}.ckpt")),
    }
}

/// The sequence numbers of the manifests in `dir`, newest first.
pub fn manifest_seqs(dir: &Path) -> Vec<u64> {
    let mut seqs: Vec<u64> = std::fs::read_dir(dir.join("manifests"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| seq_of(&e.file_name().to_string_lossy(), |t| t == ".json"))
                .collect()
        })
        .unwrap_or_default();
    seqs.sort_unstable_by_key(|s| std::cmp::Reverse(*s));
    seqs
}

/// The sequence number in a name `cNNNNNN<tail>`, if `tail_ok(tail)`.
fn seq_of(name: &str, tail_ok: impl Fn(&str) -> bool) -> Option<u64> {
    let rest = name.strip_prefix('c')?;
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    (end > 0 && tail_ok(&rest[end..])).then(|| rest[..end].parse().ok()).flatten()
}

/// How many checkpoints each level keeps. Older ones are deleted, except
/// the newest checkpoint that every rank has written in full and anything
/// newer: a rank whose background writes run ahead of a slow rank's keeps
/// its older files until the slow rank catches up (before, a rank killed
/// while two checkpoints behind could leave the job with none whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    /// Level 1 (default 2).
    pub own: usize,
    /// Level 2 (default 2).
    pub partner: usize,
    /// Level 3 (default 2).
    pub shared: usize,
}

impl Default for Keep {
    fn default() -> Self {
        Keep { own: 2, partner: 2, shared: 2 }
    }
}

/// One rank's data to be written under one or more names.
pub(crate) struct Item {
    pub seq: u64,
    /// Whose data it is.
    pub rank: usize,
    pub raw: Vec<u8>,
    /// xxh3 of `raw`, when the snapshot computed it.
    pub sum: Option<u64>,
    pub paths: Vec<(Level, PathBuf)>,
}

/// What the writer does for one checkpoint.
pub(crate) struct Job {
    pub boundary: u64,
    /// The checkpoint's sequence number.
    pub seq: u64,
    /// The newest checkpoint every rank had written in full (its files,
    /// and rank 0 its manifest) when this one was taken: pruning never
    /// deletes it or anything newer, so a rank whose writes run ahead of a
    /// slow rank's cannot leave the job with no whole checkpoint.
    pub whole: u64,
    pub items: Vec<Item>,
    pub manifest: Option<(PathBuf, Vec<u8>)>,
    /// Retention, after the files are down: keep the newest `n` of `level`
    /// in the directory.
    pub prune: Vec<(PathBuf, Level, usize)>,
    /// Manifests to prune (rank 0): keep the newest this many.
    pub prune_manifests: Option<(PathBuf, usize)>,
}

/// What the writer has done, for the summary.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriterStats {
    pub write_s: f64,
    pub compress_s: f64,
    pub file_bytes: u64,
    pub raw_bytes: u64,
    pub files: u64,
    pub failures: Vec<String>,
    /// The newest checkpoint whose job this writer finished without a failure (0: none).
    pub done: u64,
}

pub(crate) struct Writer {
    tx: Option<SyncSender<Job>>,
    handle: Option<JoinHandle<()>>,
    pub stats: Arc<Mutex<WriterStats>>,
    /// Set when the rank dies: the writer stops before its next file.
    abort: Arc<AtomicBool>,
    /// Set by the writer when an injected kill "during a write" happened
    /// (threads backend: the rank panics at its next boundary).
    pub killed: Arc<AtomicBool>,
    /// The faults armed for this launch.
    pub faults: WriterFaults,
    /// Buffers of written checkpoints, handed back for the next snapshot:
    /// a reused buffer is already mapped, so a snapshot is a plain copy
    /// instead of page faults over fresh memory.
    pool: Pool,
}

type Pool = Arc<Mutex<Vec<Vec<u8>>>>;

/// Buffers kept for reuse (own copy, partner copy, and one in flight).
const POOL_MAX: usize = 4;

/// Context the writer needs for fault injection.
#[derive(Clone)]
pub(crate) struct WriterFaults {
    pub rank: usize,
    pub faults: Vec<Fault>,
    pub mpi: bool,
}

impl Writer {
    /// A background writer (`threaded`) or an inline one.
    pub fn new(threaded: bool, name: String, faults: WriterFaults) -> std::io::Result<Self> {
        let stats = Arc::new(Mutex::new(WriterStats::default()));
        let abort = Arc::new(AtomicBool::new(false));
        let killed = Arc::new(AtomicBool::new(false));
        let pool: Pool = Arc::default();
        if !threaded {
            return Ok(Writer { tx: None, handle: None, stats, abort, killed, faults, pool });
        }
        // One checkpoint may wait while another is written; a third blocks
        // the simulation (and is charged to it) rather than piling up.
        let (tx, rx): (SyncSender<Job>, Receiver<Job>) = sync_channel(1);
        let (s, a, k, f, p) = (stats.clone(), abort.clone(), killed.clone(), faults.clone(), pool.clone());
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            while let Ok(job) = rx.recv() {
                if a.load(Ordering::SeqCst) || k.load(Ordering::SeqCst) {
                    break;
                }
                run_job(job, &s, &a, &k, &f, &p);
            }
        })?;
        Ok(Writer { tx: Some(tx), handle: Some(handle), stats, abort, killed, faults, pool })
    }

    /// An empty buffer for a snapshot: a written checkpoint's, when one is
    /// back, else a new one.
    pub fn buffer(&self) -> Vec<u8> {
        let mut b = self.pool.lock().ok().and_then(|mut p| p.pop()).unwrap_or_default();
        b.clear();
        b
    }

    /// Hands a snapshot buffer back for the next snapshot (one not written:
    /// a replica's witness copy).
    pub fn give_back(&self, buf: Vec<u8>) {
        recycle(&self.pool, buf);
    }

    /// Queues a job (or does it now, for an inline writer).
    pub fn submit(&self, job: Job) {
        match &self.tx {
            Some(tx) => {
                if tx.send(job).is_err() {
                    self.stats.lock().expect("stats").failures.push("the checkpoint writer thread stopped".into());
                }
            }
            None => run_job(job, &self.stats, &self.abort, &self.killed, &self.faults, &self.pool),
        }
    }

    /// Waits for every queued job.
    pub fn flush(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }

    /// Stops after the file being written (the rank is dying).
    pub fn abandon(&mut self) {
        self.abort.store(true, Ordering::SeqCst);
        self.flush();
    }
}

fn run_job(
    job: Job,
    stats: &Mutex<WriterStats>,
    abort: &AtomicBool,
    killed: &AtomicBool,
    faults: &WriterFaults,
    pool: &Pool,
) {
    let t0 = Instant::now();
    let mut st = WriterStats::default();
    let kill_now = faults.faults.iter().any(
        |f| matches!(f, Fault::Kill { rank, at, when: KillWhen::Write } if *rank == faults.rank && job.boundary >= *at),
    );
    for item in &job.items {
        if abort.load(Ordering::SeqCst) {
            return;
        }
        let c0 = Instant::now();
        let (header, comp) = format::encode_parts(item.seq, item.rank, &item.raw, item.sum);
        let body: &[u8] = comp.as_deref().unwrap_or(&item.raw);
        st.compress_s += c0.elapsed().as_secs_f64();
        for (level, path) in &item.paths {
            if kill_now && !killed.load(Ordering::SeqCst) {
                // The injected crash in the middle of a checkpoint write: half
                // of the temporary file is down, nothing is renamed.
                let dir = path.parent().unwrap_or(Path::new("."));
                let _ = std::fs::create_dir_all(dir);
                let tmp = dir.join(format!(
                    ".{}.tmp-{}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    std::process::id()
                ));
                let _ = std::fs::write(&tmp, &body[..body.len() / 2]);
                killed.store(true, Ordering::SeqCst);
                if faults.mpi {
                    crate::inject::sigkill_self();
                }
                return;
            }
            let corrupt = faults.faults.iter().any(|f| {
                matches!(f, Fault::Corrupt { rank, level: l, at } if *rank == item.rank && *l == level.number() && job.boundary >= *at)
            });
            let flipped;
            let body: &[u8] = if corrupt {
                let mut b = body.to_vec();
                crate::inject::flip_bytes(&mut b);
                flipped = b;
                &flipped
            } else {
                body
            };
            let bytes = (header.len() + body.len()) as u64;
            match parsim_core::io::write_atomic_parts(path, &[&header, body]) {
                Ok(()) => {
                    st.file_bytes += bytes;
                    st.raw_bytes += item.raw.len() as u64;
                    st.files += 1;
                }
                Err(e) => st.failures.push(format!("writing {}: {e}", path.display())),
            }
        }
    }
    if let Some((path, bytes)) = &job.manifest {
        if let Err(e) = parsim_core::io::write_atomic(path, bytes) {
            st.failures.push(format!("writing {}: {e}", path.display()));
        }
    }
    for (dir, level, keep) in &job.prune {
        prune(dir, *level, *keep, job.whole);
    }
    for item in job.items {
        recycle(pool, item.raw);
    }
    if let Some((dir, keep)) = &job.prune_manifests {
        prune_manifests(dir, *keep, job.whole);
    }
    st.write_s = t0.elapsed().as_secs_f64();
    let mut s = stats.lock().expect("stats");
    if st.failures.is_empty() {
        s.done = s.done.max(job.seq);
    }
    s.write_s += st.write_s;
    s.compress_s += st.compress_s;
    s.file_bytes += st.file_bytes;
    s.raw_bytes += st.raw_bytes;
    s.files += st.files;
    for f in st.failures {
        tracing::warn!("checkpoint: {f}");
        s.failures.push(f);
    }
}

/// Deletes all but the newest `keep` checkpoints of `level` in `dir` (a
/// rank directory for levels 1 and 2, the shared directory for level 3),
/// except checkpoint `whole` (the newest every rank has written) and any
/// newer one.
pub(crate) fn prune(dir: &Path, level: Level, keep: usize, whole: u64) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut found: Vec<(u64, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let seq = match level {
                Level::Own => seq_of(&name, |t| t == ".ckpt"),
                Level::Partner => seq_of(&name, |t| t.starts_with(".partner-") && t.ends_with(".ckpt")),
                Level::Shared => seq_of(&name, str::is_empty),
            }?;
            Some((seq, e.path()))
        })
        .collect();
    found.sort_unstable_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in found.into_iter().skip(keep.max(1)).filter(|f| f.0 < whole) {
        let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
    let _ = parsim_core::io::sync_dir(dir);
}

fn prune_manifests(dir: &Path, keep: usize, whole: u64) {
    for seq in manifest_seqs(dir).into_iter().skip(keep.max(1)).filter(|&s| s < whole) {
        let _ = std::fs::remove_file(manifest_path(dir, seq));
    }
}

/// Keeps `buf` for reuse, up to `POOL_MAX` buffers.
fn recycle(pool: &Pool, buf: Vec<u8>) {
    if let Ok(mut p) = pool.lock() {
        if p.len() < POOL_MAX {
            p.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_files(dir: &Path) -> Vec<u64> {
        let mut s: Vec<u64> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| seq_of(&e.unwrap().file_name().to_string_lossy(), |t| t == ".ckpt"))
            .collect();
        s.sort_unstable();
        s
    }

    #[test]
    fn pruning_keeps_the_newest_checkpoint_every_rank_has_written() {
        let dir = std::env::temp_dir().join(format!("parsim-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for seq in 1..=9u64 {
            std::fs::write(dir.join(format!("c{seq:06}.ckpt")), b"x").unwrap();
        }
        // This rank has written 8 and 9, a slower one only up to 6: 6 is
        // the newest whole checkpoint, so it stays with everything newer.
        prune(&dir, Level::Own, 2, 6);
        assert_eq!(own_files(&dir), vec![6, 7, 8, 9]);
        // Once every rank has written 9, only the newest two are kept.
        prune(&dir, Level::Own, 2, 9);
        assert_eq!(own_files(&dir), vec![8, 9]);
        // Nothing known whole yet (a fresh run's first checkpoint): nothing goes.
        std::fs::write(dir.join("c000001.ckpt"), b"x").unwrap();
        prune(&dir, Level::Own, 2, 0);
        assert_eq!(own_files(&dir), vec![1, 8, 9]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

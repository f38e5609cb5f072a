//! Choosing the checkpoint to restart from, on every rank at once.
//!
//! Manifests are tried newest first. For each, the old ranks' pieces are
//! shared out over the new ranks (piece i to rank i mod p); each rank
//! verifies its pieces — level 1, then the partner copy, then the shared
//! copy — and the verdicts are gathered, so every rank takes the same
//! decision. A checkpoint is used only when every piece has a copy that
//! verifies; otherwise the reasons are kept and the next older one is tried.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parsim_comm::Comm;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::format::{self, Manifest, FORMAT_VERSION};
use crate::store::{data_path, manifest_path, manifest_seqs, Level};
use crate::{CkptError, Identity};

/// The checkpoint a run restarts from.
pub struct Restart {
    /// Its manifest.
    pub manifest: Manifest,
    /// Where each old rank's piece was read from.
    pub sources: Vec<Level>,
    /// What was skipped and why, and which copies were used (for people).
    pub notes: Vec<String>,
    dir: PathBuf,
    /// Pieces this rank verified, decoded (read once).
    cache: HashMap<usize, Vec<u8>>,
    /// Pieces and raw bytes the engine took on this rank.
    pub(crate) taken: Arc<Taken>,
}

/// What a rank's engine read of a checkpoint (for the summary: a restart
/// on any rank count should read each piece on one rank only).
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub pieces: AtomicU64,
    pub bytes: AtomicU64,
}

impl Restart {
    /// The raw bytes of old rank `rank`'s piece.
    pub fn raw(&mut self, rank: usize) -> Result<Vec<u8>, CkptError> {
        let b = self.raw_uncounted(rank)?;
        self.taken.pieces.fetch_add(1, Ordering::Relaxed);
        self.taken.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }

    fn raw_uncounted(&mut self, rank: usize) -> Result<Vec<u8>, CkptError> {
        if let Some(b) = self.cache.remove(&rank) {
            return Ok(b);
        }
        let m = &self.manifest;
        let level = *self.sources.get(rank).ok_or_else(|| CkptError::Corrupt(format!("no piece {rank}")))?;
        let path = data_path(&self.dir, level, m.seq, rank, m.ranks);
        let file = std::fs::read(&path).map_err(|e| CkptError::Corrupt(format!("{}: {e}", path.display())))?;
        format::decode(&file, m.seq, rank, &m.pieces[rank])
            .map_err(|e| CkptError::Corrupt(format!("{}: {e}", path.display())))
    }

    /// Old rank `rank`'s state, deserialised.
    pub fn read<T: DeserializeOwned>(&mut self, rank: usize) -> Result<T, CkptError> {
        let raw = self.raw(rank)?;
        postcard::from_bytes(&raw)
            .map_err(|e| CkptError::Corrupt(format!("piece {rank}: cannot decode the state: {e}")))
    }

    /// One line for people: where the run restarts from.
    pub fn describe(&self) -> String {
        let m = &self.manifest;
        let copies: Vec<String> = self
            .sources
            .iter()
            .enumerate()
            .filter(|(_, l)| **l != Level::Own)
            .map(|(r, l)| format!("rank {r} from {}", l.describe()))
            .collect();
        let from = if copies.is_empty() { String::new() } else { format!("; {}", copies.join(", ")) };
        format!(
            "restarting from checkpoint {} ({} {}, written by {} ranks) in {}{from}",
            m.seq,
            m.unit,
            m.boundary,
            m.ranks,
            self.dir.display()
        )
    }
}

#[derive(Serialize, Deserialize)]
struct Verdict {
    rank: usize,
    level: Option<Level>,
    why: Vec<String>,
}

fn read_manifest(path: &Path) -> Result<Manifest, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    crate::format::parse_manifest(&bytes)
}

/// Whether `m` was written by this parsim for the scenario of `fingerprint`.
fn check_scenario(m: &Manifest, fingerprint: &str) -> Result<(), String> {
    if m.format != FORMAT_VERSION {
        return Err(format!("format version {} (this parsim reads {FORMAT_VERSION})", m.format));
    }
    if m.fingerprint != fingerprint {
        return Err(format!("written by another scenario (fingerprint {}, this run {fingerprint})", m.fingerprint));
    }
    Ok(())
}

fn check_manifest(m: &Manifest, id: &Identity) -> Result<(), String> {
    check_scenario(m, &id.fingerprint)?;
    if m.engine != id.engine {
        return Err(format!("written by the {} engine, not {}", m.engine, id.engine));
    }
    if m.seed != id.seed {
        return Err(format!("written by another scenario: seed {}, this run's {}", m.seed, id.seed));
    }
    if m.pieces.len() != m.ranks || m.pieces.iter().enumerate().any(|(i, p)| p.rank != i) {
        return Err(format!("lists {} pieces for {} ranks", m.pieces.len(), m.ranks));
    }
    Ok(())
}

/// Before any rank starts (no `Comm` needed): refuses a restart directory
/// that is not one, or holds no manifest of the scenario of `fingerprint`.
/// The pieces themselves are verified by the ranks ([`find`]).
pub fn precheck(dir: &Path, fingerprint: &str) -> Result<(), CkptError> {
    if !dir.is_dir() {
        return Err(CkptError::Input(format!("{} is not a directory", dir.display())));
    }
    let mut reasons = Vec::new();
    for seq in manifest_seqs(dir) {
        let path = manifest_path(dir, seq);
        match read_manifest(&path).and_then(|m| check_scenario(&m, fingerprint)) {
            Ok(()) => return Ok(()),
            Err(e) => reasons.push(format!("checkpoint {seq} ({}): {e}", path.display())),
        }
    }
    if reasons.is_empty() {
        reasons.push("it holds no checkpoint manifest (manifests/c*.json)".into());
    }
    Err(CkptError::NothingValid { dir: dir.to_path_buf(), reasons })
}

fn verify(dir: &Path, m: &Manifest, rank: usize) -> (Option<(Level, Vec<u8>)>, Vec<String>) {
    let mut why = Vec::new();
    let mut levels = vec![Level::Own];
    if m.partner && m.ranks > 1 {
        levels.push(Level::Partner);
    }
    if m.shared {
        levels.push(Level::Shared);
    }
    for level in levels {
        let path = data_path(dir, level, m.seq, rank, m.ranks);
        match std::fs::read(&path) {
            Err(e) => why.push(format!("{}: {}", path.display(), e.kind().to_string().to_lowercase())),
            Ok(file) => match format::decode(&file, m.seq, rank, &m.pieces[rank]) {
                Ok(raw) => return (Some((level, raw)), why),
                Err(e) => why.push(format!("{}: {e}", path.display())),
            },
        }
    }
    (None, why)
}

/// Finds the newest usable checkpoint in `dir` for a run of `id`
/// (collective). `Ok(None)` when `dir` holds no manifest at all;
/// [`CkptError::NothingValid`] when it holds some but none is usable.
pub fn find<C: Comm>(comm: &C, dir: &Path, id: &Identity) -> Result<Option<Restart>, CkptError> {
    // Rank 0 lists the manifests, so that every rank tries the same ones.
    let seqs = if comm.rank() == 0 { manifest_seqs(dir) } else { Vec::new() };
    let seqs: Vec<u64> = comm.broadcast_value(0, &seqs)?;
    if seqs.is_empty() {
        return Ok(None);
    }
    let mut notes = Vec::new();
    for seq in seqs {
        let path = manifest_path(dir, seq);
        let manifest = read_manifest(&path).and_then(|m| check_manifest(&m, id).map(|()| m));
        let m = match manifest {
            Ok(m) if m.seq == seq => m,
            Ok(m) => {
                notes.push(format!("skipped {}: it says it is checkpoint {}", path.display(), m.seq));
                continue;
            }
            Err(e) => {
                notes.push(format!("skipped checkpoint {seq} ({}): {e}", path.display()));
                continue;
            }
        };
        let (me, p) = (comm.rank(), comm.size());
        let mut cache = HashMap::new();
        let mut mine = Vec::new();
        for r in (me..m.ranks).step_by(p) {
            let (found, why) = verify(dir, &m, r);
            let level = found.map(|(l, raw)| {
                cache.insert(r, raw);
                l
            });
            mine.push(Verdict { rank: r, level, why });
        }
        let all: Vec<Verdict> = comm.all_gather_value(&mine)?.into_iter().flatten().collect();
        let mut sources = vec![Level::Own; m.ranks];
        let mut missing = Vec::new();
        for v in all {
            match v.level {
                Some(l) => {
                    sources[v.rank] = l;
                    if l != Level::Own {
                        notes.push(format!(
                            "checkpoint {seq}: rank {}'s data from {} ({})",
                            v.rank,
                            l.describe(),
                            v.why.join("; ")
                        ));
                    }
                }
                None => missing.push(format!("rank {}: {}", v.rank, v.why.join("; "))),
            }
        }
        if missing.is_empty() {
            let taken = Arc::default();
            return Ok(Some(Restart { manifest: m, sources, notes, dir: dir.to_path_buf(), cache, taken }));
        }
        notes.push(format!(
            "skipped checkpoint {seq} ({} {}): no valid copy of {}",
            m.unit,
            m.boundary,
            missing.join("; ")
        ));
    }
    Err(CkptError::NothingValid { dir: dir.to_path_buf(), reasons: notes })
}

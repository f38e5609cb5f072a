//! The task log: one JSON record per finished task, appended (and fsync'd)
//! as each task finishes, after a header line with the sweep's fingerprint.
//! `--resume` reads it back, skips a torn last line, and continues.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, SweepError};

/// The metrics of one successful run.
pub type Metrics = BTreeMap<String, f64>;

/// A finished task, as logged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The point.
    pub point: usize,
    /// The replication.
    pub replication: u64,
    /// Attempts made (1 = first try).
    pub attempts: u32,
    /// The metrics, or the last error after every retry failed.
    pub result: std::result::Result<Metrics, String>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    parsim_sweep: String,
}

/// An append-only task log.
pub struct Store {
    path: PathBuf,
    file: Option<File>,
    sync: bool,
}

fn err(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Store { path: path.display().to_string(), msg: e.to_string() }
}

impl Store {
    /// A log that keeps nothing (benchmarks, tests).
    pub fn memory() -> Store {
        Store { path: PathBuf::new(), file: None, sync: false }
    }

    /// Opens `path` for the sweep with `fingerprint`. With `resume`, returns
    /// the records already there (the file must belong to the same sweep);
    /// otherwise starts a new log. `sync`: fsync after every record.
    pub fn open(path: &Path, fingerprint: &str, resume: bool, sync: bool) -> Result<(Store, Vec<Record>)> {
        let mut done = Vec::new();
        if resume && path.exists() {
            let f = File::open(path).map_err(|e| err(path, e))?;
            let mut lines = BufReader::new(f).lines();
            let head = lines.next().transpose().map_err(|e| err(path, e))?.unwrap_or_default();
            let h: Header = serde_json::from_str(&head)
                .map_err(|_| err(path, "not a parsim sweep log (bad header); remove it or run without --resume"))?;
            if h.parsim_sweep != fingerprint {
                return Err(err(
                    path,
                    "the log belongs to a different sweep (scenario, parameters or seed changed); run without --resume",
                ));
            }
            let all: Vec<String> = lines.collect::<std::io::Result<_>>().map_err(|e| err(path, e))?;
            let n = all.len();
            for (i, l) in all.iter().enumerate() {
                match serde_json::from_str::<Record>(l) {
                    Ok(r) => done.push(r),
                    // A torn last line: the task is simply run again.
                    Err(_) if i + 1 == n => {}
                    Err(e) => return Err(err(path, format!("line {}: {e}", i + 2))),
                }
            }
            // Rewrite without a torn tail, then append.
            let mut text = serde_json::to_string(&h).expect("header") + "\n";
            for r in &done {
                text += &(serde_json::to_string(r).expect("record") + "\n");
            }
            parsim_core::io::write_atomic(path, text.as_bytes()).map_err(|e| err(path, e))?;
        } else {
            let h = Header { parsim_sweep: fingerprint.to_string() };
            parsim_core::io::write_atomic(path, (serde_json::to_string(&h).expect("header") + "\n").as_bytes())
                .map_err(|e| err(path, e))?;
        }
        let file = OpenOptions::new().append(true).open(path).map_err(|e| err(path, e))?;
        Ok((Store { path: path.to_path_buf(), file: Some(file), sync }, done))
    }

    /// Appends one record.
    pub fn append(&mut self, r: &Record) -> Result<()> {
        let Some(f) = self.file.as_mut() else { return Ok(()) };
        let line = serde_json::to_string(r).expect("record") + "\n";
        f.write_all(line.as_bytes()).map_err(|e| err(&self.path, e))?;
        if self.sync {
            f.sync_data().map_err(|e| err(&self.path, e))?;
        }
        Ok(())
    }
}

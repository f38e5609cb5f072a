//! The task log: one JSON record per finished task, appended (and fsync'd)
//! as each task finishes, after a header line with the sweep's fingerprint.
//! `--resume` reads it back, skips a torn last line, and continues.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
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

/// One line of the log: a record and its checksum (a digest of the sweep's
/// fingerprint and the record's JSON), so that a record edited by hand,
/// corrupted, or copied from another sweep is refused on `--resume`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    sum: String,
    record: Record,
}

/// The checksum of `r` in the sweep with `fingerprint`.
fn checksum(fingerprint: &str, r: &Record) -> String {
    let mut d = parsim_core::Digester::new();
    d.write_str(fingerprint);
    d.write_str(&serde_json::to_string(r).expect("record"));
    d.finish().to_string()
}

/// The log line of `r`.
fn line_of(fingerprint: &str, r: &Record) -> String {
    serde_json::to_string(&Line { sum: checksum(fingerprint, r), record: r.clone() }).expect("record") + "\n"
}

/// An append-only task log.
pub struct Store {
    path: PathBuf,
    file: Option<File>,
    sync: bool,
    fingerprint: String,
}

fn err(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Store { path: path.display().to_string(), msg: e.to_string() }
}

impl Store {
    /// A log that keeps nothing (benchmarks, tests).
    pub fn memory() -> Store {
        Store { path: PathBuf::new(), file: None, sync: false, fingerprint: String::new() }
    }

    /// Opens `path` for the sweep with `fingerprint`. With `resume`, returns
    /// the records already there (the file must belong to the same sweep);
    /// otherwise starts a new log. `sync`: fsync after every record.
    pub fn open(path: &Path, fingerprint: &str, resume: bool, sync: bool) -> Result<(Store, Vec<Record>)> {
        let mut done = Vec::new();
        if resume && path.exists() {
            let text = std::fs::read(path).map_err(|e| err(path, e))?;
            let text = String::from_utf8(text)
                .map_err(|_| err(path, "not a parsim sweep log (not UTF-8); remove it or run without --resume"))?;
            // The last line is torn when the file does not end with a newline.
            let torn_tail = !text.is_empty() && !text.ends_with('\n');
            let mut lines = text.lines();
            let head = lines.next().unwrap_or_default();
            let h: Header = serde_json::from_str(head)
                .map_err(|_| err(path, "not a parsim sweep log (bad header); remove it or run without --resume"))?;
            if h.parsim_sweep != fingerprint {
                return Err(err(
                    path,
                    "the log belongs to a different sweep (scenario, parameters or seed changed); run without --resume",
                ));
            }
            let all: Vec<&str> = lines.collect();
            let n = all.len();
            let mut seen: BTreeMap<(usize, u64), usize> = BTreeMap::new();
            let refuse = |line: usize, why: &str| {
                err(
                    path,
                    format!(
                        "line {line}: {why}; the log cannot be trusted: remove it (or the line) and run again, or run without --resume"
                    ),
                )
            };
            for (i, l) in all.iter().enumerate() {
                let line: Line = match serde_json::from_str(l) {
                    Ok(line) => line,
                    // A torn last line (no newline at its end): the task is simply run again.
                    Err(_) if i + 1 == n && torn_tail => continue,
                    Err(e) => return Err(refuse(i + 2, &format!("not a task record ({e})"))),
                };
                if line.sum != checksum(fingerprint, &line.record) {
                    return Err(refuse(i + 2, "the record does not match its checksum (edited or corrupted)"));
                }
                let r = line.record;
                if r.attempts == 0 {
                    return Err(refuse(i + 2, "a record with 0 attempts"));
                }
                match seen.get(&(r.point, r.replication)) {
                    Some(&j) if done[j] != r => {
                        return Err(refuse(
                            i + 2,
                            &format!(
                                "point {} replication {} is recorded twice with different results",
                                r.point, r.replication
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => {
                        seen.insert((r.point, r.replication), done.len());
                        done.push(r);
                    }
                }
            }
            // Rewrite without a torn tail, then append.
            let mut text = serde_json::to_string(&h).expect("header") + "\n";
            for r in &done {
                text += &line_of(fingerprint, r);
            }
            parsim_core::io::write_atomic(path, text.as_bytes()).map_err(|e| err(path, e))?;
        } else {
            let h = Header { parsim_sweep: fingerprint.to_string() };
            parsim_core::io::write_atomic(path, (serde_json::to_string(&h).expect("header") + "\n").as_bytes())
                .map_err(|e| err(path, e))?;
        }
        let file = OpenOptions::new().append(true).open(path).map_err(|e| err(path, e))?;
        Ok((Store { path: path.to_path_buf(), file: Some(file), sync, fingerprint: fingerprint.to_string() }, done))
    }

    /// Appends one record.
    pub fn append(&mut self, r: &Record) -> Result<()> {
        let Some(f) = self.file.as_mut() else { return Ok(()) };
        let line = line_of(&self.fingerprint, r);
        f.write_all(line.as_bytes()).map_err(|e| err(&self.path, e))?;
        if self.sync {
            f.sync_data().map_err(|e| err(&self.path, e))?;
        }
        Ok(())
    }
}

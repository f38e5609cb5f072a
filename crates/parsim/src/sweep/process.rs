//! Process isolation for sweep tasks (`[sweep] isolate = "process"`): each
//! worker — a thread of the pool, or an MPI worker rank — runs its tasks in
//! a child process (`parsim sweep SCENARIO --serve`, the same scenario and
//! `--set`s) that it supervises. The child keeps its caches (an epidemic's
//! population) from task to task; when it dies — killed by a signal, out of
//! memory, aborted — or overruns `task_timeout_s`, the supervisor reports
//! the attempt as failed, so the coordinator re-queues the task (up to
//! `retries`), and starts a fresh child for the next one. The worker rank
//! itself stays up, so this works under MPI, where a dead rank ends the job.
//!
//! The protocol is one JSON line per request on the child's stdin
//! (`{"task": …, "seed": …}`) and one marked line per answer on its stdout
//! (`@parsim-task {"ok": {metrics}}` or `{"err": "…"}`); any other line the
//! model prints is passed through to stderr.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use parsim_sweep::{Metrics, Task};
use serde::{Deserialize, Serialize};

/// The mark that starts an answer line.
const MARK: &str = "@parsim-task ";

/// A request to the child.
#[derive(Serialize, Deserialize)]
pub struct Request {
    /// The task.
    pub task: Task,
    /// Its seed.
    pub seed: u64,
}

/// The child's answer.
#[derive(Serialize, Deserialize)]
enum Answer {
    #[serde(rename = "ok")]
    Ok(Metrics),
    #[serde(rename = "err")]
    Err(String),
}

/// One supervised child.
struct Server {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
}

impl Server {
    fn start(exe: &PathBuf, args: &[String]) -> Result<Server, String> {
        let mut cmd = Command::new(exe);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        // The child is a plain process, not an MPI one: it must not find the
        // launcher's variables and try to join the job.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("OMPI_") || k.starts_with("PMIX_") || k.starts_with("PMI_") {
                cmd.env_remove(&*k);
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start a task process {}: {e}", exe.display()))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match line.strip_prefix(MARK) {
                    Some(a) => {
                        if tx.send(a.to_string()).is_err() {
                            break;
                        }
                    }
                    None => eprintln!("{line}"),
                }
            }
        });
        Ok(Server { child, stdin, answers })
    }

    /// Why the child is gone (it has closed its stdout or overrun).
    fn death(mut self, timed_out: Option<Duration>) -> String {
        if let Some(t) = timed_out {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return format!("timed out after {t:?}; its task process was killed");
        }
        match self.child.wait() {
            Ok(st) => format!("its task process (pid {}) died: {st}", self.child.id()),
            Err(e) => format!("its task process (pid {}) died: {e}", self.child.id()),
        }
    }
}

/// The children of a pool of workers: one per worker in use, started on
/// first need and replaced when one dies.
pub struct ProcessPool {
    exe: PathBuf,
    args: Vec<String>,
    timeout: Option<Duration>,
    idle: Mutex<Vec<Server>>,
}

impl ProcessPool {
    /// A pool whose children run `exe args…` (`args` ending in `--serve`).
    pub fn new(exe: PathBuf, args: Vec<String>, timeout: Option<Duration>) -> ProcessPool {
        ProcessPool { exe, args, timeout, idle: Mutex::new(Vec::new()) }
    }

    /// Runs `task` in a child: its metrics, its error, or why the child died.
    pub fn run(&self, task: &Task, seed: u64) -> Result<Metrics, String> {
        let idle = self.idle.lock().map_err(|_| "task process pool poisoned".to_string())?.pop();
        let mut server = match idle {
            Some(s) => s,
            None => Server::start(&self.exe, &self.args)?,
        };
        let line = serde_json::to_string(&Request { task: *task, seed }).map_err(|e| e.to_string())?;
        if writeln!(server.stdin, "{line}").and_then(|_| server.stdin.flush()).is_err() {
            return Err(server.death(None));
        }
        let got = match self.timeout {
            Some(t) => server.answers.recv_timeout(t),
            None => server.answers.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match got {
            Ok(a) => {
                let answer: Answer =
                    serde_json::from_str(&a).map_err(|e| format!("a garbled answer from a task process: {e}"))?;
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push(server);
                }
                match answer {
                    Answer::Ok(m) => Ok(m),
                    Answer::Err(e) => Err(e),
                }
            }
            Err(RecvTimeoutError::Timeout) => Err(server.death(self.timeout)),
            Err(RecvTimeoutError::Disconnected) => Err(server.death(None)),
        }
    }
}

impl Drop for ProcessPool {
    fn drop(&mut self) {
        if let Ok(idle) = self.idle.get_mut() {
            for mut s in idle.drain(..) {
                drop(s.stdin); // end of input: the child returns
                let _ = s.child.wait();
            }
        }
    }
}

/// The child's side: answers requests from stdin until it closes.
pub fn serve(
    points: usize,
    run: impl Fn(&Task, u64) -> Result<Metrics, String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        // A request that does not parse, or names a point the sweep does
        // not have, is answered with an error: the parent reports it.
        let answer = match parse_request(&line, points) {
            Err(e) => Answer::Err(e),
            Ok(req) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&req.task, req.seed))) {
                Ok(Ok(m)) => Answer::Ok(m),
                Ok(Err(e)) => Answer::Err(e),
                Err(p) => Answer::Err(parsim_sweep::exec::panic_message(p.as_ref())),
            },
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{MARK}{}", serde_json::to_string(&answer)?)?;
        out.flush()?;
    }
    Ok(())
}

/// One `--serve` request line: a JSON [`Request`] whose task names one of
/// the sweep's `points`.
///
/// ```
/// let r = parsim::parse_request(r#"{"task":{"point":1,"replication":3,"attempt":0},"seed":9}"#, 2).unwrap();
/// assert_eq!((r.task.point, r.seed), (1, 9));
/// assert!(parsim::parse_request(r#"{"task":{"point":2,"replication":3,"attempt":0},"seed":9}"#, 2).is_err());
/// assert!(parsim::parse_request("not json", 2).is_err());
/// ```
pub fn parse_request(line: &str, points: usize) -> Result<Request, String> {
    let req: Request = serde_json::from_str(line).map_err(|e| format!("a bad task request ({e})"))?;
    if req.task.point >= points {
        return Err(format!("a task request for point {}, but the sweep has {points} point(s)", req.task.point));
    }
    Ok(req)
}

/// Kills this process with SIGKILL (an injected death: `[sweep] inject_kills`).
pub fn kill_self() -> ! {
    let pid = std::process::id().to_string();
    let _ = Command::new("sh").args(["-c", &format!("kill -9 {pid}")]).status();
    // `sh` or `kill` missing: die as abruptly as Rust allows.
    std::process::abort()
}

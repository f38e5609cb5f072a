//! `parsim supervise --restarts N -- COMMAND…`: relaunch a whole job after
//! a failure. Under MPI a killed rank ends the job (Open MPI 4.1 has no
//! fault-tolerant MPI), so recovery is a relaunch: each launch gets
//! `PARSIM_ATTEMPT` = its number, and a relaunched `parsim run` restarts
//! from the newest valid checkpoint in its checkpoint directory.

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Result};
use parsim::InputError;

/// Runs `command` until it succeeds, at most `restarts` relaunches.
pub fn run(restarts: u32, command: &[String]) -> Result<()> {
    let Some((prog, args)) = command.split_first() else {
        return Err(InputError::flag(
            "parsim supervise",
            "expected a command after --, e.g. `parsim supervise --restarts 3 -- mpirun -n 2 parsim run …`",
        )
        .into());
    };
    let t0 = Instant::now();
    for attempt in 0..=restarts {
        let status = Command::new(prog)
            .args(args)
            .env(parsim::resilience::ATTEMPT_ENV, attempt.to_string())
            .status()
            .map_err(|e| InputError::flag("parsim supervise", format!("cannot start {prog}: {e}")))?;
        if status.success() {
            if attempt > 0 {
                eprintln!(
                    "parsim supervise: finished after {attempt} relaunch(es), {:.1} s in all",
                    t0.elapsed().as_secs_f64()
                );
            }
            return Ok(());
        }
        let how = match (status.code(), signal_of(&status)) {
            (Some(2), _) => {
                // Bad input: a relaunch would fail the same way.
                return Err(InputError::flag("parsim supervise", format!("{prog} refused its input (exit 2)")).into());
            }
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "an unknown status".into(),
        };
        if attempt < restarts {
            eprintln!(
                "parsim supervise: attempt {} failed ({how}); relaunching from the newest checkpoint ({} left)",
                attempt + 1,
                restarts - attempt
            );
        } else {
            bail!("the job failed {} time(s), last with {how}; no relaunch left", attempt + 1);
        }
    }
    unreachable!("the loop returns")
}

#[cfg(unix)]
fn signal_of(s: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(s)
}

#[cfg(not(unix))]
fn signal_of(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

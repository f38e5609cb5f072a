//! Fault injection for tests and demonstrations (`--inject`).
//!
//! - `kill:rank=R,step=S` — at boundary S rank R dies: under MPI its process
//!   SIGKILLs itself, on threads its thread panics. `day=`, `gvt=`,
//!   `superstep=` name the boundary for the engines that count those.
//!   `when=write` kills it instead in the middle of writing its first
//!   checkpoint at or after S (half a temporary file on disk).
//! - `corrupt:level=L,rank=R[,step=S]` — every level-L file holding rank R's
//!   data written at or after boundary S gets flipped bytes.
//! - `bitflip:rank=R,step=S` — rank R silently corrupts one value of its
//!   state at boundary S (the engine decides which).
//! - `slow:rank=R,factor=F` — rank R computes F times as slowly for the
//!   whole run (heterogeneous or shared hardware), for the engines that
//!   balance load (agents in space): measured-time balancing must move
//!   work away from it.
//! - `jitter:mean=DURATION` — every rank sleeps a random delay
//!   (exponential, the given mean) at every boundary: operating-system
//!   noise, which a synchronising step amplifies to the expected maximum of
//!   p delays (`parsim scale --inject jitter:mean=2ms` measures it).
//!
//! Faults fire only in a run's first attempt: a restarted run is not killed
//! again at the same place.

use crate::CkptError;

/// When an injected kill happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillWhen {
    /// At the boundary.
    Boundary,
    /// During the first checkpoint write at or after it.
    Write,
}

/// One injected fault.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Kill a rank.
    Kill {
        /// The rank.
        rank: usize,
        /// The boundary.
        at: u64,
        /// At the boundary or during a write.
        when: KillWhen,
    },
    /// Flip bytes in checkpoint files.
    Corrupt {
        /// Whose data.
        rank: usize,
        /// Which level (1–3).
        level: u8,
        /// From this boundary on.
        at: u64,
    },
    /// Flip one bit of the model state.
    Bitflip {
        /// The rank.
        rank: usize,
        /// The boundary.
        at: u64,
    },
    /// Random delays at every boundary, on every rank.
    Jitter {
        /// The mean delay, seconds.
        mean: f64,
    },
    /// Make a rank slower.
    Slow {
        /// The rank.
        rank: usize,
        /// How many times slower (> 1).
        factor: f64,
    },
}

/// The boundaries of the engines whose state a `bitflip` corrupts (and
/// whose invariants catch it): grid steps, epidemic days, the windows of
/// the sequential, CMB and window DES engines (an LP's event counter,
/// caught by the conservation of events).
const BITFLIP_UNITS: [&str; 3] = ["step", "day", "window"];

/// The boundary names `--inject` understands.
pub const UNITS: [&str; 5] = ["step", "day", "gvt", "superstep", "window"];

/// A parsed `--inject` value, with the boundary name it used.
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    /// The fault.
    pub fault: Fault,
    /// `step`, `day` …, if one was given.
    pub unit: Option<String>,
    /// The text, for messages.
    pub text: String,
}

impl Injection {
    /// Parses `kind:key=value,…`.
    ///
    /// ```
    /// use parsim_ckpt::{Fault, Injection, KillWhen};
    /// let i = Injection::parse("kill:rank=1,day=90")?;
    /// assert_eq!(i.fault, Fault::Kill { rank: 1, at: 90, when: KillWhen::Boundary });
    /// assert!(Injection::parse("kill:rank=1").is_err());
    /// # Ok::<(), parsim_ckpt::CkptError>(())
    /// ```
    pub fn parse(s: &str) -> Result<Self, CkptError> {
        let bad = |why: String| {
            CkptError::Input(format!(
                "--inject {s}: {why} (examples: kill:rank=1,step=50; kill:rank=0,step=50,when=write; \
                 corrupt:level=1,rank=0; bitflip:rank=1,step=30; slow:rank=1,factor=2)"
            ))
        };
        let (kind, rest) = s.split_once(':').ok_or_else(|| bad("expected KIND:key=value,…".into()))?;
        let (mut rank, mut level, mut at, mut unit, mut when) = (None, None, None, None, KillWhen::Boundary);
        let (mut factor, mut mean) = (None, None);
        for kv in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad(format!("\"{kv}\" is not key=value")))?;
            let num = || v.trim().parse::<u64>().map_err(|_| bad(format!("{k}={v}: not a non-negative integer")));
            match k.trim() {
                "rank" => rank = Some(num()? as usize),
                "level" => level = Some(num()?),
                "factor" => {
                    let f = v.trim().parse::<f64>().map_err(|_| bad(format!("factor={v}: not a number")))?;
                    if !(1.0..=1000.0).contains(&f) {
                        return Err(bad(format!("factor={v}: expected a slowdown in 1..=1000")));
                    }
                    factor = Some(f);
                }
                "mean" => {
                    mean = Some(crate::parse_duration(v).map_err(|e| bad(format!("mean={v}: {e}")))?);
                }
                "when" => {
                    when = match v.trim() {
                        "write" => KillWhen::Write,
                        "boundary" => KillWhen::Boundary,
                        other => return Err(bad(format!("when={other}: expected \"write\" or \"boundary\""))),
                    }
                }
                u if UNITS.contains(&u) => {
                    if let Some(prev) = &unit {
                        return Err(bad(format!("both {prev}= and {u}= given")));
                    }
                    at = Some(num()?);
                    unit = Some(u.to_string());
                }
                other => {
                    return Err(bad(format!(
                        "unknown key \"{other}\" (known: rank, level, when, factor, mean, {})",
                        UNITS.join(", ")
                    )))
                }
            }
        }
        if kind.trim() == "jitter" {
            let mean = mean.ok_or_else(|| bad("mean= is missing (e.g. jitter:mean=2ms)".into()))?;
            if mean > 60.0 {
                return Err(bad(format!("mean={mean} s: expected a delay of at most a minute")));
            }
            return Ok(Injection { fault: Fault::Jitter { mean }, unit, text: s.to_string() });
        }
        let rank = rank.ok_or_else(|| bad("rank= is missing".into()))?;
        let fault = match kind.trim() {
            "kill" => {
                Fault::Kill {
                    rank, at: at.ok_or_else(|| bad("the boundary (step=, day= …) is missing".into()))?, when
                }
            }
            "corrupt" => {
                let level = level.unwrap_or(1);
                if !(1..=3).contains(&level) {
                    return Err(bad(format!("level={level}: levels are 1, 2 and 3")));
                }
                Fault::Corrupt { rank, level: level as u8, at: at.unwrap_or(0) }
            }
            "bitflip" => {
                Fault::Bitflip { rank, at: at.ok_or_else(|| bad("the boundary (step=, day= …) is missing".into()))? }
            }
            "slow" => Fault::Slow { rank, factor: factor.ok_or_else(|| bad("factor= is missing".into()))? },
            other => return Err(bad(format!("unknown kind \"{other}\" (kill, corrupt, bitflip, slow, jitter)"))),
        };
        Ok(Injection { fault, unit, text: s.to_string() })
    }

    /// Checks the fault against the engine's boundary name and rank count.
    pub fn check(&self, unit: &str, ranks: usize) -> Result<(), CkptError> {
        if let Some(u) = &self.unit {
            if u != unit {
                return Err(CkptError::Input(format!(
                    "--inject {}: this model counts {unit}s, not {u}s (write {unit}=N)",
                    self.text
                )));
            }
        }
        if matches!(self.fault, Fault::Bitflip { .. }) && !BITFLIP_UNITS.contains(&unit) {
            return Err(CkptError::Input(format!(
                "--inject {}: this model has no silent-error check to catch a flipped bit (bit flips are \
                 injected and caught in the grid's, the epidemic's and the sequential, conservative and window \
                 DES engines' state; Time Warp's history would be corrupted with it)",
                self.text
            )));
        }
        let rank = match self.fault {
            Fault::Kill { rank, .. }
            | Fault::Corrupt { rank, .. }
            | Fault::Bitflip { rank, .. }
            | Fault::Slow { rank, .. } => rank,
            Fault::Jitter { .. } => 0,
        };
        if rank >= ranks {
            return Err(CkptError::Input(format!(
                "--inject {}: rank {rank} does not exist ({ranks} ranks)",
                self.text
            )));
        }
        Ok(())
    }
}

/// Ends this process at once, as a node failure would (no unwinding, no
/// flushing, no `MPI_Finalize`).
pub fn sigkill_self() -> ! {
    #[cfg(unix)]
    // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

/// Flips a few bytes spread over `bytes` (checkpoint corruption).
pub(crate) fn flip_bytes(bytes: &mut [u8]) {
    let n = bytes.len();
    for k in [n / 3, n / 2, n - 1] {
        if k < n {
            bytes[k] ^= 0x5a;
        }
    }
}

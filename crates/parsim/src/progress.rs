//! Progress of long work: a bar with rate and ETA on a terminal, plain
//! periodic lines otherwise (logs, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;

use crate::model::Whereabouts;

/// Reports `done / total` units of work.
pub struct Progress {
    label: String,
    total: u64,
    bar: Option<ProgressBar>,
    start: Instant,
    last_line: Instant,
    quiet: bool,
    every: Duration,
    /// The last amount set, and whether `finish` has reported it.
    done: u64,
    finished: bool,
    /// Where the rank is, for error messages (see [`Rank::progress`](crate::Rank::progress)).
    track: Option<Arc<Whereabouts>>,
}

/// How often plain progress lines are printed.
const LINE_EVERY: Duration = Duration::from_secs(2);

impl Progress {
    /// A progress report for `total` units labelled `label` (e.g. "laps").
    /// With `quiet`, nothing is shown (ranks other than 0).
    pub fn new(label: &str, total: u64, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} {per_sec} ETA {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.set_message(label.to_string());
            b
        });
        let now = Instant::now();
        Progress {
            label: label.to_string(),
            total,
            bar,
            start: now,
            last_line: now,
            quiet,
            every: LINE_EVERY,
            done: 0,
            finished: false,
            track: None,
        }
    }

    /// Prints plain lines this often (default 2 s) when not on a terminal.
    pub fn every(mut self, d: Duration) -> Self {
        self.every = d;
        self
    }

    /// Prints a line above the bar (or plainly, off a terminal), unless quiet.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }

    /// Changes the label (e.g. to show a failure count).
    pub fn set_label(&mut self, label: &str) {
        if label != self.label {
            self.label = label.to_string();
            if let Some(b) = &self.bar {
                b.set_message(label.to_string());
            }
        }
    }

    /// Changes the total (work whose size becomes known as it runs).
    pub fn set_total(&mut self, total: u64) {
        if total != self.total {
            self.total = total;
            if let Some(b) = &self.bar {
                b.set_length(total);
            }
        }
    }

    /// Also records every amount set in `w` (for error messages).
    pub(crate) fn tracking(mut self, w: Arc<Whereabouts>) -> Self {
        self.track = Some(w);
        self
    }

    /// Sets the amount done.
    pub fn set(&mut self, done: u64) {
        if let Some(w) = &self.track {
            w.record(done);
        }
        if self.quiet {
            return;
        }
        self.done = done;
        if let Some(b) = &self.bar {
            b.set_position(done);
            return;
        }
        if self.last_line.elapsed() >= self.every {
            self.last_line = Instant::now();
            let secs = self.start.elapsed().as_secs_f64();
            let rate = done as f64 / secs.max(1e-9);
            let eta = if rate > 0.0 { (self.total.saturating_sub(done)) as f64 / rate } else { f64::INFINITY };
            eprintln!(
                "{}: {done}/{} ({:.0}%), {rate:.0}/s, ETA {eta:.1} s",
                self.label,
                self.total,
                100.0 * done as f64 / self.total.max(1) as f64
            );
        }
    }

    /// Ends the report: clears the bar, or prints a last plain line.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        } else if !self.quiet && !self.finished {
            eprintln!("{}: {}/{} in {:.2} s", self.label, self.done, self.total, self.start.elapsed().as_secs_f64());
        }
        self.finished = true;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

//! Chrome / Perfetto trace-event export of every rank's phases.
//!
//! [`write_chrome_trace`] writes the JSON object format of the Trace Event
//! specification: one complete event (`"ph": "X"`) per phase span, one track
//! (`tid`) per rank, named `rank N`. Open the file in `ui.perfetto.dev` or
//! `chrome://tracing`.

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::phase::Phase;

/// One interval a rank spent in one phase, in nanoseconds from the run's epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The phase.
    pub phase: Phase,
    /// Start, ns since the epoch.
    pub start_ns: u64,
    /// End, ns since the epoch.
    pub end_ns: u64,
}

/// The spans of one rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The rank (its track in the viewer).
    pub rank: usize,
    /// Spans in time order.
    pub spans: Vec<Span>,
    /// Spans not kept because the per-rank limit was reached.
    pub dropped: u64,
}

/// Writes `traces` as Chrome trace-event JSON.
///
/// ```
/// use parsim_core::{trace::{write_chrome_trace, Span, Trace}, Phase};
///
/// let t = Trace { rank: 0, spans: vec![Span { phase: Phase::Compute, start_ns: 0, end_ns: 1500 }], dropped: 0 };
/// let mut out = Vec::new();
/// write_chrome_trace(&mut out, &[t])?;
/// let v: serde_json::Value = serde_json::from_slice(&out)?;
/// assert_eq!(v["traceEvents"][1]["name"], "compute");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_chrome_trace<W: Write>(out: W, traces: &[Trace]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |out: &mut std::io::BufWriter<W>| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            writeln!(out, ",")?;
        }
        Ok(())
    };
    for t in traces {
        sep(&mut out)?;
        write!(
            out,
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{r},\"args\":{{\"name\":\"rank {r}\"}}}}",
            r = t.rank
        )?;
        for s in &t.spans {
            sep(&mut out)?;
            write!(
                out,
                "{{\"name\":\"{}\",\"cat\":\"phase\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3}}}",
                s.phase.name(),
                t.rank,
                s.start_ns as f64 / 1000.0,
                (s.end_ns - s.start_ns) as f64 / 1000.0
            )?;
        }
        if t.dropped > 0 {
            sep(&mut out)?;
            write!(
                out,
                "{{\"name\":\"spans dropped\",\"ph\":\"C\",\"pid\":1,\"tid\":{},\"ts\":0,\"args\":{{\"dropped\":{}}}}}",
                t.rank, t.dropped
            )?;
        }
    }
    writeln!(out, "\n]}}")?;
    out.flush()
}

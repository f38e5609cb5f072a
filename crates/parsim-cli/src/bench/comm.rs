//! `parsim bench comm`: ping-pong latency and bandwidth between ranks 0 and 1,
//! and all-reduce latency over all ranks, on the chosen backend.

use super::median;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use parsim_comm::{Comm, ReduceOp, Source, TagMatch};
use serde::{Deserialize, Serialize};

use parsim::{write_atomic, Backend};

/// Message sizes of the ping-pong, in bytes.
const SIZES: [usize; 9] = [8, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20];
/// Repetitions of each measurement; the median is reported.
const REPS: usize = 5;

/// One row of the ping-pong table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingPong {
    /// Message size.
    pub bytes: usize,
    /// Round trips per repetition.
    pub iterations: usize,
    /// Half a round trip, median over repetitions, µs (buffer moved back and forth).
    pub one_way_us: f64,
    /// `bytes / one_way`, GB/s.
    pub gb_s: f64,
    /// Half a round trip when each hop sends a fresh copy of the buffer, µs.
    pub copy_one_way_us: f64,
    /// Bandwidth with a copy per hop, GB/s.
    pub copy_gb_s: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommBench {
    /// Backend name.
    pub backend: String,
    /// Ranks in the job.
    pub ranks: usize,
    /// The ping-pong table.
    pub pingpong: Vec<PingPong>,
    /// One 8-byte all-reduce (sum), median µs.
    pub allreduce_8b_us: f64,
    /// What the backend is measured against, in the same run.
    pub reference: Vec<Reference>,
}

/// A reference figure measured in the same run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reference {
    /// What was measured.
    pub what: String,
    /// Message size, bytes (0 for a bare cache line).
    pub bytes: usize,
    /// Half a round trip, median µs.
    pub one_way_us: f64,
}

fn iterations(bytes: usize, quick: bool) -> usize {
    let n = ((1usize << 28) / bytes.max(4096)).clamp(20, 20_000);
    if quick {
        (n / 20).max(3)
    } else {
        n
    }
}

/// Round trips between ranks 0 and 1; returns seconds per round trip (rank 0).
fn pingpong<C: Comm>(comm: &C, bytes: usize, iters: usize, copy: bool) -> Result<f64> {
    // Allocated (and touched) before the clock starts: only messages are timed.
    let mut buf = if comm.rank() == 0 { vec![1u8; bytes] } else { Vec::new() };
    comm.barrier()?;
    let t0 = Instant::now();
    match comm.rank() {
        0 => {
            for _ in 0..iters {
                let out = if copy { buf.clone() } else { std::mem::take(&mut buf) };
                comm.send(1, 1, out)?;
                buf = comm.recv::<u8>(Source::Rank(1), TagMatch::Tag(1))?.data;
            }
        }
        1 => {
            for _ in 0..iters {
                let m = comm.recv::<u8>(Source::Rank(0), TagMatch::Tag(1))?.data;
                let back = if copy { m.clone() } else { m };
                comm.send(0, 1, back)?;
            }
        }
        _ => {}
    }
    let dt = t0.elapsed().as_secs_f64() / iters as f64;
    drop(buf);
    comm.barrier()?;
    Ok(dt)
}

/// The hardware floor of a threads-backend message: two threads bouncing
/// one cache line through an atomic. Seconds per round trip.
fn cache_line_pingpong(iters: u64) -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    let flag = AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..iters {
                while flag.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                flag.store(2 * i + 2, Ordering::Release);
            }
        });
        for i in 0..iters {
            flag.store(2 * i + 1, Ordering::Release);
            while flag.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
    });
    t0.elapsed().as_secs_f64() / iters as f64
}

/// Seconds per 8-byte send to oneself followed by its receive.
fn self_send<C: Comm>(comm: &C, n: usize) -> Result<f64> {
    let me = comm.rank();
    let mut buf = vec![0u8; 8];
    let t0 = Instant::now();
    for _ in 0..n {
        comm.send(me, 2, std::mem::take(&mut buf))?;
        buf = comm.recv::<u8>(Source::Rank(me), TagMatch::Tag(2))?.data;
    }
    Ok(t0.elapsed().as_secs_f64() / n as f64)
}

/// Backend-specific references, measured on rank 0 and 1 of this run.
fn references<C: Comm>(comm: &C, quick: bool, raw: &dyn Fn(&C, usize, usize) -> Option<f64>) -> Result<Vec<Reference>> {
    let mut out = Vec::new();
    if comm.rank() == 0 {
        let n = if quick { 1_000 } else { 200_000 };
        let v = median((0..REPS).map(|_| self_send(comm, n)).collect::<Result<Vec<f64>>>()?);
        out.push(Reference {
            what: "send + receive to self on one rank (software cost, no cross-core transfer)".into(),
            bytes: 8,
            one_way_us: v * 1e6,
        });
        let t0 = Instant::now();
        for _ in 0..n {
            std::hint::black_box(Instant::now());
        }
        out.push(Reference {
            what: "one clock read (Instant::now), two per timed wait".into(),
            bytes: 0,
            one_way_us: t0.elapsed().as_secs_f64() / n as f64 * 1e6,
        });
    }
    comm.barrier()?;
    if comm.backend() == "threads" {
        if comm.rank() == 0 {
            let v = median((0..REPS).map(|_| cache_line_pingpong(if quick { 2_000 } else { 200_000 }) / 2.0).collect());
            out.push(Reference {
                what: "cache-line ping-pong between two threads (hardware floor)".into(),
                bytes: 0,
                one_way_us: v * 1e6,
            });
        }
        comm.barrier()?;
    }
    for bytes in [8usize, 1 << 20] {
        let iters = iterations(bytes, quick);
        let mut v = Vec::new();
        for _ in 0..REPS {
            match raw(comm, bytes, iters) {
                Some(t) => v.push(t / 2.0),
                None => break,
            }
        }
        if !v.is_empty() {
            out.push(Reference {
                what: "raw MPI_Send/MPI_Recv ping-pong (no parsim layer)".into(),
                bytes,
                one_way_us: median(v) * 1e6,
            });
        }
    }
    Ok(out)
}

fn bench_rank<C: Comm>(
    comm: C,
    quick: bool,
    raw: &dyn Fn(&C, usize, usize) -> Option<f64>,
) -> Result<Option<CommBench>> {
    if comm.size() < 2 {
        bail!("bench comm needs at least 2 ranks (ping-pong between ranks 0 and 1)");
    }
    let mut rows = Vec::new();
    for &bytes in &SIZES {
        let iters = iterations(bytes, quick);
        pingpong(&comm, bytes, iters / 10 + 1, false)?; // warm-up
        let mut moved = Vec::new();
        let mut copied = Vec::new();
        for _ in 0..REPS {
            moved.push(pingpong(&comm, bytes, iters, false)? / 2.0);
            copied.push(pingpong(&comm, bytes, iters, true)? / 2.0);
        }
        let (m, c) = (median(moved), median(copied));
        rows.push(PingPong {
            bytes,
            iterations: iters,
            one_way_us: m * 1e6,
            gb_s: bytes as f64 / m / 1e9,
            copy_one_way_us: c * 1e6,
            copy_gb_s: bytes as f64 / c / 1e9,
        });
    }
    let iters = if quick { 200 } else { 5000 };
    let mut ar = Vec::new();
    for _ in 0..REPS {
        comm.barrier()?;
        let t0 = Instant::now();
        for i in 0..iters {
            comm.all_reduce(&[i as u64], ReduceOp::Sum)?;
        }
        ar.push(t0.elapsed().as_secs_f64() / iters as f64);
    }
    let reference = references(&comm, quick, raw)?;
    // Rank 0's view of time; all ranks agree on the table through a broadcast.
    let report = CommBench {
        backend: comm.backend().into(),
        ranks: comm.size(),
        pingpong: rows,
        allreduce_8b_us: median(ar) * 1e6,
        reference,
    };
    let report = comm.broadcast_value(0, &report)?;
    Ok((comm.rank() == 0).then_some(report))
}

/// Prints the table.
pub fn print(b: &CommBench) {
    println!(
        "parsim bench comm — backend {}, {} ranks (ping-pong between ranks 0 and 1; median of {REPS})",
        b.backend, b.ranks
    );
    println!(
        "{:>10} {:>8} {:>12} {:>10} {:>14} {:>12}",
        "bytes", "iters", "one-way µs", "GB/s", "copy one-way", "copy GB/s"
    );
    for r in &b.pingpong {
        println!(
            "{:>10} {:>8} {:>12.3} {:>10.3} {:>14.3} {:>12.3}",
            r.bytes, r.iterations, r.one_way_us, r.gb_s, r.copy_one_way_us, r.copy_gb_s
        );
    }
    println!("all-reduce (8 B, sum, {} ranks): {:.3} µs", b.ranks, b.allreduce_8b_us);
    for r in &b.reference {
        println!("reference: {} at {} B: {:.3} µs one-way", r.what, r.bytes, r.one_way_us);
    }
    if let Some(row) = b.pingpong.first() {
        for r in b.reference.iter().filter(|r| r.bytes == 8 && r.what.contains("ping-pong")) {
            println!("ratio: parsim 8-byte one-way / {} = {:.2}", r.what, row.one_way_us / r.one_way_us);
        }
        for r in b.reference.iter().filter(|r| r.what.contains("hardware floor")) {
            println!("ratio: parsim 8-byte one-way / {} = {:.2}", r.what, row.one_way_us / r.one_way_us);
        }
    }
}

/// The α–β fit of the ping-pong (one copy per hop, as a real send makes),
/// with each size's measured and fitted time.
pub fn print_fit(b: &CommBench) {
    let pts: Vec<(f64, f64)> = b.pingpong.iter().map(|r| (r.bytes as f64, r.copy_one_way_us * 1e-6)).collect();
    let (alpha, beta, residual) = crate::scale::model::fit_alpha_beta(&pts);
    println!(
        "α–β fit (least squares of the relative error): α = {:.3} µs, β = {:.4} ns/byte ({:.2} GB/s); relative RMS residual {:.1} %",
        alpha * 1e6,
        beta * 1e9,
        if beta > 0.0 { 1e-9 / beta } else { f64::INFINITY },
        100.0 * residual
    );
    println!("{:>10} {:>14} {:>14}", "bytes", "measured µs", "α + β·bytes");
    for &(x, t) in &pts {
        println!("{:>10} {:>14.3} {:>14.3}", x, t * 1e6, (alpha + beta * x) * 1e6);
    }
    println!(
        "all-reduce: {:.3} µs on {} ranks = {:.3} µs × log₂ p",
        b.allreduce_8b_us,
        b.ranks,
        b.allreduce_8b_us / (b.ranks as f64).log2().max(1.0)
    );
}

/// Runs the benchmark; rank 0 prints it and writes the JSON.
pub fn run(backend: Backend, ranks: usize, out: PathBuf, quick: bool, fit: bool) -> Result<()> {
    let report = match backend {
        Backend::Threads => {
            let mut r =
                parsim_comm::launch(ranks, |c| bench_rank(c, quick, &|_, _, _| None).map_err(|e| format!("{e:#}")))
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            r.swap_remove(0)
        }
        Backend::Mpi => run_mpi(quick)?,
    };
    if let Some(b) = report {
        print(&b);
        if fit {
            print_fit(&b);
        }
        write_atomic(&out, serde_json::to_string_pretty(&b)?.as_bytes())?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn run_mpi(quick: bool) -> Result<Option<CommBench>> {
    let raw = |c: &parsim_comm::mpi::MpiComm, bytes: usize, iters: usize| {
        Some(parsim_comm::mpi::raw_pingpong(c, bytes, iters))
    };
    Ok(parsim_comm::mpi::launch(|c| bench_rank(c, quick, &raw).map_err(|e| format!("{e:#}")))?)
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_quick: bool) -> Result<Option<CommBench>> {
    Err(parsim::InputError::flag("--backend mpi", "this parsim was built without MPI; rebuild with --features mpi")
        .into())
}

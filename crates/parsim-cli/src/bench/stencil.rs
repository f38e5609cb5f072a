//! `parsim bench stencil`: steady-state cell updates per second of the
//! built-in heat stencils, against a plain reference kernel ([`Reference`])
//! and next to STREAM copy and triad bandwidth, all measured in the same run.

use super::median;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use parsim_grid::{Boundary, GridSpec, Heat5, Heat7, Stencil};

use super::stencil_ref::Reference;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use parsim::write_atomic;

/// STREAM-style bandwidth, GB/s (best of 5).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stream {
    /// Threads.
    pub threads: usize,
    /// `b[i] = a[i]`, counting 16 bytes per element.
    pub copy_gb_s: f64,
    /// `a[i] = b[i] + s·c[i]`, counting 24 bytes per element.
    pub triad_gb_s: f64,
}

/// One stencil measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// `heat5` or `heat7`.
    pub stencil: String,
    /// Grid size.
    pub size: Vec<usize>,
    /// Ranks (threads backend).
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// Halo exchange overlapped with the interior.
    pub overlap: bool,
    /// Halo depth: with k > 1 the k steps between exchanges run as one
    /// wavefront (temporal blocking).
    pub deep_halo: usize,
    /// Steps timed.
    pub steps: u64,
    /// Cell updates per second (median of the repetitions), in G/s.
    pub gups: f64,
    /// `gups` over the best reference variant on as many cores.
    pub vs_reference: f64,
    /// `gups × 16 B` over the copy bandwidth at the same total thread count.
    pub frac_16b: f64,
    /// `gups × 24 B` (with write-allocate) over the copy bandwidth.
    pub frac_24b: f64,
}

/// One measurement of the plain reference kernel.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefRow {
    /// `heat5` or `heat7`.
    pub stencil: String,
    /// Grid size.
    pub size: Vec<usize>,
    /// Threads.
    pub threads: usize,
    /// Non-temporal stores.
    pub streaming: bool,
    /// Steps timed.
    pub steps: u64,
    /// Cell updates per second (median), G/s.
    pub gups: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StencilBench {
    /// Bandwidth at 1 and 2 threads.
    pub stream: Vec<Stream>,
    /// The reference kernel.
    pub reference: Vec<RefRow>,
    /// The stencil table.
    pub rows: Vec<Row>,
}

fn stream(threads: usize, n: usize) -> Result<Stream> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let mut a = vec![1.0f64; n];
    let mut b = vec![2.0f64; n];
    let c = vec![0.5f64; n];
    let chunk = n.div_ceil(threads * 8);
    let (mut copy, mut triad) = (0.0f64, 0.0f64);
    for _ in 0..5 {
        let t = Instant::now();
        pool.install(|| b.par_chunks_mut(chunk).zip(a.par_chunks(chunk)).for_each(|(b, a)| b.copy_from_slice(a)));
        copy = copy.max(16.0 * n as f64 / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        pool.install(|| {
            a.par_chunks_mut(chunk).zip(b.par_chunks(chunk)).zip(c.par_chunks(chunk)).for_each(|((a, b), c)| {
                for ((x, &y), &z) in a.iter_mut().zip(b).zip(c) {
                    *x = y + 3.0 * z;
                }
            })
        });
        triad = triad.max(24.0 * n as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    std::hint::black_box((&a, &b));
    Ok(Stream { threads, copy_gb_s: copy, triad_gb_s: triad })
}

/// Warm-up steps before the timed ones (first touch, caches, huge pages).
const WARM: u64 = 2;

/// The problem every row solves: Dirichlet zero walls, this initial field.
fn init(g: [usize; 3]) -> f64 {
    ((g[2] * 7 + g[1] * 3 + g[0]) % 11) as f64 * 0.1
}

/// Steady-state cell updates per second (G/s) of parsim on `size`: the
/// steps after [`WARM`] up to the last, which is not timed (it also takes
/// the final reduction); and the final exact total, to check the problem.
/// With a deep halo of k, timing starts at the end of a wavefront of k
/// steps (a wavefront reports its steps when it ends), so the warm-up is
/// [`WARM`] rounded up to k and the timed steps are as many fewer; the run
/// has as many steps as the reference's.
#[allow(clippy::too_many_arguments)]
fn time<S: Stencil<f64>>(
    stencil: &S,
    size: &[usize],
    ranks: usize,
    threads: usize,
    overlap: bool,
    deep_halo: usize,
    steps: u64,
) -> Result<(f64, f64)> {
    let k = deep_halo as u64;
    let warm = WARM.div_ceil(k) * k;
    let mut spec = GridSpec::new(size.to_vec(), WARM + steps + 1);
    spec.threads_per_rank = threads;
    spec.overlap = overlap;
    spec.deep_halo = deep_halo;
    spec.boundary = vec![Boundary::Dirichlet(0.0)];
    let got = parsim_comm::launch(ranks, |comm| {
        let (mut first, mut last) = (None, None);
        let r = parsim_grid::run(&comm, &spec, stencil, &init, &mut |s| {
            if s == warm {
                first = Some(Instant::now());
            }
            if s == WARM + steps {
                last = Some(Instant::now());
            }
        })?;
        let secs = match (first, last) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        Ok::<_, parsim_grid::GridError>((secs, r.reductions.last().map_or(f64::NAN, |r| r.total)))
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let secs = got.iter().map(|g| g.0).fold(0.0, f64::max);
    let cells: usize = size.iter().product();
    Ok((cells as f64 * (WARM + steps - warm) as f64 / secs / 1e9, got[0].1))
}

/// The same for the plain reference kernel ([`Reference`]).
fn time_reference(size: &[usize], alpha: f64, threads: usize, nt: bool, steps: u64) -> Result<(f64, f64)> {
    let mut r = Reference::new(size, alpha, threads, init)?;
    r.nt = nt;
    for _ in 0..WARM {
        r.step();
    }
    let t = Instant::now();
    for _ in 0..steps {
        r.step();
    }
    let secs = t.elapsed().as_secs_f64();
    r.step();
    let mut total = parsim_core::BlockSum::new();
    r.interior().for_each(|v| total.add(v));
    let cells: usize = size.iter().product();
    Ok((cells as f64 * steps as f64 / secs / 1e9, total.to_exact().value()))
}

/// Runs the benchmark, prints the table and writes the JSON.
pub fn run(out: PathBuf, quick: bool) -> Result<()> {
    let n = if quick { 1 << 22 } else { 1 << 25 };
    let streams = vec![stream(1, n)?, stream(2, n)?];
    for s in &streams {
        println!("STREAM {} thread(s): copy {:.2} GB/s, triad {:.2} GB/s", s.threads, s.copy_gb_s, s.triad_gb_s);
    }
    let (s2, s3) = if quick { (vec![512, 512], vec![64, 64, 64]) } else { (vec![4096, 4096], vec![256, 256, 256]) };
    let (b2, b3) = if quick { (vec![1024, 1024], vec![96, 96, 96]) } else { (vec![8192, 8192], vec![512, 512, 512]) };
    let cells = |s: &[usize]| s.iter().product::<usize>() as f64;
    let steps_for = |s: &[usize]| ((if quick { 2e7 } else { 1.5e9 }) / cells(s)).clamp(30.0, 600.0) as u64;
    // (ranks, threads, overlap, deep halo); the last three rows are temporally blocked.
    let configs: Vec<(usize, usize, bool, usize)> = vec![
        (1, 1, true, 1),
        (1, 2, true, 1),
        (2, 1, true, 1),
        (2, 1, false, 1),
        (1, 1, true, 4),
        (1, 2, true, 4),
        (2, 1, true, 4),
    ];
    let reps = if quick { 1 } else { 3 };
    let mut rows = Vec::new();
    let mut refs = Vec::new();
    println!(
        "{:>7} {:>16} {:>5} {:>7} {:>7} {:>4} {:>6} {:>8} {:>8} {:>9} {:>9}",
        "stencil", "size", "ranks", "threads", "overlap", "halo", "steps", "G upd/s", "vs ref", "of 16B", "of 24B"
    );
    for (name, size) in [("heat5", &s2), ("heat5", &b2), ("heat7", &s3), ("heat7", &b3)] {
        let steps = steps_for(size);
        let alpha = if name == "heat5" { 0.2 } else { 0.1 };
        // The repetitions go round every variant in turn (the reference's
        // four, then parsim's rows), so that a slow minute of the host
        // touches every row alike and the ratios between rows hold.
        let variants: Vec<(usize, bool)> = vec![(1, false), (1, true), (2, false), (2, true)];
        let (mut ref_g, mut row_g) = (vec![Vec::new(); variants.len()], vec![Vec::new(); configs.len()]);
        let mut want = None;
        for _ in 0..reps {
            for (j, &(threads, nt)) in variants.iter().enumerate() {
                let (g, total) = time_reference(size, alpha, threads, nt, steps)?;
                want = Some(total);
                ref_g[j].push(g);
            }
            for (j, &(ranks, threads, overlap, deep_halo)) in configs.iter().enumerate() {
                let (g, total) = match name {
                    "heat5" => time(&Heat5 { alpha }, size, ranks, threads, overlap, deep_halo, steps)?,
                    _ => time(&Heat7 { alpha }, size, ranks, threads, overlap, deep_halo, steps)?,
                };
                if want.is_some_and(|w: f64| w.to_bits() != total.to_bits()) {
                    anyhow::bail!(
                        "{name} {size:?}: parsim's final total {total} differs from the reference's {want:?}: \
                         not the same problem"
                    );
                }
                row_g[j].push(g);
            }
        }
        let mut best = [0.0f64; 2];
        for (&(threads, nt), v) in variants.iter().zip(ref_g) {
            let gups = median(v);
            best[threads - 1] = best[threads - 1].max(gups);
            let store = if nt { "streaming" } else { "ordinary" };
            println!(
                "{:>7} {:>16} {:>13} {:>7} {:>4} {:>6} {:>8.3}   reference, {store} stores",
                name,
                format!("{size:?}"),
                threads,
                "",
                "",
                steps,
                gups
            );
            refs.push(RefRow { stencil: name.into(), size: size.clone(), threads, streaming: nt, steps, gups });
        }
        for (&(ranks, threads, overlap, deep_halo), v) in configs.iter().zip(row_g) {
            let gups = median(v);
            let cores = (ranks * threads).min(2);
            let bw = streams[cores - 1].copy_gb_s;
            let row = Row {
                stencil: name.into(),
                size: size.clone(),
                ranks,
                threads,
                overlap,
                deep_halo,
                steps,
                gups,
                vs_reference: gups / best[cores - 1],
                frac_16b: gups * 16.0 / bw,
                frac_24b: gups * 24.0 / bw,
            };
            println!(
                "{:>7} {:>16} {:>5} {:>7} {:>7} {:>4} {:>6} {:>8.3} {:>7.2}× {:>8.1}% {:>8.1}%",
                row.stencil,
                format!("{:?}", row.size),
                ranks,
                threads,
                overlap,
                deep_halo,
                steps,
                gups,
                row.vs_reference,
                100.0 * row.frac_16b,
                100.0 * row.frac_24b
            );
            rows.push(row);
        }
        // The goal beside the table: 1 rank × 2 threads within 10 % of 2 ranks.
        let rate = |r: usize, t: usize, k: usize| {
            rows.iter()
                .rev()
                .take(configs.len())
                .find(|w| (w.ranks, w.threads, w.overlap, w.deep_halo) == (r, t, true, k))
                .map(|w| w.gups)
        };
        for k in [1, 4] {
            if let (Some(t), Some(r)) = (rate(1, 2, k), rate(2, 1, k)) {
                println!(
                    "{:>7} {:>16}   1 rank × 2 threads over 2 ranks, halo {k}: {:.2}×",
                    name,
                    format!("{size:?}"),
                    t / r
                );
            }
        }
    }
    println!("vs ref: parsim's steady-state rate over the best reference variant on as many cores, same run, same final bits");
    println!("halo 4: deep halo of 4, the 4 steps between exchanges as one wavefront (temporal blocking)");
    let b = StencilBench { stream: streams, reference: refs, rows };
    write_atomic(&out, serde_json::to_string_pretty(&b)?.as_bytes())?;
    println!("wrote {}", out.display());
    Ok(())
}

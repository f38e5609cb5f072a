//! `parsim bench checkpoint`: checkpoint write throughput against the
//! disk's sequential write bandwidth (a dd-style write with fsync, in the
//! same run); the per-checkpoint stall with background writing against
//! writing in the simulation's thread; checkpoint size against the state's
//! size; and the measured overhead of heat2d and the epidemic at Daly's
//! interval against the overhead Daly predicts (δ/τ without failures).

use super::median;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use parsim::ckpt::{daly, Bytes, Checkpointer, Identity, Interval, Options};
use parsim_comm::Comm;
use serde::Serialize;
use serde_json::{json, Value};

use parsim::write_atomic;

#[derive(Serialize)]
struct Report {
    disk_write_mb_s: f64,
    checkpoint_write_mb_s: f64,
    write_vs_disk: f64,
    state_mb_per_rank: f64,
    stall_async_s: f64,
    stall_sync_s: f64,
    stall_async_vs_sync: f64,
    compression: Vec<Value>,
    overhead: Vec<Value>,
}

/// Writes `mb` MB in 8 MB blocks and fsyncs: the disk's sequential write speed.
fn disk_bandwidth(dir: &Path, mb: usize) -> Result<f64> {
    let path = dir.join("dd.bin");
    let block: Vec<u8> = (0..8 << 20).map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let t = Instant::now();
    let mut f = std::fs::File::create(&path)?;
    for _ in 0..mb / 8 {
        f.write_all(&block)?;
    }
    f.sync_all()?;
    let s = t.elapsed().as_secs_f64();
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(mb as f64 / s)
}

/// A heat field's worth of f64 (smooth, like a diffused field).
fn field(n: usize, rank: usize) -> Bytes {
    let v: Vec<f64> = (0..n).map(|i| ((i + rank * 7) as f64 * 1e-4).sin() * 0.5 + 0.5).collect();
    Bytes(bytemuck::cast_slice(&v).to_vec())
}

/// (stall per checkpoint, background write throughput MB/s) for `ckpts`
/// checkpoints of `n` f64 per rank on `ranks` ranks, `gap` of computing
/// between them.
fn checkpoints(dir: &Path, n: usize, ckpts: u64, asynchronous: bool, ranks: usize, gap_ms: u64) -> Result<(f64, f64)> {
    let _ = std::fs::remove_dir_all(dir);
    let out = parsim_comm::launch(ranks, |c| {
        let mut o = Options::new(dir, Some(Interval::Every(1)));
        o.asynchronous = asynchronous;
        o.shared_every = 0;
        o.partner = ranks > 1;
        let mut ck = Checkpointer::new(&c, o, Identity::new("bench", "step", "b", 0)).map_err(|e| e.to_string())?;
        let state = field(n, c.rank());
        for b in 1..=ckpts {
            ck.boundary(b).map_err(|e| e.to_string())?;
            ck.save(b, json!(b), Value::Null, Value::Null, &state).map_err(|e| e.to_string())?;
            // The simulation computes between checkpoints.
            std::thread::sleep(std::time::Duration::from_millis(gap_ms));
        }
        let s = ck.finish();
        Ok::<_, String>((s.snapshot_s / s.checkpoints as f64, s.file_bytes as f64 / 1e6 / s.write_s.max(1e-9)))
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(out[0])
}

fn summary(dir: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(dir.join("summary.json")).context("summary.json")?;
    Ok(serde_json::from_str(&text)?)
}

/// Runs `parsim run ARGS` (this executable) and returns its summary.
fn run(args: &[&str], out: &Path) -> Result<Value> {
    let exe = std::env::current_exe()?;
    let o = Command::new(exe).arg("run").args(args).args(["-q", "--out"]).arg(out).output()?;
    if !o.status.success() {
        bail!("parsim run {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    summary(out)
}

/// Wall time with and without checkpoints at the Daly interval for `mtbf`,
/// alternating, medians of `reps`.
fn overhead(name: &str, args: &[&str], mtbf: &str, reps: usize, dir: &Path) -> Result<Value> {
    let (mut plain, mut with, mut last) = (Vec::new(), Vec::new(), Value::Null);
    for _ in 0..reps {
        plain.push(run(args, &dir.join("plain"))?["wall_s"].as_f64().unwrap_or(0.0));
        let _ = std::fs::remove_dir_all(dir.join("ckpt"));
        let mut a = args.to_vec();
        a.extend(["--checkpoint", "auto", "--mtbf", mtbf]);
        let s = run(&a, &dir.join("ckpt"))?;
        with.push(s["wall_s"].as_f64().unwrap_or(0.0));
        last = s;
    }
    let (p, w) = (median(plain), median(with));
    let c = &last["checkpoint"];
    let n = c["checkpoints"].as_u64().unwrap_or(0);
    let stall = c["snapshot_s"].as_array().map_or(0.0, |v| v.iter().filter_map(Value::as_f64).fold(0.0, f64::max));
    let delta = if n > 0 { stall / n as f64 } else { 0.0 };
    let m = parsim::ckpt::parse_duration(mtbf)?;
    let tau = if delta > 0.0 { daly(delta, m) } else { f64::NAN };
    let r = json!({
        "scenario": name,
        "mtbf_s": m,
        "wall_plain_s": p,
        "wall_checkpointed_s": w,
        "checkpoints": n,
        "delta_s": delta,
        "tau_s": tau,
        "measured_overhead": w / p - 1.0,
        "predicted_overhead": if n > 0 { delta / tau } else { 0.0 },
    });
    println!(
        "{name:<10} M = {mtbf:>4}: {n:>3} checkpoints, δ = {:.4} s, τ = {:.2} s; wall {:.3} s vs {:.3} s plain: \
         overhead {:+.2}% measured, {:.2}% predicted (δ/τ)",
        delta,
        tau,
        w,
        p,
        100.0 * (w / p - 1.0),
        100.0 * r["predicted_overhead"].as_f64().unwrap_or(0.0)
    );
    Ok(r)
}

/// Runs the benchmark and writes `out`.
pub fn run_bench(out: PathBuf, quick: bool, reps: usize) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("parsim-bench-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (n, ckpts, disk_mb) = if quick { (1 << 20, 3, 64) } else { (8 << 20, 5, 512) };
    let disk = median((0..reps).map(|_| disk_bandwidth(&dir, disk_mb)).collect::<Result<Vec<_>>>()?);
    let mut stall_a = Vec::new();
    let mut stall_s = Vec::new();
    let mut thr = Vec::new();
    for _ in 0..reps {
        // Throughput: one writer against the one dd stream.
        let (_, t) = checkpoints(&dir.join("one"), n, ckpts, true, 1, 50)?;
        // Stall: 2 ranks with partner copies, computing 1 s between checkpoints.
        let (a, _) = checkpoints(&dir.join("async"), n, ckpts, true, 2, 1000)?;
        let (s, _) = checkpoints(&dir.join("sync"), n, ckpts, false, 2, 1000)?;
        stall_a.push(a);
        stall_s.push(s);
        thr.push(t);
    }
    let (sa, ss, t) = (median(stall_a), median(stall_s), median(thr));
    let mb = (n * 8) as f64 / 1e6;
    println!("disk sequential write (8 MB blocks, fsync): {disk:.0} MB/s");
    println!(
        "checkpoint write (checksum, LZ4 when it pays, write, fsync, rename; one writer, {mb:.0} MB): {t:.0} MB/s = {:.2}× the disk",
        t / disk
    );
    println!(
        "stall per checkpoint (2 ranks, partner copies, {mb:.0} MB each): {sa:.4} s background vs {ss:.4} s synchronous = {:.3}×",
        sa / ss
    );
    // Compression of real states: the heat field and the epidemic.
    let mut compression = Vec::new();
    for (name, args) in [
        (
            "heat2d",
            vec![
                "scenarios/heat2d.toml",
                "--set",
                "grid.size=[1024,1024]",
                "--set",
                "grid.steps=200",
                "--set",
                "grid.png=false",
                "--set",
                "grid.output_every=0",
                "--checkpoint-every",
                "100",
            ],
        ),
        ("epidemic", vec!["scenarios/epidemic.toml", "--set", "abm.agents=200000", "--checkpoint-every", "90"]),
        (
            "phold-tw",
            vec!["scenarios/phold.toml", "--ranks", "2", "--set", "des.engine=optimistic", "--checkpoint-every", "100"],
        ),
    ] {
        let s = run(&args, &dir.join(format!("z-{name}")))?;
        let c = &s["checkpoint"];
        let sum = |k: &str| c[k].as_array().map_or(0.0, |v| v.iter().filter_map(Value::as_f64).sum::<f64>());
        let ratio = sum("file_bytes") / sum("raw_bytes").max(1.0);
        println!(
            "{name:<10} checkpoint files {:.1} MB for {:.1} MB of state: {ratio:.3}× (LZ4)",
            sum("file_bytes") / 1e6,
            sum("raw_bytes") / 1e6
        );
        compression.push(
            json!({"scenario": name, "raw_bytes": sum("raw_bytes"), "file_bytes": sum("file_bytes"), "ratio": ratio}),
        );
    }
    let heat: &[&str] = if quick {
        &[
            "scenarios/heat2d.toml",
            "--set",
            "grid.size=[1024,1024]",
            "--set",
            "grid.steps=300",
            "--set",
            "grid.png=false",
            "--set",
            "grid.output_every=0",
        ]
    } else {
        &["scenarios/heat2d.toml", "--set", "grid.png=false", "--set", "grid.output_every=0", "--set", "grid.steps=800"]
    };
    let epi: &[&str] =
        if quick { &["scenarios/epidemic.toml", "--set", "abm.agents=200000"] } else { &["scenarios/epidemic.toml"] };
    let mut over = Vec::new();
    for mtbf in ["1h", "10s"] {
        over.push(overhead("heat2d", heat, mtbf, reps, &dir.join("o-heat"))?);
        over.push(overhead("epidemic", epi, mtbf, reps, &dir.join("o-epi"))?);
    }
    let report = Report {
        disk_write_mb_s: disk,
        checkpoint_write_mb_s: t,
        write_vs_disk: t / disk,
        state_mb_per_rank: mb,
        stall_async_s: sa,
        stall_sync_s: ss,
        stall_async_vs_sync: sa / ss,
        compression,
        overhead: over,
    };
    write_atomic(&out, serde_json::to_string_pretty(&report)?.as_bytes())?;
    let _ = std::fs::remove_dir_all(&dir);
    println!("→ {}", out.display());
    Ok(())
}

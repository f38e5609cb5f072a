//! `parsim bench partition`: every graph in a directory × K = 2 … 64 at
//! imbalance 1.03: parsim's multilevel (default and strong presets) against
//! `gpmetis` run in the same benchmark, as geometric means of the cut and
//! time ratios, per K and overall: the partitioning step alone (parsim's
//! in-process time against gpmetis's own "Partitioning" timer), and both
//! tools as whole processes, CPU seconds against CPU seconds (the kernel's
//! accounting of each child) and wall against wall.

use super::median;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use parsim_partition::{
    io, metrics, multilevel_kway, vertex_cut, Config, Graph, Method, Partitioner, Preset, VertexCut,
};
use serde::{Deserialize, Serialize};

use parsim::write_atomic;

/// One (graph, K) measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// Graph file name.
    pub graph: String,
    /// Parts.
    pub k: usize,
    /// Cut of the default preset, and its time (s, median of the repetitions).
    pub cut: i64,
    /// Seconds.
    pub time_s: f64,
    /// Cut of the strong preset.
    pub strong_cut: i64,
    /// Seconds.
    pub strong_time_s: f64,
    /// gpmetis's cut (`None` when gpmetis is not installed).
    pub metis_cut: Option<i64>,
    /// gpmetis's own "Partitioning" time, seconds.
    pub metis_time_s: Option<f64>,
    /// Whether gpmetis's partition meets the (1 + ε)·⌈W/k⌉ rule.
    pub metis_balanced: Option<bool>,
    /// `parsim partition` as a whole process (reading, partitioning,
    /// writing): CPU seconds (user + system) and wall seconds, medians.
    pub proc_cpu_s: f64,
    /// Wall seconds of the same process.
    pub proc_wall_s: f64,
    /// `gpmetis` as a whole process, measured the same way.
    pub metis_cpu_s: Option<f64>,
    /// Wall seconds of the same process.
    pub metis_wall_s: Option<f64>,
    /// `parsim partition --preset strong` as a whole process: CPU seconds
    /// (one run, as the strong preset's in-process time).
    #[serde(default)]
    pub strong_proc_cpu_s: f64,
}

/// CPU seconds (user + system) of the children this process has waited for.
fn children_cpu_s() -> f64 {
    super::cpu_s(super::Who::Children)
}

/// Runs `cmd` to its end `reps` times: median CPU seconds (its own, from
/// the kernel's accounting of waited-for children) and median wall seconds.
/// `None` when the program cannot be started or fails.
fn process_times(mut cmd: impl FnMut() -> Command, reps: usize) -> Option<(f64, f64)> {
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let c0 = children_cpu_s();
        let t = Instant::now();
        let ok = cmd().stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().ok()?;
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(children_cpu_s() - c0);
        if !ok.success() {
            return None;
        }
    }
    Some((median(cpu), median(wall)))
}

fn ours(g: &Graph, k: usize, preset: Preset, reps: usize) -> parsim_partition::Result<(i64, f64)> {
    let mut cfg = Config::new(k);
    cfg.preset = preset;
    let mut times = Vec::new();
    let mut cut = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let (_, m) = multilevel_kway(g, &cfg)?;
        times.push(t.elapsed().as_secs_f64());
        cut = m.cut;
    }
    Ok((cut, median(times)))
}

fn gpmetis(path: &Path, g: &Graph, k: usize, tmp: &Path, reps: usize) -> Result<Option<(i64, f64, bool)>> {
    let copy = tmp.join(path.file_name().expect("file name"));
    if !copy.exists() {
        std::fs::copy(path, &copy).with_context(|| format!("copying {}", path.display()))?;
    }
    let mut times = Vec::new();
    let mut cut = 0;
    for _ in 0..reps {
        let out = match Command::new("gpmetis").arg("-ufactor=30").arg(&copy).arg(k.to_string()).output() {
            Ok(o) => o,
            Err(_) => return Ok(None),
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let num_after = |key: &str| -> Option<f64> {
            let at = text.find(key)? + key.len();
            text[at..].split(|c: char| !(c.is_ascii_digit() || c == '.')).find(|s| !s.is_empty())?.parse().ok()
        };
        cut = num_after("Edgecut:").context("gpmetis printed no edge cut")? as i64;
        times.push(num_after("Partitioning:").context("gpmetis printed no partitioning time")?);
    }
    let part_file = PathBuf::from(format!("{}.part.{k}", copy.display()));
    let parts = io::read_partition(&part_file, g.n())?;
    let m = metrics(g, &parts, &Config::new(k));
    Ok(Some((cut, median(times), m.balanced)))
}

/// The distributed partitioners at p = K ranks on the threads backend:
/// label propagation (`dlp`) from the id blocks, and the parallel
/// multilevel scheme (`dml`) from the id blocks and from a hash of the ids
/// (a layout with no locality at all); their cuts against the sequential
/// multilevel cut of the same K and ε, `dml`'s wall time against the
/// sequential one's (both in this process), and the largest rank's graph
/// bytes against one rank's (the graph, and everything `dml` holds).
fn distributed(files: &[PathBuf]) -> Result<()> {
    use parsim_comm::Comm;
    use parsim_graph::{block_owner, Csr, DistGraph};
    println!("\ndistributed partitioning, K = p ranks (threads), ε = 3 %; times are wall seconds");
    println!(
        "{:>22} {:>3} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "graph",
        "K",
        "block cut",
        "dlp cut",
        "dml cut",
        "dml hash",
        "ml cut",
        "dlp/ml",
        "dml/ml",
        "hash/ml",
        "dml s",
        "ml s",
        "bytes/p1",
        "dml B/p1",
        "metis",
        "dml/metis"
    );
    let mut ratios: Vec<(usize, [f64; 3])> = Vec::new();
    let mut times: Vec<(usize, f64, f64)> = Vec::new();
    let mut vs_metis: Vec<(usize, f64)> = Vec::new();
    let tmp = std::env::temp_dir().join(format!("parsim-bench-dist-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    for f in files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let pg = io::read_graph(f)?;
        let g = Csr::from_graph(&pg);
        if g.weight.is_some() {
            continue; // the distributed partitioners count edges, not weights
        }
        let n = g.n();
        let solo = DistGraph::build(0, 1, &g, &vec![0; n])?;
        let one = solo.bytes();
        let one_dml =
            parsim_comm::launch(1, |c| solo.multilevel(&c, 2, 0.03, 0)).map_err(|e| anyhow::anyhow!("{e}"))?[0].bytes;
        for k in [2usize, 4] {
            if k > n {
                continue;
            }
            let t = Instant::now();
            let ml = multilevel_kway(&pg, &Config::new(k))?.1;
            let ml_s = t.elapsed().as_secs_f64();
            let metis = gpmetis(f, &pg, k, &tmp, 1)?;
            let blocks: Vec<u32> = (0..n as u32).map(|v| block_owner(n, k, v)).collect();
            let hashed: Vec<u32> = (0..n as u32).map(|v| (v.wrapping_mul(2_654_435_761) >> 7) % k as u32).collect();
            let got = parsim_comm::launch(k, |comm| {
                let d = DistGraph::build(comm.rank(), k, &g, &blocks)?;
                let lp = d.label_propagation(&comm, k, 0.03, 20)?;
                comm.barrier()?;
                let t = Instant::now();
                let ml = d.multilevel(&comm, k, 0.03, 0)?;
                let secs = t.elapsed().as_secs_f64();
                let h = DistGraph::build(comm.rank(), k, &g, &hashed)?.multilevel(&comm, k, 0.03, 0)?;
                Ok::<_, parsim_graph::GraphError>((lp, ml, h.cut, secs, d.bytes()))
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            let (lp, dml, hash_cut, secs, _) = &got[0];
            let bytes = got.iter().map(|x| x.4).max().unwrap_or(0);
            let dml_bytes = got.iter().map(|x| x.1.bytes).max().unwrap_or(0);
            let of = |c: u64| c.max(1) as f64 / ml.cut.max(1) as f64;
            let r = [of(lp.cut.1), of(dml.cut), of(*hash_cut)];
            ratios.push((k, r));
            times.push((k, *secs, ml_s));
            println!(
                "{name:>22} {k:>3} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7.3} {:>7.3} {:>7.3} {secs:>8.4} {ml_s:>8.4} {:>8.3} {:>8.3} {:>8} {:>9}",
                lp.cut.0,
                lp.cut.1,
                dml.cut,
                hash_cut,
                ml.cut,
                r[0],
                r[1],
                r[2],
                bytes as f64 / one as f64,
                dml_bytes as f64 / one_dml as f64,
                metis.map_or("-".into(), |m| m.0.to_string()),
                metis.map_or("-".into(), |m| format!("{:.3}", dml.cut.max(1) as f64 / m.0.max(1) as f64))
            );
            if let Some(m) = metis {
                vs_metis.push((k, dml.cut.max(1) as f64 / m.0.max(1) as f64));
            }
        }
    }
    for k in [2usize, 4] {
        let col = |i: usize| geomean(&ratios.iter().filter(|r| r.0 == k).map(|r| r.1[i]).collect::<Vec<_>>());
        println!(
            "K = p = {k}: geometric mean over {} graphs of the cut over the multilevel cut: dlp {:.3}, dml {:.3}, dml from hashed ids {:.3}",
            ratios.iter().filter(|r| r.0 == k).count(),
            col(0),
            col(1),
            col(2)
        );
        let (dml_s, ml_s) = times.iter().filter(|t| t.0 == k).fold((0.0, 0.0), |(a, b), t| (a + t.1, b + t.2));
        println!(
            "K = p = {k}: dml {dml_s:.3} s against ml {ml_s:.3} s of wall time over the graphs ({:.2}x)",
            dml_s / ml_s
        );
        let m: Vec<f64> = vs_metis.iter().filter(|r| r.0 == k).map(|r| r.1).collect();
        if !m.is_empty() {
            println!(
                "K = p = {k}: geometric mean of the dml cut over gpmetis's: {:.3} over {} graphs",
                geomean(&m),
                m.len()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Runs the benchmark over `dir`'s `*.graph` files.
pub fn run(dir: PathBuf, out: PathBuf, quick: bool, reps: usize, only_distributed: bool) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "graph"))
        .collect();
    files.sort();
    if quick {
        files.truncate(3);
    }
    if only_distributed {
        return distributed(&files);
    }
    let ks: &[usize] = if quick { &[2, 8] } else { &[2, 4, 8, 16, 32, 64] };
    let tmp = std::env::temp_dir().join(format!("parsim-bench-partition-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    println!(
        "{:>22} {:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6} {:>6}",
        "graph", "K", "cut", "s", "strong", "s", "metis", "s", "cut/m", "str/m", "t/m"
    );
    let mut rows = Vec::new();
    for f in &files {
        let g = io::read_graph(f)?;
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        for &k in ks {
            if k > g.n() {
                continue;
            }
            let (cut, time_s) = match ours(&g, k, Preset::Default, reps) {
                Ok(r) => r,
                Err(e) => {
                    println!("{name:>22} {k:>3} {e}");
                    continue;
                }
            };
            let (strong_cut, strong_time_s) = ours(&g, k, Preset::Strong, 1)?;
            let metis = gpmetis(f, &g, k, &tmp, reps)?;
            // Both tools as whole processes, timed alike: CPU against CPU, wall against wall.
            let exe = std::env::current_exe()?;
            let part_out = tmp.join("parsim.part");
            let (proc_cpu_s, proc_wall_s) = process_times(
                || {
                    let mut c = Command::new(&exe);
                    c.arg("partition").arg(f).arg(k.to_string()).arg("-ufactor=30").arg("--out").arg(&part_out);
                    c
                },
                reps,
            )
            .context("parsim partition failed as a process")?;
            let (strong_proc_cpu_s, _) = process_times(
                || {
                    let mut c = Command::new(&exe);
                    c.arg("partition").arg(f).arg(k.to_string()).arg("-ufactor=30").arg("--preset").arg("strong");
                    c.arg("--out").arg(&part_out);
                    c
                },
                1,
            )
            .context("parsim partition --preset strong failed as a process")?;
            let copy = tmp.join(f.file_name().expect("file name"));
            let metis_proc = metis.and_then(|_| {
                process_times(
                    || {
                        let mut c = Command::new("gpmetis");
                        c.arg("-ufactor=30").arg(&copy).arg(k.to_string());
                        c
                    },
                    reps,
                )
            });
            let row = Row {
                graph: name.clone(),
                k,
                cut,
                time_s,
                strong_cut,
                strong_time_s,
                metis_cut: metis.map(|m| m.0),
                metis_time_s: metis.map(|m| m.1),
                metis_balanced: metis.map(|m| m.2),
                proc_cpu_s,
                proc_wall_s,
                metis_cpu_s: metis_proc.map(|m| m.0),
                metis_wall_s: metis_proc.map(|m| m.1),
                strong_proc_cpu_s,
            };
            let r = |a: i64, b: Option<i64>| b.map_or(f64::NAN, |b| a.max(1) as f64 / b.max(1) as f64);
            println!(
                "{:>22} {:>3} {:>8} {:>8.3} {:>8} {:>8.3} {:>8} {:>8.3} {:>6.3} {:>6.3} {:>6.2}",
                name,
                k,
                cut,
                time_s,
                strong_cut,
                strong_time_s,
                row.metis_cut.map_or("-".into(), |c| c.to_string()),
                row.metis_time_s.unwrap_or(f64::NAN),
                r(cut, row.metis_cut),
                r(strong_cut, row.metis_cut),
                row.metis_time_s.map_or(f64::NAN, |t| time_s / t.max(1e-3))
            );
            rows.push(row);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let summary = |sel: &dyn Fn(&Row) -> bool| {
        let rs: Vec<&Row> = rows.iter().filter(|r| sel(r) && r.metis_cut.is_some()).collect();
        let c: Vec<f64> = rs.iter().map(|r| r.cut.max(1) as f64 / r.metis_cut.unwrap().max(1) as f64).collect();
        let s: Vec<f64> = rs.iter().map(|r| r.strong_cut.max(1) as f64 / r.metis_cut.unwrap().max(1) as f64).collect();
        // METIS reports its time in 1 ms steps: floor both at 1 ms.
        let t: Vec<f64> = rs.iter().map(|r| r.time_s.max(1e-3) / r.metis_time_s.unwrap().max(1e-3)).collect();
        let ts: Vec<f64> = rs.iter().map(|r| r.strong_time_s.max(1e-3) / r.metis_time_s.unwrap().max(1e-3)).collect();
        let worst_t = t.iter().copied().fold(0.0, f64::max);
        (geomean(&c), geomean(&t), geomean(&s), geomean(&ts), worst_t, rs.len())
    };
    println!("\ngeometric means against gpmetis (cut ratio < 1: parsim cuts less)");
    println!(
        "{:>8} {:>10} {:>10} {:>12} {:>12} {:>10} {:>6}",
        "K", "cut", "time", "strong cut", "strong time", "worst t", "n"
    );
    for &k in ks {
        let (c, t, s, ts, w, n) = summary(&|r: &Row| r.k == k);
        println!("{k:>8} {c:>10.3} {t:>10.3} {s:>12.3} {ts:>12.3} {w:>10.2} {n:>6}");
    }
    let (c, t, s, ts, w, n) = summary(&|_| true);
    println!("{:>8} {c:>10.3} {t:>10.3} {s:>12.3} {ts:>12.3} {w:>10.2} {n:>6}", "all");
    // Like with like: each tool as a whole process (read, partition, write),
    // CPU seconds from the kernel's accounting of both children, and wall
    // seconds, in the same run.
    println!("\nwhole processes, parsim partition over gpmetis (same graph, K, -ufactor=30; medians of {reps})");
    println!("{:>8} {:>10} {:>10} {:>11} {:>6}", "K", "CPU", "wall", "strong CPU", "n");
    let proc_ratio = |sel: &dyn Fn(&Row) -> bool| {
        let rs: Vec<&Row> = rows.iter().filter(|r| sel(r) && r.metis_cpu_s.is_some()).collect();
        // The kernel accounts CPU in ticks of at most 1 ms here: floor both at 1 ms.
        let over = |ours: f64, r: &Row| ours.max(1e-3) / r.metis_cpu_s.unwrap().max(1e-3);
        let cpu: Vec<f64> = rs.iter().map(|r| over(r.proc_cpu_s, r)).collect();
        let wall: Vec<f64> = rs.iter().map(|r| r.proc_wall_s.max(1e-3) / r.metis_wall_s.unwrap().max(1e-3)).collect();
        let strong: Vec<f64> = rs.iter().map(|r| over(r.strong_proc_cpu_s, r)).collect();
        (geomean(&cpu), geomean(&wall), geomean(&strong), rs.len())
    };
    for &k in ks {
        let (c, w, s, n) = proc_ratio(&|r: &Row| r.k == k);
        println!("{k:>8} {c:>10.3} {w:>10.3} {s:>11.3} {n:>6}");
    }
    let (c, w, s, n) = proc_ratio(&|_| true);
    println!("{:>8} {c:>10.3} {w:>10.3} {s:>11.3} {n:>6}", "all");
    // The one-pass and label-propagation methods against the multilevel cut.
    println!("\nstreaming and label propagation: geometric mean of cut / multilevel cut (and balance kept)");
    println!("{:>8} {:>10} {:>10} {:>10}", "K", "ldg", "fennel", "lp");
    let others = [Method::Ldg, Method::Fennel, Method::LabelPropagation];
    let mut per_k: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); others.len()]; ks.len()];
    let mut all_balanced = [true; 3];
    for f in &files {
        let g = io::read_graph(f)?;
        for (ki, &k) in ks.iter().enumerate() {
            let Some(r) =
                rows.iter().find(|r| r.k == k && Some(r.graph.as_str()) == f.file_name().and_then(|n| n.to_str()))
            else {
                continue;
            };
            for (mi, m) in others.iter().enumerate() {
                let (_, met) = m.partition(&g, &Config::new(k))?;
                all_balanced[mi] &= met.balanced;
                per_k[ki][mi].push(met.cut.max(1) as f64 / r.cut.max(1) as f64);
            }
        }
    }
    for (ki, &k) in ks.iter().enumerate() {
        let g: Vec<f64> = per_k[ki].iter().map(|v| geomean(v)).collect();
        println!("{k:>8} {:>10.3} {:>10.3} {:>10.3}", g[0], g[1], g[2]);
    }
    println!("{:>8} {:>10} {:>10} {:>10}", "balanced", all_balanced[0], all_balanced[1], all_balanced[2]);
    // Vertex cuts on the social graphs.
    println!("\nvertex cuts (edge partitions): replication factor, and edge balance at 1.03");
    println!("{:>22} {:>3} {:>8} {:>8} {:>8} {:>8}", "graph", "K", "hash", "greedy", "hdrf", "balance");
    for f in files.iter().filter(|f| {
        let n = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.starts_with("ca-GrQc") || n.starts_with("email-Enron") || n.starts_with("facebook")
    }) {
        let g = io::read_graph(f)?;
        for &k in ks {
            let rf = |m| vertex_cut(&g, k, m, 0, 0.03);
            let (h, gr, hd) = (rf(VertexCut::Hash), rf(VertexCut::Greedy), rf(VertexCut::Hdrf));
            println!(
                "{:>22} {k:>3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                f.file_name().unwrap_or_default().to_string_lossy(),
                h.replication_factor,
                gr.replication_factor,
                hd.replication_factor,
                gr.edge_balance.max(hd.edge_balance)
            );
        }
    }
    distributed(&files)?;
    let unbalanced = rows.iter().filter(|r| r.metis_balanced == Some(false)).count();
    println!("gpmetis partitions over the (1+ε)·⌈W/k⌉ limit: {unbalanced} of {}", rows.len());
    write_atomic(&out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    println!("→ {}", out.display());
    Ok(())
}

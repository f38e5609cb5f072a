//! `parsim partition GRAPH K`: partition a graph file as `gpmetis` would,
//! writing one part id per line to `NAME.part.K`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use parsim_partition::{io, vertex_cut, Config, Method, PartitionError, Partitioner, Preset, VertexCut};
use serde_json::json;

use parsim::InputError;

/// The flags of `parsim partition`.
pub struct PartitionArgs {
    /// The graph file.
    pub graph: PathBuf,
    /// Parts.
    pub k: usize,
    /// Method name.
    pub method: String,
    /// Max part weight over the average, e.g. 1.03.
    pub imbalance: f64,
    /// Seed.
    pub seed: u64,
    /// fast | default | strong.
    pub preset: String,
    /// Output file (default: NAME.part.K in the current directory).
    pub out: Option<PathBuf>,
    /// Print a JSON report instead of text.
    pub json: bool,
    /// Coordinates file for geometric methods.
    pub coords: Option<PathBuf>,
    /// Pinned vertices: one part per line, -1 for free.
    pub fixed: Option<PathBuf>,
    /// Repartition from this partition file.
    pub current: Option<PathBuf>,
    /// Migration cost per unit of moved vertex weight (with `current`).
    pub alpha: i64,
    /// Contiguous parts.
    pub contig: bool,
    /// Partition while reading (ldg, fennel), without loading the graph.
    pub stream: bool,
    /// gpmetis's own options.
    pub gp: GpmetisOpts,
}

/// gpmetis 5.1's options, each with its meaning or as a documented no-op
/// (`gpmetis -help` lists the same). The single-dash spellings
/// (`-ufactor=30`, `-contig`, `-nooutput`) are rewritten to these.
#[derive(clap::Args, Debug, Default, Clone)]
#[command(
    next_help_heading = "gpmetis options (gpmetis's single-dash spellings work too: -ufactor=30 -ncuts=4 -nooutput)"
)]
pub struct GpmetisOpts {
    /// rb|kway: both run the multilevel k-way method (its initial partition bisects recursively).
    #[arg(long)]
    pub ptype: Option<String>,
    /// rm|shem: accepted; parsim coarsens by heavy-edge matching (clustering on skewed degree distributions).
    #[arg(long)]
    pub ctype: Option<String>,
    /// grow|random|edge|node|metisrb: accepted; parsim's initial partitioning tries several bisections and keeps the best.
    #[arg(long)]
    pub iptype: Option<String>,
    /// cut|vol: minimise the edge cut (default) or the total communication volume.
    #[arg(long)]
    pub objtype: Option<String>,
    /// Accepted, no effect: parsim never matches vertices two hops apart.
    #[arg(long)]
    pub no2hop: bool,
    /// Accepted, no effect: parsim does not minimise the subdomain graph's degree.
    #[arg(long)]
    pub minconn: bool,
    /// U: imbalance 1 + U/1000 (30 → 1.03); overrides --imbalance.
    #[arg(long)]
    pub ufactor: Option<u32>,
    /// "1.02 1.2 …": per-constraint imbalance; parsim applies the smallest to every constraint.
    #[arg(long)]
    pub ubvec: Option<String>,
    /// N ≥ 1: accepted; parsim refines each level until no move gains (--preset sets the effort).
    #[arg(long)]
    pub niter: Option<u32>,
    /// N ≥ 1: partition N times (seeds SEED, SEED+1, …) and keep the lowest cut (volume with -objtype=vol).
    #[arg(long)]
    pub ncuts: Option<u32>,
    /// Write no partition file.
    #[arg(long)]
    pub nooutput: bool,
    /// 0|1: part ids written from 0 (gpmetis's) or from 1.
    #[arg(long)]
    pub numbering: Option<u8>,
    /// N: accepted; parsim prints its summary line (-v for more).
    #[arg(long)]
    pub dbglvl: Option<u32>,
    /// FILE: target part weights, gpmetis's format: lines "P = W" (fractions); parts not listed share the rest equally.
    #[arg(long, value_name = "FILE")]
    pub tpwgts: Option<PathBuf>,
}

impl GpmetisOpts {
    /// Checks the values gpmetis would check.
    fn check(&self) -> Result<()> {
        let one_of = |flag: &str, v: &Option<String>, ok: &[&str]| match v {
            Some(x) if !ok.contains(&x.as_str()) => Err(input(format!("-{flag}={x}: expected {}", ok.join(", ")))),
            _ => Ok(()),
        };
        one_of("ptype", &self.ptype, &["rb", "kway"])?;
        one_of("ctype", &self.ctype, &["rm", "shem"])?;
        one_of("iptype", &self.iptype, &["grow", "random", "edge", "node", "metisrb"])?;
        one_of("objtype", &self.objtype, &["cut", "vol"])?;
        for (flag, v) in [("niter", self.niter), ("ncuts", self.ncuts)] {
            if v == Some(0) {
                return Err(input(format!("-{flag}=0: at least 1")));
            }
        }
        if self.ncuts.is_some_and(|n| n > 1000) {
            return Err(input("-ncuts: at most 1000".into()));
        }
        if self.numbering.is_some_and(|n| n > 1) {
            return Err(input(format!("-numbering={}: expected 0 or 1", self.numbering.unwrap_or(0))));
        }
        Ok(())
    }

    /// The imbalance to use: -ubvec's smallest, else -ufactor's, else `imbalance`.
    fn imbalance(&self, imbalance: f64) -> Result<f64> {
        if let Some(u) = &self.ubvec {
            let vals: Vec<f64> = u
                .split_whitespace()
                .map(|t| t.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 1.0))
                .collect::<Option<_>>()
                .filter(|v: &Vec<f64>| !v.is_empty())
                .ok_or_else(|| input(format!("-ubvec=\"{u}\": expected numbers >= 1, one per constraint")))?;
            return Ok(vals.iter().copied().fold(f64::INFINITY, f64::min));
        }
        Ok(self.ufactor.map_or(imbalance, |u| 1.0 + f64::from(u) / 1000.0))
    }
}

/// Reads a gpmetis target-weights file: lines `P = W` (or `P:C = W` for
/// constraint C, of which parsim takes constraint 0) with fractions; the
/// parts not listed share what is left equally.
fn read_tpwgts(path: &Path, k: usize) -> Result<Vec<f64>> {
    let text = std::fs::read_to_string(path).map_err(|e| input(parsim::unreadable(path, &e)))?;
    let bad = |ln: usize, m: String| input(format!("{}:{ln}: {m}", path.display()));
    let mut t: Vec<Option<f64>> = vec![None; k];
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('%') || l.starts_with('#') {
            continue;
        }
        let (lhs, rhs) = l.split_once('=').ok_or_else(|| bad(i + 1, "expected \"P = W\"".into()))?;
        let (p, c) = lhs.trim().split_once(':').map_or((lhs.trim(), "0"), |(p, c)| (p.trim(), c.trim()));
        let p: usize = p.parse().ok().filter(|&p| p < k).ok_or_else(|| bad(i + 1, format!("a part in 0..{k}")))?;
        let w: f64 =
            rhs.trim().parse().ok().filter(|w: &f64| w.is_finite() && *w > 0.0 && *w <= 1.0).ok_or_else(|| {
                bad(i + 1, format!("a weight in (0, 1], found {}", parsim_core::io::shown_token(rhs.trim())))
            })?;
        if c != "0" {
            continue;
        }
        t[p] = Some(w);
    }
    let given: f64 = t.iter().flatten().sum();
    let rest = t.iter().filter(|x| x.is_none()).count();
    if given > 1.0 + 1e-6 || (rest == 0 && (given - 1.0).abs() > 1e-6) || (rest > 0 && given >= 1.0) {
        return Err(input(format!(
            "{}: the target weights sum to {given}; they must leave room for every part and sum to 1",
            path.display()
        )));
    }
    let share = if rest > 0 { (1.0 - given) / rest as f64 } else { 0.0 };
    let t: Vec<f64> = t.into_iter().map(|x| x.unwrap_or(share)).collect();
    let sum: f64 = t.iter().sum();
    Ok(t.into_iter().map(|x| x / sum).collect())
}

/// Rewrites gpmetis's single-dash options (`-ufactor=30`, `-seed=7`,
/// `-ptype=kway`, `-contig`, `-ncuts=4`, `-nooutput` …) into this command's flags.
pub fn gpmetis_spellings(args: Vec<String>) -> Vec<String> {
    let is_partition = args.get(1).is_some_and(|a| a == "partition");
    if !is_partition {
        return args;
    }
    args.into_iter()
        .map(|a| {
            for opt in [
                "ufactor",
                "seed",
                "ptype",
                "contig",
                "objtype",
                "niter",
                "ncuts",
                "numbering",
                "dbglvl",
                "ctype",
                "iptype",
                "minconn",
                "no2hop",
                "nooutput",
                "tpwgts",
                "ubvec",
            ] {
                if a == format!("-{opt}") || a.starts_with(&format!("-{opt}=")) {
                    return format!("-{a}");
                }
            }
            a
        })
        .collect()
}

fn input(msg: String) -> anyhow::Error {
    InputError::flag("parsim partition", msg).into()
}

/// A graph-reading error as bad input (exit 2): an unreadable file in one
/// line, a malformed one with its file and line.
fn as_input(e: PartitionError) -> anyhow::Error {
    match e {
        PartitionError::Io { path, source } => input(parsim::unreadable(Path::new(&path), &source)),
        other => InputError::flag("graph", other.to_string()).into(),
    }
}

/// Refuses, before the graph is read, K values no graph can use: more parts
/// than u32 part ids, or per-part state this machine cannot hold.
fn check_k(k: usize, per_part_bytes: f64) -> Result<()> {
    if k > u32::MAX as usize {
        return Err(input(format!("K = {k}: at most {} parts", u32::MAX)));
    }
    if let Some(why) = parsim_core::mem::shortfall(k as f64 * per_part_bytes, &format!("K = {k} parts")) {
        return Err(input(format!("K = {k} {why}")));
    }
    Ok(())
}

/// Runs the command.
pub fn run(mut a: PartitionArgs) -> Result<()> {
    if a.k == 0 {
        return Err(input("K must be at least 1".into()));
    }
    a.gp.check()?;
    a.imbalance = a.gp.imbalance(a.imbalance)?;
    if !(a.imbalance >= 1.0 && a.imbalance.is_finite()) {
        return Err(input(format!(
            "--imbalance {} must be >= 1 (1.03 allows parts 3 % over the average)",
            a.imbalance
        )));
    }
    let preset = Preset::parse(&a.preset)
        .ok_or_else(|| input(format!("--preset {}: expected fast, default or strong", a.preset)))?;
    let name = a.graph.file_name().map_or_else(|| "graph".into(), |n| n.to_string_lossy().into_owned());
    let vc = match a.method.as_str() {
        "hash" => Some(VertexCut::Hash),
        "greedy" => Some(VertexCut::Greedy),
        "hdrf" => Some(VertexCut::Hdrf),
        _ => None,
    };
    // Where the partition goes is checked before the graph is read: by
    // default where gpmetis writes it, the graph's path plus `.part.K`.
    let out = a.out.clone().unwrap_or_else(|| {
        let mut p = a.graph.clone().into_os_string();
        p.push(format!(".{}.{}", if vc.is_some() { "epart" } else { "part" }, a.k));
        PathBuf::from(p)
    });
    if !a.gp.nooutput {
        parsim::check_output_file(&out, "--out")?;
    }
    let write = |parts: &[u32]| write_parts(&a.gp, &out, parts);
    let shown_out = if a.gp.nooutput { "no file (-nooutput)".to_string() } else { out.display().to_string() };
    check_k(a.k, 24.0)?;
    let t0 = Instant::now();
    if a.stream {
        return stream(&a, &out, t0);
    }
    let mut g = io::read_graph(&a.graph).map_err(as_input)?;
    if let Some(c) = &a.coords {
        io::read_coords(c, &mut g).map_err(as_input)?;
    }
    let read_s = t0.elapsed().as_secs_f64();
    let mut cfg = Config::new(a.k);
    cfg.imbalance = a.imbalance - 1.0;
    cfg.seed = a.seed;
    cfg.preset = preset;
    cfg.contiguous = a.contig;
    let pieces = if a.contig { g.components() } else { 1 };
    if pieces > 1 {
        // gpmetis: "if the input graph is not connected this option is ignored".
        eprintln!(
            "parsim: warning: -contig ignored: {} has {pieces} connected components, so no part can be one piece of it",
            a.graph.display()
        );
        cfg.contiguous = false;
    }
    if a.gp.objtype.as_deref() == Some("vol") {
        cfg.objective = parsim_partition::Objective::Volume;
    }
    if let Some(t) = &a.gp.tpwgts {
        cfg.targets = Some(read_tpwgts(t, a.k)?);
    }
    let t1 = Instant::now();
    if let Some(vc) = vc {
        if a.k > g.edges().max(1) {
            return Err(input(format!("K = {} is more than the {} edges: some part would be empty", a.k, g.edges())));
        }
        // Each vertex keeps a bitset of the parts it is replicated on.
        check_k(a.k, g.n() as f64 / 8.0 + 8.0)?;
        let ep = vertex_cut(&g, a.k, vc, a.seed, a.imbalance - 1.0);
        write(&ep.parts)?;
        println!(
            "{name}: {} edges into {} parts ({}): replication factor {:.4}, edge balance {:.4}, in {:.3} s → {} (one part per edge u < v, in vertex order)",
            ep.edges.len(),
            a.k,
            a.method,
            ep.replication_factor,
            ep.edge_balance,
            t1.elapsed().as_secs_f64(),
            shown_out
        );
        return Ok(());
    }
    let method = Method::parse(&a.method).ok_or_else(|| {
        input(format!(
            "--method {}: expected multilevel, spectral, rcb, sfc, ldg, fennel, lp, hash, greedy or hdrf",
            a.method
        ))
    })?;
    if let Some(f) = &a.fixed {
        cfg.fixed = Some(io::read_fixed(f, g.n()).map_err(as_input)?);
    }
    let mut migrated = None;
    let result = match &a.current {
        Some(c) => {
            let current = io::read_partition(c, g.n()).map_err(as_input)?;
            parsim_partition::repartition(&g, &cfg, &current, a.alpha).map(|(p, m, mig)| {
                migrated = Some(mig);
                (p, m)
            })
        }
        None => {
            // -ncuts: the best of N partitions, by (balanced, cut or volume).
            let mut best: Option<(Vec<u32>, parsim_partition::Metrics)> = None;
            let mut last_err = None;
            for i in 0..a.gp.ncuts.unwrap_or(1) {
                let c = Config { seed: a.seed.wrapping_add(u64::from(i)), ..cfg.clone() };
                match method.partition(&g, &c) {
                    Ok((p, m)) => {
                        let key = |m: &parsim_partition::Metrics| {
                            (
                                !m.balanced,
                                if c.objective == parsim_partition::Objective::Volume { m.volume } else { m.cut },
                            )
                        };
                        if best.as_ref().is_none_or(|(_, b)| key(&m) < key(b)) {
                            best = Some((p, m));
                        }
                    }
                    Err(e) => last_err = Some(e),
                }
            }
            best.ok_or_else(|| last_err.expect("one try"))
        }
    };
    let (parts, m) = match result {
        Ok(r) => r,
        Err(e @ (PartitionError::BadArgument(_) | PartitionError::Infeasible(_))) => return Err(input(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let part_s = t1.elapsed().as_secs_f64();
    write(&parts)?;
    if a.json {
        let j = json!({
            "graph": a.graph.display().to_string(),
            "vertices": g.n(), "edges": g.edges(), "k": a.k, "method": a.method,
            "imbalance_allowed": a.imbalance, "seed": a.seed, "preset": a.preset,
            "cut": m.cut, "volume": m.volume, "imbalance": m.imbalance, "balanced": m.balanced,
            "boundary_vertices": m.boundary, "max_neighbour_parts": m.max_neighbour_parts,
            "empty_parts": m.empty_parts, "read_s": read_s, "partition_s": part_s, "migrated_weight": migrated,
            "out": if a.gp.nooutput { serde_json::Value::Null } else { json!(out.display().to_string()) },
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        println!(
            "{name}: {} vertices, {} edges, K = {}: edge cut {}, volume {}, max imbalance {:.4} of W/K (every part ≤ {:.3} · ⌈W/K⌉: {}), {} boundary vertices",
            g.n(),
            g.edges(),
            a.k,
            m.cut,
            m.volume,
            m.max_imbalance(),
            a.imbalance,
            if m.balanced { "met" } else { "not met" },
            m.boundary
        );
        if let Some(mig) = migrated {
            println!("repartitioned with migration cost {}: migrated weight {mig}", a.alpha);
        }
        println!("read {read_s:.3} s, partitioned in {part_s:.3} s ({}) → {shown_out}", a.method);
    }
    Ok(())
}

/// Writes the part ids (from 1 with `-numbering=1`), unless `-nooutput`.
fn write_parts(gp: &GpmetisOpts, out: &Path, parts: &[u32]) -> Result<()> {
    if gp.nooutput {
        return Ok(());
    }
    if gp.numbering == Some(1) {
        let shifted: Vec<u32> = parts.iter().map(|&p| p + 1).collect();
        return Ok(io::write_partition(out, &shifted)?);
    }
    Ok(io::write_partition(out, parts)?)
}

/// `--stream`: one pass over the file, memory per vertex only.
fn stream(a: &PartitionArgs, out: &Path, t0: Instant) -> Result<()> {
    use parsim_partition::streaming::{stream_edge_list, stream_metis, Streaming};
    let method = match a.method.as_str() {
        "ldg" => Streaming::Ldg,
        "fennel" => Streaming::Fennel,
        other => return Err(input(format!("--stream works with --method ldg or fennel, not {other}"))),
    };
    let mut cfg = Config::new(a.k);
    cfg.imbalance = a.imbalance - 1.0;
    let ext = a.graph.extension().and_then(|e| e.to_str()).unwrap_or("");
    let parts = match ext {
        "txt" | "el" | "edges" | "snap" => stream_edge_list(&a.graph, &cfg, method, false),
        "bin" | "u32" => stream_edge_list(&a.graph, &cfg, method, true),
        _ => stream_metis(&a.graph, &cfg, method),
    }
    .map_err(as_input)?;
    let name = a.graph.file_name().map_or_else(|| "graph".into(), |n| n.to_string_lossy().into_owned());
    write_parts(&a.gp, out, &parts)?;
    let mut sizes = vec![0usize; a.k];
    for &p in &parts {
        sizes[p as usize] += 1;
    }
    println!(
        "{name}: {} vertices streamed into {} parts ({}): largest part {} vertices (average {:.1}), in {:.3} s → {}",
        parts.len(),
        a.k,
        a.method,
        sizes.iter().max().unwrap_or(&0),
        parts.len() as f64 / a.k as f64,
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

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
    /// Minimise the communication volume instead of the cut (gpmetis's `-objtype=vol`).
    pub volume: bool,
    /// Partition while reading (ldg, fennel), without loading the graph.
    pub stream: bool,
}

/// Rewrites gpmetis's single-dash options (`-ufactor=30`, `-seed=7`,
/// `-ptype=kway`, `-contig`, `-objtype=cut`) into this command's flags.
pub fn gpmetis_spellings(args: Vec<String>) -> Vec<String> {
    let is_partition = args.get(1).is_some_and(|a| a == "partition");
    if !is_partition {
        return args;
    }
    args.into_iter()
        .map(|a| {
            for opt in ["ufactor", "seed", "ptype", "contig", "objtype", "niter", "ncuts", "numbering", "dbglvl"] {
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
pub fn run(a: PartitionArgs) -> Result<()> {
    if a.k == 0 {
        return Err(input("K must be at least 1".into()));
    }
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
    // Where the partition goes is checked before the graph is read.
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}.{}.{}", if vc.is_some() { "epart" } else { "part" }, a.k)));
    parsim::check_output_file(&out, "--out")?;
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
    if a.volume {
        cfg.objective = parsim_partition::Objective::Volume;
    }
    let t1 = Instant::now();
    if let Some(vc) = vc {
        if a.k > g.edges().max(1) {
            return Err(input(format!("K = {} is more than the {} edges: some part would be empty", a.k, g.edges())));
        }
        // Each vertex keeps a bitset of the parts it is replicated on.
        check_k(a.k, g.n() as f64 / 8.0 + 8.0)?;
        let ep = vertex_cut(&g, a.k, vc, a.seed, a.imbalance - 1.0);
        io::write_partition(&out, &ep.parts)?;
        println!(
            "{name}: {} edges into {} parts ({}): replication factor {:.4}, edge balance {:.4}, in {:.3} s → {} (one part per edge u < v, in vertex order)",
            ep.edges.len(),
            a.k,
            a.method,
            ep.replication_factor,
            ep.edge_balance,
            t1.elapsed().as_secs_f64(),
            out.display()
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
        None => method.partition(&g, &cfg),
    };
    let (parts, m) = match result {
        Ok(r) => r,
        Err(e @ (PartitionError::BadArgument(_) | PartitionError::Infeasible(_))) => return Err(input(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let part_s = t1.elapsed().as_secs_f64();
    io::write_partition(&out, &parts)?;
    if a.json {
        let j = json!({
            "graph": a.graph.display().to_string(),
            "vertices": g.n(), "edges": g.edges(), "k": a.k, "method": a.method,
            "imbalance_allowed": a.imbalance, "seed": a.seed, "preset": a.preset,
            "cut": m.cut, "volume": m.volume, "imbalance": m.imbalance, "balanced": m.balanced,
            "boundary_vertices": m.boundary, "max_neighbour_parts": m.max_neighbour_parts,
            "empty_parts": m.empty_parts, "read_s": read_s, "partition_s": part_s, "migrated_weight": migrated,
            "out": out.display().to_string(),
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
        println!("read {read_s:.3} s, partitioned in {part_s:.3} s ({}) → {}", a.method, out.display());
    }
    Ok(())
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
    io::write_partition(out, &parts)?;
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
